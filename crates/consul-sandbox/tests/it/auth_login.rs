//! Kubernetes auth-method login end to end: kube-sandbox issues
//! ServiceAccount tokens (TokenRequest) and answers TokenReviews;
//! consul-sandbox's `kubernetes` auth method reviews a login's bearer
//! token there over real HTTP, applies its binding rules and stores one
//! token linked to the method. Bad input gets Consul's answers and stores
//! nothing.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Api, ROOT, Resp};
use consul_sandbox::{AclDefaultPolicy, Config};
use mirra_testkit::consul_login::{ANY_CA_PEM as CA, KubeAuthHost};
use serde_json::{Value, json};

/// kube-sandbox with the ServiceAccounts `web`, `db` and `consul-auth`
/// in the namespace `apps`, and consul-sandbox with ACLs on (default deny).
struct Env {
    kube: KubeAuthHost,
    consul: Api,
}

impl Env {
    async fn start() -> Env {
        Env {
            kube: KubeAuthHost::start("apps", &["web", "db", "consul-auth"]).await,
            consul: Api::start_with(Config {
                acl_default_policy: Some(AclDefaultPolicy::Deny),
                acl_initial_management_token: Some(ROOT.into()),
                ..Config::default()
            })
            .await,
        }
    }

    async fn sa_token(&self, sa: &str, spec: Value) -> String {
        self.kube.token(sa, spec).await
    }

    async fn login(&self, method: &str, bearer: &str) -> Resp {
        let body =
            json!({"AuthMethod": method, "BearerToken": bearer, "Meta": {"pod": "apps/web-0"}});
        self.consul
            .call(reqwest::Method::POST, "/v1/acl/login", "", Some(body))
            .await
    }

    /// The auth method `k8s` and a rule binding a service identity named
    /// after the service account, for the `apps` namespace only.
    async fn method_and_rules(&self) {
        let config = self.kube.auth_method_config("consul-auth").await;
        for (path, body) in [
            (
                "/v1/acl/auth-method",
                json!({"Name": "k8s", "Type": "kubernetes", "Config": config}),
            ),
            (
                "/v1/acl/binding-rule",
                json!({"AuthMethod": "k8s", "BindType": "service",
                       "BindName": "${serviceaccount.name}",
                       "Selector": "serviceaccount.namespace==apps and serviceaccount.name != db and serviceaccount.name != \"consul-auth\""}),
            ),
            (
                "/v1/acl/binding-rule",
                json!({"AuthMethod": "k8s", "BindType": "node",
                       "BindName": "${serviceaccount.name}-node",
                       "Selector": "serviceaccount.name == web"}),
            ),
        ] {
            let r = self.consul.put_as(path, ROOT, body).await;
            assert_eq!(r.status, 200, "{}", r.text);
        }
    }

    async fn token_count(&self) -> usize {
        let t = self.consul.get_as("/v1/acl/tokens", ROOT).await;
        t.count()
    }

    fn applies(&self) -> u64 {
        self.consul.sb.stats().raft_applies
    }
}

fn register(node: &str, service: &str) -> Value {
    json!({"Node": node, "Address": "10.0.0.1",
           "Service": {"Service": service, "ID": format!("{service}-1"), "Port": 80}})
}

