//! The consul-sandbox scenario: register requests per second over HTTP, and
//! 1,000 blocking queries parked at once that all wake on one change, once
//! with ACLs off and once with ACLs on (default policy deny, every request
//! carrying a token whose policy grants what it does), so the figures cover
//! the cost of resolving a token and checking its rules on every request.
//!
//! The sandbox runs in this process, so the load generator and the server
//! share the machine's cores; the figure is a floor for the server alone.

use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::json;

/// Register requests in the throughput phase: enough for several seconds of
/// load, so connection set-up does not dominate.
const REGISTERS: usize = 50_000;
/// Concurrent register clients: keeps both cores busy over loopback.
const WRITERS: usize = 16;
/// Blocking queries parked at once, the figure.
const BLOCKING: usize = 1_000;

/// One instance registration in the shape consul-k8s sends.
fn registration(i: usize) -> serde_json::Value {
    json!({
        "Node": "k8s-sync",
        "Address": "127.0.0.1",
        "NodeMeta": {"external-source": "kubernetes"},
        "Service": {
            "ID": format!("web-{i}"),
            "Service": format!("web-{}", i % 1000),
            "Address": format!("10.0.{}.{}", (i / 250) % 250, i % 250),
            "Port": 8080,
            "Tags": ["k8s"],
            "Meta": {"external-source": "kubernetes", "external-k8s-ns": "default"},
        },
    })
}

/// The management token of the ACL-on run.
const MANAGEMENT: &str = "bench-management-token";

/// What one run measured.
struct Figures {
    registers_per_sec: f64,
    raft_applies: u64,
    woke: usize,
    last_answer: Duration,
}

/// Runs the scenario in both modes and prints a markdown table.
pub async fn run() -> anyhow::Result<()> {
    let open = run_mode(false).await.context("ACLs off")?;
    let acl = run_mode(true).await.context("ACLs on")?;
    println!("| consul-sandbox | ACLs off | ACLs on (deny, token per request) |");
    println!("|---|---|---|");
    println!(
        "| register requests ({REGISTERS}, {WRITERS} clients) | {:.0} req/s | {:.0} req/s |",
        open.registers_per_sec, acl.registers_per_sec
    );
    println!(
        "| Raft applies counted | {} | {} |",
        open.raft_applies, acl.raft_applies
    );
    println!("| blocking queries parked at once | {BLOCKING} | {BLOCKING} |");
    println!(
        "| woke on one change (index moved) | {} | {} |",
        open.woke, acl.woke
    );
    println!(
        "| change -> last blocking query answered | {} ms | {} ms |",
        open.last_answer.as_millis(),
        acl.last_answer.as_millis()
    );
    Ok(())
}

