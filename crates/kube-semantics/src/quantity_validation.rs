//! The API server's validation of resource quantities: LimitRange,
//! ResourceQuota and container resource requirements.
//!
//! These follow `pkg/apis/core/validation` (`ValidateLimitRange`,
//! `ValidateResourceQuota`, `ValidateContainerResourceRequirements`) and the
//! name tables of `pkg/apis/core/helper`, and return the causes of the 422
//! `Invalid` answer in the server's words. Quantities are read as the server
//! sees them after decoding and defaulting: parsed, then rounded up to
//! milli precision (every map here is a `ResourceList`).
//!
//! Where Go prints a quantity struct itself (`Invalid value:
//! resource.Quantity{i:...}`) the text is reproduced from the quantity's
//! internal form, except the memory address of a decimal-held value.
//! Go iterates maps in random order; here map members are visited in the
//! document's order and LimitRange's per-resource checks in sorted order.
//!
//! This module must NOT validate object metadata (names, labels: see
//! [`crate::names`]), must NOT check fields other than those named here,
//! and does not report quantities that fail to parse: decoding fails
//! before validation runs, and [`crate::quantity::canonicalize_at`] reports
//! those. It must NOT panic on any JSON.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::field_error::FieldError;
use crate::gofmt;
use crate::names::is_qualified_name;
use crate::quantity::{Format, MAX_MILLI_VALUE, Quantity, parse, parse_json};

const HUGE_PAGES_PREFIX: &str = "hugepages-";
const REQUESTS_HUGE_PAGES_PREFIX: &str = "requests.hugepages-";
const DEFAULT_RESOURCE_REQUESTS_PREFIX: &str = "requests.";
const DEFAULT_NAMESPACE_PREFIX: &str = "kubernetes.io/";

/// `helper.standardResources`.
const STANDARD_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];

/// `helper.standardQuotaResources`.
const STANDARD_QUOTA_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
];

/// `helper.standardContainerResources`.
const STANDARD_CONTAINER_RESOURCES: &[&str] = &["cpu", "memory", "ephemeral-storage"];

/// `helper.integerResources`: counts, which must be whole numbers.
const INTEGER_RESOURCES: &[&str] = &[
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

/// `helper.standardLimitRangeTypes`.
const STANDARD_LIMIT_TYPES: &[&str] = &["Pod", "Container", "PersistentVolumeClaim"];

/// `helper.IsStandardResourceQuotaScope`'s set.
const STANDARD_SCOPES: &[&str] = &[
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
];

/// Resources a pod-restricting scope may constrain (`podObjectCountQuotaResources`
/// and `podComputeQuotaResources`).
const POD_SCOPED_RESOURCES: &[&str] = &[
    "pods",
    "cpu",
    "memory",
    "limits.cpu",
    "limits.memory",
    "requests.cpu",
    "requests.memory",
];

const MSG_NEGATIVE: &str = "must be greater than or equal to 0";
const MSG_NOT_INTEGER: &str = "must be an integer";

/// True for names with the hugepages prefix (`IsHugePageResourceName`).
pub fn is_huge_page_resource_name(name: &str) -> bool {
    name.starts_with(HUGE_PAGES_PREFIX)
}

fn is_quota_huge_page_resource_name(name: &str) -> bool {
    name.starts_with(HUGE_PAGES_PREFIX) || name.starts_with(REQUESTS_HUGE_PAGES_PREFIX)
}

/// True for resources known to the system (`IsStandardResourceName`).
pub fn is_standard_resource_name(name: &str) -> bool {
    STANDARD_RESOURCES.contains(&name) || is_quota_huge_page_resource_name(name)
}

/// True for resources the quota system tracks (`IsStandardQuotaResourceName`).
pub fn is_standard_quota_resource_name(name: &str) -> bool {
    STANDARD_QUOTA_RESOURCES.contains(&name) || is_quota_huge_page_resource_name(name)
}

/// True for resources a container may request (`IsStandardContainerResourceName`).
pub fn is_standard_container_resource_name(name: &str) -> bool {
    STANDARD_CONTAINER_RESOURCES.contains(&name) || is_huge_page_resource_name(name)
}

/// True for names in the `kubernetes.io/` namespace, which unprefixed names
/// are implicitly in (`IsNativeResource`).
pub fn is_native_resource(name: &str) -> bool {
    !name.contains('/') || name.contains(DEFAULT_NAMESPACE_PREFIX)
}

/// True for extended resources such as `example.com/gpu`
/// (`IsExtendedResourceName`).
pub fn is_extended_resource_name(name: &str) -> bool {
    if is_native_resource(name) || name.starts_with(DEFAULT_RESOURCE_REQUESTS_PREFIX) {
        return false;
    }
    is_qualified_name(&format!("{DEFAULT_RESOURCE_REQUESTS_PREFIX}{name}")).is_empty()
}

/// True when requests may be below limits: native resources other than
/// hugepages (`IsOvercommitAllowed`).
pub fn is_overcommit_allowed(name: &str) -> bool {
    is_native_resource(name) && !is_huge_page_resource_name(name)
}

fn is_integer_resource_name(name: &str) -> bool {
    INTEGER_RESOURCES.contains(&name) || is_extended_resource_name(name)
}

fn scope_valid_for_resource(scope: &str, resource: &str) -> bool {
    match scope {
        "Terminating"
        | "NotTerminating"
        | "NotBestEffort"
        | "PriorityClass"
        | "CrossNamespacePodAffinity" => POD_SCOPED_RESOURCES.contains(&resource),
        "BestEffort" => resource == "pods",
        _ => true,
    }
}

/// A quantity as validation sees it: decoded, then rounded to milli
/// precision by `SetDefaults_ResourceList`. `None` if it does not decode.
fn decoded(v: &Value) -> Option<Quantity> {
    let mut q = parse_json(v).ok()?;
    q.round_up(-3);
    Some(q)
}

fn members<'a>(v: Option<&'a Value>, key: &str) -> Option<&'a Map<String, Value>> {
    v?.get(key)?.as_object()
}

