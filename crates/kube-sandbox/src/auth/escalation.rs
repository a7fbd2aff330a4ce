//! RBAC's escalation prevention: a user may write a role or binding only
//! with rules it holds itself (or the `escalate`/`bind` verbs), as
//! upstream's RBAC registry checks it.
//!
//! This module must NOT authorize ordinary requests (`super::authorize`
//! does); it only judges writes of roles and bindings.
use super::*;

/// RBAC's escalation prevention on a write of `obj`, a Role, ClusterRole,
/// RoleBinding or ClusterRoleBinding (`plural`) in `namespace`, as the
/// RBAC registries check it: a member of `system:masters` may write any;
/// a role may be written by a user allowed to `escalate` it or holding
/// every permission it grants; a binding by a user allowed to `bind` its
/// role or holding every permission the role grants. The refusal is the
/// server's 403 listing the permissions not held.
pub fn check_escalation(
    store: &Store,
    user: &UserInfo,
    plural: &str,
    namespace: &str,
    obj: &Value,
) -> Result<(), ApiError> {
    if user.groups.iter().any(|g| g == MASTERS) {
        return Ok(());
    }
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let allowed_to = |verb: &str, resource: &str, ns: &str, n: &str| {
        decide(
            store,
            user,
            &Request::Resource {
                verb,
                group: "rbac.authorization.k8s.io",
                resource,
                subresource: "",
                namespace: ns,
                name: n,
            },
        )
        .allowed
    };
    let granted = match plural {
        "roles" | "clusterroles" => {
            if allowed_to("escalate", plural, namespace, name) {
                return Ok(());
            }
            rules(obj)
        }
        "rolebindings" | "clusterrolebindings" => {
            let role_ref = &obj["roleRef"];
            let role_kind = role_ref["kind"].as_str().unwrap_or_default();
            let role_name = role_ref["name"].as_str().unwrap_or_default();
            // Asked in the binding's namespace, whatever the role's kind.
            let role_plural = if role_kind == "Role" {
                "roles"
            } else {
                "clusterroles"
            };
            if allowed_to("bind", role_plural, namespace, role_name) {
                return Ok(());
            }
            match rules_of(store, role_ref, namespace) {
                Ok(r) => r,
                Err(e) => {
                    return Err(ApiError::forbidden(
                        "rbac.authorization.k8s.io",
                        plural,
                        name,
                        &e,
                    ));
                }
            }
        }
        _ => return Ok(()),
    };
    let (held, errors) = rules_for(store, user, namespace);
    let missing: Vec<String> = atomic_rules(&granted)
        .into_iter()
        .filter(|want| !held.iter().any(|h| covers(h, want)))
        .map(|want| compact_rule(&want))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let groups: Vec<String> = user.groups.iter().map(|g| format!("{g:?}")).collect();
    let mut why = format!(
        "user {:?} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
        user.name,
        groups.join(" "),
        missing.join("\n")
    );
    if !errors.is_empty() {
        why.push_str(&format!("; resolution errors: {errors}"));
    }
    Err(ApiError::forbidden(
        "rbac.authorization.k8s.io",
        plural,
        name,
        &why,
    ))
}

/// A rule broken into rules of one verb, one group, one resource and at
/// most one name (or one verb and one URL), as the coverage check does.
pub(super) fn atomic_rules(rules: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for r in rules {
        let verbs = strings(&r["verbs"]);
        for v in &verbs {
            for g in strings(&r["apiGroups"]) {
                for res in strings(&r["resources"]) {
                    let names = strings(&r["resourceNames"]);
                    if names.is_empty() {
                        out.push(json!({"verbs": [v], "apiGroups": [g], "resources": [res]}));
                    }
                    for n in names {
                        out.push(json!({"verbs": [v], "apiGroups": [g], "resources": [res], "resourceNames": [n]}));
                    }
                }
            }
            for url in strings(&r["nonResourceURLs"]) {
                out.push(json!({"verbs": [v], "nonResourceURLs": [url]}));
            }
        }
    }
    out
}

/// Whether the held rule `owner` grants everything the atomic rule `want`
/// does.
pub(super) fn covers(owner: &Value, want: &Value) -> bool {
    let has = |k: &str, x: &str| strings(&owner[k]).contains(&x);
    let one = |k: &str| {
        strings(&want[k])
            .first()
            .map(|s| s.to_string())
            .unwrap_or_default()
    };
    let verb = one("verbs");
    if !(has("verbs", "*") || has("verbs", &verb)) {
        return false;
    }
    if want.get("nonResourceURLs").is_some() {
        let url = one("nonResourceURLs");
        return strings(&owner["nonResourceURLs"]).iter().any(|o| {
            *o == "*" || *o == url || o.strip_suffix('*').is_some_and(|p| url.starts_with(p))
        });
    }
    let group = one("apiGroups");
    let resource = one("resources");
    let group_ok = has("apiGroups", "*") || has("apiGroups", &group);
    let resource_ok = has("resources", "*")
        || has("resources", &resource)
        || resource
            .split_once('/')
            .is_some_and(|(_, sub)| has("resources", &format!("*/{sub}")));
    let owner_names = strings(&owner["resourceNames"]);
    let names_ok = owner_names.is_empty()
        || strings(&want["resourceNames"])
            .first()
            .is_some_and(|n| owner_names.contains(n));
    group_ok && resource_ok && names_ok
}

/// Go's compact form of a rule in the escalation message:
/// `{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`.
pub(super) fn compact_rule(r: &Value) -> String {
    let list = |k: &str| {
        let items: Vec<String> = strings(&r[k]).iter().map(|s| format!("{s:?}")).collect();
        format!("[{}]", items.join(" "))
    };
    let mut parts = Vec::new();
    if r.get("apiGroups").is_some() {
        parts.push(format!("APIGroups:{}", list("apiGroups")));
    }
    if r.get("resources").is_some() {
        parts.push(format!("Resources:{}", list("resources")));
    }
    if r.get("resourceNames").is_some() {
        parts.push(format!("ResourceNames:{}", list("resourceNames")));
    }
    if r.get("nonResourceURLs").is_some() {
        parts.push(format!("NonResourceURLs:{}", list("nonResourceURLs")));
    }
    parts.push(format!("Verbs:{}", list("verbs")));
    format!("{{{}}}", parts.join(", "))
}
