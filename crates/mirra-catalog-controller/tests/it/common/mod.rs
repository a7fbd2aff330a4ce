//! Helpers shared by the catalog sync's sandbox tests: the two sandboxes,
//! a running controller, Kubernetes objects, and reads of Consul's state.
//! Every count a test asserts comes from the sandboxes' stats or the
//! controller's metrics; deadlines only bound eventual conditions.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, Patch, PatchParams, PostParams};
use mirra_catalog::SyncSettings;
use mirra_catalog_controller::{CatalogMetrics, ControllerError, Settings, run};
use mirra_consul::{ConsulConfig, QueryOptions, RetryPolicy};
use mirra_runtime::leader::{LeaderConfig, LeaderElector};
use mirra_runtime::{QueueConfig, Readiness, ReadyFlag, run_while_leading};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use mirra_testkit::wait_for;

/// Asserts named counters of a value in one assertion, e.g.
/// `assert_counts!(cost, transactions: 1, registers: 2)` compares
/// `(cost.transactions, cost.registers)` with `(1, 2)`.
macro_rules! assert_counts {
    ($value:expr, $($field:ident: $want:expr),+ $(,)?) => {{
        let value = &$value;
        assert_eq!(
            ($(value.$field,)+),
            ($($want,)+),
            "({}) of {:?}",
            stringify!($($field),+),
            value
        );
    }};
}
pub(crate) use assert_counts;

pub struct Kube {
    pub sb: kube_sandbox::Sandbox,
    pub client: kube::Client,
}

pub async fn kube() -> Kube {
    kube_with(kube_sandbox::Config::default()).await
}

/// A kube-sandbox started with `config`, and a client of it.
pub async fn kube_with(config: kube_sandbox::Config) -> Kube {
    let sb = kube_sandbox::Sandbox::start(config).await.unwrap();
    let client = kube::Client::try_from(kube::Config::new(sb.url().parse().unwrap())).unwrap();
    Kube { sb, client }
}

/// A consul-sandbox and a client that does NOT retry: every injected
/// error reaches the controller, so one fault is one failed attempt of
/// the controller's own (per-key) retry, and counts stay exact.
pub async fn consul() -> (consul_sandbox::Sandbox, mirra_consul::Client) {
    consul_with(consul_sandbox::Config::default(), consul_client).await
}

/// A consul-sandbox started with `config`, and a client of it made by
/// `client` from the sandbox's URL (e.g. [`consul_client`]).
pub async fn consul_with(
    config: consul_sandbox::Config,
    client: fn(&str) -> mirra_consul::Client,
) -> (consul_sandbox::Sandbox, mirra_consul::Client) {
    let sb = consul_sandbox::Sandbox::start(config).await.unwrap();
    let client = client(&sb.url());
    (sb, client)
}

pub fn consul_client(url: &str) -> mirra_consul::Client {
    consul_client_with_timeout(url, Duration::from_secs(10))
}

/// [`consul_client`] with requests timing out after `timeout`.
pub fn consul_client_with_timeout(url: &str, timeout: Duration) -> mirra_consul::Client {
    let mut cfg = ConsulConfig::new(url).unwrap();
    cfg.request_timeout = timeout;
    // One attempt per request; the watches' pause between failed reads
    // comes from the same policy, kept short so that tests move on.
    cfg.retry = RetryPolicy {
        max_attempts: 1,
        initial_backoff: Duration::from_millis(50),
        max_backoff: Duration::from_millis(200),
    };
    mirra_consul::Client::new(cfg).unwrap()
}

pub fn sync_settings(node: &str) -> SyncSettings {
    SyncSettings {
        allow_k8s_namespaces: ["*".to_owned()].into(),
        consul_node_name: node.to_owned(),
        ..SyncSettings::default()
    }
}