#[tokio::test]
async fn a_login_binds_what_the_rules_say_and_nothing_more() {
    let env = Env::start().await;
    env.method_and_rules().await;
    let bearer = env.sa_token("web", json!({})).await;
    let before = env.applies();
    let r = env.login("k8s", &bearer).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(env.applies(), before + 1, "one Raft apply per login");
    let t = r.json();
    assert_eq!(t["AuthMethod"], "k8s");
    assert_eq!(t["Local"], true);
    assert_eq!(t["ServiceIdentities"], json!([{"ServiceName": "web"}]));
    assert_eq!(
        t["NodeIdentities"],
        json!([{"NodeName": "web-node", "Datacenter": "dc1"}])
    );
    assert_eq!(
        t["Description"],
        "token created via login: {\"pod\":\"apps/web-0\"}"
    );
    let secret = t["SecretID"].as_str().unwrap().to_string();

    // The identities grant `web` and its node, and nothing else.
    let ok = env
        .consul
        .put_as("/v1/catalog/register", &secret, register("web-node", "web"))
        .await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    let other_service = env
        .consul
        .put_as("/v1/catalog/register", &secret, register("web-node", "db"))
        .await;
    assert_eq!(other_service.status, 403, "{}", other_service.text);
    assert!(
        other_service
            .text
            .contains("lacks permission 'service:write' on \"db\""),
        "{}",
        other_service.text
    );
    let other_node = env
        .consul
        .put_as("/v1/catalog/register", &secret, register("db-node", "web"))
        .await;
    assert_eq!(other_node.status, 403, "{}", other_node.text);
    let acl = env.consul.get_as("/v1/acl/tokens", &secret).await;
    assert_eq!(acl.status, 403, "{}", acl.text);

    // token/self shows the link; logout deletes it, once.
    let me = env.consul.get_as("/v1/acl/token/self", &secret).await;
    assert_eq!(me.json()["AuthMethod"], "k8s");
    let before = env.applies();
    let out = env
        .consul
        .call(reqwest::Method::POST, "/v1/acl/logout", &secret, None)
        .await;
    assert_eq!((out.status, out.text.as_str()), (200, "true"));
    assert_eq!(env.applies(), before + 1);
    let again = env
        .consul
        .call(reqwest::Method::POST, "/v1/acl/logout", &secret, None)
        .await;
    assert_eq!((again.status, again.text.as_str()), (403, "ACL not found"));
    let gone = env
        .consul
        .put_as("/v1/catalog/register", &secret, register("web-node", "web"))
        .await;
    assert_eq!((gone.status, gone.text.as_str()), (403, "ACL not found"));
}

