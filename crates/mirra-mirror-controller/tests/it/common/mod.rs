//! Shared fixtures: a kube-sandbox with the SyncConfig CRD, a controller
//! running in-process against it over HTTP, and polling helpers.

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::{Client, Config};
use kube_sandbox::{Sandbox, Stats};
use mirra_mirror_controller::Settings;
use mirra_mirror_controller::mirra_mirror::{
    FIELD_MANAGER, MANAGED_BY_LABEL, MANAGED_BY_VALUE, OWNER_ANNOTATION, PRUNE_ANNOTATION,
};
use mirra_mirror_controller::mirra_runtime::{Metrics, Readiness, ReadyFlag};
use mirra_mirror_controller::tokio_util::sync::CancellationToken;
use prometheus_client::registry::Registry;
use serde_json::{Value, json};

pub use mirra_testkit::wait_for;

/// The namespace whose SyncConfigs the controller honours.
pub const OPS: &str = "ops";

pub struct Env {
    pub sb: Sandbox,
    pub client: Client,
    /// The metrics of the controllers [`Env::start`] started, while they
    /// run: [`Env::settle`] reads their queues.
    controllers: Mutex<Vec<Weak<Mutex<Registry>>>>,
}

pub fn client_for(sb: &Sandbox) -> Client {
    Client::try_from(Config::new(sb.url().parse().unwrap())).unwrap()
}

pub fn sc_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("sync.appuio.ch", "v1alpha1", "SyncConfig"),
        "syncconfigs",
    )
}

impl Env {
    pub async fn new() -> Env {
        Env::with_config(kube_sandbox::Config::default()).await
    }

    /// A sandbox whose watches get no periodic BOOKMARK: a client's
    /// resourceVersion then moves only with the events it sees, so a test can
    /// make every watch resume from a compacted revision (410).
    pub async fn without_bookmarks() -> Env {
        Env::with_config(kube_sandbox::Config {
            bookmark_interval: Duration::from_secs(24 * 3600),
            ..Default::default()
        })
        .await
    }

    pub async fn with_config(config: kube_sandbox::Config) -> Env {
        let sb = Sandbox::start(config).await.unwrap();
        let client = client_for(&sb);
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        crds.create(&PostParams::default(), &mirra_mirror::crd())
            .await
            .unwrap();
        let env = Env {
            sb,
            client,
            controllers: Mutex::new(Vec::new()),
        };
        env.create_ns(OPS, &[]).await;
        env
    }

    pub fn start(&self, settings: Settings) -> Running {
        // A fresh client per controller: a restart shares nothing.
        let running = start_with_client(client_for(&self.sb), settings);
        self.controllers
            .lock()
            .unwrap()
            .push(Arc::downgrade(&running.registry));
        running
    }

