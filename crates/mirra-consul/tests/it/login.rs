//! Auth-method login end to end over real HTTP: kube-sandbox issues the
//! ServiceAccount token and reviews it, consul-sandbox (ACLs on, default
//! deny) runs the `kubernetes` auth method whose binding rule grants the
//! `sync-writer` policy, and the client logs in, writes, logs in again when
//! its token is deleted, and logs out.
//!
//! Every assertion counts requests as the sandbox saw them (logins,
//! registers), never time.

// Test helpers outside #[test] functions unwrap too: a failed fixture must
// stop the test, and clippy only exempts the test functions themselves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::common::{NODE, fast_retry};
use consul_sandbox::{AclDefaultPolicy, Config, Sandbox};
use mirra_consul::{
    Client, ConsulConfig, Error, LoginConfig, LoginRequest, QueryOptions, RegisterRequest, Service,
    Token,
};
use mirra_testkit::consul_login::KubeAuthHost;
use serde_json::{Value, json};

const ROOT: &str = "root-secret";

struct Env {
    /// The ServiceAccounts `sync`, `other` and `consul-auth` in `consul`.
    kube: KubeAuthHost,
    consul: Sandbox,
    http: reqwest::Client,
    /// The `sync` ServiceAccount's token, as kubelet would mount it.
    bearer: tempfile::NamedTempFile,
}

impl Env {
    /// Both sandboxes, the auth method `k8s`, the policy `sync-writer`
    /// (write on the node and every service) and a rule binding it to the
    /// `sync` ServiceAccount only.
    async fn start() -> Env {
        let kube = KubeAuthHost::start("consul", &["sync", "other", "consul-auth"]).await;
        let consul = Sandbox::start(Config {
            acl_default_policy: Some(AclDefaultPolicy::Deny),
            acl_initial_management_token: Some(ROOT.into()),
            ..Config::default()
        })
        .await
        .unwrap();
        let http = reqwest::Client::new();
        let mut env = Env {
            kube,
            consul,
            http,
            bearer: tempfile::NamedTempFile::new().unwrap(),
        };
        let config = env.kube.auth_method_config("consul-auth").await;
        env.root_put(
            "/v1/acl/auth-method",
            json!({"Name": "k8s", "Type": "kubernetes", "Config": config}),
        )
        .await;
        env.root_put(
            "/v1/acl/policy",
            json!({"Name": "sync-writer", "Rules": format!(
                "node \"{NODE}\" {{ policy = \"write\" }}\nservice_prefix \"\" {{ policy = \"write\" }}"
            )}),
        )
        .await;
        env.root_put(
            "/v1/acl/binding-rule",
            json!({"AuthMethod": "k8s", "BindType": "policy", "BindName": "sync-writer",
                   "Selector": "serviceaccount.name==sync"}),
        )
        .await;
        let jwt = env.sa_token("sync", json!({})).await;
        env.write_bearer(&jwt);
        env
    }

    fn write_bearer(&mut self, jwt: &str) {
        std::fs::write(self.bearer.path(), format!("{jwt}\n")).unwrap();
    }

    async fn sa_token(&self, sa: &str, spec: Value) -> String {
        self.kube.token(sa, spec).await
    }

    async fn root(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        self.raw(method, path, ROOT, body).await.1
    }

