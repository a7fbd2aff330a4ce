//! The copied-source scenario (see BENCHMARKS.md): one Secret (the source,
//! in its own namespace) copied by a copyItem into N namespaces, then the
//! source changed. The figures are what mirra sends for that change (the
//! promise: exactly N writes and no read) and how long until every copy
//! shows it on a watch; then a change of the source outside what is copied
//! (nothing at all).
//!
//! Usage: `mirra-bench mirror-copy [--namespaces N] [--sandbox-bin PATH]`.
//! What this module must NOT do: gate anything on time; it fails only when
//! the request counts break the promise, since those are deterministic.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::json;

use crate::mirror::{
    OPS, Server, by_verb, client, create_cluster, create_namespace, fmt_verbs, sandbox_kind,
    sc_resource, settle, start_mirror, total,
};

const SOURCE_NS: &str = "cert-manager";
const SOURCE: &str = "wildcard-tls";

struct Args {
    namespaces: usize,
    sandbox_bin: String,
}

fn parse(args: Vec<String>) -> anyhow::Result<Args> {
    let mut out = Args {
        namespaces: 1000,
        sandbox_bin: crate::default_sandbox_bin(),
    };
    for (flag, value) in crate::flags::pairs(args)? {
        match flag.as_str() {
            "--namespaces" => out.namespaces = crate::flags::number(&flag, &value)?,
            "--sandbox-bin" => out.sandbox_bin = value,
            other => anyhow::bail!("unknown flag {other}"),
        }
    }
    Ok(out)
}

/// The namespaces whose copy holds each certificate, as the bench's own
/// watch of mirra's Secrets sees them (a watch: no read counted against
/// mirra beyond its one list).
type Seen = Arc<Mutex<BTreeMap<String, BTreeSet<String>>>>;

fn spawn_copy_watch(c: &kube::Client) -> (Seen, tokio::task::JoinHandle<()>) {
    let seen: Seen = Arc::default();
    let api: Api<Secret> = Api::all(c.clone());
    let config = watcher::Config::default().labels("app.kubernetes.io/managed-by=mirra");
    let out = seen.clone();
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(watcher::watcher(api, config));
        while let Some(Ok(event)) = stream.next().await {
            let (watcher::Event::Apply(s) | watcher::Event::InitApply(s)) = event else {
                continue;
            };
            let cert = s
                .data
                .as_ref()
                .and_then(|d| d.get("tls.crt"))
                .map(|b| String::from_utf8_lossy(&b.0).into_owned())
                .unwrap_or_default();
            let ns = s.metadata.namespace.unwrap_or_default();
            if let Ok(mut seen) = out.lock() {
                for holders in seen.values_mut() {
                    holders.remove(&ns);
                }
                seen.entry(cert).or_default().insert(ns);
            }
        }
    });
    (seen, task)
}

fn holding(seen: &Seen, cert: &str) -> usize {
    seen.lock()
        .map(|s| s.get(cert).map_or(0, BTreeSet::len))
        .unwrap_or(0)
}

