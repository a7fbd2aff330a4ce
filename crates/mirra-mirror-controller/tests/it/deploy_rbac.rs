//! deploy/mirror/rbac.yaml is enough: the mirror controller runs as the
//! ServiceAccount that file defines, with exactly the rights it grants,
//! against a kube-sandbox that authenticates and authorizes with RBAC,
//! and everything the README promises works (copies, templating, pruning,
//! deleteItems, status, Events, the leader-election Lease).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use mirra_mirror_controller::Settings;
use mirra_testkit::rbac::{
    apply, client_with_token, documents, each_cluster_role_rule_removed, granted_resources,
    refused_any, service_account_token,
};
use serde_json::json;

use crate::common::{
    namespace_as, rbac_sandbox_with_crd, sc_resource, start_with_client, wait_for,
};

const NS: &str = "mirra-system";
const RBAC: &str = "deploy/mirror/rbac.yaml";

#[tokio::test]
async fn the_mirror_controller_works_with_exactly_the_rights_deploy_grants() {
    let (sb, admin) = rbac_sandbox_with_crd().await;
    namespace_as(&admin, NS, json!({})).await;
    namespace_as(&admin, "team-a", json!({"team": "x"})).await;
    namespace_as(&admin, "team-b", json!({"team": "x"})).await;
    apply(&admin, documents(RBAC), NS).await;
    // Something a deleteItem names.
    Api::<ConfigMap>::namespaced(admin.clone(), "team-a")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "retired"}})).unwrap(),
        )
        .await
        .unwrap();

    let token = service_account_token(&admin, NS, "mirra-mirror").await;
    let mirra = client_with_token(&sb, &token).await;

    // The Lease the deployment's leader election takes.
    let leases = Api::<Lease>::namespaced(mirra.clone(), NS);
    leases
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "mirra-mirror"}})).unwrap(),
        )
        .await
        .unwrap();
    let mut lease = leases.get("mirra-mirror").await.unwrap();
    lease.spec = Some(serde_json::from_value(json!({"holderIdentity": "pod-1"})).unwrap());
    leases
        .replace("mirra-mirror", &PostParams::default(), &lease)
        .await
        .unwrap();

    let scs: Api<DynamicObject> = Api::namespaced_with(admin.clone(), NS, &sc_resource());
    scs.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "apiVersion": "sync.appuio.ch/v1alpha1", "kind": "SyncConfig",
            "metadata": {"name": "defaults", "namespace": NS},
            "spec": {
                "namespaceSelector": {"labelSelector": {"matchLabels": {"team": "x"}}},
                "syncItems": [
                    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "info"},
                     "data": {"project": "${PROJECT_NAME}"}},
                    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "pull"},
                     "data": {"k": "dg=="}},
                    // Not a kind mirra may write: a Degraded condition and
                    // an Event, the other items unaffected.
                    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bot"}}
                ],
                "deleteItems": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "retired"}],
            },
        }))
        .unwrap(),
    )
    .await
    .unwrap();

    let ctl = start_with_client(mirra, Settings::for_tests(&[NS]));
    let cm = |ns: &'static str| {
        let api = Api::<ConfigMap>::namespaced(admin.clone(), ns);
        async move { api.get_opt("info").await.unwrap() }
    };
    wait_for("the copies", || async {
        cm("team-a")
            .await
            .is_some_and(|c| c.data.unwrap_or_default()["project"] == "team-a")
            && cm("team-b").await.is_some()
            && Api::<Secret>::namespaced(admin.clone(), "team-b")
                .get_opt("pull")
                .await
                .unwrap()
                .is_some()
    })
    .await;
    wait_for("the deleteItem done", || async {
        Api::<ConfigMap>::namespaced(admin.clone(), "team-a")
            .get_opt("retired")
            .await
            .unwrap()
            .is_none()
    })
    .await;
    wait_for("the status written", || async {
        let sc = scs.get("defaults").await.unwrap();
        sc.data["status"]["synchronizedItemCount"] == 4
            && sc.data["status"]["conditions"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Degraded" && c["status"] == "True")
            })
    })
    .await;
    wait_for("the Warning Event", || async {
        !mirra_testkit::events(&admin, NS).await.is_empty()
    })
    .await;

    // Relabelled out: the copies mirra made there are pruned.
    Api::<Namespace>::all(admin.clone())
        .patch(
            "team-b",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"team": null}}})),
        )
        .await
        .unwrap();
    wait_for("team-b pruned", || async { cm("team-b").await.is_none() }).await;
    ctl.stop().await;
}

