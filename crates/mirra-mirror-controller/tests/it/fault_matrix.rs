//! The fault matrix of the mirror: one workload, one driver, one row per
//! fault. Each row starts from the same synchronized state, starts a fault,
//! makes an edit and a delete while it lasts, lifts it, and then checks the
//! exact final state (every copy with its content and marks, nothing else,
//! nothing of another owner touched, the SyncConfig statuses) and the
//! number of writes of copies, counted by the sandbox: exact where every
//! refusal is known, bounded where a write in flight when the server
//! recovered or the process died may or may not have landed.
//!
//! The workload: namespaces `a1`..`a3` (team a) and `b1`, `b2` (team b);
//! SyncConfig `alpha` (team a: ConfigMap `cfg`, Secret `s`), `beta` (team b:
//! ConfigMap `beta`) and `doomed` (team b: ConfigMap `doomed`). In `a1` a
//! ConfigMap no mirra wrote (`foreign`) and a copy another mirra deployment
//! owns (`theirs`). During the fault `alpha` changes `cfg` and drops `s`
//! (three applies, three prunes) and `doomed` is deleted (two prunes).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
use kube::api::{Api, Patch, PatchParams};
use kube_sandbox::{FaultRule, Stats};
use mirra_mirror_controller::Settings;
use mirra_mirror_controller::mirra_mirror::{
    FIELD_MANAGER, MANAGED_BY_LABEL, MANAGED_BY_VALUE, OWNER_ANNOTATION,
};
use mirra_mirror_controller::mirra_runtime::leader::{LeaderConfig, LeaderElector};
use mirra_mirror_controller::mirra_runtime::{Metrics, Readiness, run_while_leading};
use mirra_mirror_controller::tokio_util::sync::CancellationToken;
use prometheus_client::registry::Registry;
use serde_json::{Value, json};

const TEAM_A: [&str; 3] = ["a1", "a2", "a3"];
const TEAM_B: [&str; 2] = ["b1", "b2"];
/// The owner of the copy `theirs`: a SyncConfig this mirra does not honour.
const THEIR_OWNER: &str = "elsewhere/other";

/// The request keys of writes to copies.
const COPY_WRITES: [&str; 8] = [
    "create configmaps",
    "update configmaps",
    "patch configmaps",
    "delete configmaps",
    "create secrets",
    "update secrets",
    "patch secrets",
    "delete secrets",
];

/// The faults of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// Every watch is closed, before and after each change.
    WatchDrop,
    /// Every watch resumes from a compacted revision: 410 Gone, relist.
    Gone,
    /// Applies and prunes answered 409 Conflict a few times.
    Conflict,
    /// Applies and prunes answered 429 with `Retry-After: 1` a few times.
    Throttled,
    /// Every apply and prune answered 500 or 503 until the fault is lifted.
    ServerErrors,
    /// The controller process dies with writes in flight; a fresh one
    /// starts on the same API server.
    KilledMidSync,
    /// Two replicas with leader election; the leader stops.
    LeaderChange,
}

/// Injected refusals a row's rules surely use up (each is retried until
/// the write lands): `key -> count`.
fn refusals(fault: Fault) -> BTreeMap<&'static str, u64> {
    let pairs: &[(&str, u64)] = match fault {
        Fault::Conflict => &[
            ("patch configmaps", 2),
            ("delete configmaps", 1),
            ("delete secrets", 1),
        ],
        Fault::Throttled => &[("patch configmaps", 2), ("delete secrets", 1)],
        _ => &[],
    };
    pairs.iter().copied().collect()
}

/// The writes the changes need: three applies of `cfg`, three prunes of
/// `s`, two prunes of `doomed`.
fn needed() -> BTreeMap<&'static str, u64> {
    [
        ("patch configmaps", 3),
        ("delete secrets", 3),
        ("delete configmaps", 2),
    ]
    .into_iter()
    .collect()
}

fn copy_writes(stats: &Stats) -> BTreeMap<&'static str, u64> {
    COPY_WRITES
        .iter()
        .map(|k| (*k, stats.get(k)))
        .filter(|(_, n)| *n > 0)
        .collect()
}

fn sum(
    a: &BTreeMap<&'static str, u64>,
    b: &BTreeMap<&'static str, u64>,
) -> BTreeMap<&'static str, u64> {
    let mut out = a.clone();
    for (k, n) in b {
        *out.entry(k).or_default() += n;
    }
    out
}