    pub async fn create_ns(&self, name: &str, labels: &[(&str, &str)]) {
        let api: Api<Namespace> = Api::all(self.client.clone());
        let labels: BTreeMap<_, _> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        api.create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap(),
        )
        .await
        .unwrap();
    }

    pub async fn label_ns(&self, name: &str, labels: Value) {
        let api: Api<Namespace> = Api::all(self.client.clone());
        api.patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": labels}})),
        )
        .await
        .unwrap();
    }

    pub fn sc_api(&self) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), OPS, &sc_resource())
    }

    pub async fn create_sc(&self, name: &str, annotations: Value, spec: Value) {
        let obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "sync.appuio.ch/v1alpha1",
            "kind": "SyncConfig",
            "metadata": {"name": name, "namespace": OPS, "annotations": annotations},
            "spec": spec,
        }))
        .unwrap();
        self.sc_api()
            .create(&PostParams::default(), &obj)
            .await
            .unwrap();
    }

    /// [`Env::create_sc`] without annotations, selecting the namespaces
    /// labelled `team=<team>` ([`spec_for_team`]) and syncing `items`.
    pub async fn create_team_sc(&self, name: &str, team: &str, items: Vec<Value>) {
        self.create_sc(name, json!({}), spec_for_team(team, items))
            .await;
    }

    pub async fn patch_sc_spec(&self, name: &str, spec: Value) {
        self.sc_api()
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": spec})),
            )
            .await
            .unwrap();
    }

    pub async fn delete_sc(&self, name: &str) {
        self.sc_api()
            .delete(name, &Default::default())
            .await
            .unwrap();
    }

    pub fn cms(&self, ns: &str) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), ns)
    }

    /// Creates a ConfigMap in `ns` from its JSON (as someone other than
    /// mirra would: a plain create).
    pub async fn create_cm(&self, ns: &str, body: Value) -> ConfigMap {
        let cm: ConfigMap = serde_json::from_value(body).unwrap();
        self.cms(ns).create(&Default::default(), &cm).await.unwrap()
    }

    /// Merge-patches ConfigMap `ns/name` (as someone other than mirra).
    pub async fn merge_cm(&self, ns: &str, name: &str, patch: Value) -> ConfigMap {
        self.cms(ns)
            .patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .unwrap()
    }

    pub async fn cm(&self, ns: &str, name: &str) -> Option<ConfigMap> {
        self.cms(ns).get_opt(name).await.unwrap()
    }

    pub async fn cm_data(&self, ns: &str, name: &str) -> Option<BTreeMap<String, String>> {
        self.cm(ns, name).await.map(|c| c.data.unwrap_or_default())
    }

    pub async fn cm_names(&self, ns: &str) -> Vec<String> {
        self.cms(ns)
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .filter(|n| n != "kube-root-ca.crt")
            .collect()
    }

    /// The condition `type_` of a SyncConfig: (status, reason, message).
    pub async fn condition(&self, sc: &str, type_: &str) -> Option<(String, String, String)> {
        let obj = self.sc_api().get_opt(sc).await.unwrap()?;
        let conds = obj.data.pointer("/status/conditions")?.as_array()?.clone();
        conds.into_iter().find(|c| c["type"] == type_).map(|c| {
            (
                c["status"].as_str().unwrap_or_default().to_string(),
                c["reason"].as_str().unwrap_or_default().to_string(),
                c["message"].as_str().unwrap_or_default().to_string(),
            )
        })
    }

    /// Waits until the controller reported the SyncConfig's current
    /// generation in its status: it has seen the last change of the spec.
    /// Waits until SyncConfig `sc`'s condition `type_` has `status`.
    pub async fn wait_condition(&self, sc: &str, type_: &str, status: &str) {
        wait_for(&format!("{sc}: {type_} {status}"), || async {
            self.condition(sc, type_)
                .await
                .is_some_and(|c| c.0 == status)
        })
        .await;
    }

    pub async fn wait_observed(&self, sc: &str) {
        wait_for(&format!("{sc}'s generation observed"), || async {
            let obj = self.sc_api().get(sc).await.unwrap();
            obj.data
                .pointer("/status/observedGeneration")
                .and_then(Value::as_i64)
                == obj.metadata.generation
        })
        .await;
    }

    pub async fn status(&self, sc: &str) -> Value {
        let obj = self.sc_api().get(sc).await.unwrap();
        obj.data.get("status").cloned().unwrap_or(Value::Null)
    }

    /// Events about a SyncConfig: (reason, count).
    pub async fn events(&self, sc: &str) -> Vec<(String, i32)> {
        mirra_testkit::events_about(&self.client, OPS, sc)
            .await
            .into_iter()
            .map(|e| (e.reason.unwrap_or_default(), e.count.unwrap_or(0)))
            .collect()
    }

    /// Events about a SyncConfig: (name, reason, count, message).
    pub async fn events_full(&self, sc: &str) -> Vec<(String, String, i32, String)> {
        mirra_testkit::events_about(&self.client, OPS, sc)
            .await
            .into_iter()
            .map(|e| {
                (
                    e.metadata.name.unwrap_or_default(),
                    e.reason.unwrap_or_default(),
                    e.count.unwrap_or(0),
                    e.message.unwrap_or_default(),
                )
            })
            .collect()
    }

    /// Waits until every controller [`Env::start`] started (and that
    /// still runs) has an empty queue and the sandbox's request counters
    /// stop moving, then returns them: from there on, any request would be
    /// one too many.
    pub async fn settle(&self) -> Stats {
        mirra_testkit::settle("the mirror controllers", || {
            self.queues_empty().then(|| self.sb.stats())
        })
        .await
    }

    /// [`Env::settle`] for a test whose verification passes run every few
    /// milliseconds: its controllers' queues are seldom seen empty (a pass
    /// queues every namespace), so quiet is told from the server's request
    /// counts alone, over a window of a dozen passes and more.
    pub async fn settle_counts(&self) -> Stats {
        mirra_testkit::settle_for("the mirror controllers' requests", 10, || {
            Some(self.sb.stats())
        })
        .await
    }

    /// Whether no running controller has a key waiting (debounced, ready or
    /// backing off), as its queue-depth gauge, refreshed every status
    /// window, says.
    fn queues_empty(&self) -> bool {
        let mut controllers = self.controllers.lock().unwrap();
        controllers.retain(|r| r.strong_count() > 0);
        controllers
            .iter()
            .filter_map(Weak::upgrade)
            .all(|r| metric_in(&r.lock().unwrap(), QUEUE_DEPTH) == 0.0)
    }
}

