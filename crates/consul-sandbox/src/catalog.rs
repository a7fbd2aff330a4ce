//! `PUT /v1/catalog/register` and `PUT /v1/catalog/deregister`: the checks
//! Consul runs before Raft (argument validation, ACL vetting), then exactly
//! one Raft apply that changes the store all-or-nothing.
//!
//! Ordering matters for the Raft counter: a request refused by validation or
//! ACLs never reaches Raft (no apply is counted); one that reaches the store
//! counts an apply even if the store then rejects it (`Missing service
//! registration`) or finds nothing to change (an identical re-registration).
//!
//! This module must NOT parse HTTP or JSON; it works on decoded requests.

use crate::acl::{AclAccess, AclResource, Authz};
use crate::decode::{CheckIn, DeregisterReq, RegisterReq, ServiceIn};
use crate::error::ApiError;
use crate::model::{CheckRec, DEFAULT_TENANCY, NodeRec, Record, ServiceRec, Weights};
use crate::store::{Store, StoreError, Tx, go_quote};
use crate::tenancy::Scope;

/// Result of a write that reached Raft: whether any content changed.
pub(crate) type Applied = bool;

/// Consul's check of a node ID (`uuid.ParseUUID` from go-uuid).
pub(crate) fn validate_node_id(id: &str) -> Result<(), String> {
    if id.is_empty() {
        return Ok(());
    }
    if id.len() != 36 {
        return Err("Bad node ID: uuid string is wrong length".into());
    }
    let well_formed = id.char_indices().all(|(i, c)| match i {
        8 | 13 | 18 | 23 => c == '-',
        _ => c.is_ascii_hexdigit(),
    });
    if well_formed {
        Ok(())
    } else {
        Err("Bad node ID: uuid is improperly formatted".into())
    }
}

/// Consul's `ipaddr.IsAny`: the unspecified addresses are not valid service
/// addresses.
fn is_any_address(addr: &str) -> bool {
    matches!(addr, "0.0.0.0" | "::" | "[::]")
}

/// Consul's `servicePreApply` minus ACLs: defaults the ID to the name and
/// rejects unusable services. Shared with transactions.
pub(crate) fn service_pre_apply(s: &mut ServiceIn) -> Result<(), String> {
    if s.id.is_empty() && !s.service.is_empty() {
        s.id = s.service.clone();
    }
    if !s.id.is_empty() && s.service.is_empty() {
        return Err(
            "Must provide service name (Service.Service) when service ID is provided".into(),
        );
    }
    if s.id.is_empty() {
        // Consul would store a nameless, ID-less instance; refusing it keeps
        // the sandbox's catalog sane and is reported with Consul's wording
        // for a missing name.
        return Err("Missing service name".into());
    }
    if is_any_address(&s.address) {
        return Err("Invalid service address".into());
    }
    Ok(())
}

/// Builds the stored record of a service instance on `node`.
pub(crate) fn service_rec(
    node: &str,
    s: &ServiceIn,
    ns: Option<String>,
    partition: Option<String>,
) -> ServiceRec {
    ServiceRec {
        node: node.to_string(),
        kind: s.kind.clone(),
        id: s.id.clone(),
        name: s.service.clone(),
        tags: s.tags.clone(),
        address: s.address.clone(),
        tagged_addresses: s.tagged_addresses.clone(),
        meta: s.meta.clone(),
        port: s.port,
        ports: s.ports.clone(),
        weights: Weights::normalized(s.weights),
        enable_tag_override: s.enable_tag_override,
        ns,
        partition,
        create_index: 0,
        modify_index: 0,
    }
}

/// Builds the stored record of a check (indexes and service fields are
/// filled in by the store).
/// `ns`: the namespace of a node-level check (a service check takes its
/// service's when stored).
pub(crate) fn check_rec(c: &CheckIn, ns: Option<String>, partition: Option<String>) -> CheckRec {
    CheckRec {
        node: c.node.clone(),
        check_id: c.check_id.clone(),
        name: c.name.clone(),
        status: c.status.clone(),
        notes: c.notes.clone(),
        output: c.output.clone(),
        service_id: c.service_id.clone(),
        service_name: c.service_name.clone(),
        service_tags: c.service_tags.clone(),
        check_type: c.check_type.clone(),
        definition: c
            .definition
            .clone()
            .unwrap_or_else(|| serde_json::json!({})),
        ns,
        partition,
        create_index: 0,
        modify_index: 0,
    }
}

