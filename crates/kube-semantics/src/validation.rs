//! The API server's validation of the kinds a sync controller copies most.
//!
//! [`validate`] answers what `kube-apiserver` v1.33 answers with a 422
//! `Invalid`: the list of field errors (`Status.details.causes`) for a
//! ConfigMap, Secret, ServiceAccount, Role, ClusterRole, RoleBinding,
//! ClusterRoleBinding, NetworkPolicy, Pod, PodTemplate, ReplicationController,
//! Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob,
//! HorizontalPodAutoscaler, Ingress, PersistentVolumeClaim,
//! PodDisruptionBudget, PriorityClass or StorageClass, plus the
//! generic `metadata` rules (annotations, finalizers, ownerReferences) every
//! kind goes through. [`summary`] builds the Status message around them.
//!
//! The input is the object as the server would store it after defaulting
//! (fields such as `restartPolicy`, `dnsPolicy`, `imagePullPolicy`,
//! `terminationMessagePolicy` and port `protocol` are expected to be filled
//! in; an absent one is reported `Required value`, as upstream reports an
//! empty one). JSON values of the wrong type are treated as absent: the real
//! server would have refused them while decoding, before validation.
//!
//! The field paths, reasons and messages are upstream's, byte for byte
//! (checked against `pkg/apis/core/validation`, `apps`, `rbac`,
//! `networking` and apimachinery's `util/validation`), quirks included:
//! `data[%s][username]` for basic-auth Secrets, `downwarAPI`/`cephFS` in
//! volume errors, owner-reference errors without an index, Go's `%#v` of a
//! selector or strategy as the invalid value. Where a text could not be
//! confirmed for v1.33 the item's doc comment says so. The order of the
//! errors follows upstream's checks, except that Go iterates maps in random
//! order and this module in document order.
//!
//! Covered: ObjectMeta annotations (keys, 256 KiB), finalizers,
//! ownerReferences; ConfigMap and Secret keys, sizes, Secret types and the
//! `immutable` rules; RBAC rules, aggregation, roleRef and subjects, roleRef
//! immutability; NetworkPolicy selectors, ports, peers, ipBlocks, policy
//! types; pod specs (containers and init containers: names, images, ports,
//! env, envFrom, volume mounts, pull and termination-message policies, host
//! port conflicts; volumes: names and exactly one source; restart and DNS
//! policies, node selector, service account and node names, deadlines,
//! hostname); Deployment, ReplicaSet, StatefulSet, DaemonSet selectors,
//! replicas, strategies and selector immutability, the StatefulSet update
//! rule; Job and CronJob restart policies and counters; ReplicationController;
//! HorizontalPodAutoscaler replica bounds, scaleTargetRef, metrics and
//! behavior; Ingress backends, hosts, paths and path types, TLS hosts and
//! secrets, class name; PersistentVolumeClaim access modes, selector, storage
//! request (presence and sign), class name, volume mode; PodDisruptionBudget
//! budgets, selector, eviction policy; PriorityClass value and preemption
//! policy (and their immutability); StorageClass provisioner, parameters keys,
//! reclaim policy, binding mode and update rules.
//!
//! Not covered (accepted here, possibly refused upstream): probes and
//! lifecycle handlers, security contexts, affinity, tolerations, topology
//! spread, resources (quantities are another module's), the details of each
//! volume source beyond its required name, Job fields beyond the counters
//! and restart policy, ServiceAccount secret references (upstream checks
//! none), `ValidateObjectMetaUpdate` (names, namespace, uid changes), the
//! HPA `scaleTargetRef.apiVersion` check, PVC update immutability and data
//! sources, StorageClass parameter sizes and allowed topologies.
//!
//! This module must NOT validate `metadata.name`, `metadata.namespace` or the
//! object's own labels (see [`crate::names`]), resource quantities (beyond the
//! sign checks some specs make on an already parsed value) or
//! requests-versus-limits, and must NOT do admission (quota, defaulting,
//! mutation): it only reads the object.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};

use serde_json::{Map, Value};

use crate::field_error::FieldError;
use crate::gofmt::{aggregate, quote};
use crate::names::{
    NameRule, is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value,
    is_valid_path_segment_name,
};

mod autoscaling;
mod config_and_secrets;
mod errors;
mod ingress;
mod json;
mod meta;
mod network_policy;
mod pods;
mod policy;
mod rbac;
mod scheduling;
mod selectors;
mod storage;
mod util;
mod workloads;

use autoscaling::*;
use config_and_secrets::*;
pub use errors::*;
use ingress::*;
use json::*;
use meta::*;
use network_policy::*;
use pods::*;
use policy::*;
use rbac::*;
use scheduling::*;
use selectors::*;
use storage::*;
pub use util::*;
use workloads::*;

/// Largest total size of a ConfigMap's or Secret's data (`core.MaxSecretSize`).
pub const MAX_DATA_SIZE: usize = 1024 * 1024;
/// Largest total size of an object's annotations, keys plus values
/// (apimachinery's `TotalAnnotationSizeLimitB`).
pub const MAX_ANNOTATIONS_SIZE: usize = 256 * 1024;