pub fn settings(sync: SyncSettings) -> Settings {
    let mut s = Settings::new(sync);
    s.queue = QueueConfig {
        debounce: Duration::from_millis(30),
        max_delay: Duration::from_millis(300),
        backoff_base: Duration::from_millis(50),
        backoff_cap: Duration::from_millis(500),
    };
    // The writer's backoff while Consul is unavailable, as short as the
    // queue's, so that tests riding out several faults move on.
    s.write_backoff_base = Duration::from_millis(50);
    s.write_backoff_cap = Duration::from_millis(500);
    // The verification pass runs only where a test asks for it.
    s.verify_interval = Duration::from_secs(3600);
    s.consul_wait = Duration::from_secs(5);
    s
}

pub struct Running {
    pub stop: CancellationToken,
    pub task: JoinHandle<Result<(), ControllerError>>,
    pub ready: ReadyFlag,
    pub metrics: CatalogMetrics,
    /// The Consul node it syncs to.
    pub node: String,
}

impl Running {
    pub async fn stop(self) {
        self.stop.cancel();
        self.task.await.unwrap().unwrap();
    }

    pub async fn wait_ready(&self) {
        wait_for("controller ready", || async { self.ready.is_ready() }).await;
    }

    /// Waits until the controller has no key pending (debounced, ready or
    /// backing off, as its `pending_keys` gauge says) and Consul's Raft
    /// applies stop moving: from there on, any write would be one too many.
    pub async fn settle(&self, consul: &consul_sandbox::Sandbox) {
        mirra_testkit::settle("the catalog controller", || {
            (self.metrics.pending_keys() == 0).then(|| consul.stats().raft_applies)
        })
        .await;
    }

    /// Waits until the controller's node holds exactly `n` instances, and
    /// lets it settle.
    pub async fn wait_synced(
        &self,
        consul: &mirra_consul::Client,
        consul_sb: &consul_sandbox::Sandbox,
        n: usize,
    ) {
        wait_for_instance_count(consul, &self.node, n).await;
        self.settle(consul_sb).await;
    }
}

pub fn start(kube: &kube::Client, consul: &mirra_consul::Client, s: Settings) -> Running {
    start_with_metrics(kube, consul, s, CatalogMetrics::default())
}

/// Starts a controller (see [`start`]), waits until it is ready, and lets it
/// settle; returns it with what was written from its start until then.
pub async fn start_settled(
    kube: &kube::Client,
    consul: &mirra_consul::Client,
    consul_sb: &consul_sandbox::Sandbox,
    s: Settings,
) -> (Running, Cost) {
    let mark = Checkpoint {
        consul: consul_sb.stats(),
        writes: Writes::default(),
    };
    let ctl = start(kube, consul, s);
    ctl.wait_ready().await;
    let cost = ctl.settled_cost(consul_sb, &mark).await;
    (ctl, cost)
}

/// Starts a controller with `s` over a catalog already in step with
/// Kubernetes (`what`: a restart in step, or adoption of what consul-k8s
/// left), lets it settle, and asserts that it wrote nothing (no Raft apply,
/// transaction, registration or deregistration) and planned at least
/// `in_step` instances and found them in step; then stops it.
pub async fn assert_start_writes_nothing(
    kube: &kube::Client,
    consul: &mirra_consul::Client,
    consul_sb: &consul_sandbox::Sandbox,
    s: Settings,
    what: &str,
    in_step: u64,
) {
    let (ctl, cost) = start_settled(kube, consul, consul_sb, s).await;
    assert_eq!(cost.raft_applies, 0, "{what} must not write");
    assert_counts!(cost, transactions: 0, registers: 0, deregisters: 0);
    assert!(cost.avoided >= in_step, "{cost:?}");
    ctl.stop().await;
}

/// Starts a controller (see [`start`]), waits until its node holds exactly
/// `n` instances, and lets it settle.
pub async fn start_synced(
    kube: &kube::Client,
    consul: &mirra_consul::Client,
    consul_sb: &consul_sandbox::Sandbox,
    s: Settings,
    n: usize,
) -> Running {
    let ctl = start(kube, consul, s);
    ctl.wait_synced(consul, consul_sb, n).await;
    ctl
}

