//! Resource names: the standard, huge-page, extended and integer resources,
//! the quota scopes, and the checks of a resource name and its quantity.
//!
//! This module must NOT validate a whole object (see `limit_range`, `quota`
//! and the resource requirements in the parent).

use super::*;

pub(super) const HUGE_PAGES_PREFIX: &str = "hugepages-";
pub(super) const REQUESTS_HUGE_PAGES_PREFIX: &str = "requests.hugepages-";
pub(super) const DEFAULT_RESOURCE_REQUESTS_PREFIX: &str = "requests.";
pub(super) const DEFAULT_NAMESPACE_PREFIX: &str = "kubernetes.io/";

/// `helper.standardResources`.
pub(super) const STANDARD_RESOURCES: &[&str] = &[
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
pub(super) const STANDARD_QUOTA_RESOURCES: &[&str] = &[
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
pub(super) const STANDARD_CONTAINER_RESOURCES: &[&str] = &["cpu", "memory", "ephemeral-storage"];

/// `helper.integerResources`: counts, which must be whole numbers.
pub(super) const INTEGER_RESOURCES: &[&str] = &[
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
pub(super) const STANDARD_LIMIT_TYPES: &[&str] = &["Pod", "Container", "PersistentVolumeClaim"];

/// `helper.IsStandardResourceQuotaScope`'s set.
pub(super) const STANDARD_SCOPES: &[&str] = &[
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
];

/// Resources a pod-restricting scope may constrain (`podObjectCountQuotaResources`
/// and `podComputeQuotaResources`).
pub(super) const POD_SCOPED_RESOURCES: &[&str] = &[
    "pods",
    "cpu",
    "memory",
    "limits.cpu",
    "limits.memory",
    "requests.cpu",
    "requests.memory",
];

pub(super) const MSG_NEGATIVE: &str = "must be greater than or equal to 0";
pub(super) const MSG_NOT_INTEGER: &str = "must be an integer";

/// True for names with the hugepages prefix (`IsHugePageResourceName`).
pub fn is_huge_page_resource_name(name: &str) -> bool {
    name.starts_with(HUGE_PAGES_PREFIX)
}

pub(super) fn is_quota_huge_page_resource_name(name: &str) -> bool {
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

pub(super) fn is_integer_resource_name(name: &str) -> bool {
    INTEGER_RESOURCES.contains(&name) || is_extended_resource_name(name)
}

pub(super) fn scope_valid_for_resource(scope: &str, resource: &str) -> bool {
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
pub(super) fn decoded(v: &Value) -> Option<Quantity> {
    let mut q = parse_json(v).ok()?;
    q.round_up(-3);
    Some(q)
}

pub(super) fn members<'a>(v: Option<&'a Value>, key: &str) -> Option<&'a Map<String, Value>> {
    v?.get(key)?.as_object()
}

/// A qualified name that, when unprefixed, is one `is_standard` accepts
/// (refused with `message` otherwise).
pub(super) fn validate_standard_or_qualified(
    value: &str,
    path: &str,
    is_standard: impl Fn(&str) -> bool,
    message: &str,
) -> Vec<FieldError> {
    let errs: Vec<FieldError> = is_qualified_name(value)
        .iter()
        .map(|m| FieldError::invalid(path, value, m))
        .collect();
    if !errs.is_empty() {
        return errs;
    }
    if !value.contains('/') && !is_standard(value) {
        return vec![FieldError::invalid(path, value, message)];
    }
    errs
}

/// `validateResourceName`: a qualified name, and standard if unprefixed.
pub fn validate_resource_name(value: &str, path: &str) -> Vec<FieldError> {
    validate_standard_or_qualified(
        value,
        path,
        is_standard_resource_name,
        "must be a standard resource type or fully qualified",
    )
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
pub(super) fn validate_quota_resource_name(value: &str, path: &str) -> Vec<FieldError> {
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
