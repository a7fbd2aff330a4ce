//! The fault matrix of the catalog sync: one workload, one driver, one row
//! per fault. Each row starts from the same synchronized catalog, starts a
//! fault, changes and deletes Services while it lasts, lifts it, and then
//! checks the exact final catalog (nodes, instances with their tags, meta
//! and checks, nothing stray, nothing of others touched) and bounds the
//! Raft applies and the operations committed.
//!
//! The workload: `web` (default, three endpoints), `api` (shop, two
//! endpoints, tag `v1`), `db` (shop, one endpoint) and `gone` (default, two
//! endpoints). Besides mirra's: an instance without mirra's marks on its
//! node (`foreign`) and a marked one on another node (`other-1` on
//! `other-node`). During the fault `web` swaps one endpoint (one
//! deregistration, one registration), `api`'s tag becomes `v2` (two
//! registrations) and `gone` is deleted (two deregistrations).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use common::*;
use consul_sandbox::FaultRule as ConsulFault;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, DeleteParams};
use mirra_catalog::service_id;
use mirra_catalog_controller::{CatalogMetrics, run};
use mirra_consul::QueryOptions;
use mirra_runtime::Readiness;
use mirra_testkit::DEADLINE;
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

const NODE: &str = "k8s-sync";

/// The faults of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// Every Kubernetes watch is closed, before and after each change.
    WatchDrop,
    /// Every Kubernetes watch resumes from a compacted revision: 410.
    Gone,
    /// Consul's port refuses connections and open ones are cut.
    ConsulDown,
    /// The Consul cluster has no leader.
    ConsulLeaderless,
    /// Every Consul request answers 500.
    Consul500,
    /// The controller process dies with a transaction in flight; a fresh
    /// one starts.
    KilledMidSync,
    /// Two replicas with leader election; the leader stops.
    LeaderChange,
}

impl Fault {
    fn consul_fails(self) -> bool {
        matches!(
            self,
            Fault::ConsulDown | Fault::ConsulLeaderless | Fault::Consul500
        )
    }
}

/// A TCP relay in front of Consul that can be taken down: its listener
/// closed (connection refused) and every relayed connection cut, then
/// brought back on the same port.
struct Relay {
    addr: SocketAddr,
    target: SocketAddr,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Relay {
    async fn start(target: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut r = Relay {
            addr,
            target,
            task: None,
        };
        r.serve(listener);
        r
    }

    fn serve(&mut self, listener: TcpListener) {
        let target = self.target;
        self.task = Some(tokio::spawn(async move {
            // Every relayed connection lives in this set: dropping it (when
            // the task is aborted) cuts them all.
            let mut conns = tokio::task::JoinSet::new();
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    continue;
                };
                conns.spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect(target).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                });
                while conns.try_join_next().is_some() {}
            }
        }));
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn down(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }

    async fn up(&mut self) {
        // The aborted task releases the port once it is dropped.
        let end = tokio::time::Instant::now() + DEADLINE;
        let listener = loop {
            match TcpListener::bind(self.addr).await {
                Ok(l) => break l,
                Err(e) if tokio::time::Instant::now() > end => panic!("port not free: {e}"),
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        };
        self.serve(listener);
    }
}

/// A controller in a runtime of its own, killed as a process is.
struct Process {
    rt: tokio::runtime::Runtime,
}

impl Process {
    fn start(kube_url: String, consul_url: String) -> Process {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        rt.spawn(async move {
            // Its clients belong to its runtime, and die with it.
            let client =
                kube::Client::try_from(kube::Config::new(kube_url.parse().unwrap())).unwrap();
            let ready = Readiness::new().register("catalog");
            run(
                client,
                leased_consul_client(&consul_url),
                leased_settings(NODE),
                ready,
                CatalogMetrics::default(),
                CancellationToken::new(),
            )
            .await
        });
        Process { rt }
    }

    fn kill(self) {
        self.rt.shutdown_background();
    }
}

enum Controllers {
    One(Running),
    Process(Process),
    Pair(Replica, Replica),
    Leader(Replica, CatalogMetrics),
    Killed,
}

/// The fields of an instance the comparison covers.
fn summary(s: &Value) -> Value {
    json!({
        "Service": s["Service"], "Address": s["Address"], "Port": s["Port"],
        "Tags": s["Tags"],
        // Consul answers `null` for an instance registered without meta.
        "Meta": if s["Meta"].is_null() { json!({}) } else { s["Meta"].clone() },
    })
}

