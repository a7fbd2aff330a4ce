//! Storage: core/v1 PersistentVolumeClaim (access modes, selector, storage
//! request, class name, volume mode) and storage.k8s.io StorageClass
//! (provisioner, parameters, reclaim policy, binding mode, update rules).
//!
//! This module must NOT parse quantities: it reads the sign of an already
//! parsed request.

use super::*;

/// `supportedAccessModes`, sorted.
pub(super) const ACCESS_MODES: [&str; 4] = [
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];

pub(super) fn validate_pvc(obj: &Value, errs: &mut Vec<FieldError>) {
    let spec = get(obj, "spec").unwrap_or(&Value::Null);
    let modes = strings_of(spec, "accessModes");
    if modes.is_empty() {
        errs.push(required(
            "spec.accessModes",
            "at least 1 access mode is required",
        ));
    }
    if let Some(sel) = get(spec, "selector").filter(|s| s.is_object()) {
        validate_label_selector(sel, "spec.selector", errs);
    }
    let (mut rwop, mut other) = (false, false);
    for m in &modes {
        if !ACCESS_MODES.contains(m) {
            errs.push(not_supported("spec.accessModes", m, &ACCESS_MODES));
        } else if *m == "ReadWriteOncePod" {
            rwop = true;
        } else {
            other = true;
        }
    }
    if rwop && other {
        errs.push(forbidden(
            "spec.accessModes",
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
    // The key sits on `resources`, not `resources.requests`: upstream's path.
    let storage_path = "spec.resources[storage]";
    let requests = get(spec, "resources").and_then(|r| get(r, "requests"));
    match requests.and_then(|r| get(r, "storage")) {
        None => errs.push(required(storage_path, "")),
        Some(_) => {
            if let Some((sign, text)) = requests.and_then(|r| quantity_sign(r, "storage"))
                && sign <= 0
            {
                errs.push(invalid_str(
                    storage_path,
                    &text,
                    "must be greater than zero",
                ));
            }
        }
    }
    if let Some(class) = opt_string(spec, "storageClassName").filter(|c| !c.is_empty()) {
        for msg in is_dns1123_subdomain(class) {
            errs.push(invalid_str("spec.storageClassName", class, &msg));
        }
    }
    if let Some(mode) = opt_string(spec, "volumeMode")
        && !matches!(mode, "Block" | "Filesystem")
    {
        errs.push(not_supported(
            "spec.volumeMode",
            mode,
            &["Block", "Filesystem"],
        ));
    }
}

pub(super) fn validate_storage_class(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let provisioner = string(obj, "provisioner");
    if provisioner.is_empty() {
        errs.push(required("provisioner", ""));
    } else {
        for msg in is_qualified_name(&provisioner.to_lowercase()) {
            errs.push(invalid_str("provisioner", provisioner, &msg));
        }
    }
    if let Some(params) = map_at(obj, "parameters")
        && params.contains_key("")
    {
        errs.push(invalid_str("parameters", "", "field can not be empty."));
    }
    if let Some(policy) = opt_string(obj, "reclaimPolicy")
        && !policy.is_empty()
        && !matches!(policy, "Delete" | "Retain")
    {
        errs.push(not_supported(
            "reclaimPolicy",
            policy,
            &["Delete", "Retain"],
        ));
    }
    match opt_string(obj, "volumeBindingMode") {
        None => errs.push(required("volumeBindingMode", "")),
        Some("Immediate" | "WaitForFirstConsumer") => {}
        Some(other) => errs.push(not_supported(
            "volumeBindingMode",
            other,
            &["Immediate", "WaitForFirstConsumer"],
        )),
    }
    let Some(old) = old else {
        return;
    };
    if get(obj, "parameters") != get(old, "parameters") {
        errs.push(forbidden(
            "parameters",
            "updates to parameters are forbidden.",
        ));
    }
    if provisioner != string(old, "provisioner") {
        errs.push(forbidden(
            "provisioner",
            "updates to provisioner are forbidden.",
        ));
    }
    if string(obj, "reclaimPolicy") != string(old, "reclaimPolicy") {
        errs.push(forbidden(
            "reclaimPolicy",
            "updates to reclaimPolicy are forbidden.",
        ));
    }
    let mode = opt_string(obj, "volumeBindingMode");
    if mode != opt_string(old, "volumeBindingMode") {
        let shown = mode.map_or_else(|| "null".to_string(), quote);
        errs.push(invalid("volumeBindingMode", &shown, IMMUTABLE));
    }
}