/// Every rule of the ClusterRole is used: without it, mirra's run is
/// refused exactly there (the sandbox counts refusals by verb and
/// resource), so none is superfluous.
#[tokio::test]
async fn every_rule_of_the_cluster_role_is_needed() {
    let variants = each_cluster_role_rule_removed(&documents(RBAC));
    assert!(variants.len() >= 6, "{variants:?}");
    let mut symptoms = std::collections::BTreeSet::new();
    for (removed, without) in &variants {
        let (sb, admin) = rbac_sandbox_with_crd().await;
        namespace_as(&admin, NS, json!({})).await;
        namespace_as(&admin, "team-a", json!({"team": "x"})).await;
        apply(&admin, without.clone(), NS).await;
        let token = service_account_token(&admin, NS, "mirra-mirror").await;
        let scs: Api<DynamicObject> = Api::namespaced_with(admin.clone(), NS, &sc_resource());
        scs.create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "sync.appuio.ch/v1alpha1", "kind": "SyncConfig",
                "metadata": {"name": "defaults", "namespace": NS},
                "spec": {
                    "namespaceSelector": {"labelSelector": {"matchLabels": {"team": "x"}}},
                    "syncItems": [
                        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "info"}},
                        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                         "metadata": {"name": "deny"}, "spec": {"podSelector": {}}},
                        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bot"}}
                    ],
                },
            }))
            .unwrap(),
        )
        .await
        .unwrap();
        // What the removed rule grants, as the sandbox names resources.
        let granted = granted_resources(removed);
        let ctl = start_with_client(
            client_with_token(&sb, &token).await,
            Settings::for_tests(&[NS]),
        );
        wait_for("a refusal of what the removed rule grants", || async {
            refused_any(&sb, &granted)
        })
        .await;
        // And the feature it serves fails the way deploy/mirror/rbac.yaml
        // and the failure model say.
        let has = |r: &str| granted.iter().any(|g| g == r);
        if has("namespaces") || has("syncconfigs.sync.appuio.ch") {
            symptoms.insert("not ready");
            // A watch every plan needs: not ready, nothing written.
            assert!(!ctl.ready.is_ready(), "ready without {granted:?}");
            assert!(
                scs.get("defaults").await.unwrap().data["status"].is_null(),
                "a status written without {granted:?}"
            );
        } else if has("syncconfigs.sync.appuio.ch/status") {
            symptoms.insert("no status");
            // The copies are made; only the status cannot be written.
            wait_for("the copies without a status", || async {
                Api::<ConfigMap>::namespaced(admin.clone(), "team-a")
                    .get_opt("info")
                    .await
                    .unwrap()
                    .is_some()
            })
            .await;
            assert!(scs.get("defaults").await.unwrap().data["status"].is_null());
        } else if has("events") {
            symptoms.insert("no Events");
            // Events refused: the status still says what failed.
            wait_for("the status without Events", || async {
                scs.get("defaults").await.unwrap().data["status"]["failedItemCount"] == 1
            })
            .await;
            assert!(mirra_testkit::events(&admin, NS).await.is_empty());
        } else {
            // A kind's rule: its items are Degraded, naming the resource,
            // and the other items keep syncing.
            symptoms.insert("kind Degraded");
            let plurals: Vec<&String> = granted.iter().filter(|g| !g.contains('/')).collect();
            wait_for("the kind's items Degraded, naming it", || async {
                let status = scs.get("defaults").await.unwrap().data["status"].clone();
                let degraded = status["conditions"].as_array().and_then(|c| {
                    c.iter()
                        .find(|c| c["type"] == "Degraded" && c["status"] == "True")
                        .and_then(|c| c["message"].as_str().map(str::to_string))
                });
                degraded.is_some_and(|m| {
                    plurals
                        .iter()
                        .any(|p| m.contains(p.split('.').next().unwrap_or(p)))
                }) && status["synchronizedItemCount"].as_i64().unwrap_or(0) >= 1
            })
            .await;
        }
        ctl.stop().await;
    }
    assert_eq!(
        symptoms,
        ["kind Degraded", "no Events", "no status", "not ready"].into(),
        "every kind of rule was removed once"
    );
}
