//! The ACL endpoints: `/v1/acl/policy`, `/v1/acl/policies`,
//! `/v1/acl/role`, `/v1/acl/roles`, `/v1/acl/token`, `/v1/acl/tokens` and
//! `/v1/acl/token/self`, with Consul's JSON shapes and texts; auth
//! methods, binding rules and logout are `crate::acl_auth`'s.
//!
//! Every accepted write is one Raft apply (the caller's `apply` hands out
//! its index); a refused write applies nothing and changes nothing.
//!
//! This module must NOT touch the catalog; it only reads and writes the
//! ACL tables behind [`AclTable`].

use serde_json::{Map, Value, json};

use crate::acl::{
    AclAccess, AclState, AclTable, Authz, GLOBAL_MANAGEMENT_ID, PolicyRec, RoleRec, TokenRec,
    now_rfc3339,
};
use crate::acl_rules;
use crate::error::ApiError;

/// The request, as the server hands it over.
pub(crate) struct AclRequest<'a> {
    pub method: &'a str,
    /// The path after `/v1/acl/`.
    pub rest: &'a str,
    pub body: &'a [u8],
    /// The secret the request carried (for `token/self`).
    pub secret: Option<&'a str>,
    /// `?authmethod=` (the binding-rule list's filter).
    pub authmethod: Option<&'a str>,
    /// The admin partition the request addresses (`?partition=`, checked
    /// to exist; `default` without it or without Enterprise features).
    pub partition: &'a str,
}

/// Whether an ACL object of partition `of` is visible to a request
/// addressing partition `part`.
pub(crate) fn in_partition(of: &str, part: &str) -> bool {
    of.eq_ignore_ascii_case(part)
}

/// The counter-friendly template of an ACL path.
pub(crate) fn template(rest: &str) -> &'static str {
    match rest.split('/').next().unwrap_or_default() {
        "policy" => "/v1/acl/policy",
        "policies" => "/v1/acl/policies",
        "role" => "/v1/acl/role",
        "roles" => "/v1/acl/roles",
        "token" if rest == "token/self" => "/v1/acl/token/self",
        "token" => "/v1/acl/token",
        "tokens" => "/v1/acl/tokens",
        "auth-method" => "/v1/acl/auth-method",
        "auth-methods" => "/v1/acl/auth-methods",
        "binding-rule" => "/v1/acl/binding-rule",
        "binding-rules" => "/v1/acl/binding-rules",
        "login" => "/v1/acl/login",
        "logout" => "/v1/acl/logout",
        _ => "unknown",
    }
}

fn bad(msg: impl Into<String>) -> ApiError {
    ApiError::BadRequest(msg.into())
}

fn not_found() -> ApiError {
    ApiError::Forbidden(crate::acl::AclError::NotFound)
}

fn method_not_allowed(method: &str) -> ApiError {
    ApiError::MethodNotAllowed {
        method: method.to_string(),
        allow: "OPTIONS,GET,PUT,DELETE",
    }
}

