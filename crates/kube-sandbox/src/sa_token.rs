//! ServiceAccount tokens: the `serviceaccounts/token` subresource
//! (TokenRequest) issues signed JWTs, and the TokenReview authenticator
//! accepts them back.
//!
//! Follows the upstream token registry (`serviceaccount/storage/token.go`),
//! claims (`pkg/serviceaccount/claims.go`) and JWT authenticator
//! (`pkg/serviceaccount/jwt.go`): the issuer and the API server's only
//! audience are `https://kubernetes.default.svc.cluster.local` (a kubeadm
//! cluster's), tokens are ES256-signed with a key made at start, a token
//! authenticates while it is unexpired (one minute of leeway, as go-jose
//! allows), its ServiceAccount still exists with the same uid, its bound
//! object (if any) still exists with the same uid, and its audiences meet
//! the requested ones. Anything else is `authenticated: false` with the
//! error text the server's authenticator chain produces.
//!
//! What this module must NOT do: store anything, count as a write, or
//! authenticate any request to the sandbox itself (reviews only answer the
//! question they are asked).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair};
use serde_json::{Map, Value, json};

use crate::registry::Resource;
use crate::status::{ApiError, Cause};
use crate::store::Store;

/// The issuer of every token and the API server's only audience.
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// TokenRequest's default `expirationSeconds`.
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// The shortest expiration a TokenRequest may ask for (10 minutes).
pub const MIN_EXPIRATION_SECONDS: i64 = 600;
/// The longest expiration a TokenRequest may ask for (2^32 seconds); a
/// default server has no `--service-account-max-token-expiration`.
pub const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;
/// go-jose's default leeway for `exp` and `nbf`.
const LEEWAY_SECONDS: i64 = 60;
/// The bearer-token authenticator's error when no token authenticator
/// recognised the token.
const INVALID_BEARER_TOKEN: &str = "invalid bearer token";

/// Why the signing key could not be made.
#[derive(Debug, thiserror::Error)]
#[error("service account token signing key: {0}")]
pub struct SignerError(String);

/// The key tokens are signed and checked with.
pub struct Signer {
    key: EcdsaKeyPair,
    kid: String,
    rng: SystemRandom,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer").field("kid", &self.kid).finish()
    }
}

impl Signer {
    /// A fresh P-256 key; its key ID is the unpadded base64url SHA-256 of
    /// the public key, as the server derives one.
    pub fn new() -> Result<Self, SignerError> {
        let rng = SystemRandom::new();
        let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng)
            .map_err(|e| SignerError(format!("generate: {e}")))?;
        let key = EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng)
            .map_err(|e| SignerError(format!("load: {e}")))?;
        let kid = B64.encode(ring::digest::digest(
            &ring::digest::SHA256,
            key.public_key().as_ref(),
        ));
        Ok(Signer { key, kid, rng })
    }

    fn sign(&self, claims: &Value) -> Result<String, ApiError> {
        let header = json!({"alg": "ES256", "kid": self.kid});
        let input = format!(
            "{}.{}",
            B64.encode(header.to_string()),
            B64.encode(claims.to_string())
        );
        let sig = self
            .key
            .sign(&self.rng, input.as_bytes())
            .map_err(|e| ApiError::internal(format!("failed to generate token: {e}")))?;
        Ok(format!("{input}.{}", B64.encode(sig.as_ref())))
    }

    /// Whether the signature over the first two parts is this key's.
    fn verify(&self, parts: &[&str]) -> bool {
        let Ok(sig) = B64.decode(parts[2]) else {
            return false;
        };
        let public = signature::UnparsedPublicKey::new(
            &signature::ECDSA_P256_SHA256_FIXED,
            self.key.public_key().as_ref(),
        );
        let input = format!("{}.{}", parts[0], parts[1]);
        public.verify(input.as_bytes(), &sig).is_ok()
    }
}

fn cause(field: &str, message: String) -> Cause {
    Cause {
        reason: "FieldValueInvalid".into(),
        field: field.into(),
        message,
    }
}

