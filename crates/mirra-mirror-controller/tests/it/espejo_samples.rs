//! espejo's documented samples (`config/samples` in vshn/espejo: the
//! minimal `syncconfig-sample` and the `complete-example`), applied the way
//! espejo's README says (a SyncConfig in the operator's namespace) and
//! synced by mirra against kube-sandbox. The SyncConfigs below carry the
//! samples' fields and values unchanged; where mirra behaves differently
//! the test says so and docs/migrating-from-espejo.md lists it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use k8s_openapi::api::core::v1::{Endpoints, Namespace, Service};
use kube::api::{Api, PostParams};
use mirra_mirror_controller::Settings;
use serde_json::json;

async fn ensure_ns(env: &Env, name: &str, labels: &[(&str, &str)]) {
    let api: Api<Namespace> = Api::all(env.client.clone());
    if api.get_opt(name).await.unwrap().is_none() {
        env.create_ns(name, labels).await;
    }
}

#[tokio::test]
async fn the_minimal_sample_syncs_a_templated_configmap_into_default() {
    let env = Env::new().await;
    ensure_ns(&env, "default", &[]).await;
    env.create_ns("elsewhere", &[]).await;
    env.create_sc(
        "syncconfig-sample",
        json!({}),
        json!({
            "namespaceSelector": {"matchNames": ["default"]},
            "syncItems": [{
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "espejo-test-data"},
                "data": {"NAMESPACE": "${PROJECT_NAME}"},
            }],
        }),
    )
    .await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    wait_for("copy in default", || async {
        env.cm_data("default", "espejo-test-data")
            .await
            .is_some_and(|d| d["NAMESPACE"] == "default")
    })
    .await;
    wait_for("status", || async {
        let s = env.status("syncconfig-sample").await;
        s["synchronizedItemCount"] == 1 && s["failedItemCount"] == 0
    })
    .await;
    assert_eq!(
        env.condition("syncconfig-sample", "Ready").await.unwrap().0,
        "True"
    );
    assert!(env.cm("elsewhere", "espejo-test-data").await.is_none());
    env.settle().await;
    env.sb.reset_stats();
    let idle = env.settle().await;
    assert_eq!(idle.writes(), 0, "{:?}", idle.requests);
    ctl.stop().await;
}

