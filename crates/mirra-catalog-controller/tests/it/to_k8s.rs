//! The Consul -> Kubernetes direction against kube-sandbox and
//! consul-sandbox over real HTTP: ExternalName Services appear and go with
//! their Consul services, unlabelled Services are never touched, and a
//! restart in step writes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use mirra_catalog::SyncSettings;
use mirra_consul::{ConsulConfig, DeregisterRequest};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::{Kube, consul_service, consul_with, fail_lists, kube, spawn_to_k8s, wait_for};

fn consul_reads(sb: &consul_sandbox::Sandbox) -> u64 {
    sb.stats().requests_for("GET /v1/catalog/services")
}

fn writes(sb: &kube_sandbox::Sandbox) -> u64 {
    [
        "create services",
        "patch services",
        "update services",
        "delete services",
    ]
    .iter()
    .map(|k| sb.stats().get(k))
    .sum()
}

struct Running {
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    async fn stop(self) {
        self.stop.cancel();
        self.task.await.unwrap();
    }
}

fn start(kube: &kube::Client, consul_url: &str) -> (Running, mirra_runtime::ReadyFlag) {
    start_with(kube, consul_url, SyncSettings::default())
}

fn start_with(
    kube: &kube::Client,
    consul_url: &str,
    sync: SyncSettings,
) -> (Running, mirra_runtime::ReadyFlag) {
    start_previewing(kube, consul_url, sync, None)
}

fn start_previewing(
    kube: &kube::Client,
    consul_url: &str,
    sync: SyncSettings,
    preview: Option<mirra_runtime::Preview>,
) -> (Running, mirra_runtime::ReadyFlag) {
    let stop = CancellationToken::new();
    let (task, ready) = spawn_to_k8s(kube, &consul_client(consul_url), sync, preview, &stop);
    (Running { stop, task }, ready)
}

/// The client these tests use: mirra's defaults, retries included.
fn consul_client(url: &str) -> mirra_consul::Client {
    mirra_consul::Client::new(ConsulConfig::new(url).unwrap()).unwrap()
}

struct Sandboxes {
    kube_sb: kube_sandbox::Sandbox,
    kube: kube::Client,
    consul_sb: consul_sandbox::Sandbox,
    consul: mirra_consul::Client,
}

async fn sandboxes() -> Sandboxes {
    let Kube {
        sb: kube_sb,
        client: kube,
    } = kube().await;
    let (consul_sb, consul) = consul_with(consul_sandbox::Config::default(), consul_client).await;
    Sandboxes {
        kube_sb,
        kube,
        consul_sb,
        consul,
    }
}

impl Sandboxes {
    /// Registers [`consul_service`]`(node, name, tags)` in Consul.
    async fn register(&self, node: &str, name: &str, tags: &[&str]) {
        self.consul
            .register(&consul_service(node, name, tags))
            .await
            .unwrap();
    }

    /// Deregisters the instance `<name>-1` of `node`.
    async fn deregister(&self, node: &str, name: &str) {
        self.consul
            .deregister(&DeregisterRequest {
                node: node.into(),
                service_id: format!("{name}-1"),
                ..DeregisterRequest::default()
            })
            .await
            .unwrap();
    }

    /// The Services of the `default` namespace.
    fn services(&self) -> Api<Service> {
        Api::namespaced(self.kube.clone(), "default")
    }
}

/// Whether the Service `name` exists.
async fn exists(services: &Api<Service>, name: &str) -> bool {
    services.get_opt(name).await.unwrap().is_some()
}