    async fn raw(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut r = self
            .http
            .request(method, format!("{}{path}", self.consul.url()))
            .header("X-Consul-Token", token);
        if let Some(b) = body {
            r = r.json(&b);
        }
        let r = r.send().await.unwrap();
        let status = r.status().as_u16();
        let text = r.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    async fn root_put(&self, path: &str, body: Value) {
        let (status, v) = self.raw(reqwest::Method::PUT, path, ROOT, Some(body)).await;
        assert_eq!(status, 200, "{path}: {v}");
    }

    /// The login tokens Consul holds, by AccessorID.
    async fn login_tokens(&self) -> Vec<String> {
        let v = self
            .root(reqwest::Method::GET, "/v1/acl/tokens", None)
            .await;
        v.as_array()
            .unwrap()
            .iter()
            .filter(|t| t["AuthMethod"] == "k8s")
            .map(|t| t["AccessorID"].as_str().unwrap().to_string())
            .collect()
    }

    fn requests(&self, key: &str) -> u64 {
        self.consul.stats().requests.get(key).copied().unwrap_or(0)
    }

    fn logins(&self) -> u64 {
        self.requests("POST /v1/acl/login")
    }

    fn registers(&self) -> u64 {
        self.requests("PUT /v1/catalog/register")
    }

    fn login_config(&self) -> LoginConfig {
        LoginConfig {
            bearer_token_file: self.bearer.path().to_owned(),
            meta: [("component".to_owned(), "sync-catalog".to_owned())].into(),
            ..LoginConfig::new("k8s")
        }
    }

    fn client(&self) -> Client {
        let mut c = ConsulConfig::new(&self.consul.url()).unwrap();
        c.login = Some(self.login_config());
        c.retry = fast_retry(2);
        Client::new(c).unwrap()
    }
}

fn register(service: &str) -> RegisterRequest {
    RegisterRequest {
        node: NODE.into(),
        address: "10.0.0.1".into(),
        service: Some(Service {
            id: format!("{service}-1"),
            service: service.into(),
            port: 80,
            ..Service::default()
        }),
        ..RegisterRequest::default()
    }
}

#[tokio::test]
async fn the_first_request_logs_in_once_and_the_login_token_writes() {
    let env = Env::start().await;
    let client = env.client();
    assert_eq!(client.login_auth_method(), Some("k8s"));
    assert_eq!(
        client.login_accessor_id(),
        None,
        "no login before a request"
    );
    assert_eq!(env.logins(), 0);

    client.register(&register("web")).await.unwrap();
    assert_eq!((env.logins(), env.registers()), (1, 1));
    let accessor = client.login_accessor_id().unwrap();
    assert_eq!(env.login_tokens().await, vec![accessor.clone()]);
    let token = env
        .root(
            reqwest::Method::GET,
            &format!("/v1/acl/token/{accessor}"),
            None,
        )
        .await;
    assert_eq!(
        token["Description"],
        "token created via login: {\"component\":\"sync-catalog\"}"
    );
    assert_eq!(token["Policies"][0]["Name"], "sync-writer");

    // Further requests reuse the token; an explicit login is a no-op.
    client.register(&register("api")).await.unwrap();
    client.login().await.unwrap();
    let services = client.services(&QueryOptions::default()).await.unwrap();
    assert!(services.value.contains_key("api"));
    assert_eq!((env.logins(), env.registers()), (1, 2));
    assert_eq!(client.login_accessor_id(), Some(accessor));

    // Debug output names the method, never a secret.
    let shown = format!("{client:?}");
    assert!(shown.contains("k8s"), "{shown}");
    let jwt = std::fs::read_to_string(env.bearer.path()).unwrap();
    assert!(!shown.contains(jwt.trim()));
}

#[tokio::test]
async fn concurrent_first_requests_share_one_login() {
    let env = Env::start().await;
    let client = env.client();
    let reads = (0..8).map(|_| {
        let c = client.clone();
        async move { c.nodes(&QueryOptions::default()).await }
    });
    for r in futures::future::join_all(reads).await {
        r.unwrap();
    }
    assert_eq!(env.logins(), 1);
    assert_eq!(env.requests("GET /v1/catalog/nodes"), 8);
    assert_eq!(env.login_tokens().await.len(), 1);
}

#[tokio::test]
async fn a_deleted_token_causes_one_new_login_and_one_resend() {
    let env = Env::start().await;
    let client = env.client();
    client.login().await.unwrap();
    client.register(&register("web")).await.unwrap();
    let first = client.login_accessor_id().unwrap();
    assert_eq!((env.logins(), env.registers()), (1, 1));

    // An operator (or Consul's token TTL) removes the token.
    let deleted = env
        .root(
            reqwest::Method::DELETE,
            &format!("/v1/acl/token/{first}"),
            None,
        )
        .await;
    assert_eq!(deleted, json!(true));

    client.register(&register("api")).await.unwrap();
    // One refused register, one login, one resent register.
    assert_eq!((env.logins(), env.registers()), (2, 3));
    let second = client.login_accessor_id().unwrap();
    assert_ne!(second, first);
    assert_eq!(env.login_tokens().await, vec![second]);
    let services = client.services(&QueryOptions::default()).await.unwrap();
    assert!(services.value.contains_key("api"));
    assert_eq!(env.logins(), 2);
}

#[tokio::test]
async fn a_login_that_keeps_failing_is_a_retryable_error_naming_the_method() {
    let mut env = Env::start().await;
    let client = env.client();
    // A token for another audience: the review refuses it.
    let foreign = env.sa_token("sync", json!({"audiences": ["vault"]})).await;
    env.write_bearer(&foreign);
    let err = client.register(&register("web")).await.unwrap_err();
    assert!(matches!(err, Error::Login { .. }), "{err}");
    assert!(err.is_retryable());
    assert_eq!(err.class(), "login");
    let text = err.to_string();
    assert!(text.contains("auth method \"k8s\""), "{text}");
    assert!(text.contains("invalid for the target audiences"), "{text}");
    assert!(!text.contains(&foreign) && !format!("{err:?}").contains(&foreign));
    // The login was sent once (a 500 from a login is not resent: it may
    // have made a token) and the register never.
    assert_eq!((env.logins(), env.registers()), (1, 0));

    // An expired token, then a ServiceAccount the rule does not bind.
    let short = env
        .sa_token("sync", json!({"expirationSeconds": 600}))
        .await;
    env.write_bearer(&short);
    env.kube
        .sandbox
        .advance_token_clock(Duration::from_secs(600 + 61));
    let err = client.login().await.unwrap_err();
    assert!(err.to_string().contains("has expired"), "{err}");
    let other = env.sa_token("other", json!({})).await;
    env.write_bearer(&other);
    let err = client.login().await.unwrap_err();
    assert_eq!(err.status(), Some(403), "{err}");
    assert!(err.is_retryable());
    assert_eq!(env.logins(), 3);
    assert!(env.login_tokens().await.is_empty());

    // The file is read at every login: once kubelet writes a good token,
    // the next request logs in and goes through.
    let good = env.sa_token("sync", json!({})).await;
    env.write_bearer(&good);
    client.register(&register("web")).await.unwrap();
    assert_eq!((env.logins(), env.registers()), (4, 1));

    // A missing file is a login error naming the variable and the path.
    std::fs::remove_file(env.bearer.path()).unwrap();
    env.root(
        reqwest::Method::DELETE,
        &format!("/v1/acl/token/{}", client.login_accessor_id().unwrap()),
        None,
    )
    .await;
    let err = client.register(&register("web")).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::Login { .. }), "{text}");
    assert!(text.contains("CONSUL_LOGIN_BEARER_TOKEN_FILE"), "{text}");
    // The refused register, and no login without a bearer token.
    assert_eq!((env.logins(), env.registers()), (4, 2));
}

