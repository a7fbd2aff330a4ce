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

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::acl::{
    AclAccess, AclState, AclTable, AuthMethodRec, Authz, BindingRuleRec, GLOBAL_MANAGEMENT_ID,
    PolicyRec, RoleRec, TokenRec, now_rfc3339,
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

/// An object of the ACL tables, stored in one admin partition.
pub(crate) trait InPartition {
    /// The partition the object lives in.
    fn partition(&self) -> &str;
}

/// A policy or role: an object with a name unique within its partition.
pub(crate) trait Named: InPartition {
    fn id(&self) -> &str;
    fn name(&self) -> &str;
    fn create_index(&self) -> u64;
}

/// Implements trait `$tr` for each record listed with the one `$body`: the
/// records share no type, only the fields the body reads.
macro_rules! impl_for_each {
    ($tr:ident for [$($rec:ident),+] $body:tt) => {
        $(impl $tr for $rec $body)+
    };
}

impl_for_each!(InPartition for [PolicyRec, RoleRec, TokenRec, AuthMethodRec, BindingRuleRec] {
    fn partition(&self) -> &str {
        &self.partition
    }
});

impl_for_each!(Named for [PolicyRec, RoleRec] {
    fn id(&self) -> &str {
        &self.id
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn create_index(&self) -> u64 {
        self.create_index
    }
});

/// The objects of `map` a request addressing partition `part` sees.
pub(crate) fn all_in<'a, K, R: InPartition>(
    map: &'a BTreeMap<K, R>,
    part: &'a str,
) -> impl Iterator<Item = &'a R> {
    map.values()
        .filter(move |r| in_partition(r.partition(), part))
}

/// Object `id` of `map`, if a request addressing partition `part` sees it.
pub(crate) fn get_in<'a, R: InPartition>(
    map: &'a BTreeMap<String, R>,
    id: &str,
    part: &str,
) -> Option<&'a R> {
    map.get(id).filter(|r| in_partition(r.partition(), part))
}

/// The object of `map` named `name` that partition `part` sees.
pub(crate) fn named_in<'a, R: Named>(
    map: &'a BTreeMap<String, R>,
    name: &str,
    part: &'a str,
) -> Option<&'a R> {
    all_in(map, part).find(|r| r.name() == name)
}

/// Removes object `id` of `map` if a request addressing partition `part`
/// sees it, in one Raft apply; `None`, with nothing applied, if it does not.
pub(crate) fn remove_in<R: InPartition>(
    map: &mut BTreeMap<String, R>,
    id: &str,
    part: &str,
    apply: &mut dyn FnMut() -> u64,
) -> Option<R> {
    get_in(map, id, part)?;
    apply();
    map.remove(id)
}

/// An ACL write: the tables, the partition the request addresses, its
/// body, and the Raft apply, to be called once the write has passed every
/// check (and never before).
pub(crate) struct Write<'w> {
    pub table: &'w AclTable,
    pub part: &'w str,
    pub body: &'w [u8],
    pub apply: &'w mut dyn FnMut() -> u64,
}

impl<'w> Write<'w> {
    /// The write `req` asks of `table`.
    fn new(
        table: &'w AclTable,
        req: &'w AclRequest<'_>,
        apply: &'w mut dyn FnMut() -> u64,
    ) -> Write<'w> {
        Write {
            table,
            part: req.partition,
            body: req.body,
            apply,
        }
    }
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

pub(crate) fn bad(msg: impl Into<String>) -> ApiError {
    ApiError::BadRequest(msg.into())
}

