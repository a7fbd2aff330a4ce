//! The write floor of the mirror scenarios (see BENCHMARKS.md): how fast
//! the sandbox, in its own process, answers the requests the mirror
//! controller and the espejo strategy send, with no controller in the way.
//! One ConfigMap in each of N namespaces, two watches open on ConfigMaps
//! (as mirra's cache and the bench's counter are), then the same change
//! sent to every ConfigMap as a server-side apply, as a full update and
//! as a read, at a given concurrency.
//!
//! Usage: `mirra-bench apply-rate [--namespaces N] [--concurrency C]
//! [--sandbox-bin PATH]`.
//! What this module must NOT do: measure mirra; it is the floor mirra's
//! figures are read against.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::json;

use crate::mirror::{Server, by_verb, client, create_namespaces, fmt_verbs, ns_name};

struct Args {
    namespaces: usize,
    concurrency: Vec<usize>,
    filler: usize,
    sandbox_bin: String,
}

fn parse(args: Vec<String>) -> anyhow::Result<Args> {
    let mut out = Args {
        namespaces: 1000,
        concurrency: vec![8, 16],
        filler: 0,
        sandbox_bin: crate::default_sandbox_bin(),
    };
    for (flag, value) in crate::flags::pairs(args)? {
        match flag.as_str() {
            "--namespaces" => out.namespaces = crate::flags::number(&flag, &value)?,
            "--concurrency" => {
                out.concurrency = crate::flags::positive_list(&flag, &value, "0 sends nothing")?
            }
            "--filler" => out.filler = crate::flags::number(&flag, &value)?,
            "--sandbox-bin" => out.sandbox_bin = value,
            other => anyhow::bail!("unknown flag {other}"),
        }
    }
    Ok(out)
}

/// A copy as the mirror controller writes it: its labels and one data key.
fn body(ns: &str, version: u32) -> serde_json::Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "rate",
            "namespace": ns,
            "labels": {"app.kubernetes.io/managed-by": "mirra"},
            "annotations": {"sync.appuio.ch/source": "ops/rate"},
        },
        "data": {"version": version.to_string(), "namespace": ns},
    })
}

#[derive(Clone, Copy)]
enum Verb {
    Apply,
    Update,
    Get,
}

impl Verb {
    fn name(self) -> &'static str {
        match self {
            Verb::Apply => "server-side apply",
            Verb::Update => "update (PUT, no resourceVersion)",
            Verb::Get => "get",
        }
    }
}

