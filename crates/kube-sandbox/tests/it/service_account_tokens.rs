//! `serviceaccounts/token` (TokenRequest) and the TokenReview of the
//! tokens it issues, through kube-rs over real HTTP: the claims a real
//! server writes, the review's user, and the refusals (unknown
//! ServiceAccount, bad expiration, foreign audiences, a recreated
//! ServiceAccount, a deleted bound pod, a tampered token). Nothing is
//! stored by either.

// Test fixtures: a failure to set up is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use base64::Engine;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenReview};
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};

use crate::common::{api_status, create_named, get_json, sandbox, typed};

const NS: &str = "default";
const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

async fn service_account(client: &Client, name: &str) -> ServiceAccount {
    create_named(&Api::namespaced(client.clone(), NS), name).await
}

async fn token(client: &Client, sa: &str, spec: Value) -> Result<TokenRequest, kube::Error> {
    Api::<ServiceAccount>::namespaced(client.clone(), NS)
        .create_token_request(sa, &PostParams::default(), &typed(json!({"spec": spec})))
        .await
}

/// The token a TokenRequest with `spec` issues for `sa`.
async fn issued(client: &Client, sa: &str, spec: Value) -> String {
    token(client, sa, spec).await.unwrap().status.unwrap().token
}

async fn review(client: &Client, token: &str, audiences: &[&str]) -> Value {
    let mut spec = json!({"token": token});
    if !audiences.is_empty() {
        spec["audiences"] = json!(audiences);
    }
    let out = Api::<TokenReview>::all(client.clone())
        .create(&PostParams::default(), &typed(json!({"spec": spec})))
        .await
        .unwrap();
    serde_json::to_value(out.status.unwrap()).unwrap()
}

fn part(token: &str, i: usize) -> Value {
    let p = token.split('.').nth(i).unwrap();
    serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(p)
            .unwrap(),
    )
    .unwrap()
}

/// The code and message of a refused call.
fn status(e: kube::Error) -> (u16, String) {
    let s = api_status(e);
    (s.code, s.message)
}

