//! Helpers shared by the integration tests: a started sandbox plus a raw
//! HTTP client (reqwest + serde_json, no Consul client crate).

// Test fixtures: a failure here is a test failure, so unwrap is the point.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use consul_sandbox::{Config, Sandbox};
use mirra_testkit::wait_for;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

/// Upper bound for "this should happen soon" waits. Generous on purpose:
/// tests assert states and counts, never durations.
pub const SOON: Duration = Duration::from_secs(20);

pub struct Api {
    pub sb: Sandbox,
    pub http: reqwest::Client,
}

pub struct Resp {
    pub status: u16,
    pub text: String,
    pub headers: HeaderMap,
}

/// The answer of a query started by [`Api::spawn_get`], which must come
/// within [`SOON`].
pub async fn woken(waiter: tokio::task::JoinHandle<Resp>) -> Resp {
    tokio::time::timeout(SOON, waiter)
        .await
        .expect("the blocking query returned")
        .unwrap()
}

impl Resp {
    pub async fn read(r: reqwest::Response) -> Resp {
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        let text = r.text().await.unwrap();
        Resp {
            status,
            text,
            headers,
        }
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.text))
    }

    /// How many entries the JSON array answer holds.
    pub fn count(&self) -> usize {
        match self.json() {
            Value::Array(items) => items.len(),
            other => panic!("not a JSON array: {other}"),
        }
    }

    /// Asserts the answer's status and that its text starts with
    /// `prefix`; a failure shows the text.
    #[track_caller]
    pub fn assert_status_and_prefix(&self, status: u16, prefix: &str) {
        assert_eq!(self.status, status, "{}", self.text);
        assert!(self.text.starts_with(prefix), "{}", self.text);
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    }

    pub fn index(&self) -> u64 {
        self.header("X-Consul-Index")
            .expect("X-Consul-Index")
            .parse()
            .unwrap()
    }
}

/// The initial management token of the sandboxes started with ACLs.
pub const ROOT: &str = "root-secret";

impl Api {
    /// A sandbox with Enterprise namespaces and partitions.
    pub async fn enterprise() -> Api {
        Api::start_with(Config {
            enterprise: true,
            ..Config::default()
        })
        .await
    }

    /// A sandbox with Enterprise features and ACLs (default deny, [`ROOT`]
    /// as the initial management token).
    pub async fn enterprise_with_acls() -> Api {
        Api::start_with(Config {
            enterprise: true,
            acl_default_policy: Some(consul_sandbox::AclDefaultPolicy::Deny),
            acl_initial_management_token: Some(ROOT.into()),
            ..Config::default()
        })
        .await
    }

    /// Raft applies so far.
    pub fn applies(&self) -> u64 {
        self.sb.stats().raft_applies
    }

    /// A request with `token` (none when empty) and a JSON body.
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> Resp {
        let mut r = self.http.request(method, self.url(path));
        if !token.is_empty() {
            r = r.header("X-Consul-Token", token);
        }
        if let Some(b) = body {
            r = r.json(&b);
        }
        self.send(r).await
    }

    /// A PUT of `body` with `token` (none when empty).
    pub async fn put_as(&self, path: &str, token: &str, body: Value) -> Resp {
        self.call(reqwest::Method::PUT, path, token, Some(body))
            .await
    }

    /// A GET with `token` (none when empty).
    pub async fn get_as(&self, path: &str, token: &str) -> Resp {
        self.call(reqwest::Method::GET, path, token, None).await
    }

    /// Makes, with [`ROOT`], the policy `name` with `rules` and a token
    /// linked to it; returns the token's (AccessorID, SecretID).
    pub async fn token_with_policy(&self, name: &str, rules: &str) -> (String, String) {
        let p = self
            .put_as(
                "/v1/acl/policy",
                ROOT,
                json!({"Name": name, "Rules": rules}),
            )
            .await;
        assert_eq!(p.status, 200, "{}", p.text);
        let t = self
            .put_as(
                "/v1/acl/token",
                ROOT,
                json!({"Policies": [{"ID": p.json()["ID"]}]}),
            )
            .await;
        assert_eq!(t.status, 200, "{}", t.text);
        let t = t.json();
        (
            t["AccessorID"].as_str().unwrap().to_string(),
            t["SecretID"].as_str().unwrap().to_string(),
        )
    }

    /// The SecretID of [`Api::token_with_policy`].
    pub async fn secret_with_policy(&self, name: &str, rules: &str) -> String {
        self.token_with_policy(name, rules).await.1
    }

    /// Waits until exactly `n` blocking queries are parked on the server.
    pub async fn wait_until_blocked(&self, n: u64) {
        wait_for(&format!("{n} open blocking queries"), || async {
            self.sb.stats().blocking_queries_open == n
        })
        .await;
    }

    pub async fn start() -> Api {
        Api::start_with(Config::default()).await
    }

    pub async fn start_with(config: Config) -> Api {
        let sb = Sandbox::start(config).await.unwrap();
        Api {
            sb,
            http: reqwest::Client::new(),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.sb.url(), path)
    }

    pub async fn send(&self, req: reqwest::RequestBuilder) -> Resp {
        Resp::read(req.send().await.unwrap()).await
    }

    /// A GET of `path` in a task of its own, for a blocking query the test
    /// answers with a write; [`woken`] reads its answer.
    pub fn spawn_get(&self, path: &str) -> tokio::task::JoinHandle<Resp> {
        let req = self.http.get(self.url(path));
        tokio::spawn(async move { Resp::read(req.send().await.unwrap()).await })
    }

    pub async fn put(&self, path: &str, body: &Value) -> Resp {
        self.send(
            self.http
                .put(self.url(path))
                .body(serde_json::to_vec(body).unwrap()),
        )
        .await
    }

    pub async fn put_raw(&self, path: &str, body: impl Into<reqwest::Body>) -> Resp {
        self.send(self.http.put(self.url(path)).body(body)).await
    }

    pub async fn get(&self, path: &str) -> Resp {
        self.send(self.http.get(self.url(path))).await
    }

    /// Registers `node` (address 10.0.0.1) with one service instance.
    pub async fn register(&self, node: &str, id: &str, name: &str, port: i64) -> Resp {
        let r = self
            .put(
                "/v1/catalog/register",
                &serde_json::json!({
                    "Node": node,
                    "Address": "10.0.0.1",
                    "Service": {"ID": id, "Service": name, "Port": port},
                }),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        r
    }
}

/// Sends raw bytes on a fresh connection and returns everything the server
/// answers until it closes the connection (send `Connection: close`).
pub async fn raw_http(addr: std::net::SocketAddr, request: &[u8]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(request).await.unwrap();
    // Half-close: the server sees EOF instead of waiting for more bytes.
    let _ = s.shutdown().await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(SOON, s.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}
