//! Tenant SyncConfigs against a sandbox that authenticates and authorizes
//! with RBAC: mirra runs with the rights of deploy/mirror/rbac.yaml and
//! deploy/mirror-tenants, and a SyncConfig in a tenant namespace writes as
//! the ServiceAccount it names. It copies only where that account may
//! write (a refusal is a status condition and an Event, never a write with
//! mirra's rights), reads only the sources the account may read, prunes
//! as the account, and without a (real) account writes nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use mirra_mirror_controller::Settings;
use mirra_testkit::rbac::{apply, client_with_token, documents, service_account_token};
use serde_json::{Value, json};

use crate::common::{
    namespace_as, rbac_sandbox_with_crd, sc_resource, start_with_client, wait_for,
};

const NS: &str = "mirra-system";
const TENANT: &str = "team-a";
const TENANT_RBAC: &str = "deploy/mirror-tenants/rbac.yaml";

async fn create(admin: &Client, v: Value) {
    apply(admin, vec![v], "default").await;
}

/// A Role in `ns` letting the tenant's ServiceAccount do `verbs` on
/// ConfigMaps and Secrets there.
async fn grant_tenant(admin: &Client, ns: &str, verbs: Value) {
    create(
        admin,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": "syncer", "namespace": ns},
               "rules": [{"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": verbs}]}),
    )
    .await;
    create(
        admin,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "syncer", "namespace": ns},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "syncer"},
               "subjects": [{"kind": "ServiceAccount", "name": "syncer", "namespace": TENANT}]}),
    )
    .await;
}

fn tenant_spec(service_account: Option<&str>) -> Value {
    let mut spec = json!({
        "namespaceSelector": {"labelSelector": {"matchLabels": {"owner": "team-a"}}},
        "syncItems": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "info"},
                       "data": {"project": "${PROJECT_NAME}"}}],
        "copyItems": [{"apiVersion": "v1", "kind": "Secret",
                       "namespace": "cert-manager", "name": "wildcard-tls"}],
    });
    if let Some(sa) = service_account {
        spec["serviceAccountName"] = json!(sa);
    }
    spec
}

async fn status(scs: &Api<DynamicObject>, name: &str) -> Value {
    scs.get(name).await.unwrap().data["status"].clone()
}

/// The cluster both tests share: mirra's and the tenant overlay's RBAC,
/// team-a open to tenants (mirra may impersonate its ServiceAccounts),
/// the tenant's account `syncer` allowed to write in team-a-dev and
/// team-a-prod only, and the source Secret in cert-manager.
async fn tenant_cluster() -> (kube_sandbox::Sandbox, Client) {
    tenant_cluster_with(documents(TENANT_RBAC)).await
}

/// [`tenant_cluster`] with `tenant_rbac` in place of deploy/mirror-tenants.
async fn tenant_cluster_with(tenant_rbac: Vec<Value>) -> (kube_sandbox::Sandbox, Client) {
    let (sb, admin) = rbac_sandbox_with_crd().await;
    namespace_as(&admin, NS, json!({})).await;
    namespace_as(&admin, TENANT, json!({})).await;
    namespace_as(&admin, "team-a-dev", json!({"owner": "team-a"})).await;
    namespace_as(&admin, "team-a-prod", json!({"owner": "team-a"})).await;
    // The tenant's too, but its account may only read there.
    namespace_as(&admin, "team-a-audit", json!({"owner": "team-a"})).await;
    // Selected by the tenant's label selector, but not the tenant's.
    namespace_as(&admin, "payments", json!({"owner": "team-a"})).await;
    namespace_as(&admin, "cert-manager", json!({})).await;
    namespace_as(&admin, "elsewhere", json!({})).await;
    apply(&admin, documents("deploy/mirror/rbac.yaml"), NS).await;
    apply(&admin, tenant_rbac, NS).await;
    // The operator opens team-a to tenants: mirra may impersonate its
    // ServiceAccounts, and only those.
    create(
        &admin,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "mirra-mirror-tenant", "namespace": TENANT},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "mirra-mirror-tenant"},
               "subjects": [{"kind": "ServiceAccount", "name": "mirra-mirror", "namespace": NS}]}),
    )
    .await;
    // The tenant's account may write in its two namespaces only.
    create(
        &admin,
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": "syncer", "namespace": TENANT}}),
    )
    .await;
    let all = json!([
        "get", "list", "watch", "create", "patch", "update", "delete"
    ]);
    grant_tenant(&admin, "team-a-dev", all.clone()).await;
    grant_tenant(&admin, "team-a-prod", all).await;
    grant_tenant(&admin, "team-a-audit", json!(["get", "list", "watch"])).await;
    Api::<Secret>::namespaced(admin.clone(), "cert-manager")
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"metadata": {"name": "wildcard-tls"}, "data": {"tls.crt": "djE="}}),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    (sb, admin)
}