#[tokio::test]
async fn consul_services_become_external_name_services_and_go_with_them() {
    let sb = sandboxes().await;
    let services = sb.services();

    // Someone else's Service with the name a Consul service will want.
    let foreign: Service = serde_json::from_value(json!({
        "metadata": {"name": "cache"},
        "spec": {"ports": [{"port": 6379}]}
    }))
    .unwrap();
    services
        .create(&PostParams::default(), &foreign)
        .await
        .unwrap();
    sb.register("ext", "db", &[]).await;
    sb.register("ext", "cache", &[]).await;
    // Registered from Kubernetes (k8s tag): never synced back.
    sb.register("k8s-sync", "web", &["k8s"]).await;

    let (running, ready) = start(&sb.kube, &sb.consul_sb.url());
    wait_for("db as an ExternalName Service", || exists(&services, "db")).await;
    assert!(ready.is_ready());
    let db = services.get("db").await.unwrap();
    let spec = db.spec.unwrap();
    assert_eq!(spec.type_.as_deref(), Some("ExternalName"));
    assert_eq!(spec.external_name.as_deref(), Some("db.service.consul"));
    assert_eq!(db.metadata.labels.unwrap()["consul"], "true");
    assert!(!exists(&services, "web").await);
    let cache = services.get("cache").await.unwrap();
    assert_eq!(cache.spec.unwrap().type_.as_deref(), Some("ClusterIP"));
    assert!(
        cache
            .metadata
            .labels
            .is_none_or(|l| !l.contains_key("consul"))
    );

    // A change Consul reports that leaves the service list as it is
    // (another instance of db) costs no Kubernetes write.
    wait_for("the next blocking read parked", || async {
        consul_reads(&sb.consul_sb) >= 2
    })
    .await;
    sb.kube_sb.reset_stats();
    let reads = consul_reads(&sb.consul_sb);
    let mut second = consul_service("ext2", "db", &[]);
    second.address = "10.0.0.2".into();
    sb.consul.register(&second).await.unwrap();
    wait_for("the change read and the next read parked", || async {
        consul_reads(&sb.consul_sb) > reads
    })
    .await;
    assert_eq!(writes(&sb.kube_sb), 0);

    // db leaves Consul: its Service goes; the foreign one stays.
    for node in ["ext", "ext2"] {
        sb.deregister(node, "db").await;
    }
    wait_for("db's Service deleted", || async {
        !exists(&services, "db").await
    })
    .await;
    assert_eq!(sb.kube_sb.stats().get("delete services"), 1);
    assert!(exists(&services, "cache").await);

    // Restart in step: a fresh instance writes nothing.
    running.stop().await;
    sb.kube_sb.reset_stats();
    let reads = consul_reads(&sb.consul_sb);
    let (running, ready) = start(&sb.kube, &sb.consul_sb.url());
    // The first read answered, planned, and the next read parked.
    wait_for("restarted and planned", || async {
        ready.is_ready() && consul_reads(&sb.consul_sb) >= reads + 2
    })
    .await;
    assert_eq!(writes(&sb.kube_sb), 0);
    running.stop().await;
}

/// Names of the Services labelled `consul=true` (written by the sync).
async fn labelled(services: &Api<Service>) -> Vec<String> {
    let mut names: Vec<String> = services
        .list(&ListParams::default().labels("consul=true"))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|s| s.metadata.name)
        .collect();
    names.sort();
    names
}

fn external_name(svc: &Service) -> Option<String> {
    svc.spec.as_ref().and_then(|s| s.external_name.clone())
}

/// Sandboxes with a Consul service `db`, and the `default` namespace's
/// Services.
async fn with_db_registered() -> (Sandboxes, Api<Service>) {
    let sb = sandboxes().await;
    let services = sb.services();
    sb.register("ext", "db", &[]).await;
    (sb, services)
}

/// [`with_db_registered`], the sync running, and its ExternalName Service
/// written.
async fn with_db_written() -> (Sandboxes, Api<Service>, Running) {
    let (sb, services) = with_db_registered().await;
    let (running, _ready) = start(&sb.kube, &sb.consul_sb.url());
    wait_for("db written", || exists(&services, "db")).await;
    (sb, services, running)
}

#[tokio::test]
async fn edits_of_a_written_external_name_service_are_reverted() {
    let (sb, services, running) = with_db_written().await;
    let patches = || sb.kube_sb.stats().get("patch services");
    let before = patches();

    // Someone points it elsewhere and drops the annotation that keeps it
    // from being synced back to Consul.
    services
        .patch(
            "db",
            &PatchParams::default(),
            &Patch::Merge(json!({
                "metadata": {"annotations": {"consul.hashicorp.com/service-sync": null}},
                "spec": {"externalName": "evil.example.com"}
            })),
        )
        .await
        .unwrap();
    wait_for("db reverted", || async {
        let db = services.get("db").await.unwrap();
        external_name(&db).as_deref() == Some("db.service.consul")
            && db.metadata.annotations.is_some_and(|a| {
                a.get("consul.hashicorp.com/service-sync")
                    .map(String::as_str)
                    == Some("false")
            })
    })
    .await;
    // A later change proves the revert's own watch event was planned too
    // (the plan covers every name): it creates `cache`, nothing else.
    sb.register("ext", "cache", &[]).await;
    wait_for("cache written", || exists(&services, "cache")).await;
    // Our edit, mirra's one revert, and the apply that created `cache`.
    assert_eq!(patches() - before, 3);
    assert_eq!(sb.kube_sb.stats().get("delete services"), 0);
    running.stop().await;
}