/// Serves one ACL request. `apply` performs one Raft apply and returns its
/// index; it is called only once a write has passed every check.
pub(crate) fn handle(
    table: &AclTable,
    authz: &Authz,
    req: &AclRequest<'_>,
    apply: &mut dyn FnMut() -> u64,
) -> Result<Value, ApiError> {
    if !table.enabled() {
        return Err(ApiError::Injected {
            status: 401,
            body: "ACL support disabled".into(),
        });
    }
    let m = req.method;
    let parts: Vec<&str> = req.rest.splitn(2, '/').collect();
    let (kind, arg) = (parts[0], parts.get(1).copied());
    if kind == "token" && arg == Some("self") {
        if m != "GET" {
            return Err(method_not_allowed(m));
        }
        let secret = req.secret.filter(|s| !s.is_empty()).ok_or_else(not_found)?;
        let t = table.token_by_secret(secret).ok_or_else(not_found)?;
        return Ok(token_json(&table.state(), &t, true));
    }
    if let Some(out) = crate::acl_auth::handle(table, authz, req, kind, arg, apply) {
        return out;
    }
    let write = matches!(m, "PUT" | "DELETE");
    if !matches!(m, "GET" | "PUT" | "DELETE") {
        return Err(method_not_allowed(m));
    }
    let part = req.partition;
    authz.require_acl_in(
        part,
        if write {
            AclAccess::Write
        } else {
            AclAccess::Read
        },
    )?;
    match (kind, arg, m) {
        ("policies", None, "GET") => {
            let st = table.state();
            Ok(Value::Array(
                st.policies
                    .values()
                    .filter(|p| in_partition(&p.partition, part))
                    .map(|p| policy_json(p, false))
                    .collect(),
            ))
        }
        ("roles", None, "GET") => {
            let st = table.state();
            Ok(Value::Array(
                st.roles
                    .values()
                    .filter(|r| in_partition(&r.partition, part))
                    .map(|r| role_json(&st, r))
                    .collect(),
            ))
        }
        ("tokens", None, "GET") => {
            let st = table.state();
            Ok(Value::Array(
                st.tokens
                    .values()
                    .filter(|t| in_partition(&t.partition, part))
                    .map(|t| token_json(&st, t, true))
                    .collect(),
            ))
        }
        ("policy", None, "PUT") => put_policy(table, part, None, req.body, apply),
        ("policy", Some(id), "PUT") if !id.is_empty() => {
            put_policy(table, part, Some(id), req.body, apply)
        }
        ("policy", Some(name_path), "GET") if name_path.starts_with("name/") => {
            let name = &name_path["name/".len()..];
            let st = table.state();
            st.policies
                .values()
                .find(|p| p.name == name && in_partition(&p.partition, part))
                .map(|p| policy_json(p, true))
                .ok_or_else(not_found)
        }
        ("policy", Some(id), "GET") => {
            let st = table.state();
            st.policies
                .get(id)
                .filter(|p| in_partition(&p.partition, part))
                .map(|p| policy_json(p, true))
                .ok_or_else(not_found)
        }
        ("policy", Some(id), "DELETE") => {
            if id == GLOBAL_MANAGEMENT_ID {
                return Err(bad(
                    "Delete operation not permitted on the builtin global-management policy",
                ));
            }
            let mut st = table.state_mut();
            if !st
                .policies
                .get(id)
                .is_some_and(|p| in_partition(&p.partition, part))
            {
                return Err(not_found());
            }
            apply();
            st.policies.remove(id);
            Ok(json!(true))
        }
        ("role", None, "PUT") => put_role(table, part, None, req.body, apply),
        ("role", Some(id), "PUT") if !id.is_empty() => {
            put_role(table, part, Some(id), req.body, apply)
        }
        ("role", Some(id), "GET") => {
            let st = table.state();
            st.roles
                .get(id)
                .filter(|r| in_partition(&r.partition, part))
                .map(|r| role_json(&st, r))
                .ok_or_else(not_found)
        }
        ("role", Some(id), "DELETE") => {
            let mut st = table.state_mut();
            if !st
                .roles
                .get(id)
                .is_some_and(|r| in_partition(&r.partition, part))
            {
                return Err(not_found());
            }
            apply();
            st.roles.remove(id);
            Ok(json!(true))
        }
        ("token", None, "PUT") => put_token(table, part, None, req.body, apply),
        ("token", Some(id), "PUT") if !id.is_empty() => {
            put_token(table, part, Some(id), req.body, apply)
        }
        ("token", Some(id), "GET") => {
            let st = table.state();
            st.tokens
                .get(id)
                .filter(|t| in_partition(&t.partition, part))
                .map(|t| token_json(&st, t, true))
                .ok_or_else(not_found)
        }
        ("token", Some(id), "DELETE") => {
            let mut st = table.state_mut();
            let Some(t) = st
                .tokens
                .get(id)
                .filter(|t| in_partition(&t.partition, part))
                .cloned()
            else {
                return Err(not_found());
            };
            apply();
            st.tokens.remove(id);
            st.by_secret.remove(&t.secret_id);
            Ok(json!(true))
        }
        ("policy" | "role" | "token" | "policies" | "roles" | "tokens", _, _) => {
            Err(method_not_allowed(m))
        }
        _ => Err(ApiError::NotFound),
    }
}