pub fn start_with_metrics(
    kube: &kube::Client,
    consul: &mirra_consul::Client,
    s: Settings,
    metrics: CatalogMetrics,
) -> Running {
    let stop = CancellationToken::new();
    let ready = Readiness::new().register("catalog");
    let node = s.sync.consul_node_name.clone();
    let task = tokio::spawn(run(
        kube.clone(),
        consul.clone(),
        s,
        ready.clone(),
        metrics.clone(),
        stop.clone(),
    ));
    Running {
        stop,
        task,
        ready,
        metrics,
        node,
    }
}

// ----- replicas with leader election -----------------------------------------

/// The catalog's Lease in these tests: 2 s, renewed every 200 ms.
pub fn lease_config(identity: &str) -> LeaderConfig {
    LeaderConfig {
        lease_duration: Duration::from_secs(2),
        renew: Duration::from_millis(200),
        ..LeaderConfig::new("default", "mirra-sync-catalog", identity)
    }
}

/// The Consul client of a replica under a [`lease_config`] lease: the
/// fence requires the request timeout left of the lease, so requests time
/// out well below its 2 s.
pub fn leased_consul_client(url: &str) -> mirra_consul::Client {
    consul_client_with_timeout(url, Duration::from_millis(500))
}

/// The settings of a replica syncing to `node` under a [`lease_config`]
/// lease: Kubernetes writes, too, time out well below the lease.
pub fn leased_settings(node: &str) -> Settings {
    Settings {
        kube_write_timeout: Duration::from_millis(500),
        ..settings(sync_settings(node))
    }
}

/// A replica wired as the binary wires it: it campaigns for the
/// [`lease_config`] lease as `identity` and runs the controller while it
/// leads.
pub struct Replica {
    pub stop: CancellationToken,
    pub task: JoinHandle<Result<(), ControllerError>>,
    pub leading: tokio::sync::watch::Receiver<bool>,
    pub metrics: CatalogMetrics,
}

/// Starts a [`Replica`] syncing to `node`, with clients of its own.
pub fn replica(kube_url: &str, consul_url: &str, identity: &str, node: &str) -> Replica {
    let client = kube::Client::try_from(kube::Config::new(kube_url.parse().unwrap())).unwrap();
    let elector = LeaderElector::new(client.clone(), lease_config(identity)).unwrap();
    let leading = elector.subscribe();
    let stop = CancellationToken::new();
    let metrics = CatalogMetrics::default();
    let consul = leased_consul_client(consul_url);
    let settings = leased_settings(node);
    let task = {
        let (stop, metrics) = (stop.clone(), metrics.clone());
        tokio::spawn(async move {
            let readiness = Readiness::new();
            let ready = readiness.register("catalog");
            run_while_leading(elector, &readiness, stop, |token, lease| {
                run(
                    client.clone(),
                    consul.clone(),
                    Settings {
                        lease,
                        ..settings.clone()
                    },
                    ready.clone(),
                    metrics.clone(),
                    token,
                )
            })
            .await
        })
    };
    Replica {
        stop,
        task,
        leading,
        metrics,
    }
}

// ----- Kubernetes objects ---------------------------------------------------

pub async fn ensure_namespace(k: &kube::Client, ns: &str) {
    let nss: Api<Namespace> = Api::all(k.clone());
    // Already existing is fine.
    let _ = nss
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap(),
        )
        .await;
}

/// Creates (or replaces, by server-side apply) a Service from its JSON.
pub async fn apply_service(k: &kube::Client, ns: &str, body: Value) {
    ensure_namespace(k, ns).await;
    let svc: Service = serde_json::from_value(body).unwrap();
    let name = svc.metadata.name.clone().unwrap();
    Api::<Service>::namespaced(k.clone(), ns)
        .patch(
            &name,
            &PatchParams::apply("test").force(),
            &Patch::Apply(&svc),
        )
        .await
        .unwrap();
}

/// A ClusterIP Service with one port `http` 80 -> 8080.
pub async fn cluster_ip(k: &kube::Client, ns: &str, name: &str, annotations: Value) {
    apply_service(
        k,
        ns,
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": ns, "annotations": annotations},
            "spec": {"type": "ClusterIP",
                     "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
        }),
    )
    .await;
}

