//! The ACL token never reaches the logs.
//!
//! Everything the process logs at any level (the client's retry warnings
//! and failure reports, the HTTP stack's and the sandbox's own events) is
//! captured into a buffer while the client goes through retries and
//! refusals, including answers that echo the token back in their body, as a
//! misconfigured proxy might. The buffer must hold those events and never
//! the secret.

// Test helpers outside #[test] functions unwrap too: a failed fixture must
// stop the test, and clippy only exempts the test functions themselves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::{fast_retry, sandbox_with_read_only_token, web_registration};
use consul_sandbox::FaultRule;
use mirra_consul::{
    Client, ConsulConfig, Error, Node, QueryOptions, Token, TokenConfig, TokenSource, TxnOp, Verb,
};

const SECRET: &str = "9d0c1f7e-logged-never-4a2b-8c3d";

fn client_for(url: &str) -> Client {
    let mut config = ConsulConfig::new(url).unwrap();
    config.token = Some(TokenConfig {
        secret: Token::new(SECRET),
        source: TokenSource::EnvVar,
    });
    config.retry = fast_retry(4);
    Client::new(config).unwrap()
}

// The test runs on tokio's single-threaded test runtime, so the
// thread-local subscriber sees every task: the client's, the HTTP
// connections' and the sandbox's.
#[tokio::test]
async fn token_never_appears_in_logs_during_retries_and_refusals() {
    let (logs, _guard) = mirra_testkit::capture_logs(tracing::Level::TRACE);

    // The token may read but not write, so the real ACL check answers 403.
    let sandbox =
        sandbox_with_read_only_token("aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", SECRET).await;
    let client = client_for(&sandbox.url());

    // 500, 500, then the real 403: two retries, then a refusal that is not
    // retried.
    sandbox.faults().add(
        FaultRule::error(500, "rpc error making call: injected")
            .times(2)
            .with_path_prefix("/v1/catalog/register"),
    );
    let err = client
        .register(&web_registration("web-1"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::PermissionDenied { .. }), "{err}");
    assert_eq!(sandbox.stats().requests_for("PUT /v1/catalog/register"), 3);

    // A 500 whose body echoes the token (a proxy dumping request headers),
    // then success.
    sandbox.faults().add(
        FaultRule::error(500, format!("upstream failed; X-Consul-Token: {SECRET}"))
            .times(1)
            .with_path_prefix("/v1/catalog/services"),
    );
    client.services(&QueryOptions::default()).await.unwrap();

    // An election, then success.
    sandbox.faults().add(FaultRule::no_leader().times(1));
    client.nodes(&QueryOptions::default()).await.unwrap();

    // A 403 that names the token, on a transaction.
    sandbox.faults().add(
        FaultRule::error(
            403,
            format!("Permission denied: token {SECRET} lacks node:write"),
        )
        .times(1)
        .with_path_prefix("/v1/txn"),
    );
    let err = client
        .txn(&[TxnOp::Node {
            verb: Verb::Set,
            node: Node {
                node: "k8s-sync".into(),
                address: "127.0.0.1".into(),
                ..Node::default()
            },
        }])
        .await
        .unwrap_err();
    assert!(matches!(err, Error::PermissionDenied { .. }), "{err}");
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains(SECRET), "{shown}");
    assert!(shown.contains("<redacted>"), "{shown}");

    // Connection errors: nothing listens on the sandbox's port any more.
    let url = sandbox.url();
    sandbox.shutdown().await;
    let err = client_for(&url)
        .register(&web_registration("web-1"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Connect { .. }), "{err}");

    let text = logs.text();
    assert!(
        !text.contains(SECRET),
        "the token leaked into the logs:\n{text}"
    );
    // The events that could carry it were all logged.
    for expected in [
        "consul request failed, retrying",
        "class=\"server_error\"",
        "class=\"leader_unavailable\"",
        "consul request failed operation=\"catalog.register\" class=\"permission_denied\"",
        "consul request failed operation=\"txn\" class=\"permission_denied\"",
        "class=\"connect\"",
        // The echoed token, scrubbed in the retry warning.
        "error=catalog.services: server error 500: upstream failed; X-Consul-Token: <redacted>",
    ] {
        assert!(text.contains(expected), "no {expected:?} in:\n{text}");
    }
}

/// A token bound for another host over plain http is warned about once, at
/// construction, without the token (no request is sent: the address is
/// never contacted).
#[test]
fn a_token_over_plain_http_is_warned_about_without_the_token() {
    let (logs, _guard) = mirra_testkit::capture_logs(tracing::Level::TRACE);
    let _clear = client_for("http://10.0.0.5:8500");
    let text = logs.text();
    assert_eq!(
        text.matches("the Consul ACL token is sent over plain http")
            .count(),
        1,
        "{text}"
    );
    assert!(text.contains("10.0.0.5"), "{text}");
    assert!(!text.contains(SECRET), "{text}");
    // https, or a node-local agent on the loopback: no warning.
    let _tls = client_for("https://10.0.0.5:8501");
    let _local = client_for("http://127.0.0.1:8500");
    assert_eq!(
        logs.text()
            .matches("the Consul ACL token is sent over plain http")
            .count(),
        1
    );
}
