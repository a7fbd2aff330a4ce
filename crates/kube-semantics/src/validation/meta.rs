//! The generic `metadata` rules every kind goes through: annotations,
//! finalizers and ownerReferences.
//!
//! This module must NOT check `metadata.name`, `metadata.namespace` or the
//! object's own labels: [`crate::names`] does.

use super::*;

/// The generic `metadata` rules (`ValidateObjectMeta` minus names and
/// labels). `kube_finalizers` adds core's rule that a finalizer without a
/// `/` must be one of the standard names; custom resources skip it.
pub(super) fn validate_meta(obj: &Value, kube_finalizers: bool, errs: &mut Vec<FieldError>) {
    let Some(meta) = get(obj, "metadata") else {
        return;
    };
    if let Some(annotations) = map_at(meta, "annotations") {
        validate_annotations(annotations, "metadata.annotations", errs);
    }
    validate_owner_references(meta, errs);
    let finalizers = strings_of(meta, "finalizers");
    for f in &finalizers {
        for msg in is_qualified_name(f) {
            errs.push(invalid_str("metadata.finalizers", f, &msg));
        }
    }
    if finalizers.contains(&"orphan") && finalizers.contains(&"foregroundDeletion") {
        errs.push(invalid(
            "metadata.finalizers",
            &go_string_slice(Some(&finalizers)),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    if kube_finalizers {
        for (i, f) in finalizers.iter().enumerate() {
            if !f.contains('/') && !matches!(*f, "kubernetes" | "orphan" | "foregroundDeletion") {
                errs.push(invalid_str(
                    &index("metadata.finalizers", i),
                    f,
                    "name is neither a standard finalizer name nor is it fully qualified",
                ));
            }
        }
    }
}

/// `ValidateAnnotations`: keys are qualified names compared in lower case,
/// and keys plus values total at most 256 KiB. Every error is on `path`.
pub(super) fn validate_annotations(
    annotations: &Map<String, Value>,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let mut size = 0usize;
    for (k, v) in annotations {
        for msg in is_qualified_name(&k.to_lowercase()) {
            errs.push(invalid_str(path, k, &msg));
        }
        size += k.len() + v.as_str().map_or(0, str::len);
    }
    if size > MAX_ANNOTATIONS_SIZE {
        errs.push(too_long(path, MAX_ANNOTATIONS_SIZE));
    }
}

/// `ValidateOwnerReferences`. Upstream reports on `metadata.ownerReferences`
/// without an index. The two-controllers error prints the whole list with
/// Go's `%#v` (pointers included), which cannot be reproduced; its value
/// here is a placeholder, its detail upstream's.
pub(super) fn validate_owner_references(meta: &Value, errs: &mut Vec<FieldError>) {
    let path = "metadata.ownerReferences";
    let mut first_controller: Option<String> = None;
    for r in arr(meta, "ownerReferences") {
        let api_version = string(r, "apiVersion");
        let kind = string(r, "kind");
        let (group, version) = split_api_version(api_version);
        if version.is_empty() {
            errs.push(invalid_str(
                &child(path, "apiVersion"),
                api_version,
                "version must not be empty",
            ));
        }
        if kind.is_empty() {
            errs.push(invalid_str(
                &child(path, "kind"),
                kind,
                "kind must not be empty",
            ));
        }
        let name = string(r, "name");
        if name.is_empty() {
            errs.push(invalid_str(
                &child(path, "name"),
                name,
                "name must not be empty",
            ));
        }
        let uid = string(r, "uid");
        if uid.is_empty() {
            errs.push(invalid_str(
                &child(path, "uid"),
                uid,
                "uid must not be empty",
            ));
        }
        if group.is_empty() && version == "v1" && kind == "Event" {
            errs.push(invalid(
                path,
                "v1.OwnerReference{...}",
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if get(r, "controller").and_then(Value::as_bool) == Some(true) {
            let current = format!("{kind}/{name}");
            match &first_controller {
                Some(first) => errs.push(invalid(
                    path,
                    "[]v1.OwnerReference{...}",
                    &format!(
                        "Only one reference can have Controller set to true. Found \"true\" in \
                         references for {first} and {current}"
                    ),
                )),
                None => first_controller = Some(current),
            }
        }
    }
}

/// `schema.ParseGroupVersion`, forgiving: a malformed value has no version.
pub(super) fn split_api_version(s: &str) -> (&str, &str) {
    match s.split('/').collect::<Vec<_>>().as_slice() {
        [v] => ("", v),
        [g, v] => (g, v),
        _ => ("", ""),
    }
}
