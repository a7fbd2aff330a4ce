//! The mapping differences to consul-k8s that were closed, end to end
//! against kube-sandbox and consul-sandbox over real HTTP: an ExternalName
//! Service with external IPs registers one instance per IP, and an invalid
//! `consul.hashicorp.com/service-name` annotation registers nothing (its
//! instances are removed) with a Warning Event naming the annotation.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use mirra_catalog::service_id;
use serde_json::json;

use crate::common;

use common::{
    apply_service, consul, ep, external_name_service, kube, names_and_addresses, put_slice,
    settings, start, start_settled, sync_settings, wait_for,
};

async fn warned_about(k: &kube::Client, ns: &str, service: &str, annotation: &str) -> bool {
    mirra_testkit::events_about(k, ns, service)
        .await
        .iter()
        .any(|e| {
            e.type_.as_deref() == Some("Warning")
                && e.message.as_deref().is_some_and(|m| m.contains(annotation))
        })
}

#[tokio::test]
async fn external_name_with_external_ips_registers_each_ip() {
    let k = kube().await;
    let (csb, c) = consul().await;
    external_name_service(
        &k.client,
        "legacy",
        "mainframe",
        "mainframe.example.com",
        &["203.0.113.7", "203.0.113.8"],
    )
    .await;
    // Without external IPs an ExternalName Service still registers nothing.
    external_name_service(&k.client, "legacy", "plain", "plain.example.com", &[]).await;
    let (ctl, _) = start_settled(&k.client, &c, &csb, settings(sync_settings("k8s-sync"))).await;
    let got = names_and_addresses(&c, "k8s-sync").await;
    assert_eq!(
        got,
        vec![
            ("mainframe".to_owned(), "203.0.113.7".to_owned()),
            ("mainframe".to_owned(), "203.0.113.8".to_owned()),
        ]
    );
    let ids = common::instances(&c, "k8s-sync").await;
    assert!(ids.contains_key(&service_id("mainframe", "203.0.113.7")));
    assert!(ids.contains_key(&service_id("mainframe", "203.0.113.8")));
    ctl.stop().await;
}

#[tokio::test]
async fn invalid_service_name_annotation_deregisters_and_warns() {
    let k = kube().await;
    let (csb, c) = consul().await;
    let web = |name: Option<&str>| {
        let annotations = match name {
            Some(n) => json!({"consul.hashicorp.com/service-name": n}),
            None => json!({}),
        };
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "shop", "annotations": annotations},
            "spec": {"type": "ClusterIP", "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
        })
    };
    apply_service(&k.client, "shop", web(Some("storefront"))).await;
    put_slice(&k.client, "shop", "web", "web-1", &[ep("10.9.0.1")]).await;
    let ctl = start(&k.client, &c, settings(sync_settings("k8s-sync")));
    ctl.wait_ready().await;
    wait_for("storefront registered", || async {
        names_and_addresses(&c, "k8s-sync").await
            == vec![("storefront".to_owned(), "10.9.0.1".to_owned())]
    })
    .await;
    ctl.settle(&csb).await;

    for (i, bad) in ["   ", &"x".repeat(256)].into_iter().enumerate() {
        apply_service(&k.client, "shop", web(Some(bad))).await;
        wait_for("nothing registered", || async {
            names_and_addresses(&c, "k8s-sync").await.is_empty()
        })
        .await;
        wait_for("a Warning Event naming the annotation", || async {
            warned_about(
                &k.client,
                "shop",
                "web",
                "consul.hashicorp.com/service-name",
            )
            .await
        })
        .await;
        ctl.settle(&csb).await;
        // Never registered under the default name `web` in between.
        assert!(names_and_addresses(&c, "k8s-sync").await.is_empty());
        assert_eq!(ctl.metrics.warning_events_total(), (i + 1) as u64);
    }

    // Fixed: registered again under the annotated name.
    let before = csb.stats().raft_applies;
    apply_service(&k.client, "shop", web(Some("storefront"))).await;
    wait_for("storefront back", || async {
        names_and_addresses(&c, "k8s-sync").await
            == vec![("storefront".to_owned(), "10.9.0.1".to_owned())]
    })
    .await;
    ctl.settle(&csb).await;
    assert_eq!(csb.stats().raft_applies - before, 1, "one transaction");
    ctl.stop().await;
}
