//! The client's HTTP behaviour against a tiny scripted server: which
//! answers are retried and how often, how errors are mapped, that the token
//! travels in the header and never in an error, that blocking reads outlive
//! the plain request timeout, and how a watch follows the index.
//!
//! The server answers each request with the next scripted answer (the last
//! one repeats) and records what it received, so tests assert request
//! counts and contents, never durations.

// Test helpers outside #[test] functions unwrap too: a failed fixture must
// stop the test, and clippy only exempts the test functions themselves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{fast_retry, web_registration};
use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use mirra_consul::{
    Client, ConsulConfig, DeregisterRequest, Error, QueryOptions, Service, TokenConfig,
    TokenSource, TxnOp, Verb, WatchOptions,
};

const SECRET: &str = "e3b0c442-98fc-1c14-9afb-f4c8996fb924";

#[derive(Clone)]
struct Canned {
    status: u16,
    body: String,
    index: Option<u64>,
    /// Hold the answer this long before sending it.
    delay: Duration,
    /// Hold the answer for the `wait` the request asked for (a blocking
    /// query that ends without a change).
    honour_wait: bool,
}

fn canned(status: u16, body: &str) -> Canned {
    Canned {
        status,
        body: body.to_owned(),
        index: None,
        delay: Duration::ZERO,
        honour_wait: false,
    }
}

fn at_index(status: u16, body: &str, index: u64) -> Canned {
    Canned {
        index: Some(index),
        ..canned(status, body)
    }
}

#[derive(Clone, Debug)]
struct Seen {
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
}

#[derive(Default)]
struct Script {
    answers: Mutex<VecDeque<Canned>>,
    seen: Mutex<Vec<Seen>>,
}

impl Script {
    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
    fn hits(&self) -> usize {
        self.seen.lock().unwrap().len()
    }
}

async fn answer(
    script: Arc<Script>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    script.seen.lock().unwrap().push(Seen {
        method,
        uri: uri.clone(),
        headers,
        body,
    });
    let next = {
        let mut q = script.answers.lock().unwrap();
        if q.len() > 1 {
            q.pop_front()
        } else {
            q.front().cloned()
        }
    };
    let Some(c) = next else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "script empty").into_response();
    };
    let mut delay = c.delay;
    if c.honour_wait {
        let wait_ms = uri
            .query()
            .unwrap_or("")
            .split('&')
            .find_map(|kv| kv.strip_prefix("wait="))
            .and_then(|v| v.strip_suffix("ms"))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        delay += Duration::from_millis(wait_ms);
    }
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let mut resp = (StatusCode::from_u16(c.status).unwrap(), c.body).into_response();
    if let Some(i) = c.index {
        resp.headers_mut()
            .insert("X-Consul-Index", i.to_string().parse().unwrap());
    }
    resp
}

async fn serve(answers: Vec<Canned>) -> (SocketAddr, Arc<Script>) {
    let script = Arc::new(Script {
        answers: Mutex::new(answers.into()),
        seen: Mutex::default(),
    });
    let s = script.clone();
    let app = Router::new()
        .fallback(move |m: Method, u: Uri, h: HeaderMap, b: Bytes| answer(s.clone(), m, u, h, b));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (addr, script)
}

fn client(addr: SocketAddr, max_attempts: u32) -> Client {
    let mut c = ConsulConfig::new(&addr.to_string()).unwrap();
    c.token = Some(TokenConfig {
        secret: mirra_consul::Token::new(SECRET),
        source: TokenSource::EnvFile("/var/run/secrets/consul/token".into()),
    });
    c.retry = fast_retry(max_attempts);
    Client::new(c).unwrap()
}

/// A client of `addr` without a token, making `max_attempts` tries per
/// call, its configuration changed by `edit`.
fn tokenless_client(
    addr: SocketAddr,
    max_attempts: u32,
    edit: impl FnOnce(&mut ConsulConfig),
) -> Client {
    let mut c = ConsulConfig::new(&addr.to_string()).unwrap();
    c.retry = fast_retry(max_attempts);
    edit(&mut c);
    Client::new(c).unwrap()
}

fn svc_op(verb: Verb, i: usize) -> TxnOp {
    TxnOp::Service {
        verb,
        node: "k8s-sync".into(),
        service: Service {
            id: format!("web-{i}"),
            service: "web".into(),
            port: 80,
            modify_index: if verb == Verb::Cas { 3 } else { 0 },
            ..Service::default()
        },
    }
}

/// Watch options for the scripted server: short waits, little spacing.
fn fast_watch() -> WatchOptions {
    WatchOptions {
        wait: Duration::from_millis(50),
        min_interval: Duration::from_millis(1),
        ..WatchOptions::default()
    }
}