#[tokio::test]
async fn an_issued_token_carries_the_servers_claims_and_reviews_as_its_service_account() {
    let (sb, client) = sandbox().await;
    let sa = service_account(&client, "web").await;
    let uid = sa.metadata.uid.unwrap();
    let start = sb.revision().await;

    let tr = token(&client, "web", json!({})).await.unwrap();
    assert_eq!(tr.spec.audiences, vec![ISSUER.to_string()]);
    assert_eq!(tr.spec.expiration_seconds, Some(3600));
    let st = tr.status.unwrap();
    let header = part(&st.token, 0);
    assert_eq!(header["alg"], "ES256");
    assert!(header["kid"].as_str().is_some_and(|k| !k.is_empty()));
    let claims = part(&st.token, 1);
    assert_eq!(claims["iss"], ISSUER);
    assert_eq!(claims["sub"], "system:serviceaccount:default:web");
    assert_eq!(claims["aud"], json!([ISSUER]));
    assert_eq!(
        claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
        3600
    );
    assert_eq!(claims["nbf"], claims["iat"]);
    assert_eq!(
        claims["kubernetes.io"],
        json!({"namespace": NS, "serviceaccount": {"name": "web", "uid": uid}})
    );
    assert_eq!(
        st.expiration_timestamp.0.as_second(),
        claims["exp"].as_i64().unwrap()
    );

    let r = review(&client, &st.token, &[]).await;
    assert_eq!(r["authenticated"], true, "{r}");
    assert_eq!(r["audiences"], json!([ISSUER]));
    assert_eq!(r["user"]["username"], "system:serviceaccount:default:web");
    assert_eq!(r["user"]["uid"], uid);
    assert_eq!(
        r["user"]["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );
    assert_eq!(
        r["user"]["extra"]["authentication.kubernetes.io/credential-id"],
        json!([format!("JTI={}", claims["jti"].as_str().unwrap())])
    );
    // Neither the token nor the review stored anything.
    assert_eq!(sb.revision().await, start);
}

#[tokio::test]
async fn audiences_must_meet() {
    let (_sb, client) = sandbox().await;
    service_account(&client, "web").await;
    let vault = issued(&client, "web", json!({"audiences": ["vault", "other"]})).await;
    let r = review(&client, &vault, &["vault"]).await;
    assert_eq!(
        (r["authenticated"].clone(), r["audiences"].clone()),
        (json!(true), json!(["vault"]))
    );
    let r = review(&client, &vault, &[]).await;
    assert_eq!(
        r,
        json!({"user": {}, "error": format!("token audiences [\"vault\" \"other\"] is invalid for the target audiences [\"{ISSUER}\"]")})
    );
    let default = issued(&client, "web", json!({})).await;
    let r = review(&client, &default, &["vault"]).await;
    assert_eq!(r["authenticated"], Value::Null, "{r}");
    assert_eq!(
        r["error"],
        format!("token audiences [\"{ISSUER}\"] is invalid for the target audiences [\"vault\"]")
    );
}

#[tokio::test]
async fn bad_requests_get_the_servers_answers() {
    let (sb, client) = sandbox().await;
    service_account(&client, "web").await;
    let start = sb.revision().await;
    assert_eq!(
        status(token(&client, "nope", json!({})).await.unwrap_err()),
        (404, "serviceaccounts \"nope\" not found".into())
    );
    assert_eq!(
        status(token(&client, "web", json!({"expirationSeconds": 599})).await.unwrap_err()),
        (422, "TokenRequest.authentication.k8s.io \"web\" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes".into())
    );
    let e = token(
        &client,
        "web",
        json!({"boundObjectRef": {"kind": "ConfigMap", "apiVersion": "v1", "name": "x"}}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        status(e),
        (
            400,
            "cannot bind token to object of type /v1, Kind=ConfigMap".into()
        )
    );
    assert_eq!(sb.revision().await, start);
    // Anything but an issued token is not authenticated.
    let r = review(&client, "any-token", &[]).await;
    assert_eq!(r, json!({"user": {}, "error": "invalid bearer token"}));
}

#[tokio::test]
async fn a_token_dies_with_its_service_account_or_bound_pod() {
    let (_sb, client) = sandbox().await;
    service_account(&client, "web").await;
    let sas = Api::<ServiceAccount>::namespaced(client.clone(), NS);
    let pods = Api::<Pod>::namespaced(client.clone(), NS);
    let pod: Pod = typed(
        json!({"metadata": {"name": "web-0"}, "spec": {"serviceAccountName": "web", "containers": [{"name": "a", "image": "x"}]}}),
    );
    let pod = pods.create(&PostParams::default(), &pod).await.unwrap();
    let bound = issued(
        &client,
        "web",
        json!({"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "web-0"}}),
    )
    .await;
    let claims = part(&bound, 1);
    assert_eq!(
        claims["kubernetes.io"]["pod"],
        json!({"name": "web-0", "uid": pod.metadata.uid.clone().unwrap()})
    );
    let r = review(&client, &bound, &[]).await;
    assert_eq!(
        r["user"]["extra"]["authentication.kubernetes.io/pod-name"],
        json!(["web-0"])
    );
    // A pod running as another account cannot have one.
    service_account(&client, "db").await;
    let e = token(
        &client,
        "db",
        json!({"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "web-0"}}),
    )
    .await
    .unwrap_err();
    assert_eq!(status(e), (400, "cannot bind token for serviceaccount \"db\" to pod running with serviceaccount \"web\"".into()));

    let plain = issued(&client, "web", json!({})).await;
    // Tampering breaks the signature.
    let mut parts: Vec<String> = plain.split('.').map(str::to_string).collect();
    let mut c = part(&plain, 1);
    c["sub"] = json!("system:serviceaccount:default:admin");
    parts[1] = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(c.to_string());
    let r = review(&client, &parts.join("."), &[]).await;
    assert_eq!(
        r["error"],
        "go-jose/go-jose: error in cryptographic primitive"
    );

    pods.delete("web-0", &DeleteParams::default())
        .await
        .unwrap();
    let r = review(&client, &bound, &[]).await;
    assert_eq!(
        r,
        json!({"user": {}, "error": "service account token has been invalidated"})
    );

    sas.delete("web", &DeleteParams::default()).await.unwrap();
    let r = review(&client, &plain, &[]).await;
    assert_eq!(r["error"], "serviceaccounts \"web\" not found");
    let again = service_account(&client, "web").await;
    let r = review(&client, &plain, &[]).await;
    let old = part(&plain, 1)["kubernetes.io"]["serviceaccount"]["uid"].clone();
    assert_eq!(
        r["error"],
        format!(
            "service account UID ({}) does not match claim ({})",
            again.metadata.uid.unwrap(),
            old.as_str().unwrap()
        )
    );
}

#[tokio::test]
async fn discovery_lists_the_token_subresource() {
    let (sb, _client) = sandbox().await;
    let (_, v) = get_json(&sb, "/api/v1").await;
    let entry = v["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "serviceaccounts/token")
        .cloned()
        .unwrap();
    assert_eq!(
        (
            entry["group"].clone(),
            entry["version"].clone(),
            entry["kind"].clone(),
            entry["verbs"].clone()
        ),
        (
            json!("authentication.k8s.io"),
            json!("v1"),
            json!("TokenRequest"),
            json!(["create"])
        )
    );
}

#[tokio::test]
async fn a_token_expires_after_its_seconds_and_a_minute_of_leeway() {
    let (sb, client) = sandbox().await;
    service_account(&client, "web").await;
    let t = issued(&client, "web", json!({"expirationSeconds": 600})).await;
    // Within the leeway (with half a minute to spare for the real clock).
    sb.advance_token_clock(std::time::Duration::from_secs(600 + 30));
    assert_eq!(review(&client, &t, &[]).await["authenticated"], true);
    sb.advance_token_clock(std::time::Duration::from_secs(31));
    assert_eq!(
        review(&client, &t, &[]).await,
        json!({"user": {}, "error": "service account token has expired"})
    );
}