/// `validateResourceName`: a qualified name, and standard if unprefixed.
pub fn validate_resource_name(value: &str, path: &str) -> Vec<FieldError> {
    let errs: Vec<FieldError> = is_qualified_name(value)
        .iter()
        .map(|m| FieldError::invalid(path, value, m))
        .collect();
    if !errs.is_empty() {
        return errs;
    }
    if !value.contains('/') && !is_standard_resource_name(value) {
        return vec![FieldError::invalid(
            path,
            value,
            "must be a standard resource type or fully qualified",
        )];
    }
    errs
}

/// `validateContainerResourceName`: a resource name a container may use
/// (cpu, memory, ephemeral-storage, hugepages-*, or an extended resource).
pub fn validate_container_resource_name(value: &str, path: &str) -> Vec<FieldError> {
    let mut errs = validate_resource_name(value, path);
    if !value.contains('/') {
        if !is_standard_container_resource_name(value) {
            errs.push(FieldError::invalid(
                path,
                value,
                "must be a standard resource for containers",
            ));
        }
    } else if !is_native_resource(value) && !is_extended_resource_name(value) {
        errs.push(FieldError::invalid(
            path,
            value,
            "doesn't follow extended resource name standard",
        ));
    }
    errs
}

/// `ValidateResourceQuotaResourceName`.
fn validate_quota_resource_name(value: &str, path: &str) -> Vec<FieldError> {
    let mut errs = validate_resource_name(value, path);
    if !value.contains('/') && !is_standard_quota_resource_name(value) {
        errs.push(FieldError::invalid(
            path,
            value,
            "must be a standard resource for quota",
        ));
    }
    errs
}

/// `ValidateNonnegativeQuantity`: `Invalid value: "-1": must be greater than
/// or equal to 0`.
pub fn validate_nonnegative_quantity(q: &Quantity, path: &str) -> Vec<FieldError> {
    if q.is_negative() {
        return vec![FieldError::invalid(path, &q.canonical(), MSG_NEGATIVE)];
    }
    Vec::new()
}

/// `ValidateResourceQuantityValue`: not negative, and whole for counts and
/// extended resources. `q` is the quantity as decoded (and, in a
/// `ResourceList`, rounded to milli precision).
pub fn validate_quantity_value(resource: &str, q: &Quantity, path: &str) -> Vec<FieldError> {
    let mut errs = validate_nonnegative_quantity(q, path);
    if is_integer_resource_name(resource) && q.milli_value() % 1000 != 0 {
        errs.push(FieldError::invalid_rendered(
            path,
            &q.go_syntax(),
            MSG_NOT_INTEGER,
        ));
    }
    errs
}

/// Go's `q.Cmp(other)`, including its side effect of moving the receiver
/// to the decimal form when either side is decimal (visible in `%#v`).
fn go_cmp(recv: &mut Quantity, other: &Quantity) -> std::cmp::Ordering {
    if recv.is_dec_form() || other.is_dec_form() {
        recv.make_dec_form();
    }
    (*recv).cmp(other)
}

/// Go's `q.String()` on an addressable copy: it caches the text.
fn go_string(q: &mut Quantity) -> String {
    q.cache_string();
    q.canonical()
}

/// Go's `%f`: six decimals, and Go's names for the non-finite values.
fn go_float_f(x: f64) -> String {
    if x.is_nan() {
        "NaN".to_string()
    } else if x.is_infinite() {
        if x > 0.0 { "+Inf" } else { "-Inf" }.to_string()
    } else {
        format!("{x:.6}")
    }
}

/// `validateLimitRangeTypeName`.
fn validate_limit_type_name(value: &str, path: &str) -> Vec<FieldError> {
    let errs: Vec<FieldError> = is_qualified_name(value)
        .iter()
        .map(|m| FieldError::invalid(path, value, m))
        .collect();
    if !errs.is_empty() {
        return errs;
    }
    if !value.contains('/') && !STANDARD_LIMIT_TYPES.contains(&value) {
        return vec![FieldError::invalid(
            path,
            value,
            "must be a standard limit type or fully qualified",
        )];
    }
    errs
}

fn validate_limit_resource_name(limit_type: &str, name: &str, path: &str) -> Vec<FieldError> {
    match limit_type {
        "Pod" | "Container" => validate_container_resource_name(name, path),
        _ => validate_resource_name(name, path),
    }
}