fn assert_no_secret(e: &Error) {
    let shown = format!("{e} | {e:?}");
    assert!(!shown.contains(SECRET), "secret leaked: {shown}");
}

#[tokio::test]
async fn retries_5xx_then_succeeds() {
    let (addr, script) = serve(vec![
        canned(500, "boom"),
        canned(503, ""),
        canned(200, "true"),
    ])
    .await;
    client(addr, 4)
        .register(&web_registration("web-1"))
        .await
        .unwrap();
    assert_eq!(script.hits(), 3);
    let seen = script.seen();
    assert!(
        seen.iter()
            .all(|s| s.method == Method::PUT && s.uri.path() == "/v1/catalog/register")
    );
    // Every attempt carries the same body.
    assert!(seen.windows(2).all(|w| w[0].body == w[1].body));
    let body: serde_json::Value = serde_json::from_slice(&seen[0].body).unwrap();
    assert_eq!(body["Service"]["ID"], "web-1");
}

#[tokio::test]
async fn retries_are_bounded() {
    let (addr, script) = serve(vec![canned(502, "bad gateway")]).await;
    let err = client(addr, 3)
        .deregister(&DeregisterRequest::service("n", "s"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Server { status: 502, .. }), "{err}");
    assert_eq!(script.hits(), 3);
}

#[tokio::test]
async fn no_retry_on_403_and_token_named_by_source_only() {
    let (addr, script) = serve(vec![canned(
        403,
        "Permission denied: token with AccessorID 'a1' lacks node:write",
    )])
    .await;
    let err = client(addr, 5)
        .register(&web_registration("web-1"))
        .await
        .unwrap_err();
    assert_eq!(script.hits(), 1, "403 must not be retried");
    assert_eq!(err.class(), "permission_denied");
    assert!(!err.is_retryable());
    let shown = err.to_string();
    assert!(shown.contains("catalog.register"), "{shown}");
    assert!(shown.contains("CONSUL_HTTP_TOKEN_FILE"), "{shown}");
    assert_no_secret(&err);
    // The token went in the header, not the URL.
    let seen = script.seen();
    assert_eq!(seen[0].headers.get("x-consul-token").unwrap(), SECRET);
    assert!(!seen[0].uri.to_string().contains(SECRET));
}

#[tokio::test]
async fn no_retry_on_other_4xx() {
    for (status, class) in [
        (400, "bad_request"),
        (404, "not_found"),
        (413, "too_large"),
        (405, "bad_request"),
    ] {
        let (addr, script) = serve(vec![canned(status, "nope")]).await;
        let err = client(addr, 5)
            .services(&QueryOptions::default())
            .await
            .unwrap_err();
        assert_eq!(err.class(), class);
        assert_eq!(script.hits(), 1, "status {status} must not be retried");
        assert_no_secret(&err);
    }
}

#[tokio::test]
async fn rate_limited_429_is_retried() {
    let (addr, script) = serve(vec![
        canned(429, "rate limit exceeded"),
        at_index(200, "{}", 9),
    ])
    .await;
    let v = client(addr, 3)
        .services(&QueryOptions::default())
        .await
        .unwrap();
    assert_eq!(v.index, 9);
    assert_eq!(script.hits(), 2);
}

#[tokio::test]
async fn no_cluster_leader_is_retried_and_reported() {
    let (addr, script) = serve(vec![canned(500, "No cluster leader")]).await;
    let err = client(addr, 3)
        .nodes(&QueryOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::LeaderUnavailable {
                operation: "catalog.nodes"
            }
        ),
        "{err}"
    );
    assert_eq!(err.class(), "leader_unavailable");
    assert_eq!(script.hits(), 3);
}

