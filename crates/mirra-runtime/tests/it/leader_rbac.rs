//! The leader-election Roles of deploy/ are exactly what `LeaderElector`
//! needs, verb by verb, for both controllers: with the whole Role the
//! deployment's ServiceAccount takes the Lease; without any one verb it is
//! refused on leases and does not lead (or stops leading once the renewal
//! is refused), counting the refusals as the failure model says
//! (`mirra_leader_election_errors_total{class="forbidden"}`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use mirra_runtime::LeaderMetrics;
use mirra_runtime::leader::{LeaderConfig, LeaderElector};
use mirra_testkit::rbac::{
    apply, client_with_token, documents, refused_any, sandbox_with_rbac, service_account_token,
};
use mirra_testkit::wait_for;
use serde_json::{Value, json};

const NS: &str = "mirra-system";

/// Runs the elector as `account` of `file`, once with its leader Role
/// (`role`) whole and once without each verb.
async fn every_verb_is_needed(file: &str, role: &str, account: &str, lease: &str) {
    let docs = documents(file);
    let role_at = docs
        .iter()
        .position(|d| d["kind"] == "Role" && d["metadata"]["name"] == role)
        .unwrap_or_else(|| panic!("{file} has no Role {role}"));
    let verbs: Vec<Value> = docs[role_at]["rules"][0]["verbs"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(
        verbs,
        vec![json!("get"), json!("create"), json!("update")],
        "{file}"
    );
    for removed in std::iter::once(None).chain(verbs.iter().map(Some)) {
        let (sb, admin) = sandbox_with_rbac().await;
        Api::<Namespace>::all(admin.clone())
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": NS}})).unwrap(),
            )
            .await
            .unwrap();
        let mut without = docs.clone();
        if let Some(v) = removed {
            without[role_at]["rules"][0]["verbs"]
                .as_array_mut()
                .unwrap()
                .retain(|x| x != v);
        }
        apply(&admin, without, NS).await;
        let token = service_account_token(&admin, NS, account).await;
        let mut registry = prometheus_client::registry::Registry::default();
        let metrics = LeaderMetrics::register(&mut registry);
        let config = LeaderConfig {
            lease_duration: Duration::from_secs(2),
            renew: Duration::from_millis(200),
            ..LeaderConfig::new(NS, lease, "pod-1")
        };
        let elector = LeaderElector::new(client_with_token(&sb, &token).await, config)
            .unwrap()
            .with_metrics(metrics);
        let leading = elector.subscribe();
        let task = tokio::spawn(elector.run(std::future::pending()));
        let forbidden = || {
            let mut out = String::new();
            prometheus_client::encoding::text::encode(&mut out, &registry).unwrap();
            out.lines().any(|l| {
                l.starts_with("mirra_leader_election_errors_total{class=\"forbidden\"}")
                    && !l.ends_with(" 0")
            })
        };
        match removed {
            None => {
                wait_for(&format!("{file}: the Lease taken"), || async {
                    *leading.borrow()
                })
                .await;
                assert!(!forbidden(), "{file}");
            }
            Some(verb) => {
                if verb == "update" {
                    // The first Lease is created (no update needed), then
                    // never renewed: leadership ends with it.
                    wait_for(&format!("{file}: the Lease created"), || async {
                        *leading.borrow()
                    })
                    .await;
                }
                wait_for(
                    &format!("{file}: leases refused without {verb}"),
                    || async {
                        forbidden() && refused_any(&sb, &["leases.coordination.k8s.io".to_string()])
                    },
                )
                .await;
                wait_for(&format!("{file}: not leading without {verb}"), || async {
                    !*leading.borrow()
                })
                .await;
                if verb != "update" {
                    let holder = Api::<Lease>::namespaced(admin.clone(), NS)
                        .get_opt(lease)
                        .await
                        .unwrap()
                        .and_then(|l| l.spec)
                        .and_then(|s| s.holder_identity);
                    assert_eq!(holder, None, "{file}: the Lease was taken without {verb}");
                }
            }
        }
        task.abort();
    }
}

#[tokio::test]
async fn every_verb_of_the_mirror_leader_role_is_needed() {
    every_verb_is_needed(
        "deploy/mirror/rbac.yaml",
        "mirra-mirror-leader",
        "mirra-mirror",
        "mirra-mirror",
    )
    .await;
}

#[tokio::test]
async fn every_verb_of_the_catalog_leader_role_is_needed() {
    every_verb_is_needed(
        "deploy/catalog/rbac.yaml",
        "mirra-catalog-leader",
        "mirra-catalog",
        "mirra-sync-catalog",
    )
    .await;
}