#[tokio::test]
async fn an_unknown_auth_method_fails_the_login() {
    let env = Env::start().await;
    let mut c = ConsulConfig::new(&env.consul.url()).unwrap();
    c.login = Some(LoginConfig {
        auth_method: "missing".into(),
        ..env.login_config()
    });
    let client = Client::new(c).unwrap();
    let err = client.login().await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains("auth method \"missing\""), "{text}");
    assert!(err.is_retryable());
    assert_eq!(env.logins(), 1);
}

#[tokio::test]
async fn logout_deletes_the_token_once() {
    let env = Env::start().await;
    let client = env.client();
    client.register(&register("web")).await.unwrap();
    let accessor = client.login_accessor_id().unwrap();
    let secret = env
        .root(
            reqwest::Method::GET,
            &format!("/v1/acl/token/{accessor}"),
            None,
        )
        .await["SecretID"]
        .as_str()
        .unwrap()
        .to_string();

    client.logout().await.unwrap();
    assert_eq!(env.requests("POST /v1/acl/logout"), 1);
    assert_eq!(client.login_accessor_id(), None);
    assert!(env.login_tokens().await.is_empty());
    let (status, body) = env
        .raw(
            reqwest::Method::PUT,
            "/v1/catalog/register",
            &secret,
            Some(json!({"Node": NODE, "Address": "10.0.0.1"})),
        )
        .await;
    assert_eq!((status, body), (403, json!("ACL not found")));

    // Nothing left to log out: no request.
    client.logout().await.unwrap();
    assert_eq!(env.requests("POST /v1/acl/logout"), 1);

    // Logging out a token Consul does not know is Consul's 403.
    let err = client.acl_logout(&Token::new(secret)).await.unwrap_err();
    assert!(err.is_acl_not_found(), "{err}");
    assert_eq!(env.requests("POST /v1/acl/logout"), 2);

    // A request after logout logs in again.
    client.register(&register("web")).await.unwrap();
    assert_eq!(env.logins(), 2);
}

#[tokio::test]
async fn the_typed_login_call_returns_the_token_and_leaves_the_client_alone() {
    let env = Env::start().await;
    let client = Client::new(ConsulConfig::new(&env.consul.url()).unwrap()).unwrap();
    let jwt = std::fs::read_to_string(env.bearer.path()).unwrap();
    let token = client
        .acl_login(&LoginRequest {
            auth_method: "k8s".into(),
            bearer_token: Token::new(jwt),
            meta: Default::default(),
        })
        .await
        .unwrap();
    assert_eq!(token.auth_method, "k8s");
    assert!(token.local);
    assert_eq!(env.login_tokens().await, vec![token.accessor_id.clone()]);
    // The client itself still has no token: anonymous is denied.
    let err = client.register(&register("web")).await.unwrap_err();
    assert_eq!(err.status(), Some(403));
    assert!(!err.is_acl_not_found());
    client.acl_logout(&token.secret_id).await.unwrap();
    assert!(env.login_tokens().await.is_empty());
}