/// The annotation giving a Service's instances these tags (besides `k8s`).
pub fn service_tags(tags: &str) -> Value {
    json!({"consul.hashicorp.com/service-tags": tags})
}

/// One endpoint of a slice: address, ready, node.
#[derive(Clone, Copy)]
pub struct Ep<'a> {
    pub addr: &'a str,
    pub ready: bool,
    pub node: Option<&'a str>,
}

pub fn ep(addr: &str) -> Ep<'_> {
    Ep {
        addr,
        ready: true,
        node: None,
    }
}

pub fn ep_on<'a>(addr: &'a str, node: &'a str) -> Ep<'a> {
    Ep {
        addr,
        ready: true,
        node: Some(node),
    }
}

/// An endpoint that is not ready.
pub fn unready(addr: &str) -> Ep<'_> {
    Ep {
        addr,
        ready: false,
        node: None,
    }
}

/// Ready endpoints at these addresses.
pub fn eps<S: AsRef<str>>(addrs: &[S]) -> Vec<Ep<'_>> {
    addrs.iter().map(|a| ep(a.as_ref())).collect()
}

/// A ClusterIP Service `name` without annotations (see [`cluster_ip`]) and
/// its one EndpointSlice `<name>-1` with these endpoints.
pub async fn cluster_ip_with_endpoints(
    k: &kube::Client,
    ns: &str,
    name: &str,
    endpoints: &[Ep<'_>],
) {
    annotated_cluster_ip_with_endpoints(k, ns, name, json!({}), endpoints).await;
}

/// [`cluster_ip_with_endpoints`] with these annotations on the Service.
pub async fn annotated_cluster_ip_with_endpoints(
    k: &kube::Client,
    ns: &str,
    name: &str,
    annotations: Value,
    endpoints: &[Ep<'_>],
) {
    cluster_ip(k, ns, name, annotations).await;
    put_slice(k, ns, name, &format!("{name}-1"), endpoints).await;
}

/// An ExternalName Service `name` pointing at `external_name`, with these
/// external IPs (none: the field is left out).
pub async fn external_name_service(
    k: &kube::Client,
    ns: &str,
    name: &str,
    external_name: &str,
    external_ips: &[&str],
) {
    let mut spec = json!({"type": "ExternalName", "externalName": external_name});
    if !external_ips.is_empty() {
        spec["externalIPs"] = json!(external_ips);
    }
    apply_service(
        k,
        ns,
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": ns},
            "spec": spec
        }),
    )
    .await;
}

/// Creates or replaces an EndpointSlice of `svc` (port `http` 8080).
pub async fn put_slice(k: &kube::Client, ns: &str, svc: &str, slice: &str, endpoints: &[Ep<'_>]) {
    put_slice_ports(k, ns, svc, slice, endpoints, &[("http", 8080)]).await;
}

/// Creates or replaces an EndpointSlice of `svc` with these `(name, port)`
/// ports, as the EndpointSlice controller keeps them in step with the
/// Service's target ports.
pub async fn put_slice_ports(
    k: &kube::Client,
    ns: &str,
    svc: &str,
    slice: &str,
    endpoints: &[Ep<'_>],
    ports: &[(&str, i32)],
) {
    let endpoints: Vec<Value> = endpoints
        .iter()
        .map(|e| {
            let mut v = json!({
                "addresses": [e.addr],
                "conditions": {"ready": e.ready},
                "targetRef": {"kind": "Pod", "name": format!("pod-{}", e.addr), "namespace": ns}
            });
            if let Some(n) = e.node {
                v["nodeName"] = json!(n);
            }
            v
        })
        .collect();
    let ports: Vec<Value> = ports
        .iter()
        .map(|(n, p)| json!({"name": n, "port": p, "protocol": "TCP"}))
        .collect();
    let body: EndpointSlice = serde_json::from_value(json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": slice, "namespace": ns,
                     "labels": {"kubernetes.io/service-name": svc}},
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": ports
    }))
    .unwrap();
    Api::<EndpointSlice>::namespaced(k.clone(), ns)
        .patch(
            slice,
            &PatchParams::apply("test").force(),
            &Patch::Apply(&body),
        )
        .await
        .unwrap();
}

