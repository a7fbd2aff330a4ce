//! ACL auth methods of type `kubernetes`, binding rules, `/v1/acl/login`
//! and `/v1/acl/logout`, as Consul's ACL endpoint and kubeauth validator
//! answer them.
//!
//! A login sends the bearer token to the auth method's Kubernetes API
//! (`Config.Host`) as a TokenReview, reads the ServiceAccount for the
//! `consul.hashicorp.com/service-name` annotation, evaluates the method's
//! binding rules over the identity and stores one token linked to the
//! method (one Raft apply). Unlike Consul, the sandbox also accepts
//! `http://` hosts (and only those: it has no TLS client), so it can talk
//! to kube-sandbox; `CACert` is still required and must hold a PEM
//! certificate block, as Consul requires, but is not used.
//!
//! This module must NOT touch the catalog; it reads and writes only the
//! ACL tables, and it calls the network only from [`review_login`], never
//! while holding the ACL lock.

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::{Map, Value, json};

use crate::acl::{AclAccess, AclTable, AuthMethodRec, Authz, BindingRuleRec, TokenRec};
use crate::acl_http::{
    Write, all_in, bad, decode, field, get_in, in_partition, named_in, not_found, remove_in,
    str_field,
};
use crate::acl_selector as sel;
use crate::error::ApiError;

/// The auth method types Consul registers; only `kubernetes` is modelled.
const TYPES: &str = "[aws-iam jwt kubernetes oidc]";
/// The ServiceAccount annotation that overrides the service name.
const SERVICE_NAME_ANNOTATION: &str = "consul.hashicorp.com/service-name";

fn permission_denied() -> ApiError {
    ApiError::Forbidden(crate::acl::AclError::Denied("Permission denied".into()))
}

/// Whether a compact JWS parses (three base64url parts, a JSON header
/// naming an algorithm), the check go-jose's `ParseSigned` makes.
fn jws_error(token: &str) -> Option<String> {
    let parts: Vec<&str> = token.split('.').collect();
    if parts.len() != 3 {
        return Some("go-jose/go-jose: compact JWS format must have three parts".into());
    }
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let header = b64
        .decode(parts[0].trim_end_matches('='))
        .ok()
        .and_then(|h| serde_json::from_slice::<Value>(&h).ok());
    match header {
        Some(h) if h.get("alg").and_then(Value::as_str).is_some() => None,
        Some(_) => Some("go-jose/go-jose: unsupported algorithm".into()),
        None => Some("illegal base64 data at input byte 0".into()),
    }
}

/// `cert.ParseCertsPEM`, as far as the PEM framing goes.
fn has_pem_certificate(pem: &str) -> bool {
    let Some(start) = pem.find("-----BEGIN CERTIFICATE-----") else {
        return false;
    };
    let body = &pem[start + "-----BEGIN CERTIFICATE-----".len()..];
    let Some(end) = body.find("-----END CERTIFICATE-----") else {
        return false;
    };
    let b64: String = body[..end].split_whitespace().collect();
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .is_ok_and(|d| !d.is_empty())
}

/// `kubeauth.NewValidator`'s configuration checks.
fn validate_config(config: &Map<String, Value>) -> Result<(), String> {
    let s = |k: &str| field(config, k).and_then(Value::as_str).unwrap_or_default();
    if s("Host").is_empty() {
        return Err("Config.Host is required".into());
    }
    if s("CACert").is_empty() {
        return Err("Config.CACert is required".into());
    }
    if !has_pem_certificate(s("CACert")) {
        return Err(
            "error parsing kubernetes ca cert: data does not contain any valid RSA or ECDSA certificates"
                .into(),
        );
    }
    let jwt = s("ServiceAccountJWT");
    if jwt.is_empty() {
        return Err("Config.ServiceAccountJWT is required".into());
    }
    if let Some(e) = jws_error(jwt) {
        return Err(format!("Config.ServiceAccountJWT is not a valid JWT: {e}"));
    }
    Ok(())
}