pub(crate) fn decode(body: &[u8], what: &str) -> Result<Map<String, Value>, ApiError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(bad(format!(
            "{what} decoding failed: json: cannot unmarshal into Go value"
        ))),
        Err(e) => Err(bad(format!("{what} decoding failed: {e}"))),
    }
}

/// A body field, matched case-insensitively as Go's JSON decoder does
/// (py-consul, for one, sends `name` and `rules`).
pub(crate) fn field<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    m.get(key).or_else(|| {
        m.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    })
}

pub(crate) fn str_field(m: &Map<String, Value>, key: &str) -> String {
    field(m, key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn put_policy(
    table: &AclTable,
    part: &str,
    url_id: Option<&str>,
    body: &[u8],
    apply: &mut dyn FnMut() -> u64,
) -> Result<Value, ApiError> {
    let m = decode(body, "Policy")?;
    let body_id = str_field(&m, "ID");
    if let Some(id) = url_id
        && !body_id.is_empty()
        && body_id != id
    {
        return Err(bad("Policy ID in URL and payload do not match"));
    }
    let name = str_field(&m, "Name");
    if !valid_name(&name) {
        return Err(bad(
            "Invalid Policy: invalid Name. Only alphanumeric characters, '-' and '_' are allowed",
        ));
    }
    let rules = str_field(&m, "Rules");
    let parsed = acl_rules::parse(&rules).map_err(|e| bad(format!("Invalid Policy: {e}")))?;
    let datacenters = field(&m, "Datacenters")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let mut st = table.state_mut();
    let id = match url_id {
        Some(id) => {
            if !st
                .policies
                .get(id)
                .is_some_and(|p| in_partition(&p.partition, part))
            {
                return Err(bad(format!(
                    "Invalid Policy: A Policy with ID {} does not exist",
                    crate::store::go_quote(id)
                )));
            }
            if id == GLOBAL_MANAGEMENT_ID {
                return Err(bad(
                    "Changing the Rules for the builtin global-management policy is not permitted",
                ));
            }
            id.to_string()
        }
        None => uuid::Uuid::new_v4().to_string(),
    };
    if st
        .policies
        .values()
        .any(|p| p.name == name && p.id != id && in_partition(&p.partition, part))
    {
        return Err(bad(format!(
            "Invalid Policy: A Policy with Name {} already exists",
            crate::store::go_quote(&name)
        )));
    }
    let index = apply();
    let create_index = st.policies.get(&id).map_or(index, |p| p.create_index);
    let rec = PolicyRec {
        id: id.clone(),
        partition: part.to_string(),
        name,
        description: str_field(&m, "Description"),
        rules,
        parsed,
        datacenters,
        create_index,
        modify_index: index,
    };
    let out = policy_json(&rec, true);
    st.policies.insert(id, rec);
    Ok(out)
}

/// Resolves `[{"ID": ...} | {"Name": ...}]` policy links to IDs.
fn policy_links(
    st: &AclState,
    part: &str,
    m: &Map<String, Value>,
) -> Result<Vec<String>, ApiError> {
    let mut out = Vec::new();
    for link in field(m, "Policies")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let id = link.get("ID").and_then(Value::as_str).unwrap_or_default();
        let name = link.get("Name").and_then(Value::as_str).unwrap_or_default();
        let found = if !id.is_empty() {
            st.policies
                .get(id)
                .filter(|p| in_partition(&p.partition, part))
                .map(|p| p.id.clone())
                .ok_or_else(|| bad(format!("cannot find policy {}", crate::store::go_quote(id))))?
        } else if !name.is_empty() {
            st.policies
                .values()
                .find(|p| p.name == name && in_partition(&p.partition, part))
                .map(|p| p.id.clone())
                .ok_or_else(|| {
                    bad(format!(
                        "cannot find policy {}",
                        crate::store::go_quote(name)
                    ))
                })?
        } else {
            return Err(bad("Policy link missing both ID and Name"));
        };
        if !out.contains(&found) {
            out.push(found);
        }
    }
    Ok(out)
}

fn role_links(st: &AclState, part: &str, m: &Map<String, Value>) -> Result<Vec<String>, ApiError> {
    let mut out = Vec::new();
    for link in field(m, "Roles")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let id = link.get("ID").and_then(Value::as_str).unwrap_or_default();
        let name = link.get("Name").and_then(Value::as_str).unwrap_or_default();
        let found = st
            .roles
            .values()
            .find(|r| {
                in_partition(&r.partition, part)
                    && ((!id.is_empty() && r.id == id)
                        || (id.is_empty() && !name.is_empty() && r.name == name))
            })
            .map(|r| r.id.clone())
            .ok_or_else(|| {
                bad(format!(
                    "cannot find role {}",
                    crate::store::go_quote(if id.is_empty() { name } else { id })
                ))
            })?;
        if !out.contains(&found) {
            out.push(found);
        }
    }
    Ok(out)
}

