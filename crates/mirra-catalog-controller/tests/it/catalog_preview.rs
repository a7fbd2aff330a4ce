//! Dry runs (`-dry-run`) beside what consul-k8s leaves in Consul: quiet
//! when the layout flags match, every instance a rewrite when they do
//! not, exactly the writes the real run then makes, and not one Raft
//! apply of its own.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};

use mirra_catalog::{PortLayout, SyncSettings};
use mirra_catalog_controller::Settings;
use mirra_consul::RegisterRequest;
use mirra_runtime::Preview;

use crate::common::*;

const NODE: &str = "k8s-sync";

/// `web` (five ready endpoints) as consul-k8s registered it, with the
/// mapping of `sync`.
async fn as_consul_k8s_left_it(k: &kube::Client, c: &mirra_consul::Client, sync: &SyncSettings) {
    cluster_ip_with_endpoints(k, "default", "web", &eps(&ips("10.4.0", 5))).await;
    let out = desired_for(k, "default", "web", sync).await;
    assert_eq!(out.registrations.len(), 5);
    for r in &out.registrations {
        register_like_consul_k8s(c, r, NODE).await;
    }
}

fn dry_run(sync: SyncSettings) -> (Settings, Preview) {
    let mut s = settings(sync);
    let preview = Preview::new("catalog");
    s.preview = Some(preview.clone());
    (s, preview)
}

/// The preview's writes as `(kind, name, operation, reason)`, once they
/// stop changing.
async fn settled(
    ctl: &Running,
    csb: &consul_sandbox::Sandbox,
    preview: &Preview,
) -> BTreeSet<(String, String, String, String)> {
    ctl.wait_ready().await;
    ctl.settle(csb).await;
    mirra_testkit::settle("the preview", || {
        Some(
            preview
                .writes()
                .into_iter()
                .map(|w| {
                    (
                        w.kind,
                        w.name,
                        w.operation.to_string(),
                        w.reason.to_string(),
                    )
                })
                .collect::<BTreeSet<_>>(),
        )
    })
    .await
}

#[tokio::test]
async fn beside_consul_k8s_a_preview_is_quiet_and_a_wrong_port_layout_rewrites_every_instance() {
    let k = kube().await;
    let (csb, c) = consul().await;
    let sync = sync_settings(NODE);
    as_consul_k8s_left_it(&k.client, &c, &sync).await;
    let before = csb.stats().raft_applies;

    let (s, preview) = dry_run(sync.clone());
    let ctl = start(&k.client, &c, s);
    assert_eq!(settled(&ctl, &csb, &preview).await, BTreeSet::new());
    assert_eq!(preview.summary()["quiet"], true);
    ctl.stop().await;

    let (s, preview) = dry_run(SyncSettings {
        port_layout: PortLayout::Multi,
        ..sync
    });
    let ctl = start(&k.client, &c, s);
    let planned = settled(&ctl, &csb, &preview).await;
    let ids: BTreeSet<String> = instances(&c, NODE).await.into_keys().collect();
    assert_eq!(ids.len(), 5);
    assert_eq!(
        planned,
        ids.iter()
            .map(|id| (
                "ConsulService".to_string(),
                id.clone(),
                "register".to_string(),
                "differs".to_string()
            ))
            .collect::<BTreeSet<_>>()
    );
    let w = preview.writes();
    assert!(
        w[0].diff.contains(&"ports: http=8080".to_string()),
        "{:?}",
        w[0].diff
    );
    assert_eq!(csb.stats().raft_applies, before, "a preview never writes");
    let written = Writes::of(&ctl.metrics);
    assert_eq!((written.transactions, written.registers), (0, 0));
    ctl.stop().await;
}

