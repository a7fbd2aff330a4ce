//! mirra-bench: scale scenarios whose output is copied into BENCHMARKS.md.
//!
//! Benchmarks measure; they never gate CI on time. Run with
//! `cargo run --release -p mirra-bench -- kube-sandbox`.
//!
//! Scenarios:
//! - `kube-sandbox`: small ConfigMap writes per second over HTTP while 10
//!   watches receive every event, and the store's bytes per object.
//! - `kube-sandbox-protobuf`: the same with protobuf bodies, answers and
//!   watch streams (as client-go's typed clients speak), the requests
//!   encoded with the `k8s-pb` prost types.
//! - `consul-sandbox`: register requests per second and 1,000 blocking
//!   queries parked at once on the Consul sandbox, with ACLs off and on.
//! - `mirror [--namespaces N]`: the mirror controller at 1,000 namespaces
//!   x 20 SyncConfigs, against the espejo strategy.
//! - `mirror-normalised`: 1,000 namespaces x a LimitRange and a
//!   ResourceQuota with quantities the server rewrites.
//! - `apply-rate`: the sandbox's answers to the mirror scenarios' requests
//!   (apply, update, get) with no controller, the floor those figures are
//!   read against.
//! - `mirror-copy`: one Secret copied by a copyItem into 1,000 namespaces,
//!   then changed: exactly 1,000 applies and no read, checked from counts.
//! - `catalog [--services N]`: the catalog controller at 10,000 Services x
//!   5 endpoints, against the consul-k8s strategy.
//! - `faults`: recovery times of the mirror (200 namespaces x 5 items) and
//!   the catalog (1,000 Services) for each row of the failure model.
//! - `kube-sandbox-memory [MIRRA_BIN]`: the sandbox in its own process
//!   (default: the `mirra` built next to this binary), RSS growth per
//!   stored ConfigMap against its JSON size.
//! - `cost-curve`: the mirror scenario at several namespace counts and the
//!   catalog scenario at several Service counts, each in a child process;
//!   a markdown table and an SVG plot of how the cost grows.

mod apply_rate;
mod catalog;
mod consul;
mod cost_curve;
mod faults;
mod flags;
mod mirror;
mod mirror_copy;
mod normalised;
mod profile;

/// The shipped binary's allocator, with the same build-time options, so
/// that the mirror controller (run in this process) is measured as it
/// ships.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use serde_json::json;

/// Writes in the throughput scenario.
const WRITES: usize = 20_000;
/// Concurrent writers: enough to keep both cores busy over loopback.
const WRITERS: usize = 16;
/// Open watches, as the target names.
const WATCHES: usize = 10;

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// The `mirra` binary built next to this one, if there is one: the
/// scenarios start it (sandboxes, the catalog controller) wherever the
/// benchmark is started from.
pub(crate) fn mirra_bin() -> Option<PathBuf> {
    let p = std::env::current_exe().ok()?.with_file_name("mirra");
    p.is_file().then_some(p)
}

/// The default of `--sandbox-bin` and `MIRRA_BIN`: [`mirra_bin`], else the
/// path of a release build seen from the repository root. A relative
/// default alone made a run started elsewhere fall back to an in-process
/// sandbox, whose figures differ.
pub(crate) fn default_sandbox_bin() -> String {
    mirra_bin().map_or_else(
        || "target/release/mirra".into(),
        |p| p.display().to_string(),
    )
}

