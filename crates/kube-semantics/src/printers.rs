//! Server-side printing: the `Table` columns and cells the API server
//! returns for `kubectl get` (and `-o wide`) of a built-in kind.
//!
//! The real server answers `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`
//! with the columns of the kind's printer and one row of cells per object,
//! always generated as for `-o wide` (kubectl hides the columns of priority
//! 1 unless asked for them). The printers here follow upstream's
//! `pkg/printers/internalversion/printers.go`, column for column and cell
//! for cell, including its value formatting (`<none>`, `<unset>`, `1/1`,
//! `a,b,c + 2 more...`, label selectors, human durations).
//!
//! Upstream prints the *internal* (defaulted, converted) object. Objects
//! here are the stored JSON of any served version, so the few defaults and
//! conversions that change a cell are applied on the way (noted where they
//! are): `Deployment.spec.replicas` defaults to 1, a Service without a type
//! is `ClusterIP`, `podIP` when set is the pod's first IP, and so on.
//! Quantities (capacities, quota amounts, HPA values) are printed as
//! stored: the real server stores them in canonical form, so a store that
//! does not canonicalize them shows them as written.
//!
//! The columns and cells follow the printers.go of the 1.32/1.33 era (with
//! the Job Status column, the Ingress Class column, the volume attributes
//! class columns and the ServiceAccount Secrets count, which was dropped
//! only after 1.34).
//!
//! APIService has the kube-aggregator's own table (Name, Service,
//! Available, Age), reproduced here too.
//!
//! Kinds without a printer (Role, ClusterRole, LimitRange, ...) are printed
//! by the server's default table convertor: `Name` and `Created At`
//! (RFC 3339); see [`default_columns`] and [`default_cells`].
//!
//! This module must NOT read the clock (`now` is a parameter), do I/O, or
//! panic on any input: a missing or ill-typed field prints as upstream
//! prints the zero value of that field.

use std::collections::BTreeSet;

use chrono::{DateTime, TimeZone, Utc};
use serde_json::{Map, Value};

use crate::names::{is_qualified_name, is_valid_label_value};

mod admission;
mod api_machinery;
mod apps_batch;
mod auth_coordination;
mod autoscaling;
mod columns;
mod core_v1;
mod fields;
mod networking;
mod storage_node;

use admission::*;
use api_machinery::*;
use apps_batch::*;
use auth_coordination::*;
use autoscaling::*;
use columns::*;
use core_v1::*;
pub use fields::*;
use networking::*;
use storage_node::*;

/// One column of a Table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    /// The header (kubectl upper-cases it).
    pub name: &'static str,
    /// The OpenAPI type of the cells: `string`, `integer`, `boolean`, `date`.
    pub type_: &'static str,
    /// `name` for the column holding the object's name, else empty.
    pub format: &'static str,
    /// What the column shows.
    pub description: &'static str,
    /// 0 for the normal output, 1 for columns shown only with `-o wide`.
    pub priority: u8,
}

const fn c(name: &'static str, type_: &'static str, description: &'static str) -> Column {
    Column {
        name,
        type_,
        format: "",
        description,
        priority: 0,
    }
}

const fn w(name: &'static str, type_: &'static str, description: &'static str) -> Column {
    Column {
        name,
        type_,
        format: "",
        description,
        priority: 1,
    }
}

// ---- Printer lookup and the cells every kind shares.

type CellsFn = fn(&Value, DateTime<Utc>) -> Vec<Value>;