pub(crate) fn not_found() -> ApiError {
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
        // An empty ID in the URL is no ID: the method is not allowed.
        ("policy" | "role" | "token", url, "PUT") if url != Some("") => {
            let w = Write::new(table, req, apply);
            match kind {
                "policy" => put_policy(w, url),
                "role" => put_role(w, url),
                _ => put_token(w, url),
            }
        }
        ("policies", None, "GET") => {
            let st = table.state();
            let all = all_in(&st.policies, part).map(|p| policy_json(p, false));
            Ok(Value::Array(all.collect()))
        }
        ("roles", None, "GET") => {
            let st = table.state();
            let all = all_in(&st.roles, part).map(|r| role_json(&st, r));
            Ok(Value::Array(all.collect()))
        }
        ("tokens", None, "GET") => {
            let st = table.state();
            let all = all_in(&st.tokens, part).map(|t| token_json(&st, t, true));
            Ok(Value::Array(all.collect()))
        }
        ("policy", Some(name_path), "GET") if name_path.starts_with("name/") => {
            let name = &name_path["name/".len()..];
            let st = table.state();
            named_in(&st.policies, name, part)
                .map(|p| policy_json(p, true))
                .ok_or_else(not_found)
        }
        ("policy", Some(id), "GET") => {
            let st = table.state();
            get_in(&st.policies, id, part)
                .map(|p| policy_json(p, true))
                .ok_or_else(not_found)
        }
        ("policy", Some(id), "DELETE") => {
            if id == GLOBAL_MANAGEMENT_ID {
                return Err(bad(
                    "Delete operation not permitted on the builtin global-management policy",
                ));
            }
            remove_in(&mut table.state_mut().policies, id, part, apply).ok_or_else(not_found)?;
            Ok(json!(true))
        }
        ("role", Some(id), "GET") => {
            let st = table.state();
            get_in(&st.roles, id, part)
                .map(|r| role_json(&st, r))
                .ok_or_else(not_found)
        }
        ("role", Some(id), "DELETE") => {
            remove_in(&mut table.state_mut().roles, id, part, apply).ok_or_else(not_found)?;
            Ok(json!(true))
        }
        ("token", Some(id), "GET") => {
            let st = table.state();
            get_in(&st.tokens, id, part)
                .map(|t| token_json(&st, t, true))
                .ok_or_else(not_found)
        }
        ("token", Some(id), "DELETE") => {
            let mut st = table.state_mut();
            let t = remove_in(&mut st.tokens, id, part, apply).ok_or_else(not_found)?;
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

/// The ID in body field `key`; when the URL names one too, they must
/// match (`what` names the ID in the error).
fn body_id(
    m: &Map<String, Value>,
    key: &str,
    url_id: Option<&str>,
    what: &str,
) -> Result<String, ApiError> {
    let id = str_field(m, key);
    match url_id {
        Some(u) if !id.is_empty() && id != u => {
            Err(bad(format!("{what} in URL and payload do not match")))
        }
        _ => Ok(id),
    }
}

/// The body of a policy or role write (`what`: `Policy`, `Role`) and the
/// name it gives, once its ID matches the URL's and its name is valid.
fn named_body(
    body: &[u8],
    url_id: Option<&str>,
    what: &str,
) -> Result<(Map<String, Value>, String), ApiError> {
    let m = decode(body, what)?;
    body_id(&m, "ID", url_id, &format!("{what} ID"))?;
    let name = str_field(&m, "Name");
    if !valid_name(&name) {
        return Err(bad(format!(
            "Invalid {what}: invalid Name. Only alphanumeric characters, '-' and '_' are allowed"
        )));
    }
    Ok((m, name))
}

/// Applies the write of `what` `id` named `name` in partition `part`, which
/// no other object of `map` there may be named: the write's index, and the
/// create index the object keeps (its own if it exists).
fn apply_named<R: Named>(
    map: &BTreeMap<String, R>,
    what: &str,
    id: &str,
    name: &str,
    part: &str,
    apply: &mut dyn FnMut() -> u64,
) -> Result<(u64, u64), ApiError> {
    if all_in(map, part).any(|r| r.name() == name && r.id() != id) {
        return Err(bad(format!(
            "Invalid {what}: A {what} with Name {} already exists",
            crate::store::go_quote(name)
        )));
    }
    let index = apply();
    Ok((index, map.get(id).map_or(index, R::create_index)))
}

fn put_policy(w: Write<'_>, url_id: Option<&str>) -> Result<Value, ApiError> {
    let (m, name) = named_body(w.body, url_id, "Policy")?;
    let part = w.part;
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
    let mut st = w.table.state_mut();
    let id = match url_id {
        Some(id) => {
            if get_in(&st.policies, id, part).is_none() {
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
    let (index, create_index) = apply_named(&st.policies, "Policy", &id, &name, part, w.apply)?;
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

/// The IDs the `[{"ID": ...} | {"Name": ...}]` links of body field `key`
/// name, in order and without repeats; `resolve` finds one link's from its
/// ID and name (empty when absent).
fn resolve_links(
    m: &Map<String, Value>,
    key: &str,
    mut resolve: impl FnMut(&str, &str) -> Result<String, ApiError>,
) -> Result<Vec<String>, ApiError> {
    let mut out = Vec::new();
    for link in field(m, key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let id = link.get("ID").and_then(Value::as_str).unwrap_or_default();
        let name = link.get("Name").and_then(Value::as_str).unwrap_or_default();
        let found = resolve(id, name)?;
        if !out.contains(&found) {
            out.push(found);
        }
    }
    Ok(out)
}

/// Resolves the body's policy links to IDs.
fn policy_links(
    st: &AclState,
    part: &str,
    m: &Map<String, Value>,
) -> Result<Vec<String>, ApiError> {
    resolve_links(m, "Policies", |id, name| {
        if !id.is_empty() {
            get_in(&st.policies, id, part)
                .map(|p| p.id.clone())
                .ok_or_else(|| bad(format!("cannot find policy {}", crate::store::go_quote(id))))
        } else if !name.is_empty() {
            named_in(&st.policies, name, part)
                .map(|p| p.id.clone())
                .ok_or_else(|| {
                    bad(format!(
                        "cannot find policy {}",
                        crate::store::go_quote(name)
                    ))
                })
        } else {
            Err(bad("Policy link missing both ID and Name"))
        }
    })
}

/// Resolves the body's role links to IDs.
fn role_links(st: &AclState, part: &str, m: &Map<String, Value>) -> Result<Vec<String>, ApiError> {
    resolve_links(m, "Roles", |id, name| {
        all_in(&st.roles, part)
            .find(|r| {
                (!id.is_empty() && r.id == id)
                    || (id.is_empty() && !name.is_empty() && r.name == name)
            })
            .map(|r| r.id.clone())
            .ok_or_else(|| {
                bad(format!(
                    "cannot find role {}",
                    crate::store::go_quote(if id.is_empty() { name } else { id })
                ))
            })
    })
}

fn put_role(w: Write<'_>, url_id: Option<&str>) -> Result<Value, ApiError> {
    let (m, name) = named_body(w.body, url_id, "Role")?;
    let part = w.part;
    let mut st = w.table.state_mut();
    let policies = policy_links(&st, part, &m)?;
    let id = match url_id {
        Some(id) if get_in(&st.roles, id, part).is_none() => {
            return Err(bad(format!(
                "Role {} does not exist",
                crate::store::go_quote(id)
            )));
        }
        Some(id) => id.to_string(),
        None => uuid::Uuid::new_v4().to_string(),
    };
    let (index, create_index) = apply_named(&st.roles, "Role", &id, &name, part, w.apply)?;
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

fn put_token(w: Write<'_>, url_id: Option<&str>) -> Result<Value, ApiError> {
    let m = decode(w.body, "Token")?;
    let part = w.part;
    let body_accessor = body_id(&m, "AccessorID", url_id, "Token Accessor ID")?;
    let mut st = w.table.state_mut();
    let policies = policy_links(&st, part, &m)?;
    let roles = role_links(&st, part, &m)?;
    let existing = match url_id {
        Some(id) => Some(
            get_in(&st.tokens, id, part)
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
    let index = (w.apply)();
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