/// The spec checks of `ValidateLimitRange` (metadata is not checked here).
pub fn validate_limit_range(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(limits) = obj.pointer("/spec/limits").and_then(Value::as_array) else {
        return errs;
    };
    let mut seen_types: HashSet<&str> = HashSet::new();
    for (i, limit) in limits.iter().enumerate() {
        let idx = format!("spec.limits[{i}]");
        let limit_type = limit.get("type").and_then(Value::as_str).unwrap_or("");
        errs.extend(validate_limit_type_name(limit_type, &format!("{idx}.type")));
        if !seen_types.insert(limit_type) {
            errs.push(FieldError::duplicate(format!("{idx}.type"), limit_type));
        }

        let mut keys: BTreeSet<String> = BTreeSet::new();
        let mut read = |field: &str, errs: &mut Vec<FieldError>| {
            let mut out: HashMap<String, Quantity> = HashMap::new();
            for (k, v) in members(Some(limit), field).into_iter().flatten() {
                errs.extend(validate_limit_resource_name(
                    limit_type,
                    k,
                    &format!("{idx}.{field}[{k}]"),
                ));
                keys.insert(k.clone());
                if let Some(q) = decoded(v) {
                    out.insert(k.clone(), q);
                }
            }
            out
        };
        let max = read("max", &mut errs);
        let min = read("min", &mut errs);
        let (defaults, default_requests) = if limit_type == "Pod" {
            for field in ["default", "defaultRequest"] {
                if members(Some(limit), field).is_some_and(|m| !m.is_empty()) {
                    errs.push(FieldError::forbidden(
                        format!("{idx}.{field}"),
                        "may not be specified when `type` is 'Pod'",
                    ));
                }
            }
            (HashMap::new(), HashMap::new())
        } else {
            let d = read("default", &mut errs);
            let dr = read("defaultRequest", &mut errs);
            (d, dr)
        };
        if limit_type == "PersistentVolumeClaim" {
            let has = |field: &str| {
                members(Some(limit), field).is_some_and(|m| m.contains_key("storage"))
            };
            if !has("min") && !has("max") {
                errs.push(FieldError::required(
                    format!("{idx}.limits"),
                    "either minimum or maximum storage value is required, but neither was provided",
                ));
            }
        }
        let ratios = read("maxLimitRequestRatio", &mut errs);

        for k in &keys {
            let mut min_q = min.get(k).cloned();
            let mut max_q = max.get(k).cloned();
            let mut def_q = defaults.get(k).cloned();
            let mut req_q = default_requests.get(k).cloned();
            let mut ratio_q = ratios.get(k).cloned();
            check_limit_key(
                &idx,
                k,
                &mut min_q,
                &mut max_q,
                &mut def_q,
                &mut req_q,
                &mut ratio_q,
                &mut errs,
            );
        }
    }
    errs
}

/// The per-resource checks of `ValidateLimitRange`, in the server's order.
/// The quantities are the loop's local copies, which Go's `Cmp` and
/// `String` mutate, so later messages print them as mutated.
#[allow(clippy::too_many_arguments)]
fn check_limit_key(
    idx: &str,
    k: &str,
    min: &mut Option<Quantity>,
    max: &mut Option<Quantity>,
    def: &mut Option<Quantity>,
    req: &mut Option<Quantity>,
    ratio: &mut Option<Quantity>,
    errs: &mut Vec<FieldError>,
) {
    use std::cmp::Ordering::{Equal, Greater, Less};
    let min_path = format!("{idx}.min[{k}]");
    let def_path = format!("{idx}.default[{k}]");
    let req_path = format!("{idx}.defaultRequest[{k}]");
    let ratio_path = format!("{idx}.maxLimitRequestRatio[{k}]");

    if let (Some(mn), Some(mx)) = (min.as_mut(), max.as_mut())
        && go_cmp(mn, mx) == Greater
    {
        let shown = mn.go_syntax();
        let detail = format!(
            "min value {} is greater than max value {}",
            go_string(mn),
            go_string(mx)
        );
        errs.push(FieldError::invalid_rendered(&min_path, &shown, &detail));
    }
    if let (Some(rq), Some(mn)) = (req.as_mut(), min.as_mut())
        && go_cmp(mn, rq) == Greater
    {
        let shown = rq.go_syntax();
        let detail = format!(
            "min value {} is greater than default request value {}",
            go_string(mn),
            go_string(rq)
        );
        errs.push(FieldError::invalid_rendered(&req_path, &shown, &detail));
    }
    if let (Some(rq), Some(mx)) = (req.as_mut(), max.as_mut())
        && go_cmp(rq, mx) == Greater
    {
        let shown = rq.go_syntax();
        let detail = format!(
            "default request value {} is greater than max value {}",
            go_string(rq),
            go_string(mx)
        );
        errs.push(FieldError::invalid_rendered(&req_path, &shown, &detail));
    }
    if let (Some(rq), Some(df)) = (req.as_mut(), def.as_mut())
        && go_cmp(rq, df) == Greater
    {
        let shown = rq.go_syntax();
        let detail = format!(
            "default request value {} is greater than default limit value {}",
            go_string(rq),
            go_string(df)
        );
        errs.push(FieldError::invalid_rendered(&req_path, &shown, &detail));
    }
    if let (Some(df), Some(mn)) = (def.as_mut(), min.as_mut())
        && go_cmp(mn, df) == Greater
    {
        let shown = mn.go_syntax();
        let detail = format!(
            "min value {} is greater than default value {}",
            go_string(mn),
            go_string(df)
        );
        errs.push(FieldError::invalid_rendered(&def_path, &shown, &detail));
    }
    if let (Some(df), Some(mx)) = (def.as_mut(), max.as_mut())
        && go_cmp(df, mx) == Greater
    {
        // The server shows the max quantity here, not the default.
        let shown = mx.go_syntax();
        let detail = format!(
            "default value {} is greater than max value {}",
            go_string(df),
            go_string(mx)
        );
        errs.push(FieldError::invalid_rendered(&def_path, &shown, &detail));
    }
    if let Some(r) = ratio.as_mut()
        && go_cmp(r, &Quantity::from_i64(1, Format::DecimalSI)) == Less
    {
        let shown = r.go_syntax();
        let detail = format!("ratio {} is less than 1", go_string(r));
        errs.push(FieldError::invalid_rendered(&ratio_path, &shown, &detail));
    }
    if let (Some(r), Some(mn), Some(mx)) = (ratio.as_mut(), min.as_ref(), max.as_ref()) {
        let mut ratio_value = r.value() as f64;
        let mut min_value = mn.value();
        let mut max_value = mx.value();
        if r.value() < MAX_MILLI_VALUE && min_value < MAX_MILLI_VALUE && max_value < MAX_MILLI_VALUE
        {
            ratio_value = r.milli_value() as f64 / 1000.0;
            min_value = mn.milli_value();
            max_value = mx.milli_value();
        }
        let ratio_limit = max_value as f64 / min_value as f64;
        if ratio_value > ratio_limit {
            let shown = r.go_syntax();
            let detail = format!(
                "ratio {} is greater than max/min = {}",
                go_string(r),
                go_float_f(ratio_limit)
            );
            errs.push(FieldError::invalid_rendered(&ratio_path, &shown, &detail));
        }
    }
    if !is_overcommit_allowed(k)
        && let (Some(df), Some(rq)) = (def.as_mut(), req.as_mut())
        && go_cmp(df, rq) != Equal
    {
        let shown = rq.go_syntax();
        let detail = format!(
            "default value {} must equal to defaultRequest value {} in {k}",
            go_string(df),
            go_string(rq)
        );
        errs.push(FieldError::invalid_rendered(&req_path, &shown, &detail));
    }
}