fn settings() -> Settings {
    let mut s = Settings::for_tests(&[OPS]);
    // Below the 2 s lease of the leader row, so that writes pass the fence.
    s.write_timeout = Duration::from_millis(500);
    s
}

fn lease_config(identity: &str) -> LeaderConfig {
    LeaderConfig {
        lease_duration: Duration::from_secs(2),
        renew: Duration::from_millis(200),
        ..LeaderConfig::new(OPS, "mirra-mirror", identity)
    }
}

/// A replica as the binary wires it: elector and controller, campaigning.
struct Replica {
    stop: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), mirra_mirror_controller::ControllerError>>,
    leading: tokio::sync::watch::Receiver<bool>,
}

fn replica(env: &Env, identity: &str) -> Replica {
    let client = client_for(&env.sb);
    let elector = LeaderElector::new(client.clone(), lease_config(identity)).unwrap();
    let leading = elector.subscribe();
    let stop = CancellationToken::new();
    let task = {
        let stop = stop.clone();
        tokio::spawn(async move {
            let readiness = Readiness::new();
            let ready = readiness.register("mirror");
            let mut registry = Registry::default();
            let metrics = Metrics::register(&mut registry);
            run_while_leading(elector, &readiness, stop, |token, lease| {
                mirra_mirror_controller::run(
                    client.clone(),
                    Settings {
                        lease,
                        ..settings()
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
    }
}

/// A controller in a runtime of its own, so that it can be killed as a
/// process is: every task, request and timer dropped wherever it was.
struct Process {
    rt: tokio::runtime::Runtime,
}

impl Process {
    fn start(url: String) -> Process {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        rt.spawn(async move {
            // Its client belongs to its runtime, and dies with it.
            let client = kube::Client::try_from(kube::Config::new(url.parse().unwrap())).unwrap();
            let mut registry = Registry::default();
            let metrics = Metrics::register(&mut registry);
            let ready = Readiness::new().register("mirror");
            mirra_mirror_controller::run(
                client,
                settings(),
                ready,
                metrics,
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

/// Whatever runs the controller in a row.
enum Controllers {
    One(Running),
    Process(Process),
    Pair(Replica, Replica),
    Leader(Replica),
    Killed,
}

/// Waits until the requests other than the electors' stop moving for
/// half a second, longer than the test settings' backoff cap. Counters
/// only: some rows run the controller in another process.
async fn settle(env: &Env) -> Stats {
    let count = |s: &Stats| -> u64 {
        s.requests
            .iter()
            .filter(|(k, _)| !k.contains("leases.coordination.k8s.io"))
            .map(|(_, v)| v)
            .sum()
    };
    mirra_testkit::settle_for("the controllers", 5, || Some(count(&env.sb.stats()))).await;
    env.sb.stats()
}

async fn cm_as_another_mirra(env: &Env, ns: &str, name: &str, owner: &str) {
    env.cms(ns)
        .patch(
            name,
            &PatchParams::apply(FIELD_MANAGER),
            &Patch::Apply(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
                "name": name,
                "labels": {MANAGED_BY_LABEL: MANAGED_BY_VALUE},
                "annotations": {OWNER_ANNOTATION: owner},
            }, "data": {"theirs": "yes"}}),
            ),
        )
        .await
        .unwrap();
}

fn alpha_spec(version: &str, with_secret: bool) -> Value {
    let mut items = vec![cm_item("cfg", json!({"v": version}))];
    if with_secret {
        items.push(secret_item("s"));
    }
    spec_for_team("a", items)
}

/// Every ConfigMap and Secret in the workload's namespaces, by
/// `namespace/Kind/name`, with what the comparison needs.
async fn snapshot(env: &Env) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for ns in TEAM_A.iter().chain(TEAM_B.iter()) {
        let cms: Vec<ConfigMap> = env.cms(ns).list(&Default::default()).await.unwrap().items;
        for c in cms {
            let name = c.metadata.name.clone().unwrap();
            if name == "kube-root-ca.crt" {
                continue;
            }
            out.insert(
                format!("{ns}/ConfigMap/{name}"),
                describe(&c.metadata, json!(c.data)),
            );
        }
        let secrets: Api<Secret> = Api::namespaced(env.client.clone(), ns);
        for s in secrets.list(&Default::default()).await.unwrap().items {
            let name = s.metadata.name.clone().unwrap();
            let data = json!(s.data.map(|d| {
                d.into_iter()
                    .map(|(k, v)| (k, String::from_utf8_lossy(&v.0).into_owned()))
                    .collect::<BTreeMap<_, _>>()
            }));
            out.insert(format!("{ns}/Secret/{name}"), describe(&s.metadata, data));
        }
    }
    out
}

fn describe(m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta, data: Value) -> Value {
    json!({
        "managedBy": m.labels.as_ref().and_then(|l| l.get(MANAGED_BY_LABEL)),
        "owner": m.annotations.as_ref().and_then(|a| a.get(OWNER_ANNOTATION)),
        "data": data,
        "resourceVersion": m.resource_version,
    })
}

fn copy(owner: &str, data: Value) -> Value {
    json!({"managedBy": MANAGED_BY_VALUE, "owner": format!("{OPS}/{owner}"), "data": data})
}

/// The state the changes must lead to, without resourceVersions (the
/// objects of others are compared with theirs separately).
fn expected_final() -> BTreeMap<String, Value> {
    let mut want = BTreeMap::new();
    for ns in TEAM_A {
        want.insert(
            format!("{ns}/ConfigMap/cfg"),
            copy("alpha", json!({"v": "2"})),
        );
    }
    for ns in TEAM_B {
        want.insert(
            format!("{ns}/ConfigMap/beta"),
            copy("beta", json!({"b": "1"})),
        );
    }
    want.insert(
        "a1/ConfigMap/foreign".into(),
        json!({"managedBy": null, "owner": null, "data": {"mine": "1"}}),
    );
    want.insert(
        "a1/ConfigMap/theirs".into(),
        json!({"managedBy": MANAGED_BY_VALUE, "owner": THEIR_OWNER, "data": {"theirs": "yes"}}),
    );
    want
}

fn without_versions(s: &BTreeMap<String, Value>) -> BTreeMap<String, Value> {
    s.iter()
        .map(|(k, v)| {
            let mut v = v.clone();
            v.as_object_mut().unwrap().remove("resourceVersion");
            (k.clone(), v)
        })
        .collect()
}

/// The status a SyncConfig in step must show.
async fn status_in_step(env: &Env, sc: &str, synchronized: u64) -> bool {
    let Some(obj) = env.sc_api().get_opt(sc).await.unwrap() else {
        return false;
    };
    let status = obj.data.get("status").cloned().unwrap_or(Value::Null);
    let cond = |t: &str| {
        status["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == t))
            .map(|c| (c["status"].clone(), c["reason"].clone()))
    };
    status["observedGeneration"] == json!(obj.metadata.generation)
        && status["synchronizedItemCount"] == synchronized
        && status["failedItemCount"] == 0
        && cond("Ready") == Some((json!("True"), json!("SynchronizationSucceeded")))
        && cond("Errored").map(|c| c.0) == Some(json!("False"))
        && cond("Degraded").map(|c| c.0) == Some(json!("False"))
        && cond("Invalid").map(|c| c.0) == Some(json!("False"))
        && cond("Conflict").map(|c| c.0) == Some(json!("False"))
}

async fn run_row(fault: Fault) {
    let env = if fault == Fault::Gone {
        // No periodic bookmarks: each watch's resourceVersion is that of
        // the last event it saw, so the compaction sends every one to 410.
        Env::without_bookmarks().await
    } else {
        Env::new().await
    };
    for ns in TEAM_A {
        env.create_ns(ns, &[("team", "a")]).await;
    }
    for ns in TEAM_B {
        env.create_ns(ns, &[("team", "b")]).await;
    }
    env.create_cm(
        "a1",
        json!({"metadata": {"name": "foreign"}, "data": {"mine": "1"}}),
    )
    .await;
    cm_as_another_mirra(&env, "a1", "theirs", THEIR_OWNER).await;
    env.create_sc("alpha", json!({}), alpha_spec("1", true))
        .await;
    env.create_team_sc("beta", "b", vec![cm_item("beta", json!({"b": "1"}))])
        .await;
    env.create_team_sc("doomed", "b", vec![cm_item("doomed", json!({"d": "1"}))])
        .await;

    let mut ctl = match fault {
        Fault::KilledMidSync => Controllers::Process(Process::start(env.sb.url())),
        Fault::LeaderChange => {
            let mut a = replica(&env, "replica-a");
            a.leading.wait_for(|l| *l).await.unwrap();
            Controllers::Pair(a, replica(&env, "replica-b"))
        }
        _ => Controllers::One(env.start(settings())),
    };
    wait_for("initial state", || async {
        let s = snapshot(&env).await;
        TEAM_A.iter().all(|ns| {
            s.contains_key(&format!("{ns}/ConfigMap/cfg"))
                && s.contains_key(&format!("{ns}/Secret/s"))
        }) && TEAM_B.iter().all(|ns| {
            s.contains_key(&format!("{ns}/ConfigMap/beta"))
                && s.contains_key(&format!("{ns}/ConfigMap/doomed"))
        })
    })
    .await;
    wait_for("initial statuses", || async {
        status_in_step(&env, "alpha", 6).await
            && status_in_step(&env, "beta", 2).await
            && status_in_step(&env, "doomed", 2).await
    })
    .await;
    settle(&env).await;
    let initial = snapshot(&env).await;

    // ---- the fault starts, the changes are made while it lasts ----------
    let before = env.sb.stats();
    match fault {
        Fault::WatchDrop => {
            env.sb.close_watches();
            env.patch_sc_spec("alpha", alpha_spec("2", false)).await;
            env.sb.close_watches();
            env.delete_sc("doomed").await;
            env.sb.close_watches();
        }
        Fault::Gone => {
            // A write no mirra watch sees moves the revision past every
            // watch's last event; after the compaction each resumes into
            // 410 Gone and lists again, slowly, while the changes are made.
            Api::<ServiceAccount>::namespaced(env.client.clone(), "default")
                .create(
                    &Default::default(),
                    &serde_json::from_value(json!({"metadata": {"name": "bump"}})).unwrap(),
                )
                .await
                .unwrap();
            env.sb.compact().await;
            env.sb
                .inject(FaultRule {
                    verb: Some("list".into()),
                    latency_ms: Some(300),
                    count: Some(3),
                    ..Default::default()
                })
                .await
                .unwrap();
            env.sb.close_watches();
            env.patch_sc_spec("alpha", alpha_spec("2", false)).await;
            env.delete_sc("doomed").await;
        }
        Fault::Conflict | Fault::Throttled => {
            for (key, count) in refusals(fault) {
                let (verb, resource) = key.split_once(' ').unwrap();
                env.sb
                    .inject(FaultRule {
                        verb: Some(verb.into()),
                        resource: Some(resource.into()),
                        status: Some(if fault == Fault::Conflict { 409 } else { 429 }),
                        retry_after_seconds: Some(1),
                        count: Some(count),
                        ..Default::default()
                    })
                    .await
                    .unwrap();
            }
            env.patch_sc_spec("alpha", alpha_spec("2", false)).await;
            env.delete_sc("doomed").await;
            wait_for("every refusal served", || async {
                let s = env.sb.stats().since(&before);
                refusals(fault).iter().all(|(k, n)| s.get(k) >= *n)
            })
            .await;
        }
        Fault::ServerErrors => {
            for (verb, resource, status) in [
                ("patch", "configmaps", 500),
                ("delete", "configmaps", 503),
                ("delete", "secrets", 500),
            ] {
                env.sb
                    .inject(FaultRule {
                        verb: Some(verb.into()),
                        resource: Some(resource.into()),
                        status: Some(status),
                        ..Default::default()
                    })
                    .await
                    .unwrap();
            }
            env.patch_sc_spec("alpha", alpha_spec("2", false)).await;
            env.delete_sc("doomed").await;
            // Every kind of write was refused, and retried, before the
            // server recovers.
            wait_for("writes refused and retried", || async {
                let s = env.sb.stats().since(&before);
                s.get("patch configmaps") >= 6
                    && s.get("delete configmaps") >= 4
                    && s.get("delete secrets") >= 6
            })
            .await;
        }
        Fault::KilledMidSync => {
            // Slow writes, so that the process dies with some of them sent
            // and others not yet.
            for (verb, resource) in [("patch", "configmaps"), ("delete", "secrets")] {
                env.sb
                    .inject(FaultRule {
                        verb: Some(verb.into()),
                        resource: Some(resource.into()),
                        latency_ms: Some(400),
                        ..Default::default()
                    })
                    .await
                    .unwrap();
            }
            env.patch_sc_spec("alpha", alpha_spec("2", false)).await;
            env.delete_sc("doomed").await;
            wait_for("a write in flight", || async {
                env.sb.stats().since(&before).get("patch configmaps") >= 1
            })
            .await;
        }
        Fault::LeaderChange => {
            let Controllers::Pair(a, _) = &ctl else {
                unreachable!()
            };
            a.stop.cancel();
            env.patch_sc_spec("alpha", alpha_spec("2", false)).await;
            env.delete_sc("doomed").await;
        }
    }

    // ---- the fault is lifted --------------------------------------------
    // A dead process is dead before the server recovers: nothing it had
    // queued can be sent later.
    let killed = matches!(ctl, Controllers::Process(_));
    if let Controllers::Process(p) = ctl {
        p.kill();
        ctl = Controllers::Killed;
    }
    let lifted = env.sb.stats();
    env.sb.clear_faults().await;
    if killed {
        ctl = Controllers::One(env.start(settings()));
    }
    if let Controllers::Pair(a, mut b) = ctl {
        a.task.await.unwrap().unwrap();
        b.leading.wait_for(|l| *l).await.unwrap();
        ctl = Controllers::Leader(b);
    }
    let want = expected_final();
    wait_for("final state", || async {
        without_versions(&snapshot(&env).await) == want
    })
    .await;
    wait_for("final statuses", || async {
        status_in_step(&env, "alpha", 3).await && status_in_step(&env, "beta", 2).await
    })
    .await;
    let end = settle(&env).await;

    // ---- exact final state ----------------------------------------------
    let last = snapshot(&env).await;
    assert_eq!(without_versions(&last), want, "{fault:?}");
    for other in ["a1/ConfigMap/foreign", "a1/ConfigMap/theirs"] {
        assert_eq!(
            last[other]["resourceVersion"], initial[other]["resourceVersion"],
            "{fault:?}: {other} was written"
        );
    }
    for ns in TEAM_B {
        let key = format!("{ns}/ConfigMap/beta");
        assert_eq!(
            last[&key]["resourceVersion"], initial[&key]["resourceVersion"],
            "{fault:?}: {key} needed no write"
        );
    }
    assert!(env.sc_api().get_opt("doomed").await.unwrap().is_none());

    // ---- exact writes ---------------------------------------------------
    let during = copy_writes(&lifted.since(&before));
    let after = copy_writes(&end.since(&lifted));
    let total = copy_writes(&end.since(&before));
    match fault {
        // Refused writes are retried until they land: each change once,
        // plus each refusal the rules were set to make.
        Fault::WatchDrop
        | Fault::Gone
        | Fault::Conflict
        | Fault::Throttled
        | Fault::LeaderChange => {
            assert_eq!(total, sum(&needed(), &refusals(fault)), "{fault:?}");
        }
        // Nothing lands while the server fails; once it answers, each
        // change is sent once, no more. (A retry counted just before the
        // lift may land after it, hence at most.)
        Fault::ServerErrors => {
            for (key, n) in needed() {
                assert!(
                    during.get(key).copied().unwrap_or(0) >= 2,
                    "{key}: {during:?}"
                );
                let got = after.get(key).copied().unwrap_or(0);
                assert!(got <= n, "{key}: {got} > {n} after the lift: {after:?}");
            }
            assert!(after.keys().all(|k| needed().contains_key(k)), "{after:?}");
        }
        // The dead process's writes in flight may or may not have landed;
        // its successor sends only what is still missing.
        Fault::KilledMidSync => {
            for (key, n) in needed() {
                let got = after.get(key).copied().unwrap_or(0);
                assert!(got <= n, "{key}: {got} > {n} after the kill: {after:?}");
                assert!(
                    total.get(key).copied().unwrap_or(0) <= n + settings().workers as u64,
                    "{key}: {total:?}"
                );
            }
            assert!(total.keys().all(|k| needed().contains_key(k)), "{total:?}");
        }
    }
    // Status: written when it changes, not on every retry.
    let status_writes = end.since(&before).get(STATUS_KEY);
    assert!(
        status_writes <= 6,
        "{fault:?}: {status_writes} status writes"
    );

    // In step afterwards: an idle controller writes nothing.
    let idle = settle(&env).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let idle = settle(&env).await.since(&idle);
    assert_eq!(copy_writes(&idle), BTreeMap::new(), "{fault:?}");
    assert_eq!(idle.get(STATUS_KEY), 0, "{fault:?}");

    match ctl {
        Controllers::One(r) => r.stop().await,
        Controllers::Leader(b) => {
            b.stop.cancel();
            b.task.await.unwrap().unwrap();
        }
        Controllers::Pair(..) | Controllers::Process(_) | Controllers::Killed => unreachable!(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_drop() {
    run_row(Fault::WatchDrop).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gone_410_on_watch() {
    run_row(Fault::Gone).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conflict_409_on_writes() {
    run_row(Fault::Conflict).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttled_429_with_retry_after() {
    run_row(Fault::Throttled).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_500_503_on_writes() {
    run_row(Fault::ServerErrors).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_sync() {
    run_row(Fault::KilledMidSync).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_change() {
    run_row(Fault::LeaderChange).await;
}
