//! Consul Enterprise namespaces and admin partitions, switched on by
//! [`crate::Config::enterprise`]: the `/v1/namespace[s]` and
//! `/v1/partition[s]` endpoints, name validation, and the namespace a
//! catalog write lands in.
//!
//! ```text
//!   PUT /v1/namespace            create (400 if it exists)
//!   PUT /v1/namespace/<name>     create or update
//!   GET /v1/namespace/<name>     404 when unknown
//!   DELETE /v1/namespace/<name>  its services and their checks go, then it
//!   GET /v1/namespaces           filtered by ACLs
//!   (the same for partitions)
//! ```
//!
//! Namespaces belong to a partition, as in Consul Enterprise: the
//! namespace endpoints take `?partition=` (or the body's `Partition` on a
//! write), each partition has its own builtin `default` namespace, and
//! the same namespace name in two partitions is two namespaces.
//!
//! Every write is one Raft apply. Consul marks a deleted namespace or
//! partition with `DeletedAt` and reaps its contents in the background;
//! the sandbox does both in the delete's own apply, so `DeletedAt` is
//! never seen: a deleted namespace takes its services (and their checks)
//! with it, a deleted partition its namespaces and nodes (with everything
//! on them).
//!
//! This module must NOT know about HTTP framing or the catalog's indexes;
//! it validates, renders and edits the tenancy table.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::acl::{AclAccess, AclTable, Authz};
use crate::acl_http::{decode, field, str_field};
use crate::error::ApiError;
use crate::model::DEFAULT_TENANCY;
use crate::store::{Store, fold, go_quote};

/// A namespace or partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TenancyRec {
    pub name: String,
    /// The partition a namespace belongs to (a partition's own name for
    /// partitions).
    pub partition: String,
    pub description: String,
    pub meta: BTreeMap<String, String>,
    /// `ACLs.PolicyDefaults` and `ACLs.RoleDefaults` as `(ID, Name)`
    /// (namespaces only).
    pub policy_defaults: Vec<(String, String)>,
    pub role_defaults: Vec<(String, String)>,
    pub create_index: u64,
    pub modify_index: u64,
}

/// Namespaces keyed by (folded partition, folded name); partitions by
/// folded name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Tenancy {
    pub namespaces: BTreeMap<(String, String), TenancyRec>,
    pub partitions: BTreeMap<String, TenancyRec>,
}

impl Tenancy {
    /// The builtin `default` namespace and partition, as Consul Enterprise
    /// has from its first start.
    pub fn builtin() -> Tenancy {
        let rec = |what: &str| TenancyRec {
            name: DEFAULT_TENANCY.into(),
            partition: DEFAULT_TENANCY.into(),
            description: format!("Builtin Default {what}"),
            meta: BTreeMap::new(),
            policy_defaults: Vec::new(),
            role_defaults: Vec::new(),
            create_index: 1,
            modify_index: 1,
        };
        Tenancy {
            namespaces: BTreeMap::from([(
                (DEFAULT_TENANCY.into(), DEFAULT_TENANCY.into()),
                rec("Namespace"),
            )]),
            partitions: BTreeMap::from([(DEFAULT_TENANCY.into(), rec("Partition"))]),
        }
    }
}

/// The namespace and partition a request names (`?ns=`, `?partition=`),
/// and whether Enterprise features are on at all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Scope {
    pub enterprise: bool,
    /// `?ns=` ("" when absent).
    pub ns: String,
    /// `?partition=` ("" when absent).
    pub partition: String,
}

impl Scope {
    /// Consul CE: no namespaces, every field ignored.
    pub fn ce() -> Scope {
        Scope::default()
    }

    /// The namespace of `partition` a service write lands in: the first
    /// non-empty of `given` (the body's fields, innermost first), then
    /// `?ns=`, then `default`. `None` without Enterprise features. A name
    /// that is not a DNS label is a 400; an unknown namespace, Consul's
    /// refusal.
    pub fn write_ns(
        &self,
        store: &Store,
        partition: &str,
        given: &[&str],
    ) -> Result<Option<String>, ApiError> {
        let Some(name) = self.named(given, false)? else {
            return Ok(None);
        };
        let key = (fold(partition), fold(name));
        match store.tenancy.namespaces.get(&key) {
            Some(rec) => Ok(Some(rec.name.clone())),
            None => Err(missing(false, name)),
        }
    }

