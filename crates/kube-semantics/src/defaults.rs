//! Defaulting of built-in kinds, and the status a create leaves, as the
//! Kubernetes v1.33 API server does them.
//!
//! ```text
//! POST/PUT body -> apply_defaults            (SetObjectDefaults_<Kind>: hand-written SetDefaults_*
//!                                             plus the generated walk over nested types)
//! POST Job      -> job_generated_selector    (the Job strategy's selector generation)
//! POST          -> initial_status            (the strategy's PrepareForCreate status reset)
//! POST Pod      -> admit_pod_create          (the stateless part of the default admission chain)
//! POST/PUT DaemonSet -> daemon_set_template_generation (its template-generation annotation)
//! ```
//!
//! Kinds defaulted by [`apply_defaults`]:
//!
//! ```text
//! core/v1                    Pod, PodTemplate, ReplicationController, PersistentVolumeClaim,
//!                            PersistentVolume, Endpoints, LimitRange, Secret, Node
//! apps/v1                    Deployment, StatefulSet, DaemonSet, ReplicaSet
//! batch/v1                   Job, CronJob
//! autoscaling/v1, v2         HorizontalPodAutoscaler
//! networking.k8s.io/v1       NetworkPolicy, IngressClass
//! discovery.k8s.io/v1        EndpointSlice
//! rbac.authorization.k8s.io  RoleBinding, ClusterRoleBinding
//! scheduling.k8s.io/v1       PriorityClass
//! storage.k8s.io/v1          StorageClass, CSIDriver
//! admissionregistration/v1   Validating/MutatingWebhookConfiguration,
//!                            ValidatingAdmissionPolicy(Binding)
//! flowcontrol.apiserver/v1   FlowSchema, PriorityLevelConfiguration
//! ```
//!
//! Every other built-in kind of v1.33 has no defaults beyond rounding
//! resource quantities (ResourceQuota, ConfigMap, ServiceAccount, Ingress,
//! PodDisruptionBudget, ControllerRevision, Role, ClusterRole, ...).
//!
//! The API server defaults every object it decodes, so defaulting also runs
//! when an object is read back from storage; every function here is
//! therefore idempotent. The real server works on typed Go structs, which
//! leaves marks in the JSON it returns even where nothing is "defaulted":
//! a non-pointer struct field is always written (`resources: {}` on every
//! container, `podSelector: {}` on a NetworkPolicy), an embedded
//! `ObjectMeta` in a template is written as `{"creationTimestamp": null}`,
//! and an int without `omitempty` is written as `0`. Those marks are
//! reproduced for the fields of the kinds covered here, because clients
//! compare what they sent with what they got back.
//!
//! Only gates that are on by default in v1.33 are modelled (alpha features
//! such as pod-level resources and beta-off ones such as image volumes are
//! left out). Wrong JSON types are skipped, never corrected: the real server
//! would have refused such a body while decoding, which is the caller's
//! concern.
//!
//! This module must NOT validate (a defaulted object may still be invalid),
//! must NOT canonicalize resource quantities (they stay as written; the
//! server's `RoundUp` to milli-units and canonical formatting belong with
//! the quantity code), and must NOT touch `metadata` beyond the labels that
//! defaulting copies and the DaemonSet annotation (`generation`,
//! `creationTimestamp` and the like are the store's). Service and Namespace
//! defaulting live in the sandbox and are deliberately not handled here.
//!
//! Read from the upstream sources: the core, apps, batch, autoscaling/v2,
//! networking, rbac, discovery, storage, admissionregistration (webhooks
//! from v1, admission policies from v1beta1, which v1 mirrors) and
//! flowcontrol defaulters. Taken from secondary sources or inferred, and
//! marked where used: CSIDriver's `seLinuxMount`, some status fields
//! without `omitempty`, and the v1 HPA's CPU target.

use serde_json::{Map, Value, json};

type Obj = Map<String, Value>;

/// Applies the API server's defaults for `group`/`version`/`kind` to `obj`
/// in place (`group` is `""` for the core group).
///
/// Kinds and versions not listed in the module documentation are left
/// untouched, as are objects that are not JSON objects. Applying it twice
/// gives the same result as applying it once.
pub fn apply_defaults(group: &str, version: &str, kind: &str, obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    match (group, version, kind) {
        ("", "v1", "Pod") => pod(root),
        ("", "v1", "PodTemplate") => {
            if let Some(t) = struct_field(root, "template") {
                pod_template_spec(t);
            }
        }
        ("", "v1", "ReplicationController") => replication_controller(root),
        ("", "v1", "PersistentVolumeClaim") => pvc(root),
        ("", "v1", "PersistentVolume") => persistent_volume(root),
        ("", "v1", "Endpoints") => each_obj(root, "subsets", |s| {
            each_obj(s, "ports", |p| set_if_empty_str(p, "protocol", "TCP"));
        }),
        ("", "v1", "LimitRange") => {
            if let Some(spec) = struct_field(root, "spec") {
                each_obj(spec, "limits", limit_range_item);
            }
        }
        ("", "v1", "Secret") => set_if_empty_str(root, "type", "Opaque"),
        ("", "v1", "Node") => node(root),
        ("apps", "v1", "Deployment") => deployment(root),
        ("apps", "v1", "StatefulSet") => stateful_set(root),
        ("apps", "v1", "DaemonSet") => daemon_set(root),
        ("apps", "v1", "ReplicaSet") => {
            if let Some(spec) = struct_field(root, "spec") {
                set_if_unset(spec, "replicas", json!(1));
                if let Some(t) = struct_field(spec, "template") {
                    pod_template_spec(t);
                }
            }
        }
        ("batch", "v1", "Job") => job(root),
        ("batch", "v1", "CronJob") => cron_job(root),
        ("autoscaling", "v2", "HorizontalPodAutoscaler") => hpa_v2(root),
        ("autoscaling", "v1", "HorizontalPodAutoscaler") => {
            if let Some(spec) = struct_field(root, "spec") {
                set_if_unset(spec, "minReplicas", json!(1));
                // v1 itself defaults nothing else, but the object is stored
                // as autoscaling/v2, whose defaulting adds the 80% CPU
                // metric when it is read back, and that metric converts to
                // this field. Inferred from the conversion and storage
                // version, not confirmed against a running server.
                set_if_unset(spec, "targetCPUUtilizationPercentage", json!(80));
            }
        }
        ("networking.k8s.io", "v1", "NetworkPolicy") => network_policy(root),
        ("networking.k8s.io", "v1", "IngressClass") => {
            if let Some(params) =
                struct_field(root, "spec").and_then(|s| ptr_field(s, "parameters"))
            {
                set_if_unset(params, "scope", json!("Cluster"));
            }
        }
        ("discovery.k8s.io", "v1", "EndpointSlice") => endpoint_slice(root),
        ("rbac.authorization.k8s.io", "v1", "RoleBinding" | "ClusterRoleBinding") => {
            role_binding(root)
        }
        ("scheduling.k8s.io", "v1", "PriorityClass") => {
            set_if_unset(root, "preemptionPolicy", json!("PreemptLowerPriority"));
            set_if_unset(root, "value", json!(0));
        }
        ("storage.k8s.io", "v1", "StorageClass") => {
            set_if_unset(root, "reclaimPolicy", json!("Delete"));
            set_if_unset(root, "volumeBindingMode", json!("Immediate"));
        }
        ("storage.k8s.io", "v1", "CSIDriver") => csi_driver(root),
        // v1 requires sideEffects and admissionReviewVersions, so unlike
        // v1beta1 it defaults neither, and its timeout is 10 s, not 30.
        ("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration") => {
            each_obj(root, "webhooks", |w| webhook(w, false));
        }
        ("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration") => {
            each_obj(root, "webhooks", |w| webhook(w, true));
        }
        ("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy") => {
            if let Some(spec) = struct_field(root, "spec") {
                set_if_unset(spec, "failurePolicy", json!("Fail"));
                if let Some(m) = ptr_field(spec, "matchConstraints") {
                    match_resources(m);
                }
            }
        }
        ("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding") => {
            if let Some(m) = struct_field(root, "spec").and_then(|s| ptr_field(s, "matchResources"))
            {
                match_resources(m);
            }
        }
        ("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema") => {
            if let Some(spec) = struct_field(root, "spec") {
                set_if_zero_int(spec, "matchingPrecedence", 1000);
            }
        }
        ("flowcontrol.apiserver.k8s.io", "v1", "PriorityLevelConfiguration") => {
            priority_level(root)
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------
// Field helpers. Go's zero values decide what counts as "unset": a missing
// key and JSON null are nil for pointers and zero for values; "" and 0 are
// zero only for non-pointer fields.

fn is_unset(v: Option<&Value>) -> bool {
    matches!(v, None | Some(Value::Null))
}

/// A pointer field (or a map/slice tested against nil).
fn set_if_unset(m: &mut Obj, key: &str, val: Value) {
    if is_unset(m.get(key)) {
        m.insert(key.to_string(), val);
    }
}

/// A non-pointer string field: `""` is unset too.
fn set_if_empty_str(m: &mut Obj, key: &str, val: &str) {
    match m.get(key) {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s.is_empty() => {}
        _ => return,
    }
    m.insert(key.to_string(), Value::from(val));
}

/// A non-pointer integer field: `0` is unset too.
fn set_if_zero_int(m: &mut Obj, key: &str, val: i64) {
    match m.get(key) {
        None | Some(Value::Null) => {}
        Some(Value::Number(n)) if n.as_i64() == Some(0) => {}
        _ => return,
    }
    m.insert(key.to_string(), Value::from(val));
}

/// A non-pointer struct field: Go always has one, so a missing one is `{}`.
/// `None` when the field holds another JSON type.
fn struct_field<'a>(m: &'a mut Obj, key: &str) -> Option<&'a mut Obj> {
    if is_unset(m.get(key)) {
        m.insert(key.to_string(), Value::Object(Map::new()));
    }
    m.get_mut(key).and_then(Value::as_object_mut)
}

/// A pointer to a struct: defaulted only when the client sent one.
fn ptr_field<'a>(m: &'a mut Obj, key: &str) -> Option<&'a mut Obj> {
    m.get_mut(key).and_then(Value::as_object_mut)
}

fn each_obj(m: &mut Obj, key: &str, mut f: impl FnMut(&mut Obj)) {
    if let Some(Value::Array(items)) = m.get_mut(key) {
        for item in items.iter_mut().filter_map(Value::as_object_mut) {
            f(item);
        }
    }
}

/// Go's `len(x) == 0` for a map or slice.
fn is_empty_collection(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Object(o)) => o.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    }
}

fn str_field<'a>(m: &'a Obj, key: &str) -> &'a str {
    m.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The labels of a template's metadata, if they are a (possibly empty) map.
fn template_labels(template: &Obj) -> Option<Obj> {
    template
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .cloned()
}

/// Copies `labels` into the object's own labels when those are empty, as
/// the ReplicationController and Job defaulters do.
fn copy_labels_if_empty(root: &mut Obj, labels: &Obj) {
    if let Some(meta) = struct_field(root, "metadata")
        && is_empty_collection(meta.get("labels"))
    {
        meta.insert("labels".into(), Value::Object(labels.clone()));
    }
}

/// An embedded `ObjectMeta` (pod, job and claim templates): Go writes its
/// zero `creationTimestamp` as `null` because the field is a struct. (v1.34
/// stops writing it, kubernetes/kubernetes#130989; v1.33 still does.)
fn embedded_meta(m: &mut Obj) {
    if let Some(meta) = struct_field(m, "metadata")
        && !meta.contains_key("creationTimestamp")
    {
        meta.insert("creationTimestamp".into(), Value::Null);
    }
}

// ---------------------------------------------------------------------------
// core/v1: pods and pod templates