async fn wait_holding(seen: &Seen, cert: &str, n: usize) -> anyhow::Result<Duration> {
    let t = Instant::now();
    while holding(seen, cert) < n {
        anyhow::ensure!(
            t.elapsed() < Duration::from_secs(600),
            "gave up waiting for {n} copies holding {cert}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(t.elapsed())
}

async fn patch_source(c: &kube::Client, patch: serde_json::Value) -> anyhow::Result<()> {
    Api::<Secret>::namespaced(c.clone(), SOURCE_NS)
        .patch(SOURCE, &PatchParams::default(), &Patch::Merge(patch))
        .await?;
    Ok(())
}

/// Runs the scenario and prints a markdown table.
pub async fn run(args: Vec<String>) -> anyhow::Result<()> {
    let args = parse(args)?;
    let n = args.namespaces;
    let server = Server::start(&args.sandbox_bin).await?;
    let url = server.url();
    let c = client(&url)?;
    create_cluster(&c, n, true).await?;
    create_namespace(&c, SOURCE_NS, false).await?;
    // "djE=" is "v1": the certificate's first version.
    Api::<Secret>::namespaced(c.clone(), SOURCE_NS)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": SOURCE},
                "type": "kubernetes.io/tls",
                "data": {"tls.crt": "djE=", "tls.key": "a2V5"},
            }))?,
        )
        .await?;
    Api::<DynamicObject>::namespaced_with(c.clone(), OPS, &sc_resource())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "sync.appuio.ch/v1alpha1", "kind": "SyncConfig",
                "metadata": {"name": "tls", "namespace": OPS},
                "spec": {
                    "namespaceSelector": {"labelSelector": {"matchLabels": {"bench": "yes"}}},
                    "copyItems": [{"apiVersion": "v1", "kind": "Secret",
                                   "namespace": SOURCE_NS, "name": SOURCE}],
                },
            }))?,
        )
        .await?;
    let (seen, watch_task) = spawn_copy_watch(&c);

    let s0 = server.stats().await?;
    let t = Instant::now();
    let (token, task) = start_mirror(&url, None)?;
    wait_holding(&seen, "v1", n).await?;
    let converged = t.elapsed();
    let s1 = settle(&server).await?;
    let mut rows = vec![(
        format!("initial convergence ({n} copies)"),
        converged,
        by_verb(&s0, &s1),
    )];

    // The certificate is renewed ("djI=" is "v2").
    patch_source(&c, json!({"data": {"tls.crt": "djI="}})).await?;
    let renewed = wait_holding(&seen, "v2", n).await?;
    let s2 = settle(&server).await?;
    let change = by_verb(&s1, &s2);
    rows.push((
        format!(
            "the source changes (1 patch by the bench; time until all {n} copies show it on a watch)"
        ),
        renewed,
        change.clone(),
    ));

    // A change of the source outside what is copied.
    let t = Instant::now();
    patch_source(&c, json!({"metadata": {"labels": {"renewed": "yes"}}})).await?;
    let s3 = settle(&server).await?;
    let unrelated = by_verb(&s2, &s3);
    rows.push((
        "the source's labels change, nothing copied changes (1 patch by the bench)".into(),
        t.elapsed(),
        unrelated.clone(),
    ));
    token.cancel();
    task.await??;
    watch_task.abort();
    let external = server.external();
    server.stop();

    println!("## mirror controller: one source Secret copied into {n} namespaces (copyItems)\n");
    println!("sandbox: {}\n", sandbox_kind(external));
    println!("| phase | time | requests (by verb, incl. the bench's) | requests excl. watch |");
    println!("|---|---|---|---|");
    for (name, time, requests) in &rows {
        println!(
            "| {name} | {:.2} s | {} | {} |",
            time.as_secs_f64(),
            fmt_verbs(requests),
            total(requests, true)
        );
    }
    // The promise, from counts (deterministic): the bench's own patch, then
    // exactly one write per copy and no read of any kind.
    let expected: BTreeMap<String, u64> = [("patch".to_string(), n as u64 + 1)].into();
    let without_watch = |m: &BTreeMap<String, u64>| -> BTreeMap<String, u64> {
        m.iter()
            .filter(|(k, _)| k.as_str() != "watch")
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    };
    anyhow::ensure!(
        without_watch(&change) == expected,
        "a source change cost {}, not exactly {n} writes and no read",
        fmt_verbs(&change)
    );
    anyhow::ensure!(
        without_watch(&unrelated) == [("patch".to_string(), 1)].into(),
        "an unrelated change of the source cost {}",
        fmt_verbs(&unrelated)
    );
    println!(
        "\ncheck: the source change cost exactly {n} applies and no read; the unrelated change nothing"
    );
    Ok(())
}