/// What mirra registers for one endpoint of a single-port ClusterIP
/// Service (port `http` 80 -> 8080, target Pod `pod-<address>`).
fn mirra_instance(name: &str, ns: &str, addr: &str, tags: &[&str]) -> (String, Value) {
    let mut all = vec!["k8s"];
    all.extend_from_slice(tags);
    (
        service_id(name, addr),
        json!({
            "Service": name, "Address": addr, "Port": 8080, "Tags": all,
            "Meta": {"external-source": "kubernetes", "external-k8s-ns": ns,
                     "port-http": "80", "external-k8s-ref-kind": "Pod",
                     "external-k8s-ref-name": format!("pod-{addr}")},
        }),
    )
}

/// The whole catalog the test compares: nodes, every instance of every
/// node, and the checks of mirra's node.
async fn catalog(c: &mirra_consul::Client) -> Value {
    let mut nodes = BTreeMap::new();
    for n in c.nodes(&QueryOptions::default()).await.unwrap().value {
        let services: BTreeMap<String, Value> = node_services_json(c, &n.node)
            .await
            .into_iter()
            .map(|(id, s)| (id, summary(&s)))
            .collect();
        nodes.insert(
            n.node.clone(),
            json!({"Address": n.address, "Meta": n.meta, "Services": services}),
        );
    }
    json!({"nodes": nodes, "checks": check_statuses(c, NODE).await})
}

fn expected(agent: &Value, web: &[&str], api_tag: &str, gone: bool) -> Value {
    let mut mine: BTreeMap<String, Value> = BTreeMap::new();
    for a in web {
        let (id, v) = mirra_instance("web", "default", a, &[]);
        mine.insert(id, v);
    }
    for a in ["10.71.0.1", "10.71.0.2"] {
        let (id, v) = mirra_instance("api", "shop", a, &[api_tag]);
        mine.insert(id, v);
    }
    let (id, v) = mirra_instance("db", "shop", "10.72.0.1", &[]);
    mine.insert(id, v);
    if gone {
        for a in ["10.73.0.1", "10.73.0.2"] {
            let (id, v) = mirra_instance("gone", "default", a, &[]);
            mine.insert(id, v);
        }
    }
    let checks: BTreeMap<String, &str> = mine.keys().map(|id| (id.clone(), "passing")).collect();
    let mut services = mine;
    services.insert(
        "foreign".into(),
        json!({"Service": "foreign", "Address": "10.250.0.1", "Port": 0,
               "Tags": ["theirs"], "Meta": {}}),
    );
    json!({
        "nodes": {
            "consul-sandbox": agent,
            NODE: {"Address": "127.0.0.1", "Meta": {"external-source": "kubernetes"},
                   "Services": services},
            "other-node": {"Address": "127.0.0.1", "Meta": {}, "Services": {
                "other-1": {"Service": "other", "Address": "10.250.0.1", "Port": 0,
                            "Tags": ["k8s"], "Meta": {"external-source": "kubernetes"}},
            }},
        },
        "checks": checks,
    })
}

/// Waits until Consul saw no write from the controllers for half a second
/// (the blocking queries they park aside). Counters only: some rows run
/// the controller in another process.
async fn quiet(csb: &consul_sandbox::Sandbox) -> consul_sandbox::Stats {
    let writes = |s: &consul_sandbox::Stats| (s.raft_applies, s.requests_for(TXN));
    mirra_testkit::settle_for("the controllers", 5, || Some(writes(&csb.stats()))).await;
    csb.stats()
}