/// Creates a Node with these `(type, address)` status addresses.
pub async fn create_node(k: &kube::Client, name: &str, addresses: &[(&str, &str)]) {
    let addrs: Vec<Value> = addresses
        .iter()
        .map(|(t, a)| json!({"type": t, "address": a}))
        .collect();
    let node: Node = serde_json::from_value(json!({
        "metadata": {"name": name},
        "status": {"addresses": addrs}
    }))
    .unwrap();
    Api::<Node>::all(k.clone())
        .create(&PostParams::default(), &node)
        .await
        .unwrap();
}

/// A Node with this InternalIP and ExternalIP (see [`create_node`]).
pub async fn create_node_with_ips(k: &kube::Client, name: &str, internal: &str, external: &str) {
    create_node(
        k,
        name,
        &[("InternalIP", internal), ("ExternalIP", external)],
    )
    .await;
}

/// Replaces a Node's InternalIP and ExternalIP (see
/// [`set_node_addresses`]).
pub async fn set_node_ips(k: &kube::Client, name: &str, internal: &str, external: &str) {
    set_node_addresses(
        k,
        name,
        &[("InternalIP", internal), ("ExternalIP", external)],
    )
    .await;
}

/// Replaces a Node's status addresses (the `/status` subresource, as the
/// kubelet writes them).
pub async fn set_node_addresses(k: &kube::Client, name: &str, addresses: &[(&str, &str)]) {
    let addrs: Vec<Value> = addresses
        .iter()
        .map(|(t, a)| json!({"type": t, "address": a}))
        .collect();
    Api::<Node>::all(k.clone())
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"addresses": addrs}})),
        )
        .await
        .unwrap();
}

pub fn ips(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}.{}", i + 1)).collect()
}

/// Makes the kube-sandbox answer `status` to lists of `resource` (as its
/// stats name it, e.g. `endpointslices.discovery.k8s.io`): the next
/// `count` of them, or every one until its faults are cleared.
pub async fn fail_lists(
    sb: &kube_sandbox::Sandbox,
    resource: &str,
    status: u16,
    count: Option<u64>,
) {
    sb.inject(kube_sandbox::FaultRule {
        verb: Some("list".into()),
        resource: Some(resource.into()),
        status: Some(status),
        count,
        ..Default::default()
    })
    .await
    .unwrap();
}

/// What mirra's mapping wants in Consul for the Service `ns/name` and its
/// EndpointSlice `<name>-1`, as Kubernetes holds them now (no Nodes, no
/// Ingresses).
pub async fn desired_for(
    k: &kube::Client,
    ns: &str,
    name: &str,
    sync: &SyncSettings,
) -> mirra_catalog::ServiceOutcome {
    let svc: Service = Api::namespaced(k.clone(), ns).get(name).await.unwrap();
    let slice: EndpointSlice = Api::namespaced(k.clone(), ns)
        .get(&format!("{name}-1"))
        .await
        .unwrap();
    mirra_catalog::desired_for_service(&svc, &[&slice], &mirra_catalog::NoNodes, &[], sync)
}

// ----- Consul state -----------------------------------------------------------

/// One instance as Consul stores it, with the fields the tests compare.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Inst {
    pub name: String,
    pub address: String,
    pub port: u16,
    pub tags: Vec<String>,
}

/// Instances on `node`, by service ID.
pub async fn instances(c: &mirra_consul::Client, node: &str) -> BTreeMap<String, Inst> {
    let v = c
        .node_services(node, &QueryOptions::default())
        .await
        .unwrap();
    v.value
        .services
        .into_iter()
        .map(|s| {
            (
                s.id,
                Inst {
                    name: s.service,
                    address: s.address,
                    port: s.port,
                    tags: s.tags,
                },
            )
        })
        .collect()
}

/// Waits until `node` holds exactly `n` instances.
pub async fn wait_for_instance_count(c: &mirra_consul::Client, node: &str, n: usize) {
    wait_for(&format!("{n} instances on {node}"), || async {
        instances(c, node).await.len() == n
    })
    .await;
}