/// Starts `mirra sandbox kube` from `bin` on a free port, keeping
/// `history` events, and reads the address it prints on its first line.
pub(crate) fn spawn_kube_sandbox(
    bin: &str,
    history: &str,
) -> anyhow::Result<(std::process::Child, String)> {
    use std::io::BufRead;
    let mut child = std::process::Command::new(bin)
        .args([
            "sandbox",
            "kube",
            "--listen",
            "127.0.0.1:0",
            "--history",
            history,
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .with_context(|| format!("cannot start {bin}"))?;
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().context("no stdout")?).read_line(&mut line)?;
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .context("no address line")?
        .to_string();
    Ok((child, url))
}

/// A ConfigMap create body in protobuf: the `k8s\0` envelope around a
/// `runtime.Unknown` holding the prost-encoded object.
fn protobuf_configmap(i: usize) -> Vec<u8> {
    use k8s_pb::api::core::v1::ConfigMap;
    use k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
    use prost::Message;
    let cm = ConfigMap {
        metadata: Some(ObjectMeta {
            name: Some(format!("cm-{i:06}")),
            labels: [("app".to_string(), "bench".to_string())].into(),
            ..Default::default()
        }),
        data: [
            ("key".to_string(), "value".to_string()),
            ("index".to_string(), i.to_string()),
        ]
        .into(),
        ..Default::default()
    };
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some("v1".into()),
            kind: Some("ConfigMap".into()),
        }),
        raw: Some(cm.encode_to_vec()),
        content_encoding: None,
        content_type: None,
    };
    [b"k8s\0".to_vec(), unknown.encode_to_vec()].concat()
}