#[tokio::test]
async fn the_complete_sample_selects_syncs_recreates_and_deletes_as_espejo() {
    let env = Env::new().await;
    // Selected by name, by both label conditions, not by one label only,
    // and ignored by name although its labels match.
    env.create_ns("myproject", &[]).await;
    env.create_ns("cust-a", &[("customer", "a"), ("some-label", "value")])
        .await;
    env.create_ns("cust-b", &[("customer", "b")]).await;
    env.create_ns(
        "espejo-system",
        &[("customer", "ops"), ("some-label", "value")],
    )
    .await;
    // What the namespaces hold before: a Service made by hand (or by
    // espejo, without mirra's marks) whose clusterIP the sample changes,
    // and the ConfigMaps the deleteItem names.
    let services = |ns: &str| Api::<Service>::namespaced(env.client.clone(), ns);
    services("myproject")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "glusterfs-cluster"},
                "spec": {"type": "ClusterIP", "ports": [{"port": 80}]},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let old = services("myproject")
        .get("glusterfs-cluster")
        .await
        .unwrap();
    assert_ne!(
        old.spec.as_ref().unwrap().cluster_ip.as_deref(),
        Some("None")
    );
    for ns in ["myproject", "cust-b", "espejo-system"] {
        env.create_cm(
            ns,
            json!({"metadata": {"name": format!("some-name-in-{ns}")}}),
        )
        .await;
    }

    env.create_sc(
        "complete-example",
        json!({}),
        json!({
            "forceRecreate": true,
            "namespaceSelector": {
                "labelSelector": {
                    "matchExpressions": [{"key": "customer", "operator": "Exists"}],
                    "matchLabels": {"some-label": "value"},
                },
                "matchNames": ["myproject"],
                "ignoreNames": ["espejo-system"],
            },
            "syncItems": [
                {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "glusterfs-cluster"},
                 "spec": {"type": "ClusterIP", "clusterIP": "None",
                          "ports": [{"port": 49152, "targetPort": 49152, "protocol": "TCP"}]}},
                {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "glusterfs-cluster"},
                 "subsets": [{"addresses": [{"ip": "172.28.54.121"}, {"ip": "172.28.54.122"},
                                            {"ip": "172.28.54.123"}],
                              "ports": [{"port": 49152, "protocol": "TCP"}]}]},
                // The sample's apiVersion lacks the version: no server
                // serves it, under espejo as under mirra.
                {"apiVersion": "networking.k8s.io", "kind": "NetworkPolicy",
                 "metadata": {"name": "allow-from-same-namespace"},
                 "spec": {"ingress": [{"from": [{"podSelector": {}}]}], "podSelector": {},
                          "policyTypes": ["Ingress"]}},
            ],
            "deleteItems": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "some-name-in-${PROJECT_NAME}"},
            ],
        }),
    )
    .await;
    // espejo copied any kind; mirra copies the kinds --allow-kind names,
    // so a migrating user adds the sample's two core kinds.
    let mut settings = Settings::for_tests(&[OPS]);
    if let Some(kinds) = settings.allowed_kinds.as_mut() {
        kinds.insert((String::new(), "Service".into()));
        kinds.insert((String::new(), "Endpoints".into()));
    }
    let ctl = env.start(settings);

    let headless = |s: Option<Service>| {
        s.and_then(|s| s.spec)
            .is_some_and(|spec| spec.cluster_ip.as_deref() == Some("None"))
    };
    wait_for("services headless in both namespaces", || async {
        headless(
            services("myproject")
                .get_opt("glusterfs-cluster")
                .await
                .unwrap(),
        ) && headless(
            services("cust-a")
                .get_opt("glusterfs-cluster")
                .await
                .unwrap(),
        )
    })
    .await;
    // The hand-made Service was deleted and created again (forceRecreate
    // for an object mirra never marked).
    let recreated = services("myproject")
        .get("glusterfs-cluster")
        .await
        .unwrap();
    assert_ne!(recreated.metadata.uid, old.metadata.uid);
    let endpoints = |ns: &str| Api::<Endpoints>::namespaced(env.client.clone(), ns);
    for ns in ["myproject", "cust-a"] {
        let e = endpoints(ns).get("glusterfs-cluster").await.unwrap();
        let ips: Vec<String> = e.subsets.unwrap()[0]
            .addresses
            .clone()
            .unwrap()
            .into_iter()
            .map(|a| a.ip)
            .collect();
        assert_eq!(ips.len(), 3, "{ns}: {ips:?}");
    }
    wait_for("deleteItem applied in myproject", || async {
        env.cm("myproject", "some-name-in-myproject")
            .await
            .is_none()
    })
    .await;
    // Not selected, or ignored: untouched.
    for ns in ["cust-b", "espejo-system"] {
        assert!(
            env.cm(ns, &format!("some-name-in-{ns}")).await.is_some(),
            "{ns}"
        );
        assert!(
            services(ns)
                .get_opt("glusterfs-cluster")
                .await
                .unwrap()
                .is_none(),
            "{ns}"
        );
    }
    // Two items per selected namespace synchronized, the unserved one
    // failed in each: Ready as espejo means it (something was synchronized),
    // not Errored, and the failure on Degraded with an Event.
    wait_for("status", || async {
        let s = env.status("complete-example").await;
        s["synchronizedItemCount"] == 4 && s["failedItemCount"] == 2
    })
    .await;
    let ready = env.condition("complete-example", "Ready").await.unwrap();
    assert_eq!(ready.0, "True", "{ready:?}");
    assert_eq!(
        env.condition("complete-example", "Errored")
            .await
            .unwrap()
            .0,
        "False"
    );
    let degraded = env.condition("complete-example", "Degraded").await.unwrap();
    assert_eq!(degraded.0, "True");
    // Read as the core group (no "/"), the kind is outside --allow-kind:
    // the message names the flag, and nothing of it is written.
    assert!(
        degraded
            .2
            .contains("myproject NetworkPolicy/allow-from-same-namespace")
            && degraded
                .2
                .contains("cust-a NetworkPolicy/allow-from-same-namespace")
            && degraded.2.contains("--allow-kind NetworkPolicy"),
        "{degraded:?}"
    );
    wait_for("event", || async {
        env.events("complete-example")
            .await
            .iter()
            .any(|(r, _)| r == "ItemsFailed")
    })
    .await;
    // In step afterwards: nothing more is written.
    env.settle().await;
    env.sb.reset_stats();
    let idle = env.settle().await;
    assert_eq!(idle.writes(), 0, "{:?}", idle.requests);
    ctl.stop().await;
}