/// Go's `%#v` of a slice of a named string type, e.g.
/// `[]core.ResourceQuotaScope{"BestEffort"}`; `None` is a nil slice.
fn go_string_slice(type_name: &str, items: Option<&[String]>) -> String {
    match items {
        None => format!("{type_name}(nil)"),
        Some(items) => {
            let quoted: Vec<String> = items.iter().map(|s| gofmt::quote(s)).collect();
            format!("{type_name}{{{}}}", quoted.join(", "))
        }
    }
}

fn string_list(v: Option<&Value>) -> Option<Vec<String>> {
    let items = v?.as_array()?;
    Some(
        items
            .iter()
            .map(|i| i.as_str().unwrap_or_default().to_string())
            .collect(),
    )
}

/// One `scopeSelector.matchExpressions` entry as decoded.
struct ScopeRequirement {
    scope_name: String,
    operator: String,
    values: Option<Vec<String>>,
}

fn scope_requirements(selector: &Value) -> Option<Vec<ScopeRequirement>> {
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
fn go_scope_selector(reqs: Option<&[ScopeRequirement]>) -> String {
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

const CONFLICTING_SCOPE_PAIRS: [(&str, &str); 2] = [
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

fn validate_quota_list(list: Option<&Map<String, Value>>, path: &str, errs: &mut Vec<FieldError>) {
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
fn huge_page_value_divisible(name: &str, q: &Quantity) -> bool {
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

/// `ValidateContainerResourceRequirements` for the `resources` object of a
/// container at `path` (e.g. `spec.containers[0].resources`): resource
/// names, non-negative (and whole, for counts) values, requests not above
/// limits (equal for hugepages and extended resources), whole hugepages,
/// and hugepages only with cpu or memory.
///
/// Not covered: `claims` (checking them needs the pod's resource claims),
/// and the option to keep indivisible hugepages values an existing pod
/// already has (creation rules are applied).
pub fn validate_resource_requirements(path: &str, resources: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let lim_path = format!("{path}.limits");
    let req_path = format!("{path}.requests");
    let mut lim_cpu_or_memory = false;
    let mut req_cpu_or_memory = false;
    let mut lim_huge_pages = false;
    let mut req_huge_pages = false;
    let limits = members(Some(resources), "limits");
    let mut decoded_limits: HashMap<&str, Option<Quantity>> = HashMap::new();

    for (name, v) in limits.into_iter().flatten() {
        let fld = format!("{lim_path}[{name}]");
        errs.extend(validate_container_resource_name(name, &fld));
        let q = decoded(v);
        decoded_limits.insert(name, q.clone());
        let Some(q) = q else { continue };
        errs.extend(validate_quantity_value(name, &q, &fld));
        if is_huge_page_resource_name(name) {
            lim_huge_pages = true;
            if !huge_page_value_divisible(name, &q) {
                errs.push(FieldError::invalid(
                    &fld,
                    &q.canonical(),
                    &format!("{q} is not positive integer multiple of {name}"),
                ));
            }
        }
        if name == "cpu" || name == "memory" {
            lim_cpu_or_memory = true;
        }
    }
    for (name, v) in members(Some(resources), "requests").into_iter().flatten() {
        let fld = format!("{req_path}[{name}]");
        errs.extend(validate_container_resource_name(name, &fld));
        let Some(q) = decoded(v) else { continue };
        errs.extend(validate_quantity_value(name, &q, &fld));
        match decoded_limits.get(name.as_str()) {
            Some(Some(limit)) => {
                if q != *limit && !is_overcommit_allowed(name) {
                    errs.push(FieldError::invalid(
                        &req_path,
                        &q.canonical(),
                        &format!("must be equal to {name} limit of {limit}"),
                    ));
                } else if q > *limit {
                    errs.push(FieldError::invalid(
                        &req_path,
                        &q.canonical(),
                        &format!("must be less than or equal to {name} limit of {limit}"),
                    ));
                }
            }
            Some(None) => {}
            None => {
                if !is_overcommit_allowed(name) {
                    errs.push(FieldError::required(
                        &lim_path,
                        "Limit must be set for non overcommitable resources",
                    ));
                }
            }
        }
        if is_huge_page_resource_name(name) {
            req_huge_pages = true;
            if !huge_page_value_divisible(name, &q) {
                errs.push(FieldError::invalid(
                    &fld,
                    &q.canonical(),
                    &format!("{q} is not positive integer multiple of {name}"),
                ));
            }
        }
        if name == "cpu" || name == "memory" {
            req_cpu_or_memory = true;
        }
    }
    if !lim_cpu_or_memory && !req_cpu_or_memory && (req_huge_pages || lim_huge_pages) {
        errs.push(FieldError::forbidden(
            path,
            "HugePages require cpu or memory",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn texts(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn lr(limits: Value) -> Vec<String> {
        texts(&validate_limit_range(&json!({"spec": {"limits": limits}})))
    }

    fn go_int(value: i64, scale: i32, s: &str, format: &str) -> String {
        format!(
            "resource.Quantity{{i:resource.int64Amount{{value:{value}, scale:{scale}}}, \
             d:resource.infDecAmount{{Dec:(*inf.Dec)(nil)}}, s:\"{s}\", Format:\"{format}\"}}"
        )
    }

    #[test]
    fn limit_range_valid_spec_has_no_errors() {
        let errs = lr(json!([
            {"type": "Container",
             "max": {"cpu": "2", "memory": "1Gi"},
             "min": {"cpu": "100m", "memory": "4Mi"},
             "default": {"cpu": "1", "memory": "512Mi"},
             "defaultRequest": {"cpu": "500m", "memory": "256Mi"},
             "maxLimitRequestRatio": {"cpu": "10"}},
            {"type": "Pod", "max": {"cpu": "4"}},
            {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}},
            {"type": "example.com/Custom", "max": {"example.com/thing": "1"}}
        ]));
        assert!(errs.is_empty(), "{errs:?}");
        assert!(validate_limit_range(&json!({})).is_empty());
        assert!(validate_limit_range(&json!({"spec": {"limits": "x"}})).is_empty());
    }

    #[test]
    fn limit_range_min_above_max_prints_the_quantity_struct() {
        assert_eq!(
            lr(json!([{"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}}])),
            vec![format!(
                "spec.limits[0].min[cpu]: Invalid value: {}: min value 2 is greater than max value 1",
                go_int(2, 0, "2", "DecimalSI")
            )]
        );
    }

    #[test]
    fn limit_range_default_and_request_ordering() {
        let errs = lr(json!([{"type": "Container",
            "min": {"memory": "1Gi"},
            "max": {"memory": "2Gi"},
            "default": {"memory": "4Gi"},
            "defaultRequest": {"memory": "512Mi"}}]));
        assert_eq!(
            errs,
            vec![
                format!(
                    "spec.limits[0].defaultRequest[memory]: Invalid value: {}: \
                     min value 1Gi is greater than default request value 512Mi",
                    go_int(536870912, 0, "", "BinarySI")
                ),
                // The server shows the max, not the default, here.
                format!(
                    "spec.limits[0].default[memory]: Invalid value: {}: \
                     default value 4Gi is greater than max value 2Gi",
                    go_int(2147483648, 0, "2Gi", "BinarySI")
                ),
            ]
        );
        let errs = lr(json!([{"type": "Container",
            "max": {"cpu": "1"},
            "default": {"cpu": "500m"},
            "defaultRequest": {"cpu": "2"}}]));
        assert_eq!(
            errs,
            vec![
                format!(
                    "spec.limits[0].defaultRequest[cpu]: Invalid value: {}: \
                     default request value 2 is greater than max value 1",
                    go_int(2, 0, "2", "DecimalSI")
                ),
                format!(
                    "spec.limits[0].defaultRequest[cpu]: Invalid value: {}: \
                     default request value 2 is greater than default limit value 500m",
                    go_int(2, 0, "2", "DecimalSI")
                ),
            ]
        );
    }

    #[test]
    fn limit_range_ratios() {
        assert_eq!(
            lr(json!([{"type": "Container", "maxLimitRequestRatio": {"cpu": "0.5"}}])),
            vec![format!(
                "spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: {}: ratio 500m is less than 1",
                go_int(5, -1, "", "DecimalSI")
            )]
        );
        assert_eq!(
            lr(json!([{"type": "Container",
                "min": {"cpu": "100m"}, "max": {"cpu": "200m"},
                "maxLimitRequestRatio": {"cpu": "3"}}])),
            vec![format!(
                "spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: {}: \
                 ratio 3 is greater than max/min = 2.000000",
                go_int(3, 0, "3", "DecimalSI")
            )]
        );
        assert!(
            lr(json!([{"type": "Container",
                "min": {"cpu": "100m"}, "max": {"cpu": "300m"},
                "maxLimitRequestRatio": {"cpu": "3"}}]))
            .is_empty()
        );
    }

    #[test]
    fn limit_range_types_and_names() {
        let errs = lr(json!([{"max": {"cpu": "1"}}]));
        assert_eq!(errs.len(), 2);
        assert_eq!(
            errs[0],
            "spec.limits[0].type: Invalid value: \"\": name part must be non-empty"
        );
        assert_eq!(
            lr(json!([{"type": "Foo"}])),
            vec![
                "spec.limits[0].type: Invalid value: \"Foo\": must be a standard limit type or fully qualified"
            ]
        );
        assert_eq!(
            lr(json!([{"type": "Container"}, {"type": "Container"}])),
            vec!["spec.limits[1].type: Duplicate value: \"Container\""]
        );
        assert_eq!(
            lr(json!([{"type": "Container", "max": {"foo": "1"}}])),
            vec![
                "spec.limits[0].max[foo]: Invalid value: \"foo\": must be a standard resource type or fully qualified",
                "spec.limits[0].max[foo]: Invalid value: \"foo\": must be a standard resource for containers",
            ]
        );
        assert_eq!(
            lr(json!([{"type": "Container", "max": {"example.com/a_b": "1"}}])),
            Vec::<String>::new()
        );
        assert_eq!(
            lr(json!([{"type": "Container", "max": {"requests.example.com": "1"}}])),
            vec![
                "spec.limits[0].max[requests.example.com]: Invalid value: \"requests.example.com\": \
                 must be a standard resource type or fully qualified",
                "spec.limits[0].max[requests.example.com]: Invalid value: \"requests.example.com\": \
                 must be a standard resource for containers",
            ]
        );
    }

    #[test]
    fn limit_range_pod_and_pvc_rules() {
        assert_eq!(
            lr(json!([{"type": "Pod", "default": {"cpu": "1"}, "defaultRequest": {"cpu": "1"}}])),
            vec![
                "spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'",
                "spec.limits[0].defaultRequest: Forbidden: may not be specified when `type` is 'Pod'",
            ]
        );
        assert_eq!(
            lr(json!([{"type": "PersistentVolumeClaim", "max": {"cpu": "1"}}])),
            vec![
                "spec.limits[0].limits: Required value: either minimum or maximum storage value \
                 is required, but neither was provided"
            ]
        );
        assert!(
            lr(json!([{"type": "PersistentVolumeClaim", "max": {"storage": "5Gi"}}])).is_empty()
        );
    }

    #[test]
    fn limit_range_hugepages_default_must_equal_request() {
        assert_eq!(
            lr(json!([{"type": "Container",
                "default": {"hugepages-2Mi": "2Mi"},
                "defaultRequest": {"hugepages-2Mi": "4Mi"}}])),
            vec![
                format!(
                    "spec.limits[0].defaultRequest[hugepages-2Mi]: Invalid value: {}: \
                     default request value 4Mi is greater than default limit value 2Mi",
                    go_int(4194304, 0, "4Mi", "BinarySI")
                ),
                format!(
                    "spec.limits[0].defaultRequest[hugepages-2Mi]: Invalid value: {}: \
                     default value 2Mi must equal to defaultRequest value 4Mi in hugepages-2Mi",
                    go_int(4194304, 0, "4Mi", "BinarySI")
                ),
            ]
        );
    }

    fn rq(obj: Value) -> Vec<String> {
        texts(&validate_resource_quota(&obj))
    }

    #[test]
    fn resource_quota_hard_values() {
        assert!(
            rq(
                json!({"spec": {"hard": {"pods": "10", "cpu": "2", "requests.memory": "1Gi",
            "count/deployments.apps": "3", "example.com/gpu": "4", "hugepages-2Mi": "4Mi"}}})
            )
            .is_empty()
        );
        assert_eq!(
            rq(json!({"spec": {"hard": {"pods": "-1"}}})),
            vec!["spec.hard[pods]: Invalid value: \"-1\": must be greater than or equal to 0"]
        );
        assert_eq!(
            rq(json!({"spec": {"hard": {"pods": "1.5"}}})),
            vec![format!(
                "spec.hard[pods]: Invalid value: {}: must be an integer",
                go_int(15, -1, "", "DecimalSI")
            )]
        );
        assert_eq!(
            rq(json!({"spec": {"hard": {"foo": "1"}}})),
            vec![
                "spec.hard[foo]: Invalid value: \"foo\": must be a standard resource type or fully qualified",
                "spec.hard[foo]: Invalid value: \"foo\": must be a standard resource for quota",
            ]
        );
        assert_eq!(
            rq(json!({"status": {"used": {"services": "-2"}}})),
            vec![
                "status.used[services]: Invalid value: \"-2\": must be greater than or equal to 0"
            ]
        );
    }

    #[test]
    fn resource_quota_scopes() {
        assert_eq!(
            rq(json!({"spec": {"hard": {"pods": "1"}, "scopes": ["BestEffort", "NotBestEffort"]}})),
            vec![
                "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"BestEffort\", \"NotBestEffort\"}: conflicting scopes"
            ]
        );
        assert_eq!(
            rq(json!({"spec": {"hard": {"cpu": "1"}, "scopes": ["BestEffort"]}})),
            vec![
                "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"BestEffort\"}: unsupported scope applied to resource"
            ]
        );
        assert_eq!(
            rq(json!({"spec": {"hard": {"pods": "1"}, "scopes": ["Foo"]}})),
            vec![
                "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"Foo\"}: unsupported scope"
            ]
        );
        assert!(
            rq(json!({"spec": {"hard": {"cpu": "1"}, "scopes": ["NotTerminating"]}})).is_empty()
        );
    }

    #[test]
    fn resource_quota_scope_selector() {
        let sel = |exprs: Value| {
            rq(
                json!({"spec": {"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": exprs}}}),
            )
        };
        assert!(
            sel(json!([{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]))
                .is_empty()
        );
        assert!(sel(json!([{"scopeName": "BestEffort", "operator": "Exists"}])).is_empty());
        assert_eq!(
            sel(json!([{"scopeName": "PriorityClass", "operator": "In"}])),
            vec![
                "spec.scopeSelector.matchExpressions.values: Required value: must be at least one \
                 value when `operator` is 'In' or 'NotIn' for scope selector"
            ]
        );
        assert_eq!(
            sel(json!([{"scopeName": "Terminating", "operator": "In", "values": ["x"]}])),
            vec![
                "spec.scopeSelector.matchExpressions.operator: Invalid value: \"In\": must be 'Exists' \
                 when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, \
                 ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or \
                 ResourceQuotaScopeCrossNamespacePodAffinity"
            ]
        );
        assert_eq!(
            sel(json!([{"scopeName": "PriorityClass", "operator": "Exists", "values": ["a"]}])),
            vec![
                "spec.scopeSelector.matchExpressions.values: Invalid value: []string{\"a\"}: must be \
                 no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"
            ]
        );
        assert_eq!(
            sel(json!([{"scopeName": "PriorityClass", "operator": "Gt", "values": ["a"]}])),
            vec![
                "spec.scopeSelector.matchExpressions.operator: Invalid value: \"Gt\": not a valid selector operator"
            ]
        );
        assert_eq!(
            sel(json!([{"scopeName": "Nope", "operator": "Exists"}])),
            vec![
                "spec.scopeSelector.matchExpressions.scopeName: Invalid value: \"Nope\": unsupported scope"
            ]
        );
        assert_eq!(
            rq(
                json!({"spec": {"hard": {"cpu": "1"}, "scopeSelector": {"matchExpressions": [
                {"scopeName": "BestEffort", "operator": "Exists"}]}}})
            ),
            vec![
                "spec.scopeSelector.matchExpressions: Invalid value: core.ScopeSelector{MatchExpressions:\
                 []core.ScopedResourceSelectorRequirement{core.ScopedResourceSelectorRequirement{\
                 ScopeName:\"BestEffort\", Operator:\"Exists\", Values:[]string(nil)}}}: \
                 unsupported scope applied to resource"
            ]
        );
        assert_eq!(
            sel(json!([{"scopeName": "BestEffort", "operator": "Exists"},
                       {"scopeName": "NotBestEffort", "operator": "Exists"}])),
            vec![
                "spec.scopeSelector.matchExpressions: Invalid value: []core.ResourceQuotaScope(nil): conflicting scopes"
            ]
        );
    }

    fn rr(resources: Value) -> Vec<String> {
        texts(&validate_resource_requirements(
            "spec.containers[0].resources",
            &resources,
        ))
    }

    #[test]
    fn requests_may_not_exceed_limits() {
        assert!(rr(json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "1Gi"}})).is_empty());
        assert_eq!(
            rr(json!({"limits": {"cpu": "1"}, "requests": {"cpu": "2"}})),
            vec![
                "spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1"
            ]
        );
        assert_eq!(
            rr(
                json!({"limits": {"memory": "256Mi", "cpu": "250m"}, "requests": {"memory": "512Mi", "cpu": "500m"}})
            ),
            vec![
                "spec.containers[0].resources.requests: Invalid value: \"512Mi\": must be less than or equal to memory limit of 256Mi",
                "spec.containers[0].resources.requests: Invalid value: \"500m\": must be less than or equal to cpu limit of 250m",
            ]
        );
        // A null limit decodes as zero.
        assert_eq!(
            rr(json!({"limits": {"cpu": null}, "requests": {"cpu": "100m"}})),
            vec![
                "spec.containers[0].resources.requests: Invalid value: \"100m\": must be less than or equal to cpu limit of 0"
            ]
        );
        // Compared after decoding: 0.3 is 300m.
        assert_eq!(
            rr(json!({"limits": {"cpu": "50m"}, "requests": {"cpu": "0.3"}})),
            vec![
                "spec.containers[0].resources.requests: Invalid value: \"300m\": must be less than or equal to cpu limit of 50m"
            ]
        );
    }

    #[test]
    fn negative_and_badly_named_resources() {
        assert_eq!(
            rr(json!({"requests": {"cpu": "-1"}})),
            vec![
                "spec.containers[0].resources.requests[cpu]: Invalid value: \"-1\": must be greater than or equal to 0"
            ]
        );
        assert_eq!(
            rr(json!({"limits": {"pods": "1"}})),
            vec![
                "spec.containers[0].resources.limits[pods]: Invalid value: \"pods\": must be a standard resource for containers"
            ]
        );
        assert_eq!(
            rr(json!({"limits": {"Bad Name": "1"}}))
                .first()
                .map(String::as_str),
            Some(
                "spec.containers[0].resources.limits[Bad Name]: Invalid value: \"Bad Name\": name part must \
                 consist of alphanumeric characters, '-', '_' or '.', and must start and end with an \
                 alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for \
                 validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
            )
        );
    }

    #[test]
    fn extended_resources_are_whole_and_not_overcommitted() {
        assert!(
            rr(json!({"limits": {"example.com/gpu": "2"}, "requests": {"example.com/gpu": "2"}}))
                .is_empty()
        );
        assert_eq!(
            rr(json!({"requests": {"example.com/gpu": "1"}})),
            vec![
                "spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"
            ]
        );
        assert_eq!(
            rr(json!({"limits": {"example.com/gpu": "2"}, "requests": {"example.com/gpu": "1"}})),
            vec![
                "spec.containers[0].resources.requests: Invalid value: \"1\": must be equal to example.com/gpu limit of 2"
            ]
        );
        assert_eq!(
            rr(
                json!({"limits": {"example.com/gpu": "1.5"}, "requests": {"example.com/gpu": "1.5"}})
            ),
            vec![
                format!(
                    "spec.containers[0].resources.limits[example.com/gpu]: Invalid value: {}: must be an integer",
                    go_int(15, -1, "", "DecimalSI")
                ),
                format!(
                    "spec.containers[0].resources.requests[example.com/gpu]: Invalid value: {}: must be an integer",
                    go_int(15, -1, "", "DecimalSI")
                ),
            ]
        );
        // Names in kubernetes.io/ are native: no further name rule.
        assert!(rr(json!({"limits": {"kubernetes.io/foo": "1"}})).is_empty());
    }

    #[test]
    fn hugepages_rules() {
        assert!(rr(json!({"limits": {"hugepages-2Mi": "4Mi", "memory": "1Gi"}, "requests": {"hugepages-2Mi": "4Mi"}})).is_empty());
        assert_eq!(
            rr(
                json!({"limits": {"hugepages-2Mi": "3Mi", "memory": "1Gi"}, "requests": {"hugepages-2Mi": "3Mi"}})
            ),
            vec![
                "spec.containers[0].resources.limits[hugepages-2Mi]: Invalid value: \"3Mi\": 3Mi is not positive integer multiple of hugepages-2Mi",
                "spec.containers[0].resources.requests[hugepages-2Mi]: Invalid value: \"3Mi\": 3Mi is not positive integer multiple of hugepages-2Mi",
            ]
        );
        assert_eq!(
            rr(json!({"limits": {"hugepages-2Mi": "4Mi"}})),
            vec!["spec.containers[0].resources: Forbidden: HugePages require cpu or memory"]
        );
        assert_eq!(
            rr(
                json!({"limits": {"hugepages-2Mi": "4Mi", "cpu": "1"}, "requests": {"hugepages-2Mi": "2Mi"}})
            ),
            vec![
                "spec.containers[0].resources.requests: Invalid value: \"2Mi\": must be equal to hugepages-2Mi limit of 4Mi"
            ]
        );
    }

    #[test]
    fn helpers_match_the_server_tables() {
        assert!(is_extended_resource_name("example.com/gpu"));
        assert!(!is_extended_resource_name("kubernetes.io/gpu"));
        assert!(!is_extended_resource_name("cpu"));
        assert!(is_overcommit_allowed("cpu"));
        assert!(!is_overcommit_allowed("hugepages-1Gi"));
        assert!(!is_overcommit_allowed("example.com/gpu"));
        assert!(is_standard_quota_resource_name("requests.hugepages-2Mi"));
        assert!(!is_standard_quota_resource_name("storage"));
        assert!(is_standard_resource_name("storage"));
        assert_eq!(go_float_f(2.0), "2.000000");
        assert_eq!(go_float_f(f64::NEG_INFINITY), "-Inf");
        assert_eq!(go_float_f(1.0 / 3.0), "0.333333");
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            "[-+0-9.a-zA-Z/]{0,8}".prop_map(Value::String),
            prop_oneof![
                Just("cpu"),
                Just("memory"),
                Just("pods"),
                Just("hugepages-2Mi"),
                Just("example.com/gpu"),
                Just("Container"),
                Just("Pod"),
                Just("PersistentVolumeClaim"),
                Just("BestEffort"),
                Just("Exists"),
                Just("In")
            ]
            .prop_map(|s| Value::String(s.to_string())),
        ];
        leaf.prop_recursive(5, 48, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(
                    prop_oneof![
                        Just("spec".to_string()),
                        Just("limits".to_string()),
                        Just("max".to_string()),
                        Just("min".to_string()),
                        Just("default".to_string()),
                        Just("defaultRequest".to_string()),
                        Just("maxLimitRequestRatio".to_string()),
                        Just("type".to_string()),
                        Just("hard".to_string()),
                        Just("scopes".to_string()),
                        Just("scopeSelector".to_string()),
                        Just("matchExpressions".to_string()),
                        Just("requests".to_string()),
                        Just("cpu".to_string()),
                        "[a-z]{1,3}",
                    ],
                    inner,
                    0..5,
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn validators_never_panic(v in arb_json()) {
            let _ = validate_limit_range(&v);
            let _ = validate_resource_quota(&v);
            let _ = validate_resource_requirements("r", &v);
            if let Some(spec) = v.get("spec") {
                let _ = validate_limit_range(&json!({"spec": spec}));
                let _ = validate_resource_requirements("r", spec);
            }
        }

        #[test]
        fn request_limit_check_agrees_with_comparison(a in 0i64..5000, b in 0i64..5000) {
            let errs = validate_resource_requirements(
                "r",
                &json!({"limits": {"cpu": format!("{a}m")}, "requests": {"cpu": format!("{b}m")}}),
            );
            prop_assert_eq!(errs.is_empty(), b <= a);
        }
    }
}