/// The printer of a kind: its columns and the function making a row.
fn printer(group: &str, kind: &str) -> Option<(&'static [Column], CellsFn)> {
    let group = if group == "core" { "" } else { group };
    let found: (&'static [Column], CellsFn) = match (group, kind) {
        ("", "Pod") => (POD, pod),
        ("", "PodTemplate") => (POD_TEMPLATE, pod_template),
        ("", "ReplicationController") => (REPLICAS, replication_controller),
        ("", "Service") => (SERVICE, service),
        ("", "Endpoints") => (ENDPOINTS, endpoints),
        ("", "Node") => (NODE, node),
        ("", "Event") => (EVENT, core_event),
        ("", "Namespace") => (NAMESPACE, namespace),
        ("", "Secret") => (SECRET, secret),
        ("", "ServiceAccount") => (SERVICE_ACCOUNT, service_account),
        ("", "PersistentVolume") => (PV, persistent_volume),
        ("", "PersistentVolumeClaim") => (PVC, persistent_volume_claim),
        ("", "ComponentStatus") => (COMPONENT_STATUS, component_status),
        ("", "ConfigMap") => (CONFIG_MAP, config_map),
        ("", "ResourceQuota") => (RESOURCE_QUOTA, resource_quota),
        ("events.k8s.io", "Event") => (EVENT, events_event),
        ("policy", "PodDisruptionBudget") => (PDB, pod_disruption_budget),
        ("apps", "ReplicaSet") => (REPLICAS, replica_set),
        ("apps", "DaemonSet") => (DAEMON_SET, daemon_set),
        ("apps", "StatefulSet") => (STATEFUL_SET, stateful_set),
        ("apps", "Deployment") => (DEPLOYMENT, deployment),
        ("apps", "ControllerRevision") => (CONTROLLER_REVISION, controller_revision),
        ("batch", "Job") => (JOB, job),
        ("batch", "CronJob") => (CRON_JOB, cron_job),
        ("networking.k8s.io", "Ingress") => (INGRESS, ingress),
        ("networking.k8s.io", "IngressClass") => (INGRESS_CLASS, ingress_class),
        ("networking.k8s.io", "NetworkPolicy") => (NETWORK_POLICY, network_policy),
        ("networking.k8s.io", "ServiceCIDR") => (SERVICE_CIDR, service_cidr),
        ("networking.k8s.io", "IPAddress") => (IP_ADDRESS, ip_address),
        ("autoscaling", "HorizontalPodAutoscaler") => (HPA, horizontal_pod_autoscaler),
        ("autoscaling", "Scale") => (SCALE, scale),
        ("rbac.authorization.k8s.io", "RoleBinding") => (ROLE_BINDING, role_binding),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => (CLUSTER_ROLE_BINDING, role_binding),
        ("certificates.k8s.io", "CertificateSigningRequest") => (CSR, certificate_signing_request),
        ("certificates.k8s.io", "ClusterTrustBundle") => {
            (CLUSTER_TRUST_BUNDLE, cluster_trust_bundle)
        }
        ("coordination.k8s.io", "Lease") => (LEASE, lease),
        ("coordination.k8s.io", "LeaseCandidate") => (LEASE_CANDIDATE, lease_candidate),
        ("storage.k8s.io", "StorageClass") => (STORAGE_CLASS, storage_class),
        ("storage.k8s.io", "VolumeAttributesClass") => {
            (VOLUME_ATTRIBUTES_CLASS, volume_attributes_class)
        }
        ("storage.k8s.io", "VolumeAttachment") => (VOLUME_ATTACHMENT, volume_attachment),
        ("storage.k8s.io", "CSINode") => (CSI_NODE, csi_node),
        ("storage.k8s.io", "CSIDriver") => (CSI_DRIVER, csi_driver),
        ("storage.k8s.io", "CSIStorageCapacity") => (CSI_STORAGE_CAPACITY, csi_storage_capacity),
        ("scheduling.k8s.io", "PriorityClass") => (PRIORITY_CLASS, priority_class),
        ("node.k8s.io", "RuntimeClass") => (RUNTIME_CLASS, runtime_class),
        ("discovery.k8s.io", "EndpointSlice") => (ENDPOINT_SLICE, endpoint_slice),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration")
        | ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => {
            (WEBHOOK_CONFIGURATION, webhook_configuration)
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            (VALIDATING_ADMISSION_POLICY, validating_admission_policy)
        }
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicy") => {
            (MUTATING_ADMISSION_POLICY, mutating_admission_policy)
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding")
        | ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding") => {
            (ADMISSION_POLICY_BINDING, admission_policy_binding)
        }
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => (FLOW_SCHEMA, flow_schema),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => {
            (PRIORITY_LEVEL, priority_level_configuration)
        }
        ("internal.apiserver.k8s.io", "StorageVersion") => (STORAGE_VERSION, storage_version),
        ("resource.k8s.io", "DeviceClass") | ("resource.k8s.io", "ResourceClaimTemplate") => {
            (NAME_AGE, name_age)
        }
        ("resource.k8s.io", "ResourceClaim") => (RESOURCE_CLAIM, resource_claim),
        ("resource.k8s.io", "ResourceSlice") => (RESOURCE_SLICE, resource_slice),
        ("storagemigration.k8s.io", "StorageVersionMigration") => {
            (STORAGE_VERSION_MIGRATION, storage_version_migration)
        }
        ("apiregistration.k8s.io", "APIService") => (API_SERVICE, api_service),
        _ => return None,
    };
    Some(found)
}