#[tokio::test]
async fn cas_txn_not_retried_after_ambiguous_500_but_set_txn_is() {
    let (addr, script) = serve(vec![canned(500, "raft apply timed out")]).await;
    let err = client(addr, 4)
        .txn(&[svc_op(Verb::Cas, 1)])
        .await
        .unwrap_err();
    assert_eq!(err.class(), "server_error");
    assert_eq!(
        script.hits(),
        1,
        "a cas whose outcome is unknown must not be resent"
    );

    let (addr, script) = serve(vec![
        canned(500, "raft apply timed out"),
        canned(200, r#"{"Results":[],"Errors":null}"#),
    ])
    .await;
    client(addr, 4).txn(&[svc_op(Verb::Set, 1)]).await.unwrap();
    assert_eq!(
        script.hits(),
        2,
        "an all-set transaction is idempotent and retried"
    );

    // No leader means nothing was applied: even a cas may be resent.
    let (addr, script) = serve(vec![
        canned(500, "No cluster leader"),
        canned(200, r#"{"Results":[]}"#),
    ])
    .await;
    client(addr, 4).txn(&[svc_op(Verb::Cas, 1)]).await.unwrap();
    assert_eq!(script.hits(), 2);
}

#[tokio::test]
async fn txn_body_and_409_mapping() {
    let body = r#"{"Results":null,"Errors":[{"OpIndex":1,"What":"failed to insert service: node missing"}]}"#;
    let (addr, script) = serve(vec![canned(409, body)]).await;
    let ops = vec![
        svc_op(Verb::Set, 0),
        svc_op(Verb::Set, 1),
        svc_op(Verb::Set, 2),
    ];
    let err = client(addr, 4).txn(&ops).await.unwrap_err();
    assert_eq!(script.hits(), 1, "a rollback is not retried");
    let failed = err.failed_ops();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].index, Some(1));
    assert_eq!(failed[0].op.as_ref(), Some(&ops[1]));
    assert!(failed[0].what.contains("node missing"));

    let seen = script.seen();
    assert_eq!(seen[0].uri.path(), "/v1/txn");
    let sent: serde_json::Value = serde_json::from_slice(&seen[0].body).unwrap();
    assert_eq!(sent[2]["Service"]["Verb"], "set");
    assert_eq!(sent[2]["Service"]["Node"], "k8s-sync");
    assert_eq!(sent[2]["Service"]["Service"]["ID"], "web-2");
}

#[tokio::test]
async fn apply_ops_reports_global_indexes_and_unapplied_ops() {
    let ok = r#"{"Results":[],"Errors":null}"#;
    let rolled = r#"{"Errors":[{"OpIndex":2,"What":"index mismatch"}]}"#;
    let (addr, script) = serve(vec![canned(200, ok), canned(409, rolled), canned(200, ok)]).await;
    let client = tokenless_client(addr, 3, |c| c.txn_max_ops = 4);

    let ops: Vec<TxnOp> = (0..10).map(|i| svc_op(Verb::Set, i)).collect();
    let err = client.apply_ops(ops.clone()).await.unwrap_err();
    assert_eq!(script.hits(), 2, "stops at the failing transaction");
    assert_eq!(err.committed_transactions, 1);
    assert_eq!(err.committed_ops, 4);
    assert_eq!(err.unapplied, ops[4..].to_vec(), "nothing is lost");
    let failed = err.source.failed_ops();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].index, Some(6), "index into the caller's list");
    assert_eq!(failed[0].op.as_ref(), Some(&ops[6]));

    // Each transaction carried at most 4 operations.
    for s in script.seen() {
        let v: serde_json::Value = serde_json::from_slice(&s.body).unwrap();
        assert_eq!(v.as_array().unwrap().len(), 4);
    }
}

#[tokio::test]
async fn empty_txn_sends_nothing() {
    let (addr, script) = serve(vec![canned(500, "unexpected")]).await;
    let c = client(addr, 2);
    assert!(c.txn(&[]).await.unwrap().is_empty());
    let summary = c.apply_ops(Vec::new()).await.unwrap();
    assert_eq!(summary.transactions, 0);
    assert_eq!(script.hits(), 0);
}

#[tokio::test]
async fn garbage_success_body_is_a_decode_error_not_retried() {
    let (addr, script) = serve(vec![at_index(200, "<html>proxy login</html>", 5)]).await;
    let err = client(addr, 4)
        .node_services("k8s-sync", &QueryOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.class(), "decode");
    assert!(!err.is_retryable());
    assert_eq!(script.hits(), 1);
}

#[tokio::test]
async fn connection_refused_is_connect_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let err = client(addr, 2)
        .services(&QueryOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.class(), "connect", "{err}");
    assert!(err.is_retryable());
    assert!(err.certainly_not_applied());
    assert_no_secret(&err);
}