fn put_role(
    table: &AclTable,
    part: &str,
    url_id: Option<&str>,
    body: &[u8],
    apply: &mut dyn FnMut() -> u64,
) -> Result<Value, ApiError> {
    let m = decode(body, "Role")?;
    let body_id = str_field(&m, "ID");
    if let Some(id) = url_id
        && !body_id.is_empty()
        && body_id != id
    {
        return Err(bad("Role ID in URL and payload do not match"));
    }
    let name = str_field(&m, "Name");
    if !valid_name(&name) {
        return Err(bad(
            "Invalid Role: invalid Name. Only alphanumeric characters, '-' and '_' are allowed",
        ));
    }
    let mut st = table.state_mut();
    let policies = policy_links(&st, part, &m)?;
    let id = match url_id {
        Some(id)
            if !st
                .roles
                .get(id)
                .is_some_and(|r| in_partition(&r.partition, part)) =>
        {
            return Err(bad(format!(
                "Role {} does not exist",
                crate::store::go_quote(id)
            )));
        }
        Some(id) => id.to_string(),
        None => uuid::Uuid::new_v4().to_string(),
    };
    if st
        .roles
        .values()
        .any(|r| r.name == name && r.id != id && in_partition(&r.partition, part))
    {
        return Err(bad(format!(
            "Invalid Role: A Role with Name {} already exists",
            crate::store::go_quote(&name)
        )));
    }
    let index = apply();
    let create_index = st.roles.get(&id).map_or(index, |r| r.create_index);
    let rec = RoleRec {
        id: id.clone(),
        partition: part.to_string(),
        name,
        description: str_field(&m, "Description"),
        policies,
        create_index,
        modify_index: index,
    };
    let out = role_json(&st, &rec);
    st.roles.insert(id, rec);
    Ok(out)
}

fn put_token(
    table: &AclTable,
    part: &str,
    url_id: Option<&str>,
    body: &[u8],
    apply: &mut dyn FnMut() -> u64,
) -> Result<Value, ApiError> {
    let m = decode(body, "Token")?;
    let body_accessor = str_field(&m, "AccessorID");
    if let Some(id) = url_id
        && !body_accessor.is_empty()
        && body_accessor != id
    {
        return Err(bad("Token Accessor ID in URL and payload do not match"));
    }
    let mut st = table.state_mut();
    let policies = policy_links(&st, part, &m)?;
    let roles = role_links(&st, part, &m)?;
    let existing = match url_id {
        Some(id) => Some(
            st.tokens
                .get(id)
                .filter(|t| in_partition(&t.partition, part))
                .cloned()
                .ok_or_else(|| bad(format!("Cannot find token {}", crate::store::go_quote(id))))?,
        ),
        None => None,
    };
    let accessor_id = match (&existing, body_accessor.is_empty()) {
        (Some(t), _) => t.accessor_id.clone(),
        (None, false) => {
            if st.tokens.contains_key(&body_accessor) {
                return Err(bad("Invalid Token: AccessorID is already in use"));
            }
            body_accessor
        }
        (None, true) => uuid::Uuid::new_v4().to_string(),
    };
    let body_secret = str_field(&m, "SecretID");
    let secret_id = match &existing {
        Some(t) => {
            if !body_secret.is_empty() && body_secret != t.secret_id {
                return Err(bad("Changing a token's SecretID is not permitted"));
            }
            t.secret_id.clone()
        }
        None if body_secret.is_empty() => uuid::Uuid::new_v4().to_string(),
        None => {
            if st.by_secret.contains_key(&body_secret) {
                return Err(bad("Invalid Token: SecretID is already in use"));
            }
            body_secret
        }
    };
    let index = apply();
    let rec = TokenRec {
        accessor_id: accessor_id.clone(),
        secret_id: secret_id.clone(),
        partition: part.to_string(),
        description: str_field(&m, "Description"),
        policies,
        roles,
        local: field(&m, "Local").and_then(Value::as_bool).unwrap_or(false),
        auth_method: existing
            .as_ref()
            .map(|t| t.auth_method.clone())
            .unwrap_or_default(),
        service_identities: existing
            .as_ref()
            .map(|t| t.service_identities.clone())
            .unwrap_or_default(),
        node_identities: existing
            .as_ref()
            .map(|t| t.node_identities.clone())
            .unwrap_or_default(),
        create_time: existing
            .as_ref()
            .map_or_else(now_rfc3339, |t| t.create_time.clone()),
        create_index: existing.as_ref().map_or(index, |t| t.create_index),
        modify_index: index,
    };
    let out = token_json(&st, &rec, true);
    st.by_secret.insert(secret_id, accessor_id.clone());
    st.tokens.insert(accessor_id, rec);
    Ok(out)
}

