//! deploy/catalog/rbac.yaml is enough: both directions of the catalog
//! sync run as the ServiceAccount that file defines, with exactly the
//! rights it grants, against a kube-sandbox that authenticates and
//! authorizes with RBAC: Services and EndpointSlices reach Consul, a bad
//! annotation gets its Warning Event, Consul services come back as
//! ExternalName Services in the write namespace, and the leader-election
//! Lease can be taken.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, PostParams};
use mirra_catalog::SyncSettings;
use mirra_testkit::rbac::{
    apply, client_with_token, documents, each_cluster_role_rule_removed, granted_resources,
    refused_any, sandbox_with_rbac, service_account_token,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::*;

const RBAC: &str = "deploy/catalog/rbac.yaml";

/// Applies `docs` (deploy's RBAC, or a part of it) with `mirra-system` as
/// their default namespace.
async fn install(admin: &kube::Client, docs: Vec<serde_json::Value>) {
    ensure_namespace(admin, "mirra-system").await;
    apply(admin, docs, "mirra-system").await;
}

/// The Service `shop/cart` with `n` endpoints and a bad annotation, so
/// that a Warning Event is due.
async fn cart_with_a_bad_annotation(admin: &kube::Client, n: usize) {
    let bad_port = json!({"consul.hashicorp.com/service-port": "nope"});
    let endpoints = ips("10.3.0", n);
    annotated_cluster_ip_with_endpoints(admin, "shop", "cart", bad_port, &eps(&endpoints)).await;
}

#[tokio::test]
async fn both_directions_work_with_exactly_the_rights_deploy_grants() {
    let (sb, admin) = sandbox_with_rbac().await;
    install(&admin, documents(RBAC)).await;
    cart_with_a_bad_annotation(&admin, 2).await;

    let token = service_account_token(&admin, "mirra-system", "mirra-catalog").await;
    let mirra = client_with_token(&sb, &token).await;
    Api::<Lease>::namespaced(mirra.clone(), "mirra-system")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "mirra-sync-catalog"}})).unwrap(),
        )
        .await
        .unwrap();

    let (_csb, c) = consul().await;
    c.register(&consul_service("ext", "db", &[])).await.unwrap();
    let sync = SyncSettings {
        to_k8s: true,
        ..sync_settings("k8s-sync")
    };
    let ctl = start(&mirra, &c, settings(sync.clone()));
    let stop = CancellationToken::new();
    let (reverse, _) = spawn_to_k8s(&mirra, &c, sync, None, &stop);

    wait_for("cart in Consul", || async {
        instances(&c, "k8s-sync").await.len() == 2
    })
    .await;
    wait_for("the Warning Event on cart", || async {
        !mirra_testkit::events_about(&admin, "shop", "cart")
            .await
            .is_empty()
    })
    .await;
    wait_for("db as an ExternalName Service", || async {
        Api::<Service>::namespaced(admin.clone(), "default")
            .get_opt("db")
            .await
            .unwrap()
            .is_some()
    })
    .await;
    stop.cancel();
    reverse.await.unwrap();
    ctl.stop().await;
}

/// Every rule of the ClusterRole is used: without it, the sync is refused
/// exactly there (the sandbox counts refusals by verb and resource).
#[tokio::test]
async fn every_rule_of_the_cluster_role_is_needed() {
    let variants = each_cluster_role_rule_removed(&documents(RBAC));
    assert!(variants.len() >= 5, "{variants:?}");
    let (_csb, c) = consul().await;
    let mut symptoms = std::collections::BTreeSet::new();
    for (i, (removed, without)) in variants.iter().enumerate() {
        let (sb, admin) = sandbox_with_rbac().await;
        install(&admin, without.clone()).await;
        cart_with_a_bad_annotation(&admin, 1).await;
        let token = service_account_token(&admin, "mirra-system", "mirra-catalog").await;
        let granted = granted_resources(removed);
        let sync = SyncSettings {
            enable_ingress: true,
            ..sync_settings(&format!("k8s-sync-{i}"))
        };
        let ctl = start(&client_with_token(&sb, &token).await, &c, settings(sync));
        wait_for("a refusal of what the removed rule grants", || async {
            refused_any(&sb, &granted)
        })
        .await;
        // And the feature it serves fails the way the failure model says.
        let node = format!("k8s-sync-{i}");
        if granted.iter().any(|g| g == "events") {
            symptoms.insert("registered without Events");
            // Events refused: the registrations land all the same.
            wait_for("cart registered without its Event", || async {
                !instances(&c, &node).await.is_empty()
            })
            .await;
        } else {
            symptoms.insert("not ready");
            // A watch the catalog needs: not ready, nothing registered.
            assert!(!ctl.ready.is_ready(), "ready without {granted:?}");
            assert!(
                instances(&c, &node).await.is_empty(),
                "registered without {granted:?}"
            );
        }
        ctl.stop.cancel();
        let _ = ctl.task.await;
    }
    assert_eq!(
        symptoms,
        ["not ready", "registered without Events"].into(),
        "every kind of rule was removed once"
    );
}

/// The write Role of the Consul-to-Kubernetes direction, verb by verb:
/// without any one of them the ExternalName Services are refused exactly
/// there (an apply creating one needs create and patch, its deletion once
/// Consul drops the service delete), so none is superfluous. Reading them
/// is the ClusterRole's cluster-wide Service read.
#[tokio::test]
async fn every_verb_of_the_write_role_is_needed() {
    let docs = documents(RBAC);
    let role_at = docs
        .iter()
        .position(|d| d["kind"] == "Role" && d["metadata"]["name"] == "mirra-catalog-write")
        .unwrap();
    let verbs: Vec<String> = docs[role_at]["rules"][0]["verbs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let (_csb, c) = consul().await;
    for (i, removed) in verbs.iter().enumerate() {
        let (sb, admin) = sandbox_with_rbac().await;
        let mut without = docs.clone();
        without[role_at]["rules"][0]["verbs"]
            .as_array_mut()
            .unwrap()
            .retain(|v| v != removed.as_str());
        install(&admin, without).await;
        let node = format!("ext-{i}");
        let db = format!("db{i}");
        c.register(&consul_service(&node, &db, &[])).await.unwrap();
        let token = service_account_token(&admin, "mirra-system", "mirra-catalog").await;
        let mirra = client_with_token(&sb, &token).await;
        let stop = CancellationToken::new();
        let sync = SyncSettings {
            to_k8s: true,
            ..sync_settings(&format!("k8s-sync-{i}"))
        };
        let (reverse, _) = spawn_to_k8s(&mirra, &c, sync, None, &stop);
        let exists = || async {
            Api::<Service>::namespaced(admin.clone(), "default")
                .get_opt(&db)
                .await
                .unwrap()
                .is_some()
        };
        // The request refused: an apply creating a Service is a PATCH the
        // server also authorizes as `create`.
        let request = if removed == "create" {
            "patch"
        } else {
            removed.as_str()
        };
        let refused = || {
            sb.stats()
                .refused
                .keys()
                .any(|k| *k == format!("{request} services"))
        };
        // Created (or refused), then gone from Consul: deleted (or
        // refused).
        wait_for("the ExternalName Service or a refusal", || async {
            exists().await || refused()
        })
        .await;
        if !refused() {
            c.deregister(&mirra_consul::DeregisterRequest {
                node: node.clone(),
                service_id: format!("{db}-1"),
                ..Default::default()
            })
            .await
            .unwrap();
        }
        wait_for(&format!("a refusal of {removed} services"), || async {
            refused()
        })
        .await;
        stop.cancel();
        let _ = reverse.await;
    }
}