fn method_json(m: &AuthMethodRec, with_config: bool) -> Value {
    let mut v = json!({"Name": m.name, "Type": m.kind});
    if !m.display_name.is_empty() {
        v["DisplayName"] = json!(m.display_name);
    }
    v["Description"] = json!(m.description);
    if !m.max_token_ttl.is_empty() {
        v["MaxTokenTTL"] = json!(m.max_token_ttl);
    }
    if !m.token_locality.is_empty() {
        v["TokenLocality"] = json!(m.token_locality);
    }
    if with_config {
        v["Config"] = Value::Object(m.config.clone());
    }
    v["CreateIndex"] = json!(m.create_index);
    v["ModifyIndex"] = json!(m.modify_index);
    v
}

fn rule_json(r: &BindingRuleRec) -> Value {
    json!({
        "ID": r.id,
        "Description": r.description,
        "AuthMethod": r.auth_method,
        "Selector": r.selector,
        "BindType": r.bind_type,
        "BindName": r.bind_name,
        "CreateIndex": r.create_index,
        "ModifyIndex": r.modify_index,
    })
}

/// Serves `auth-method(s)`, `binding-rule(s)` and `logout`. `None` when
/// the path is none of them.
pub(crate) fn handle(
    table: &AclTable,
    authz: &Authz,
    req: &crate::acl_http::AclRequest<'_>,
    kind: &str,
    arg: Option<&str>,
    apply: &mut dyn FnMut() -> u64,
) -> Option<Result<Value, ApiError>> {
    let (method, body, secret, query_authmethod, part) = (
        req.method,
        req.body,
        req.secret,
        req.authmethod,
        req.partition,
    );
    let key = |name: &str| (part.to_string(), name.to_string());
    let write = |apply| Write {
        table,
        part,
        body,
        apply,
    };
    let out = match (kind, arg, method) {
        ("logout", None, "POST") => logout(table, secret, apply),
        ("logout", _, _) => Err(ApiError::MethodNotAllowed {
            method: method.to_string(),
            allow: "OPTIONS,POST",
        }),
        ("auth-methods", None, "GET") => authz
            .require_acl_in(part, AclAccess::Read)
            .map_err(Into::into)
            .map(|()| {
                let st = table.state();
                Value::Array(
                    all_in(&st.auth_methods, part)
                        .map(|m| method_json(m, false))
                        .collect(),
                )
            }),
        ("auth-method", Some(name), "GET") if !name.is_empty() => authz
            .require_acl_in(part, AclAccess::Read)
            .map_err(Into::into)
            .and_then(|()| {
                let st = table.state();
                st.auth_methods
                    .get(&key(name))
                    .map(|m| method_json(m, true))
                    .ok_or_else(not_found)
            }),
        ("auth-method", url, "PUT") => authz
            .require_acl_in(part, AclAccess::Write)
            .map_err(Into::into)
            .and_then(|()| put_method(write(apply), url.filter(|n| !n.is_empty()))),
        ("auth-method", Some(name), "DELETE") if !name.is_empty() => authz
            .require_acl_in(part, AclAccess::Write)
            .map_err(Into::into)
            .map(|()| {
                let mut st = table.state_mut();
                if st.auth_methods.contains_key(&key(name)) {
                    apply();
                    st.auth_methods.remove(&key(name));
                    st.binding_rules
                        .retain(|_, r| r.auth_method != name || !in_partition(&r.partition, part));
                    let gone: Vec<(String, String)> = all_in(&st.tokens, part)
                        .filter(|t| t.auth_method == name)
                        .map(|t| (t.accessor_id.clone(), t.secret_id.clone()))
                        .collect();
                    for (a, s) in gone {
                        st.tokens.remove(&a);
                        st.by_secret.remove(&s);
                    }
                }
                json!(true)
            }),
        ("binding-rules", None, "GET") => authz
            .require_acl_in(part, AclAccess::Read)
            .map_err(Into::into)
            .map(|()| {
                let st = table.state();
                Value::Array(
                    all_in(&st.binding_rules, part)
                        .filter(|r| {
                            query_authmethod.is_none_or(|m| m.is_empty() || r.auth_method == m)
                        })
                        .map(rule_json)
                        .collect(),
                )
            }),
        ("binding-rule", Some(id), "GET") if !id.is_empty() => authz
            .require_acl_in(part, AclAccess::Read)
            .map_err(Into::into)
            .and_then(|()| {
                let st = table.state();
                get_in(&st.binding_rules, id, part)
                    .map(rule_json)
                    .ok_or_else(not_found)
            }),
        ("binding-rule", url, "PUT") => authz
            .require_acl_in(part, AclAccess::Write)
            .map_err(Into::into)
            .and_then(|()| put_rule(write(apply), url.filter(|n| !n.is_empty()))),
        ("binding-rule", Some(id), "DELETE") if !id.is_empty() => authz
            .require_acl_in(part, AclAccess::Write)
            .map_err(Into::into)
            .map(|()| {
                // Deleting a rule that is not there changes nothing, and succeeds.
                remove_in(&mut table.state_mut().binding_rules, id, part, apply);
                json!(true)
            }),
        ("auth-method" | "auth-methods" | "binding-rule" | "binding-rules", _, _) => {
            Err(ApiError::MethodNotAllowed {
                method: method.to_string(),
                allow: "OPTIONS,GET,PUT,DELETE",
            })
        }
        _ => return None,
    };
    Some(out)
}

