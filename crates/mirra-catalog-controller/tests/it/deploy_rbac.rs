//! deploy/catalog/rbac.yaml is enough: both directions of the catalog
//! sync run as the ServiceAccount that file defines, with exactly the
//! rights it grants, against a kube-sandbox that authenticates and
//! authorizes with RBAC: Services and EndpointSlices reach Consul, a bad
//! annotation gets its Warning Event, Consul services come back as
//! ExternalName Services in the write namespace, and the leader-election
//! Lease can be taken.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Service, ServiceAccount};
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, Config};
use kube_sandbox::Sandbox;
use kube_sandbox::auth::{AuthConfig, MASTERS, StaticToken};
use mirra_catalog::SyncSettings;
use mirra_runtime::Readiness;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::*;

const ADMIN: &str = "admin-token";

async fn client_with(sb: &Sandbox, token: &str) -> Client {
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

/// The documents of deploy/catalog/rbac.yaml.
fn deploy_rbac() -> Vec<Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../deploy/catalog/rbac.yaml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    serde_yaml::Deserializer::from_str(&text)
        .map(|doc| serde::Deserialize::deserialize(doc).unwrap())
        .filter(|v: &Value| !v.is_null())
        .collect()
}

/// Applies RBAC documents as they are (namespaced objects into the
/// namespace they name, else mirra-system).
async fn apply_rbac(admin: &Client, docs: Vec<Value>) {
    for mut v in docs {
        let kind = v["kind"].as_str().unwrap().to_string();
        let api_version = v["apiVersion"].as_str().unwrap().to_string();
        let (group, version) = api_version.split_once('/').unwrap_or(("", &api_version));
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(group, version, &kind),
            &format!("{}s", kind.to_lowercase()),
        );
        let api: Api<DynamicObject> =
            if matches!(kind.as_str(), "ServiceAccount" | "Role" | "RoleBinding") {
                let ns = v["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or("mirra-system")
                    .to_string();
                v["metadata"]["namespace"] = json!(ns);
                Api::namespaced_with(admin.clone(), &ns, &ar)
            } else {
                Api::all_with(admin.clone(), &ar)
            };
        api.create(&PostParams::default(), &serde_json::from_value(v).unwrap())
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn both_directions_work_with_exactly_the_rights_deploy_grants() {
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
    let admin = client_with(&sb, ADMIN).await;
    ensure_namespace(&admin, "mirra-system").await;
    apply_rbac(&admin, deploy_rbac()).await;
    cluster_ip(
        &admin,
        "shop",
        "cart",
        json!({"consul.hashicorp.com/service-port": "nope"}),
    )
    .await;
    put_slice(&admin, "shop", "cart", "cart-1", &eps(&ips("10.3.0", 2))).await;

    let token = Api::<ServiceAccount>::namespaced(admin.clone(), "mirra-system")
        .create_token_request(
            "mirra-catalog",
            &PostParams::default(),
            &serde_json::from_value(json!({"spec": {}})).unwrap(),
        )
        .await
        .unwrap()
        .status
        .unwrap()
        .token;
    let mirra = client_with(&sb, &token).await;
    Api::<Lease>::namespaced(mirra.clone(), "mirra-system")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "mirra-sync-catalog"}})).unwrap(),
        )
        .await
        .unwrap();

    let (_csb, c) = consul().await;
    c.register(&mirra_consul::RegisterRequest {
        node: "ext".into(),
        address: "10.0.0.1".into(),
        service: Some(mirra_consul::Service {
            id: "db-1".into(),
            service: "db".into(),
            port: 5432,
            ..mirra_consul::Service::default()
        }),
        ..mirra_consul::RegisterRequest::default()
    })
    .await
    .unwrap();
    let sync = SyncSettings {
        to_k8s: true,
        ..sync_settings("k8s-sync")
    };
    let ctl = start(&mirra, &c, settings(sync.clone()));
    let stop = CancellationToken::new();
    let reverse = tokio::spawn(mirra_catalog_controller::to_k8s::run_to_k8s(
        mirra.clone(),
        c.clone(),
        sync,
        mirra_runtime::WriteFence::new(
            mirra_runtime::LeaseDeadline::always(),
            std::time::Duration::from_secs(10),
        ),
        None,
        Readiness::new().register("to-k8s"),
        stop.clone(),
    ));

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
    let docs = deploy_rbac();
    let role_at = docs
        .iter()
        .position(|d| d["kind"] == "ClusterRole")
        .unwrap();
    let rules = docs[role_at]["rules"].as_array().unwrap().clone();
    assert!(rules.len() >= 5, "{rules:?}");
    let (_csb, c) = consul().await;
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
        let admin = client_with(&sb, ADMIN).await;
        ensure_namespace(&admin, "mirra-system").await;
        let mut without = docs.clone();
        without[role_at]["rules"].as_array_mut().unwrap().remove(i);
        apply_rbac(&admin, without).await;
        // A bad annotation, so that an Event is due.
        cluster_ip(
            &admin,
            "shop",
            "cart",
            json!({"consul.hashicorp.com/service-port": "nope"}),
        )
        .await;
        put_slice(&admin, "shop", "cart", "cart-1", &eps(&ips("10.3.0", 1))).await;
        let token = Api::<ServiceAccount>::namespaced(admin.clone(), "mirra-system")
            .create_token_request(
                "mirra-catalog",
                &PostParams::default(),
                &serde_json::from_value(json!({"spec": {}})).unwrap(),
            )
            .await
            .unwrap()
            .status
            .unwrap()
            .token;
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
                    .map(move |g| match g.as_str().unwrap() {
                        "" => r.clone(),
                        g => format!("{r}.{g}"),
                    })
            })
            .collect();
        let sync = SyncSettings {
            enable_ingress: true,
            ..sync_settings(&format!("k8s-sync-{i}"))
        };
        let ctl = start(&client_with(&sb, &token).await, &c, settings(sync));
        wait_for("a refusal of what the removed rule grants", || async {
            sb.stats().refused.keys().any(|k| {
                k.split_once(' ')
                    .is_some_and(|(_, resource)| granted.iter().any(|g| g == resource))
            })
        })
        .await;
        ctl.stop.cancel();
        let _ = ctl.task.await;
    }
}
