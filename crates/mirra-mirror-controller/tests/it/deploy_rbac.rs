//! deploy/mirror/rbac.yaml is enough: the mirror controller runs as the
//! ServiceAccount that file defines, with exactly the rights it grants,
//! against a kube-sandbox that authenticates and authorizes with RBAC,
//! and everything the README promises works (copies, templating, pruning,
//! deleteItems, status, Events, the leader-election Lease).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, ServiceAccount};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, Config};
use kube_sandbox::Sandbox;
use kube_sandbox::auth::{AuthConfig, MASTERS, StaticToken};
use mirra_mirror_controller::Settings;
use serde_json::{Value, json};

use crate::common::{sc_resource, start_with_client, wait_for};

const NS: &str = "mirra-system";
const ADMIN: &str = "admin-token";

async fn client(sb: &Sandbox, token: &str) -> Client {
    let kc = kube::config::Kubeconfig::from_yaml(&kube_sandbox::kubeconfig_with_token(
        &sb.url(),
        Some(token),
    ))
    .unwrap();
    Client::try_from(
        Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .unwrap(),
    )
    .unwrap()
}

/// The documents of deploy/mirror/rbac.yaml.
fn deploy_rbac() -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/mirror/rbac.yaml");
    let text = std::fs::read_to_string(path).unwrap();
    serde_yaml::Deserializer::from_str(&text)
        .map(|doc| serde::Deserialize::deserialize(doc).unwrap())
        .filter(|v: &Value| !v.is_null())
        .collect()
}

/// Applies RBAC documents as kustomize would (namespaced ones into
/// mirra-system).
async fn apply_rbac(admin: &Client, docs: Vec<Value>) {
    for mut v in docs {
        let kind = v["kind"].as_str().unwrap().to_string();
        let (group, version) = match v["apiVersion"].as_str().unwrap().split_once('/') {
            Some((g, ver)) => (g.to_string(), ver.to_string()),
            None => (String::new(), v["apiVersion"].as_str().unwrap().to_string()),
        };
        let plural = format!("{}s", kind.to_lowercase());
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(&group, &version, &kind),
            &plural,
        );
        let namespaced = matches!(kind.as_str(), "ServiceAccount" | "Role" | "RoleBinding");
        let api: Api<DynamicObject> = if namespaced {
            v["metadata"]["namespace"] = json!(NS);
            Api::namespaced_with(admin.clone(), NS, &ar)
        } else {
            Api::all_with(admin.clone(), &ar)
        };
        api.create(&PostParams::default(), &serde_json::from_value(v).unwrap())
            .await
            .unwrap();
    }
}

async fn namespace(admin: &Client, name: &str, labels: Value) {
    Api::<Namespace>::all(admin.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap(),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn the_mirror_controller_works_with_exactly_the_rights_deploy_grants() {
    let sb = Sandbox::start(kube_sandbox::Config {
        auth: Some(AuthConfig {
            tokens: vec![StaticToken {
                token: ADMIN.into(),
                user: "admin".into(),
                groups: vec![MASTERS.into()],
            }],
        }),
        ..Default::default()
    })
    .await
    .unwrap();
    let admin = client(&sb, ADMIN).await;
    Api::<CustomResourceDefinition>::all(admin.clone())
        .create(
            &PostParams::default(),
            &mirra_mirror_controller::mirra_mirror::crd(),
        )
        .await
        .unwrap();
    namespace(&admin, NS, json!({})).await;
    namespace(&admin, "team-a", json!({"team": "x"})).await;
    namespace(&admin, "team-b", json!({"team": "x"})).await;
    apply_rbac(&admin, deploy_rbac()).await;
    // Something a deleteItem names.
    Api::<ConfigMap>::namespaced(admin.clone(), "team-a")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "retired"}})).unwrap(),
        )
        .await
        .unwrap();

    let token = Api::<ServiceAccount>::namespaced(admin.clone(), NS)
        .create_token_request(
            "mirra-mirror",
            &PostParams::default(),
            &serde_json::from_value(json!({"spec": {}})).unwrap(),
        )
        .await
        .unwrap()
        .status
        .unwrap()
        .token;
    let mirra = client(&sb, &token).await;

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
    let docs = deploy_rbac();
    let role_at = docs
        .iter()
        .position(|d| d["kind"] == "ClusterRole")
        .unwrap();
    let rules = docs[role_at]["rules"].as_array().unwrap().clone();
    assert!(rules.len() >= 6, "{rules:?}");
    for (i, removed) in rules.iter().enumerate() {
        let sb = Sandbox::start(kube_sandbox::Config {
            auth: Some(AuthConfig {
                tokens: vec![StaticToken {
                    token: ADMIN.into(),
                    user: "admin".into(),
                    groups: vec![MASTERS.into()],
                }],
            }),
            ..Default::default()
        })
        .await
        .unwrap();
        let admin = client(&sb, ADMIN).await;
        Api::<CustomResourceDefinition>::all(admin.clone())
            .create(
                &PostParams::default(),
                &mirra_mirror_controller::mirra_mirror::crd(),
            )
            .await
            .unwrap();
        namespace(&admin, NS, json!({})).await;
        namespace(&admin, "team-a", json!({"team": "x"})).await;
        let mut without = docs.clone();
        without[role_at]["rules"].as_array_mut().unwrap().remove(i);
        apply_rbac(&admin, without).await;
        let token = Api::<ServiceAccount>::namespaced(admin.clone(), NS)
            .create_token_request(
                "mirra-mirror",
                &PostParams::default(),
                &serde_json::from_value(json!({"spec": {}})).unwrap(),
            )
            .await
            .unwrap()
            .status
            .unwrap()
            .token;
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
        let granted: Vec<String> = removed["resources"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| {
                let r = r.as_str().unwrap().to_string();
                removed["apiGroups"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(move |g| {
                        let g = g.as_str().unwrap();
                        match (g, r.split_once('/')) {
                            ("", _) => r.clone(),
                            (g, Some((base, sub))) => format!("{base}.{g}/{sub}"),
                            (g, None) => format!("{r}.{g}"),
                        }
                    })
            })
            .collect();
        let ctl = start_with_client(client(&sb, &token).await, Settings::for_tests(&[NS]));
        wait_for("a refusal of what the removed rule grants", || async {
            sb.stats().refused.keys().any(|k| {
                k.split_once(' ')
                    .is_some_and(|(_, resource)| granted.iter().any(|g| g == resource))
            })
        })
        .await;
        ctl.stop().await;
    }
}