/// The mirror controller's queue-depth series.
const QUEUE_DEPTH: &str = "mirra_queue_depth{queue=\"mirror\"}";

pub struct Running {
    pub token: CancellationToken,
    pub handle: tokio::task::JoinHandle<Result<(), mirra_mirror_controller::ControllerError>>,
    pub ready: ReadyFlag,
    pub registry: Arc<Mutex<Registry>>,
}

pub fn start_with_client(client: Client, settings: Settings) -> Running {
    let mut registry = Registry::default();
    let metrics = Metrics::register(&mut registry);
    let ready = Readiness::new().register("mirror");
    let token = CancellationToken::new();
    let handle = tokio::spawn(mirra_mirror_controller::run(
        client,
        settings,
        ready.clone(),
        metrics,
        token.clone(),
    ));
    Running {
        token,
        handle,
        ready,
        registry: Arc::new(Mutex::new(registry)),
    }
}

impl Running {
    pub async fn wait_ready(&self) {
        let ready = self.ready.clone();
        wait_for("controller ready", || {
            let r = ready.clone();
            async move { r.is_ready() }
        })
        .await;
    }

    pub async fn stop(self) {
        self.token.cancel();
        self.handle.await.unwrap().unwrap();
    }

    /// The value of a metric line starting with `prefix` (summed).
    pub fn metric(&self, prefix: &str) -> f64 {
        metric_in(&self.registry.lock().unwrap(), prefix)
    }
}

/// The sum of the metric lines of `registry` starting with `prefix`.
pub fn metric_in(registry: &Registry, prefix: &str) -> f64 {
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, registry).unwrap();
    out.lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// A ConfigMap item.
pub fn cm_item(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

/// A spec selecting namespaces labelled `team=<team>`.
pub fn spec_for_team(team: &str, items: Vec<Value>) -> Value {
    json!({
        "namespaceSelector": {"labelSelector": {"matchLabels": {"team": team}}},
        "syncItems": items,
    })
}

/// Requests other than watches.
pub fn non_watch(stats: &Stats) -> BTreeMap<String, u64> {
    stats
        .requests
        .iter()
        .filter(|(k, _)| !k.starts_with("watch "))
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

pub const STATUS_KEY: &str = "patch syncconfigs.sync.appuio.ch/status";

/// A Secret item ("dg==" is "v": the stored Secret holds `data`, so the
/// item does too; a `stringData` item would never look in step).
pub fn secret_item(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "data": {"k": "dg=="}})
}

pub fn secrets(env: &Env, ns: &str) -> Api<Secret> {
    Api::namespaced(env.client.clone(), ns)
}