#[tokio::test]
async fn a_tenant_syncconfig_writes_only_where_its_service_account_may() {
    let (sb, admin) = tenant_cluster().await;

    let scs = |ns: &str| -> Api<DynamicObject> {
        Api::namespaced_with(admin.clone(), ns, &sc_resource())
    };
    let sc = |name: &str, ns: &str, spec: Value| {
        serde_json::from_value::<DynamicObject>(json!({
            "apiVersion": "sync.appuio.ch/v1alpha1", "kind": "SyncConfig",
            "metadata": {"name": name, "namespace": ns}, "spec": spec,
        }))
        .unwrap()
    };
    let pp = PostParams::default();
    scs(TENANT)
        .create(&pp, &sc("defaults", TENANT, tenant_spec(Some("syncer"))))
        .await
        .unwrap();
    // A SyncConfig `name` in `ns` with one ConfigMap item of that name.
    let one_item = |name: &str, ns: &str, account: Option<&str>| {
        let mut spec = tenant_spec(account);
        spec["syncItems"][0]["metadata"]["name"] = json!(name);
        spec["copyItems"] = json!([]);
        sc(name, ns, spec)
    };
    // No account: Invalid, nothing written for it. An account that does
    // not exist: the same. A namespace neither watched nor open to
    // tenants: ignored.
    for (name, ns, account) in [
        ("anonymous", TENANT, None),
        ("ghost", TENANT, Some("ghost")),
        ("outside", "elsewhere", Some("syncer")),
    ] {
        scs(ns)
            .create(&pp, &one_item(name, ns, account))
            .await
            .unwrap();
    }

    let token = service_account_token(&admin, NS, "mirra-mirror").await;
    let mirra = client_with_token(&sb, &token).await;
    let mut settings = Settings::for_tests(&[NS]);
    settings.tenant_namespaces.insert(TENANT.to_string());
    let ctl = start_with_client(mirra, settings);

    let cm = |ns: &str, name: &str| {
        let api = Api::<ConfigMap>::namespaced(admin.clone(), ns);
        let name = name.to_string();
        async move { api.get_opt(&name).await.unwrap() }
    };
    let secret = |ns: &str| {
        let api = Api::<Secret>::namespaced(admin.clone(), ns);
        async move { api.get_opt("wildcard-tls").await.unwrap() }
    };
    wait_for("the tenant's copies", || async {
        cm("team-a-dev", "info").await.is_some() && cm("team-a-prod", "info").await.is_some()
    })
    .await;
    let copy = cm("team-a-dev", "info").await.unwrap();
    assert_eq!(copy.data.unwrap()["project"], "team-a-dev");
    assert_eq!(
        copy.metadata.annotations.unwrap()["sync.appuio.ch/service-account"],
        "syncer"
    );
    // Held back in payments (the account may not read there), and the
    // source unreadable (the account may not read cert-manager): each a
    // failure on the status, naming the account's missing right.
    wait_for("the refusals on the status", || async {
        let st = status(&scs(TENANT), "defaults").await;
        st["failedItemCount"] == 6 && st["synchronizedItemCount"] == 2
    })
    .await;
    let st = status(&scs(TENANT), "defaults").await.to_string();
    // Where the account may not read, mirra neither plans nor writes for
    // it: the reason is the account's missing right, found by an access
    // review made as the account, and not a single write lands there.
    assert!(
        st.contains(
            "payments ConfigMap/info: system:serviceaccount:team-a:syncer may not get configmaps \
             in namespace payments"
        ),
        "{st}"
    );
    assert!(
        st.contains(
            "the source Secret cert-manager/wildcard-tls cannot be read \
             (system:serviceaccount:team-a:syncer may not list secrets"
        ),
        "{st}"
    );
    // Where it may read but not write, the write is made as the account
    // and refused by the server, halfway through the namespaces: the
    // server's message, naming the account.
    assert!(
        st.contains(
            "team-a-audit ConfigMap/info: Forbidden (403): configmaps \\\"info\\\" is forbidden: User \
             \\\"system:serviceaccount:team-a:syncer\\\" cannot patch resource \\\"configmaps\\\""
        ),
        "{st}"
    );
    let in_payments = sb
        .stats()
        .namespaces
        .get("payments")
        .cloned()
        .unwrap_or_default();
    assert!(
        in_payments
            .keys()
            .all(|k| k.starts_with("list ") || k.starts_with("watch ")),
        "mirra sent a request into payments (read before the test's own GET) for the tenant: {in_payments:?}"
    );
    assert!(
        cm("payments", "info").await.is_none(),
        "nothing with mirra's rights"
    );
    let events = mirra_testkit::events(&admin, TENANT).await;
    assert!(
        !events.is_empty(),
        "a Warning Event on the tenant's SyncConfig"
    );

    for (name, want) in [
        ("anonymous", "spec.serviceAccountName: is required"),
        ("ghost", "ServiceAccount team-a/ghost does not exist"),
    ] {
        wait_for(name, || async {
            status(&scs(TENANT), name).await.to_string().contains(want)
        })
        .await;
        for ns in ["team-a-dev", "team-a-prod", "payments"] {
            assert!(cm(ns, name).await.is_none(), "{name} wrote into {ns}");
        }
    }
    assert!(
        status(&scs("elsewhere"), "outside").await.is_null(),
        "a SyncConfig outside the watched and tenant namespaces is not touched"
    );
    assert!(cm("team-a-dev", "outside").await.is_none());

    // The tenant may read the source now: its copies follow, as the
    // account reads it (the watch is retried and picks the grant up).
    grant_tenant(&admin, "cert-manager", json!(["get", "list", "watch"])).await;
    wait_for("the source copied once readable", || async {
        secret("team-a-dev").await.is_some() && secret("team-a-prod").await.is_some()
    })
    .await;
    assert!(secret("payments").await.is_none());

    // The ghost account is created: its SyncConfig becomes valid and
    // writes (as that account, which may write nowhere: refused).
    create(
        &admin,
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": "ghost", "namespace": TENANT}}),
    )
    .await;
    wait_for("ghost no longer invalid, refused instead", || async {
        let st = status(&scs(TENANT), "ghost").await.to_string();
        !st.contains("does not exist") && st.contains("system:serviceaccount:team-a:ghost")
    })
    .await;
    for ns in ["team-a-dev", "team-a-prod", "payments"] {
        assert!(cm(ns, "ghost").await.is_none(), "ghost wrote into {ns}");
    }

    // team-a-prod leaves the selection: its copies are pruned, as the
    // tenant's account.
    Api::<Namespace>::all(admin.clone())
        .patch(
            "team-a-prod",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"owner": null}}})),
        )
        .await
        .unwrap();
    wait_for("team-a-prod pruned", || async {
        cm("team-a-prod", "info").await.is_none() && secret("team-a-prod").await.is_none()
    })
    .await;
    assert!(cm("team-a-dev", "info").await.is_some());
    ctl.stop().await;
}