fn core(store: &Store, plural: &str) -> Result<std::sync::Arc<Resource>, ApiError> {
    store
        .registry()
        .get("", "v1", plural)
        .ok_or_else(ApiError::no_route)
}

/// `TokenREST.Create`: validates the request (`expirationSeconds` between
/// 10 minutes and 2^32 seconds, default one hour), requires the
/// ServiceAccount and any bound Pod, Secret or Node, defaults the
/// audiences to the API server's and answers the request with the token.
/// `now` is seconds since the epoch.
pub fn request(
    store: &Store,
    signer: &Signer,
    ns: &str,
    name: &str,
    mut req: Value,
    now: i64,
) -> Result<Value, ApiError> {
    if !req.get("spec").is_some_and(Value::is_object) {
        req["spec"] = json!({});
    }
    let spec = &req["spec"];
    let expiration = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
        Some(v) => v.as_i64().unwrap_or(DEFAULT_EXPIRATION_SECONDS),
    };
    let mut causes = Vec::new();
    if expiration < MIN_EXPIRATION_SECONDS {
        causes.push(cause(
            "spec.expirationSeconds",
            format!("Invalid value: {expiration}: may not specify a duration less than 10 minutes"),
        ));
    }
    if expiration > MAX_EXPIRATION_SECONDS {
        causes.push(cause(
            "spec.expirationSeconds",
            format!(
                "Invalid value: {expiration}: may not specify a duration larger than 2^32 seconds"
            ),
        ));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(
            "authentication.k8s.io",
            "TokenRequest",
            "tokenrequests",
            name,
            causes,
        ));
    }
    let sa_res = core(store, "serviceaccounts")?;
    let sa = store.get_value(&sa_res, ns, name)?;
    let sa_uid = sa
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();

    let mut k8s = Map::new();
    k8s.insert("namespace".into(), json!(ns));
    let mut bound: Option<(&str, Value)> = None;
    if let Some(r) = spec.get("boundObjectRef").filter(|v| v.is_object()) {
        let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or_default();
        let (api_version, kind, ref_name, ref_uid) =
            (s("apiVersion"), s("kind"), s("name"), s("uid"));
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        let plural = match (group, kind) {
            ("", "Pod") => "pods",
            ("", "Secret") => "secrets",
            ("", "Node") => "nodes",
            _ => {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token to object of type {group}/{version}, Kind={kind}"
                )));
            }
        };
        let res = core(store, plural)?;
        let obj = store.get_value(&res, if plural == "nodes" { "" } else { ns }, ref_name)?;
        if plural == "pods" {
            let pod_sa = obj
                .pointer("/spec/serviceAccountName")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if pod_sa != name {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token for serviceaccount {name:?} to pod running with serviceaccount {pod_sa:?}"
                )));
            }
        }
        let uid = obj
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !ref_uid.is_empty() && ref_uid != uid {
            return Err(ApiError::conflict(
                "",
                kind,
                ref_name,
                &format!(
                    "the UID in the bound object reference ({ref_uid}) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
                ),
            ));
        }
        bound = Some((plural, json!({"name": ref_name, "uid": uid})));
        // A pod on a node also names its node (the node-info claims).
        if plural == "pods"
            && let Some(node) = obj.pointer("/spec/nodeName").and_then(Value::as_str)
            && !node.is_empty()
        {
            let nodes = core(store, "nodes")?;
            if let Ok(n) = store.get_value(&nodes, "", node) {
                let node_uid = n
                    .pointer("/metadata/uid")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                k8s.insert("node".into(), json!({"name": node, "uid": node_uid}));
            }
        }
    }
    match &bound {
        Some(("pods", r)) => {
            k8s.insert("pod".into(), r.clone());
        }
        Some(("secrets", r)) => {
            k8s.insert("secret".into(), r.clone());
        }
        Some((_, r)) => {
            k8s.insert("node".into(), r.clone());
        }
        None => {}
    }
    k8s.insert(
        "serviceaccount".into(),
        json!({"name": name, "uid": sa_uid}),
    );
    // Keys in name order, as go-jose writes the merged claims.
    let k8s: Map<String, Value> = {
        let mut entries: Vec<(String, Value)> = k8s.into_iter().collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        entries.into_iter().collect()
    };
    let audiences: Vec<String> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| vec![ISSUER.to_string()]);
    let exp = now + expiration;
    let claims = json!({
        "aud": audiences,
        "exp": exp,
        "iat": now,
        "iss": ISSUER,
        "jti": uuid::Uuid::new_v4().to_string(),
        "kubernetes.io": k8s,
        "nbf": now,
        "sub": format!("system:serviceaccount:{ns}:{name}"),
    });
    let token = signer.sign(&claims)?;
    req["apiVersion"] = json!("authentication.k8s.io/v1");
    req["kind"] = json!("TokenRequest");
    if !req.get("metadata").is_some_and(Value::is_object) {
        req["metadata"] = json!({});
    }
    req["metadata"]["namespace"] = json!(ns);
    req["metadata"]
        .as_object_mut()
        .map(|m| m.entry("creationTimestamp").or_insert(Value::Null));
    req["spec"]["audiences"] = json!(audiences);
    req["spec"]["expirationSeconds"] = json!(expiration);
    if !req["spec"]
        .get("boundObjectRef")
        .is_some_and(Value::is_object)
    {
        req["spec"]["boundObjectRef"] = Value::Null;
    }
    let expires = chrono::DateTime::from_timestamp(exp, 0)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_default();
    req["status"] = json!({"token": token, "expirationTimestamp": expires});
    Ok(req)
}

