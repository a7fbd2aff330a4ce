//! core/v1 ResourceQuota: hard limits, scopes and scope selectors.
//!
//! This module must NOT validate LimitRange (see `limit_range`).

use super::*;

/// Go's `%#v` of a slice of a named string type, e.g.
/// `[]core.ResourceQuotaScope{"BestEffort"}`; `None` is a nil slice.
pub(super) fn go_string_slice(type_name: &str, items: Option<&[String]>) -> String {
    match items {
        None => format!("{type_name}(nil)"),
        Some(items) => {
            let quoted: Vec<String> = items.iter().map(|s| gofmt::quote(s)).collect();
            format!("{type_name}{{{}}}", quoted.join(", "))
        }
    }
}

pub(super) fn string_list(v: Option<&Value>) -> Option<Vec<String>> {
    let items = v?.as_array()?;
    Some(
        items
            .iter()
            .map(|i| i.as_str().unwrap_or_default().to_string())
            .collect(),
    )
}

/// One `scopeSelector.matchExpressions` entry as decoded.
pub(super) struct ScopeRequirement {
    pub(super) scope_name: String,
    pub(super) operator: String,
    pub(super) values: Option<Vec<String>>,
}

pub(super) fn scope_requirements(selector: &Value) -> Option<Vec<ScopeRequirement>> {
    let items = selector.get("matchExpressions")?.as_array()?;
    Some(
        items
            .iter()
            .map(|r| ScopeRequirement {
                scope_name: r
                    .get("scopeName")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                operator: r
                    .get("operator")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                values: string_list(r.get("values")),
            })
            .collect(),
    )
}

/// Go's `%#v` of a `core.ScopeSelector`.
pub(super) fn go_scope_selector(reqs: Option<&[ScopeRequirement]>) -> String {
    let mut out = String::from("core.ScopeSelector{MatchExpressions:");
    match reqs {
        None => out.push_str("[]core.ScopedResourceSelectorRequirement(nil)"),
        Some(reqs) => {
            out.push_str("[]core.ScopedResourceSelectorRequirement{");
            for (i, r) in reqs.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let _ = write!(
                    out,
                    "core.ScopedResourceSelectorRequirement{{ScopeName:{}, Operator:{}, Values:{}}}",
                    gofmt::quote(&r.scope_name),
                    gofmt::quote(&r.operator),
                    go_string_slice("[]string", r.values.as_deref())
                );
            }
            out.push('}');
        }
    }
    out.push('}');
    out
}

pub(super) const CONFLICTING_SCOPE_PAIRS: [(&str, &str); 2] = [
    ("BestEffort", "NotBestEffort"),
    ("Terminating", "NotTerminating"),
];