#[tokio::test]
async fn a_tenant_source_change_costs_one_write_per_copy_and_no_read() {
    let (sb, admin) = tenant_cluster().await;
    grant_tenant(&admin, "cert-manager", json!(["get", "list", "watch"])).await;
    let scs: Api<DynamicObject> = Api::namespaced_with(admin.clone(), TENANT, &sc_resource());
    scs.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "apiVersion": "sync.appuio.ch/v1alpha1", "kind": "SyncConfig",
            "metadata": {"name": "tls", "namespace": TENANT},
            "spec": {
                "namespaceSelector": {"matchNames": ["team-a-dev", "team-a-prod"]},
                "serviceAccountName": "syncer",
                "copyItems": [{"apiVersion": "v1", "kind": "Secret",
                               "namespace": "cert-manager", "name": "wildcard-tls"}],
            },
        }))
        .unwrap(),
    )
    .await
    .unwrap();
    let token = service_account_token(&admin, NS, "mirra-mirror").await;
    let mut settings = Settings::for_tests(&[NS]);
    settings.tenant_namespaces.insert(TENANT.to_string());
    let ctl = start_with_client(client_with_token(&sb, &token).await, settings);
    let cert = |ns: &'static str| {
        let api = Api::<Secret>::namespaced(admin.clone(), ns);
        async move {
            api.get_opt("wildcard-tls")
                .await
                .unwrap()
                .and_then(|s| s.data)
                .and_then(|d| d.get("tls.crt").map(|b| b.0.clone()))
        }
    };
    wait_for("the copies", || async {
        cert("team-a-dev").await.is_some() && cert("team-a-prod").await.is_some()
    })
    .await;
    let quiet = || async {
        mirra_testkit::settle_for("the tenant's copies", 10, || Some(sb.stats().requests)).await
    };
    quiet().await;

    sb.reset_stats();
    Api::<Secret>::namespaced(admin.clone(), "cert-manager")
        .patch(
            "wildcard-tls",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"tls.crt": "djI="}})),
        )
        .await
        .unwrap();
    let polls = std::cell::Cell::new(0u64);
    wait_for("both copies renewed", || async {
        // Both read every time, so the GETs are counted exactly.
        polls.set(polls.get() + 2);
        let dev = cert("team-a-dev").await;
        let prod = cert("team-a-prod").await;
        dev.as_deref() == Some(b"v2".as_slice()) && prod.as_deref() == Some(b"v2".as_slice())
    })
    .await;
    let requests = quiet().await;
    let non_watch: std::collections::BTreeMap<String, u64> = requests
        .into_iter()
        .filter(|(k, _)| !k.starts_with("watch "))
        .collect();
    assert_eq!(
        non_watch,
        [
            ("patch secrets".to_string(), 2 + 1),
            ("get secrets".to_string(), polls.get()),
        ]
        .into(),
        "the test's patch and GETs aside, one impersonated apply per copy and nothing else"
    );
    ctl.stop().await;
}

