//! The server never panics and never applies anything for garbage: random
//! bodies, paths and query strings get 4xx/5xx answers, and the sandbox
//! keeps serving afterwards.

mod common;

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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn garbage_never_crashes_or_applies(
        bodies in prop::collection::vec((0..PATHS.len(), arb_body(), "[a-z=&%0-9;+]{0,20}"), 1..12)
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let api = Api::start().await;
            for (p, body, query) in bodies {
                for method in [reqwest::Method::PUT, reqwest::Method::GET, reqwest::Method::POST] {
                    let url = format!("{}?{}", api.url(PATHS[p]), query);
                    let r = api.send(api.http.request(method, url).body(body.clone())).await;
                    prop_assert!(r.status < 600, "{}", r.status);
                }
            }
            // Still alive and sane.
            let r = api.get("/v1/status/leader").await;
            prop_assert_eq!(r.status, 200);
            // Raw garbage on the socket does not take it down either.
            let _ = common::raw_http(api.sb.addr(), b"\x00\xffGARBAGE / HTTP/9\r\n\r\n").await;
            prop_assert_eq!(api.get("/v1/catalog/services").await.status, 200);
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
