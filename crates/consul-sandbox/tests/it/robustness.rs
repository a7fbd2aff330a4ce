//! The server never panics and never applies anything for garbage: random
//! bodies and query strings on every endpoint get the statuses Consul gives
//! them (see `allowed_statuses`), no Raft apply happens, nothing stored
//! moves, and the sandbox keeps serving afterwards.

use crate::common;

use common::Api;
use proptest::prelude::*;

const PATHS: [&str; 8] = [
    "/v1/catalog/register",
    "/v1/catalog/deregister",
    "/v1/txn",
    "/v1/catalog/service/web",
    "/v1/catalog/node-services/n1",
    "/v1/health/service/web",
    "/v1/sandbox/faults",
    "/v1/catalog/services",
];

fn arb_body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..200),
        "[\\[\\]{}\":,a-zA-Z0-9 ]{0,120}".prop_map(String::into_bytes),
        Just(br#"[{"Service":{"Verb":"set","Node":null,"Service":{"Port":1e400}}}]"#.to_vec()),
        Just(br#"{"Node":"n","Address":"a","Checks":[null,1]}"#.to_vec()),
    ]
}

/// The statuses Consul can give `method path` for a garbage body and query
/// string, from its HTTP API docs and handlers:
/// - a method the endpoint does not serve: 405 (Consul registers each
///   endpoint with its methods; writes are PUT-only, reads GET-only);
/// - register/deregister: 400 "Request decode failed" or a missing field;
///   500 when the query string itself does not parse. One body is not
///   garbage to deregister: an object naming a node (`{"Node":"n",...}`),
///   since Consul's decoder ignores unknown fields and deregistering what is
///   absent succeeds; Consul answers 200 and still makes the Raft apply;
/// - txn: 400 "Failed to parse body", 409 when an operation is refused
///   (unknown verb, missing node), 413 above the operation limit, 500 for an
///   unparsable query or an unknown `dc`, and 200 only for what applies
///   nothing: an empty or read-only list;
/// - reads: 200 (unknown parameters are ignored), 400 for a bad `index`,
///   `wait`, `ns`, `partition` or `filter`, 500 for an unknown `dc` ("No path
///   to datacenter") or an unparsable query;
/// - the sandbox's own fault endpoint: POST only, 400 for anything that is
///   not a fault rule.
///
/// Never 404 (all paths exist), never 403 (ACLs are off), never a 2xx for a
/// register, whose required Node and Address garbage does not supply.
fn allowed_statuses(path: &str, method: &reqwest::Method) -> &'static [u16] {
    use reqwest::Method;
    let served: &[Method] = match path {
        "/v1/catalog/register" | "/v1/catalog/deregister" | "/v1/txn" => &[Method::PUT],
        "/v1/sandbox/faults" => &[Method::POST, Method::DELETE],
        _ => &[Method::GET],
    };
    if !served.contains(method) {
        return &[405];
    }
    match path {
        "/v1/catalog/register" => &[400, 500],
        "/v1/catalog/deregister" => &[200, 400, 500],
        "/v1/txn" => &[200, 400, 409, 413, 500],
        "/v1/sandbox/faults" => &[400],
        _ => &[200, 400, 500],
    }
}

/// What must not move: everything stored, read both from the counters and
/// through the API (content, ModifyIndexes and X-Consul-Index).
#[derive(Debug, PartialEq)]
struct Snapshot {
    nodes: u64,
    services: u64,
    checks: u64,
    faults_injected: u64,
    catalog_nodes: (u64, String),
    catalog_services: (u64, String),
    node_services: (u64, String),
    health_web: (u64, String),
}

async fn snapshot(api: &Api) -> Snapshot {
    let stats = api.sb.stats();
    let read = |path: &'static str| async move {
        let r = api.get(path).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text);
        (r.index(), r.text)
    };
    Snapshot {
        nodes: stats.nodes,
        services: stats.services,
        checks: stats.checks,
        faults_injected: stats.faults_injected,
        catalog_nodes: read("/v1/catalog/nodes").await,
        catalog_services: read("/v1/catalog/services").await,
        node_services: read("/v1/catalog/node-services/n1").await,
        health_web: read("/v1/health/service/web").await,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn garbage_never_crashes_or_applies(
        bodies in prop::collection::vec((0..PATHS.len(), arb_body(), "[a-z=&%0-9;+]{0,20}"), 1..12)
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let api = Api::start().await;
            // Something for garbage to damage: the node and service the
            // paths above name.
            api.register("n1", "web-1", "web", 80).await;
            let before = snapshot(&api).await;
            let raft_before = api.sb.stats();
            prop_assert_eq!(raft_before.raft_applies, 1);
            // Writes Consul accepted (and so made a Raft apply for): only
            // no-op deregisters, see `allowed_statuses`.
            let mut accepted_writes = 0;
            for (p, body, query) in bodies {
                for method in [reqwest::Method::PUT, reqwest::Method::GET, reqwest::Method::POST] {
                    let url = format!("{}?{}", api.url(PATHS[p]), query);
                    let r = api.send(api.http.request(method.clone(), url).body(body.clone())).await;
                    let allowed = allowed_statuses(PATHS[p], &method);
                    prop_assert!(
                        allowed.contains(&r.status),
                        "{} {}?{} {:?} -> {} {:?}, expected one of {:?}",
                        method, PATHS[p], query, String::from_utf8_lossy(&body), r.status, r.text, allowed
                    );
                    if r.status == 200 && PATHS[p] == "/v1/catalog/deregister" {
                        accepted_writes += 1;
                    }
                    if r.status == 405 {
                        prop_assert_eq!(r.text.trim(), format!("method {method} not allowed"));
                    }
                }
            }
            // Nothing stored moved, and the only Raft applies are those of
            // the accepted no-op deregisters.
            prop_assert_eq!(&snapshot(&api).await, &before);
            let raft_after = api.sb.stats();
            prop_assert_eq!(raft_after.raft_applies, raft_before.raft_applies + accepted_writes);
            prop_assert_eq!(raft_after.raft_index, raft_before.raft_index + accepted_writes);
            // Still alive and sane.
            let r = api.get("/v1/status/leader").await;
            prop_assert_eq!(r.status, 200);
            // Raw garbage on the socket does not take it down either.
            let _ = common::raw_http(api.sb.addr(), b"\x00\xffGARBAGE / HTTP/9\r\n\r\n").await;
            prop_assert_eq!(api.get("/v1/catalog/services").await.status, 200);
            prop_assert_eq!(&snapshot(&api).await, &before);
            prop_assert_eq!(api.sb.stats().raft_applies, raft_after.raft_applies);
            Ok(())
        })?;
    }
}

#[tokio::test]
async fn truncated_and_pipelined_requests_are_survived() {
    let api = Api::start().await;
    let _ = common::raw_http(
        api.sb.addr(),
        b"PUT /v1/catalog/register HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n{\"Node\"",
    )
    .await;
    let two = b"GET /v1/status/leader HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/status/leader HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let answer = common::raw_http(api.sb.addr(), two).await;
    assert_eq!(answer.matches("HTTP/1.1 200").count(), 2, "{answer}");
    assert_eq!(api.sb.stats().raft_applies, 0);
}