/// The instances on `node` as Consul's node-services JSON has them, by ID.
pub async fn node_services_json(c: &mirra_consul::Client, node: &str) -> BTreeMap<String, Value> {
    let raw = c
        .node_services_raw(node, &QueryOptions::default())
        .await
        .unwrap();
    let body: Value = serde_json::from_slice(&raw.value).unwrap();
    body["Services"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|s| (s["ID"].as_str().unwrap().to_owned(), s))
        .collect()
}

/// `(service name, address)` of every instance on `node`, sorted.
pub async fn names_and_addresses(c: &mirra_consul::Client, node: &str) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = instances(c, node)
        .await
        .into_values()
        .map(|i| (i.name, i.address))
        .collect();
    v.sort();
    v
}

/// Service ID -> status of its check, for every service check on `node`.
pub async fn check_statuses(c: &mirra_consul::Client, node: &str) -> BTreeMap<String, String> {
    c.health_node(node, &QueryOptions::default())
        .await
        .unwrap()
        .value
        .into_iter()
        .filter(|ch| !ch.service_id.is_empty())
        .map(|ch| (ch.service_id, ch.status))
        .collect()
}

/// `(name, address)` pairs, sorted, for comparing with
/// [`names_and_addresses`].
pub fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = v
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect();
    out.sort();
    out
}

/// Sends `body` to the sandbox with a hand-made HTTP/1.1 request, so that
/// exactly these JSON bytes arrive (as another program's client would send
/// them), not mirra's serialisation of them. Returns the status code.
pub async fn raw_request(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    body: &Value,
) -> u16 {
    let body = serde_json::to_vec(body).unwrap();
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(&body).await.unwrap();
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).await.unwrap();
    let text = String::from_utf8_lossy(&resp);
    text.split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"))
}

/// Sends each of `registrations` as a hand-made `PUT /v1/catalog/register`
/// (see [`raw_request`]); fails the test unless Consul answers 200.
pub async fn register_raw(consul: &consul_sandbox::Sandbox, registrations: &[Value]) {
    for r in registrations {
        assert_eq!(
            raw_request(consul.addr(), "PUT", "/v1/catalog/register", r).await,
            200,
            "{r}"
        );
    }
}

/// A `(name, description)`-free registration of a foreign or pre-existing
/// instance through mirra's client (for instances whose exact bytes do not
/// matter).
pub async fn register(
    c: &mirra_consul::Client,
    node: &str,
    id: &str,
    name: &str,
    tags: &[&str],
    meta: &[(&str, &str)],
) {
    c.register(&mirra_consul::RegisterRequest {
        node: node.into(),
        address: "127.0.0.1".into(),
        service: Some(mirra_consul::Service {
            id: id.into(),
            service: name.into(),
            tags: tags.iter().map(|t| (*t).to_owned()).collect(),
            address: "10.250.0.1".into(),
            meta: meta
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..mirra_consul::Service::default()
        }),
        ..mirra_consul::RegisterRequest::default()
    })
    .await
    .unwrap();
}