#[tokio::test]
async fn slow_answer_times_out_and_reads_are_retried() {
    let slow = Canned {
        delay: Duration::from_secs(5),
        ..canned(200, "{}")
    };
    let (addr, script) = serve(vec![slow]).await;
    let err = tokenless_client(addr, 2, |c| c.request_timeout = Duration::from_millis(100))
        .services(&QueryOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Timeout {
                operation: "catalog.services",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(script.hits(), 2);
}

#[tokio::test]
async fn blocking_read_outlives_plain_request_timeout() {
    // The server holds the answer for the whole wait, like Consul when
    // nothing changes. The plain timeout is far shorter than the wait; the
    // blocking read must still get its answer in one request.
    let held = Canned {
        honour_wait: true,
        ..at_index(200, r#"{"web":["k8s"]}"#, 12)
    };
    let (addr, script) = serve(vec![held]).await;
    let client = tokenless_client(addr, 1, |c| c.request_timeout = Duration::from_secs(1));
    let v = client
        .services(&QueryOptions::blocking(12, Duration::from_secs(3)))
        .await
        .unwrap();
    assert_eq!(v.index, 12);
    assert_eq!(v.value["web"], vec!["k8s".to_owned()]);
    assert_eq!(script.hits(), 1);
    let q = script.seen()[0].uri.query().unwrap_or("").to_owned();
    assert!(q.contains("index=12") && q.contains("wait=3000ms"), "{q}");
}

#[tokio::test]
async fn common_params_and_filters_reach_the_server() {
    let (addr, script) = serve(vec![at_index(200, "[]", 3)]).await;
    let mut cfg = ConsulConfig::new(&format!("http://{addr}/")).unwrap();
    cfg.datacenter = Some("dc2".into());
    cfg.namespace = Some("team-a".into());
    cfg.partition = Some("p1".into());
    let client = Client::new(cfg).unwrap();
    let q = QueryOptions {
        tags: vec!["k8s".into()],
        node_meta: vec![("external-source".into(), "kubernetes".into())],
        passing_only: true,
        ..QueryOptions::default()
    };
    client.health_service("web", &q).await.unwrap();
    let uri = script.seen()[0].uri.clone();
    assert_eq!(uri.path(), "/v1/health/service/web");
    assert_eq!(
        uri.query(),
        Some(
            "dc=dc2&ns=team-a&partition=p1&tag=k8s&node-meta=external-source%3Akubernetes&passing=true"
        )
    );
}

#[tokio::test]
async fn watch_follows_index_yields_only_changes_and_resets_backwards() {
    let ns =
        |n: &str| format!(r#"{{"Node":{{"Node":"{n}","Address":"127.0.0.1"}},"Services":null}}"#);
    let (addr, script) = serve(vec![
        at_index(200, &ns("a"), 5),
        at_index(200, &ns("a"), 5), // wait ended, nothing changed
        at_index(200, &ns("b"), 7),
        at_index(200, &ns("c"), 3), // index went backwards (snapshot restore)
        at_index(200, &ns("c"), 3), // the reset read
        Canned {
            honour_wait: true,
            ..at_index(200, &ns("c"), 3)
        },
    ])
    .await;
    let c = client(addr, 1);
    let opts = fast_watch();
    // Drive the stream in its own task, as a consumer would, so that it keeps
    // sending requests between the items it yields.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut stream = Box::pin(c.watch_node_services("k8s-sync", opts));
    let driver = tokio::spawn(async move {
        while let Some(item) = stream.next().await {
            if tx.send(item).is_err() {
                break;
            }
        }
    });
    let mut got = Vec::new();
    for _ in 0..3 {
        let v = rx.recv().await.unwrap().unwrap();
        got.push((v.index, v.value.node.unwrap().node));
    }
    assert_eq!(got, vec![(5, "a".into()), (7, "b".into()), (3, "c".into())]);
    // Let the watch send the reset read and one more blocking read.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while script.hits() < 6 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let indexes: Vec<Option<String>> = script
        .seen()
        .iter()
        .take(6)
        .map(|s| {
            s.uri
                .query()
                .unwrap_or("")
                .split('&')
                .find_map(|kv| kv.strip_prefix("index=").map(str::to_owned))
        })
        .collect();
    assert_eq!(
        indexes,
        vec![
            None,
            Some("5".into()),
            Some("5".into()),
            Some("7".into()),
            None, // reset to 0 after the index went backwards
            Some("3".into()),
        ]
    );
    assert!(rx.try_recv().is_err(), "unchanged answers are not yielded");
    driver.abort();
}

#[tokio::test]
async fn watch_yields_errors_then_recovers() {
    let (addr, script) = serve(vec![
        canned(500, "boom"),
        canned(403, "Permission denied"),
        at_index(200, r#"{"Node":null,"Services":null}"#, 4),
    ])
    .await;
    let c = client(addr, 1);
    let opts = fast_watch();
    let mut stream = Box::pin(c.watch_node_services("missing-node", opts));
    let e1 = stream.next().await.unwrap().unwrap_err();
    assert_eq!(e1.class(), "server_error");
    let e2 = stream.next().await.unwrap().unwrap_err();
    assert_eq!(e2.class(), "permission_denied");
    assert_no_secret(&e2);
    let v = stream.next().await.unwrap().unwrap();
    assert_eq!(v.index, 4);
    assert!(v.value.node.is_none(), "an unknown node reads as no node");
    assert_eq!(script.hits(), 3);
}

/// `/v1/health/node/:node` as Consul documents it: a JSON array of checks,
/// node-level ones with empty `ServiceID`; the watch follows its index.
#[tokio::test]
async fn health_node_decodes_checks_and_watch_follows_its_index() {
    let doc = r#"[
      {"ID":"40e4a748-2192-161a-0510-9bf59fe950b5","Node":"foobar","CheckID":"serfHealth",
       "Name":"Serf Health Status","Status":"passing","Notes":"","Output":"",
       "ServiceID":"","ServiceName":"","ServiceTags":[],"Namespace":"default",
       "CreateIndex":10,"ModifyIndex":10},
      {"ID":"40e4a748-2192-161a-0510-9bf59fe950b5","Node":"foobar","CheckID":"service:redis",
       "Name":"Service 'redis' check","Status":"critical","Notes":"","Output":"",
       "ServiceID":"redis","ServiceName":"redis","ServiceTags":["primary"],"Type":"ttl",
       "Namespace":"default","CreateIndex":11,"ModifyIndex":12}
    ]"#;
    let (addr, script) = serve(vec![
        at_index(200, doc, 12),
        Canned {
            honour_wait: true,
            ..at_index(200, "[]", 15)
        },
    ])
    .await;
    let c = client(addr, 1);
    let v = c
        .health_node("foobar", &QueryOptions::default())
        .await
        .unwrap();
    assert_eq!(v.index, 12);
    assert_eq!(v.value.len(), 2);
    let svc = v.value.iter().find(|h| h.service_id == "redis").unwrap();
    assert_eq!(
        (
            svc.check_id.as_str(),
            svc.status.as_str(),
            svc.r#type.as_str()
        ),
        ("service:redis", "critical", "ttl")
    );
    assert_eq!(svc.node, "foobar");
    let seen = script.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, Method::GET);
    assert_eq!(seen[0].uri.path(), "/v1/health/node/foobar");

    let opts = fast_watch();
    let mut stream = Box::pin(c.watch_health_node("foobar", opts));
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!((first.index, first.value.len()), (15, 0));
    // The next request blocks on the index just returned.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut next = None;
    while next.is_none() && tokio::time::Instant::now() < deadline {
        tokio::select! {
            _ = stream.next() => {}
            () = tokio::time::sleep(Duration::from_millis(10)) => {}
        }
        next = script.seen().get(2).cloned();
    }
    let q = next.unwrap().uri.query().unwrap_or("").to_owned();
    assert!(q.split('&').any(|kv| kv == "index=15"), "{q}");
    assert!(q.split('&').any(|kv| kv.starts_with("wait=")), "{q}");
}

// ----- auth-method login against scripted answers ---------------------------

const BEARER: &str = "eyJhbGciOiJSUzI1NiJ9.bearer-payload.sig";

fn login_answer(accessor: &str, secret: &str) -> Canned {
    canned(
        200,
        &serde_json::json!({"AccessorID": accessor, "SecretID": secret,
                            "AuthMethod": "k8s", "Local": true})
        .to_string(),
    )
}

/// A client logging in with auth method `k8s` and the bearer token in the
/// file returned with it (which must live as long as the client), its
/// configuration changed by `edit`.
fn login_client(
    addr: SocketAddr,
    edit: impl FnOnce(&mut ConsulConfig),
) -> (Client, tempfile::NamedTempFile) {
    let bearer = bearer_file();
    let client = tokenless_client(addr, 3, |c| {
        c.login = Some(mirra_consul::LoginConfig {
            bearer_token_file: bearer.path().to_owned(),
            meta: [("pod".to_owned(), "consul/sync-0".to_owned())].into(),
            ..mirra_consul::LoginConfig::new("k8s")
        });
        edit(c);
    });
    (client, bearer)
}

fn bearer_file() -> tempfile::NamedTempFile {
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), format!("{BEARER}\n")).unwrap();
    f
}

fn token_of(s: &Seen) -> Option<&str> {
    s.headers.get("X-Consul-Token").map(|v| v.to_str().unwrap())
}

#[tokio::test]
async fn a_second_acl_not_found_after_the_new_login_is_returned() {
    let (addr, script) = serve(vec![
        login_answer("acc-1", "secret-1"),
        canned(403, "ACL not found"),
        login_answer("acc-2", "secret-2"),
        canned(403, "ACL not found"),
        canned(500, "nothing more is expected"),
    ])
    .await;
    let (client, _bearer) = login_client(addr, |c| {
        c.datacenter = Some("dc2".into());
        c.partition = Some("part-a".into());
        c.login.as_mut().unwrap().datacenter = Some("dc1".into());
    });
    let err = client
        .register(&web_registration("web-1"))
        .await
        .unwrap_err();
    assert!(err.is_acl_not_found(), "{err}");
    assert!(!err.is_retryable());
    assert!(err.to_string().contains("login token acc-2"), "{err}");
    assert!(!format!("{err} {err:?}").contains("secret-2"));
    let seen = script.seen();
    let paths: Vec<(&Method, &str)> = seen.iter().map(|s| (&s.method, s.uri.path())).collect();
    assert_eq!(
        paths,
        [
            (&Method::POST, "/v1/acl/login"),
            (&Method::PUT, "/v1/catalog/register"),
            (&Method::POST, "/v1/acl/login"),
            (&Method::PUT, "/v1/catalog/register"),
        ]
    );
    // A login carries no token; the login's own datacenter wins over the
    // client's, its partition falls back to the client's.
    assert_eq!(token_of(&seen[0]), None);
    assert_eq!(seen[0].uri.query(), Some("dc=dc1&partition=part-a"));
    let body: serde_json::Value = serde_json::from_slice(&seen[0].body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"AuthMethod": "k8s", "BearerToken": BEARER,
                           "Meta": {"pod": "consul/sync-0"}})
    );
    assert_eq!(seen[2].body, seen[0].body);
    // Each request carries the token of the login before it.
    assert_eq!(token_of(&seen[1]), Some("secret-1"));
    assert_eq!(token_of(&seen[3]), Some("secret-2"));
    assert_eq!(seen[1].uri.query(), Some("dc=dc2&partition=part-a"));
    assert_eq!(seen[1].body, seen[3].body);
}