fn pod(root: &mut Obj) {
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

fn set_if_zero_int_with(m: &mut Obj, key: &str, val: Value) {
    match m.get(key) {
        None | Some(Value::Null) => {}
        Some(Value::Number(n)) if n.as_i64() == Some(0) => {}
        _ => return,
    }
    m.insert(key.to_string(), val);
}

/// Limits without a request make the request equal to the limit.
fn requests_from_limits(c: &mut Obj) {
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

fn pod_template_spec(t: &mut Obj) {
    embedded_meta(t);
    if let Some(spec) = struct_field(t, "spec") {
        pod_spec(spec);
    }
}

/// SetDefaults_PodSpec plus the generated walk over volumes and containers;
/// used for Pods and for every pod template.
fn pod_spec(spec: &mut Obj) {
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
fn service_account_alias(spec: &mut Obj) {
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
fn opt_str(v: Option<&Value>) -> Option<&str> {
    match v {
        None | Some(Value::Null) => Some(""),
        Some(Value::String(s)) => Some(s),
        Some(_) => None,
    }
}

fn container(c: &mut Obj) {
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

fn probe(p: &mut Obj) {
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

fn http_get(g: &mut Obj) {
    set_if_empty_str(g, "path", "/");
    set_if_empty_str(g, "scheme", "HTTP");
}

/// Every member of `VolumeSource`; a volume naming none of them is an
/// `emptyDir`.
const VOLUME_SOURCES: [&str; 30] = [
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
const DEFAULT_FILE_MODE: i64 = 0o644;

fn volume(v: &mut Obj) {
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

fn downward_items(d: &mut Obj) {
    each_obj(d, "items", |i| {
        if let Some(fr) = ptr_field(i, "fieldRef") {
            set_if_empty_str(fr, "apiVersion", "v1");
        }
    });
}

/// The in-tree volume plugins' defaults; the same for pod volumes and
/// PersistentVolume sources.
fn legacy_volume_sources(v: &mut Obj) {
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

// ---------------------------------------------------------------------------
// core/v1: other kinds

fn replication_controller(root: &mut Obj) {
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

fn pvc_spec(spec: &mut Obj) {
    set_if_unset(spec, "volumeMode", json!("Filesystem"));
    struct_field(spec, "resources");
}

fn pvc(root: &mut Obj) {
    if let Some(spec) = struct_field(root, "spec") {
        pvc_spec(spec);
    }
    if let Some(status) = struct_field(root, "status") {
        set_if_empty_str(status, "phase", "Pending");
    }
}

fn persistent_volume(root: &mut Obj) {
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
fn limit_range_item(item: &mut Obj) {
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
fn node(root: &mut Obj) {
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

// ---------------------------------------------------------------------------
// apps/v1

fn deployment(root: &mut Obj) {
    let Some(spec) = struct_field(root, "spec") else {
        return;
    };
    set_if_unset(spec, "replicas", json!(1));
    if let Some(strategy) = struct_field(spec, "strategy") {
        set_if_empty_str(strategy, "type", "RollingUpdate");
        if str_field(strategy, "type") == "RollingUpdate"
            && let Some(ru) = struct_field(strategy, "rollingUpdate")
        {
            set_if_unset(ru, "maxUnavailable", json!("25%"));
            set_if_unset(ru, "maxSurge", json!("25%"));
        }
    }
    set_if_unset(spec, "revisionHistoryLimit", json!(10));
    set_if_unset(spec, "progressDeadlineSeconds", json!(600));
    if let Some(t) = struct_field(spec, "template") {
        pod_template_spec(t);
    }
}

fn daemon_set(root: &mut Obj) {
    let Some(spec) = struct_field(root, "spec") else {
        return;
    };
    if let Some(strategy) = struct_field(spec, "updateStrategy") {
        set_if_empty_str(strategy, "type", "RollingUpdate");
        if str_field(strategy, "type") == "RollingUpdate"
            && let Some(ru) = struct_field(strategy, "rollingUpdate")
        {
            set_if_unset(ru, "maxUnavailable", json!(1));
            set_if_unset(ru, "maxSurge", json!(0));
        }
    }
    set_if_unset(spec, "revisionHistoryLimit", json!(10));
    if let Some(t) = struct_field(spec, "template") {
        pod_template_spec(t);
    }
}

fn stateful_set(root: &mut Obj) {
    let Some(spec) = struct_field(root, "spec") else {
        return;
    };
    set_if_empty_str(spec, "podManagementPolicy", "OrderedReady");
    if let Some(strategy) = struct_field(spec, "updateStrategy") {
        // Only a strategy without a type gets an empty rollingUpdate; an
        // explicit RollingUpdate without one stays without one.
        if matches!(opt_str(strategy.get("type")), Some("")) {
            strategy.insert("type".into(), json!("RollingUpdate"));
            set_if_unset(strategy, "rollingUpdate", json!({}));
        }
        if str_field(strategy, "type") == "RollingUpdate"
            && let Some(ru) = ptr_field(strategy, "rollingUpdate")
        {
            set_if_unset(ru, "partition", json!(0));
        }
    }
    set_if_unset(spec, "persistentVolumeClaimRetentionPolicy", json!({}));
    if let Some(p) = ptr_field(spec, "persistentVolumeClaimRetentionPolicy") {
        set_if_empty_str(p, "whenDeleted", "Retain");
        set_if_empty_str(p, "whenScaled", "Retain");
    }
    set_if_unset(spec, "replicas", json!(1));
    set_if_unset(spec, "revisionHistoryLimit", json!(10));
    if let Some(t) = struct_field(spec, "template") {
        pod_template_spec(t);
    }
    each_obj(spec, "volumeClaimTemplates", |claim| {
        embedded_meta(claim);
        pvc(claim);
    });
}

/// The annotation through which apps/v1 carries a DaemonSet's template
/// generation (a field only the internal type still has).
pub const DAEMON_SET_TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

/// The DaemonSet strategy's template generation, as apps/v1 shows it in the
/// `deprecated.daemonset.template.generation` annotation: `"1"` on create
/// (unless the client sent a positive one), and on update the old value,
/// plus one when `spec.template` changed. Both objects should already be
/// defaulted, since the server compares defaulted templates. A value that
/// is not an integer is left alone (the server would refuse the body).
pub fn daemon_set_template_generation(old: Option<&Value>, obj: &mut Value) {
    let generation = |v: &Value| -> Option<i64> {
        match v
            .get("metadata")
            .and_then(|m| m.get("annotations"))
            .and_then(|a| a.get(DAEMON_SET_TEMPLATE_GENERATION))
        {
            None | Some(Value::Null) => Some(0),
            Some(Value::String(s)) => s.parse().ok(),
            Some(_) => None,
        }
    };
    let template = |v: &Value| v.get("spec").and_then(|s| s.get("template")).cloned();
    let Some(current) = generation(obj) else {
        return;
    };
    let next = match old {
        None => current.max(1),
        Some(old) => {
            let Some(previous) = generation(old) else {
                return;
            };
            if template(old) == template(obj) {
                previous
            } else {
                previous.saturating_add(1)
            }
        }
    };
    if let Some(annotations) = obj
        .as_object_mut()
        .and_then(|root| struct_field(root, "metadata"))
        .and_then(|meta| struct_field(meta, "annotations"))
    {
        annotations.insert(
            DAEMON_SET_TEMPLATE_GENERATION.into(),
            json!(next.to_string()),
        );
    }
}

// ---------------------------------------------------------------------------
// batch/v1

/// `math.MaxInt32`: the backoff limit of a Job that limits per index.
const MAX_INT32: i64 = 2_147_483_647;

fn job(root: &mut Obj) {
    let Some(spec) = struct_field(root, "spec") else {
        return;
    };
    if is_unset(spec.get("completions")) && is_unset(spec.get("parallelism")) {
        spec.insert("completions".into(), json!(1));
        spec.insert("parallelism".into(), json!(1));
    }
    set_if_unset(spec, "parallelism", json!(1));
    let backoff = if is_unset(spec.get("backoffLimitPerIndex")) {
        6
    } else {
        MAX_INT32
    };
    set_if_unset(spec, "backoffLimit", json!(backoff));
    set_if_unset(spec, "completionMode", json!("NonIndexed"));
    set_if_unset(spec, "suspend", json!(false));
    let has_failure_policy = !is_unset(spec.get("podFailurePolicy"));
    if let Some(pfp) = ptr_field(spec, "podFailurePolicy") {
        each_obj(pfp, "rules", |rule| {
            each_obj(rule, "onPodConditions", |c| {
                set_if_empty_str(c, "status", "True")
            });
        });
    }
    let replacement = if has_failure_policy {
        "Failed"
    } else {
        "TerminatingOrFailed"
    };
    set_if_unset(spec, "podReplacementPolicy", json!(replacement));
    set_if_unset(spec, "manualSelector", json!(false));
    let labels = struct_field(spec, "template").and_then(|t| {
        pod_template_spec(t);
        template_labels(t)
    });
    if let Some(labels) = labels {
        copy_labels_if_empty(root, &labels);
    }
}

fn cron_job(root: &mut Obj) {
    let Some(spec) = struct_field(root, "spec") else {
        return;
    };
    set_if_empty_str(spec, "concurrencyPolicy", "Allow");
    set_if_unset(spec, "suspend", json!(false));
    set_if_unset(spec, "successfulJobsHistoryLimit", json!(3));
    set_if_unset(spec, "failedJobsHistoryLimit", json!(1));
    // The job template only gets the pod template's defaults: the Job
    // defaulter takes a whole Job, and a JobTemplateSpec is not one.
    if let Some(jt) = struct_field(spec, "jobTemplate") {
        embedded_meta(jt);
        if let Some(t) = struct_field(jt, "spec").and_then(|s| struct_field(s, "template")) {
            pod_template_spec(t);
        }
    }
}

/// The Job label holding the Job's name (old and new spelling).
const JOB_NAME_LABELS: [&str; 2] = ["job-name", "batch.kubernetes.io/job-name"];
/// The Job label holding the Job's uid (old and new spelling).
const CONTROLLER_UID_LABELS: [&str; 2] = ["controller-uid", "batch.kubernetes.io/controller-uid"];

/// The Job strategy's selector generation on create, for a Job whose
/// `spec.manualSelector` is not `true`: the pod template gets the
/// `job-name`, `batch.kubernetes.io/job-name`, `controller-uid` and
/// `batch.kubernetes.io/controller-uid` labels (each unless already set),
/// and the selector matches `batch.kubernetes.io/controller-uid: <uid>`.
///
/// On the real server, when the Job had no labels of its own, its labels
/// end up equal to the final template labels (defaulting copies the
/// template's label map, sharing it, or copies it again when the object is
/// read back). Called before [`apply_defaults`] this is exact; called after,
/// Job labels equal to the template's are taken to be that copy.
pub fn job_generated_selector(obj: &mut Value, uid: &str) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let name = root
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let Some(spec) = struct_field(root, "spec") else {
        return;
    };
    if spec.get("manualSelector") == Some(&Value::Bool(true)) {
        return;
    }
    let Some(labels) = struct_field(spec, "template")
        .and_then(|t| struct_field(t, "metadata"))
        .and_then(|m| struct_field(m, "labels"))
    else {
        return;
    };
    let before = labels.clone();
    for key in JOB_NAME_LABELS {
        labels.entry(key).or_insert_with(|| json!(name));
    }
    for key in CONTROLLER_UID_LABELS {
        labels.entry(key).or_insert_with(|| json!(uid));
    }
    let after = labels.clone();
    if let Some(match_labels) =
        struct_field(spec, "selector").and_then(|s| struct_field(s, "matchLabels"))
    {
        match_labels
            .entry(CONTROLLER_UID_LABELS[1])
            .or_insert_with(|| json!(uid));
    }
    if let Some(meta) = struct_field(root, "metadata") {
        let shared = match meta.get("labels") {
            None | Some(Value::Null) => true,
            Some(Value::Object(l)) => l.is_empty() || *l == before,
            Some(_) => false,
        };
        if shared {
            meta.insert("labels".into(), Value::Object(after));
        }
    }
}

// ---------------------------------------------------------------------------
// autoscaling/v2

fn hpa_v2(root: &mut Obj) {
    let Some(spec) = struct_field(root, "spec") else {
        return;
    };
    set_if_unset(spec, "minReplicas", json!(1));
    if is_empty_collection(spec.get("metrics")) {
        spec.insert(
            "metrics".into(),
            json!([{
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80}
                }
            }]),
        );
    }
    // Behaviour is filled in only when the client sent one.
    if let Some(behavior) = ptr_field(spec, "behavior") {
        let up = json!({
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15}
            ]
        });
        // No scale-down window: the controller's command-line flag decides.
        let down = json!({
            "selectPolicy": "Max",
            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]
        });
        scaling_rules(behavior, "scaleUp", up);
        scaling_rules(behavior, "scaleDown", down);
    }
}

fn scaling_rules(behavior: &mut Obj, key: &str, default: Value) {
    match behavior.get_mut(key) {
        None | Some(Value::Null) => {
            behavior.insert(key.into(), default);
        }
        Some(Value::Object(rules)) => {
            if let Value::Object(d) = default {
                for (k, v) in d {
                    set_if_unset(rules, &k, v);
                }
            }
        }
        Some(_) => {}
    }
}

// ---------------------------------------------------------------------------
// networking, discovery, rbac, storage, admission, flow control

fn network_policy(root: &mut Obj) {
    let Some(spec) = struct_field(root, "spec") else {
        return;
    };
    struct_field(spec, "podSelector");
    if is_empty_collection(spec.get("policyTypes")) {
        let mut types = vec![json!("Ingress")];
        if !is_empty_collection(spec.get("egress")) {
            types.push(json!("Egress"));
        }
        spec.insert("policyTypes".into(), Value::Array(types));
    }
    for key in ["ingress", "egress"] {
        each_obj(spec, key, |rule| {
            each_obj(rule, "ports", |p| set_if_unset(p, "protocol", json!("TCP")));
        });
    }
}

fn endpoint_slice(root: &mut Obj) {
    // Neither list has `omitempty`, so a missing one is written as null.
    for key in ["endpoints", "ports"] {
        if !root.contains_key(key) {
            root.insert(key.into(), Value::Null);
        }
    }
    each_obj(root, "ports", |p| {
        set_if_unset(p, "name", json!(""));
        set_if_unset(p, "protocol", json!("TCP"));
    });
    each_obj(root, "endpoints", |e| {
        struct_field(e, "conditions");
    });
}

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

fn role_binding(root: &mut Obj) {
    if let Some(role_ref) = struct_field(root, "roleRef") {
        set_if_empty_str(role_ref, "apiGroup", RBAC_GROUP);
    }
    each_obj(root, "subjects", |s| {
        // A ServiceAccount's group is "", which marshals as nothing.
        if matches!(str_field(s, "kind"), "User" | "Group") {
            set_if_empty_str(s, "apiGroup", RBAC_GROUP);
        }
    });
}

fn csi_driver(root: &mut Obj) {
    let Some(spec) = struct_field(root, "spec") else {
        return;
    };
    set_if_unset(spec, "attachRequired", json!(true));
    set_if_unset(spec, "podInfoOnMount", json!(false));
    set_if_unset(spec, "storageCapacity", json!(false));
    set_if_unset(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
    if is_empty_collection(spec.get("volumeLifecycleModes")) {
        spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
    }
    set_if_unset(spec, "requiresRepublish", json!(false));
    // Gated by SELinuxMountReadWriteOncePod, beta and on since v1.28.
    set_if_unset(spec, "seLinuxMount", json!(false));
}

fn webhook(w: &mut Obj, mutating: bool) {
    set_if_unset(w, "failurePolicy", json!("Fail"));
    set_if_unset(w, "matchPolicy", json!("Equivalent"));
    set_if_unset(w, "namespaceSelector", json!({}));
    set_if_unset(w, "objectSelector", json!({}));
    set_if_unset(w, "timeoutSeconds", json!(10));
    if mutating {
        set_if_unset(w, "reinvocationPolicy", json!("Never"));
    }
    each_obj(w, "rules", rule_scope);
    if let Some(svc) = struct_field(w, "clientConfig").and_then(|c| ptr_field(c, "service")) {
        set_if_unset(svc, "port", json!(443));
    }
}

fn rule_scope(r: &mut Obj) {
    set_if_unset(r, "scope", json!("*"));
}

fn match_resources(m: &mut Obj) {
    set_if_unset(m, "matchPolicy", json!("Equivalent"));
    set_if_unset(m, "namespaceSelector", json!({}));
    set_if_unset(m, "objectSelector", json!({}));
    each_obj(m, "resourceRules", rule_scope);
    each_obj(m, "excludeResourceRules", rule_scope);
}

/// flowcontrol/v1 priority levels. Unlike v1beta3, v1 keeps an explicit
/// `nominalConcurrencyShares: 0`; only a missing one becomes 30.
fn priority_level(root: &mut Obj) {
    let Some(spec) = struct_field(root, "spec") else {
        return;
    };
    if let Some(limited) = ptr_field(spec, "limited") {
        set_if_unset(limited, "nominalConcurrencyShares", json!(30));
        set_if_unset(limited, "lendablePercent", json!(0));
        if let Some(q) =
            struct_field(limited, "limitResponse").and_then(|r| ptr_field(r, "queuing"))
        {
            set_if_zero_int(q, "handSize", 8);
            set_if_zero_int(q, "queues", 64);
            set_if_zero_int(q, "queueLengthLimit", 50);
        }
    }
    if let Some(exempt) = ptr_field(spec, "exempt") {
        set_if_unset(exempt, "nominalConcurrencyShares", json!(0));
        set_if_unset(exempt, "lendablePercent", json!(0));
    }
}

// ---------------------------------------------------------------------------
// Status on create

/// The status a create leaves on an object of `group`/`kind`: the
/// strategy's `PrepareForCreate` resets what the client sent, then
/// defaulting and Go's marshalling shape it. `None` means the create keeps
/// the status as sent (or the kind has none, or the sandbox handles it:
/// Namespace and Service).
///
/// Fields stamped with the current time (a scheduling-gated Pod's
/// condition, a PersistentVolume's `lastPhaseTransitionTime`) are left out;
/// [`initial_status_at`] adds them.
pub fn initial_status(group: &str, kind: &str, obj: &Value) -> Option<Value> {
    initial_status_with(group, kind, obj, None)
}

/// [`initial_status`] with the time-stamped fields set to `now` (RFC 3339,
/// seconds precision, as the server writes them).
pub fn initial_status_at(group: &str, kind: &str, obj: &Value, now: &str) -> Option<Value> {
    initial_status_with(group, kind, obj, Some(now))
}

fn initial_status_with(group: &str, kind: &str, obj: &Value, now: Option<&str>) -> Option<Value> {
    let status = match (group, kind) {
        ("", "Pod") => pod_initial_status(obj, now),
        ("", "PersistentVolumeClaim") => json!({"phase": "Pending"}),
        ("", "PersistentVolume") => match now {
            Some(t) => json!({"phase": "Pending", "lastPhaseTransitionTime": t}),
            None => json!({"phase": "Pending"}),
        },
        ("", "ReplicationController") | ("apps", "ReplicaSet") => json!({"replicas": 0}),
        ("", "ResourceQuota")
        | ("apps", "Deployment")
        | ("batch", "Job" | "CronJob")
        | ("certificates.k8s.io", "CertificateSigningRequest") => json!({}),
        ("apps", "StatefulSet") => json!({"replicas": 0, "availableReplicas": 0}),
        ("apps", "DaemonSet") => json!({
            "currentNumberScheduled": 0,
            "numberMisscheduled": 0,
            "desiredNumberScheduled": 0,
            "numberReady": 0
        }),
        ("autoscaling", "HorizontalPodAutoscaler") => {
            if obj.get("apiVersion").and_then(Value::as_str) == Some("autoscaling/v1") {
                json!({"currentReplicas": 0, "desiredReplicas": 0})
            } else {
                // v2's currentMetrics has no `omitempty`.
                json!({"currentMetrics": null, "desiredReplicas": 0})
            }
        }
        ("policy", "PodDisruptionBudget") => json!({
            "disruptionsAllowed": 0,
            "currentHealthy": 0,
            "desiredHealthy": 0,
            "expectedPods": 0
        }),
        ("networking.k8s.io", "Ingress") => json!({"loadBalancer": {}}),
        ("storage.k8s.io", "VolumeAttachment") => json!({"attached": false}),
        _ => return None,
    };
    Some(status)
}

fn pod_initial_status(obj: &Value, now: Option<&str>) -> Value {
    let mut status = json!({"phase": "Pending", "qosClass": pod_qos(obj)});
    let gated = obj
        .get("spec")
        .and_then(|s| s.get("schedulingGates"))
        .and_then(Value::as_array)
        .is_some_and(|g| !g.is_empty());
    if gated && let Some(s) = status.as_object_mut() {
        let mut cond = json!({
            "type": "PodScheduled",
            "status": "False",
            "lastProbeTime": null,
            "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates"
        });
        if let (Some(t), Some(c)) = (now, cond.as_object_mut()) {
            c.insert("lastTransitionTime".into(), json!(t));
        }
        s.insert("conditions".into(), json!([cond]));
    }
    status
}

/// The pod's QoS class as `GetPodQOS` computes it on create: over regular
/// and init containers, counting only positive cpu and memory amounts, with
/// requests defaulted from limits first.
pub fn pod_qos(pod: &Value) -> &'static str {
    let mut requests: [Option<i128>; 2] = [None, None];
    let mut limits: [Option<i128>; 2] = [None, None];
    let mut guaranteed = true;
    let spec = pod.get("spec");
    let containers = ["containers", "initContainers"]
        .into_iter()
        .filter_map(|k| spec.and_then(|s| s.get(k)).and_then(Value::as_array))
        .flatten();
    for c in containers {
        let res = c.get("resources");
        let lim = res.and_then(|r| r.get("limits")).and_then(Value::as_object);
        let req = res
            .and_then(|r| r.get("requests"))
            .and_then(Value::as_object);
        let mut limit_found = [false, false];
        for (i, name) in ["cpu", "memory"].into_iter().enumerate() {
            let limit = lim.and_then(|l| l.get(name)).and_then(quantity_milli);
            let request = match req.and_then(|r| r.get(name)) {
                Some(q) => quantity_milli(q),
                None => limit,
            };
            if let Some(q) = request.filter(|q| *q > 0) {
                requests[i] = Some(requests[i].unwrap_or(0).saturating_add(q));
            }
            if let Some(q) = limit.filter(|q| *q > 0) {
                limit_found[i] = true;
                limits[i] = Some(limits[i].unwrap_or(0).saturating_add(q));
            }
        }
        if !limit_found.iter().all(|f| *f) {
            guaranteed = false;
        }
    }
    if requests.iter().all(Option::is_none) && limits.iter().all(Option::is_none) {
        return "BestEffort";
    }
    let same = (0..2).all(|i| match (requests[i], limits[i]) {
        (None, None) => true,
        (Some(r), Some(l)) => r == l,
        _ => false,
    });
    if guaranteed && same {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// A resource quantity in milli-units, rounded up as the server's
/// defaulting rounds every resource list. `None` for anything that is not
/// a quantity. Absurdly large amounts saturate.
fn quantity_milli(v: &Value) -> Option<i128> {
    match v {
        Value::String(s) => parse_quantity_milli(s.trim()),
        Value::Number(n) => parse_quantity_milli(&n.to_string()),
        _ => None,
    }
}

fn parse_quantity_milli(s: &str) -> Option<i128> {
    let b = s.as_bytes();
    let mut i = 0;
    let negative = match b.first() {
        Some(b'-') => {
            i = 1;
            true
        }
        Some(b'+') => {
            i = 1;
            false
        }
        _ => false,
    };
    let mut digits: Vec<u8> = Vec::new();
    let mut frac: i64 = 0;
    while let Some(d) = b.get(i).filter(|c| c.is_ascii_digit()) {
        digits.push(d - b'0');
        i += 1;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while let Some(d) = b.get(i).filter(|c| c.is_ascii_digit()) {
            digits.push(d - b'0');
            frac += 1;
            i += 1;
        }
    }
    if digits.is_empty() {
        return None;
    }
    let (exp10, exp2): (i64, u32) = match s.get(i..)? {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        other => {
            let e = other.strip_prefix(['e', 'E'])?;
            let body = e.strip_prefix(['+', '-']).unwrap_or(e);
            if body.is_empty() || !body.bytes().all(|c| c.is_ascii_digit()) {
                return None;
            }
            (e.parse::<i64>().ok()?.clamp(-1000, 1000), 0)
        }
    };
    let first = digits.iter().position(|d| *d != 0).unwrap_or(digits.len());
    let mut digits = digits.split_off(first);
    let mut shift = 3 + exp10 - frac;
    // Digits beyond what an i128 holds only decide the rounding.
    let mut sticky = false;
    while digits.len() > 36 {
        sticky |= digits.pop().is_some_and(|d| d != 0);
        shift += 1;
    }
    let mut n: i128 = digits.iter().fold(0, |acc, d| acc * 10 + i128::from(*d));
    n = n.checked_mul(1i128 << exp2).unwrap_or(i128::MAX);
    if shift >= 0 {
        for _ in 0..shift {
            n = n.checked_mul(10).unwrap_or(i128::MAX);
        }
        if sticky {
            n = n.saturating_add(1);
        }
    } else {
        let divisor = (0..-shift).try_fold(1i128, |acc, _| acc.checked_mul(10));
        n = match divisor {
            Some(d) => n / d + i128::from(n % d != 0 || sticky),
            None => i128::from(n != 0 || sticky),
        };
    }
    Some(if negative { -n } else { n })
}

// ---------------------------------------------------------------------------
// Image references (docker/distribution's grammar, as `ParseImageName` uses it)

/// The tag `ParseImageName` finds in an image reference: the explicit tag,
/// `latest` when there is neither tag nor digest, `""` for a digest alone,
/// and `None` when the reference does not parse (the container then gets
/// `IfNotPresent`, like any tag other than `latest`).
fn image_tag(image: &str) -> Option<String> {
    if image.len() == 64
        && image
            .bytes()
            .all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
    {
        return None;
    }
    let (name_tag, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    if let Some(d) = digest
        && !valid_digest(d)
    {
        return None;
    }
    let (name, tag) = match name_tag.rfind(':') {
        Some(i) if !name_tag[i + 1..].contains('/') => (&name_tag[..i], Some(&name_tag[i + 1..])),
        _ => (name_tag, None),
    };
    if let Some(t) = tag
        && !valid_tag(t)
    {
        return None;
    }
    if !valid_name(name) {
        return None;
    }
    Some(match (tag, digest) {
        (Some(t), _) => t.to_string(),
        (None, None) => "latest".to_string(),
        (None, Some(_)) => String::new(),
    })
}

fn valid_digest(d: &str) -> bool {
    let Some((alg, hex)) = d.split_once(':') else {
        return false;
    };
    let len = match alg {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return false,
    };
    hex.len() == len && hex.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn valid_tag(t: &str) -> bool {
    let b = t.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && is_word(b[0])
        && b[1..]
            .iter()
            .all(|c| is_word(*c) || *c == b'.' || *c == b'-')
}

fn valid_name(name: &str) -> bool {
    let (domain, remote) = match name.split_once('/') {
        Some((first, rest))
            if first.contains(['.', ':'])
                || first == "localhost"
                || first.to_lowercase() != first =>
        {
            (Some(first), rest)
        }
        _ => (None, name),
    };
    if let Some(d) = domain
        && !valid_domain(d)
    {
        return false;
    }
    let full_len = match domain {
        Some(d) => d.len() + 1 + remote.len(),
        None if remote.contains('/') => "docker.io/".len() + remote.len(),
        None => "docker.io/library/".len() + remote.len(),
    };
    full_len <= 255 && remote.split('/').all(valid_path_component)
}

/// `[a-z0-9]+` joined by `.`, `_`, `__` or runs of `-`.
fn valid_path_component(c: &str) -> bool {
    let b = c.as_bytes();
    let alnum = |x: u8| x.is_ascii_lowercase() || x.is_ascii_digit();
    if b.is_empty() || !alnum(b[0]) || !alnum(b[b.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if alnum(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !alnum(b[i]) {
            i += 1;
        }
        let sep = &c[start..i];
        if !(sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|x| x == b'-')) {
            return false;
        }
    }
    true
}

fn valid_domain(d: &str) -> bool {
    let (host, port) = if let Some(rest) = d.strip_prefix('[') {
        let Some((v6, after)) = rest.split_once(']') else {
            return false;
        };
        if v6.is_empty() || !v6.bytes().all(|c| c.is_ascii_hexdigit() || c == b':') {
            return false;
        }
        (None, after.strip_prefix(':').map(Some).unwrap_or(Some("")))
    } else {
        match d.split_once(':') {
            Some((h, p)) => (Some(h), Some(p)),
            None => (Some(d), Some("")),
        }
    };
    if let Some(h) = host {
        let ok = h.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
        });
        if !ok {
            return false;
        }
    }
    match port {
        Some("") | None => !d.ends_with(':'),
        Some(p) => p.bytes().all(|c| c.is_ascii_digit()),
    }
}

// ---------------------------------------------------------------------------
// Admission

/// The default admission chain's stateless changes to a Pod on create:
/// `DefaultTolerationSeconds` (tolerate `not-ready` and `unreachable`
/// NoExecute taints for 300 s unless a toleration already covers them),
/// `ServiceAccount` (`serviceAccountName: default` when unset; the token
/// volume it also mounts needs a random name and is the caller's), and
/// `Priority` for a Pod without `priorityClassName` in a cluster without a
/// global default class (`priority: 0`, `preemptionPolicy:
/// PreemptLowerPriority`).
///
/// A Pod naming a priority class is left to the caller, who can look the
/// class up. Returns the admission plugin's Forbidden message when the Pod
/// carries a priority other than the computed one.
pub fn admit_pod_create(obj: &mut Value) -> Result<(), String> {
    let Some(spec) = obj
        .as_object_mut()
        .and_then(|root| struct_field(root, "spec"))
    else {
        return Ok(());
    };
    if matches!(opt_str(spec.get("serviceAccountName")), Some("")) {
        spec.insert("serviceAccountName".into(), json!("default"));
    }
    service_account_alias(spec);
    default_tolerations(spec);
    if matches!(opt_str(spec.get("priorityClassName")), Some("")) {
        match spec.get("priority") {
            None | Some(Value::Null) => {
                spec.insert("priority".into(), json!(0));
            }
            Some(p) if p.as_i64() == Some(0) => {}
            Some(p) => {
                return Err(format!(
                    "the integer value of priority ({p}) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name"
                ));
            }
        }
        match spec.get("preemptionPolicy") {
            None | Some(Value::Null) => {
                spec.insert("preemptionPolicy".into(), json!("PreemptLowerPriority"));
            }
            Some(Value::String(p)) if p == "PreemptLowerPriority" => {}
            Some(p) => {
                let shown = p.as_str().map_or_else(|| p.to_string(), str::to_string);
                return Err(format!(
                    "the string value of PreemptionPolicy ({shown}) must not be provided in pod spec; priority admission controller computed PreemptLowerPriority from the given PriorityClass name"
                ));
            }
        }
    }
    Ok(())
}

fn default_tolerations(spec: &mut Obj) {
    let mut tolerates = [false, false];
    let keys = [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ];
    match spec.get("tolerations") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            for t in list {
                let key = t.get("key").and_then(Value::as_str).unwrap_or("");
                let effect = t.get("effect").and_then(Value::as_str).unwrap_or("");
                if effect.is_empty() || effect == "NoExecute" {
                    for (i, k) in keys.iter().enumerate() {
                        if key.is_empty() || key == *k {
                            tolerates[i] = true;
                        }
                    }
                }
            }
        }
        Some(_) => return,
    }
    let added: Vec<Value> = keys
        .iter()
        .zip(tolerates)
        .filter(|(_, has)| !has)
        .map(|(k, _)| {
            json!({"key": k, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})
        })
        .collect();
    if added.is_empty() {
        return;
    }
    match spec.get_mut("tolerations") {
        Some(Value::Array(list)) => list.extend(added),
        _ => {
            spec.insert("tolerations".into(), Value::Array(added));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn defaulted(group: &str, version: &str, kind: &str, mut obj: Value) -> Value {
        apply_defaults(group, version, kind, &mut obj);
        let once = obj.clone();
        apply_defaults(group, version, kind, &mut obj);
        assert_eq!(obj, once, "defaulting {kind} twice changed it");
        obj
    }

    /// The container every template test uses, and its defaulted form.
    fn web() -> Value {
        json!({"name": "web", "image": "nginx:1.27"})
    }
    fn web_defaulted() -> Value {
        json!({
            "name": "web", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent",
            "resources": {}, "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File"
        })
    }
    fn template_spec_defaulted(containers: Value) -> Value {
        json!({
            "containers": containers, "dnsPolicy": "ClusterFirst", "restartPolicy": "Always",
            "schedulerName": "default-scheduler", "securityContext": {},
            "terminationGracePeriodSeconds": 30
        })
    }

    // Upstream counterpart: pkg/apis/core/v1/defaults_test.go; expectations
    // from SetDefaults_PodSpec, SetDefaults_Container and SetDefaults_Pod.
    #[test]
    fn minimal_pod() {
        let pod = defaulted(
            "",
            "v1",
            "Pod",
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                   "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
        );
        assert_eq!(
            pod,
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
                "containers": [{
                    "name": "c", "image": "nginx", "imagePullPolicy": "Always", "resources": {},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File"
                }],
                "dnsPolicy": "ClusterFirst", "enableServiceLinks": true, "restartPolicy": "Always",
                "schedulerName": "default-scheduler", "securityContext": {},
                "terminationGracePeriodSeconds": 30
            }})
        );
    }

    #[test]
    fn pod_containers_probes_env_and_host_network() {
        let pod = defaulted(
            "",
            "v1",
            "Pod",
            json!({"spec": {
                "hostNetwork": true,
                "restartPolicy": "Never",
                "serviceAccount": "builder",
                "initContainers": [{"name": "init", "image": "busybox", "imagePullPolicy": "Never"}],
                "containers": [{
                    "name": "c", "image": "nginx:1.27",
                    "ports": [{"containerPort": 8080}, {"containerPort": 53, "protocol": "UDP", "hostPort": 1053}],
                    "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                            {"name": "PLAIN", "value": "x"}],
                    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}},
                    "livenessProbe": {"httpGet": {"port": 8080}},
                    "readinessProbe": {"grpc": {"port": 9000}, "periodSeconds": 5, "timeoutSeconds": 0},
                    "startupProbe": {"exec": {"command": ["true"]}, "failureThreshold": 30},
                    "lifecycle": {"preStop": {"httpGet": {"port": 80, "path": "/stop"}}}
                }]
            }}),
        );
        let spec = &pod["spec"];
        assert_eq!(spec["restartPolicy"], "Never");
        assert_eq!(spec["serviceAccountName"], "builder");
        assert_eq!(spec["serviceAccount"], "builder");
        assert_eq!(
            spec["initContainers"][0],
            json!({"name": "init", "image": "busybox", "imagePullPolicy": "Never", "resources": {},
                   "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"})
        );
        let c = &spec["containers"][0];
        assert_eq!(
            c["ports"],
            json!([{"containerPort": 8080, "hostPort": 8080, "protocol": "TCP"},
                   {"containerPort": 53, "protocol": "UDP", "hostPort": 1053}])
        );
        assert_eq!(
            c["env"],
            json!([{"name": "NODE", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}},
                   {"name": "PLAIN", "value": "x"}])
        );
        assert_eq!(
            c["resources"],
            json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "1Gi"}})
        );
        assert_eq!(
            c["livenessProbe"],
            json!({"httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                   "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
        );
        assert_eq!(
            c["readinessProbe"],
            json!({"grpc": {"port": 9000, "service": ""}, "timeoutSeconds": 1,
                   "periodSeconds": 5, "successThreshold": 1, "failureThreshold": 3})
        );
        assert_eq!(c["startupProbe"]["failureThreshold"], 30);
        assert_eq!(
            c["lifecycle"]["preStop"]["httpGet"],
            json!({"port": 80, "path": "/stop", "scheme": "HTTP"})
        );
    }

    #[test]
    fn pod_volumes() {
        let pod = defaulted(
            "",
            "v1",
            "Pod",
            json!({"spec": {"containers": [], "volumes": [
                {"name": "scratch"},
                {"name": "s", "secret": {"secretName": "x"}},
                {"name": "cm", "configMap": {"name": "x", "defaultMode": 256}},
                {"name": "h", "hostPath": {"path": "/var"}},
                {"name": "d", "downwardAPI": {"items": [{"path": "l", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
                {"name": "p", "projected": {"sources": [
                    {"serviceAccountToken": {"path": "token"}},
                    {"downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}},
                    {"configMap": {"name": "kube-root-ca.crt"}}
                ]}},
                {"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}},
                {"name": "r", "rbd": {"monitors": ["m"], "image": "i"}},
                {"name": "a", "azureDisk": {"diskName": "d", "diskURI": "u"}}
            ]}}),
        );
        assert_eq!(
            pod["spec"]["volumes"],
            json!([
                {"name": "scratch", "emptyDir": {}},
                {"name": "s", "secret": {"secretName": "x", "defaultMode": 420}},
                {"name": "cm", "configMap": {"name": "x", "defaultMode": 256}},
                {"name": "h", "hostPath": {"path": "/var", "type": ""}},
                {"name": "d", "downwardAPI": {"defaultMode": 420, "items": [
                    {"path": "l", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels"}}]}},
                {"name": "p", "projected": {"defaultMode": 420, "sources": [
                    {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}},
                    {"downwardAPI": {"items": [{"path": "n", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}]}},
                    {"configMap": {"name": "kube-root-ca.crt"}}
                ]}},
                {"name": "e", "ephemeral": {"volumeClaimTemplate": {
                    "metadata": {"creationTimestamp": null},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {}, "volumeMode": "Filesystem"}}}},
                {"name": "r", "rbd": {"monitors": ["m"], "image": "i", "pool": "rbd", "user": "admin",
                                      "keyring": "/etc/ceph/keyring"}},
                {"name": "a", "azureDisk": {"diskName": "d", "diskURI": "u", "cachingMode": "ReadWrite",
                                            "fsType": "ext4", "readOnly": false, "kind": "Shared"}}
            ])
        );
    }

    #[test]
    fn image_pull_policy_follows_the_tag() {
        let digest = format!("sha256:{}", "a".repeat(64));
        let cases = [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("nginx:1.27", "IfNotPresent"),
            ("docker.io/library/nginx", "Always"),
            ("registry.example.com/team/app", "Always"),
            ("registry.example.com:5000/team/app:v2", "IfNotPresent"),
            ("localhost:5000/app", "Always"),
            ("localhost:5000", "IfNotPresent"),
            ("[::1]:5000/app:latest", "Always"),
            (&*format!("nginx@{digest}"), "IfNotPresent"),
            (&*format!("nginx:latest@{digest}"), "Always"),
            // Unparsable references fall back to IfNotPresent.
            ("Nginx", "IfNotPresent"),
            ("", "IfNotPresent"),
            ("nginx:", "IfNotPresent"),
            ("nginx@sha256:abc", "IfNotPresent"),
            ("a//b", "IfNotPresent"),
            (&*"f".repeat(64), "IfNotPresent"),
            (&*format!("{}:latest", "a".repeat(250)), "IfNotPresent"),
        ];
        for (image, want) in cases {
            let mut c = json!({"name": "c", "image": image});
            if let Some(o) = c.as_object_mut() {
                container(o);
            }
            assert_eq!(c["imagePullPolicy"], want, "{image}");
        }
    }

    // Upstream counterpart: pkg/apis/apps/v1/defaults_test.go (expectations from the defaulter).
    #[test]
    fn deployment() {
        let d = defaulted(
            "apps",
            "v1",
            "Deployment",
            json!({"spec": {"selector": {"matchLabels": {"app": "a"}},
                   "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [web()]}}}}),
        );
        assert_eq!(
            d,
            json!({"spec": {
                "replicas": 1, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
                "selector": {"matchLabels": {"app": "a"}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
                "template": {"metadata": {"labels": {"app": "a"}, "creationTimestamp": null},
                             "spec": template_spec_defaulted(json!([web_defaulted()]))}
            }})
        );
        let recreate = defaulted(
            "apps",
            "v1",
            "Deployment",
            json!({"spec": {"replicas": 0, "strategy": {"type": "Recreate"}}}),
        );
        assert_eq!(recreate["spec"]["strategy"], json!({"type": "Recreate"}));
        assert_eq!(recreate["spec"]["replicas"], 0);
        let partial = defaulted(
            "apps",
            "v1",
            "Deployment",
            json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 2}}}}),
        );
        assert_eq!(
            partial["spec"]["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2, "maxUnavailable": "25%"}})
        );
    }

    // Upstream counterpart: pkg/apis/apps/v1/defaults_test.go (expectations from the defaulter).
    #[test]
    fn stateful_set() {
        let s = defaulted(
            "apps",
            "v1",
            "StatefulSet",
            json!({"spec": {"serviceName": "db", "template": {"spec": {"containers": [web()]}},
                   "volumeClaimTemplates": [{"metadata": {"name": "data"},
                       "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}),
        );
        assert_eq!(
            s,
            json!({"spec": {
                "serviceName": "db", "replicas": 1, "revisionHistoryLimit": 10,
                "podManagementPolicy": "OrderedReady",
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
                "template": {"metadata": {"creationTimestamp": null},
                             "spec": template_spec_defaulted(json!([web_defaulted()]))},
                "volumeClaimTemplates": [{
                    "metadata": {"name": "data", "creationTimestamp": null},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                             "volumeMode": "Filesystem"},
                    "status": {"phase": "Pending"}
                }]
            }})
        );
        let explicit = defaulted(
            "apps",
            "v1",
            "StatefulSet",
            json!({"spec": {"updateStrategy": {"type": "RollingUpdate"}}}),
        );
        assert_eq!(
            explicit["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate"})
        );
        let on_delete = defaulted(
            "apps",
            "v1",
            "StatefulSet",
            json!({"spec": {"updateStrategy": {"type": "OnDelete"}}}),
        );
        assert_eq!(
            on_delete["spec"]["updateStrategy"],
            json!({"type": "OnDelete"})
        );
    }

    // Upstream counterpart: pkg/apis/apps/v1/defaults_test.go (expectations from the defaulter).
    #[test]
    fn daemon_set_and_replica_set() {
        let d = defaulted(
            "apps",
            "v1",
            "DaemonSet",
            json!({"spec": {"template": {"spec": {"containers": [web()]}}}}),
        );
        assert_eq!(
            d["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        );
        assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
        assert_eq!(
            d["spec"]["template"]["spec"],
            template_spec_defaulted(json!([web_defaulted()]))
        );
        let r = defaulted("apps", "v1", "ReplicaSet", json!({"spec": {}}));
        assert_eq!(
            r,
            json!({"spec": {"replicas": 1, "template": {"metadata": {"creationTimestamp": null},
                   "spec": {"dnsPolicy": "ClusterFirst", "restartPolicy": "Always",
                            "schedulerName": "default-scheduler", "securityContext": {},
                            "terminationGracePeriodSeconds": 30}}}})
        );
    }

    #[test]
    fn daemon_set_template_generation_follows_the_template() {
        let mut ds = json!({"metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [web()]}}}});
        daemon_set_template_generation(None, &mut ds);
        assert_eq!(
            ds["metadata"]["annotations"],
            json!({DAEMON_SET_TEMPLATE_GENERATION: "1"})
        );
        let old = ds.clone();
        let mut same = ds.clone();
        same["spec"]["minReadySeconds"] = json!(5);
        daemon_set_template_generation(Some(&old), &mut same);
        assert_eq!(
            same["metadata"]["annotations"][DAEMON_SET_TEMPLATE_GENERATION],
            "1"
        );
        let mut changed = ds.clone();
        changed["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.28");
        // A client cannot move the generation itself.
        changed["metadata"]["annotations"][DAEMON_SET_TEMPLATE_GENERATION] = json!("9");
        daemon_set_template_generation(Some(&old), &mut changed);
        assert_eq!(
            changed["metadata"]["annotations"][DAEMON_SET_TEMPLATE_GENERATION],
            "2"
        );
        let mut given = json!({"metadata": {"annotations": {DAEMON_SET_TEMPLATE_GENERATION: "4"}}});
        daemon_set_template_generation(None, &mut given);
        assert_eq!(
            given["metadata"]["annotations"][DAEMON_SET_TEMPLATE_GENERATION],
            "4"
        );
        let mut bad = json!({"metadata": {"annotations": {DAEMON_SET_TEMPLATE_GENERATION: "x"}}});
        let before = bad.clone();
        daemon_set_template_generation(None, &mut bad);
        assert_eq!(bad, before);
    }

    // Upstream counterpart: pkg/apis/core/v1/defaults_test.go (expectations from the defaulter).
    #[test]
    fn replication_controller_and_pod_template() {
        let rc = defaulted(
            "",
            "v1",
            "ReplicationController",
            json!({"metadata": {"name": "rc"},
                   "spec": {"template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [web()]}}}}),
        );
        assert_eq!(rc["metadata"]["labels"], json!({"app": "a"}));
        assert_eq!(rc["spec"]["selector"], json!({"app": "a"}));
        assert_eq!(rc["spec"]["replicas"], 1);
        let kept = defaulted(
            "",
            "v1",
            "ReplicationController",
            json!({"metadata": {"labels": {"x": "y"}},
                   "spec": {"selector": {"app": "b"}, "template": {"metadata": {"labels": {"app": "a"}}}}}),
        );
        assert_eq!(kept["metadata"]["labels"], json!({"x": "y"}));
        assert_eq!(kept["spec"]["selector"], json!({"app": "b"}));
        let pt = defaulted(
            "",
            "v1",
            "PodTemplate",
            json!({"template": {"spec": {"containers": [web()]}}}),
        );
        assert_eq!(
            pt,
            json!({"template": {"metadata": {"creationTimestamp": null},
                   "spec": template_spec_defaulted(json!([web_defaulted()]))}})
        );
    }

    // Upstream counterpart: pkg/apis/batch/v1/defaults_test.go (expectations from the defaulter).
    #[test]
    fn job() {
        let j = defaulted(
            "batch",
            "v1",
            "Job",
            json!({"metadata": {"name": "pi"},
                   "spec": {"template": {"spec": {"containers": [web()], "restartPolicy": "Never"}}}}),
        );
        let mut pod_spec = template_spec_defaulted(json!([web_defaulted()]));
        pod_spec["restartPolicy"] = json!("Never");
        assert_eq!(
            j,
            json!({"metadata": {"name": "pi"}, "spec": {
                "backoffLimit": 6, "completionMode": "NonIndexed", "completions": 1,
                "manualSelector": false, "parallelism": 1,
                "podReplacementPolicy": "TerminatingOrFailed", "suspend": false,
                "template": {"metadata": {"creationTimestamp": null}, "spec": pod_spec}
            }})
        );
        let indexed = defaulted(
            "batch",
            "v1",
            "Job",
            json!({"spec": {"parallelism": 3, "backoffLimitPerIndex": 1,
                   "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}}}),
        );
        let spec = &indexed["spec"];
        assert!(spec.get("completions").is_none());
        assert_eq!(spec["parallelism"], 3);
        assert_eq!(spec["backoffLimit"], 2_147_483_647);
        assert_eq!(spec["podReplacementPolicy"], "Failed");
        assert_eq!(
            spec["podFailurePolicy"]["rules"][0]["onPodConditions"][0],
            json!({"type": "DisruptionTarget", "status": "True"})
        );
        let completions_only = defaulted("batch", "v1", "Job", json!({"spec": {"completions": 5}}));
        assert_eq!(completions_only["spec"]["parallelism"], 1);
        assert_eq!(completions_only["spec"]["completions"], 5);
    }

    #[test]
    fn job_selector_generation() {
        let uid = "0d5a2c1e-7f5b-4e1a-9a43-6f0c2f6b1c11";
        // No labels anywhere: everything ends up with the generated labels.
        let mut j = json!({"metadata": {"name": "pi"}, "spec": {"template": {"spec": {}}}});
        job_generated_selector(&mut j, uid);
        apply_defaults("batch", "v1", "Job", &mut j);
        let generated = json!({
            "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "pi",
            "controller-uid": uid, "job-name": "pi"
        });
        assert_eq!(j["spec"]["template"]["metadata"]["labels"], generated);
        assert_eq!(j["metadata"]["labels"], generated);
        assert_eq!(
            j["spec"]["selector"],
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
        );
        // After defaulting: template labels copied to the Job are shared.
        let mut j = json!({"metadata": {"name": "pi"},
                           "spec": {"template": {"metadata": {"labels": {"app": "pi"}}}}});
        apply_defaults("batch", "v1", "Job", &mut j);
        job_generated_selector(&mut j, uid);
        assert_eq!(j["metadata"]["labels"]["app"], "pi");
        assert_eq!(j["metadata"]["labels"]["job-name"], "pi");
        // The Job's own, different labels stay; user-set template labels win.
        let mut j = json!({"metadata": {"name": "pi", "labels": {"team": "x"}},
                           "spec": {"template": {"metadata": {"labels": {"job-name": "other"}}}}});
        job_generated_selector(&mut j, uid);
        assert_eq!(j["metadata"]["labels"], json!({"team": "x"}));
        assert_eq!(
            j["spec"]["template"]["metadata"]["labels"]["job-name"],
            "other"
        );
        // A manual selector is left alone.
        let mut manual =
            json!({"spec": {"manualSelector": true, "selector": {"matchLabels": {"a": "b"}}}});
        let before = manual.clone();
        job_generated_selector(&mut manual, uid);
        assert_eq!(manual, before);
    }

    // Upstream counterpart: pkg/apis/batch/v1/defaults_test.go (expectations from the defaulter).
    #[test]
    fn cron_job() {
        let c = defaulted(
            "batch",
            "v1",
            "CronJob",
            json!({"spec": {"schedule": "*/1 * * * *",
                   "jobTemplate": {"spec": {"template": {"spec": {"containers": [web()], "restartPolicy": "OnFailure"}}}}}}),
        );
        let mut pod_spec = template_spec_defaulted(json!([web_defaulted()]));
        pod_spec["restartPolicy"] = json!("OnFailure");
        assert_eq!(
            c,
            json!({"spec": {
                "schedule": "*/1 * * * *", "concurrencyPolicy": "Allow", "suspend": false,
                "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
                "jobTemplate": {"metadata": {"creationTimestamp": null}, "spec": {
                    "template": {"metadata": {"creationTimestamp": null}, "spec": pod_spec}}}
            }})
        );
    }

    #[test]
    fn core_storage_kinds() {
        let pvc = defaulted(
            "",
            "v1",
            "PersistentVolumeClaim",
            json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
        );
        assert_eq!(
            pvc,
            json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                            "volumeMode": "Filesystem"},
                   "status": {"phase": "Pending"}})
        );
        let pv = defaulted(
            "",
            "v1",
            "PersistentVolume",
            json!({"spec": {"capacity": {"storage": "1Gi"}, "hostPath": {"path": "/data"},
                            "iscsi": {"targetPortal": "t", "iqn": "i", "lun": 0}}}),
        );
        assert_eq!(
            pv,
            json!({"spec": {"capacity": {"storage": "1Gi"}, "hostPath": {"path": "/data", "type": ""},
                            "iscsi": {"targetPortal": "t", "iqn": "i", "lun": 0, "iscsiInterface": "default"},
                            "persistentVolumeReclaimPolicy": "Retain", "volumeMode": "Filesystem"},
                   "status": {"phase": "Pending"}})
        );
        let block = defaulted(
            "",
            "v1",
            "PersistentVolumeClaim",
            json!({"spec": {"volumeMode": "Block"}, "status": {"phase": "Bound"}}),
        );
        assert_eq!(block["spec"]["volumeMode"], "Block");
        assert_eq!(block["status"]["phase"], "Bound");
    }

    // Upstream: TestSetDefaultLimitRangeItem in pkg/apis/core/v1/defaults_test.go.
    #[test]
    fn limit_range() {
        let lr = defaulted(
            "",
            "v1",
            "LimitRange",
            json!({"spec": {"limits": [
                {"type": "Container", "max": {"cpu": "2", "memory": "1Gi"}, "min": {"cpu": "100m", "ephemeral-storage": "1Mi"},
                 "default": {"memory": "512Mi"}},
                {"type": "Pod", "max": {"cpu": "4"}},
                {"type": "Container"}
            ]}}),
        );
        assert_eq!(
            lr["spec"]["limits"],
            json!([
                {"type": "Container", "max": {"cpu": "2", "memory": "1Gi"}, "min": {"cpu": "100m", "ephemeral-storage": "1Mi"},
                 "default": {"memory": "512Mi", "cpu": "2"},
                 "defaultRequest": {"memory": "512Mi", "cpu": "2", "ephemeral-storage": "1Mi"}},
                {"type": "Pod", "max": {"cpu": "4"}},
                {"type": "Container"}
            ])
        );
    }

    #[test]
    fn small_core_kinds() {
        let ep = defaulted(
            "",
            "v1",
            "Endpoints",
            json!({"subsets": [{"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]}]}),
        );
        assert_eq!(
            ep["subsets"][0]["ports"],
            json!([{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}])
        );
        assert_eq!(defaulted("", "v1", "Secret", json!({}))["type"], "Opaque");
        assert_eq!(
            defaulted("", "v1", "Secret", json!({"type": "kubernetes.io/tls"}))["type"],
            "kubernetes.io/tls"
        );
        let node = defaulted(
            "",
            "v1",
            "Node",
            json!({"status": {"capacity": {"cpu": "4", "pods": "110"}}}),
        );
        assert_eq!(
            node["status"],
            json!({"capacity": {"cpu": "4", "pods": "110"}, "allocatable": {"cpu": "4", "pods": "110"},
                   "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
                   "nodeInfo": {"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "",
                                "osImage": "", "containerRuntimeVersion": "", "kubeletVersion": "",
                                "kubeProxyVersion": "", "operatingSystem": "", "architecture": ""}})
        );
        // Kinds handled elsewhere or without defaults are untouched.
        for (g, k) in [
            ("", "Service"),
            ("", "Namespace"),
            ("", "ConfigMap"),
            ("apps", "ControllerRevision"),
        ] {
            let obj = json!({"spec": {"type": ""}, "metadata": {"name": "n"}});
            assert_eq!(defaulted(g, "v1", k, obj.clone()), obj, "{k}");
        }
        // An unknown version is untouched.
        assert_eq!(
            defaulted("apps", "v1beta2", "Deployment", json!({})),
            json!({})
        );
    }

    // Upstream counterpart: pkg/apis/networking/v1/defaults_test.go (expectations from the defaulter).
    #[test]
    fn network_kinds() {
        let np = defaulted(
            "networking.k8s.io",
            "v1",
            "NetworkPolicy",
            json!({"spec": {"ingress": [{"ports": [{"port": 80}]}], "egress": [{"ports": [{"protocol": "UDP", "port": 53}]}]}}),
        );
        assert_eq!(
            np,
            json!({"spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"],
                            "ingress": [{"ports": [{"port": 80, "protocol": "TCP"}]}],
                            "egress": [{"ports": [{"protocol": "UDP", "port": 53}]}]}})
        );
        let ingress_only = defaulted("networking.k8s.io", "v1", "NetworkPolicy", json!({}));
        assert_eq!(
            ingress_only,
            json!({"spec": {"podSelector": {}, "policyTypes": ["Ingress"]}})
        );
        let kept = defaulted(
            "networking.k8s.io",
            "v1",
            "NetworkPolicy",
            json!({"spec": {"policyTypes": ["Egress"]}}),
        );
        assert_eq!(kept["spec"]["policyTypes"], json!(["Egress"]));
        let ic = defaulted(
            "networking.k8s.io",
            "v1",
            "IngressClass",
            json!({"spec": {"controller": "x/y", "parameters": {"kind": "K", "name": "n"}}}),
        );
        assert_eq!(ic["spec"]["parameters"]["scope"], "Cluster");
        let slice = defaulted(
            "discovery.k8s.io",
            "v1",
            "EndpointSlice",
            json!({"addressType": "IPv4", "ports": [{"port": 80}], "endpoints": [{"addresses": ["10.0.0.1"]}]}),
        );
        assert_eq!(
            slice,
            json!({"addressType": "IPv4", "ports": [{"port": 80, "name": "", "protocol": "TCP"}],
                   "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {}}]})
        );
        let empty = defaulted(
            "discovery.k8s.io",
            "v1",
            "EndpointSlice",
            json!({"addressType": "IPv4"}),
        );
        assert_eq!(
            empty,
            json!({"addressType": "IPv4", "endpoints": null, "ports": null})
        );
    }

    // No upstream test consulted; expectations derived from pkg/apis/rbac/v1/defaults.go.
    #[test]
    fn rbac_bindings() {
        for kind in ["RoleBinding", "ClusterRoleBinding"] {
            let b = defaulted(
                "rbac.authorization.k8s.io",
                "v1",
                kind,
                json!({"roleRef": {"kind": "ClusterRole", "name": "view"}, "subjects": [
                    {"kind": "User", "name": "u"}, {"kind": "Group", "name": "g"},
                    {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"},
                    {"kind": "User", "name": "v", "apiGroup": "other"}
                ]}),
            );
            assert_eq!(
                b,
                json!({"roleRef": {"kind": "ClusterRole", "name": "view", "apiGroup": "rbac.authorization.k8s.io"},
                       "subjects": [
                    {"kind": "User", "name": "u", "apiGroup": "rbac.authorization.k8s.io"},
                    {"kind": "Group", "name": "g", "apiGroup": "rbac.authorization.k8s.io"},
                    {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"},
                    {"kind": "User", "name": "v", "apiGroup": "other"}
                ]})
            );
        }
    }

    // Upstream: TestGenerateScaleUpRules and its scale-down twin in
    // pkg/apis/autoscaling/v2/defaults_test.go; expectations derived from the defaulter.
    #[test]
    fn horizontal_pod_autoscalers() {
        let target = json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"});
        let h = defaulted(
            "autoscaling",
            "v2",
            "HorizontalPodAutoscaler",
            json!({"spec": {"scaleTargetRef": target, "maxReplicas": 5}}),
        );
        assert_eq!(
            h,
            json!({"spec": {"scaleTargetRef": target, "maxReplicas": 5, "minReplicas": 1, "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}
            ]}})
        );
        let b = defaulted(
            "autoscaling",
            "v2",
            "HorizontalPodAutoscaler",
            json!({"spec": {"minReplicas": 2, "maxReplicas": 5,
                   "metrics": [{"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}],
                   "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}}),
        );
        assert_eq!(b["spec"]["minReplicas"], 2);
        assert_eq!(b["spec"]["metrics"][0]["type"], "Pods");
        assert_eq!(
            b["spec"]["behavior"],
            json!({
                "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
                    {"type": "Pods", "value": 4, "periodSeconds": 15},
                    {"type": "Percent", "value": 100, "periodSeconds": 15}]},
                "scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [
                    {"type": "Percent", "value": 100, "periodSeconds": 15}]}
            })
        );
        let v1 = defaulted(
            "autoscaling",
            "v1",
            "HorizontalPodAutoscaler",
            json!({"spec": {"maxReplicas": 3}}),
        );
        assert_eq!(
            v1,
            json!({"spec": {"maxReplicas": 3, "minReplicas": 1, "targetCPUUtilizationPercentage": 80}})
        );
    }

    #[test]
    fn scheduling_and_storage_kinds() {
        assert_eq!(
            defaulted(
                "scheduling.k8s.io",
                "v1",
                "PriorityClass",
                json!({"value": 1000})
            ),
            json!({"value": 1000, "preemptionPolicy": "PreemptLowerPriority"})
        );
        assert_eq!(
            defaulted(
                "storage.k8s.io",
                "v1",
                "StorageClass",
                json!({"provisioner": "p"})
            ),
            json!({"provisioner": "p", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"})
        );
        assert_eq!(
            defaulted("storage.k8s.io", "v1", "CSIDriver", json!({})),
            json!({"spec": {"attachRequired": true, "podInfoOnMount": false, "storageCapacity": false,
                            "fsGroupPolicy": "ReadWriteOnceWithFSType", "volumeLifecycleModes": ["Persistent"],
                            "requiresRepublish": false, "seLinuxMount": false}})
        );
    }

    // Upstream counterpart: pkg/apis/admissionregistration/v1/defaults_test.go (expectations
    // derived from the v1 defaulter).
    #[test]
    fn admission_kinds() {
        let rules = json!([{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]);
        let mut scoped = rules.clone();
        scoped[0]["scope"] = json!("*");
        let w = defaulted(
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
            json!({"webhooks": [{"name": "w.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                                 "clientConfig": {"service": {"namespace": "ns", "name": "svc"}}, "rules": rules}]}),
        );
        assert_eq!(
            w["webhooks"][0],
            json!({"name": "w.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                   "clientConfig": {"service": {"namespace": "ns", "name": "svc", "port": 443}}, "rules": scoped,
                   "failurePolicy": "Fail", "matchPolicy": "Equivalent", "namespaceSelector": {},
                   "objectSelector": {}, "timeoutSeconds": 10, "reinvocationPolicy": "Never"})
        );
        let v = defaulted(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
            json!({"webhooks": [{"name": "v", "clientConfig": {"url": "https://x"}}]}),
        );
        assert!(v["webhooks"][0].get("reinvocationPolicy").is_none());
        assert_eq!(v["webhooks"][0]["timeoutSeconds"], 10);
        let vap = defaulted(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicy",
            json!({"spec": {"matchConstraints": {"resourceRules": rules}, "validations": [{"expression": "true"}]}}),
        );
        assert_eq!(
            vap["spec"],
            json!({"failurePolicy": "Fail", "validations": [{"expression": "true"}],
                   "matchConstraints": {"resourceRules": scoped, "matchPolicy": "Equivalent",
                                        "namespaceSelector": {}, "objectSelector": {}}})
        );
        let binding = defaulted(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicyBinding",
            json!({"spec": {"policyName": "p", "validationActions": ["Deny"], "matchResources": {}}}),
        );
        assert_eq!(
            binding["spec"]["matchResources"],
            json!({"matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {}})
        );
    }

    #[test]
    fn flow_control_kinds() {
        let fs = defaulted(
            "flowcontrol.apiserver.k8s.io",
            "v1",
            "FlowSchema",
            json!({"spec": {"priorityLevelConfiguration": {"name": "x"}}}),
        );
        assert_eq!(fs["spec"]["matchingPrecedence"], 1000);
        let pl = defaulted(
            "flowcontrol.apiserver.k8s.io",
            "v1",
            "PriorityLevelConfiguration",
            json!({"spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}}}),
        );
        assert_eq!(
            pl["spec"]["limited"],
            json!({"nominalConcurrencyShares": 30, "lendablePercent": 0, "limitResponse": {
                "type": "Queue", "queuing": {"handSize": 8, "queues": 64, "queueLengthLimit": 50}}})
        );
        let zero = defaulted(
            "flowcontrol.apiserver.k8s.io",
            "v1",
            "PriorityLevelConfiguration",
            json!({"spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 0, "limitResponse": {"type": "Reject"}}}}),
        );
        assert_eq!(zero["spec"]["limited"]["nominalConcurrencyShares"], 0);
    }

    fn pod_with(containers: Value) -> Value {
        json!({"spec": {"containers": containers}})
    }

    // Upstream counterpart: pkg/apis/core/helper/qos/qos_test.go (cases derived from GetPodQOS).
    #[test]
    fn qos_classes() {
        let res = |r: Value| json!({"name": "c", "resources": r});
        let cases = [
            (pod_with(json!([{"name": "c"}])), "BestEffort"),
            (
                pod_with(json!([res(json!({"requests": {"cpu": "0"}}))])),
                "BestEffort",
            ),
            (
                pod_with(json!([res(json!({"requests": {"nvidia.com/gpu": "1"}}))])),
                "BestEffort",
            ),
            (
                pod_with(json!([res(json!({"requests": {"cpu": "100m"}}))])),
                "Burstable",
            ),
            (
                pod_with(json!([res(
                    json!({"limits": {"cpu": "1", "memory": "1Gi"}})
                )])),
                "Guaranteed",
            ),
            (
                pod_with(json!([res(
                    json!({"limits": {"cpu": "0.5", "memory": "1Gi"},
                                           "requests": {"cpu": "500m", "memory": "1024Mi"}})
                )])),
                "Guaranteed",
            ),
            (
                pod_with(json!([res(
                    json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}})
                )])),
                "Burstable",
            ),
            (
                pod_with(json!([res(json!({"limits": {"cpu": "1"}}))])),
                "Burstable",
            ),
            (
                json!({"spec": {"containers": [res(json!({"limits": {"cpu": "1", "memory": "1Gi"}}))],
                                "initContainers": [{"name": "i"}]}}),
                "Burstable",
            ),
            (
                pod_with(json!([
                    res(json!({"limits": {"cpu": 2, "memory": "2G"}})),
                    res(json!({"limits": {"cpu": "1", "memory": "1e9"}}))
                ])),
                "Guaranteed",
            ),
            (
                pod_with(json!([res(json!({"limits": "bogus"}))])),
                "BestEffort",
            ),
            (json!("not a pod"), "BestEffort"),
        ];
        for (pod, want) in cases {
            assert_eq!(pod_qos(&pod), want, "{pod}");
        }
    }

    #[test]
    fn initial_statuses() {
        let pod = pod_with(
            json!([{"name": "c", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]),
        );
        assert_eq!(
            initial_status("", "Pod", &pod),
            Some(json!({"phase": "Pending", "qosClass": "Guaranteed"}))
        );
        let gated =
            json!({"spec": {"containers": [{"name": "c"}], "schedulingGates": [{"name": "g"}]}});
        let cond = json!({"type": "PodScheduled", "status": "False", "lastProbeTime": null,
                          "lastTransitionTime": "2025-01-01T00:00:00Z", "reason": "SchedulingGated",
                          "message": "Scheduling is blocked due to non-empty scheduling gates"});
        assert_eq!(
            initial_status_at("", "Pod", &gated, "2025-01-01T00:00:00Z"),
            Some(json!({"phase": "Pending", "qosClass": "BestEffort", "conditions": [cond]}))
        );
        let none = json!({});
        let cases = [
            ("", "PersistentVolumeClaim", json!({"phase": "Pending"})),
            ("", "PersistentVolume", json!({"phase": "Pending"})),
            ("", "ReplicationController", json!({"replicas": 0})),
            ("apps", "Deployment", json!({})),
            ("apps", "ReplicaSet", json!({"replicas": 0})),
            (
                "apps",
                "StatefulSet",
                json!({"replicas": 0, "availableReplicas": 0}),
            ),
            (
                "apps",
                "DaemonSet",
                json!({"currentNumberScheduled": 0, "numberMisscheduled": 0,
                       "desiredNumberScheduled": 0, "numberReady": 0}),
            ),
            ("batch", "Job", json!({})),
            ("batch", "CronJob", json!({})),
            (
                "autoscaling",
                "HorizontalPodAutoscaler",
                json!({"currentMetrics": null, "desiredReplicas": 0}),
            ),
            (
                "policy",
                "PodDisruptionBudget",
                json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}),
            ),
            ("networking.k8s.io", "Ingress", json!({"loadBalancer": {}})),
        ];
        for (g, k, want) in cases {
            assert_eq!(initial_status(g, k, &none), Some(want), "{k}");
        }
        assert_eq!(
            initial_status_at("", "PersistentVolume", &none, "2025-01-01T00:00:00Z"),
            Some(json!({"phase": "Pending", "lastPhaseTransitionTime": "2025-01-01T00:00:00Z"}))
        );
        assert_eq!(
            initial_status(
                "autoscaling",
                "HorizontalPodAutoscaler",
                &json!({"apiVersion": "autoscaling/v1"})
            ),
            Some(json!({"currentReplicas": 0, "desiredReplicas": 0}))
        );
        for (g, k) in [
            ("", "Namespace"),
            ("", "Service"),
            ("", "ConfigMap"),
            ("", "Node"),
            ("rbac.authorization.k8s.io", "Role"),
        ] {
            assert_eq!(initial_status(g, k, &none), None, "{k}");
        }
    }

    #[test]
    fn quantities_parse_to_rounded_milli_units() {
        let cases = [
            ("1", Some(1000)),
            ("100m", Some(100)),
            ("0.5", Some(500)),
            ("1.5Gi", Some(1536 * 1024 * 1024 * 1000)),
            ("1Ki", Some(1_024_000)),
            ("1k", Some(1_000_000)),
            ("1e3", Some(1_000_000)),
            ("1E", Some(1_000_000_000_000_000_000_000)),
            ("1n", Some(1)),
            ("0.0001", Some(1)),
            ("+2", Some(2000)),
            ("-1", Some(-1000)),
            (".5", Some(500)),
            ("0", Some(0)),
            ("1e-3", Some(1)),
            ("", None),
            (".", None),
            ("abc", None),
            ("1.5.5", None),
            ("1e", None),
            ("1x", None),
            ("1 Gi", None),
            ("--1", None),
        ];
        for (s, want) in cases {
            assert_eq!(parse_quantity_milli(s), want, "{s}");
        }
        assert_eq!(
            parse_quantity_milli("9Ei9999999999999999999999999999999"),
            None
        );
        assert_eq!(parse_quantity_milli("1e999"), Some(i128::MAX));
        assert_eq!(parse_quantity_milli(&"9".repeat(60)), Some(i128::MAX));
        assert_eq!(quantity_milli(&json!(2)), Some(2000));
        assert_eq!(quantity_milli(&json!(null)), None);
    }

    #[test]
    fn pod_admission() {
        let mut pod = json!({"spec": {"containers": [{"name": "c"}]}});
        assert_eq!(admit_pod_create(&mut pod), Ok(()));
        assert_eq!(
            pod["spec"],
            json!({"containers": [{"name": "c"}], "serviceAccountName": "default", "serviceAccount": "default",
                   "priority": 0, "preemptionPolicy": "PreemptLowerPriority", "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            ]})
        );
        let again = pod.clone();
        assert_eq!(admit_pod_create(&mut pod), Ok(()));
        assert_eq!(pod, again);

        let mut tolerant =
            json!({"spec": {"tolerations": [{"operator": "Exists"}], "serviceAccountName": "sa"}});
        assert_eq!(admit_pod_create(&mut tolerant), Ok(()));
        assert_eq!(
            tolerant["spec"]["tolerations"],
            json!([{"operator": "Exists"}])
        );
        assert_eq!(tolerant["spec"]["serviceAccount"], "sa");

        let mut partial = json!({"spec": {"tolerations": [
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}]}});
        assert_eq!(admit_pod_create(&mut partial), Ok(()));
        assert_eq!(
            partial["spec"]["tolerations"][1]["key"],
            "node.kubernetes.io/not-ready"
        );
        assert_eq!(
            partial["spec"]["tolerations"].as_array().map(Vec::len),
            Some(2)
        );

        let mut bad = json!({"spec": {"priority": 2}});
        assert_eq!(
            admit_pod_create(&mut bad),
            Err("the integer value of priority (2) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name".to_string())
        );
        let mut bad = json!({"spec": {"preemptionPolicy": "Never"}});
        assert_eq!(
            admit_pod_create(&mut bad),
            Err("the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission controller computed PreemptLowerPriority from the given PriorityClass name".to_string())
        );
        let mut classed = json!({"spec": {"priorityClassName": "high"}});
        assert_eq!(admit_pod_create(&mut classed), Ok(()));
        assert!(classed["spec"].get("priority").is_none());
    }

    #[test]
    fn wrong_types_are_skipped() {
        let odd = json!({"spec": {
            "dnsPolicy": 3, "securityContext": "x", "terminationGracePeriodSeconds": "30",
            "containers": [7, {"name": "c", "image": 5, "ports": "80", "resources": [], "livenessProbe": {"timeoutSeconds": 0.0}}],
            "volumes": {"name": "v"}
        }});
        let pod = defaulted("", "v1", "Pod", odd);
        assert_eq!(pod["spec"]["dnsPolicy"], 3);
        assert_eq!(pod["spec"]["securityContext"], "x");
        assert_eq!(pod["spec"]["terminationGracePeriodSeconds"], "30");
        assert_eq!(pod["spec"]["containers"][0], 7);
        assert_eq!(pod["spec"]["containers"][1]["resources"], json!([]));
        assert_eq!(
            pod["spec"]["containers"][1]["imagePullPolicy"],
            "IfNotPresent"
        );
        assert_eq!(
            pod["spec"]["containers"][1]["livenessProbe"]["timeoutSeconds"],
            0.0
        );
        for kind in ["Deployment", "StatefulSet"] {
            assert_eq!(
                defaulted("apps", "v1", kind, json!({"spec": 1})),
                json!({"spec": 1})
            );
        }
        let mut not_object = json!([1, 2]);
        apply_defaults("", "v1", "Pod", &mut not_object);
        assert_eq!(not_object, json!([1, 2]));
    }

    /// Every (group, version, kind) the module defaults, plus a few it
    /// must leave alone.
    const KINDS: &[(&str, &str, &str)] = &[
        ("", "v1", "Pod"),
        ("", "v1", "PodTemplate"),
        ("", "v1", "ReplicationController"),
        ("", "v1", "PersistentVolumeClaim"),
        ("", "v1", "PersistentVolume"),
        ("", "v1", "Endpoints"),
        ("", "v1", "LimitRange"),
        ("", "v1", "Secret"),
        ("", "v1", "Node"),
        ("", "v1", "Service"),
        ("apps", "v1", "Deployment"),
        ("apps", "v1", "StatefulSet"),
        ("apps", "v1", "DaemonSet"),
        ("apps", "v1", "ReplicaSet"),
        ("batch", "v1", "Job"),
        ("batch", "v1", "CronJob"),
        ("autoscaling", "v2", "HorizontalPodAutoscaler"),
        ("autoscaling", "v1", "HorizontalPodAutoscaler"),
        ("networking.k8s.io", "v1", "NetworkPolicy"),
        ("networking.k8s.io", "v1", "IngressClass"),
        ("discovery.k8s.io", "v1", "EndpointSlice"),
        ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
        ("scheduling.k8s.io", "v1", "PriorityClass"),
        ("storage.k8s.io", "v1", "StorageClass"),
        ("storage.k8s.io", "v1", "CSIDriver"),
        (
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
        ),
        (
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicy",
        ),
        (
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicyBinding",
        ),
        ("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema"),
        (
            "flowcontrol.apiserver.k8s.io",
            "v1",
            "PriorityLevelConfiguration",
        ),
        ("policy", "v1", "PodDisruptionBudget"),
    ];

    /// Random JSON whose keys are the field names the defaulters look at,
    /// so random documents reach deep into the walk.
    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (-2i64..3).prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
            prop_oneof![
                Just("".to_string()),
                Just("RollingUpdate".to_string()),
                Just("Container".to_string()),
                Just("User".to_string()),
                Just("nginx:latest".to_string()),
                Just("1Gi".to_string()),
                Just("500m".to_string()),
                "[a-z0-9:./@-]{0,8}",
            ]
            .prop_map(Value::from),
        ];
        let keys = prop_oneof![
            Just("spec"),
            Just("metadata"),
            Just("labels"),
            Just("template"),
            Just("containers"),
            Just("initContainers"),
            Just("ephemeralContainers"),
            Just("volumes"),
            Just("resources"),
            Just("limits"),
            Just("requests"),
            Just("ports"),
            Just("env"),
            Just("valueFrom"),
            Just("fieldRef"),
            Just("livenessProbe"),
            Just("httpGet"),
            Just("grpc"),
            Just("lifecycle"),
            Just("preStop"),
            Just("hostNetwork"),
            Just("strategy"),
            Just("updateStrategy"),
            Just("rollingUpdate"),
            Just("type"),
            Just("selector"),
            Just("volumeClaimTemplates"),
            Just("status"),
            Just("capacity"),
            Just("allocatable"),
            Just("projected"),
            Just("sources"),
            Just("downwardAPI"),
            Just("items"),
            Just("secret"),
            Just("ephemeral"),
            Just("volumeClaimTemplate"),
            Just("limits"),
            Just("max"),
            Just("min"),
            Just("default"),
            Just("defaultRequest"),
            Just("subsets"),
            Just("behavior"),
            Just("scaleUp"),
            Just("scaleDown"),
            Just("policies"),
            Just("metrics"),
            Just("egress"),
            Just("ingress"),
            Just("endpoints"),
            Just("subjects"),
            Just("roleRef"),
            Just("webhooks"),
            Just("rules"),
            Just("clientConfig"),
            Just("service"),
            Just("jobTemplate"),
            Just("podFailurePolicy"),
            Just("onPodConditions"),
            Just("limited"),
            Just("limitResponse"),
            Just("queuing"),
            Just("matchConstraints"),
            Just("resourceRules"),
            Just("tolerations"),
            Just("image"),
            Just("schedulingGates"),
            Just("priority"),
            Just("name"),
            Just("kind"),
            Just("serviceAccount"),
            Just("serviceAccountName"),
            Just("completions"),
            Just("manualSelector"),
            Just("persistentVolumeClaimRetentionPolicy"),
        ]
        .prop_map(str::to_string);
        leaf.prop_recursive(6, 80, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(keys.clone(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// Well-formed objects of the defaulted kinds, which the shaped
    /// property test damages at random places: purely random documents
    /// rarely reach a container inside a template.
    fn skeletons() -> Vec<(usize, Value)> {
        let pod_spec = json!({
            "hostNetwork": true,
            "containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}],
                            "env": [{"name": "e", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}],
                            "resources": {"limits": {"cpu": "1"}, "requests": {"memory": "1Gi"}},
                            "livenessProbe": {"httpGet": {"port": 80}, "grpc": {"port": 1}},
                            "lifecycle": {"postStart": {"httpGet": {"port": 1}}}}],
            "initContainers": [{"name": "i", "image": "busybox"}],
            "volumes": [{"name": "a"}, {"name": "b", "projected": {"sources": [
                {"serviceAccountToken": {"path": "t"}}, {"downwardAPI": {"items": [{"fieldRef": {}}]}}]}},
                {"name": "c", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}, {"name": "d", "scaleIO": {}}],
            "tolerations": [{"key": "k"}], "schedulingGates": [{"name": "g"}], "serviceAccount": "s"
        });
        let template = json!({"metadata": {"labels": {"app": "a"}}, "spec": pod_spec});
        let index = |kind: &str| KINDS.iter().position(|(_, _, k)| *k == kind).unwrap_or(0);
        vec![
            (
                index("Pod"),
                json!({"metadata": {"name": "p"}, "spec": pod_spec}),
            ),
            (
                index("Deployment"),
                json!({"spec": {"strategy": {"rollingUpdate": {}}, "template": template}}),
            ),
            (
                index("DaemonSet"),
                json!({"spec": {"updateStrategy": {}, "template": template}}),
            ),
            (
                index("StatefulSet"),
                json!({"spec": {"updateStrategy": {}, "template": template,
                       "volumeClaimTemplates": [{"metadata": {"name": "d"}, "spec": {}}]}}),
            ),
            (
                index("ReplicationController"),
                json!({"spec": {"template": template}}),
            ),
            (
                index("Job"),
                json!({"metadata": {"name": "j"}, "spec": {"template": template,
                       "podFailurePolicy": {"rules": [{"onPodConditions": [{"type": "x"}]}]}}}),
            ),
            (
                index("CronJob"),
                json!({"spec": {"jobTemplate": {"spec": {"template": template}}}}),
            ),
            (
                index("LimitRange"),
                json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}, "min": {"memory": "1"}}]}}),
            ),
            (
                index("HorizontalPodAutoscaler"),
                json!({"spec": {"behavior": {"scaleUp": {"policies": []}, "scaleDown": {}}}}),
            ),
            (
                index("NetworkPolicy"),
                json!({"spec": {"ingress": [{"ports": [{}]}], "egress": [{"ports": [{}]}]}}),
            ),
            (
                index("EndpointSlice"),
                json!({"ports": [{}], "endpoints": [{}]}),
            ),
            (
                index("MutatingWebhookConfiguration"),
                json!({"webhooks": [{"rules": [{}], "clientConfig": {"service": {}}}]}),
            ),
            (
                index("PriorityLevelConfiguration"),
                json!({"spec": {"limited": {"limitResponse": {"queuing": {}}}, "exempt": {}}}),
            ),
            (index("Node"), json!({"status": {"capacity": {"cpu": "1"}}})),
            (
                index("PersistentVolume"),
                json!({"spec": {"rbd": {}, "azureDisk": {}, "hostPath": {}}}),
            ),
        ]
    }

    /// Replaces the node `sel` leads to with `val`: each step either stops
    /// (one time in four) or descends into the child `sel` picks.
    fn damage(v: &mut Value, mut sel: u64, val: Value) {
        let mut cur = v;
        loop {
            let n = match &*cur {
                Value::Object(m) => m.len(),
                Value::Array(a) => a.len(),
                _ => 0,
            };
            if n == 0 || sel.is_multiple_of(4) {
                *cur = val;
                return;
            }
            sel /= 4;
            let i = (sel % n as u64) as usize;
            sel /= n as u64;
            let next = match cur {
                Value::Object(m) => m.values_mut().nth(i),
                Value::Array(a) => a.get_mut(i),
                _ => None,
            };
            let Some(next) = next else {
                return;
            };
            cur = next;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn damaged_objects_default_idempotently(
            which in 0..15usize,
            hits in proptest::collection::vec((any::<u64>(), arb_json()), 0..4),
        ) {
            let all = skeletons();
            let Some((kind, skeleton)) = all.get(which % all.len()) else {
                return Ok(());
            };
            let (g, v, k) = KINDS[*kind];
            let mut obj = skeleton.clone();
            for (sel, val) in hits {
                damage(&mut obj, sel, val);
            }
            let _ = initial_status(g, k, &obj);
            let mut once = obj;
            apply_defaults(g, v, k, &mut once);
            let mut twice = once.clone();
            apply_defaults(g, v, k, &mut twice);
            prop_assert_eq!(&once, &twice);
            let mut admitted = once.clone();
            let _ = admit_pod_create(&mut admitted);
        }

        #[test]
        fn defaulting_never_panics_and_is_idempotent(obj in arb_json(), which in 0..KINDS.len()) {
            let (g, v, k) = KINDS[which];
            let mut once = obj;
            apply_defaults(g, v, k, &mut once);
            let mut twice = once.clone();
            apply_defaults(g, v, k, &mut twice);
            prop_assert_eq!(once, twice);
        }

        #[test]
        fn status_selector_and_admission_never_panic(obj in arb_json(), which in 0..KINDS.len()) {
            let (g, _, k) = KINDS[which];
            let _ = initial_status(g, k, &obj);
            let _ = initial_status_at(g, k, &obj, "2025-01-01T00:00:00Z");
            let _ = pod_qos(&obj);
            let mut job = obj.clone();
            job_generated_selector(&mut job, "uid");
            let once = job.clone();
            job_generated_selector(&mut job, "uid");
            prop_assert_eq!(once, job);
            let mut ds = obj.clone();
            daemon_set_template_generation(Some(&obj), &mut ds);
            daemon_set_template_generation(None, &mut ds);
            let mut pod = obj;
            if admit_pod_create(&mut pod).is_ok() {
                let once = pod.clone();
                prop_assert!(admit_pod_create(&mut pod).is_ok());
                prop_assert_eq!(once, pod);
            }
        }

        #[test]
        fn quantity_and_image_parsers_never_panic(s in any::<String>(), t in "[0-9.+-]{0,6}[a-zA-Z]{0,3}[0-9+-]{0,4}") {
            let _ = parse_quantity_milli(&s);
            let _ = parse_quantity_milli(&t);
            let _ = image_tag(&s);
        }
    }
}