#[tokio::test]
async fn role_and_policy_bindings_link_existing_ones_only() {
    let env = Env::start().await;
    env.method_and_rules().await;
    let p = env
        .consul
        .put_as(
            "/v1/acl/policy",
            ROOT,
            json!({"Name": "db-read", "Rules": "service \"db\" { policy = \"read\" }"}),
        )
        .await;
    assert_eq!(p.status, 200, "{}", p.text);
    let role = env
        .consul
        .put_as(
            "/v1/acl/role",
            ROOT,
            json!({"Name": "apps-db", "Policies": [{"Name": "db-read"}]}),
        )
        .await;
    assert_eq!(role.status, 200, "{}", role.text);
    for (bind_type, bind_name) in [
        ("role", "${serviceaccount.namespace}-${serviceaccount.name}"),
        ("policy", "db-read"),
        ("role", "missing-role"),
    ] {
        let r = env
            .consul
            .put_as(
                "/v1/acl/binding-rule",
                ROOT,
                json!({"AuthMethod": "k8s", "BindType": bind_type,
                "BindName": bind_name, "Selector": "serviceaccount.name == db"}),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let r = env.login("k8s", &env.sa_token("db", json!({})).await).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let t = r.json();
    assert_eq!(t["Roles"][0]["Name"], "apps-db");
    assert_eq!(
        t["Roles"].as_array().unwrap().len(),
        1,
        "a missing role is skipped"
    );
    assert_eq!(t["Policies"][0]["Name"], "db-read");
    assert!(
        t.get("ServiceIdentities").is_none(),
        "the service rule excludes db"
    );
}

#[tokio::test]
async fn bad_logins_get_consuls_answers_and_store_nothing() {
    let env = Env::start().await;
    env.method_and_rules().await;
    let tokens = env.token_count().await;
    let applies = env.applies();

    // A token for another audience: the API server's review refuses it.
    let foreign = env.sa_token("web", json!({"audiences": ["vault"]})).await;
    let r = env.login("k8s", &foreign).await;
    assert_eq!(r.status, 500, "{}", r.text);
    assert_eq!(
        r.text,
        "lookup failed: token audiences [\"vault\"] is invalid for the target audiences [\"https://kubernetes.default.svc.cluster.local\"]"
    );
    // A deleted service account.
    let gone = env.sa_token("db", json!({})).await;
    let del = env
        .consul
        .http
        .delete(format!(
            "{}/api/v1/namespaces/apps/serviceaccounts/db",
            env.kube.url()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(del.status().as_u16(), 200);
    let r = env.login("k8s", &gone).await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (500, "lookup failed: serviceaccounts \"db\" not found")
    );
    // Not a JWT at all, and a JWT the API server did not sign.
    let r = env.login("k8s", "not-a-jwt").await;
    r.assert_status_and_prefix(500, "failed to parse and validate JWT: ");
    let r = env
        .login("k8s", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln")
        .await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (500, "lookup failed: invalid bearer token")
    );
    // An unknown auth method.
    let web = env.sa_token("web", json!({})).await;
    let r = env.login("nope", &web).await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (403, "ACL not found: auth method \"nope\" not found")
    );
    // No rule matches: Permission denied.
    let r = env
        .login("k8s", &env.sa_token("consul-auth", json!({})).await)
        .await;
    assert_eq!((r.status, r.text.as_str()), (403, "Permission denied"));
    // Logout of a token that did not come from a login.
    let r = env
        .consul
        .call(reqwest::Method::POST, "/v1/acl/logout", ROOT, None)
        .await;
    assert_eq!((r.status, r.text.as_str()), (403, "Permission denied"));
    let r = env
        .consul
        .call(reqwest::Method::POST, "/v1/acl/logout", "", None)
        .await;
    assert_eq!((r.status, r.text.as_str()), (403, "ACL not found"));

    assert_eq!(env.token_count().await, tokens);
    assert_eq!(env.applies(), applies, "no refused call applied anything");
}

#[tokio::test]
async fn an_expired_token_is_refused() {
    let env = Env::start().await;
    env.method_and_rules().await;
    // The auth method's own JWT is not checked by kube-sandbox's review
    // endpoint, so only the bearer token expires.
    let bearer = env.sa_token("web", json!({"expirationSeconds": 600})).await;
    let tokens = env.token_count().await;
    let applies = env.applies();
    // Past its expiry and go-jose's minute of leeway.
    env.kube
        .sandbox
        .advance_token_clock(std::time::Duration::from_secs(600 + 61));
    let r = env.login("k8s", &bearer).await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (500, "lookup failed: service account token has expired")
    );
    assert_eq!(env.token_count().await, tokens);
    assert_eq!(env.applies(), applies);
    // A fresh token from the same account still logs in.
    let fresh = env.sa_token("web", json!({})).await;
    assert_eq!(env.login("k8s", &fresh).await.status, 200);
}

#[tokio::test]
async fn auth_methods_and_binding_rules_are_validated_and_guarded() {
    let env = Env::start().await;
    env.method_and_rules().await;
    let applies = env.applies();
    let rules_before = env
        .consul
        .get_as("/v1/acl/binding-rules?authmethod=k8s", ROOT)
        .await
        .json();
    assert_eq!(rules_before.as_array().unwrap().len(), 2);

    let bad_rules = [
        (
            json!({"AuthMethod": "k8s", "BindType": "service", "BindName": "x", "Selector": "serviceaccount.name =="}),
            "invalid Binding Rule: Selector is invalid: ",
        ),
        (
            json!({"AuthMethod": "k8s", "BindType": "service", "BindName": "x", "Selector": "serviceaccount.pod == a"}),
            "invalid Binding Rule: Selector is invalid: Selector \"serviceaccount.pod\" is not valid",
        ),
        (
            json!({"AuthMethod": "k8s", "BindType": "group", "BindName": "x"}),
            "Invalid Binding Rule: unknown BindType \"group\"",
        ),
        (
            json!({"AuthMethod": "k8s", "BindType": "service", "BindName": "${serviceaccount.pod}"}),
            "Invalid Binding Rule: invalid BindName: ",
        ),
        (
            json!({"AuthMethod": "k8s", "BindType": "service", "BindName": "Upper"}),
            "Invalid Binding Rule: invalid BindName: ",
        ),
        (
            json!({"AuthMethod": "k8s", "BindName": "x"}),
            "Invalid Binding Rule: no BindType is set",
        ),
        (
            json!({"AuthMethod": "nope", "BindType": "service", "BindName": "x"}),
            "cannot find auth method with name \"nope\"",
        ),
        (
            json!({"BindType": "service", "BindName": "x"}),
            "Invalid Binding Rule: no AuthMethod is set",
        ),
    ];
    let bad_methods = [
        (
            json!({"Name": "m2", "Type": "kubernetes", "Config": {"CACert": CA, "ServiceAccountJWT": "a.b.c"}}),
            "Invalid Auth Method: Config.Host is required",
        ),
        (
            json!({"Name": "m2", "Type": "kubernetes", "Config": {"Host": "http://x", "CACert": "nope", "ServiceAccountJWT": "a.b.c"}}),
            "Invalid Auth Method: error parsing kubernetes ca cert: ",
        ),
        (
            json!({"Name": "m2", "Type": "kubernetes", "Config": {"Host": "http://x", "CACert": CA, "ServiceAccountJWT": "x"}}),
            "Invalid Auth Method: Config.ServiceAccountJWT is not a valid JWT: ",
        ),
        (
            json!({"Name": "m2", "Type": "ldap"}),
            "Invalid Auth Method: Type should be one of: ",
        ),
        (
            json!({"Name": "bad name", "Type": "kubernetes"}),
            "Invalid Auth Method: invalid Name.",
        ),
        (
            json!({"Name": "k8s", "Type": "jwt"}),
            "the Type field of an Auth Method is immutable",
        ),
    ];
    for (path, rows) in [
        ("/v1/acl/binding-rule", &bad_rules[..]),
        ("/v1/acl/auth-method", &bad_methods[..]),
    ] {
        for (body, want) in rows {
            let r = env.consul.put_as(path, ROOT, body.clone()).await;
            assert_eq!(r.status, 400, "{body}: {}", r.text);
            assert!(r.text.starts_with(want), "{body}: {}", r.text);
        }
    }
    // Reads need acl:read, writes acl:write.
    let r = env.consul.get_as("/v1/acl/auth-methods", "").await;
    r.assert_status_and_prefix(
        403,
        "Permission denied: anonymous token lacks permission 'acl:read'",
    );
    let r = env
        .consul
        .put_as(
            "/v1/acl/auth-method",
            "",
            json!({"Name": "m3", "Type": "kubernetes"}),
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(env.applies(), applies, "nothing refused was applied");

    // The list omits Config, the read has it.
    let list = env.consul.get_as("/v1/acl/auth-methods", ROOT).await.json();
    assert_eq!(list[0]["Name"], "k8s");
    assert!(list[0].get("Config").is_none());
    let one = env
        .consul
        .get_as("/v1/acl/auth-method/k8s", ROOT)
        .await
        .json();
    assert_eq!(one["Config"]["Host"], env.kube.url());

    // Deleting the method deletes its rules and its login tokens: one apply.
    let login = env
        .login("k8s", &env.sa_token("web", json!({})).await)
        .await;
    assert_eq!(login.status, 200, "{}", login.text);
    let secret = login.json()["SecretID"].as_str().unwrap().to_string();
    let tokens = env.token_count().await;
    let before = env.applies();
    let d = env
        .consul
        .call(
            reqwest::Method::DELETE,
            "/v1/acl/auth-method/k8s",
            ROOT,
            None,
        )
        .await;
    assert_eq!((d.status, d.text.as_str()), (200, "true"));
    assert_eq!(env.applies(), before + 1);
    assert_eq!(env.token_count().await, tokens - 1);
    let rules = env
        .consul
        .get_as("/v1/acl/binding-rules", ROOT)
        .await
        .json();
    assert_eq!(rules, json!([]));
    let r = env.consul.get_as("/v1/acl/token/self", &secret).await;
    assert_eq!(r.status, 403);
    let r = env
        .login("k8s", &env.sa_token("web", json!({})).await)
        .await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (403, "ACL not found: auth method \"k8s\" not found")
    );
    let r = env.consul.get_as("/v1/acl/auth-method/k8s", ROOT).await;
    assert_eq!((r.status, r.text.as_str()), (403, "ACL not found"));
}
