//! `SetDefaults_*` of core/v1 pods and pod templates: pod specs, containers,
//! probes and volumes.
//!
//! This module must NOT default the workloads around a template (see
//! `workloads`), and must NOT do admission (see `admission`).

use super::*;

pub(super) fn pod(root: &mut Obj) {
    let Some(spec) = struct_field(root, "spec") else {
        return;
    };
    // SetDefaults_Pod: only the Pod itself, not PodSpecs in templates
    // (adding fields to every template would roll out every workload on
    // upgrade).
    for key in ["containers", "initContainers"] {
        each_obj(spec, key, requests_from_limits);
    }
    set_if_unset(spec, "enableServiceLinks", json!(true));
    if spec.get("hostNetwork") == Some(&Value::Bool(true)) {
        for key in ["containers", "initContainers"] {
            each_obj(spec, key, |c| {
                each_obj(c, "ports", |p| {
                    // A zero port would be copied as zero, which marshals
                    // as nothing, so only non-zero ports are copied.
                    let port = p.get("containerPort").cloned();
                    if let Some(port @ Value::Number(_)) = port
                        && port.as_i64() != Some(0)
                    {
                        set_if_zero_int_with(p, "hostPort", port);
                    }
                })
            });
        }
    }
    pod_spec(spec);
}

pub(super) fn set_if_zero_int_with(m: &mut Obj, key: &str, val: Value) {
    match m.get(key) {
        None | Some(Value::Null) => {}
        Some(Value::Number(n)) if n.as_i64() == Some(0) => {}
        _ => return,
    }
    m.insert(key.to_string(), val);
}

/// Limits without a request make the request equal to the limit.
pub(super) fn requests_from_limits(c: &mut Obj) {
    let Some(res) = ptr_field(c, "resources") else {
        return;
    };
    let Some(limits) = res.get("limits").and_then(Value::as_object).cloned() else {
        return;
    };
    let mut requests = match res.get("requests") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(r)) => r.clone(),
        Some(_) => return,
    };
    let had = !is_unset(res.get("requests"));
    for (k, v) in limits {
        requests.entry(k).or_insert(v);
    }
    // An empty map marshals as nothing (`omitempty`), so do not add one.
    if had || !requests.is_empty() {
        res.insert("requests".into(), Value::Object(requests));
    }
}

pub(super) fn pod_template_spec(t: &mut Obj) {
    embedded_meta(t);
    if let Some(spec) = struct_field(t, "spec") {
        pod_spec(spec);
    }
}

/// SetDefaults_PodSpec plus the generated walk over volumes and containers;
/// used for Pods and for every pod template.
pub(super) fn pod_spec(spec: &mut Obj) {
    set_if_empty_str(spec, "dnsPolicy", "ClusterFirst");
    set_if_empty_str(spec, "restartPolicy", "Always");
    set_if_unset(spec, "securityContext", json!({}));
    set_if_unset(spec, "terminationGracePeriodSeconds", json!(30));
    set_if_empty_str(spec, "schedulerName", "default-scheduler");
    service_account_alias(spec);
    each_obj(spec, "volumes", volume);
    for key in ["initContainers", "containers", "ephemeralContainers"] {
        each_obj(spec, key, container);
    }
}

/// The v1 conversion keeps the deprecated `serviceAccount` as an alias of
/// `serviceAccountName`: the new field wins when both are given, and the
/// answer always carries both.
pub(super) fn service_account_alias(spec: &mut Obj) {
    let (Some(name), Some(old)) = (
        opt_str(spec.get("serviceAccountName")),
        opt_str(spec.get("serviceAccount")),
    ) else {
        return;
    };
    let effective = if name.is_empty() { old } else { name };
    if effective.is_empty() {
        return;
    }
    let effective = effective.to_string();
    spec.insert("serviceAccountName".into(), json!(effective));
    spec.insert("serviceAccount".into(), json!(effective));
}

/// A string field read as Go would: missing and null are `""`; any other
/// type is `None` (a body the server would refuse).
pub(super) fn opt_str(v: Option<&Value>) -> Option<&str> {
    match v {
        None | Some(Value::Null) => Some(""),
        Some(Value::String(s)) => Some(s),
        Some(_) => None,
    }
}