/// Body field `key` (the object's name or ID), or the URL's when the body
/// has none; a body naming another object than the URL is refused (`what`
/// names the field in the error).
fn url_or_body(
    m: &Map<String, Value>,
    key: &str,
    url: Option<&str>,
    what: &str,
) -> Result<String, ApiError> {
    let given = str_field(m, key);
    match url {
        Some(u) if given.is_empty() => Ok(u.to_string()),
        Some(u) if given != u => Err(bad(format!("{what} in URL and payload do not match"))),
        _ => Ok(given),
    }
}

fn put_method(w: Write<'_>, url_name: Option<&str>) -> Result<Value, ApiError> {
    let m = decode(w.body, "AuthMethod")?;
    let name = url_or_body(&m, "Name", url_name, "Auth Method Name")?;
    if name.is_empty() {
        return Err(bad("Invalid Auth Method: no Name is set"));
    }
    if !sel::valid_role_name(&name) || name.len() > 128 {
        return Err(bad(
            "Invalid Auth Method: invalid Name. Only alphanumeric characters, '-' and '_' are allowed",
        ));
    }
    let part = w.part;
    let mut st = w.table.state_mut();
    let key = (part.to_string(), name.clone());
    let existing = st.auth_methods.get(&key).cloned();
    let mut kind = str_field(&m, "Type");
    if let Some(e) = &existing {
        if kind.is_empty() {
            kind = e.kind.clone();
        } else if kind != e.kind {
            return Err(bad("the Type field of an Auth Method is immutable"));
        }
    }
    if !matches!(kind.as_str(), "aws-iam" | "jwt" | "kubernetes" | "oidc") {
        return Err(bad(format!(
            "Invalid Auth Method: Type should be one of: {TYPES}"
        )));
    }
    if kind != "kubernetes" {
        return Err(bad(format!(
            "Invalid Auth Method: the sandbox models only kubernetes auth methods, not {kind:?}"
        )));
    }
    let locality = str_field(&m, "TokenLocality");
    if !matches!(locality.as_str(), "" | "local" | "global") {
        return Err(bad(
            "Invalid Auth Method: TokenLocality should be one of 'local' or 'global'",
        ));
    }
    let config = field(&m, "Config")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    validate_config(&config).map_err(|e| bad(format!("Invalid Auth Method: {e}")))?;
    let index = (w.apply)();
    let rec = AuthMethodRec {
        name: name.clone(),
        partition: part.to_string(),
        kind,
        display_name: str_field(&m, "DisplayName"),
        description: str_field(&m, "Description"),
        max_token_ttl: str_field(&m, "MaxTokenTTL"),
        token_locality: locality,
        config,
        create_index: existing.as_ref().map_or(index, |e| e.create_index),
        modify_index: index,
    };
    let out = method_json(&rec, true);
    st.auth_methods.insert(key, rec);
    Ok(out)
}

/// Whether `bind_name` makes a valid name of `bind_type` for some
/// identity (Consul checks it with every variable set to `fake`).
fn check_bind_name(bind_type: &str, bind_name: &str) -> Result<(), String> {
    let fake: BTreeMap<String, String> = sel::FIELDS
        .iter()
        .map(|f| (f.to_string(), "fake".to_string()))
        .collect();
    let name = sel::interpolate(bind_name, &fake)?;
    let ok = match bind_type {
        "service" | "node" => sel::valid_identity_name(&name),
        _ => sel::valid_role_name(&name),
    };
    if ok {
        Ok(())
    } else {
        Err(format!("invalid bind name: {name:?}"))
    }
}