/// Go's `%q` of a string slice: `["a" "b"]`.
fn go_quote_list(items: &[String]) -> String {
    let inner: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", inner.join(" "))
}

/// The TokenReview status for `token` reviewed for `requested` audiences
/// (empty: the API server's): the service account's user on success,
/// `{"user": {}, "error": ...}` otherwise.
pub fn review(
    store: &Store,
    signer: &Signer,
    token: &str,
    requested: &[String],
    now: i64,
) -> Value {
    match authenticate(store, signer, token, requested, now) {
        Ok((user, auds)) => json!({"authenticated": true, "user": user, "audiences": auds}),
        Err(e) => json!({"user": {}, "error": e}),
    }
}

fn authenticate(
    store: &Store,
    signer: &Signer,
    token: &str,
    requested: &[String],
    now: i64,
) -> Result<(Value, Vec<String>), String> {
    // Only a compact JWS whose unverified issuer is ours reaches the
    // service-account authenticator; the bearer-token authenticator
    // answers everything else.
    if token.trim_start().starts_with('{') {
        return Err(INVALID_BEARER_TOKEN.into());
    }
    let parts: Vec<&str> = token.split('.').collect();
    if parts.len() != 3 {
        return Err(INVALID_BEARER_TOKEN.into());
    }
    let claims: Value = B64
        .decode(parts[1])
        .ok()
        .and_then(|p| serde_json::from_slice(&p).ok())
        .ok_or_else(|| INVALID_BEARER_TOKEN.to_string())?;
    if claims.get("iss").and_then(Value::as_str) != Some(ISSUER) {
        return Err(INVALID_BEARER_TOKEN.into());
    }
    let header_ok = B64
        .decode(parts[0])
        .ok()
        .and_then(|h| serde_json::from_slice::<Value>(&h).ok())
        .is_some_and(|h| h.get("alg").is_some());
    if !header_ok {
        return Err(INVALID_BEARER_TOKEN.into());
    }
    if !signer.verify(&parts) {
        return Err("go-jose/go-jose: error in cryptographic primitive".into());
    }
    let mut token_auds: Vec<String> = match claims.get("aud") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    };
    if token_auds.is_empty() {
        token_auds = vec![ISSUER.to_string()];
    }
    let requested: Vec<String> = if requested.is_empty() {
        vec![ISSUER.to_string()]
    } else {
        requested.to_vec()
    };
    let auds: Vec<String> = token_auds
        .iter()
        .filter(|a| requested.contains(a))
        .cloned()
        .collect();
    if auds.is_empty() {
        return Err(format!(
            "token audiences {} is invalid for the target audiences {}",
            go_quote_list(&token_auds),
            go_quote_list(&requested)
        ));
    }
    let num = |k: &str| claims.get(k).and_then(Value::as_i64);
    if num("exp").is_some_and(|exp| now > exp + LEEWAY_SECONDS) {
        return Err("service account token has expired".into());
    }
    if num("nbf").is_some_and(|nbf| now + LEEWAY_SECONDS < nbf) {
        return Err("service account token is not valid yet".into());
    }
    let k8s = claims.get("kubernetes.io").cloned().unwrap_or(Value::Null);
    let s = |p: &str| {
        k8s.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let ns = s("/namespace");
    let sa_name = s("/serviceaccount/name");
    let sa_uid = s("/serviceaccount/uid");
    let lookup = |plural: &str, scope: &str, name: &str| -> Result<Value, ApiError> {
        let res = core(store, plural)?;
        store.get_value(&res, scope, name)
    };
    let sa = lookup("serviceaccounts", &ns, &sa_name).map_err(|e| e.message)?;
    let deleted_before = |obj: &Value| {
        obj.pointer("/metadata/deletionTimestamp")
            .and_then(Value::as_str)
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .is_some_and(|t| t.timestamp() < now - LEEWAY_SECONDS)
    };
    if deleted_before(&sa) {
        return Err(format!("service account {ns}/{sa_name} has been deleted"));
    }
    let uid_of = |v: &Value| {
        v.pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let actual_uid = uid_of(&sa);
    if actual_uid != sa_uid {
        return Err(format!(
            "service account UID ({actual_uid}) does not match claim ({sa_uid})"
        ));
    }
    let invalidated = || "service account token has been invalidated".to_string();
    let mut extra = Map::new();
    let check_bound =
        |plural: &str, what: &str, claim: &str| -> Result<Option<(String, String)>, String> {
            let Some(r) = k8s.get(claim).filter(|v| v.is_object()) else {
                return Ok(None);
            };
            let name = r.get("name").and_then(Value::as_str).unwrap_or_default();
            let uid = r.get("uid").and_then(Value::as_str).unwrap_or_default();
            let scope = if plural == "nodes" { "" } else { ns.as_str() };
            let obj = lookup(plural, scope, name).map_err(|_| invalidated())?;
            if deleted_before(&obj) {
                return Err(invalidated());
            }
            let actual = uid_of(&obj);
            if actual != uid {
                return Err(format!(
                    "{what} UID ({actual}) does not match service account {what} ref claim ({uid})"
                ));
            }
            Ok(Some((name.to_string(), uid.to_string())))
        };
    check_bound("secrets", "secret", "secret")?;
    let pod = check_bound("pods", "pod", "pod")?;
    // A node claim is checked when the token is bound to the node itself;
    // beside a pod it only informs.
    let node = if pod.is_none() {
        check_bound("nodes", "node", "node")?
    } else {
        k8s.get("node").map(|n| {
            (
                n.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                n.get("uid")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            )
        })
    };
    if let Some(jti) = claims.get("jti").and_then(Value::as_str) {
        extra.insert(
            "authentication.kubernetes.io/credential-id".into(),
            json!([format!("JTI={jti}")]),
        );
    }
    if let Some((name, uid)) = node {
        extra.insert(
            "authentication.kubernetes.io/node-name".into(),
            json!([name]),
        );
        extra.insert("authentication.kubernetes.io/node-uid".into(), json!([uid]));
    }
    if let Some((name, uid)) = pod {
        extra.insert(
            "authentication.kubernetes.io/pod-name".into(),
            json!([name]),
        );
        extra.insert("authentication.kubernetes.io/pod-uid".into(), json!([uid]));
    }
    let mut user = json!({
        "username": format!("system:serviceaccount:{ns}:{sa_name}"),
        "uid": sa_uid,
        "groups": [
            "system:serviceaccounts",
            format!("system:serviceaccounts:{ns}"),
            "system:authenticated",
        ],
    });
    if !extra.is_empty() {
        user["extra"] = Value::Object(extra);
    }
    Ok((user, auds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{StoreConfig, WriteOptions};

    fn store_with_sa() -> Store {
        let mut store = Store::new(StoreConfig::default());
        let ns = store.registry().get("", "v1", "namespaces").unwrap();
        store
            .create(
                &ns,
                "",
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}),
                &WriteOptions::default(),
            )
            .unwrap();
        let sa = core(&store, "serviceaccounts").unwrap();
        store
            .create(&sa, "a", json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "web", "namespace": "a"}}), &WriteOptions::default())
            .unwrap();
        store
    }

    fn token(store: &Store, signer: &Signer, spec: Value, now: i64) -> String {
        let out = request(store, signer, "a", "web", json!({"spec": spec}), now).unwrap();
        out["status"]["token"].as_str().unwrap().to_string()
    }

    #[test]
    fn a_token_lives_until_its_expiry_plus_the_leeway() {
        let (store, signer) = (store_with_sa(), Signer::new().unwrap());
        let t0 = 1_800_000_000;
        let t = token(&store, &signer, json!({"expirationSeconds": 600}), t0);
        let ok = review(&store, &signer, &t, &[], t0 + 600 + LEEWAY_SECONDS);
        assert_eq!(ok["authenticated"], true, "{ok}");
        assert_eq!(ok["user"]["username"], "system:serviceaccount:a:web");
        let late = review(&store, &signer, &t, &[], t0 + 600 + LEEWAY_SECONDS + 1);
        assert_eq!(
            late,
            json!({"user": {}, "error": "service account token has expired"})
        );
        let early = review(&store, &signer, &t, &[], t0 - LEEWAY_SECONDS - 1);
        assert_eq!(early["error"], "service account token is not valid yet");
    }

    #[test]
    fn another_signer_and_other_issuers_are_refused() {
        let store = store_with_sa();
        let (mine, theirs) = (Signer::new().unwrap(), Signer::new().unwrap());
        let t = token(&store, &theirs, json!({}), 1_800_000_000);
        let r = review(&store, &mine, &t, &[], 1_800_000_000);
        assert_eq!(
            r["error"],
            "go-jose/go-jose: error in cryptographic primitive"
        );
        for other in [
            "abc",
            "{\"a\":1}",
            "a.b.c",
            "eyJhbGciOiJub25lIn0.eyJpc3MiOiJ4In0.x",
        ] {
            let r = review(&store, &mine, other, &[], 1_800_000_000);
            assert_eq!(r["error"], "invalid bearer token", "{other}");
        }
    }

    #[test]
    fn expiration_bounds_follow_the_validation() {
        let (store, signer) = (store_with_sa(), Signer::new().unwrap());
        for (secs, ok) in [
            (599, false),
            (600, true),
            (1 << 32, true),
            ((1i64 << 32) + 1, false),
        ] {
            let r = request(
                &store,
                &signer,
                "a",
                "web",
                json!({"spec": {"expirationSeconds": secs}}),
                0,
            );
            assert_eq!(r.is_ok(), ok, "{secs}: {r:?}");
        }
        let out = request(&store, &signer, "a", "web", json!({}), 100).unwrap();
        assert_eq!(out["spec"]["expirationSeconds"], DEFAULT_EXPIRATION_SECONDS);
        assert_eq!(out["spec"]["audiences"], json!([ISSUER]));
        assert_eq!(out["status"]["expirationTimestamp"], "1970-01-01T01:01:40Z");
    }
}
