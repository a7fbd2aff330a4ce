//! The normalised-copies scenario (see BENCHMARKS.md): N namespaces, each
//! receiving a LimitRange and a ResourceQuota whose quantities the API
//! server rewrites into canonical form (`0.5` stored as `500m`, `2048Mi`
//! as `2Gi`). A copy that compared the server's form with the SyncConfig's
//! field by field would look out of step on every verification pass; the
//! figures show what mirra sends when idle, across verification passes, and
//! after a restart (a controller with empty memory).
//!
//! Usage: `mirra-bench mirror-normalised [--namespaces N] [--idle-secs S]
//! [--sandbox-bin PATH]`. What this module must NOT do: gate anything on
//! time; it only measures and prints (and fails when the server did not
//! normalise, since then the run would prove nothing).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{LimitRange, ResourceQuota};
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use serde_json::json;

use crate::mirror::{
    OPS, Server, by_verb, client, create_cluster, fmt_verbs, ns_name, sandbox_kind, sc_resource,
    settle, start_mirror, total,
};

struct Args {
    namespaces: usize,
    idle: Duration,
    sandbox_bin: String,
}

fn parse(args: Vec<String>) -> anyhow::Result<Args> {
    let mut out = Args {
        namespaces: 1000,
        idle: Duration::from_secs(30),
        sandbox_bin: crate::default_sandbox_bin(),
    };
    for (flag, value) in crate::flags::pairs(args)? {
        match flag.as_str() {
            "--namespaces" => out.namespaces = crate::flags::number(&flag, &value)?,
            "--idle-secs" => out.idle = Duration::from_secs(crate::flags::number(&flag, &value)?),
            "--sandbox-bin" => out.sandbox_bin = value,
            other => anyhow::bail!("unknown flag {other}"),
        }
    }
    Ok(out)
}

/// The SyncConfig: both kinds, with quantities in a form the server
/// rewrites.
fn sync_config() -> serde_json::Value {
    json!({
        "apiVersion": "sync.appuio.ch/v1alpha1", "kind": "SyncConfig",
        "metadata": {"name": "quotas", "namespace": OPS},
        "spec": {
            "namespaceSelector": {"labelSelector": {"matchLabels": {"bench": "yes"}}},
            "syncItems": [
                {"apiVersion": "v1", "kind": "LimitRange",
                 "metadata": {"name": "limits", "labels": {"bench": "copy"}},
                 "spec": {"limits": [{"type": "Container",
                     "default": {"cpu": "0.5", "memory": "1024Mi"},
                     "defaultRequest": {"cpu": "0.1", "memory": "0.125Gi"}}]}},
                {"apiVersion": "v1", "kind": "ResourceQuota",
                 "metadata": {"name": "quota", "labels": {"bench": "copy"}},
                 "spec": {"hard": {"requests.cpu": "2000m", "requests.memory": "2048Mi",
                                   "limits.cpu": "4.0", "pods": "10"}}},
            ],
        },
    })
}

/// Copies of both kinds, counted with one list each (metadata only would
/// do, but the check below needs one stored LimitRange).
async fn copies(c: &kube::Client) -> anyhow::Result<(usize, usize)> {
    let lp = ListParams::default().labels("app.kubernetes.io/managed-by=mirra");
    let lr = Api::<LimitRange>::all(c.clone())
        .list(&lp)
        .await?
        .items
        .len();
    let rq = Api::<ResourceQuota>::all(c.clone())
        .list(&lp)
        .await?
        .items
        .len();
    Ok((lr, rq))
}

/// Runs the scenario and prints a markdown table.
pub async fn run(args: Vec<String>) -> anyhow::Result<()> {
    let args = parse(args)?;
    let n = args.namespaces;
    let limit = Duration::from_secs(600);
    let server = Server::start(&args.sandbox_bin).await?;
    let url = server.url();
    let c = client(&url)?;
    create_cluster(&c, n, true).await?;
    Api::<DynamicObject>::namespaced_with(c.clone(), OPS, &sc_resource())
        .create(
            &PostParams::default(),
            &serde_json::from_value(sync_config())?,
        )
        .await?;

    let mut rows: Vec<(String, Duration, BTreeMap<String, u64>)> = Vec::new();
    let s0 = server.stats().await?;
    let t = Instant::now();
    let (token, task) = start_mirror(&url, Some(Duration::from_secs(5)))?;
    // Polled rarely: each poll is two lists, counted in this phase.
    let mut polls = 0u32;
    loop {
        polls += 1;
        if copies(&c).await? == (n, n) {
            break;
        }
        anyhow::ensure!(t.elapsed() < limit, "gave up waiting for {n} + {n} copies");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let converged = t.elapsed();
    let s1 = settle(&server).await?;
    rows.push((
        format!(
            "initial convergence ({n} LimitRanges + {n} ResourceQuotas; includes the bench's {} lists)",
            2 * polls
        ),
        converged,
        by_verb(&s0, &s1),
    ));

    // The run proves nothing unless the server rewrote what mirra sent.
    let stored = Api::<LimitRange>::namespaced(c.clone(), &ns_name(0))
        .get("limits")
        .await?;
    let cpu = stored
        .spec
        .as_ref()
        .and_then(|s| s.limits.first())
        .and_then(|l| l.default.as_ref())
        .and_then(|d| d.get("cpu"))
        .map(|q| q.0.clone())
        .unwrap_or_default();
    anyhow::ensure!(
        cpu == "500m",
        "the server stored default cpu {cpu:?}, not the canonical 500m: nothing normalised"
    );

    // The idle window starts after the bench's own read above.
    let s1 = server.stats().await?;
    let t = Instant::now();
    tokio::time::sleep(args.idle).await;
    let s2 = server.stats().await?;
    rows.push((
        format!(
            "idle {} s (a verification pass every 5 s)",
            args.idle.as_secs()
        ),
        t.elapsed(),
        by_verb(&s1, &s2),
    ));

    // A restart: a controller that remembers nothing of its applies.
    token.cancel();
    task.await??;
    let s2 = settle(&server).await?;
    let t = Instant::now();
    let (token, task) = start_mirror(&url, Some(Duration::from_secs(5)))?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let s3 = settle(&server).await?;
    rows.push((
        "restart (a new controller: initial lists, then planning every namespace)".into(),
        t.elapsed(),
        by_verb(&s2, &s3),
    ));
    let t = Instant::now();
    tokio::time::sleep(args.idle).await;
    let s4 = server.stats().await?;
    rows.push((
        format!(
            "idle {} s after the restart (a verification pass every 5 s)",
            args.idle.as_secs()
        ),
        t.elapsed(),
        by_verb(&s3, &s4),
    ));
    token.cancel();
    task.await??;
    let external = server.external();
    server.stop();

    println!(
        "## mirror controller, normalised copies: {n} namespaces x (1 LimitRange + 1 ResourceQuota)\n"
    );
    println!(
        "sandbox: {}; stored default cpu of a LimitRange: {cpu} (sent as 0.5)\n",
        sandbox_kind(external)
    );
    println!("| phase | time | requests (by verb) | requests (excl. watch) |");
    println!("|---|---|---|---|");
    for (name, time, requests) in rows {
        println!(
            "| {name} | {:.2} s | {} | {} |",
            time.as_secs_f64(),
            fmt_verbs(&requests),
            total(&requests, true)
        );
    }
    Ok(())
}