/// Creates `count` small ConfigMaps in `default` with `WRITERS`
/// concurrent clients, in JSON or in protobuf.
async fn create_configmaps(
    http: &reqwest::Client,
    url: &str,
    count: usize,
    protobuf: bool,
) -> anyhow::Result<()> {
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let http = http.clone();
        let url = url.to_string();
        tasks.push(tokio::spawn(async move {
            for i in (w..count).step_by(WRITERS) {
                let req = http.post(format!("{url}/api/v1/namespaces/default/configmaps"));
                let req = if protobuf {
                    req.header("content-type", PROTOBUF)
                        .header("accept", format!("{PROTOBUF}, application/json"))
                        .body(protobuf_configmap(i))
                } else {
                    let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": format!("cm-{i:06}"), "labels": {"app": "bench"}},
                        "data": {"key": "value", "index": i.to_string()}});
                    req.json(&body)
                };
                let r = req.send().await?;
                anyhow::ensure!(r.status().as_u16() == 201, "create answered {}", r.status());
                // The answer is read, as a client would.
                let answer = r.bytes().await?;
                anyhow::ensure!(
                    !protobuf || answer.starts_with(b"k8s\0"),
                    "the answer is not protobuf"
                );
            }
            Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(())
}

/// This process's resident set size in KiB.
pub(crate) fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Counts the frames of a protobuf watch stream (4-byte big-endian
/// length, then the event) as chunks arrive.
#[derive(Default)]
struct Frames {
    pending: Vec<u8>,
    count: usize,
}

impl Frames {
    fn feed(&mut self, chunk: &[u8]) {
        self.pending.extend_from_slice(chunk);
        let mut at = 0;
        while let Some(len) = self
            .pending
            .get(at..at + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
        {
            if self.pending.len() < at + 4 + len {
                break;
            }
            at += 4 + len;
            self.count += 1;
        }
        self.pending.drain(..at);
    }
}

async fn kube_sandbox(protobuf: bool) -> anyhow::Result<()> {
    let sb = kube_sandbox::Sandbox::start(kube_sandbox::Config::default()).await?;
    let url = sb.url();
    let http = reqwest::Client::new();
    let mut watchers = Vec::new();
    for _ in 0..WATCHES {
        let mut req = http.get(format!(
            "{url}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0"
        ));
        if protobuf {
            req = req.header("accept", format!("{PROTOBUF}, application/json"));
        }
        let mut resp = req.send().await.context("watch")?;
        if protobuf {
            anyhow::ensure!(
                resp.headers()
                    .get("content-type")
                    .is_some_and(|v| v.as_bytes().starts_with(PROTOBUF.as_bytes())),
                "the watch is not protobuf"
            );
        }
        watchers.push(tokio::spawn(async move {
            let mut frames = Frames::default();
            let mut lines = 0usize;
            while let Ok(Some(chunk)) = resp.chunk().await {
                if protobuf {
                    frames.feed(&chunk);
                } else {
                    lines += chunk.iter().filter(|b| **b == b'\n').count();
                }
                if lines.max(frames.count) >= WRITES {
                    break;
                }
            }
            lines.max(frames.count)
        }));
    }
    let rss_before = rss_kib();
    let start = Instant::now();
    create_configmaps(&http, &url, WRITES, protobuf).await?;
    let writes_secs = start.elapsed().as_secs_f64();
    let mut delivered = 0;
    for w in watchers {
        delivered += w.await?;
    }
    let all_secs = start.elapsed().as_secs_f64();
    let (objects, bytes) = sb.size().await;
    sb.compact().await;
    let rss_after = rss_kib();
    let format = if protobuf { "protobuf" } else { "JSON" };
    println!("scenario: kube-sandbox writes with {WATCHES} watches, {format}");
    println!(
        "writes: {WRITES} creates by {WRITERS} concurrent HTTP clients, {format} bodies, answers and watch events"
    );
    println!(
        "write throughput: {:.0} creates/s ({writes_secs:.2} s)",
        WRITES as f64 / writes_secs
    );
    println!(
        "watch events delivered: {delivered} of {} ({all_secs:.2} s until the last)",
        WRITES * WATCHES
    );
    println!(
        "stored objects: {objects}, serialized bytes: {bytes}, {:.0} bytes/object",
        bytes as f64 / objects as f64
    );
    if let (Some(a), Some(b)) = (rss_before, rss_after) {
        println!(
            "process RSS growth while storing: {} KiB ({:.0} bytes/object, {:.2}x the JSON size; includes history and client buffers)",
            b.saturating_sub(a),
            (b.saturating_sub(a) * 1024) as f64 / objects as f64,
            (b.saturating_sub(a) * 1024) as f64 / bytes as f64
        );
    }
    Ok(())
}

/// Objects stored in the memory scenario.
const MEMORY_OBJECTS: usize = 50_000;

fn rss_kib_of(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .context("no VmRSS")?;
    line.split_whitespace()
        .nth(1)
        .context("bad VmRSS")?
        .parse()
        .context("bad VmRSS")
}

/// The sandbox in its own process (`mirra sandbox kube --history 1`, so
/// the event history holds no old versions), measured from outside.
async fn kube_sandbox_memory(mirra: &str) -> anyhow::Result<()> {
    let (mut child, url) = spawn_kube_sandbox(mirra, "1")?;
    let pid = child.id();
    let http = reqwest::Client::new();
    let result = async {
        let before = rss_kib_of(pid)?;
        create_configmaps(&http, &url, MEMORY_OBJECTS, false).await?;
        let after = rss_kib_of(pid)?;
        let list: serde_json::Value = http
            .get(format!("{url}/api/v1/configmaps"))
            .send()
            .await?
            .json()
            .await?;
        let items = list["items"].as_array().context("no items")?;
        let json_bytes: usize = items
            .iter()
            .map(|i| serde_json::to_vec(i).map(|v| v.len()).unwrap_or(0))
            .sum();
        let growth = after.saturating_sub(before) * 1024;
        println!("scenario: kube-sandbox memory, server in its own process (--history 1)");
        println!(
            "stored objects: {}, JSON bytes: {json_bytes} ({:.0} bytes/object)",
            items.len(),
            json_bytes as f64 / items.len() as f64
        );
        println!(
            "server RSS growth: {} KiB ({:.0} bytes/object, {:.2}x the JSON size)",
            growth / 1024,
            growth as f64 / items.len() as f64,
            growth as f64 / json_bytes as f64
        );
        Ok(())
    }
    .await;
    let _ = child.kill();
    let _ = child.wait();
    result
}

const USAGE: &str = "\
mirra-bench: scale scenarios whose figures go into BENCHMARKS.md (build with --release)

usage: mirra-bench SCENARIO [FLAGS]

scenarios:
  kube-sandbox                     writes per second with 10 watches, bytes per object (default)
  kube-sandbox-protobuf            the same in protobuf (bodies, answers, watch frames)
  kube-sandbox-memory [MIRRA_BIN]  the sandbox in its own process: RSS per stored ConfigMap
  consul-sandbox                   register requests per second, 1,000 parked blocking queries,
                                   with ACLs off and on (default deny, a token per request)
  mirror   [--namespaces N] [--events N] [--idle-secs S] [--sandbox-bin PATH] [--skip-baseline]
           [--perf-dir DIR] [--json-out FILE] [--edits N] [--workers N] [--verify-secs S]
           the mirror controller at N namespaces x 20 SyncConfigs x 2 items (default 1000),
           against the espejo strategy; the item edit is made --edits times (default 5) by
           each side, the two sides' edits alternating, its figure the median; with
           --perf-dir, a `perf record` of each phase (bench and sandbox processes; the edit
           phase: all its edits, both sides', and the settling between) in DIR/<phase>.data
           (its times are then no figures); with --json-out, mirra's figures also as JSON in FILE;
           --workers N sets the controller's --workers (default: the controller's default, 16)
           --verify-secs S: the idle phase restarts the controller with a verification pass
           every S s (default 5; 0: none); the phases before run with the controller's
           default (300 s)
  mirror-normalised [--namespaces N] [--idle-secs S] [--sandbox-bin PATH]
           N namespaces (default 1000) x a LimitRange and a ResourceQuota whose quantities
           the server rewrites: requests when idle, across verification passes and after a restart
  apply-rate [--namespaces N] [--concurrency C[,C...]] [--sandbox-bin PATH]
           the sandbox's answers alone (no controller): N ConfigMaps (default 1000) changed
           by server-side apply, by update and read, at each concurrency (default 8,16)
  mirror-copy [--namespaces N] [--sandbox-bin PATH]
           one Secret copied by a copyItem into N namespaces (default 1000): the requests
           a change of the source costs (exactly N applies, no read) and its latency
  catalog  [--services N] [--endpoints N] [--rollout N] [--idle-secs S] [--txn-batch-size N]
           [--k8s-namespaces N] [--json-out FILE] [--perf-dir DIR]
           the catalog controller (a `mirra sync-catalog` process) at N Services (default
           10000) x 5 endpoints, against the consul-k8s strategy; with --k8s-namespaces N > 1
           the Services are spread over N namespaces, each mirrored into a Consul Enterprise
           namespace (prefix k8s-); with --json-out, mirra's figures also as JSON in FILE;
           with --perf-dir, a `perf record` of each phase (controller and sandbox processes)
           in DIR/<phase>.data (its times are then no figures)
  faults   [--namespaces N] [--items N] [--services N] [--fault-secs S]
           recovery times for each row of the failure model: the mirror at N namespaces
           (default 200) x 5 items, the catalog at N Services (default 1000)
  cost-curve [--mirror-sizes N,N,...] [--catalog-sizes N,N,...] [--out-dir DIR]
           [--skip-mirror] [--skip-catalog] [--report-only]
           how the cost grows: `mirror --skip-baseline` at each namespace count (default
           1000,2000,5000) and `catalog` at each Service count (default 10000,20000,50000),
           each size a child process of this executable; writes DIR/cost-curve.md (requests
           per event, Raft applies per change, RSS, RSS per object, latency per size) and
           DIR/cost-curve.svg (RSS and p99 against size), default DIR bench-out/cost-curve;
           with --report-only, both again from the sizes' JSON figures already in DIR
";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args
        .iter()
        .skip(1)
        .any(|a| a == "--help" || a == "-h" || a == "help")
    {
        print!("{USAGE}");
        return Ok(());
    }
    match std::env::args().nth(1).as_deref() {
        Some("kube-sandbox") | None => kube_sandbox(false).await,
        Some("kube-sandbox-protobuf") => kube_sandbox(true).await,
        Some("kube-sandbox-memory") => {
            let mirra = std::env::args().nth(2).unwrap_or_else(default_sandbox_bin);
            kube_sandbox_memory(&mirra).await
        }
        Some("consul-sandbox") => consul::run().await,
        Some("mirror") => mirror::run(std::env::args().skip(2).collect()).await,
        Some("mirror-normalised") => normalised::run(std::env::args().skip(2).collect()).await,
        Some("apply-rate") => apply_rate::run(std::env::args().skip(2).collect()).await,
        Some("mirror-copy") => mirror_copy::run(std::env::args().skip(2).collect()).await,
        Some("catalog") => catalog::run(std::env::args().skip(2).collect()).await,
        Some("faults") => faults::run(std::env::args().skip(2).collect()).await,
        Some("cost-curve") => cost_curve::run(std::env::args().skip(2).collect()).await,
        Some(other) => anyhow::bail!("unknown scenario {other:?}\n\n{USAGE}"),
    }
}