fn put_rule(w: Write<'_>, url_id: Option<&str>) -> Result<Value, ApiError> {
    let m = decode(w.body, "BindingRule")?;
    let id = url_or_body(&m, "ID", url_id, "BindingRule ID")?;
    let part = w.part;
    let mut st = w.table.state_mut();
    let mut auth_method = str_field(&m, "AuthMethod");
    let existing = if id.is_empty() {
        None
    } else {
        if uuid::Uuid::parse_str(&id).is_err() {
            return Err(bad("Binding Rule ID invalid UUID"));
        }
        let e = get_in(&st.binding_rules, &id, part)
            .cloned()
            .ok_or_else(|| bad(format!("cannot find binding rule {id}")))?;
        if auth_method.is_empty() {
            auth_method = e.auth_method.clone();
        } else if auth_method != e.auth_method {
            return Err(bad("the AuthMethod field of an Binding Rule is immutable"));
        }
        Some(e)
    };
    if auth_method.is_empty() {
        return Err(bad("Invalid Binding Rule: no AuthMethod is set"));
    }
    if !st
        .auth_methods
        .contains_key(&(part.to_string(), auth_method.clone()))
    {
        return Err(bad(format!(
            "cannot find auth method with name {auth_method:?}"
        )));
    }
    let selector = str_field(&m, "Selector");
    if !selector.is_empty()
        && let Err(e) = sel::parse(&selector)
    {
        return Err(bad(format!(
            "invalid Binding Rule: Selector is invalid: {e}"
        )));
    }
    let bind_type = str_field(&m, "BindType");
    let bind_name = str_field(&m, "BindName");
    if bind_type.is_empty() {
        return Err(bad("Invalid Binding Rule: no BindType is set"));
    }
    if bind_name.is_empty() {
        return Err(bad("Invalid Binding Rule: no BindName is set"));
    }
    if bind_type == "templated-policy" {
        return Err(bad(
            "Invalid Binding Rule: the sandbox does not model the templated-policy BindType",
        ));
    }
    if !matches!(bind_type.as_str(), "service" | "node" | "role" | "policy") {
        return Err(bad(format!(
            "Invalid Binding Rule: unknown BindType {bind_type:?}"
        )));
    }
    if let Err(e) = check_bind_name(&bind_type, &bind_name) {
        return Err(bad(format!(
            "Invalid Binding Rule: invalid BindName: failed to validate bindType {bind_type:?}: {e}"
        )));
    }
    let id = if id.is_empty() {
        uuid::Uuid::new_v4().to_string()
    } else {
        id
    };
    let index = (w.apply)();
    let rec = BindingRuleRec {
        id: id.clone(),
        partition: part.to_string(),
        description: str_field(&m, "Description"),
        auth_method,
        selector,
        bind_type,
        bind_name,
        create_index: existing.as_ref().map_or(index, |e| e.create_index),
        modify_index: index,
    };
    let out = rule_json(&rec);
    st.binding_rules.insert(id, rec);
    Ok(out)
}

fn logout(
    table: &AclTable,
    secret: Option<&str>,
    apply: &mut dyn FnMut() -> u64,
) -> Result<Value, ApiError> {
    let secret = secret.filter(|s| !s.is_empty()).ok_or_else(not_found)?;
    let mut st = table.state_mut();
    let token = st
        .by_secret
        .get(secret)
        .and_then(|a| st.tokens.get(a))
        .cloned()
        .ok_or_else(not_found)?;
    if token.auth_method.is_empty() {
        return Err(permission_denied());
    }
    apply();
    st.tokens.remove(&token.accessor_id);
    st.by_secret.remove(&token.secret_id);
    Ok(json!(true))
}

/// A decoded `/v1/acl/login` body.
pub(crate) struct LoginRequest {
    pub auth_method: String,
    pub bearer_token: String,
    pub meta: BTreeMap<String, String>,
}

/// Decodes the login body (`Invalid Login request` when it has none).
pub(crate) fn login_request(body: &[u8]) -> Result<LoginRequest, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::Rpc(
            "Invalid Login request: Missing auth parameters".into(),
        ));
    }
    let m = decode(body, "Failed to decode request body")?;
    let meta = field(&m, "Meta")
        .and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default();
    Ok(LoginRequest {
        auth_method: str_field(&m, "AuthMethod"),
        bearer_token: str_field(&m, "BearerToken"),
        meta,
    })
}

