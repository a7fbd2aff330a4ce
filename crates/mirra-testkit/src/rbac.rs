//! A kube-sandbox with authentication and RBAC on, and deploy/'s RBAC
//! manifests applied as they are: what the tests that prove those
//! manifests share.

// Test fixtures: a failure to set up is the test's failure, as the crate
// doc says of every helper here.
#![allow(clippy::expect_used)]

use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, Config};
use kube_sandbox::Sandbox;
use kube_sandbox::auth::{AuthConfig, MASTERS, StaticToken};
use serde_json::{Value, json};

/// The admin's static token (group `system:masters`).
pub const ADMIN_TOKEN: &str = "admin-token";

/// A sandbox that authenticates and authorizes with RBAC, and a client of
/// its admin.
pub async fn sandbox_with_rbac() -> (Sandbox, Client) {
    let sb = Sandbox::start(kube_sandbox::Config {
        auth: Some(AuthConfig {
            tokens: vec![StaticToken {
                token: ADMIN_TOKEN.into(),
                user: "admin".into(),
                groups: vec![MASTERS.into()],
            }],
        }),
        ..Default::default()
    })
    .await
    .expect("the sandbox starts");
    let admin = client_with_token(&sb, ADMIN_TOKEN).await;
    (sb, admin)
}

/// A client of `sb` authenticating with `token`.
pub async fn client_with_token(sb: &Sandbox, token: &str) -> Client {
    let kc = kube::config::Kubeconfig::from_yaml(&kube_sandbox::kubeconfig_with_token(
        &sb.url(),
        Some(token),
    ))
    .expect("a valid kubeconfig");
    let config = Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("a usable kubeconfig");
    Client::try_from(config).expect("a client")
}

/// The documents of the YAML file at `path` (relative to the workspace
/// root), e.g. `deploy/mirror/rbac.yaml`.
pub fn documents(path: &str) -> Vec<Value> {
    let full = format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"));
    serde_yaml::Deserializer::from_str(&text)
        .map(|doc| serde::Deserialize::deserialize(doc).expect("YAML documents"))
        .filter(|v: &Value| !v.is_null())
        .collect()
}

/// The ClusterRole's rules in `docs`, each with `docs` as they are
/// without it: for the tests that show every rule is needed.
pub fn each_cluster_role_rule_removed(docs: &[Value]) -> Vec<(Value, Vec<Value>)> {
    let role_at = docs
        .iter()
        .position(|d| d["kind"] == "ClusterRole")
        .expect("a ClusterRole");
    let rules = docs[role_at]["rules"]
        .as_array()
        .expect("its rules")
        .clone();
    (0..rules.len())
        .map(|i| {
            let mut without = docs.to_vec();
            if let Some(r) = without[role_at]["rules"].as_array_mut() {
                r.remove(i);
            }
            (rules[i].clone(), without)
        })
        .collect()
}

/// Creates `docs` as the admin: namespaced ones (ServiceAccounts, Roles,
/// RoleBindings) in the namespace they name, else in `default_ns`, as
/// kustomize's `namespace:` would.
pub async fn apply(admin: &Client, docs: Vec<Value>, default_ns: &str) {
    for mut v in docs {
        let kind = v["kind"].as_str().expect("a kind").to_string();
        let api_version = v["apiVersion"].as_str().expect("an apiVersion").to_string();
        let (group, version) = api_version.split_once('/').unwrap_or(("", &api_version));
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(group, version, &kind),
            &format!("{}s", kind.to_lowercase()),
        );
        let api: Api<DynamicObject> =
            if matches!(kind.as_str(), "ServiceAccount" | "Role" | "RoleBinding") {
                let ns = v["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or(default_ns)
                    .to_string();
                v["metadata"]["namespace"] = json!(ns);
                Api::namespaced_with(admin.clone(), &ns, &ar)
            } else {
                Api::all_with(admin.clone(), &ar)
            };
        let object: DynamicObject = serde_json::from_value(v).expect("an object");
        api.create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|e| panic!("creating a {kind}: {e}"));
    }
}

/// A token of ServiceAccount `namespace/name`, issued by the sandbox.
pub async fn service_account_token(admin: &Client, namespace: &str, name: &str) -> String {
    Api::<ServiceAccount>::namespaced(admin.clone(), namespace)
        .create_token_request(
            name,
            &PostParams::default(),
            &serde_json::from_value(json!({"spec": {}})).expect("a TokenRequest"),
        )
        .await
        .expect("a token")
        .status
        .expect("an issued token")
        .token
}

/// What a PolicyRule grants, as the sandbox's request counters name
/// resources (`configmaps`, `ingresses.networking.k8s.io`,
/// `syncconfigs.sync.appuio.ch/status`).
pub fn granted_resources(rule: &Value) -> Vec<String> {
    let strings = |k: &str| -> Vec<String> {
        rule[k]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for r in strings("resources") {
        for g in strings("apiGroups") {
            out.push(match (g.as_str(), r.split_once('/')) {
                ("", _) => r.clone(),
                (g, Some((base, sub))) => format!("{base}.{g}/{sub}"),
                (g, None) => format!("{r}.{g}"),
            });
        }
    }
    out
}

/// Whether `sb` refused a request on one of `resources`.
pub fn refused_any(sb: &Sandbox, resources: &[String]) -> bool {
    sb.stats().refused.keys().any(|k| {
        k.split_once(' ')
            .is_some_and(|(_, resource)| resources.iter().any(|r| r == resource))
    })
}