    /// The partition a write or read of catalog data names: the first
    /// non-empty of `given` (the body's fields), then `?partition=`, then
    /// `default`. It must be a DNS label (400) and exist (Consul's
    /// refusal). `None` without Enterprise features.
    pub fn data_partition(
        &self,
        store: &Store,
        given: &[&str],
    ) -> Result<Option<String>, ApiError> {
        let Some(name) = self.named(given, true)? else {
            return Ok(None);
        };
        match store.tenancy.partitions.get(&fold(name)) {
            Some(rec) => Ok(Some(rec.name.clone())),
            None => Err(missing(true, name)),
        }
    }

    /// The partition and the namespace of it a catalog write lands in: see
    /// [`Scope::data_partition`] (`partition`: the body's) and
    /// [`Scope::write_ns`] (`namespaces`: the body's, innermost first).
    pub fn write_target(
        &self,
        store: &Store,
        partition: &str,
        namespaces: &[&str],
    ) -> Result<(Option<String>, Option<String>), ApiError> {
        let partition = self.data_partition(store, &[partition])?;
        let part = partition.as_deref().unwrap_or(DEFAULT_TENANCY);
        let ns = self.write_ns(store, part, namespaces)?;
        Ok((partition, ns))
    }

    /// The namespace (`partition`: the partition) name a request names:
    /// the first non-empty of `given`, then the query's, then `default`.
    /// `None` without Enterprise features; a 400 when it is not a DNS label.
    fn named<'a>(
        &'a self,
        given: &[&'a str],
        partition: bool,
    ) -> Result<Option<&'a str>, ApiError> {
        if !self.enterprise {
            return Ok(None);
        }
        let query = if partition { &self.partition } else { &self.ns };
        let name = given
            .iter()
            .copied()
            .chain([query.as_str()])
            .find(|n| !n.is_empty())
            .unwrap_or(DEFAULT_TENANCY);
        if valid_name(name) {
            Ok(Some(name))
        } else {
            Err(invalid_name(partition, name))
        }
    }
}

/// Consul requires namespace and partition names to be DNS hostname
/// labels: letters, digits and inner hyphens, at most 63 characters.
pub(crate) fn valid_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

fn kind_word(partition: bool) -> &'static str {
    if partition { "Partition" } else { "Namespace" }
}

/// The 400 for a name that is not a DNS label.
pub(crate) fn invalid_name(partition: bool, name: &str) -> ApiError {
    ApiError::BadRequest(format!(
        "Invalid {} name {}: must be a valid DNS hostname label",
        kind_word(partition),
        go_quote(name)
    ))
}

/// The error of a catalog write naming a namespace (partition) that does
/// not exist. It is found by the RPC, so it is a 500 like Consul's
/// other state-store refusals.
pub(crate) fn missing(partition: bool, name: &str) -> ApiError {
    ApiError::Rpc(format!(
        "{} {} does not exist",
        kind_word(partition),
        go_quote(name)
    ))
}

fn not_found(partition: bool, name: &str) -> ApiError {
    ApiError::NotFoundText(format!(
        "{} not found: {}",
        kind_word(partition),
        go_quote(name)
    ))
}

fn render(r: &TenancyRec, partition: bool) -> Value {
    let mut o = Map::new();
    o.insert("Name".into(), json!(r.name));
    o.insert("Description".into(), json!(r.description));
    if !partition {
        let links = |l: &[(String, String)]| {
            l.iter()
                .map(|(id, name)| json!({"ID": id, "Name": name}))
                .collect::<Vec<_>>()
        };
        o.insert(
            "ACLs".into(),
            json!({
                "PolicyDefaults": links(&r.policy_defaults),
                "RoleDefaults": links(&r.role_defaults),
            }),
        );
        o.insert("Partition".into(), json!(r.partition));
    }
    o.insert("Meta".into(), json!(r.meta));
    o.insert("CreateIndex".into(), json!(r.create_index));
    o.insert("ModifyIndex".into(), json!(r.modify_index));
    Value::Object(o)
}

/// A request to a tenancy endpoint.
pub(crate) struct TenancyRequest<'a> {
    pub method: &'a str,
    /// Partitions (true) or namespaces.
    pub partition: bool,
    /// `/v1/namespaces` (true) or `/v1/namespace[/<name>]`.
    pub list: bool,
    /// The path name (`None` for `PUT /v1/namespace`).
    pub name: Option<&'a str>,
    /// `?partition=` ("" when absent): the partition a namespace request
    /// is about. Ignored by the partition endpoints.
    pub partition_param: &'a str,
    pub body: &'a [u8],
}