/// Every verb of deploy/mirror-tenants' ClusterRole is used: without
/// `impersonate` nothing is done for a tenant and its status says why;
/// without `list` or `watch` mirra cannot watch whether the account it
/// names exists (refused there; the writes, made as the account, go on).
#[tokio::test]
async fn every_verb_of_the_tenant_cluster_role_is_needed() {
    let docs = documents(TENANT_RBAC);
    let verbs: Vec<String> = docs[0]["rules"][0]["verbs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(verbs, ["list", "watch", "impersonate"]);
    for removed in &verbs {
        let mut without = docs.clone();
        without[0]["rules"][0]["verbs"]
            .as_array_mut()
            .unwrap()
            .retain(|v| v != removed.as_str());
        let (sb, admin) = tenant_cluster_with(without).await;
        let scs: Api<DynamicObject> = Api::namespaced_with(admin.clone(), TENANT, &sc_resource());
        scs.create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "sync.appuio.ch/v1alpha1", "kind": "SyncConfig",
                "metadata": {"name": "info", "namespace": TENANT},
                "spec": {
                    "namespaceSelector": {"matchNames": ["team-a-dev"]},
                    "serviceAccountName": "syncer",
                    "syncItems": [{"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": "info"}}],
                },
            }))
            .unwrap(),
        )
        .await
        .unwrap();
        let token = service_account_token(&admin, NS, "mirra-mirror").await;
        let mut settings = Settings::for_tests(&[NS]);
        settings.tenant_namespaces.insert(TENANT.to_string());
        let ctl = start_with_client(client_with_token(&sb, &token).await, settings);
        let copied = || async {
            Api::<ConfigMap>::namespaced(admin.clone(), "team-a-dev")
                .get_opt("info")
                .await
                .unwrap()
                .is_some()
        };
        if removed == "impersonate" {
            wait_for(
                "the status saying mirra may not act as the account",
                || async {
                    status(&scs, "info").await.to_string().contains(
                        "mirra may not act as system:serviceaccount:team-a:syncer: \
                     serviceaccounts \\\"syncer\\\" is forbidden",
                    )
                },
            )
            .await;
            assert!(!copied().await, "written without impersonation");
        } else {
            wait_for(&format!("{removed} serviceaccounts refused"), || async {
                sb.stats()
                    .refused
                    .keys()
                    .any(|k| *k == format!("{removed} serviceaccounts"))
            })
            .await;
            wait_for("the copy, made as the account", copied).await;
        }
        ctl.stop().await;
    }
}