/// The RBAC API group, the only one a `roleRef` or a User/Group subject may name.
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
/// The message of every `field is immutable` error (`ValidateImmutableField`).
const IMMUTABLE: &str = "field is immutable";
/// `IsNegativeErrorMsg`.
const NEGATIVE: &str = "must be greater than or equal to 0";
/// The detail of `ConfigMap`/`Secret` changes after `immutable: true`.
const IMMUTABLE_WHEN_SET: &str = "field is immutable when `immutable` is set";
/// `validation.InclusiveRangeError(1, 65535)`.
const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";
/// The selector/template mismatch of every workload kind.
const SELECTOR_MISMATCH: &str = "`selector` does not match template `labels`";
/// The message of an invalid CIDR in a legacy (non-strict) field.
const CIDR_INVALID: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

// ---------------------------------------------------------------------------
// Entry point.

/// The field errors the API server reports when `obj` (of `group`/`kind`,
/// e.g. `("apps", "Deployment")`, `("", "ConfigMap")`) is created, or
/// updated from `old`. Empty: the server accepts it.
///
/// Kinds not listed in the module doc get only the generic `metadata`
/// rules. Never panics, whatever the JSON.
pub fn validate(group: &str, kind: &str, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let known = matches!(
        (group, kind),
        (
            "",
            "ConfigMap"
                | "Secret"
                | "ServiceAccount"
                | "Pod"
                | "PodTemplate"
                | "ReplicationController"
        ) | (
            "rbac.authorization.k8s.io",
            "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding"
        ) | ("networking.k8s.io", "NetworkPolicy")
            | (
                "apps",
                "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet"
            )
            | ("batch", "Job" | "CronJob")
            | ("autoscaling", "HorizontalPodAutoscaler")
            | ("networking.k8s.io", "Ingress")
            | ("", "PersistentVolumeClaim")
            | ("policy", "PodDisruptionBudget")
            | ("scheduling.k8s.io", "PriorityClass")
            | ("storage.k8s.io", "StorageClass")
    );
    // Core's ConfigMap and Secret updates check immutability before the
    // object itself; every other kind validates metadata first.
    if let (Some(old), "") = (old, group) {
        match kind {
            "ConfigMap" => validate_immutable_data(obj, old, &["data", "binaryData"], &mut errs),
            "Secret" => {
                let ty = opt_string(obj, "type").unwrap_or("Opaque");
                if ty != opt_string(old, "type").unwrap_or("Opaque") {
                    errs.push(invalid_str("type", ty, IMMUTABLE));
                }
                validate_immutable_data(obj, old, &["data"], &mut errs);
            }
            _ => {}
        }
    }
    validate_meta(obj, known, &mut errs);
    validate_kind(group, kind, obj, old, &mut errs);
    errs
}

fn validate_kind(
    group: &str,
    kind: &str,
    obj: &Value,
    old: Option<&Value>,
    errs: &mut Vec<FieldError>,
) {
    let spec = get(obj, "spec").unwrap_or(&Value::Null);
    match (group, kind) {
        ("", "ConfigMap") => validate_config_map(obj, errs),
        ("", "Secret") => validate_secret(obj, errs),
        ("", "Pod") => validate_pod_spec(spec, "spec", PodOpts { is_pod: true }, errs),
        ("", "PodTemplate") => {
            let template = get(obj, "template").unwrap_or(&Value::Null);
            validate_pod_template(template, "template", PodOpts { is_pod: false }, errs);
        }
        ("", "ReplicationController") => validate_replication_controller(obj, errs),
        ("rbac.authorization.k8s.io", "Role") => validate_policy_rules(obj, true, errs),
        ("rbac.authorization.k8s.io", "ClusterRole") => validate_cluster_role(obj, errs),
        ("rbac.authorization.k8s.io", "RoleBinding") => validate_binding(obj, old, true, errs),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => {
            validate_binding(obj, old, false, errs);
        }
        ("networking.k8s.io", "NetworkPolicy") => validate_network_policy(obj, errs),
        ("apps", "Deployment") => validate_workload(obj, old, Workload::Deployment, errs),
        ("apps", "ReplicaSet") => validate_workload(obj, old, Workload::ReplicaSet, errs),
        ("apps", "StatefulSet") => validate_workload(obj, old, Workload::StatefulSet, errs),
        ("apps", "DaemonSet") => validate_workload(obj, old, Workload::DaemonSet, errs),
        ("batch", "Job") => validate_job_spec(spec, "spec", errs),
        ("batch", "CronJob") => {
            let job = get(spec, "jobTemplate")
                .and_then(|t| get(t, "spec"))
                .unwrap_or(&Value::Null);
            validate_job_spec(job, "spec.jobTemplate.spec", errs);
        }
        ("autoscaling", "HorizontalPodAutoscaler") => validate_hpa(obj, old, errs),
        ("networking.k8s.io", "Ingress") => validate_ingress(obj, old.is_none(), errs),
        ("", "PersistentVolumeClaim") => validate_pvc(obj, errs),
        ("policy", "PodDisruptionBudget") => validate_pdb(obj, errs),
        ("scheduling.k8s.io", "PriorityClass") => validate_priority_class(obj, old, errs),
        ("storage.k8s.io", "StorageClass") => validate_storage_class(obj, old, errs),
        ("", "LimitRange") => errs.extend(crate::quantity_validation::validate_limit_range(obj)),
        ("", "ResourceQuota") => {
            errs.extend(crate::quantity_validation::validate_resource_quota(obj));
        }
        // ServiceAccount: upstream validates only its metadata.
        _ => {}
    }
}

#[cfg(test)]
mod tests;