/// What the server must do after a tenancy write: wake readers.
pub(crate) type Answer = Result<Value, ApiError>;

fn method_not_allowed(method: &str, allow: &'static str) -> ApiError {
    ApiError::MethodNotAllowed {
        method: method.to_string(),
        allow,
    }
}

/// The partition a namespace request is about: `given` (the body's
/// `Partition`), then `?partition=`, then `default`. A name that is not a
/// DNS label is a 400. Returns the partition's stored name (or the name as
/// given) and whether it exists.
fn ns_partition(store: &Store, given: &str, param: &str) -> Result<(String, bool), ApiError> {
    let name = [given, param]
        .into_iter()
        .find(|n| !n.is_empty())
        .unwrap_or(DEFAULT_TENANCY);
    if !valid_name(name) {
        return Err(invalid_name(true, name));
    }
    Ok(match store.tenancy.partitions.get(&fold(name)) {
        Some(r) => (r.name.clone(), true),
        None => (name.to_string(), false),
    })
}

/// Serves one tenancy request against the store (under its write lock).
pub(crate) fn handle(
    store: &mut Store,
    acl: &AclTable,
    authz: &Authz,
    req: &TenancyRequest<'_>,
) -> Answer {
    let p = req.partition;
    if req.list {
        if req.method != "GET" {
            return Err(method_not_allowed(req.method, "OPTIONS,GET"));
        }
        let out: Vec<Value> = if p {
            store
                .tenancy
                .partitions
                .values()
                .filter(|r| authz.tenancy_read(true, "", &r.name))
                .map(|r| render(r, true))
                .collect()
        } else {
            // An unknown partition lists as empty: nothing lives there.
            let (part, _) = ns_partition(store, "", req.partition_param)?;
            let lpart = fold(&part);
            store
                .tenancy
                .namespaces
                .iter()
                .filter(|((kp, _), r)| *kp == lpart && authz.tenancy_read(false, &part, &r.name))
                .map(|(_, r)| render(r, false))
                .collect()
        };
        return Ok(Value::Array(out));
    }
    match (req.method, req.name) {
        ("PUT", None) => put(store, acl, authz, req, None),
        ("PUT", Some(name)) => put(store, acl, authz, req, Some(name)),
        ("GET", Some(name)) => {
            if !valid_name(name) {
                return Err(invalid_name(p, name));
            }
            let found = if p {
                if !authz.tenancy_read(true, "", name) {
                    return Err(authz.tenancy_denied(true, name).into());
                }
                store.tenancy.partitions.get(&fold(name))
            } else {
                let (part, _) = ns_partition(store, "", req.partition_param)?;
                if !authz.tenancy_read(false, &part, name) {
                    return Err(authz.tenancy_denied(false, name).into());
                }
                store.tenancy.namespaces.get(&(fold(&part), fold(name)))
            };
            found
                .map(|r| render(r, p))
                .ok_or_else(|| not_found(p, name))
        }
        ("DELETE", Some(name)) => delete(store, authz, req, name),
        ("GET" | "DELETE", None) => Err(ApiError::BadRequest(format!(
            "Missing {} name",
            kind_word(p).to_lowercase()
        ))),
        (m, _) => Err(method_not_allowed(m, "OPTIONS,GET,PUT,DELETE")),
    }
}