pub(super) fn container(c: &mut Obj) {
    if matches!(opt_str(c.get("imagePullPolicy")), Some("")) {
        let policy = if image_tag(str_field(c, "image")).as_deref() == Some("latest") {
            "Always"
        } else {
            "IfNotPresent"
        };
        c.insert("imagePullPolicy".into(), json!(policy));
    }
    set_if_empty_str(c, "terminationMessagePath", "/dev/termination-log");
    set_if_empty_str(c, "terminationMessagePolicy", "File");
    each_obj(c, "ports", |p| set_if_empty_str(p, "protocol", "TCP"));
    each_obj(c, "env", |e| {
        if let Some(fr) = ptr_field(e, "valueFrom").and_then(|v| ptr_field(v, "fieldRef")) {
            set_if_empty_str(fr, "apiVersion", "v1");
        }
    });
    struct_field(c, "resources");
    for key in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = ptr_field(c, key) {
            probe(p);
        }
    }
    if let Some(lc) = ptr_field(c, "lifecycle") {
        for key in ["postStart", "preStop"] {
            if let Some(get) = ptr_field(lc, key).and_then(|h| ptr_field(h, "httpGet")) {
                http_get(get);
            }
        }
    }
}

pub(super) fn probe(p: &mut Obj) {
    set_if_zero_int(p, "timeoutSeconds", 1);
    set_if_zero_int(p, "periodSeconds", 10);
    set_if_zero_int(p, "successThreshold", 1);
    set_if_zero_int(p, "failureThreshold", 3);
    if let Some(get) = ptr_field(p, "httpGet") {
        http_get(get);
    }
    if let Some(grpc) = ptr_field(p, "grpc") {
        set_if_unset(grpc, "service", json!(""));
    }
}

pub(super) fn http_get(g: &mut Obj) {
    set_if_empty_str(g, "path", "/");
    set_if_empty_str(g, "scheme", "HTTP");
}

/// Every member of `VolumeSource`; a volume naming none of them is an
/// `emptyDir`.
pub(super) const VOLUME_SOURCES: [&str; 30] = [
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

/// The mode of secret, config map, downward API and projected volumes:
/// 0644, which JSON shows in decimal.
pub(super) const DEFAULT_FILE_MODE: i64 = 0o644;

pub(super) fn volume(v: &mut Obj) {
    if VOLUME_SOURCES.iter().all(|k| is_unset(v.get(*k))) {
        v.insert("emptyDir".into(), json!({}));
    }
    if let Some(h) = ptr_field(v, "hostPath") {
        set_if_unset(h, "type", json!(""));
    }
    for key in ["secret", "configMap"] {
        if let Some(s) = ptr_field(v, key) {
            set_if_unset(s, "defaultMode", json!(DEFAULT_FILE_MODE));
        }
    }
    if let Some(d) = ptr_field(v, "downwardAPI") {
        set_if_unset(d, "defaultMode", json!(DEFAULT_FILE_MODE));
        downward_items(d);
    }
    if let Some(p) = ptr_field(v, "projected") {
        set_if_unset(p, "defaultMode", json!(DEFAULT_FILE_MODE));
        each_obj(p, "sources", |s| {
            if let Some(d) = ptr_field(s, "downwardAPI") {
                downward_items(d);
            }
            if let Some(t) = ptr_field(s, "serviceAccountToken") {
                set_if_unset(t, "expirationSeconds", json!(3600));
            }
        });
    }
    legacy_volume_sources(v);
    if let Some(tmpl) = ptr_field(v, "ephemeral").and_then(|e| ptr_field(e, "volumeClaimTemplate"))
    {
        embedded_meta(tmpl);
        if let Some(spec) = struct_field(tmpl, "spec") {
            pvc_spec(spec);
        }
    }
}

pub(super) fn downward_items(d: &mut Obj) {
    each_obj(d, "items", |i| {
        if let Some(fr) = ptr_field(i, "fieldRef") {
            set_if_empty_str(fr, "apiVersion", "v1");
        }
    });
}

/// The in-tree volume plugins' defaults; the same for pod volumes and
/// PersistentVolume sources.
pub(super) fn legacy_volume_sources(v: &mut Obj) {
    if let Some(s) = ptr_field(v, "iscsi") {
        set_if_empty_str(s, "iscsiInterface", "default");
    }
    if let Some(s) = ptr_field(v, "rbd") {
        set_if_empty_str(s, "pool", "rbd");
        set_if_empty_str(s, "user", "admin");
        set_if_empty_str(s, "keyring", "/etc/ceph/keyring");
    }
    if let Some(s) = ptr_field(v, "azureDisk") {
        set_if_unset(s, "cachingMode", json!("ReadWrite"));
        set_if_unset(s, "fsType", json!("ext4"));
        set_if_unset(s, "readOnly", json!(false));
        set_if_unset(s, "kind", json!("Shared"));
    }
    if let Some(s) = ptr_field(v, "scaleIO") {
        set_if_empty_str(s, "storageMode", "ThinProvisioned");
        set_if_empty_str(s, "fsType", "xfs");
    }
}