#[tokio::test]
async fn a_permission_denied_is_not_a_reason_to_log_in_again() {
    let (addr, script) = serve(vec![
        login_answer("acc-1", "secret-1"),
        canned(403, "Permission denied: token with AccessorID 'acc-1' lacks permission 'node:write' on \"k8s-sync\""),
    ])
    .await;
    let (client, _bearer) = login_client(addr, |_| {});
    let err = client
        .register(&web_registration("web-1"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::PermissionDenied { .. }), "{err}");
    assert_eq!(script.hits(), 2);
}

#[tokio::test]
async fn a_login_is_not_resent_after_a_5xx_and_never_shows_the_bearer_token() {
    let (addr, script) = serve(vec![canned(
        500,
        &format!("failed to parse and validate JWT: {BEARER} is malformed"),
    )])
    .await;
    let (client, _bearer) = login_client(addr, |_| {});
    let err = client.login().await.unwrap_err();
    assert!(matches!(err, Error::Login { .. }), "{err}");
    assert!(err.is_retryable());
    let shown = format!("{err} | {err:?}");
    assert!(!shown.contains(BEARER), "{shown}");
    assert!(shown.contains("<redacted>"), "{shown}");
    assert_eq!(script.hits(), 1);
}

#[tokio::test]
async fn a_garbage_login_answer_is_a_login_error_without_its_text() {
    let (addr, script) = serve(vec![
        canned(
            200,
            "{\"AccessorID\": \"a\", \"SecretID\": [\"leaked-secret\"]}",
        ),
        canned(200, "<html>proxy</html>"),
    ])
    .await;
    let (client, _bearer) = login_client(addr, |_| {});
    for _ in 0..2 {
        let err = client.login().await.unwrap_err();
        assert!(matches!(err, Error::Login { .. }), "{err}");
        assert!(!format!("{err:?}").contains("leaked-secret"));
    }
    assert_eq!(script.hits(), 2);
    assert_eq!(client.login_accessor_id(), None);
}