/// A Consul service `name` on `node`, as the Consul-to-Kubernetes tests
/// register it: one instance `<name>-1` at 10.0.0.1:5432 with these tags.
pub fn consul_service(node: &str, name: &str, tags: &[&str]) -> mirra_consul::RegisterRequest {
    mirra_consul::RegisterRequest {
        node: node.into(),
        address: "10.0.0.1".into(),
        service: Some(mirra_consul::Service {
            id: format!("{name}-1"),
            service: name.into(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            port: 5432,
            ..mirra_consul::Service::default()
        }),
        ..mirra_consul::RegisterRequest::default()
    }
}

/// Spawns the Consul-to-Kubernetes direction as `mirra sync-catalog
/// -to-k8s` runs it (with `preview`, as a dry run), until `stop`; returns
/// its task and its readiness.
pub fn spawn_to_k8s(
    kube: &kube::Client,
    consul: &mirra_consul::Client,
    sync: SyncSettings,
    preview: Option<mirra_runtime::Preview>,
    stop: &CancellationToken,
) -> (JoinHandle<()>, ReadyFlag) {
    let ready = Readiness::new().register("to-k8s");
    let task = tokio::spawn(mirra_catalog_controller::to_k8s::run_to_k8s(
        kube.clone(),
        consul.clone(),
        sync,
        mirra_runtime::WriteFence::new(
            mirra_runtime::LeaseDeadline::always(),
            Duration::from_secs(10),
        ),
        preview,
        ready.clone(),
        stop.clone(),
    ));
    (task, ready)
}

/// The marks mirra (and consul-k8s) put on instances it owns.
pub const OWNED_META: &[(&str, &str)] = &[("external-source", "kubernetes")];

// ----- metrics ----------------------------------------------------------------

/// The value of one sample in the text exposition, e.g.
/// `mirra_catalog_consul_errors_total{class="rate_limited"}`; 0 when absent.
pub fn sample(registry: &prometheus_client::registry::Registry, series: &str) -> f64 {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map_or(0.0, |v| v.trim().parse().unwrap())
}

/// A controller whose metrics are registered in a registry the test reads.
pub fn start_registered(
    kube: &kube::Client,
    consul: &mirra_consul::Client,
    s: Settings,
) -> (Running, prometheus_client::registry::Registry) {
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = mirra_catalog_controller::register_metrics(&mut registry);
    (start_with_metrics(kube, consul, s, metrics), registry)
}

/// Snapshot of the write counters of one controller.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Writes {
    pub transactions: u64,
    pub registers: u64,
    pub deregisters: u64,
    pub avoided: u64,
}

impl Writes {
    pub fn of(m: &CatalogMetrics) -> Self {
        Writes {
            transactions: m.transactions_total(),
            registers: m.operations_total("register"),
            deregisters: m.operations_total("deregister"),
            avoided: m.writes_avoided_total(),
        }
    }

    pub fn since(self, before: Writes) -> Writes {
        Writes {
            transactions: self.transactions - before.transactions,
            registers: self.registers - before.registers,
            deregisters: self.deregisters - before.deregisters,
            avoided: self.avoided - before.avoided,
        }
    }
}

/// Consul's counters and one controller's write counters at a moment of a
/// test, to count what the steps after it cost.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    consul: consul_sandbox::Stats,
    writes: Writes,
}

/// What the steps since a [`Checkpoint`] cost: the controller's writes
/// (see [`Writes`]), and Consul's Raft applies, transaction requests
/// (`PUT /v1/txn`, committed or not) and injected faults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cost {
    pub transactions: u64,
    pub registers: u64,
    pub deregisters: u64,
    pub avoided: u64,
    pub raft_applies: u64,
    pub txn_requests: u64,
    pub faults_injected: u64,
}

impl Running {
    pub fn checkpoint(&self, consul: &consul_sandbox::Sandbox) -> Checkpoint {
        Checkpoint {
            consul: consul.stats(),
            writes: Writes::of(&self.metrics),
        }
    }

    /// Lets the controller settle (see [`Running::settle`]), then counts
    /// what was written since `mark`.
    pub async fn settled_cost(&self, consul: &consul_sandbox::Sandbox, mark: &Checkpoint) -> Cost {
        self.settle(consul).await;
        mark.cost(self, consul)
    }
}

impl Checkpoint {
    /// What `ctl` and Consul wrote since the checkpoint, counted now.
    pub fn cost(&self, ctl: &Running, consul: &consul_sandbox::Sandbox) -> Cost {
        let w = Writes::of(&ctl.metrics).since(self.writes);
        let now = consul.stats();
        Cost {
            transactions: w.transactions,
            registers: w.registers,
            deregisters: w.deregisters,
            avoided: w.avoided,
            raft_applies: now.raft_applies - self.consul.raft_applies,
            txn_requests: now.requests_for(TXN) - self.consul.requests_for(TXN),
            faults_injected: now.faults_injected - self.consul.faults_injected,
        }
    }
}