#[tokio::test]
async fn k8s_service_prefix_names_the_written_services() {
    let sb = sandboxes().await;
    let services = sb.services();
    // Someone's unlabelled Service with the unprefixed name: not ours.
    let theirs: Service = serde_json::from_value(json!({
        "metadata": {"name": "db"},
        "spec": {"ports": [{"port": 5432}]}
    }))
    .unwrap();
    services
        .create(&PostParams::default(), &theirs)
        .await
        .unwrap();
    sb.register("ext", "db", &[]).await;
    let sync = SyncSettings {
        k8s_service_prefix: "consul-".into(),
        ..SyncSettings::default()
    };
    let (running, _ready) = start_with(&sb.kube, &sb.consul_sb.url(), sync);
    wait_for("consul-db written", || exists(&services, "consul-db")).await;
    let db = services.get("consul-db").await.unwrap();
    // The prefix names the Kubernetes Service only; the target is the
    // Consul name.
    assert_eq!(external_name(&db).as_deref(), Some("db.service.consul"));
    assert_eq!(db.metadata.labels.unwrap()["consul"], "true");
    let untouched = services.get("db").await.unwrap();
    assert_eq!(untouched.spec.unwrap().type_.as_deref(), Some("ClusterIP"));
    // Consul's own `consul` service is synced too, as consul-k8s does:
    // one apply per written Service, and only prefixed names.
    assert_eq!(labelled(&services).await, ["consul-consul", "consul-db"]);
    assert_eq!(sb.kube_sb.stats().get("patch services"), 2);

    // Gone from Consul: the prefixed Service goes, theirs stays.
    sb.deregister("ext", "db").await;
    wait_for("consul-db deleted", || async {
        !exists(&services, "consul-db").await
    })
    .await;
    assert!(exists(&services, "db").await);
    assert_eq!(sb.kube_sb.stats().get("delete services"), 1);
    running.stop().await;
}

#[tokio::test]
async fn failing_service_lists_are_retried_with_backoff_and_converge() {
    let (sb, services) = with_db_registered().await;
    // Lists of Services fail until cleared.
    fail_lists(&sb.kube_sb, "services", 500, None).await;
    let (running, ready) = start(&sb.kube, &sb.consul_sb.url());
    wait_for("the list failed twice", || async {
        sb.kube_sb.stats().get("list services") >= 2
    })
    .await;
    // With the watcher's backoff (0.8 s, then doubling) a failing list is
    // retried a handful of times in two seconds; without it, the stream
    // would retry at once, thousands of times.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let lists = sb.kube_sb.stats().get("list services");
    assert!(
        lists <= 10,
        "{lists} lists in about two seconds: no backoff"
    );
    assert!(!ready.is_ready(), "not ready without the Services' list");
    assert!(!exists(&services, "db").await);
    assert_eq!(writes(&sb.kube_sb), 0, "nothing written before the list");

    sb.kube_sb.clear_faults().await;
    wait_for("db written once the list works", || exists(&services, "db")).await;
    assert!(ready.is_ready());
    // db and Consul's own `consul` service, one apply each.
    assert_eq!(labelled(&services).await, ["consul", "db"]);
    assert_eq!(sb.kube_sb.stats().get("patch services"), 2);
    running.stop().await;
}

#[tokio::test]
async fn a_few_failed_lists_cost_one_retry_each() {
    let (sb, services) = with_db_registered().await;
    // The next three lists of Services fail with a 500, which kube's client
    // does not retry itself (it retries 429/503/504): each failure reaches
    // the watcher and its backoff.
    fail_lists(&sb.kube_sb, "services", 500, Some(3)).await;
    let (running, ready) = start(&sb.kube, &sb.consul_sb.url());
    wait_for("db written", || exists(&services, "db")).await;
    assert!(ready.is_ready());
    // Three failed lists, each retried once after its backoff; the fourth
    // succeeded and the watch took over (no further list).
    assert_eq!(sb.kube_sb.stats().get("list services"), 4);
    assert_eq!(sb.kube_sb.stats().get("patch services"), 2);
    // (This list is the test's own.)
    assert_eq!(labelled(&services).await, ["consul", "db"]);
    running.stop().await;
}