/// Resolves `ACLs.PolicyDefaults`/`RoleDefaults` links to `(ID, Name)`,
/// by ID first, then by name. With ACLs off the links are kept as sent.
fn links(
    acl: &AclTable,
    m: Option<&Value>,
    key: &str,
    roles: bool,
) -> Result<Vec<(String, String)>, ApiError> {
    let Some(list) = m.and_then(|a| a.as_object()).and_then(|a| field(a, key)) else {
        return Ok(Vec::new());
    };
    let Value::Array(items) = list else {
        return Err(ApiError::BadRequest(format!(
            "Request decode failed: ACLs.{key} must be a list"
        )));
    };
    let st = acl.state();
    let mut out = Vec::new();
    for item in items {
        let Value::Object(o) = item else {
            return Err(ApiError::BadRequest(format!(
                "Request decode failed: ACLs.{key} entries must be objects"
            )));
        };
        let (id, name) = (str_field(o, "ID"), str_field(o, "Name"));
        if !acl.enabled() {
            out.push((id, name));
            continue;
        }
        let found = if roles {
            st.roles
                .values()
                .find(|r| (!id.is_empty() && r.id == id) || (id.is_empty() && r.name == name))
                .map(|r| (r.id.clone(), r.name.clone()))
        } else {
            st.policies
                .values()
                .find(|r| (!id.is_empty() && r.id == id) || (id.is_empty() && r.name == name))
                .map(|r| (r.id.clone(), r.name.clone()))
        };
        let what = if roles { "role" } else { "policy" };
        let shown = if id.is_empty() { &name } else { &id };
        out.push(found.ok_or_else(|| {
            ApiError::BadRequest(format!(
                "Invalid ACL {what} link: {what} {} does not exist",
                go_quote(shown)
            ))
        })?);
    }
    Ok(out)
}

fn put(
    store: &mut Store,
    acl: &AclTable,
    authz: &Authz,
    req: &TenancyRequest<'_>,
    path_name: Option<&str>,
) -> Answer {
    let p = req.partition;
    let what = kind_word(p);
    if p {
        authz.require_operator(AclAccess::Write)?;
    }
    let m = decode(req.body, what)?;
    let body_name = str_field(&m, "Name");
    let name = match path_name {
        Some(n) if !body_name.is_empty() && !body_name.eq_ignore_ascii_case(n) => {
            return Err(ApiError::BadRequest(format!(
                "{what} name in the URL ({}) and the body ({}) do not match",
                go_quote(n),
                go_quote(&body_name)
            )));
        }
        Some(n) => n.to_string(),
        None => body_name,
    };
    if name.is_empty() {
        return Err(ApiError::BadRequest(format!("Missing {what} name")));
    }
    if !valid_name(&name) {
        return Err(invalid_name(p, &name));
    }
    let description = str_field(&m, "Description");
    let mut meta = BTreeMap::new();
    match field(&m, "Meta") {
        None | Some(Value::Null) => {}
        Some(Value::Object(o)) => {
            for (k, v) in o {
                let Value::String(s) = v else {
                    return Err(ApiError::BadRequest(format!(
                        "Request decode failed: Meta.{k} must be a string"
                    )));
                };
                meta.insert(k.clone(), s.clone());
            }
        }
        Some(_) => {
            return Err(ApiError::BadRequest(
                "Request decode failed: Meta must be an object".into(),
            ));
        }
    }
    let acls = field(&m, "ACLs");
    let (policy_defaults, role_defaults) = if p {
        (Vec::new(), Vec::new())
    } else {
        (
            links(acl, acls, "PolicyDefaults", false)?,
            links(acl, acls, "RoleDefaults", true)?,
        )
    };
    let part = if p {
        name.clone()
    } else {
        let given = match field(&m, "Partition") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(_) => {
                return Err(ApiError::BadRequest(
                    "Request decode failed: Partition must be a string".into(),
                ));
            }
        };
        match ns_partition(store, &given, req.partition_param)? {
            (part, true) => part,
            (part, false) => return Err(missing(true, &part)),
        }
    };
    if !p {
        authz.require_namespace_write(&part, &name)?;
    }
    if !policy_defaults.is_empty() || !role_defaults.is_empty() {
        // Linking policies or roles is an ACL write (in the namespace's
        // partition).
        authz.require_acl_in(&part, AclAccess::Write)?;
    }
    let key = (fold(&part), fold(&name));
    let existing = if p {
        store.tenancy.partitions.get(&key.1)
    } else {
        store.tenancy.namespaces.get(&key)
    }
    .cloned();
    if path_name.is_none() && existing.is_some() {
        return Err(ApiError::BadRequest(format!(
            "{what} {} already exists",
            go_quote(&name)
        )));
    }
    let _ = store.apply(true, |_| Ok::<(), ()>(()));
    let idx = store.raft_index();
    let name = existing.as_ref().map_or(name, |e| e.name.clone());
    let is_new = existing.is_none();
    let mut rec = TenancyRec {
        partition: if p { name.clone() } else { part },
        name,
        description,
        meta,
        policy_defaults,
        role_defaults,
        create_index: idx,
        modify_index: idx,
    };
    if let Some(e) = existing {
        rec.create_index = e.create_index;
        let same = TenancyRec {
            create_index: e.create_index,
            modify_index: e.modify_index,
            ..rec.clone()
        };
        if same == e {
            rec.modify_index = e.modify_index;
        }
    }
    let out = render(&rec, p);
    if p {
        if is_new {
            // Every partition starts with its own `default` namespace.
            let ns = TenancyRec {
                name: DEFAULT_TENANCY.into(),
                partition: rec.name.clone(),
                description: "Builtin Default Namespace".into(),
                meta: BTreeMap::new(),
                policy_defaults: Vec::new(),
                role_defaults: Vec::new(),
                create_index: idx,
                modify_index: idx,
            };
            store
                .tenancy
                .namespaces
                .insert((key.0.clone(), DEFAULT_TENANCY.into()), ns);
        }
        store.tenancy.partitions.insert(key.1, rec);
    } else {
        store.tenancy.namespaces.insert(key, rec);
    }
    Ok(out)
}