#[tokio::test]
async fn logout_sends_the_login_token_to_the_login_partition() {
    let (addr, script) = serve(vec![
        login_answer("acc-1", "secret-1"),
        canned(200, "true"),
        login_answer("acc-2", "secret-2"),
        canned(403, "ACL not found"),
        canned(500, "nothing more is expected"),
    ])
    .await;
    let (client, _bearer) = login_client(addr, |c| {
        c.login.as_mut().unwrap().partition = Some("login-part".into());
        c.login.as_mut().unwrap().namespace = Some("login-ns".into());
        c.namespace = Some("apps".into());
    });
    client.login().await.unwrap();
    client.logout().await.unwrap();
    let seen = script.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1].uri.path(), "/v1/acl/logout");
    assert_eq!(seen[1].method, Method::POST);
    assert_eq!(token_of(&seen[1]), Some("secret-1"));
    assert_eq!(
        seen[1].uri.query(),
        Some("ns=login-ns&partition=login-part")
    );
    // A token Consul no longer knows counts as logged out.
    client.login().await.unwrap();
    assert_eq!(client.login_accessor_id().as_deref(), Some("acc-2"));
    client.logout().await.unwrap();
    assert_eq!(client.login_accessor_id(), None);
    assert_eq!(script.hits(), 4);
}