async fn run_row(fault: Fault) {
    let k = if fault == Fault::Gone {
        // No periodic bookmarks: a watch's resourceVersion moves only with
        // the events it sees, so the compaction sends every one to 410.
        kube_with(kube_sandbox::Config {
            bookmark_interval: Duration::from_secs(24 * 3600),
            ..Default::default()
        })
        .await
    } else {
        kube().await
    };
    let (csb, reader) = consul().await;
    let mut relay = Relay::start(csb.addr()).await;
    let consul_url = relay.url();

    let web = ["10.70.0.1", "10.70.0.2", "10.70.0.3"];
    cluster_ip_with_endpoints(&k.client, "default", "web", &eps(&web)).await;
    let api = ["10.71.0.1", "10.71.0.2"];
    annotated_cluster_ip_with_endpoints(&k.client, "shop", "api", service_tags("v1"), &eps(&api))
        .await;
    cluster_ip_with_endpoints(&k.client, "shop", "db", &[ep("10.72.0.1")]).await;
    let gone = ["10.73.0.1", "10.73.0.2"];
    cluster_ip_with_endpoints(&k.client, "default", "gone", &eps(&gone)).await;
    // Not mirra's: no marks on its node, and marks on another node.
    // The node was made by an earlier sync, with its mark, as consul-k8s
    // makes it.
    reader
        .register(&mirra_consul::RegisterRequest {
            node: NODE.into(),
            address: "127.0.0.1".into(),
            node_meta: [("external-source".to_owned(), "kubernetes".to_owned())].into(),
            service: Some(mirra_consul::Service {
                id: "foreign".into(),
                service: "foreign".into(),
                tags: vec!["theirs".into()],
                address: "10.250.0.1".into(),
                ..mirra_consul::Service::default()
            }),
            ..mirra_consul::RegisterRequest::default()
        })
        .await
        .unwrap();
    register(
        &reader,
        "other-node",
        "other-1",
        "other",
        &["k8s"],
        OWNED_META,
    )
    .await;

    let mut ctl = match fault {
        Fault::KilledMidSync => {
            Controllers::Process(Process::start(k.sb.url(), consul_url.clone()))
        }
        Fault::LeaderChange => {
            let mut a = replica(&k.sb.url(), &consul_url, "replica-a", NODE);
            a.leading.wait_for(|l| *l).await.unwrap();
            Controllers::Pair(a, replica(&k.sb.url(), &consul_url, "replica-b", NODE))
        }
        _ => Controllers::One(start(
            &k.client,
            &leased_consul_client(&consul_url),
            leased_settings(NODE),
        )),
    };
    let agent = catalog(&reader).await["nodes"]["consul-sandbox"].clone();
    let initial_want = expected(&agent, &web, "v1", true);
    wait_for("initial catalog", || async {
        catalog(&reader).await == initial_want
    })
    .await;
    quiet(&csb).await;
    let theirs = |s: &BTreeMap<String, Value>, id: &str| s.get(id).cloned().unwrap();
    let foreign_before = theirs(&node_services_json(&reader, NODE).await, "foreign");
    let other_before = theirs(&node_services_json(&reader, "other-node").await, "other-1");

    // ---- the fault starts, the changes are made while it lasts ----------
    let before = csb.stats();
    let ops_before = match &ctl {
        Controllers::One(r) => Some(Writes::of(&r.metrics)),
        Controllers::Pair(a, b) => Some(sum_writes(&a.metrics, &b.metrics)),
        _ => None,
    };
    match fault {
        Fault::WatchDrop => k.sb.close_watches(),
        Fault::Gone => {
            // A write no catalog watch sees moves the revision past every
            // watch's last event; after the compaction each resumes into
            // 410 Gone and lists again, slowly, while the changes are made.
            ensure_namespace(&k.client, "bump").await;
            k.sb.compact().await;
            k.sb.inject(kube_sandbox::FaultRule {
                verb: Some("list".into()),
                latency_ms: Some(300),
                count: Some(2),
                ..Default::default()
            })
            .await
            .unwrap();
            k.sb.close_watches();
        }
        Fault::ConsulDown => relay.down(),
        Fault::ConsulLeaderless => csb.faults().set_leaderless(true),
        Fault::Consul500 => {
            csb.faults().add(
                ConsulFault::error(500, "rpc error making call: EOF").with_path_prefix("/v1/"),
            );
        }
        Fault::KilledMidSync => {
            // Slow transactions, so that the process dies with one sent.
            csb.faults()
                .add(ConsulFault::latency(Duration::from_millis(400)).with_path_prefix("/v1/txn"));
        }
        Fault::LeaderChange => {
            if let Controllers::Pair(a, _) = &ctl {
                a.stop.cancel();
            }
        }
    }
    let web_now = ["10.70.0.2", "10.70.0.3", "10.70.0.4"];
    put_slice(&k.client, "default", "web", "web-1", &eps(&web_now)).await;
    if fault == Fault::WatchDrop {
        k.sb.close_watches();
    }
    cluster_ip(&k.client, "shop", "api", service_tags("v2")).await;
    if fault == Fault::WatchDrop {
        k.sb.close_watches();
    }
    Api::<Service>::namespaced(k.client.clone(), "default")
        .delete("gone", &DeleteParams::default())
        .await
        .unwrap();
    if fault == Fault::WatchDrop {
        k.sb.close_watches();
    }
    match fault {
        Fault::KilledMidSync => {
            wait_for("a transaction in flight", || async {
                csb.stats().requests_for(TXN) > before.requests_for(TXN)
            })
            .await;
        }
        f if f.consul_fails() => {
            // The writer tried, failed and backed off more than once.
            let Controllers::One(r) = &ctl else {
                unreachable!()
            };
            let backoffs = r.metrics.write_backoffs_total();
            wait_for("the writer backed off twice", || async {
                r.metrics.write_backoffs_total() >= backoffs + 2
            })
            .await;
        }
        _ => {}
    }

    // ---- the fault is lifted --------------------------------------------
    let killed = matches!(ctl, Controllers::Process(_));
    if let Controllers::Process(p) = ctl {
        p.kill();
        ctl = Controllers::Killed;
    }
    let lifted = csb.stats();
    match fault {
        Fault::ConsulDown => relay.up().await,
        _ => csb.faults().clear(),
    }
    k.sb.clear_faults().await;
    if killed {
        ctl = Controllers::One(start(
            &k.client,
            &leased_consul_client(&consul_url),
            leased_settings(NODE),
        ));
    }
    if let Controllers::Pair(a, mut b) = ctl {
        a.task.await.unwrap().unwrap();
        b.leading.wait_for(|l| *l).await.unwrap();
        let a_metrics = a.metrics.clone();
        ctl = Controllers::Leader(b, a_metrics);
    }
    let want = expected(&agent, &web_now, "v2", false);
    wait_for("final catalog", || async { catalog(&reader).await == want }).await;
    let end = quiet(&csb).await;
    if let Controllers::One(r) = &ctl {
        r.settle(&csb).await;
    }

    // ---- exact final catalog ----------------------------------------------
    assert_eq!(catalog(&reader).await, want, "{fault:?}");
    assert_eq!(
        theirs(&node_services_json(&reader, NODE).await, "foreign"),
        foreign_before,
        "{fault:?}: the foreign instance was written"
    );
    assert_eq!(
        theirs(&node_services_json(&reader, "other-node").await, "other-1"),
        other_before,
        "{fault:?}: another node's instance was written"
    );

    // ---- bounded writes ---------------------------------------------------
    // Three Services changed: at most one Raft apply each, fewer when the
    // writer batches them; none while Consul refuses. A killed process's
    // transaction in flight may commit besides its successor's.
    let applies = end.raft_applies - before.raft_applies;
    let during = lifted.raft_applies - before.raft_applies;
    let bound = if fault == Fault::KilledMidSync { 4 } else { 3 };
    assert!(
        (1..=bound).contains(&applies),
        "{fault:?}: {applies} applies"
    );
    if fault.consul_fails() {
        assert_eq!(during, 0, "{fault:?}: applied while Consul refused");
    }
    // Operations committed: one registration of the new web endpoint and
    // two of api's re-tagged ones; one deregistration of the old web
    // endpoint and two of gone's.
    let ops = match &ctl {
        Controllers::One(r) => ops_before.map(|b| Writes::of(&r.metrics).since(b)),
        Controllers::Leader(b, a) => ops_before.map(|o| sum_writes(a, &b.metrics).since(o)),
        _ => None,
    };
    if let Some(w) = ops {
        assert_eq!((w.registers, w.deregisters), (3, 3), "{fault:?}: {w:?}");
    } else {
        // The successor of the killed process: only what was still missing.
        let Controllers::One(r) = &ctl else {
            unreachable!()
        };
        let w = Writes::of(&r.metrics);
        assert!(w.registers <= 3 && w.deregisters <= 3, "{fault:?}: {w:?}");
    }

    // In step afterwards: nothing more is written.
    let idle = quiet(&csb).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        quiet(&csb).await.raft_applies,
        idle.raft_applies,
        "{fault:?}"
    );

    match ctl {
        Controllers::One(r) => r.stop().await,
        Controllers::Leader(b, _) => {
            b.stop.cancel();
            b.task.await.unwrap().unwrap();
        }
        Controllers::Pair(..) | Controllers::Process(_) | Controllers::Killed => unreachable!(),
    }
}

fn sum_writes(a: &CatalogMetrics, b: &CatalogMetrics) -> Writes {
    let (a, b) = (Writes::of(a), Writes::of(b));
    Writes {
        transactions: a.transactions + b.transactions,
        registers: a.registers + b.registers,
        deregisters: a.deregisters + b.deregisters,
        avoided: a.avoided + b.avoided,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubernetes_watch_drop() {
    run_row(Fault::WatchDrop).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubernetes_410_gone() {
    run_row(Fault::Gone).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consul_down() {
    run_row(Fault::ConsulDown).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consul_leaderless() {
    run_row(Fault::ConsulLeaderless).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consul_500() {
    run_row(Fault::Consul500).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_sync() {
    run_row(Fault::KilledMidSync).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_change() {
    run_row(Fault::LeaderChange).await;
}
