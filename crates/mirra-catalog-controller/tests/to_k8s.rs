//! The Consul -> Kubernetes direction against kube-sandbox and
//! consul-sandbox over real HTTP: ExternalName Services appear and go with
//! their Consul services, unlabelled Services are never touched, and a
//! restart in step writes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, PostParams};
use mirra_catalog::SyncSettings;
use mirra_catalog_controller::to_k8s::run_to_k8s;
use mirra_consul::{ConsulConfig, DeregisterRequest, RegisterRequest};
use mirra_runtime::Readiness;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Generous deadline for eventual conditions (never a timing assertion).
const DEADLINE: Duration = Duration::from_secs(30);

async fn eventually<F: FnMut() -> Fut, Fut: Future<Output = bool>>(what: &str, mut f: F) {
    let end = tokio::time::Instant::now() + DEADLINE;
    while !f().await {
        assert!(tokio::time::Instant::now() < end, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn register(node: &str, name: &str, tags: &[&str]) -> RegisterRequest {
    RegisterRequest {
        node: node.into(),
        address: "10.0.0.1".into(),
        service: Some(mirra_consul::Service {
            id: format!("{name}-1"),
            service: name.into(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            port: 5432,
            ..mirra_consul::Service::default()
        }),
        ..RegisterRequest::default()
    }
}

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

fn start(kube: &kube::Client, consul_url: &str) -> (Running, mirra_runtime::ReadyFlag) {
    let consul = mirra_consul::Client::new(ConsulConfig::new(consul_url).unwrap()).unwrap();
    let readiness = Readiness::new();
    let ready = readiness.register("to-k8s");
    let stop = CancellationToken::new();
    let task = tokio::spawn(run_to_k8s(
        kube.clone(),
        consul,
        SyncSettings::default(),
        ready.clone(),
        stop.clone(),
    ));
    (Running { stop, task }, ready)
}

#[tokio::test]
async fn consul_services_become_external_name_services_and_go_with_them() {
    let kube_sb = kube_sandbox::Sandbox::start(kube_sandbox::Config::default())
        .await
        .unwrap();
    let kube = kube::Client::try_from(kube::Config::new(kube_sb.url().parse().unwrap())).unwrap();
    let consul_sb = consul_sandbox::Sandbox::start(consul_sandbox::Config::default())
        .await
        .unwrap();
    let consul = mirra_consul::Client::new(ConsulConfig::new(&consul_sb.url()).unwrap()).unwrap();
    let services: Api<Service> = Api::namespaced(kube.clone(), "default");

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
    consul.register(&register("ext", "db", &[])).await.unwrap();
    consul
        .register(&register("ext", "cache", &[]))
        .await
        .unwrap();
    // Registered from Kubernetes (k8s tag): never synced back.
    consul
        .register(&register("k8s-sync", "web", &["k8s"]))
        .await
        .unwrap();

    let (running, ready) = start(&kube, &consul_sb.url());
    eventually("db as an ExternalName Service", || async {
        services.get_opt("db").await.unwrap().is_some()
    })
    .await;
    assert!(ready.is_ready());
    let db = services.get("db").await.unwrap();
    let spec = db.spec.unwrap();
    assert_eq!(spec.type_.as_deref(), Some("ExternalName"));
    assert_eq!(spec.external_name.as_deref(), Some("db.service.consul"));
    assert_eq!(db.metadata.labels.unwrap()["consul"], "true");
    assert!(services.get_opt("web").await.unwrap().is_none());
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
    eventually("the next blocking read parked", || async {
        consul_reads(&consul_sb) >= 2
    })
    .await;
    kube_sb.reset_stats();
    let reads = consul_reads(&consul_sb);
    let mut second = register("ext2", "db", &[]);
    second.address = "10.0.0.2".into();
    consul.register(&second).await.unwrap();
    eventually("the change read and the next read parked", || async {
        consul_reads(&consul_sb) > reads
    })
    .await;
    assert_eq!(writes(&kube_sb), 0);

    // db leaves Consul: its Service goes; the foreign one stays.
    for node in ["ext", "ext2"] {
        consul
            .deregister(&DeregisterRequest {
                node: node.into(),
                service_id: "db-1".into(),
                ..DeregisterRequest::default()
            })
            .await
            .unwrap();
    }
    eventually("db's Service deleted", || async {
        services.get_opt("db").await.unwrap().is_none()
    })
    .await;
    assert_eq!(kube_sb.stats().get("delete services"), 1);
    assert!(services.get_opt("cache").await.unwrap().is_some());

    // Restart in step: a fresh instance writes nothing.
    running.stop.cancel();
    running.task.await.unwrap();
    kube_sb.reset_stats();
    let reads = consul_reads(&consul_sb);
    let (running, ready) = start(&kube, &consul_sb.url());
    // The first read answered, planned, and the next read parked.
    eventually("restarted and planned", || async {
        ready.is_ready() && consul_reads(&consul_sb) >= reads + 2
    })
    .await;
    assert_eq!(writes(&kube_sb), 0);
    running.stop.cancel();
    running.task.await.unwrap();
}