// ----- Enterprise namespaces -------------------------------------------------

#[tokio::test]
async fn namespaces_are_created_with_a_policy_link_and_read_in_the_partition() {
    let stored = serde_json::json!({
        "Name": "apps", "Description": "", "Partition": "part-a",
        "ACLs": {"PolicyDefaults": [{"ID": "p-1", "Name": "cross-namespace-policy"}],
                 "RoleDefaults": []},
        "CreateIndex": 20, "ModifyIndex": 20
    })
    .to_string();
    let (addr, script) = serve(vec![
        canned(200, &stored),
        canned(200, &stored),
        canned(404, "Namespace not found"),
        canned(403, "Permission denied"),
    ])
    .await;
    let client = tokenless_client(addr, 1, |c| {
        c.partition = Some("part-a".into());
        c.namespace = Some("ignored".into());
        c.datacenter = Some("dc1".into());
    });

    let ns = mirra_consul::Namespace::with_policy_defaults("apps", ["cross-namespace-policy"]);
    let created = client.create_namespace(&ns).await.unwrap();
    assert_eq!(created.create_index, 20);
    assert_eq!(created.acls.as_ref().unwrap().policy_defaults[0].id, "p-1");
    let read = client.namespace("apps").await.unwrap().unwrap();
    assert_eq!(read, created);
    assert_eq!(client.namespace("missing").await.unwrap(), None);
    let err = client.namespace("secret-ns").await.unwrap_err();
    assert!(matches!(err, Error::PermissionDenied { .. }), "{err}");

    let seen = script.seen();
    assert_eq!(seen[0].method, Method::PUT);
    assert_eq!(seen[0].uri.path(), "/v1/namespace");
    assert_eq!(seen[0].uri.query(), Some("partition=part-a"));
    let body: serde_json::Value = serde_json::from_slice(&seen[0].body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"Name": "apps",
                           "ACLs": {"PolicyDefaults": [{"Name": "cross-namespace-policy"}]}})
    );
    assert_eq!(seen[1].method, Method::GET);
    assert_eq!(seen[1].uri.path(), "/v1/namespace/apps");
    assert_eq!(seen[1].uri.query(), Some("partition=part-a"));
    assert_eq!(seen[2].uri.path(), "/v1/namespace/missing");
    assert_eq!(seen.len(), 4);
}

#[tokio::test]
async fn a_namespace_create_is_not_resent_after_a_5xx() {
    let (addr, script) = serve(vec![canned(500, "rpc error")]).await;
    let client = tokenless_client(addr, 4, |_| {});
    let err = client
        .create_namespace(&mirra_consul::Namespace::with_policy_defaults(
            "apps",
            ["p"],
        ))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Server { status: 500, .. }), "{err}");
    assert_eq!(script.hits(), 1);
    assert_eq!(script.seen()[0].uri.query(), None);
}