fn delete(store: &mut Store, authz: &Authz, req: &TenancyRequest<'_>, name: &str) -> Answer {
    let p = req.partition;
    if !valid_name(name) {
        return Err(invalid_name(p, name));
    }
    if p {
        authz.require_operator(AclAccess::Write)?;
    } else {
        let (part, _) = ns_partition(store, "", req.partition_param)?;
        authz.require_namespace_write(&part, name)?;
    }
    let lname = fold(name);
    if lname == DEFAULT_TENANCY {
        return Err(ApiError::BadRequest(format!(
            "Cannot delete the default {}",
            kind_word(p).to_lowercase()
        )));
    }
    let (part, part_exists) = if p {
        (name.to_string(), true)
    } else {
        ns_partition(store, "", req.partition_param)?
    };
    let lpart = fold(&part);
    let exists = if p {
        store.tenancy.partitions.contains_key(&lname)
    } else {
        part_exists
            && store
                .tenancy
                .namespaces
                .contains_key(&(lpart.clone(), lname.clone()))
    };
    if !exists {
        return Err(not_found(p, name));
    }
    let (doomed_services, doomed_nodes) = if p {
        (Vec::new(), store.nodes_in_partition(&part))
    } else {
        (store.services_in_namespace(&part, name), Vec::new())
    };
    // One apply: a namespace's services (and their checks), or a
    // partition's nodes (with everything on them), go with it.
    let (result, _) = store.apply(true, |tx| {
        for (node, id) in &doomed_services {
            tx.delete_service_in(&part, node, id);
        }
        for node in &doomed_nodes {
            tx.delete_node_in(&part, node);
        }
        Ok::<(), ()>(())
    });
    if result.is_err() {
        return Err(ApiError::Rpc("delete failed".into()));
    }
    if p {
        store.tenancy.partitions.remove(&lname);
        store.tenancy.namespaces.retain(|(kp, _), _| *kp != lname);
    } else {
        store.tenancy.namespaces.remove(&(lpart, lname));
    }
    Ok(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever arrives, a refused request leaves the store as it was
        /// (no Raft apply either), and nothing panics.
        #[test]
        fn malformed_bodies_never_panic_or_apply(
            body in prop::collection::vec(any::<u8>(), 0..64),
            name in "[a-z_*-]{0,8}",
            method in prop::sample::select(vec!["GET", "PUT", "DELETE", "POST"]),
            partition in any::<bool>(),
            part in "[a-z_*-]{0,6}",
        ) {
            let mut st = Store::default();
            st.tenancy = Tenancy::builtin();
            let before = st.clone();
            let acl = AclTable::default();
            let req = TenancyRequest {
                method,
                partition,
                list: false,
                name: (!name.is_empty()).then_some(name.as_str()),
                partition_param: &part,
                body: &body,
            };
            if handle(&mut st, &acl, &Authz::Disabled, &req).is_err() {
                prop_assert_eq!(st, before);
            }
        }
    }

    #[test]
    fn names_must_be_dns_labels() {
        for ok in ["a", "team-1", "A9", &"x".repeat(63)] {
            assert!(valid_name(ok), "{ok}");
        }
        for bad in [
            "",
            "-a",
            "a-",
            "a_b",
            "a.b",
            "a/b",
            "*",
            "é",
            &"x".repeat(64),
        ] {
            assert!(!valid_name(bad), "{bad}");
        }
    }
}