/// With ACLs on: a policy granting writes on every node and service, and
/// a token linked to it. Returns the token's SecretID.
async fn sync_token(http: &reqwest::Client, url: &str) -> anyhow::Result<String> {
    let policy: serde_json::Value = http
        .put(format!("{url}/v1/acl/policy"))
        .header("X-Consul-Token", MANAGEMENT)
        .json(&json!({
            "Name": "catalog-sync",
            "Rules": "node_prefix \"\" { policy = \"write\" }\nservice_prefix \"\" { policy = \"write\" }",
        }))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let token: serde_json::Value = http
        .put(format!("{url}/v1/acl/token"))
        .header("X-Consul-Token", MANAGEMENT)
        .json(&json!({"Policies": [{"ID": policy["ID"]}]}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let secret = token["SecretID"]
        .as_str()
        .context("token answer without SecretID")?
        .to_string();
    // The run proves nothing about ACLs unless they refuse a request
    // without the token.
    let refused = http
        .put(format!("{url}/v1/catalog/register"))
        .json(&registration(0))
        .send()
        .await?;
    anyhow::ensure!(
        refused.status() == reqwest::StatusCode::FORBIDDEN,
        "a register without a token answered {}, not 403",
        refused.status()
    );
    Ok(secret)
}

async fn run_mode(acl: bool) -> anyhow::Result<Figures> {
    let config = if acl {
        consul_sandbox::Config {
            acl_default_policy: Some(consul_sandbox::AclDefaultPolicy::Deny),
            acl_initial_management_token: Some(MANAGEMENT.to_string()),
            ..Default::default()
        }
    } else {
        consul_sandbox::Config::default()
    };
    let sandbox = consul_sandbox::Sandbox::start(config).await?;
    let url = sandbox.url();
    let mut headers = reqwest::header::HeaderMap::new();
    if acl {
        let anonymous = reqwest::Client::new();
        let token = sync_token(&anonymous, &url).await?;
        headers.insert("X-Consul-Token", token.parse()?);
    }
    let http = reqwest::Client::builder()
        // Longer than the blocking queries' wait below.
        .timeout(Duration::from_secs(120))
        .default_headers(headers)
        .build()?;
    let applies_before = sandbox.stats().raft_applies;

    let start = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let http = http.clone();
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            for i in (w..REGISTERS).step_by(WRITERS) {
                let r = http
                    .put(format!("{url}/v1/catalog/register"))
                    .json(&registration(i))
                    .send()
                    .await?;
                anyhow::ensure!(r.status().is_success(), "register answered {}", r.status());
            }
            Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    let register_secs = start.elapsed().as_secs_f64();
    let raft_applies = sandbox.stats().raft_applies - applies_before;
    anyhow::ensure!(
        raft_applies == REGISTERS as u64,
        "expected {REGISTERS} Raft applies, saw {raft_applies}",
    );

    // Park the blocking queries on one service at its current index.
    let first = http
        .get(format!("{url}/v1/catalog/service/web-7"))
        .send()
        .await
        .context("read web-7")?;
    let index: u64 = first
        .headers()
        .get("X-Consul-Index")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .context("X-Consul-Index missing")?;
    let mut waiters = Vec::new();
    for _ in 0..BLOCKING {
        let http = http.clone();
        let url = url.clone();
        waiters.push(tokio::spawn(async move {
            let r = http
                .get(format!(
                    "{url}/v1/catalog/service/web-7?index={index}&wait=60s"
                ))
                .send()
                .await?;
            let woke_at = Instant::now();
            let new_index: u64 = r
                .headers()
                .get("X-Consul-Index")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            r.bytes().await?;
            anyhow::Ok((new_index, woke_at))
        }));
    }
    // Wait until every query is parked: the sandbox counts them as requests.
    let parked_by = Instant::now() + Duration::from_secs(30);
    loop {
        let parked = sandbox
            .stats()
            .requests
            .iter()
            .filter(|(k, _)| k.starts_with("GET /v1/catalog/service"))
            .map(|(_, v)| *v)
            .sum::<u64>();
        // The first plain read counts too.
        if parked > BLOCKING as u64 {
            break;
        }
        anyhow::ensure!(Instant::now() < parked_by, "only {parked} queries parked");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Give the last accepted requests time to reach their wait.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let changed_at = Instant::now();
    let mut change = registration(7);
    change["Service"]["Port"] = json!(9090);
    let r = http
        .put(format!("{url}/v1/catalog/register"))
        .json(&change)
        .send()
        .await?;
    anyhow::ensure!(r.status().is_success(), "change answered {}", r.status());
    let mut woke = 0usize;
    let mut last = Duration::ZERO;
    for w in waiters {
        let (new_index, at) = w.await??;
        if new_index > index {
            woke += 1;
            last = last.max(at.saturating_duration_since(changed_at));
        }
    }
    anyhow::ensure!(
        woke == BLOCKING,
        "only {woke} of {BLOCKING} blocking queries woke"
    );

    sandbox.shutdown().await;
    Ok(Figures {
        registers_per_sec: REGISTERS as f64 / register_secs,
        raft_applies,
        woke,
        last_answer: last,
    })
}
