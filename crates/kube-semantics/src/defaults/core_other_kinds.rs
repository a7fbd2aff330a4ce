//! `SetDefaults_*` of the other core/v1 kinds: ReplicationController,
//! PersistentVolumeClaim, PersistentVolume, LimitRange and Node.
//!
//! This module must NOT default pod specs itself: it calls `pods` for them.

use super::*;

pub(super) fn replication_controller(root: &mut Obj) {
    let Some(spec) = struct_field(root, "spec") else {
        return;
    };
    let labels = ptr_field(spec, "template").and_then(|t| template_labels(t));
    if let Some(labels) = &labels
        && is_empty_collection(spec.get("selector"))
    {
        spec.insert("selector".into(), Value::Object(labels.clone()));
    }
    set_if_unset(spec, "replicas", json!(1));
    if let Some(t) = ptr_field(spec, "template") {
        pod_template_spec(t);
    }
    if let Some(labels) = &labels {
        copy_labels_if_empty(root, labels);
    }
}

pub(super) fn pvc_spec(spec: &mut Obj) {
    set_if_unset(spec, "volumeMode", json!("Filesystem"));
    struct_field(spec, "resources");
}

pub(super) fn pvc(root: &mut Obj) {
    if let Some(spec) = struct_field(root, "spec") {
        pvc_spec(spec);
    }
    if let Some(status) = struct_field(root, "status") {
        set_if_empty_str(status, "phase", "Pending");
    }
}

pub(super) fn persistent_volume(root: &mut Obj) {
    if let Some(spec) = struct_field(root, "spec") {
        set_if_empty_str(spec, "persistentVolumeReclaimPolicy", "Retain");
        set_if_unset(spec, "volumeMode", json!("Filesystem"));
        if let Some(h) = ptr_field(spec, "hostPath") {
            set_if_unset(h, "type", json!(""));
        }
        legacy_volume_sources(spec);
    }
    if let Some(status) = struct_field(root, "status") {
        set_if_empty_str(status, "phase", "Pending");
    }
}

/// SetDefaults_LimitRangeItem: for containers, the default limit falls back
/// to the max, and the default request to the default limit, then the min.
pub(super) fn limit_range_item(item: &mut Obj) {
    if item.get("type").and_then(Value::as_str) != Some("Container") {
        return;
    }
    let map_of = |item: &Obj, key: &str| match item.get(key) {
        None | Some(Value::Null) => Some(Map::new()),
        Some(Value::Object(o)) => Some(o.clone()),
        Some(_) => None,
    };
    let (Some(max), Some(min), Some(mut default), Some(mut request)) = (
        map_of(item, "max"),
        map_of(item, "min"),
        map_of(item, "default"),
        map_of(item, "defaultRequest"),
    ) else {
        return;
    };
    for (k, v) in max {
        default.entry(k).or_insert(v);
    }
    for (k, v) in &default {
        request.entry(k.clone()).or_insert_with(|| v.clone());
    }
    for (k, v) in min {
        request.entry(k).or_insert(v);
    }
    // Empty maps marshal as nothing.
    for (key, map) in [("default", default), ("defaultRequest", request)] {
        if !map.is_empty() || !is_unset(item.get(key)) {
            item.insert(key.into(), Value::Object(map));
        }
    }
}

/// Node status: allocatable falls back to capacity, and the struct-typed
/// `daemonEndpoints` and `nodeInfo` (strings without `omitempty`) are
/// always written.
pub(super) fn node(root: &mut Obj) {
    let Some(status) = struct_field(root, "status") else {
        return;
    };
    if is_unset(status.get("allocatable"))
        && let Some(Value::Object(cap)) = status.get("capacity")
        && !cap.is_empty()
    {
        let cap = cap.clone();
        status.insert("allocatable".into(), Value::Object(cap));
    }
    if let Some(ep) =
        struct_field(status, "daemonEndpoints").and_then(|d| struct_field(d, "kubeletEndpoint"))
    {
        // DaemonEndpoint's JSON name really is capitalised.
        set_if_unset(ep, "Port", json!(0));
    }
    if let Some(info) = struct_field(status, "nodeInfo") {
        for key in [
            "machineID",
            "systemUUID",
            "bootID",
            "kernelVersion",
            "osImage",
            "containerRuntimeVersion",
            "kubeletVersion",
            "kubeProxyVersion",
            "operatingSystem",
            "architecture",
        ] {
            set_if_unset(info, key, json!(""));
        }
    }
}