/// `ValidateResourceQuota` without metadata: `spec.hard`, `spec.scopes`,
/// `spec.scopeSelector`, `status.hard` and `status.used`.
pub fn validate_resource_quota(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = obj.get("spec");
    let hard = members(spec, "hard");
    validate_quota_list(hard, "spec.hard", &mut errs);

    let mut hard_names: Vec<&str> = hard
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    hard_names.sort_unstable();
    let scopes = string_list(spec.and_then(|s| s.get("scopes")));
    let scopes_shown = go_string_slice("[]core.ResourceQuotaScope", scopes.as_deref());

    // validateResourceQuotaScopes
    if let Some(list) = scopes.as_ref().filter(|l| !l.is_empty()) {
        let mut set: HashSet<&str> = HashSet::new();
        for scope in list {
            if !STANDARD_SCOPES.contains(&scope.as_str()) {
                errs.push(FieldError::invalid_rendered(
                    "spec.scopes",
                    &scopes_shown,
                    "unsupported scope",
                ));
            }
            for k in &hard_names {
                if is_standard_quota_resource_name(k) && !scope_valid_for_resource(scope, k) {
                    errs.push(FieldError::invalid_rendered(
                        "spec.scopes",
                        &scopes_shown,
                        "unsupported scope applied to resource",
                    ));
                }
            }
            set.insert(scope);
        }
        for (a, b) in CONFLICTING_SCOPE_PAIRS {
            if set.contains(a) && set.contains(b) {
                errs.push(FieldError::invalid_rendered(
                    "spec.scopes",
                    &scopes_shown,
                    "conflicting scopes",
                ));
            }
        }
    }

    // validateScopeSelector
    if let Some(selector) = spec
        .and_then(|s| s.get("scopeSelector"))
        .filter(|s| s.is_object())
    {
        let path = "spec.scopeSelector.matchExpressions";
        let reqs = scope_requirements(selector);
        let selector_shown = go_scope_selector(reqs.as_deref());
        let mut set: HashSet<&str> = HashSet::new();
        for req in reqs.iter().flatten() {
            let scope = req.scope_name.as_str();
            if !STANDARD_SCOPES.contains(&scope) {
                errs.push(FieldError::invalid(
                    format!("{path}.scopeName"),
                    scope,
                    "unsupported scope",
                ));
            }
            for k in &hard_names {
                if is_standard_quota_resource_name(k) && !scope_valid_for_resource(scope, k) {
                    errs.push(FieldError::invalid_rendered(
                        path,
                        &selector_shown,
                        "unsupported scope applied to resource",
                    ));
                }
            }
            if matches!(
                scope,
                "BestEffort"
                    | "NotBestEffort"
                    | "Terminating"
                    | "NotTerminating"
                    | "CrossNamespacePodAffinity"
            ) && req.operator != "Exists"
            {
                errs.push(FieldError::invalid(
                    format!("{path}.operator"),
                    &req.operator,
                    "must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, \
                     ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, \
                     ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
                ));
            }
            let has_values = req.values.as_ref().is_some_and(|v| !v.is_empty());
            match req.operator.as_str() {
                "In" | "NotIn" => {
                    if !has_values {
                        errs.push(FieldError::required(
                            format!("{path}.values"),
                            "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
                        ));
                    }
                }
                "Exists" | "DoesNotExist" => {
                    if has_values {
                        errs.push(FieldError::invalid_rendered(
                            format!("{path}.values"),
                            &go_string_slice("[]string", req.values.as_deref()),
                            "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
                        ));
                    }
                }
                _ => errs.push(FieldError::invalid(
                    format!("{path}.operator"),
                    &req.operator,
                    "not a valid selector operator",
                )),
            }
            set.insert(scope);
        }
        for (a, b) in CONFLICTING_SCOPE_PAIRS {
            if set.contains(a) && set.contains(b) {
                // The server shows spec.scopes here, not the selector.
                errs.push(FieldError::invalid_rendered(
                    path,
                    &scopes_shown,
                    "conflicting scopes",
                ));
            }
        }
    }

    let status = obj.get("status");
    validate_quota_list(members(status, "hard"), "status.hard", &mut errs);
    validate_quota_list(members(status, "used"), "status.used", &mut errs);
    errs
}

pub(super) fn validate_quota_list(
    list: Option<&Map<String, Value>>,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    for (k, v) in list.into_iter().flatten() {
        let res_path = format!("{path}[{k}]");
        errs.extend(validate_quota_resource_name(k, &res_path));
        if let Some(q) = decoded(v) {
            errs.extend(validate_quantity_value(k, &q, &res_path));
        }
    }
}

/// `IsHugePageResourceValueDivisible`: the value is a whole number of pages
/// of the size the name states (`hugepages-2Mi`).
pub(super) fn huge_page_value_divisible(name: &str, q: &Quantity) -> bool {
    let Some(size) = name
        .strip_prefix(HUGE_PAGES_PREFIX)
        .and_then(|s| parse(s).ok())
    else {
        return false;
    };
    if size.sign() <= 0 || size.milli_value() % 1000 != 0 {
        return false;
    }
    let page = size.value();
    page > 0 && q.value().wrapping_rem(page) == 0
}