#[tokio::test]
async fn an_update_planned_from_a_stale_version_does_not_land() {
    let (sb, services, running) = with_db_written().await;
    let patches = || sb.kube_sb.stats().get("patch services");
    let before = patches();
    // mirra's next write is held in the server for a while.
    sb.kube_sb
        .inject(kube_sandbox::FaultRule {
            verb: Some("patch".into()),
            resource: Some("services".into()),
            latency_ms: Some(1500),
            count: Some(1),
            ..Default::default()
        })
        .await
        .unwrap();
    let edit = |target: &'static str| {
        let services = services.clone();
        async move {
            let mut db = services.get("db").await.unwrap();
            db.spec.as_mut().unwrap().external_name = Some(target.into());
            services
                .replace("db", &PostParams::default(), &db)
                .await
                .unwrap();
        }
    };
    // An edit mirra reverts; while its revert waits in the server, a
    // second edit lands.
    edit("first.example.com").await;
    wait_for("the revert sent", || async { patches() > before }).await;
    edit("second.example.com").await;
    wait_for("db reverted", || async {
        let db = services.get("db").await.unwrap();
        external_name(&db).as_deref() == Some("db.service.consul")
    })
    .await;
    // The revert planned from the first edit was refused (409) and planned
    // again from the second: two patches.
    assert_eq!(patches() - before, 2);
    running.stop().await;
}

/// `-consul-domain=consul.` (fully qualified, as consul-k8s accepts it):
/// the Services are written with the dot kept, and the API server takes
/// them; a restart in step writes nothing more.
#[tokio::test]
async fn a_consul_domain_with_a_trailing_dot_is_written_as_given() {
    let (sb, services) = with_db_registered().await;
    let sync = SyncSettings {
        consul_domain: "consul.".into(),
        ..SyncSettings::default()
    };
    let (running, _ready) = start_with(&sb.kube, &sb.consul_sb.url(), sync.clone());
    wait_for("db and consul written", || async {
        labelled(&services).await == ["consul", "db"]
    })
    .await;
    let db = services.get("db").await.unwrap();
    assert_eq!(external_name(&db).as_deref(), Some("db.service.consul."));
    running.stop().await;
    let before = writes(&sb.kube_sb);
    let reads = consul_reads(&sb.consul_sb);
    let (running, ready) = start_with(&sb.kube, &sb.consul_sb.url(), sync);
    // The first read answered, planned, and the next read parked.
    wait_for("restarted and planned", || async {
        ready.is_ready() && consul_reads(&sb.consul_sb) >= reads + 2
    })
    .await;
    running.stop().await;
    assert_eq!(writes(&sb.kube_sb), before, "in step: nothing rewritten");
}

/// A dry run lists the ExternalName Services the real run then writes,
/// and writes none itself.
#[tokio::test]
async fn a_preview_lists_the_external_name_services_and_writes_none() {
    let sb = sandboxes().await;
    sb.register("ext", "db", &[]).await;
    sb.register("k8s-sync", "web", &["k8s"]).await;
    let preview = mirra_runtime::Preview::new("catalog");
    let (running, _ready) = start_previewing(
        &sb.kube,
        &sb.consul_sb.url(),
        SyncSettings::default(),
        Some(preview.clone()),
    );
    wait_for("db planned", || async {
        preview.writes().iter().any(|w| w.name == "db")
    })
    .await;
    let planned: Vec<_> = preview
        .writes()
        .into_iter()
        .map(|w| (w.kind, w.namespace, w.name, w.operation, w.reason))
        .collect();
    // Consul's own `consul` service comes back as well, as consul-k8s's.
    let planned_names: Vec<String> = planned.iter().map(|p| p.2.clone()).collect();
    assert_eq!(planned_names, vec!["consul".to_string(), "db".to_string()]);
    assert!(
        planned
            .iter()
            .all(|p| p.0 == "Service" && p.1 == "default" && p.3 == "apply" && p.4 == "missing"),
        "{planned:?}"
    );
    assert_eq!(writes(&sb.kube_sb), 0, "a preview writes nothing");
    running.stop().await;

    let (running, _ready) = start(&sb.kube, &sb.consul_sb.url());
    let services = sb.services();
    let ours = ListParams::default().labels("consul=true");
    wait_for("both written", || async {
        services.list(&ours).await.unwrap().items.len() == 2
    })
    .await;
    let names: Vec<String> = services
        .list(&ours)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|s| s.metadata.name)
        .collect();
    assert_eq!(
        names, planned_names,
        "the real run writes what the preview listed"
    );
    assert_eq!(writes(&sb.kube_sb), 2);
    running.stop().await;
}