/// The auth method's configuration for a login, or Consul's 403.
pub(crate) fn method_for_login(
    table: &AclTable,
    partition: &str,
    name: &str,
) -> Result<Map<String, Value>, ApiError> {
    if !table.enabled() {
        return Err(ApiError::Injected {
            status: 401,
            body: "ACL support disabled".into(),
        });
    }
    let st = table.state();
    st.auth_methods
        .get(&(partition.to_string(), name.to_string()))
        .map(|m| m.config.clone())
        .ok_or_else(|| {
            ApiError::Forbidden(crate::acl::AclError::Denied(format!(
                "ACL not found: auth method {name:?} not found"
            )))
        })
}

/// One HTTP exchange with the Kubernetes API: JSON in, status and JSON out.
async fn kube_call(
    host: &str,
    bearer: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> Result<(u16, Value), String> {
    use http_body_util::BodyExt;
    let base = host.trim_end_matches('/');
    let url = format!("{base}{path}");
    let verb = if method == "POST" { "Post" } else { "Get" };
    let fail = |e: &dyn std::fmt::Display| format!("{verb} {url:?}: {e}");
    let Some(authority) = base.strip_prefix("http://") else {
        return Err(fail(
            &"the sandbox reaches Kubernetes only over http:// (Config.Host)",
        ));
    };
    let authority = authority.split('/').next().unwrap_or_default().to_string();
    let exchange = async {
        let stream = tokio::net::TcpStream::connect(&authority)
            .await
            .map_err(|e| fail(&format!("dial tcp {authority}: {e}")))?;
        let (mut send, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(|e| fail(&e))?;
        tokio::spawn(conn);
        let prefix = base
            .strip_prefix("http://")
            .and_then(|r| r.split_once('/'))
            .map(|(_, p)| format!("/{p}"))
            .unwrap_or_default();
        let payload = body.map(|b| b.to_string()).unwrap_or_default();
        let req = http::Request::builder()
            .method(method)
            .uri(format!("{prefix}{path}"))
            .header(http::header::HOST, authority.as_str())
            .header(http::header::AUTHORIZATION, format!("Bearer {bearer}"))
            .header(http::header::ACCEPT, "application/json")
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(http_body_util::Full::new(bytes::Bytes::from(payload)))
            .map_err(|e| fail(&e))?;
        let resp = send.send_request(req).await.map_err(|e| fail(&e))?;
        let status = resp.status().as_u16();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| fail(&e))?
            .to_bytes();
        let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Ok::<_, String>((status, v))
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), exchange)
        .await
        .map_err(|_| fail(&"context deadline exceeded"))?
}

/// client-go's error for a non-2xx answer: the Status message.
fn status_error(status: u16, v: &Value) -> String {
    v.get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| format!("the server returned HTTP {status}"))
}