#[tokio::test]
async fn a_preview_reports_exactly_the_writes_the_real_run_then_makes() {
    let k = kube().await;
    let (csb, c) = consul().await;
    let sync = sync_settings(NODE);
    as_consul_k8s_left_it(&k.client, &c, &sync).await;
    // A Service consul-k8s has not synced yet, and an instance of a
    // Service deleted meanwhile (consul-k8s's marks: mirra owns it).
    cluster_ip_with_endpoints(&k.client, "default", "api", &eps(&ips("10.5.0", 2))).await;
    c.register(&RegisterRequest {
        node: NODE.into(),
        address: "127.0.0.1".into(),
        service: Some(mirra_consul::Service {
            id: "gone-1".into(),
            service: "gone".into(),
            tags: vec!["k8s".into()],
            address: "10.6.0.1".into(),
            port: 80,
            meta: BTreeMap::from([
                ("external-source".to_string(), "kubernetes".to_string()),
                ("external-k8s-ns".to_string(), "default".to_string()),
            ]),
            ..mirra_consul::Service::default()
        }),
        ..RegisterRequest::default()
    })
    .await
    .unwrap();
    let before = csb.stats().raft_applies;

    let (s, preview) = dry_run(sync.clone());
    let ctl = start(&k.client, &c, s);
    let planned = settled(&ctl, &csb, &preview).await;
    assert_eq!(csb.stats().raft_applies, before, "a preview never writes");
    ctl.stop().await;
    let reasons: BTreeMap<String, u64> = planned.iter().fold(BTreeMap::new(), |mut m, w| {
        *m.entry(w.3.clone()).or_default() += 1;
        m
    });
    assert_eq!(
        reasons,
        BTreeMap::from([("new-instance".to_string(), 2), ("orphan".to_string(), 1)])
    );

    // The real run from the same state: what it registers and removes is
    // what the preview listed.
    let old = instances(&c, NODE).await;
    let ctl = start(&k.client, &c, settings(sync));
    ctl.wait_ready().await;
    wait_for("the orphan gone", || async {
        !instances(&c, NODE).await.contains_key("gone-1")
    })
    .await;
    ctl.settle(&csb).await;
    let new = instances(&c, NODE).await;
    let mut made = BTreeSet::new();
    for (id, inst) in &new {
        if old.get(id) != Some(inst) {
            made.insert((
                "ConsulService".to_string(),
                id.clone(),
                "register".to_string(),
            ));
        }
    }
    for id in old.keys().filter(|id| !new.contains_key(*id)) {
        made.insert((
            "ConsulService".to_string(),
            id.clone(),
            "deregister".to_string(),
        ));
    }
    let previewed: BTreeSet<_> = planned.into_iter().map(|w| (w.0, w.1, w.2)).collect();
    assert_eq!(made, previewed);
    ctl.stop().await;
}

#[tokio::test]
async fn a_preview_follows_a_rollout_and_the_incumbents_writes() {
    let k = kube().await;
    let (csb, c) = consul().await;
    let sync = sync_settings(NODE);
    as_consul_k8s_left_it(&k.client, &c, &sync).await;
    let (s, preview) = dry_run(sync.clone());
    let ctl = start(&k.client, &c, s);
    assert_eq!(settled(&ctl, &csb, &preview).await, BTreeSet::new());
    let before = csb.stats().raft_applies;

    // A rollout adds a pod: the preview shows its registration...
    let mut addrs = ips("10.4.0", 5);
    addrs.push("10.4.0.9".into());
    put_slice(&k.client, "default", "web", "web-1", &eps(&addrs)).await;
    let id = mirra_catalog::service_id("web", "10.4.0.9");
    wait_for("the new pod's registration planned", || async {
        preview
            .writes()
            .iter()
            .any(|w| w.name == id && w.reason == "new-instance")
    })
    .await;

    // ... until the incumbent registers it the same way.
    let out = desired_for(&k.client, "default", "web", &sync).await;
    let r = out.registrations.iter().find(|r| r.id == id).unwrap();
    register_like_consul_k8s(&c, r, NODE).await;
    wait_for("nothing left to write", || async {
        preview.writes().is_empty()
    })
    .await;
    assert_eq!(preview.summary()["quiet"], true);
    assert!(preview.summary()["reportedSinceStart"].as_u64() >= Some(1));
    ctl.settle(&csb).await;
    assert_eq!(
        csb.stats().raft_applies - before,
        1,
        "only the incumbent's registration"
    );
    ctl.stop().await;
}

#[tokio::test]
async fn a_preview_that_cannot_read_says_so_and_writes_nothing() {
    let k = kube().await;
    let (csb, c) = consul().await;
    cluster_ip_with_endpoints(&k.client, "default", "web", &eps(&ips("10.4.0", 2))).await;
    fail_lists(&k.sb, "endpointslices.discovery.k8s.io", 403, None).await;
    let before = csb.stats().raft_applies;
    let (s, preview) = dry_run(sync_settings(NODE));
    let ctl = start(&k.client, &c, s);
    let summary = mirra_testkit::wait_for_unreadable(|| preview.summary()).await;
    assert_eq!(summary["quiet"], false, "{summary}");
    assert_eq!(
        summary["unreadable"][0]["what"], "endpointslices",
        "{summary}"
    );

    // Granted: the gap closes and the registrations are planned, unsent.
    k.sb.clear_faults().await;
    let planned = settled(&ctl, &csb, &preview).await;
    assert!(
        preview.summary()["unreadable"]
            .as_array()
            .is_some_and(Vec::is_empty)
    );
    assert_eq!(
        planned.iter().filter(|w| w.3 == "new-instance").count(),
        2,
        "{planned:?}"
    );
    assert_eq!(csb.stats().raft_applies, before, "a preview never writes");
    ctl.stop().await;
}
