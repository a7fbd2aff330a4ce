//! Cells of storage.k8s.io (StorageClass, VolumeAttributesClass,
//! VolumeAttachment, CSI objects), scheduling.k8s.io PriorityClass and
//! node.k8s.io RuntimeClass.
//!
//! This module must NOT declare columns (see `columns`).

use super::*;

pub(super) fn storage_class(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let is_default = [
        "storageclass.kubernetes.io/is-default-class",
        "storageclass.beta.kubernetes.io/is-default-class",
    ]
    .iter()
    .any(|a| st(o, &["metadata", "annotations", a]) == "true");
    let mut shown = name(o).to_string();
    if is_default {
        shown.push_str(" (default)");
    }
    vec![
        shown.into(),
        st(o, &["provisioner"]).into(),
        ost(o, &["reclaimPolicy"]).unwrap_or("Delete").into(),
        ost(o, &["volumeBindingMode"]).unwrap_or("Immediate").into(),
        boolean(o, &["allowVolumeExpansion"])
            .unwrap_or(false)
            .into(),
        created(o, now),
    ]
}

/// The ` (default)` mark upstream adds for a default class is not
/// reproduced: its annotation could not be confirmed from the source.
pub(super) fn volume_attributes_class(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        st(o, &["driverName"]).into(),
        created(o, now),
    ]
}

pub(super) fn volume_attachment(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        st(o, &["spec", "attacher"]).into(),
        st(o, &["spec", "source", "persistentVolumeName"]).into(),
        st(o, &["spec", "nodeName"]).into(),
        boolean(o, &["status", "attached"]).unwrap_or(false).into(),
        created(o, now),
    ]
}

pub(super) fn csi_node(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        len_of(o, &["spec", "drivers"]).into(),
        created(o, now),
    ]
}

/// The unset fields print as their storage.k8s.io/v1 defaults
/// (attachRequired true, the lifecycle mode `Persistent`).
pub(super) fn csi_driver(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let spec = get(o, &["spec"]).unwrap_or(&Value::Null);
    let token_requests = match get(spec, &["tokenRequests"]).and_then(Value::as_array) {
        None => "<unset>".to_string(),
        Some(list) => list
            .iter()
            .map(|t| st(t, &["audience"]))
            .collect::<Vec<_>>()
            .join(","),
    };
    let modes: Vec<&str> = arr(spec, &["volumeLifecycleModes"])
        .iter()
        .map(|m| m.as_str().unwrap_or(""))
        .collect();
    let modes = if modes.is_empty() {
        "Persistent".to_string()
    } else {
        modes.join(",")
    };
    vec![
        name(o).into(),
        boolean(spec, &["attachRequired"]).unwrap_or(true).into(),
        boolean(spec, &["podInfoOnMount"]).unwrap_or(false).into(),
        boolean(spec, &["storageCapacity"]).unwrap_or(false).into(),
        token_requests.into(),
        boolean(spec, &["requiresRepublish"])
            .unwrap_or(false)
            .into(),
        modes.into(),
        created(o, now),
    ]
}

pub(super) fn csi_storage_capacity(o: &Value, _now: DateTime<Utc>) -> Vec<Value> {
    let capacity = match get(o, &["capacity"]) {
        None | Some(Value::Null) => "<unset>".to_string(),
        v => quantity(v),
    };
    vec![
        name(o).into(),
        st(o, &["storageClassName"]).into(),
        capacity.into(),
    ]
}

pub(super) fn priority_class(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        int(o, &["value"]).into(),
        boolean(o, &["globalDefault"]).unwrap_or(false).into(),
        created(o, now),
        // Defaulted by scheduling.k8s.io/v1.
        ost(o, &["preemptionPolicy"])
            .unwrap_or("PreemptLowerPriority")
            .into(),
    ]
}

pub(super) fn runtime_class(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![name(o).into(), st(o, &["handler"]).into(), created(o, now)]
}
