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

mod admission;
mod core_other_kinds;
mod image;
mod other_groups;
mod pods;
mod status;
mod workloads;

pub use admission::*;
use core_other_kinds::*;
use image::*;
use other_groups::*;
use pods::*;
pub use status::*;
pub use workloads::*;

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

#[cfg(test)]
mod tests;