/// `kubeauth.Validator.ValidateLogin`: the identity's fields, or the error
/// Consul answers (500, its text).
pub(crate) async fn review_login(
    config: &Map<String, Value>,
    bearer_token: &str,
) -> Result<BTreeMap<String, String>, ApiError> {
    let rpc = ApiError::Rpc;
    if let Some(e) = jws_error(bearer_token) {
        return Err(rpc(format!("failed to parse and validate JWT: {e}")));
    }
    let s = |k: &str| field(config, k).and_then(Value::as_str).unwrap_or_default();
    let (host, jwt) = (s("Host"), s("ServiceAccountJWT"));
    let review = json!({
        "kind": "TokenReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"creationTimestamp": null},
        "spec": {"token": bearer_token},
        "status": {"user": {}},
    });
    let (status, tr) = kube_call(
        host,
        jwt,
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        Some(review),
    )
    .await
    .map_err(rpc)?;
    if !(200..300).contains(&status) {
        return Err(rpc(status_error(status, &tr)));
    }
    let st = tr.get("status").cloned().unwrap_or(Value::Null);
    if let Some(e) = st
        .get("error")
        .and_then(Value::as_str)
        .filter(|e| !e.is_empty())
    {
        return Err(rpc(format!("lookup failed: {e}")));
    }
    if st.get("authenticated").and_then(Value::as_bool) != Some(true) {
        return Err(rpc("lookup failed: service account jwt not valid".into()));
    }
    let username = st
        .pointer("/user/username")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let parts: Vec<&str> = username.split(':').collect();
    if parts.len() != 4 {
        return Err(rpc("lookup failed: unexpected username format".into()));
    }
    if parts[0] != "system" || parts[1] != "serviceaccount" {
        return Err(rpc(
            "lookup failed: username returned is not a service account".into(),
        ));
    }
    let (ns, mut name) = (parts[2].to_string(), parts[3].to_string());
    let uid = st
        .pointer("/user/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let (status, sa) = kube_call(
        host,
        jwt,
        "GET",
        &format!("/api/v1/namespaces/{ns}/serviceaccounts/{name}"),
        None,
    )
    .await
    .map_err(|e| rpc(format!("annotation lookup failed: {e}")))?;
    if !(200..300).contains(&status) {
        return Err(rpc(format!(
            "annotation lookup failed: {}",
            status_error(status, &sa)
        )));
    }
    if let Some(over) = sa
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(SERVICE_NAME_ANNOTATION))
        .and_then(Value::as_str)
    {
        name = over.to_string();
    }
    Ok([
        ("serviceaccount.namespace", ns),
        ("serviceaccount.name", name),
        ("serviceaccount.uid", uid),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect())
}

/// Applies the method's binding rules to a verified identity and stores
/// the login token (one Raft apply): Consul's binder and token writer.
pub(crate) fn finish_login(
    table: &AclTable,
    partition: &str,
    req: &LoginRequest,
    identity: &BTreeMap<String, String>,
    datacenter: &str,
    apply: &mut dyn FnMut() -> u64,
) -> Result<Value, ApiError> {
    let mut st = table.state_mut();
    let Some(method) = st
        .auth_methods
        .get(&(partition.to_string(), req.auth_method.clone()))
        .cloned()
    else {
        // Deleted while the review was in flight.
        return Err(ApiError::Forbidden(crate::acl::AclError::Denied(format!(
            "ACL not found: auth method {:?} not found",
            req.auth_method
        ))));
    };
    let (mut services, mut nodes, mut roles, mut policies) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for rule in st.binding_rules.values().filter(|r| {
        r.auth_method == method.name
            && in_partition(&r.partition, partition)
            && sel::matches(&r.selector, identity)
    }) {
        let name = sel::interpolate(&rule.bind_name, identity).map_err(ApiError::Rpc)?;
        let valid = match rule.bind_type.as_str() {
            "service" | "node" => sel::valid_identity_name(&name),
            _ => sel::valid_role_name(&name),
        };
        if !valid {
            return Err(ApiError::Rpc(format!("invalid bind name: {name:?}")));
        }
        match rule.bind_type.as_str() {
            "service" => services.push(name),
            "node" => nodes.push((name, datacenter.to_string())),
            "role" => roles.extend(named_in(&st.roles, &name, partition).map(|r| r.id.clone())),
            "policy" => {
                policies.extend(named_in(&st.policies, &name, partition).map(|p| p.id.clone()))
            }
            _ => {}
        }
    }
    if services.is_empty() && nodes.is_empty() && roles.is_empty() && policies.is_empty() {
        return Err(permission_denied());
    }
    let description = if req.meta.is_empty() {
        "token created via login".to_string()
    } else {
        format!(
            "token created via login: {}",
            serde_json::to_string(&req.meta).unwrap_or_default()
        )
    };
    let index = apply();
    let accessor_id = uuid::Uuid::new_v4().to_string();
    let secret_id = uuid::Uuid::new_v4().to_string();
    let rec = TokenRec {
        accessor_id: accessor_id.clone(),
        secret_id: secret_id.clone(),
        partition: partition.to_string(),
        description,
        policies,
        roles,
        local: method.token_locality != "global",
        auth_method: method.name.clone(),
        service_identities: services,
        node_identities: nodes,
        create_time: crate::acl::now_rfc3339(),
        create_index: index,
        modify_index: index,
    };
    let out = crate::acl_http::token_json(&st, &rec, true);
    st.by_secret.insert(secret_id, accessor_id.clone());
    st.tokens.insert(accessor_id, rec);
    Ok(out)
}