async fn send_all(
    c: &kube::Client,
    names: &[String],
    verb: Verb,
    version: u32,
    concurrency: usize,
) -> anyhow::Result<()> {
    let results: Vec<anyhow::Result<()>> = futures::stream::iter(names)
        .map(|ns| async move {
            let api: Api<ConfigMap> = Api::namespaced(c.clone(), ns);
            match verb {
                Verb::Apply => {
                    api.patch(
                        "rate",
                        &PatchParams::apply("mirra").force(),
                        &Patch::Apply(body(ns, version)),
                    )
                    .await?;
                }
                Verb::Update => {
                    let cm: ConfigMap = serde_json::from_value(body(ns, version))?;
                    api.replace("rate", &PostParams::default(), &cm).await?;
                }
                Verb::Get => {
                    api.get("rate").await?;
                }
            }
            Ok(())
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    results.into_iter().collect()
}

pub async fn run(args: Vec<String>) -> anyhow::Result<()> {
    let args = parse(args)?;
    let server = Server::start(&args.sandbox_bin).await?;
    let c = client(&server.url())?;
    let names: Vec<String> = (0..args.namespaces).map(ns_name).collect();
    create_namespaces(&c, names.clone()).await?;
    send_all(&c, &names, Verb::Apply, 0, 16).await?;
    // Other objects in the store, as the mirror scenario's 40,000 copies.
    let filler: Vec<(String, usize)> = (0..args.filler)
        .map(|i| (names[i % names.len()].clone(), i / names.len()))
        .collect();
    let made: Vec<anyhow::Result<()>> = futures::stream::iter(filler)
        .map(|(ns, i)| {
            let c = c.clone();
            async move {
                let api: Api<ConfigMap> = Api::namespaced(c, &ns);
                let mut b = body(&ns, 0);
                b["metadata"]["name"] = json!(format!("filler-{i}"));
                api.patch(
                    &format!("filler-{i}"),
                    &PatchParams::apply("mirra").force(),
                    &Patch::Apply(b),
                )
                .await?;
                Ok(())
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    made.into_iter().collect::<anyhow::Result<()>>()?;

    // Two watchers, as in the mirror scenario: each counts the events it
    // received, so a phase ends when both saw every change.
    let seen: Vec<Arc<AtomicUsize>> = (0..2).map(|_| Arc::default()).collect();
    let mut tasks = Vec::new();
    for counter in &seen {
        let api: Api<ConfigMap> = Api::all(c.clone());
        let counter = counter.clone();
        tasks.push(tokio::spawn(async move {
            let mut stream = std::pin::pin!(watcher::watcher(api, watcher::Config::default()));
            while let Some(Ok(event)) = stream.next().await {
                if let watcher::Event::Apply(_) = event {
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;

    println!(
        "scenario: the sandbox's answers alone, {} ConfigMaps (one per namespace), 2 watches open",
        args.namespaces
    );
    println!();
    println!(
        "| requests | concurrency | time | per second | requests (by verb) | last watch event after |"
    );
    println!("|---|---|---|---|---|---|");
    let mut version = 1;
    for &concurrency in &args.concurrency {
        for verb in [Verb::Apply, Verb::Update, Verb::Get] {
            let before = server.stats().await?;
            let watched: Vec<usize> = seen.iter().map(|s| s.load(Ordering::Relaxed)).collect();
            let t = Instant::now();
            send_all(&c, &names, verb, version, concurrency).await?;
            let time = t.elapsed();
            let after = server.stats().await?;
            let seen_at = if matches!(verb, Verb::Get) {
                "-".to_string()
            } else {
                let deadline = Instant::now() + Duration::from_secs(30);
                while seen
                    .iter()
                    .zip(&watched)
                    .any(|(s, w)| s.load(Ordering::Relaxed) < w + args.namespaces)
                {
                    if Instant::now() > deadline {
                        anyhow::bail!("the watches did not see every {} within 30 s", verb.name());
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                format!("{:.3} s", t.elapsed().as_secs_f64())
            };
            version += 1;
            println!(
                "| {} x {} | {concurrency} | {:.3} s | {:.0} | {} | {seen_at} |",
                args.namespaces,
                verb.name(),
                time.as_secs_f64(),
                args.namespaces as f64 / time.as_secs_f64(),
                fmt_verbs(&by_verb(&before, &after)),
            );
        }
    }
    for t in tasks {
        t.abort();
    }
    server.stop();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_parse_and_malformed_ones_are_refused_with_their_name() {
        let ok = parse(args(&["--concurrency", "4, 32", "--filler", "10"]))
            .map(|a| (a.concurrency, a.filler));
        assert_eq!(ok.ok(), Some((vec![4, 32], 10)));
        for (bad, says) in [
            (&["--concurrency", "8,x"][..], "--concurrency"),
            (&["--concurrency", "0"][..], "0 sends nothing"),
            (&["--concurrency"][..], "needs a value"),
            (
                &["--namespaces", "-1"][..],
                "--namespaces \"-1\": not a number",
            ),
            (&["--nope", "1"][..], "unknown flag --nope"),
        ] {
            let e = parse(args(bad))
                .err()
                .map(|e| format!("{e:#}"))
                .unwrap_or_default();
            assert!(e.contains(says), "{bad:?}: {e}");
        }
    }
}