/// The columns the server prints for a built-in kind, or `None` when it
/// has no printer: the server then uses its default table convertor
/// ([`default_columns`]: `Name`, `Created At`). `group` is the API group
/// (`""` or `"core"` for the core group), `kind` the kind in CamelCase.
///
/// Custom resources are not covered: their tables come from the CRD's
/// `additionalPrinterColumns` (by default `Name` and `Age`, a `date`
/// column holding the RFC 3339 creation timestamp).
pub fn columns(group: &str, kind: &str) -> Option<Vec<Column>> {
    printer(group, kind).map(|(columns, _)| columns.to_vec())
}

/// The columns of the server's default table convertor, used for built-in
/// kinds without a printer (Role, ClusterRole, LimitRange, ...):
/// `Name` and `Created At` (type `date`).
pub fn default_columns() -> Vec<Column> {
    DEFAULT.to_vec()
}

/// The cells of one object's row, in the order of [`columns`]: JSON
/// strings, integers and booleans as the server emits them. The row is the
/// wide one (the server always prints wide; kubectl drops the priority-1
/// columns). For a kind without a printer these are the cells of
/// [`default_cells`], matching [`default_columns`].
pub fn cells(group: &str, kind: &str, obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    match printer(group, kind) {
        Some((_, row)) => row(obj, now),
        None => default_cells(obj),
    }
}

/// The `conditions` of an object's Table row (`metav1.TableRowCondition`
/// as JSON). Only Pod rows have any: a pod whose phase is Succeeded or
/// Failed is marked `Completed`, which clients use to tell finished pods.
pub fn row_conditions(group: &str, kind: &str, obj: &Value) -> Vec<Value> {
    if !matches!(group, "" | "core") || kind != "Pod" {
        return Vec::new();
    }
    let (reason, message) = match st(obj, &["status", "phase"]) {
        "Succeeded" => ("Succeeded", "The pod has completed successfully."),
        "Failed" => ("Failed", "The pod failed."),
        _ => return Vec::new(),
    };
    vec![serde_json::json!({
        "type": "Completed",
        "status": "True",
        "reason": reason,
        "message": message,
    })]
}

/// The cells of the default table convertor: the name, and the creation
/// timestamp in UTC as RFC 3339 with whole seconds
/// (`0001-01-01T00:00:00Z`, Go's zero time, when there is none).
pub fn default_cells(obj: &Value) -> Vec<Value> {
    let created = time(obj, &["metadata", "creationTimestamp"])
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| "0001-01-01T00:00:00Z".to_string());
    vec![name(obj).into(), created.into()]
}

/// `translateTimestampSince`: `<unknown>` when the timestamp is missing,
/// unparseable or Go's zero time, else the time from it to `now` as
/// [`human_duration`] prints it.
pub fn age(ts: Option<&str>, now: DateTime<Utc>) -> String {
    since(ts.and_then(parse_time), now)
}

const SECOND: i64 = 1_000_000_000;
const MINUTE: i64 = 60 * SECOND;
const HOUR: i64 = 60 * MINUTE;

/// `duration.HumanDuration` of apimachinery over a Go `time.Duration`
/// (nanoseconds): about two significant figures ("45s", "5m30s", "3h",
/// "2d4h", "3y45d"); "0s" for up to two seconds in the future (clock skew),
/// `<invalid>` beyond.
pub fn human_duration(nanos: i64) -> String {
    let seconds = nanos / SECOND;
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    if seconds < 0 {
        return "0s".to_string();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = nanos / MINUTE;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = nanos / HOUR;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

#[cfg(test)]
mod tests;