/// Key of transactions in the consul-sandbox's request counts.
pub const TXN: &str = "PUT /v1/txn";

// ----- consul-k8s's registrations, written by hand -------------------------

/// Registers an instance the way consul-k8s does: one catalog/register per
/// instance, carrying the node, the service and its readiness check.
pub async fn register_like_consul_k8s(
    c: &mirra_consul::Client,
    r: &mirra_catalog::Registration,
    node: &str,
) {
    let check = r.check.as_ref().map(|ch| mirra_consul::HealthCheck {
        node: node.into(),
        check_id: ch.check_id.clone(),
        name: ch.name().into(),
        status: ch.status.as_str().into(),
        output: ch.output().into(),
        service_id: ch.service_id.clone(),
        service_name: r.name.clone(),
        r#type: ch.check_type().into(),
        ..mirra_consul::HealthCheck::default()
    });
    let req = mirra_consul::RegisterRequest {
        node: node.into(),
        address: "127.0.0.1".into(),
        node_meta: [("external-source".to_owned(), "kubernetes".to_owned())].into(),
        service: Some(mirra_consul::Service {
            id: r.id.clone(),
            service: r.name.clone(),
            tags: r.tags.clone(),
            address: r.address.clone(),
            meta: r.meta.clone(),
            port: r.port,
            weights: Some(mirra_consul::Weights {
                passing: r.weights.passing,
                warning: r.weights.warning,
            }),
            ..mirra_consul::Service::default()
        }),
        check,
        ..mirra_consul::RegisterRequest::default()
    };
    c.register(&req).await.unwrap();
}

/// The `CatalogRegistration` consul-k8s sends for one instance, as its Go
/// client marshals it (empty fields included), written by hand from
/// consul-k8s's `to-consul/resource.go` rather than from mirra's mapping.
pub fn consul_k8s_registration(
    id: &str,
    name: &str,
    address: &str,
    port: u16,
    meta: Value,
    check: Value,
) -> Value {
    json!({
        "ID": "",
        "Node": "k8s-sync",
        "Address": "127.0.0.1",
        "TaggedAddresses": null,
        "NodeMeta": {"external-source": "kubernetes"},
        "Datacenter": "",
        "Service": {
            "ID": id,
            "Service": name,
            "Tags": ["k8s"],
            "Meta": meta,
            "Port": port,
            "Address": address,
            "Weights": {"Passing": 0, "Warning": 0},
            "EnableTagOverride": false
        },
        "Check": check,
        "Checks": null,
        "SkipNodeUpdate": true
    })
}

/// The meta consul-k8s gives an instance of a Service in `ns`: its
/// `external-source` and `external-k8s-ns` marks, and `extra`.
pub fn consul_k8s_meta(ns: &str, extra: Value) -> Value {
    let mut m = json!({"external-source": "kubernetes", "external-k8s-ns": ns});
    for (k, v) in extra.as_object().unwrap() {
        m[k] = v.clone();
    }
    m
}

/// consul-k8s's readiness check of a ClusterIP instance.
pub fn readiness_check(ns: &str, id: &str, ready: bool) -> Value {
    let (status, output) = if ready {
        ("passing", "Kubernetes health checks passing")
    } else {
        ("critical", "Kubernetes health checks failing")
    };
    json!({
        "Node": "",
        "CheckID": format!("{ns}/{id}"),
        "Name": "Kubernetes Readiness Check",
        "Status": status,
        "Notes": "",
        "Output": output,
        "ServiceID": id,
        "ServiceName": "",
        "Type": "kubernetes-readiness",
        "ExposedPort": 0
    })
}

/// The registration newer consul-k8s sends for one multi-port instance:
/// the same, with `Port` 0 and the `Ports` list (every field of an entry,
/// `Default` false included, spelled out as its Go client marshals it).
pub fn consul_k8s_multi_port_registration(
    id: &str,
    name: &str,
    address: &str,
    ports: Value,
    meta: Value,
    check: Value,
) -> Value {
    let mut r = consul_k8s_registration(id, name, address, 0, meta, check);
    r["Service"]["Ports"] = ports;
    r
}