/// A short content hash, as Consul reports in `Hash` (base64 of a digest).
fn hash(parts: &[&str]) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    parts.hash(&mut h);
    let v = h.finish().to_be_bytes();
    const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in v.chunks(3) {
        let n =
            chunk.iter().fold(0u32, |acc, b| (acc << 8) | u32::from(*b)) << (8 * (3 - chunk.len()));
        for i in 0..=chunk.len() {
            out.push(char::from(B64[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    while !out.len().is_multiple_of(4) {
        out.push('=');
    }
    out
}

fn policy_json(p: &PolicyRec, with_rules: bool) -> Value {
    let mut v = json!({
        "ID": p.id,
        "Name": p.name,
        "Description": p.description,
        "Hash": hash(&[&p.name, &p.description, &p.rules]),
        "CreateIndex": p.create_index,
        "ModifyIndex": p.modify_index,
    });
    if with_rules {
        v["Rules"] = json!(p.rules);
    }
    if !p.datacenters.is_empty() {
        v["Datacenters"] = json!(p.datacenters);
    }
    v
}

fn links(st: &AclState, ids: &[String]) -> Value {
    Value::Array(
        ids.iter()
            .filter_map(|id| st.policies.get(id))
            .map(|p| json!({"ID": p.id, "Name": p.name}))
            .collect(),
    )
}

fn role_json(st: &AclState, r: &RoleRec) -> Value {
    json!({
        "ID": r.id,
        "Name": r.name,
        "Description": r.description,
        "Policies": links(st, &r.policies),
        "Hash": hash(&[&r.name, &r.description, &r.policies.join(",")]),
        "CreateIndex": r.create_index,
        "ModifyIndex": r.modify_index,
    })
}

pub(crate) fn token_json(st: &AclState, t: &TokenRec, with_secret: bool) -> Value {
    let roles: Vec<Value> = t
        .roles
        .iter()
        .filter_map(|id| st.roles.get(id))
        .map(|r| json!({"ID": r.id, "Name": r.name}))
        .collect();
    let mut v = json!({
        "AccessorID": t.accessor_id,
        "Description": t.description,
        "Policies": links(st, &t.policies),
        "Local": t.local,
        "CreateTime": t.create_time,
        "Hash": hash(&[&t.description, &t.policies.join(","), &t.roles.join(",")]),
        "CreateIndex": t.create_index,
        "ModifyIndex": t.modify_index,
    });
    if !roles.is_empty() {
        v["Roles"] = Value::Array(roles);
    }
    if !t.service_identities.is_empty() {
        v["ServiceIdentities"] = t
            .service_identities
            .iter()
            .map(|s| json!({"ServiceName": s}))
            .collect();
    }
    if !t.node_identities.is_empty() {
        v["NodeIdentities"] = t
            .node_identities
            .iter()
            .map(|(n, dc)| json!({"NodeName": n, "Datacenter": dc}))
            .collect();
    }
    if !t.auth_method.is_empty() {
        v["AuthMethod"] = json!(t.auth_method);
    }
    v["SecretID"] = json!(if with_secret {
        t.secret_id.as_str()
    } else {
        "<hidden>"
    });
    v
}
