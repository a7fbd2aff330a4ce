//! rbac.authorization.k8s.io: Role and ClusterRole rules and aggregation,
//! RoleBinding and ClusterRoleBinding roleRef and subjects.
//!
//! This module must NOT resolve roles or check permissions: it only checks
//! the objects' fields.

use super::*;

pub(super) fn validate_policy_rules(obj: &Value, namespaced: bool, errs: &mut Vec<FieldError>) {
    for (i, rule) in arr(obj, "rules").iter().enumerate() {
        let p = index("rules", i);
        if arr(rule, "verbs").is_empty() {
            errs.push(required(
                &child(&p, "verbs"),
                "verbs must contain at least one value",
            ));
        }
        let urls = get(rule, "nonResourceURLs").and_then(Value::as_array);
        if let Some(urls) = urls.filter(|u| !u.is_empty()) {
            let strs: Vec<&str> = urls.iter().filter_map(Value::as_str).collect();
            let shown = go_string_slice(Some(&strs));
            if namespaced {
                errs.push(invalid(
                    &child(&p, "nonResourceURLs"),
                    &shown,
                    "namespaced rules cannot apply to non-resource URLs",
                ));
            }
            if !arr(rule, "apiGroups").is_empty()
                || !arr(rule, "resources").is_empty()
                || !arr(rule, "resourceNames").is_empty()
            {
                errs.push(invalid(
                    &child(&p, "nonResourceURLs"),
                    &shown,
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if arr(rule, "apiGroups").is_empty() {
            errs.push(required(
                &child(&p, "apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if arr(rule, "resources").is_empty() {
            errs.push(required(
                &child(&p, "resources"),
                "resource rules must supply at least one resource",
            ));
        }
        if !arr(rule, "resourceNames").is_empty() && arr(rule, "resources").len() > 1 {
            errs.push(required(
                &child(&p, "resourceNames"),
                "resource names cannot apply to multiple resources",
            ));
        }
    }
}

pub(super) fn validate_cluster_role(obj: &Value, errs: &mut Vec<FieldError>) {
    validate_policy_rules(obj, false, errs);
    if let Some(agg) = get(obj, "aggregationRule") {
        let path = "aggregationRule.clusterRoleSelectors";
        let selectors = arr(agg, "clusterRoleSelectors");
        if selectors.is_empty() {
            errs.push(required(
                path,
                "at least one clusterRoleSelector required if aggregationRule is non-nil",
            ));
        }
        for (i, sel) in selectors.iter().enumerate() {
            let p = index(path, i);
            validate_label_selector(sel, &p, errs);
            if Selector::from_json(Some(sel)).is_none() {
                // Upstream prints the nil selector the conversion returned.
                errs.push(invalid_str(&p, "null", "invalid label selector."));
            }
        }
    }
}

pub(super) fn validate_binding(
    obj: &Value,
    old: Option<&Value>,
    namespaced: bool,
    errs: &mut Vec<FieldError>,
) {
    let role_ref = get(obj, "roleRef").unwrap_or(&Value::Null);
    let api_group = string(role_ref, "apiGroup");
    if api_group != RBAC_GROUP {
        errs.push(not_supported("roleRef.apiGroup", api_group, &[RBAC_GROUP]));
    }
    let kind = string(role_ref, "kind");
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&kind) {
        errs.push(not_supported("roleRef.kind", kind, kinds));
    }
    let name = string(role_ref, "name");
    if name.is_empty() {
        errs.push(required("roleRef.name", ""));
    } else {
        for msg in is_valid_path_segment_name(name) {
            errs.push(invalid_str("roleRef.name", name, &msg));
        }
    }
    for (i, subject) in arr(obj, "subjects").iter().enumerate() {
        validate_subject(subject, namespaced, &index("subjects", i), errs);
    }
    if let Some(old) = old {
        let old_ref = get(old, "roleRef").unwrap_or(&Value::Null);
        let same = ["apiGroup", "kind", "name"]
            .iter()
            .all(|f| string(role_ref, f) == string(old_ref, f));
        if !same {
            let shown = format!(
                "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}",
                quote(api_group),
                quote(kind),
                quote(name)
            );
            errs.push(invalid("roleRef", &shown, "cannot change roleRef"));
        }
    }
}

pub(super) fn validate_subject(
    subject: &Value,
    namespaced: bool,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let name = string(subject, "name");
    if name.is_empty() {
        errs.push(required(&child(path, "name"), ""));
    }
    let api_group = string(subject, "apiGroup");
    match string(subject, "kind") {
        "ServiceAccount" => {
            if !name.is_empty() {
                for msg in is_dns1123_subdomain(name) {
                    errs.push(invalid_str(&child(path, "name"), name, &msg));
                }
            }
            if !api_group.is_empty() {
                errs.push(not_supported(&child(path, "apiGroup"), api_group, &[""]));
            }
            if !namespaced && string(subject, "namespace").is_empty() {
                errs.push(required(&child(path, "namespace"), ""));
            }
        }
        k @ ("User" | "Group") => {
            if name.is_empty() {
                let what = if k == "User" { "user" } else { "group" };
                errs.push(invalid_str(
                    &child(path, "name"),
                    name,
                    &format!("{what} name cannot be empty"),
                ));
            }
            if api_group != RBAC_GROUP {
                errs.push(not_supported(
                    &child(path, "apiGroup"),
                    api_group,
                    &[RBAC_GROUP],
                ));
            }
        }
        other => errs.push(not_supported(
            &child(path, "kind"),
            other,
            &["ServiceAccount", "User", "Group"],
        )),
    }
}
