//! Instances mirra owns, changed directly in Consul by someone else, are
//! repaired as soon as the node-services blocking query shows it, not at
//! the next verification pass (disabled here: one hour); a writer that
//! keeps changing them back gets one Warning Event, a metric, and never
//! more than one repair per change (the spacing of those repairs is
//! tested on the pure pacing logic in `repair.rs`). Counts are Raft
//! applies from consul-sandbox, never time.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use mirra_catalog::service_id;

use crate::common;

use common::{
    OWNED_META, cluster_ip_with_endpoints, consul, ep, instances, kube, register, settings, start,
    sync_settings, wait_for,
};

const ADDR: &str = "10.6.0.1";

async fn web_in_step(c: &mirra_consul::Client) -> bool {
    instances(c, "k8s-sync")
        .await
        .get(&service_id("web", ADDR))
        .is_some_and(|i| i.address == ADDR && i.port == 8080)
}

#[tokio::test]
async fn owned_instance_changed_or_removed_in_consul_is_repaired_without_a_pass() {
    let k = kube().await;
    let (csb, c) = consul().await;
    cluster_ip_with_endpoints(&k.client, "default", "web", &[ep(ADDR)]).await;
    let mut s = settings(sync_settings("k8s-sync"));
    assert_eq!(s.verify_interval, Duration::from_secs(3600));
    // Each change below is its own incident, not a fight.
    s.repair_quiet = Duration::ZERO;
    let ctl = start(&k.client, &c, s);
    ctl.wait_ready().await;
    wait_for("web registered", || web_in_step(&c)).await;
    ctl.settle(&csb).await;
    let id = service_id("web", ADDR);

    // Someone rewrites our instance (still carrying our marks).
    let before = csb.stats().raft_applies;
    register(&c, "k8s-sync", &id, "web", &["k8s"], OWNED_META).await;
    assert!(!web_in_step(&c).await);
    wait_for("web repaired", || web_in_step(&c)).await;
    ctl.settle(&csb).await;
    assert_eq!(
        csb.stats().raft_applies - before,
        2,
        "theirs, then one repair"
    );

    // Someone deregisters it.
    let before = csb.stats().raft_applies;
    c.deregister(&mirra_consul::DeregisterRequest {
        node: "k8s-sync".into(),
        service_id: id.clone(),
        ..mirra_consul::DeregisterRequest::default()
    })
    .await
    .unwrap();
    wait_for("web registered again", || web_in_step(&c)).await;
    ctl.settle(&csb).await;
    // Theirs, then one transaction with the instance and its check.
    assert_eq!(csb.stats().raft_applies - before, 2);
    assert_eq!(ctl.metrics.repairs_total(), 2);
    assert_eq!(ctl.metrics.contested_repairs_total(), 0);

    // A foreign instance appearing on our node is no drift of ours.
    let before = csb.stats().raft_applies;
    register(&c, "k8s-sync", "theirs-1", "theirs", &["other"], &[]).await;
    ctl.settle(&csb).await;
    assert_eq!(csb.stats().raft_applies - before, 1);
    assert_eq!(ctl.metrics.repairs_total(), 2);
    ctl.stop().await;
}

#[tokio::test]
async fn a_fight_with_another_writer_is_reported_once_and_costs_one_repair_per_change() {
    let k = kube().await;
    let (csb, c) = consul().await;
    cluster_ip_with_endpoints(&k.client, "default", "web", &[ep(ADDR)]).await;
    let mut s = settings(sync_settings("k8s-sync"));
    s.repair_backoff_base = Duration::from_millis(20);
    s.repair_backoff_cap = Duration::from_millis(160);
    s.repair_quiet = Duration::from_secs(600);
    let ctl = start(&k.client, &c, s);
    ctl.wait_ready().await;
    wait_for("web registered", || web_in_step(&c)).await;
    ctl.settle(&csb).await;
    let id = service_id("web", ADDR);

    // The other writer changes the instance right after each repair.
    const ROUNDS: u64 = 6;
    let before = csb.stats().raft_applies;
    for _ in 0..ROUNDS {
        register(&c, "k8s-sync", &id, "web", &["k8s"], OWNED_META).await;
        wait_for("web repaired", || web_in_step(&c)).await;
    }
    ctl.settle(&csb).await;
    // Exactly one repair per change of theirs: never more writes than the
    // fight itself makes.
    assert_eq!(csb.stats().raft_applies - before, 2 * ROUNDS);
    assert_eq!(ctl.metrics.repairs_total(), ROUNDS);
    // One fight, reported once.
    assert_eq!(ctl.metrics.contested_repairs_total(), 1);
    wait_for("the ContestedInConsul Event", || async {
        mirra_testkit::events_about(&k.client, "default", "web")
            .await
            .iter()
            .any(|e| mirra_testkit::is_warning(e, "ContestedInConsul"))
    })
    .await;
    let contested = mirra_testkit::events(&k.client, "default")
        .await
        .iter()
        .filter(|e| e.reason.as_deref() == Some("ContestedInConsul"))
        .count();
    assert_eq!(contested, 1);
    ctl.stop().await;
}