fn check_datacenter(dc: &str, local_dc: &str) -> Result<(), ApiError> {
    if dc.is_empty() || dc == local_dc {
        Ok(())
    } else {
        // Consul forwards to the named datacenter; the sandbox has no WAN.
        Err(ApiError::Rpc("No path to datacenter".into()))
    }
}

/// Runs `f` as one Raft apply: whether content changed, or the store's
/// refusal as Consul's RPC error (the apply is spent either way).
fn apply(
    store: &mut Store,
    f: impl FnOnce(&mut Tx<'_>) -> Result<(), StoreError>,
) -> Result<Applied, ApiError> {
    let (result, changed) = store.apply(true, f);
    result.map_err(|e| ApiError::Rpc(e.to_string()))?;
    Ok(changed)
}

/// Consul's `RegisterRequest.ChangesNode`: would this registration rewrite
/// the stored node?
fn changes_node(
    req: &RegisterReq,
    dc: &str,
    partition: &Option<String>,
    existing: Option<&NodeRec>,
) -> bool {
    let Some(n) = existing else { return true };
    if req.skip_node_update {
        return false;
    }
    let probe = NodeRec {
        id: req.id.clone(),
        name: n.name.clone(),
        address: req.address.clone(),
        datacenter: dc.to_string(),
        tagged_addresses: req.tagged_addresses.clone(),
        meta: req.node_meta.clone(),
        partition: partition.clone(),
        create_index: 0,
        modify_index: 0,
    };
    !probe.same_content(n)
}

/// Handles a decoded registration: validation, ACLs, one Raft apply.
pub(crate) fn register(
    store: &mut Store,
    mut req: RegisterReq,
    authz: &Authz,
    local_dc: &str,
    scope: &Scope,
) -> Result<Applied, ApiError> {
    check_datacenter(&req.datacenter, local_dc)?;
    let namespaces: &[&str] = match &req.service {
        Some(s) => &[&s.namespace, &req.namespace],
        None => &[&req.namespace],
    };
    let (partition, ns) = scope.write_target(store, &req.partition, namespaces)?;
    let part = partition.as_deref().unwrap_or(DEFAULT_TENANCY);
    // Node-level checks live in the default namespace.
    let node_ns = scope.enterprise.then(|| DEFAULT_TENANCY.to_string());
    let dc = local_dc.to_string();
    if req.node.is_empty() {
        return Err(ApiError::Rpc("Must provide node".into()));
    }
    validate_node_id(&req.id).map_err(ApiError::Rpc)?;
    if req.address.is_empty() && !req.skip_node_update {
        return Err(ApiError::Rpc(
            "Must provide address if SkipNodeUpdate is not set".into(),
        ));
    }
    if let Some(s) = req.service.as_mut() {
        service_pre_apply(s).map_err(ApiError::Rpc)?;
    }
    // Fold the legacy single `Check` into `Checks` and default their fields.
    if let Some(c) = req.check.take() {
        req.checks.push(c);
    }
    for c in &mut req.checks {
        if c.node.is_empty() {
            c.node = req.node.clone();
        }
        if c.check_id.is_empty() && !c.name.is_empty() {
            c.check_id = c.name.clone();
        }
    }
    let needs_node = changes_node(&req, &dc, &partition, store.node_in(part, &req.node));
    if authz.enforced() {
        vet_register(store, &req, needs_node, authz, part, &ns)?;
    }

    apply(store, |tx| {
        if needs_node {
            tx.ensure_node(NodeRec {
                id: req.id.clone(),
                name: req.node.clone(),
                address: req.address.clone(),
                datacenter: dc.clone(),
                tagged_addresses: req.tagged_addresses.clone(),
                meta: req.node_meta.clone(),
                partition: partition.clone(),
                create_index: 0,
                modify_index: 0,
            });
        }
        if let Some(s) = &req.service {
            tx.ensure_service(service_rec(&req.node, s, ns.clone(), partition.clone()))?;
        }
        for c in &req.checks {
            if !c.node.eq_ignore_ascii_case(&req.node) {
                return Err(StoreError::CheckNodeMismatch {
                    check: go_quote(&c.node),
                    node: go_quote(&req.node),
                });
            }
            tx.ensure_check(check_rec(c, node_ns.clone(), partition.clone()))?;
        }
        Ok(())
    })
}

/// Consul's `vetRegisterWithACL`.
fn vet_register(
    store: &Store,
    req: &RegisterReq,
    needs_node: bool,
    authz: &Authz,
    part: &str,
    ns: &Option<String>,
) -> Result<(), ApiError> {
    let ns = ns.as_deref().unwrap_or(DEFAULT_TENANCY);
    let node_write = || {
        authz.require_part(
            AclResource::Node,
            part,
            DEFAULT_TENANCY,
            &req.node,
            AclAccess::Write,
        )
    };
    let service_write = |ns: &str, name: &str| {
        authz.require_part(AclResource::Service, part, ns, name, AclAccess::Write)
    };
    if needs_node {
        node_write()?;
    }
    if let Some(s) = &req.service {
        service_write(ns, &s.service)?;
        if let Some(other) = store.service_in(part, &req.node, &s.id) {
            // Overwriting an instance of another service is a delete of it.
            service_write(other.namespace(), &other.name)?;
        }
    }
    for c in &req.checks {
        if !c.node.eq_ignore_ascii_case(&req.node) {
            return Err(ApiError::Rpc(format!(
                "Node '{}' for check '{}' doesn't match register request node '{}'",
                c.node, c.check_id, req.node
            )));
        }
        if c.service_id.is_empty() {
            node_write()?;
            continue;
        }
        if req.service.as_ref().is_some_and(|s| s.id == c.service_id) {
            continue;
        }
        let Some(other) = store.service_in(part, &req.node, &c.service_id) else {
            return Err(ApiError::Rpc(format!(
                "Unknown service ID '{}' for check ID '{}'",
                c.service_id, c.check_id
            )));
        };
        service_write(other.namespace(), &other.name)?;
    }
    Ok(())
}

/// Handles a decoded deregistration: validation, ACLs, one Raft apply.
/// Deleting something that does not exist is a successful no-op (which
/// still costs the apply).
pub(crate) fn deregister(
    store: &mut Store,
    req: DeregisterReq,
    authz: &Authz,
    local_dc: &str,
    scope: &Scope,
) -> Result<Applied, ApiError> {
    check_datacenter(&req.datacenter, local_dc)?;
    let (partition, ns) = scope.write_target(store, &req.partition, &[&req.namespace])?;
    let part = partition.as_deref().unwrap_or(DEFAULT_TENANCY);
    if req.node.is_empty() {
        return Err(ApiError::Rpc("Must provide node".into()));
    }
    // A service of another namespace is not found from this one.
    let in_ns = |st: &Store| {
        st.service_in(part, &req.node, &req.service_id)
            .is_some_and(|s| {
                ns.as_deref()
                    .is_none_or(|n| s.namespace().eq_ignore_ascii_case(n))
            })
    };
    if !req.service_id.is_empty() && !in_ns(store) && ns.is_some() {
        if authz
            .require_part(
                AclResource::Node,
                part,
                DEFAULT_TENANCY,
                &req.node,
                AclAccess::Write,
            )
            .is_err()
        {
            return Err(ApiError::Rpc(format!(
                "Unknown service ID '{}'",
                req.service_id
            )));
        }
        return apply(store, |_| Ok(()));
    }
    if authz.enforced() {
        vet_deregister(store, &req, authz, part)?;
    }
    apply(store, |tx| {
        if !req.service_id.is_empty() {
            tx.delete_service_in(part, &req.node, &req.service_id);
        } else if !req.check_id.is_empty() {
            tx.delete_check_in(part, &req.node, &req.check_id);
        } else {
            tx.delete_node_in(part, &req.node);
        }
        Ok(())
    })
}

/// Consul's `vetDeregisterWithACL`: node write allows everything on the
/// node; otherwise service write on the instance (or on the check's
/// service) is enough.
fn vet_deregister(
    store: &Store,
    req: &DeregisterReq,
    authz: &Authz,
    part: &str,
) -> Result<(), ApiError> {
    let node_write = authz.require_part(
        AclResource::Node,
        part,
        DEFAULT_TENANCY,
        &req.node,
        AclAccess::Write,
    );
    if node_write.is_ok() {
        return Ok(());
    }
    if !req.service_id.is_empty() {
        let Some(s) = store.service_in(part, &req.node, &req.service_id) else {
            return Err(ApiError::Rpc(format!(
                "Unknown service ID '{}'",
                req.service_id
            )));
        };
        authz.require_part(
            AclResource::Service,
            part,
            s.namespace(),
            &s.name,
            AclAccess::Write,
        )?;
        Ok(())
    } else if !req.check_id.is_empty() {
        let Some(c) = store.check_in(part, &req.node, &req.check_id) else {
            return Err(ApiError::Rpc(format!(
                "Unknown check ID '{}'",
                req.check_id
            )));
        };
        if c.service_id.is_empty() {
            node_write?;
        } else {
            authz.require_part(
                AclResource::Service,
                part,
                c.namespace(),
                &c.service_name,
                AclAccess::Write,
            )?;
        }
        Ok(())
    } else {
        node_write.map_err(ApiError::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::{AclConfig, AclPolicy, AclRule, AclTable, AclToken};
    use crate::decode;

    fn reg(store: &mut Store, body: &str) -> Result<Applied, ApiError> {
        reg_as(store, body, &Authz::Disabled)
    }

    fn reg_as(store: &mut Store, body: &str, authz: &Authz) -> Result<Applied, ApiError> {
        let req = decode::register(body.as_bytes()).unwrap();
        register(store, req, authz, "dc1", &Scope::ce())
    }

    #[test]
    fn node_id_validation_uses_go_uuid_messages() {
        assert!(validate_node_id("").is_ok());
        assert!(validate_node_id("40e4a748-2192-161a-0510-9bf59fe950b5").is_ok());
        assert_eq!(
            validate_node_id("nope").unwrap_err(),
            "Bad node ID: uuid string is wrong length"
        );
        assert_eq!(
            validate_node_id("40e4a748x2192-161a-0510-9bf59fe950b5").unwrap_err(),
            "Bad node ID: uuid is improperly formatted"
        );
    }

    #[test]
    fn validation_errors_never_reach_raft() {
        let mut st = Store::default();
        let cases = [
            (r#"{"Address":"1.2.3.4"}"#, "Must provide node"),
            (
                r#"{"Node":"n"}"#,
                "Must provide address if SkipNodeUpdate is not set",
            ),
            (
                r#"{"Node":"n","Address":"a","Service":{"ID":"x"}}"#,
                "Must provide service name (Service.Service) when service ID is provided",
            ),
            (
                r#"{"Node":"n","Address":"a","Service":{}}"#,
                "Missing service name",
            ),
            (
                r#"{"Node":"n","Address":"a","Service":{"Service":"s","Address":"0.0.0.0"}}"#,
                "Invalid service address",
            ),
            (
                r#"{"Node":"n","Address":"a","ID":"bad"}"#,
                "Bad node ID: uuid string is wrong length",
            ),
            (
                r#"{"Node":"n","Address":"a","Datacenter":"dc9"}"#,
                "No path to datacenter",
            ),
        ];
        for (body, want) in cases {
            let e = reg(&mut st, body).unwrap_err();
            assert_eq!(e, ApiError::Rpc(want.into()), "{body}");
        }
        assert_eq!(st.raft_applies(), 0);
    }

    #[test]
    fn store_errors_count_an_apply_and_change_nothing() {
        let mut st = Store::default();
        let e = reg(
            &mut st,
            r#"{"Node":"n","Address":"a","Service":{"Service":"web"},
                "Check":{"CheckID":"c","ServiceID":"other"}}"#,
        )
        .unwrap_err();
        assert_eq!(e, ApiError::Rpc("Missing service registration".into()));
        assert_eq!(st.raft_applies(), 1);
        assert_eq!(
            st.counts(),
            (0, 0, 0),
            "the node and service were rolled back too"
        );
        let e = reg(
            &mut st,
            r#"{"Node":"n","Address":"a","Check":{"Node":"m","CheckID":"c"}}"#,
        )
        .unwrap_err();
        assert_eq!(
            e,
            ApiError::Rpc("check node \"m\" does not match node \"n\"".into())
        );
    }

    #[test]
    fn skip_node_update_keeps_the_stored_node() {
        let mut st = Store::default();
        assert!(reg(&mut st, r#"{"Node":"n","Address":"10.0.0.1"}"#).unwrap());
        let changed = reg(
            &mut st,
            r#"{"Node":"n","Address":"9.9.9.9","SkipNodeUpdate":true,"Service":{"Service":"s"}}"#,
        )
        .unwrap();
        assert!(changed);
        assert_eq!(st.node("n").unwrap().address, "10.0.0.1");
        assert_eq!(st.node("n").unwrap().modify_index, 1);
    }

    #[test]
    fn deregister_precedence_service_then_check_then_node() {
        let mut st = Store::default();
        reg(&mut st, r#"{"Node":"n","Address":"a","Service":{"Service":"s"},"Check":{"Name":"c","ServiceID":"s"}}"#).unwrap();
        reg(
            &mut st,
            r#"{"Node":"n","Address":"a","Check":{"Name":"nc"}}"#,
        )
        .unwrap();
        let d = |st: &mut Store, body: &str| {
            deregister(
                st,
                decode::deregister(body.as_bytes()).unwrap(),
                &Authz::Disabled,
                "dc1",
                &Scope::ce(),
            )
        };
        assert!(d(&mut st, r#"{"Node":"n","ServiceID":"s","CheckID":"nc"}"#).unwrap());
        assert_eq!(st.counts(), (1, 0, 1));
        assert!(d(&mut st, r#"{"Node":"n","CheckID":"nc"}"#).unwrap());
        assert_eq!(st.counts(), (1, 0, 0));
        assert!(
            !d(&mut st, r#"{"Node":"n","ServiceID":"gone"}"#).unwrap(),
            "no-op"
        );
        assert!(d(&mut st, r#"{"Node":"n"}"#).unwrap());
        assert_eq!(st.counts(), (0, 0, 0));
        assert_eq!(
            d(&mut st, r#"{}"#).unwrap_err(),
            ApiError::Rpc("Must provide node".into())
        );
    }

    #[test]
    fn acl_vetting_of_registrations() {
        let table = AclTable::new(
            Some(&AclConfig {
                tokens: vec![AclToken {
                    accessor_id: "svc-writer".into(),
                    secret_id: "t".into(),
                    policy: AclPolicy::Rules(vec![AclRule::new(
                        AclResource::Service,
                        "web",
                        AclAccess::Write,
                    )]),
                }],
                anonymous_rules: vec![],
            }),
            None,
            None,
        );
        let authz = table.resolve(Some("t")).unwrap();
        let mut st = Store::default();
        let body = r#"{"Node":"n","Address":"a","Service":{"Service":"web"}}"#;
        // A new node needs node:write.
        let e = reg_as(&mut st, body, &authz).unwrap_err();
        assert!(matches!(&e, ApiError::Forbidden(_)), "{e:?}");
        assert!(e.to_string().contains("'node:write' on \"n\""), "{e}");
        assert_eq!(st.raft_applies(), 0);
        // Once the node exists unchanged, service:write is enough.
        reg(&mut st, r#"{"Node":"n","Address":"a"}"#).unwrap();
        reg_as(&mut st, body, &authz).unwrap();
        let other = r#"{"Node":"n","Address":"a","Service":{"Service":"db"}}"#;
        let e = reg_as(&mut st, other, &authz).unwrap_err();
        assert!(e.to_string().contains("'service:write' on \"db\""), "{e}");
    }
}