/// Which of the Secrets the tests use exist, read by GET: tests refuse
/// Secret lists by fault rules, or count every `list secrets` as mirra's.
pub async fn secret_names(env: &Env, ns: &str) -> Vec<String> {
    let mut out = Vec::new();
    for name in ["k", "orphan", "s", "stale", "theirs"] {
        if secrets(env, ns).get_opt(name).await.unwrap().is_some() {
            out.push(name.to_string());
        }
    }
    out
}

/// A Secret carrying mirra's marks for `owner` (and the pruning opt-out
/// when `prune` is given), written by a mirra (its field manager's
/// server-side apply): another mirra deployment, or this one long ago.
pub async fn marked_secret(env: &Env, ns: &str, name: &str, owner: &str, prune: Option<&str>) {
    let mut annotations = json!({OWNER_ANNOTATION: owner});
    if let Some(p) = prune {
        annotations[PRUNE_ANNOTATION] = json!(p);
    }
    secrets(env, ns)
        .patch(
            name,
            &PatchParams::apply(FIELD_MANAGER),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {
                "name": name,
                "labels": {MANAGED_BY_LABEL: MANAGED_BY_VALUE},
                "annotations": annotations,
            }})),
        )
        .await
        .unwrap();
}

/// A Secret carrying mirra's marks for `owner` that someone else wrote
/// (created with them, by a client that is not mirra): not mirra's.
pub async fn forged_secret(env: &Env, ns: &str, name: &str, owner: &str) {
    secrets(env, ns)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {
                "name": name,
                "labels": {MANAGED_BY_LABEL: MANAGED_BY_VALUE},
                "annotations": {OWNER_ANNOTATION: owner},
            }, "data": {"own": "bWluZQ=="}}))
            .unwrap(),
        )
        .await
        .unwrap();
}

/// Makes the sandbox answer `verb` on `resource` with 403, as RBAC without
/// that permission does.
pub async fn refuse(env: &Env, verb: &str, resource: &str) {
    refuse_rule(env, verb, resource, None).await;
}

/// [`refuse`] in one namespace only.
pub async fn refuse_in(env: &Env, verb: &str, resource: &str, namespace: &str) {
    refuse_rule(env, verb, resource, Some(namespace)).await;
}

/// No Secret was applied or deleted so far.
pub fn assert_no_secret_writes(env: &Env) {
    let stats = env.sb.stats();
    assert_eq!(stats.get("patch secrets"), 0, "{:?}", stats.requests);
    assert_eq!(stats.get("delete secrets"), 0, "{:?}", stats.requests);
}

/// Every `verb` on `resource` answered `ms` milliseconds late.
pub async fn slow(env: &Env, verb: &str, resource: &str, ms: u64) {
    env.sb
        .inject(kube_sandbox::FaultRule {
            verb: Some(verb.into()),
            resource: Some(resource.into()),
            latency_ms: Some(ms),
            ..Default::default()
        })
        .await
        .unwrap();
}

async fn refuse_rule(env: &Env, verb: &str, resource: &str, namespace: Option<&str>) {
    env.sb
        .inject(kube_sandbox::FaultRule {
            verb: Some(verb.into()),
            resource: Some(resource.into()),
            namespace: namespace.map(str::to_string),
            status: Some(403),
            ..Default::default()
        })
        .await
        .unwrap();
}

/// A sandbox with authentication and RBAC on (see `mirra_testkit::rbac`),
/// the SyncConfig CRD installed, and its admin's client.
pub async fn rbac_sandbox_with_crd() -> (Sandbox, Client) {
    let (sb, admin) = mirra_testkit::rbac::sandbox_with_rbac().await;
    Api::<CustomResourceDefinition>::all(admin.clone())
        .create(
            &PostParams::default(),
            &mirra_mirror_controller::mirra_mirror::crd(),
        )
        .await
        .unwrap();
    (sb, admin)
}

/// Creates namespace `name` with `labels`, as `client`.
pub async fn namespace_as(client: &Client, name: &str, labels: Value) {
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap(),
        )
        .await
        .unwrap();
}
