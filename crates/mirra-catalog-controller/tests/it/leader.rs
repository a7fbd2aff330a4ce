//! Two catalog replicas with leader election against one API server and one
//! Consul: a leader paused after deciding a transaction, whose lease lapses
//! meanwhile, sends nothing to Consul once a successor may be writing.
//!
//! The paused process is modelled in two parts: its elector stops (the
//! task is aborted: no renewal, no release, its last deadline stays) and
//! its writer is held right after the fence check by the fence's test
//! hook. Its controller keeps running and still believes it leads.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use common::*;
use mirra_catalog_controller::Settings;
use mirra_runtime::LeaderMetrics;
use mirra_runtime::leader::LeaderElector;
use prometheus_client::registry::Registry;

const NODE: &str = "k8s-sync";

/// A TCP forwarder in front of Consul that counts the transactions sent
/// through it, so the test can tell A's requests from B's: Consul counts
/// both, and under load a transaction of B's that timed out on B's side
/// after Consul applied it is counted there without being A's.
async fn counting_proxy(consul_url: &str) -> (String, Arc<AtomicU64>) {
    const NEEDLE: &[u8] = b"PUT /v1/txn";
    let upstream = consul_url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let sent = Arc::new(AtomicU64::new(0));
    let counter = sent.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = tokio::net::TcpStream::connect(&upstream).await else {
                continue;
            };
            let counter = counter.clone();
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
                });
                // The bytes of the previous read the needle may continue.
                let mut window: Vec<u8> = Vec::new();
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let n = match client_read.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    window.extend_from_slice(&buf[..n]);
                    let hits = window
                        .windows(NEEDLE.len())
                        .filter(|w| *w == NEEDLE)
                        .count();
                    counter.fetch_add(hits as u64, Ordering::SeqCst);
                    let keep = window.len().min(NEEDLE.len() - 1);
                    window.drain(..window.len() - keep);
                    if server_write.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    (url, sent)
}

async fn addresses(c: &mirra_consul::Client) -> Vec<String> {
    let mut a: Vec<String> = instances(c, NODE)
        .await
        .into_values()
        .map(|i| i.address)
        .collect();
    a.sort();
    a
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_leader_sends_no_stale_transaction_after_a_successor_took_over() {
    let k = kube().await;
    let (csb, _) = consul().await;
    let reader = consul_client(&csb.url());
    cluster_ip(&k.client, "default", "web", serde_json::json!({})).await;
    put_slice(&k.client, "default", "web", "web-1", &[ep("10.1.0.1")]).await;

    // Replica A, wired by hand so that the test can stop its elector alone.
    let a_kube = kube::Client::try_from(kube::Config::new(k.sb.url().parse().unwrap())).unwrap();
    let mut a_registry = Registry::default();
    let a_leader_metrics = LeaderMetrics::register(&mut a_registry);
    let a_elector = LeaderElector::new(a_kube.clone(), lease_config("replica-a"))
        .unwrap()
        .with_metrics(a_leader_metrics);
    let mut a_leading = a_elector.subscribe();
    let (hold, held) = tokio::sync::watch::channel(false);
    let a_lease = a_elector.deadline().with_write_hold(held);
    let a_elector_task = tokio::spawn(a_elector.run(std::future::pending()));
    a_leading.wait_for(|l| *l).await.unwrap();
    let (a_consul_url, a_sent) = counting_proxy(&csb.url()).await;
    let a = start(
        &a_kube,
        &leased_consul_client(&a_consul_url),
        Settings {
            lease: a_lease,
            ..leased_settings(NODE)
        },
    );
    wait_for("A registered 10.1.0.1", || async {
        addresses(&reader).await == ["10.1.0.1"]
    })
    .await;
    a.settle(&csb).await;

    // Replica B, wired as the binary does, campaigning meanwhile.
    let mut b = replica(&k.sb.url(), &csb.url(), "replica-b", NODE);

    // A decides a transaction (10.1.0.2 replaces 10.1.0.1), passes its
    // fence and is paused before sending it.
    hold.send_replace(true);
    let holders = hold.receiver_count();
    put_slice(&k.client, "default", "web", "web-1", &[ep("10.1.0.2")]).await;
    wait_for("A holds a transaction after its fence check", || async {
        hold.receiver_count() > holders
    })
    .await;
    let a_transactions = a.metrics.transactions_total();
    let a_sent_before = a_sent.load(Ordering::SeqCst);
    assert!(a_sent_before >= 1, "A's transactions go through the proxy");
    let applies_before = csb.stats().raft_applies;
    a_elector_task.abort();
    assert!(*a_leading.borrow(), "A still believes it leads");

    // B takes over once the lease lapsed; its first pass writes the
    // current state without waiting for an event or its verification
    // period (an hour here).
    b.leading.wait_for(|l| *l).await.unwrap();
    wait_for("B registered 10.1.0.2", || async {
        addresses(&reader).await == ["10.1.0.2"]
    })
    .await;
    put_slice(&k.client, "default", "web", "web-1", &[ep("10.1.0.3")]).await;
    wait_for("B registered 10.1.0.3", || async {
        addresses(&reader).await == ["10.1.0.3"]
    })
    .await;

    // A wakes up: its held transaction was cancelled at its timeout, and
    // its retries find the fence closed.
    hold.send_replace(false);
    wait_for("A's retries are fenced", || async {
        sample(&a_registry, "mirra_fenced_writes_total") >= 1.0
    })
    .await;
    a.settle(&csb).await;
    assert_eq!(
        addresses(&reader).await,
        ["10.1.0.3"],
        "no stale 10.1.0.2 from A over B's 10.1.0.3"
    );
    assert_eq!(
        a.metrics.transactions_total(),
        a_transactions,
        "A committed nothing more"
    );
    let b_transactions = b.metrics.transactions_total();
    assert!(
        b_transactions >= 2,
        "B wrote both changes: {b_transactions}"
    );
    assert_eq!(
        a_sent.load(Ordering::SeqCst),
        a_sent_before,
        "A sent no transaction once it was paused"
    );
    assert!(
        csb.stats().raft_applies - applies_before >= b_transactions,
        "Consul applied B's transactions"
    );

    a.stop.cancel();
    a.task.await.unwrap().unwrap();
    b.stop.cancel();
    b.task.await.unwrap().unwrap();
}