/// Consul's `/v1/txn` takes the tenancy of a catalog operation from the
/// operation's body only (it ignores `?ns=` on writes), so a client
/// configured for a namespace must write it into every operation.
#[tokio::test]
async fn txn_ops_carry_the_client_namespace_and_partition_in_their_bodies() {
    let (addr, script) = serve(vec![canned(200, r#"{"Results":[],"Errors":null}"#)]).await;
    let client = tokenless_client(addr, 1, |c| {
        c.namespace = Some("team-a".into());
        c.partition = Some("p1".into());
    });
    let check = TxnOp::Check {
        verb: Verb::Cas,
        check: mirra_consul::HealthCheck {
            node: "k8s-sync".into(),
            check_id: "default/web-1".into(),
            service_id: "web-1".into(),
            service_name: "web".into(),
            ..mirra_consul::HealthCheck::default()
        },
    };
    let node = TxnOp::Node {
        verb: Verb::Cas,
        node: mirra_consul::Node {
            node: "k8s-sync".into(),
            ..mirra_consul::Node::default()
        },
    };
    let ops = vec![
        node,
        svc_op(Verb::Cas, 1),
        check,
        svc_op(Verb::DeleteCas, 2),
    ];
    let summary = client.apply_ops(ops.clone()).await.unwrap();
    assert_eq!(summary.transactions, 1);

    let seen = script.seen();
    assert_eq!(seen.len(), 1);
    let body: serde_json::Value = serde_json::from_slice(&seen[0].body).unwrap();
    assert_eq!(body[0]["Node"]["Node"]["Partition"], "p1");
    assert_eq!(body[0]["Node"]["Node"].get("Namespace"), None);
    for (i, kind) in [(1, "Service"), (3, "Service"), (2, "Check")] {
        assert_eq!(body[i][kind][kind]["Namespace"], "team-a", "op {i}");
        assert_eq!(body[i][kind][kind]["Partition"], "p1", "op {i}");
    }

    // Without a namespace or partition the bodies are what the caller built.
    let (addr, script) = serve(vec![canned(200, r#"{"Results":[],"Errors":null}"#)]).await;
    let plain = tokenless_client(addr, 1, |_| {});
    plain.apply_ops(ops.clone()).await.unwrap();
    let body: serde_json::Value = serde_json::from_slice(&script.seen()[0].body).unwrap();
    assert_eq!(body, serde_json::to_value(&ops).unwrap());
}

/// A rollback names the caller's operations (not the filled-in copies).
#[tokio::test]
async fn a_rolled_back_namespaced_txn_names_the_callers_ops() {
    let (addr, _script) = serve(vec![canned(
        409,
        r#"{"Results":null,"Errors":[{"OpIndex":0,"What":"Permission denied"}]}"#,
    )])
    .await;
    let client = tokenless_client(addr, 1, |c| c.namespace = Some("team-a".into()));
    let op = svc_op(Verb::Set, 1);
    let err = client.txn(std::slice::from_ref(&op)).await.unwrap_err();
    let Error::TxnRolledBack { failed } = err else {
        panic!("{err}")
    };
    assert_eq!(failed[0].op.as_ref(), Some(&op));
}

fn value_parser() -> mirra_consul::BodyParser<serde_json::Value> {
    Arc::new(|body| serde_json::from_reader(body).map_err(|e| e.to_string()))
}

#[tokio::test]
async fn a_parsed_read_is_retried_as_any_read_and_error_bodies_are_read_whole() {
    let (addr, script) = serve(vec![
        canned(500, "boom"),
        at_index(200, r#"{"Node":{"Node":"k8s-sync"},"Services":[]}"#, 9),
    ])
    .await;
    let got = client(addr, 4)
        .node_services_parsed("k8s-sync", &QueryOptions::default(), &value_parser())
        .await
        .unwrap();
    assert_eq!(got.index, 9);
    assert_eq!(got.value["Node"]["Node"], "k8s-sync");
    assert_eq!(
        script.hits(),
        2,
        "the 500 was retried, the parser saw one body"
    );

    // A refusal's body is the error's message, never handed to the parser.
    let (addr, script) = serve(vec![canned(403, "ACL not found")]).await;
    let err = client(addr, 4)
        .health_node_parsed("k8s-sync", &QueryOptions::default(), &value_parser())
        .await
        .unwrap_err();
    assert!(err.is_acl_not_found(), "{err}");
    assert_eq!(script.hits(), 1);
    assert_no_secret(&err);
}

#[tokio::test]
async fn a_body_cut_off_mid_way_is_a_transport_error_not_a_decode_error() {
    // A server that promises 4,096 bytes, sends a few hundred and hangs up,
    // on every connection: the reading side's failure is what is reported
    // (and retried, as for any read), not the parser's end of input.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut sock, _)) = listener.accept().await {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut buf = [0u8; 4096];
            let _ = sock.read(&mut buf).await;
            let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                        X-Consul-Index: 7\r\nContent-Length: 4096\r\n\r\n";
            let part = format!(
                "{{\"Node\":{{\"Node\":\"k8s-sync\"}},\"Services\":[{}",
                r#"{"ID":"web-1","Service":"web","Port":80},"#.repeat(8)
            );
            let _ = sock.write_all(head.as_bytes()).await;
            let _ = sock.write_all(part.as_bytes()).await;
            let _ = sock.shutdown().await;
        }
    });
    let err = client(addr, 2)
        .node_services_parsed("k8s-sync", &QueryOptions::default(), &value_parser())
        .await
        .unwrap_err();
    assert_eq!(err.class(), "transport", "{err}");
    assert!(
        matches!(
            err,
            Error::Transport {
                operation: "catalog.node_services",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        accepted.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "a read is retried after a broken body"
    );
    assert_no_secret(&err);

    // The same for a body read whole.
    let err = client(addr, 2)
        .node_services("k8s-sync", &QueryOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.class(), "transport", "{err}");
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 4);
}
