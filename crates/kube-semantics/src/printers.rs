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
//! is `ClusterIP`, `podIP` stands in for a missing `podIPs`, and so on.
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

const NAME: Column = Column {
    name: "Name",
    type_: "string",
    format: "name",
    description: "Name must be unique within a namespace.",
    priority: 0,
};
/// The Name column of the printers that do not mark it as the name column.
const PLAIN_NAME: Column = c("Name", "string", "Name must be unique within a namespace.");
const AGE: Column = c(
    "Age",
    "string",
    "Time since the object was created (creationTimestamp).",
);
const CONTAINERS: Column = w(
    "Containers",
    "string",
    "Names of each container in the template.",
);
const IMAGES: Column = w(
    "Images",
    "string",
    "Images referenced by each container in the template.",
);
const SELECTOR: Column = w("Selector", "string", "The label selector of the object.");

const POD: &[Column] = &[
    NAME,
    c(
        "Ready",
        "string",
        "The aggregate readiness state of this pod for accepting traffic.",
    ),
    c(
        "Status",
        "string",
        "The aggregate status of the containers in this pod.",
    ),
    c(
        "Restarts",
        "string",
        "Container restarts in this pod, and when the last one was.",
    ),
    AGE,
    w("IP", "string", "The pod's IP address."),
    w("Node", "string", "The node the pod is scheduled to."),
    w(
        "Nominated Node",
        "string",
        "The node the scheduler nominated for preemption.",
    ),
    w(
        "Readiness Gates",
        "string",
        "Readiness gates whose condition is True, of all.",
    ),
];
const POD_TEMPLATE: &[Column] = &[
    NAME,
    c(
        "Containers",
        "string",
        "Names of each container in the template.",
    ),
    c(
        "Images",
        "string",
        "Images referenced by each container in the template.",
    ),
    c("Pod Labels", "string", "The labels for the pod template."),
];
const PDB: &[Column] = &[
    NAME,
    c(
        "Min Available",
        "string",
        "The minimum number of pods that must be available.",
    ),
    c(
        "Max Unavailable",
        "string",
        "The maximum number of pods that may be unavailable.",
    ),
    c(
        "Allowed Disruptions",
        "integer",
        "Calculated number of pods that may be disrupted at this time.",
    ),
    AGE,
];
const REPLICAS: &[Column] = &[
    NAME,
    c("Desired", "integer", "The number of desired replicas."),
    c("Current", "integer", "The number of current replicas."),
    c("Ready", "integer", "The number of ready replicas."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];
const DAEMON_SET: &[Column] = &[
    NAME,
    c(
        "Desired",
        "integer",
        "Nodes that should run the daemon pod.",
    ),
    c(
        "Current",
        "integer",
        "Nodes running at least one daemon pod that should.",
    ),
    c("Ready", "integer", "Nodes whose daemon pod is ready."),
    c(
        "Up-to-date",
        "integer",
        "Nodes running the updated daemon pod.",
    ),
    c(
        "Available",
        "integer",
        "Nodes whose daemon pod is available.",
    ),
    c(
        "Node Selector",
        "string",
        "The node selector of the pod template.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];
const JOB: &[Column] = &[
    NAME,
    c("Status", "string", "Status of the job."),
    c(
        "Completions",
        "string",
        "Succeeded pods of the completions wanted.",
    ),
    c("Duration", "string", "Time required to complete the job."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];
const CRON_JOB: &[Column] = &[
    NAME,
    c("Schedule", "string", "The schedule in Cron format."),
    c("Timezone", "string", "The time zone of the schedule."),
    c(
        "Suspend",
        "boolean",
        "Whether subsequent executions are suspended.",
    ),
    c("Active", "integer", "The number of running jobs."),
    c(
        "Last Schedule",
        "string",
        "When the job was last scheduled.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];
const SERVICE: &[Column] = &[
    NAME,
    c("Type", "string", "How the service is exposed."),
    c(
        "Cluster-IP",
        "string",
        "The IP address of the service in the cluster.",
    ),
    c(
        "External-IP",
        "string",
        "External addresses of the service.",
    ),
    c("Port(s)", "string", "The ports the service exposes."),
    AGE,
    w(
        "Selector",
        "string",
        "The pod label selector of the service.",
    ),
];
const INGRESS: &[Column] = &[
    NAME,
    c(
        "Class",
        "string",
        "The name of the IngressClass resource that should be used for additional configuration",
    ),
    c(
        "Hosts",
        "string",
        "Hosts that incoming requests are matched against before the ingress rule",
    ),
    c(
        "Address",
        "string",
        "Address is a list containing ingress points for the load-balancer",
    ),
    c("Ports", "string", "Ports of TLS configurations that open"),
    AGE,
];
const INGRESS_CLASS: &[Column] = &[
    NAME,
    c(
        "Controller",
        "string",
        "Controller that is responsible for handling this class",
    ),
    c(
        "Parameters",
        "string",
        "A reference to a resource with additional parameters",
    ),
    AGE,
];
const STATEFUL_SET: &[Column] = &[
    NAME,
    c("Ready", "string", "Number of the pod with ready state"),
    AGE,
    CONTAINERS,
    IMAGES,
];
const ENDPOINTS: &[Column] = &[
    NAME,
    c(
        "Endpoints",
        "string",
        "The addresses and ports of the endpoints.",
    ),
    AGE,
];
const NODE: &[Column] = &[
    NAME,
    c("Status", "string", "The status of the node"),
    c("Roles", "string", "The roles of the node"),
    AGE,
    c("Version", "string", "The kubelet version of the node."),
    w(
        "Internal-IP",
        "string",
        "The first internal IP address of the node.",
    ),
    w(
        "External-IP",
        "string",
        "The first external IP address of the node.",
    ),
    w("OS-Image", "string", "The OS image of the node."),
    w(
        "Kernel-Version",
        "string",
        "The kernel version of the node.",
    ),
    w(
        "Container-Runtime",
        "string",
        "The container runtime version of the node.",
    ),
];
const EVENT: &[Column] = &[
    c(
        "Last Seen",
        "string",
        "Time since the event was last recorded.",
    ),
    c("Type", "string", "Type of this event (Normal, Warning)."),
    c("Reason", "string", "Why the action was taken."),
    c("Object", "string", "The object this event is about."),
    w(
        "Subobject",
        "string",
        "The part of the object the event is about (fieldPath).",
    ),
    w("Source", "string", "The component reporting this event."),
    c(
        "Message",
        "string",
        "A human-readable description of the event.",
    ),
    w(
        "First Seen",
        "string",
        "Time since the event was first recorded.",
    ),
    w(
        "Count",
        "string",
        "The number of times this event has occurred.",
    ),
    Column {
        name: "Name",
        type_: "string",
        format: "name",
        description: "Name must be unique within a namespace.",
        priority: 1,
    },
];
const NAMESPACE: &[Column] = &[
    NAME,
    c("Status", "string", "The status of the namespace"),
    AGE,
];
const SECRET: &[Column] = &[
    NAME,
    c("Type", "string", "The type of the secret."),
    c("Data", "string", "The number of data items."),
    AGE,
];
const SERVICE_ACCOUNT: &[Column] = &[
    NAME,
    c(
        "Secrets",
        "string",
        "The number of secrets listed in the service account.",
    ),
    AGE,
];
const PV: &[Column] = &[
    NAME,
    c("Capacity", "string", "The storage capacity of the volume."),
    c(
        "Access Modes",
        "string",
        "The ways the volume can be mounted.",
    ),
    c(
        "Reclaim Policy",
        "string",
        "What happens to the volume when released from its claim.",
    ),
    c("Status", "string", "The phase of the volume."),
    c("Claim", "string", "The claim bound to the volume."),
    c("StorageClass", "string", "StorageClass of the pv"),
    c(
        "VolumeAttributesClass",
        "string",
        "VolumeAttributesClass of the pv",
    ),
    c("Reason", "string", "Why the volume is in this phase."),
    AGE,
    w(
        "VolumeMode",
        "string",
        "Whether the volume is a filesystem or a block device.",
    ),
];
const PVC: &[Column] = &[
    NAME,
    c("Status", "string", "The phase of the claim."),
    c("Volume", "string", "The volume bound to the claim."),
    c("Capacity", "string", "The capacity of the bound volume."),
    c(
        "Access Modes",
        "string",
        "The access modes of the bound volume.",
    ),
    c("StorageClass", "string", "StorageClass of the pvc"),
    c(
        "VolumeAttributesClass",
        "string",
        "VolumeAttributesClass of the pvc",
    ),
    AGE,
    w(
        "VolumeMode",
        "string",
        "Whether the claim is for a filesystem or a block device.",
    ),
];
const COMPONENT_STATUS: &[Column] = &[
    NAME,
    c("Status", "string", "Status of the component conditions"),
    c("Message", "string", "Message of the component conditions"),
    c("Error", "string", "Error of the component conditions"),
];
const DEPLOYMENT: &[Column] = &[
    NAME,
    c("Ready", "string", "Number of the pod with ready state"),
    c(
        "Up-to-date",
        "string",
        "Replicas with the desired template.",
    ),
    c("Available", "string", "Replicas available to users."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];
const HPA: &[Column] = &[
    NAME,
    c("Reference", "string", "The scaled object."),
    c(
        "Targets",
        "string",
        "Current and target values of the metrics.",
    ),
    c("MinPods", "string", "The lower limit of replicas."),
    c("MaxPods", "string", "The upper limit of replicas."),
    c("Replicas", "string", "The current number of replicas."),
    AGE,
];
const CONFIG_MAP: &[Column] = &[NAME, c("Data", "string", "The number of data items."), AGE];
const NETWORK_POLICY: &[Column] = &[
    NAME,
    c("Pod-Selector", "string", "The pods the policy applies to."),
    AGE,
];
const ROLE_BINDING: &[Column] = &[
    NAME,
    c("Role", "string", "The role referenced by the binding."),
    AGE,
    w("Users", "string", "Users in the roleBinding"),
    w("Groups", "string", "Groups in the roleBinding"),
    w(
        "ServiceAccounts",
        "string",
        "ServiceAccounts in the roleBinding",
    ),
];
const CLUSTER_ROLE_BINDING: &[Column] = &[
    NAME,
    c("Role", "string", "The role referenced by the binding."),
    AGE,
    w("Users", "string", "Users in the clusterRoleBinding"),
    w("Groups", "string", "Groups in the clusterRoleBinding"),
    w(
        "ServiceAccounts",
        "string",
        "ServiceAccounts in the clusterRoleBinding",
    ),
];
const CSR: &[Column] = &[
    NAME,
    AGE,
    c(
        "SignerName",
        "string",
        "The signer asked to sign the certificate.",
    ),
    c("Requestor", "string", "The user that created the request."),
    c(
        "RequestedDuration",
        "string",
        "The requested validity of the certificate.",
    ),
    c("Condition", "string", "Approval state of the request."),
];
const CLUSTER_TRUST_BUNDLE: &[Column] = &[
    NAME,
    c(
        "SignerName",
        "string",
        "The signer the trust anchors belong to.",
    ),
];
const LEASE: &[Column] = &[NAME, c("Holder", "string", "The holder of the lease."), AGE];
const LEASE_CANDIDATE: &[Column] = &[
    NAME,
    c("LeaseName", "string", "The lease the candidate runs for."),
    c(
        "BinaryVersion",
        "string",
        "The binary version of the candidate.",
    ),
    c(
        "EmulationVersion",
        "string",
        "The emulation version of the candidate.",
    ),
    AGE,
];
const STORAGE_CLASS: &[Column] = &[
    NAME,
    c("Provisioner", "string", "The provisioner of the volumes."),
    c(
        "ReclaimPolicy",
        "string",
        "The reclaim policy of the provisioned volumes.",
    ),
    c(
        "VolumeBindingMode",
        "string",
        "When volumes are bound and provisioned.",
    ),
    c(
        "AllowVolumeExpansion",
        "string",
        "Whether volumes may be expanded.",
    ),
    AGE,
];
const VOLUME_ATTRIBUTES_CLASS: &[Column] = &[
    NAME,
    c("DriverName", "string", "The CSI driver of the class."),
    AGE,
];
const CONTROLLER_REVISION: &[Column] = &[
    NAME,
    c("Controller", "string", "Controller of the object"),
    c("Revision", "string", "The revision of the state."),
    AGE,
];
const RESOURCE_QUOTA: &[Column] = &[
    NAME,
    c(
        "Request",
        "string",
        "Request represents a minimum amount of cpu/memory that a container may consume.",
    ),
    c(
        "Limit",
        "string",
        "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
    ),
    AGE,
];
const PRIORITY_CLASS: &[Column] = &[
    NAME,
    c("Value", "integer", "The priority of pods of this class."),
    c(
        "Global-Default",
        "boolean",
        "Whether this is the class of pods without one.",
    ),
    AGE,
    c(
        "PreemptionPolicy",
        "string",
        "Whether pods of this class may preempt others.",
    ),
];
const RUNTIME_CLASS: &[Column] = &[
    NAME,
    c("Handler", "string", "The CRI handler of the class."),
    AGE,
];
const VOLUME_ATTACHMENT: &[Column] = &[
    NAME,
    Column {
        name: "Attacher",
        type_: "string",
        format: "name",
        description: "The volume driver that handles the attachment.",
        priority: 0,
    },
    c("PV", "string", "The persistent volume attached."),
    c("Node", "string", "The node the volume is attached to."),
    c("Attached", "boolean", "Whether the volume is attached."),
    AGE,
];
const ENDPOINT_SLICE: &[Column] = &[
    NAME,
    c("AddressType", "string", "The type of the addresses."),
    c("Ports", "string", "The ports of the slice."),
    c("Endpoints", "string", "The addresses of the endpoints."),
    AGE,
];
const CSI_NODE: &[Column] = &[
    NAME,
    c(
        "Drivers",
        "integer",
        "Drivers indicates the number of CSI drivers registered on the node",
    ),
    AGE,
];
const CSI_DRIVER: &[Column] = &[
    NAME,
    c(
        "AttachRequired",
        "boolean",
        "Whether volumes need an attach operation.",
    ),
    c(
        "PodInfoOnMount",
        "boolean",
        "Whether pod information is passed on mount.",
    ),
    c(
        "StorageCapacity",
        "boolean",
        "Whether the driver reports storage capacity.",
    ),
    c(
        "TokenRequests",
        "string",
        "Audiences of the service account tokens passed.",
    ),
    c(
        "RequiresRepublish",
        "boolean",
        "Whether volumes are periodically republished.",
    ),
    c("Modes", "string", "The volume lifecycle modes supported."),
    AGE,
];
const CSI_STORAGE_CAPACITY: &[Column] = &[
    NAME,
    c(
        "StorageClassName",
        "string",
        "The storage class of the capacity.",
    ),
    c("Capacity", "string", "The capacity available."),
];
const WEBHOOK_CONFIGURATION: &[Column] = &[
    NAME,
    c(
        "Webhooks",
        "integer",
        "Webhooks indicates the number of webhooks registered in this configuration",
    ),
    AGE,
];
const VALIDATING_ADMISSION_POLICY: &[Column] = &[
    NAME,
    c(
        "Validations",
        "integer",
        "Validations indicates the number of validation rules defined in this configuration",
    ),
    c(
        "ParamKind",
        "string",
        "ParamKind specifies the kind of resources used to parameterize this policy",
    ),
    AGE,
];
const MUTATING_ADMISSION_POLICY: &[Column] = &[
    NAME,
    c(
        "Mutations",
        "integer",
        "Mutation indicates the number of mutations rules defined in this configuration",
    ),
    c(
        "ParamKind",
        "string",
        "ParamKind specifies the kind of resources used to parameterize this policy",
    ),
    AGE,
];
const ADMISSION_POLICY_BINDING: &[Column] = &[
    NAME,
    c(
        "PolicyName",
        "string",
        "PolicyName indicates the policy definition which the policy binding binded to",
    ),
    c(
        "ParamRef",
        "string",
        "ParamRef indicates the param resource which sets the configration param",
    ),
    AGE,
];
const FLOW_SCHEMA: &[Column] = &[
    NAME,
    c(
        "PriorityLevel",
        "string",
        "The priority level the matching requests go to.",
    ),
    c("MatchingPrecedence", "string", "Lower values match first."),
    c(
        "DistinguisherMethod",
        "string",
        "How requests are split into flows.",
    ),
    AGE,
    c(
        "MissingPL",
        "string",
        "references a broken or non-existent PriorityLevelConfiguration",
    ),
];
const PRIORITY_LEVEL: &[Column] = &[
    NAME,
    c("Type", "string", "Exempt or Limited."),
    c(
        "NominalConcurrencyShares",
        "string",
        "The share of the server's concurrency.",
    ),
    c("Queues", "string", "The number of queues."),
    c(
        "HandSize",
        "string",
        "The number of queues a flow is dealt.",
    ),
    c(
        "QueueLengthLimit",
        "string",
        "The requests a queue may hold.",
    ),
    AGE,
];
const STORAGE_VERSION: &[Column] = &[
    NAME,
    c(
        "CommonEncodingVersion",
        "string",
        "The version all API servers encode in, if they agree.",
    ),
    c(
        "StorageVersions",
        "string",
        "The encoding version of each API server.",
    ),
    AGE,
];
const SCALE: &[Column] = &[
    PLAIN_NAME,
    c("Desired", "integer", "The desired number of replicas."),
    c("Available", "integer", "The actual number of replicas."),
    AGE,
];
const NAME_AGE: &[Column] = &[NAME, AGE];
const RESOURCE_CLAIM: &[Column] = &[
    NAME,
    c(
        "State",
        "string",
        "A summary of the current state (allocated, pending, reserved, etc.).",
    ),
    AGE,
];
const RESOURCE_SLICE: &[Column] = &[
    NAME,
    c("Node", "string", "The node providing the resources."),
    c("Driver", "string", "The driver providing the resources."),
    c("Pool", "string", "The pool of the resources."),
    AGE,
];
const SERVICE_CIDR: &[Column] = &[
    NAME,
    c("CIDRs", "string", "The ranges of the service IPs."),
    AGE,
];
const IP_ADDRESS: &[Column] = &[
    NAME,
    c("ParentRef", "string", "The object the address belongs to."),
];
const STORAGE_VERSION_MIGRATION: &[Column] = &[
    PLAIN_NAME,
    c("Resource", "string", "Fully qualified resource to migrate"),
];
const DEFAULT: &[Column] = &[
    NAME,
    c(
        "Created At",
        "date",
        "CreationTimestamp is a timestamp representing the server time when this object was created.",
    ),
];

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

// ---- JSON access: a missing or ill-typed field reads as Go's zero value.

fn get<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut cur = v;
    for key in path {
        cur = cur.as_object()?.get(*key)?;
    }
    Some(cur)
}

fn st<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    get(v, path).and_then(Value::as_str).unwrap_or("")
}

fn ost<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    get(v, path).and_then(Value::as_str)
}

fn int(v: &Value, path: &[&str]) -> i64 {
    oint(v, path).unwrap_or(0)
}

fn oint(v: &Value, path: &[&str]) -> Option<i64> {
    get(v, path).and_then(Value::as_i64)
}

fn boolean(v: &Value, path: &[&str]) -> Option<bool> {
    get(v, path).and_then(Value::as_bool)
}

fn arr<'a>(v: &'a Value, path: &[&str]) -> &'a [Value] {
    get(v, path)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn map<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Map<String, Value>> {
    get(v, path).and_then(Value::as_object)
}

/// A pointer to a struct in Go: set when the field holds an object.
fn present<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    get(v, path).filter(|v| v.is_object())
}

fn len_of(v: &Value, path: &[&str]) -> i64 {
    match get(v, path) {
        Some(Value::Array(a)) => a.len() as i64,
        Some(Value::Object(m)) => m.len() as i64,
        _ => 0,
    }
}

fn name(o: &Value) -> &str {
    st(o, &["metadata", "name"])
}

fn deleting(o: &Value) -> bool {
    get(o, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null())
}

fn zero_time() -> Option<DateTime<Utc>> {
    Utc.with_ymd_and_hms(1, 1, 1, 0, 0, 0).single()
}

/// An RFC 3339 timestamp; `None` for Go's zero time too, which upstream
/// prints as unknown.
fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    let t = DateTime::parse_from_rfc3339(s).ok()?.with_timezone(&Utc);
    if Some(t) == zero_time() {
        None
    } else {
        Some(t)
    }
}

fn time(v: &Value, path: &[&str]) -> Option<DateTime<Utc>> {
    ost(v, path).and_then(parse_time)
}

/// Nanoseconds from `from` to `to`, saturating like Go's `Time.Sub`.
fn nanos_between(from: DateTime<Utc>, to: DateTime<Utc>) -> i64 {
    let d = to.signed_duration_since(from);
    d.num_nanoseconds()
        .unwrap_or(if d < chrono::TimeDelta::zero() {
            i64::MIN
        } else {
            i64::MAX
        })
}

fn since(t: Option<DateTime<Utc>>, now: DateTime<Utc>) -> String {
    match t {
        None => "<unknown>".to_string(),
        Some(t) => human_duration(nanos_between(t, now)),
    }
}

fn created(o: &Value, now: DateTime<Utc>) -> Value {
    since(time(o, &["metadata", "creationTimestamp"]), now).into()
}

/// Keeps the later of two times, as `if last.Before(&t) { last = t }`.
fn keep_later(last: &mut Option<DateTime<Utc>>, t: Option<DateTime<Utc>>) {
    if let Some(t) = t
        && last.is_none_or(|l| l < t)
    {
        *last = Some(t);
    }
}

/// `Quantity.String()` of a stored quantity. Stored quantities are taken
/// as already canonical (the real server re-serializes them canonically);
/// a missing one is the zero quantity, "0".
fn quantity(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "0".to_string(),
    }
}

/// `labels.FormatLabels`: `k=v` sorted by key, comma separated; `<none>`.
fn format_labels(m: Option<&Map<String, Value>>) -> String {
    let mut pairs: Vec<(&str, &str)> = m
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    pairs.sort();
    let s = pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    if s.is_empty() {
        "<none>".to_string()
    } else {
        s
    }
}

/// `metav1.LabelSelectorAsSelector(..).String()`: `Err` where upstream
/// fails to build the selector (bad operator, key or value, wrong number of
/// values); an empty string for a missing or empty selector.
fn selector_string(sel: Option<&Value>) -> Result<String, ()> {
    let Some(sel) = sel.and_then(Value::as_object) else {
        return Ok(String::new());
    };
    let mut reqs: Vec<(String, String)> = Vec::new();
    if let Some(labels) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in labels {
            let v = v.as_str().unwrap_or("");
            if !is_qualified_name(k).is_empty() || !is_valid_label_value(v).is_empty() {
                return Err(());
            }
            reqs.push((k.clone(), format!("{k}={v}")));
        }
    }
    for expr in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
    {
        let key = st(expr, &["key"]);
        let mut values: Vec<&str> = arr(expr, &["values"])
            .iter()
            .map(|v| v.as_str().unwrap_or(""))
            .collect();
        if !is_qualified_name(key).is_empty()
            || values.iter().any(|v| !is_valid_label_value(v).is_empty())
        {
            return Err(());
        }
        values.sort_unstable();
        let text = match st(expr, &["operator"]) {
            "In" | "NotIn" if values.is_empty() => return Err(()),
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" | "DoesNotExist" if !values.is_empty() => return Err(()),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => return Err(()),
        };
        reqs.push((key.to_string(), text));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(reqs
        .into_iter()
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join(","))
}

/// `metav1.FormatLabelSelector`: `<none>` when empty, `<error>` when invalid.
fn format_label_selector(sel: Option<&Value>) -> String {
    match selector_string(sel) {
        Ok(s) if s.is_empty() => "<none>".to_string(),
        Ok(s) => s,
        Err(()) => "<error>".to_string(),
    }
}

/// Container names and images, each joined with commas.
fn layout_containers(containers: &[Value]) -> (String, String) {
    let names: Vec<&str> = containers.iter().map(|c| st(c, &["name"])).collect();
    let images: Vec<&str> = containers.iter().map(|c| st(c, &["image"])).collect();
    (names.join(","), images.join(","))
}

fn wide_containers(cells: &mut Vec<Value>, containers: &[Value]) {
    let (names, images) = layout_containers(containers);
    cells.push(names.into());
    cells.push(images.into());
}

/// Up to `max` items joined with commas, then ` + N more...`; `<unset>`
/// when there are none.
fn list_with_more(list: &[String], total: usize, max: usize) -> String {
    let shown = list.iter().take(max).cloned().collect::<Vec<_>>().join(",");
    if total > max {
        return format!("{shown} + {} more...", total - max);
    }
    if shown.is_empty() {
        "<unset>".to_string()
    } else {
        shown
    }
}

fn bool_text(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// `IntOrString.String()`, or `N/A` when unset.
fn int_or_string(v: Option<&Value>) -> String {
    match v {
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) => s.clone(),
        _ => "N/A".to_string(),
    }
}

fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// The first condition of `type_` decides (status "True").
fn condition_true(conditions: &[Value], type_: &str) -> bool {
    conditions
        .iter()
        .find(|c| st(c, &["type"]) == type_)
        .is_some_and(|c| st(c, &["status"]) == "True")
}

// ---- core

fn pod(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let status = get(o, &["status"]).unwrap_or(&Value::Null);
    let init_specs = arr(o, &["spec", "initContainers"]);
    // A sidecar is an init container that restarts always; a status whose
    // name has no spec is not one (the last spec of a name wins, as in a map).
    let sidecar = |name: &str| {
        init_specs
            .iter()
            .rev()
            .find(|c| st(c, &["name"]) == name)
            .is_some_and(|c| st(c, &["restartPolicy"]) == "Always")
    };
    let total = arr(o, &["spec", "containers"]).len()
        + init_specs
            .iter()
            .filter(|c| st(c, &["restartPolicy"]) == "Always")
            .count();
    let mut ready = 0usize;
    let phase = st(status, &["phase"]);
    let mut reason = match st(status, &["reason"]) {
        "" => phase.to_string(),
        r => r.to_string(),
    };
    let conditions = arr(status, &["conditions"]);
    if conditions
        .iter()
        .any(|c| st(c, &["type"]) == "PodScheduled" && st(c, &["reason"]) == "SchedulingGated")
    {
        reason = "SchedulingGated".to_string();
    }

    let mut restarts = 0i64;
    let mut sidecar_restarts = 0i64;
    let mut last_restart = None;
    let mut last_sidecar_restart = None;
    let mut initializing = false;
    for (i, cs) in arr(status, &["initContainerStatuses"]).iter().enumerate() {
        let count = int(cs, &["restartCount"]);
        let finished =
            present(cs, &["lastState", "terminated"]).and_then(|t| time(t, &["finishedAt"]));
        restarts = restarts.saturating_add(count);
        keep_later(&mut last_restart, finished);
        let is_sidecar = sidecar(st(cs, &["name"]));
        if is_sidecar {
            sidecar_restarts = sidecar_restarts.saturating_add(count);
            keep_later(&mut last_sidecar_restart, finished);
        }
        let terminated = present(cs, &["state", "terminated"]);
        let waiting = present(cs, &["state", "waiting"]);
        if terminated.is_some_and(|t| int(t, &["exitCode"]) == 0) {
            continue;
        }
        if is_sidecar && boolean(cs, &["started"]) == Some(true) {
            if boolean(cs, &["ready"]) == Some(true) {
                ready += 1;
            }
            continue;
        }
        reason = if let Some(t) = terminated {
            match st(t, &["reason"]) {
                "" if int(t, &["signal"]) != 0 => format!("Init:Signal:{}", int(t, &["signal"])),
                "" => format!("Init:ExitCode:{}", int(t, &["exitCode"])),
                r => format!("Init:{r}"),
            }
        } else if let Some(r) = waiting
            .map(|w| st(w, &["reason"]))
            .filter(|r| !r.is_empty() && *r != "PodInitializing")
        {
            format!("Init:{r}")
        } else {
            format!("Init:{i}/{}", init_specs.len())
        };
        initializing = true;
        break;
    }

    if !initializing || condition_true(conditions, "Initialized") {
        restarts = sidecar_restarts;
        last_restart = last_sidecar_restart;
        let mut has_running = false;
        // Walked backwards so that the first container's state is the one
        // left in `reason`.
        for cs in arr(status, &["containerStatuses"]).iter().rev() {
            restarts = restarts.saturating_add(int(cs, &["restartCount"]));
            keep_later(
                &mut last_restart,
                present(cs, &["lastState", "terminated"]).and_then(|t| time(t, &["finishedAt"])),
            );
            let waiting = present(cs, &["state", "waiting"]);
            let terminated = present(cs, &["state", "terminated"]);
            if let Some(r) = waiting
                .map(|w| st(w, &["reason"]))
                .filter(|r| !r.is_empty())
            {
                reason = r.to_string();
            } else if let Some(t) = terminated {
                reason = match st(t, &["reason"]) {
                    "" if int(t, &["signal"]) != 0 => format!("Signal:{}", int(t, &["signal"])),
                    "" => format!("ExitCode:{}", int(t, &["exitCode"])),
                    r => r.to_string(),
                };
            } else if boolean(cs, &["ready"]) == Some(true)
                && present(cs, &["state", "running"]).is_some()
            {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            let pod_ready = conditions
                .iter()
                .any(|c| st(c, &["type"]) == "Ready" && st(c, &["status"]) == "True");
            reason = if pod_ready { "Running" } else { "NotReady" }.to_string();
        }
    }

    if deleting(o) && st(status, &["reason"]) == "NodeLost" {
        reason = "Unknown".to_string();
    } else if deleting(o) && phase != "Failed" && phase != "Succeeded" {
        reason = "Terminating".to_string();
    }

    let restarts_text = match last_restart {
        Some(_) if restarts != 0 => format!("{restarts} ({} ago)", since(last_restart, now)),
        _ => restarts.to_string(),
    };

    // podIP stands in for podIPs as the v1 conversion makes it do.
    let ip = match arr(status, &["podIPs"]).first() {
        Some(first) => st(first, &["ip"]),
        None => st(status, &["podIP"]),
    };
    let gates = arr(o, &["spec", "readinessGates"]);
    let gates_text = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let true_gates = gates
            .iter()
            .filter(|g| condition_true(conditions, st(g, &["conditionType"])))
            .count();
        format!("{true_gates}/{}", gates.len())
    };
    vec![
        name(o).into(),
        format!("{ready}/{total}").into(),
        reason.into(),
        restarts_text.into(),
        created(o, now),
        or_none(ip).into(),
        or_none(st(o, &["spec", "nodeName"])).into(),
        or_none(st(status, &["nominatedNodeName"])).into(),
        gates_text.into(),
    ]
}

fn or_none(s: &str) -> &str {
    if s.is_empty() { "<none>" } else { s }
}

fn pod_template(o: &Value, _now: DateTime<Utc>) -> Vec<Value> {
    let (names, images) = layout_containers(arr(o, &["template", "spec", "containers"]));
    vec![
        name(o).into(),
        names.into(),
        images.into(),
        format_labels(map(o, &["template", "metadata", "labels"])).into(),
    ]
}

/// Replicas of the workload kinds default to 1 when the field is unset.
fn replicas(o: &Value) -> i64 {
    oint(o, &["spec", "replicas"]).unwrap_or(1)
}

fn replication_controller(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let mut cells = vec![
        name(o).into(),
        replicas(o).into(),
        int(o, &["status", "replicas"]).into(),
        int(o, &["status", "readyReplicas"]).into(),
        created(o, now),
    ];
    wide_containers(
        &mut cells,
        arr(o, &["spec", "template", "spec", "containers"]),
    );
    cells.push(format_labels(map(o, &["spec", "selector"])).into());
    cells
}

fn service(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let spec = get(o, &["spec"]).unwrap_or(&Value::Null);
    let type_ = match st(spec, &["type"]) {
        "" => "ClusterIP",
        t => t,
    };
    // clusterIPs is filled from clusterIP when the server defaults it.
    let cluster_ip = match arr(spec, &["clusterIPs"]).first() {
        Some(ip) => ip.as_str().unwrap_or(""),
        None => match st(spec, &["clusterIP"]) {
            "" => "<none>",
            ip => ip,
        },
    };
    let external_ips: Vec<&str> = arr(spec, &["externalIPs"])
        .iter()
        .map(|v| v.as_str().unwrap_or(""))
        .collect();
    let external = match type_ {
        "ClusterIP" | "NodePort" if external_ips.is_empty() => "<none>".to_string(),
        "ClusterIP" | "NodePort" => external_ips.join(","),
        "LoadBalancer" => {
            let lb = load_balancer_addresses(arr(o, &["status", "loadBalancer", "ingress"]));
            if !external_ips.is_empty() {
                let mut all: Vec<&str> = lb.iter().map(String::as_str).collect();
                all.extend(external_ips.iter().copied());
                all.join(",")
            } else if !lb.is_empty() {
                lb.join(",")
            } else {
                "<pending>".to_string()
            }
        }
        "ExternalName" => st(spec, &["externalName"]).to_string(),
        _ => "<unknown>".to_string(),
    };
    let ports = arr(spec, &["ports"])
        .iter()
        .map(|p| {
            let protocol = match st(p, &["protocol"]) {
                "" => "TCP",
                proto => proto,
            };
            let node_port = int(p, &["nodePort"]);
            if node_port > 0 {
                format!("{}:{node_port}/{protocol}", int(p, &["port"]))
            } else {
                format!("{}/{protocol}", int(p, &["port"]))
            }
        })
        .collect::<Vec<_>>()
        .join(",");
    vec![
        name(o).into(),
        type_.into(),
        cluster_ip.into(),
        external.into(),
        (if ports.is_empty() {
            "<none>".to_string()
        } else {
            ports
        })
        .into(),
        created(o, now),
        format_labels(map(spec, &["selector"])).into(),
    ]
}

/// The IPs (or else hostnames) of a load balancer status, sorted and
/// without duplicates. Never clipped: the server prints wide.
fn load_balancer_addresses(ingress: &[Value]) -> Vec<String> {
    let set: BTreeSet<String> = ingress
        .iter()
        .filter_map(|i| match (st(i, &["ip"]), st(i, &["hostname"])) {
            ("", "") => None,
            ("", host) => Some(host.to_string()),
            (ip, _) => Some(ip.to_string()),
        })
        .collect();
    set.into_iter().collect()
}

fn endpoints(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![name(o).into(), format_endpoints(o).into(), created(o, now)]
}

fn format_endpoints(o: &Value) -> String {
    let subsets = arr(o, &["subsets"]);
    if subsets.is_empty() {
        return "<none>".to_string();
    }
    const MAX: usize = 3;
    let mut list: Vec<String> = Vec::new();
    let mut more = false;
    let mut count = 0usize;
    for ss in subsets {
        let addresses = arr(ss, &["addresses"]);
        let ports = arr(ss, &["ports"]);
        if ports.is_empty() {
            // Headless services may have no ports: the bare IPs are listed.
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(st(a, &["ip"]).to_string());
            }
            continue;
        }
        for p in ports {
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(join_host_port(st(a, &["ip"]), int(p, &["port"])));
            }
        }
    }
    let joined = list.join(",");
    if more {
        format!("{joined} + {} more...", count.saturating_sub(MAX))
    } else {
        joined
    }
}

fn node(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let conditions = arr(o, &["status", "conditions"]);
    // Only the Ready condition is shown; a later duplicate wins, as in a map.
    let mut status = match conditions
        .iter()
        .rev()
        .find(|c| st(c, &["type"]) == "Ready")
    {
        Some(c) if st(c, &["status"]) == "True" => "Ready".to_string(),
        Some(_) => "NotReady".to_string(),
        None => "Unknown".to_string(),
    };
    if boolean(o, &["spec", "unschedulable"]) == Some(true) {
        status.push_str(",SchedulingDisabled");
    }
    let mut roles = BTreeSet::new();
    if let Some(labels) = map(o, &["metadata", "labels"]) {
        for (k, v) in labels {
            if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.insert(role.to_string());
                }
            } else if k == "kubernetes.io/role" {
                let v = v.as_str().unwrap_or("");
                if !v.is_empty() {
                    roles.insert(v.to_string());
                }
            }
        }
    }
    let roles = roles.into_iter().collect::<Vec<_>>().join(",");
    let address = |type_: &str| {
        arr(o, &["status", "addresses"])
            .iter()
            .find(|a| st(a, &["type"]) == type_)
            .map(|a| st(a, &["address"]))
            .unwrap_or("<none>")
            .to_string()
    };
    let info = |field: &str| match st(o, &["status", "nodeInfo", field]) {
        "" => "<unknown>".to_string(),
        v => v.to_string(),
    };
    vec![
        name(o).into(),
        status.into(),
        or_none(&roles).into(),
        created(o, now),
        st(o, &["status", "nodeInfo", "kubeletVersion"]).into(),
        address("InternalIP").into(),
        address("ExternalIP").into(),
        info("osImage").into(),
        info("kernelVersion").into(),
        info("containerRuntimeVersion").into(),
    ]
}

/// The fields of an Event the printer reads, from either API version.
struct EventView<'a> {
    first: Option<DateTime<Utc>>,
    last: Option<DateTime<Utc>>,
    event_time: Option<DateTime<Utc>>,
    count: i64,
    series: Option<&'a Value>,
    object: Option<&'a Value>,
    source: Option<&'a Value>,
    reporting_controller: &'a str,
    reporting_instance: &'a str,
    message: &'a str,
}

fn core_event(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let view = EventView {
        first: time(o, &["firstTimestamp"]),
        last: time(o, &["lastTimestamp"]),
        event_time: time(o, &["eventTime"]),
        count: int(o, &["count"]),
        series: present(o, &["series"]),
        object: get(o, &["involvedObject"]),
        source: get(o, &["source"]),
        reporting_controller: st(o, &["reportingComponent"]),
        reporting_instance: st(o, &["reportingInstance"]),
        message: st(o, &["message"]),
    };
    event_cells(o, &view, now)
}

/// events.k8s.io/v1 is served from the same storage; its fields map onto
/// the core ones as the conversion does.
fn events_event(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let view = EventView {
        first: time(o, &["deprecatedFirstTimestamp"]),
        last: time(o, &["deprecatedLastTimestamp"]),
        event_time: time(o, &["eventTime"]),
        count: int(o, &["deprecatedCount"]),
        series: present(o, &["series"]),
        object: get(o, &["regarding"]),
        source: get(o, &["deprecatedSource"]),
        reporting_controller: st(o, &["reportingController"]),
        reporting_instance: st(o, &["reportingInstance"]),
        message: st(o, &["note"]),
    };
    event_cells(o, &view, now)
}

fn event_cells(o: &Value, e: &EventView<'_>, now: DateTime<Utc>) -> Vec<Value> {
    let first = if e.first.is_none() {
        since(e.event_time, now)
    } else {
        since(e.first, now)
    };
    let mut last = if e.last.is_none() {
        first.clone()
    } else {
        since(e.last, now)
    };
    let mut count = e.count;
    if let Some(series) = e.series {
        last = since(time(series, &["lastObservedTime"]), now);
        count = int(series, &["count"]);
    } else if count == 0 {
        // Singleton events of the new API carry no count.
        count = 1;
    }
    let object = e.object.unwrap_or(&Value::Null);
    let kind = st(object, &["kind"]).to_lowercase();
    let target = match st(object, &["name"]) {
        "" => kind,
        n => format!("{kind}/{n}"),
    };
    let source = e.source.unwrap_or(&Value::Null);
    let component = match st(source, &["component"]) {
        "" => e.reporting_controller,
        c => c,
    };
    let host = match st(source, &["host"]) {
        "" => e.reporting_instance,
        h => h,
    };
    let source_text = if host.is_empty() {
        component.to_string()
    } else {
        format!("{component}, {host}")
    };
    vec![
        last.into(),
        st(o, &["type"]).into(),
        st(o, &["reason"]).into(),
        target.into(),
        st(object, &["fieldPath"]).into(),
        source_text.into(),
        e.message.trim().into(),
        first.into(),
        count.into(),
        name(o).into(),
    ]
}

fn namespace(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let phase = match st(o, &["status", "phase"]) {
        "" => "Active",
        p => p,
    };
    vec![name(o).into(), phase.into(), created(o, now)]
}

fn secret(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let type_ = match st(o, &["type"]) {
        "" => "Opaque",
        t => t,
    };
    vec![
        name(o).into(),
        type_.into(),
        len_of(o, &["data"]).into(),
        created(o, now),
    ]
}

fn service_account(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        len_of(o, &["secrets"]).into(),
        created(o, now),
    ]
}

/// `GetAccessModesAsString`: the abbreviations in a fixed order.
fn access_modes(modes: &[Value]) -> String {
    let has = |m: &str| modes.iter().any(|v| v.as_str() == Some(m));
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| has(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

const BETA_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

fn persistent_volume(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let spec = get(o, &["spec"]).unwrap_or(&Value::Null);
    let claim = present(spec, &["claimRef"])
        .map(|c| format!("{}/{}", st(c, &["namespace"]), st(c, &["name"])))
        .unwrap_or_default();
    let reclaim = match st(spec, &["persistentVolumeReclaimPolicy"]) {
        "" => "Retain",
        p => p,
    };
    let phase = if deleting(o) {
        "Terminating"
    } else {
        match st(o, &["status", "phase"]) {
            "" => "Pending",
            p => p,
        }
    };
    let class = ost(o, &["metadata", "annotations", BETA_STORAGE_CLASS])
        .unwrap_or_else(|| st(spec, &["storageClassName"]));
    vec![
        name(o).into(),
        quantity(get(spec, &["capacity", "storage"])).into(),
        access_modes(arr(spec, &["accessModes"])).into(),
        reclaim.into(),
        phase.into(),
        claim.into(),
        class.into(),
        ost(spec, &["volumeAttributesClassName"])
            .unwrap_or("<unset>")
            .into(),
        st(o, &["status", "reason"]).into(),
        created(o, now),
        ost(spec, &["volumeMode"]).unwrap_or("Filesystem").into(),
    ]
}

fn persistent_volume_claim(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let spec = get(o, &["spec"]).unwrap_or(&Value::Null);
    let phase = if deleting(o) {
        "Terminating"
    } else {
        match st(o, &["status", "phase"]) {
            "" => "Pending",
            p => p,
        }
    };
    let volume = st(spec, &["volumeName"]);
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            quantity(get(o, &["status", "capacity", "storage"])),
            access_modes(arr(o, &["status", "accessModes"])),
        )
    };
    let class = ost(o, &["metadata", "annotations", BETA_STORAGE_CLASS])
        .unwrap_or_else(|| st(spec, &["storageClassName"]));
    vec![
        name(o).into(),
        phase.into(),
        volume.into(),
        capacity.into(),
        modes.into(),
        class.into(),
        ost(spec, &["volumeAttributesClassName"])
            .unwrap_or("<unset>")
            .into(),
        created(o, now),
        ost(spec, &["volumeMode"]).unwrap_or("Filesystem").into(),
    ]
}

fn component_status(o: &Value, _now: DateTime<Utc>) -> Vec<Value> {
    let healthy = arr(o, &["conditions"])
        .iter()
        .find(|c| st(c, &["type"]) == "Healthy");
    let (status, message, error) = match healthy {
        Some(c) => (
            if st(c, &["status"]) == "True" {
                "Healthy"
            } else {
                "Unhealthy"
            },
            st(c, &["message"]),
            st(c, &["error"]),
        ),
        None => ("Unknown", "", ""),
    };
    vec![name(o).into(), status.into(), message.into(), error.into()]
}

fn config_map(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let n = len_of(o, &["data"]) + len_of(o, &["binaryData"]);
    vec![name(o).into(), n.into(), created(o, now)]
}

fn resource_quota(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let mut requests = Vec::new();
    let mut limits = Vec::new();
    if let Some(hard) = map(o, &["status", "hard"]) {
        let mut names: Vec<&String> = hard.keys().collect();
        names.sort();
        for resource in names {
            let used = quantity(get(o, &["status", "used", resource.as_str()]));
            let text = format!("{resource}: {used}/{}", quantity(hard.get(resource)));
            let mut pieces = resource.split('.');
            if pieces.next() == Some("limits") && pieces.next().is_some() {
                limits.push(text);
            } else {
                requests.push(text);
            }
        }
    }
    vec![
        name(o).into(),
        requests.join(", ").into(),
        limits.join(", ").into(),
        created(o, now),
    ]
}

// ---- policy, apps, batch

fn pod_disruption_budget(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        int_or_string(get(o, &["spec", "minAvailable"])).into(),
        int_or_string(get(o, &["spec", "maxUnavailable"])).into(),
        int(o, &["status", "disruptionsAllowed"]).into(),
        created(o, now),
    ]
}

fn replica_set(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let mut cells = vec![
        name(o).into(),
        replicas(o).into(),
        int(o, &["status", "replicas"]).into(),
        int(o, &["status", "readyReplicas"]).into(),
        created(o, now),
    ];
    wide_containers(
        &mut cells,
        arr(o, &["spec", "template", "spec", "containers"]),
    );
    cells.push(format_label_selector(get(o, &["spec", "selector"])).into());
    cells
}

fn daemon_set(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let mut cells = vec![
        name(o).into(),
        int(o, &["status", "desiredNumberScheduled"]).into(),
        int(o, &["status", "currentNumberScheduled"]).into(),
        int(o, &["status", "numberReady"]).into(),
        int(o, &["status", "updatedNumberScheduled"]).into(),
        int(o, &["status", "numberAvailable"]).into(),
        format_labels(map(o, &["spec", "template", "spec", "nodeSelector"])).into(),
        created(o, now),
    ];
    wide_containers(
        &mut cells,
        arr(o, &["spec", "template", "spec", "containers"]),
    );
    cells.push(format_label_selector(get(o, &["spec", "selector"])).into());
    cells
}

fn stateful_set(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let mut cells = vec![
        name(o).into(),
        format!("{}/{}", int(o, &["status", "readyReplicas"]), replicas(o)).into(),
        created(o, now),
    ];
    wide_containers(
        &mut cells,
        arr(o, &["spec", "template", "spec", "containers"]),
    );
    cells
}

fn deployment(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    // Unlike the other workloads, an empty selector prints as nothing and a
    // broken one as `<invalid>`.
    let selector =
        selector_string(get(o, &["spec", "selector"])).unwrap_or_else(|()| "<invalid>".to_string());
    let mut cells = vec![
        name(o).into(),
        format!("{}/{}", int(o, &["status", "readyReplicas"]), replicas(o)).into(),
        int(o, &["status", "updatedReplicas"]).into(),
        int(o, &["status", "availableReplicas"]).into(),
        created(o, now),
    ];
    wide_containers(
        &mut cells,
        arr(o, &["spec", "template", "spec", "containers"]),
    );
    cells.push(selector.into());
    cells
}

fn controller_revision(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let controller = arr(o, &["metadata", "ownerReferences"])
        .iter()
        .find(|r| boolean(r, &["controller"]) == Some(true))
        .map(|r| {
            let api_version = st(r, &["apiVersion"]);
            // Upstream fails the whole request on an apiVersion with more
            // than one slash; here the bare name is printed instead.
            let group = match api_version.matches('/').count() {
                1 => api_version.split('/').next().unwrap_or(""),
                0 => "",
                _ => return st(r, &["name"]).to_string(),
            };
            let kind = st(r, &["kind"]);
            let ref_name = st(r, &["name"]);
            if group.is_empty() && kind.is_empty() {
                ref_name.to_string()
            } else if group.is_empty() {
                format!("{}/{ref_name}", kind.to_lowercase())
            } else {
                format!("{}/{ref_name}", format!("{kind}.{group}").to_lowercase())
            }
        })
        .unwrap_or_else(|| "<none>".to_string());
    vec![
        name(o).into(),
        controller.into(),
        int(o, &["revision"]).into(),
        created(o, now),
    ]
}

fn job(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let succeeded = int(o, &["status", "succeeded"]);
    let parallelism = oint(o, &["spec", "parallelism"]);
    // A Job with neither completions nor parallelism is defaulted to one of each.
    let completions = oint(o, &["spec", "completions"]).or(match parallelism {
        None => Some(1),
        Some(_) => None,
    });
    let completions_text = match completions {
        Some(c) => format!("{succeeded}/{c}"),
        None => match parallelism.unwrap_or(1) {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let start = time(o, &["status", "startTime"]);
    let duration = match (start, time(o, &["status", "completionTime"])) {
        (None, _) => String::new(),
        (Some(s), None) => human_duration(nanos_between(s, now)),
        (Some(s), Some(c)) => human_duration(nanos_between(s, c)),
    };
    let conditions = arr(o, &["status", "conditions"]);
    let status = if condition_true(conditions, "Complete") {
        "Complete"
    } else if condition_true(conditions, "Failed") {
        "Failed"
    } else if deleting(o) {
        "Terminating"
    } else if condition_true(conditions, "Suspended") {
        "Suspended"
    } else if condition_true(conditions, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    let mut cells = vec![
        name(o).into(),
        status.into(),
        completions_text.into(),
        duration.into(),
        created(o, now),
    ];
    wide_containers(
        &mut cells,
        arr(o, &["spec", "template", "spec", "containers"]),
    );
    cells.push(format_label_selector(get(o, &["spec", "selector"])).into());
    cells
}

fn cron_job(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let last_schedule = match get(o, &["status", "lastScheduleTime"]) {
        None | Some(Value::Null) => "<none>".to_string(),
        Some(t) => since(t.as_str().and_then(parse_time), now),
    };
    // spec.suspend is defaulted to false, so `<unset>` is never printed.
    let suspend = bool_text(boolean(o, &["spec", "suspend"]).unwrap_or(false));
    let job_spec = get(o, &["spec", "jobTemplate", "spec"]).unwrap_or(&Value::Null);
    let mut cells = vec![
        name(o).into(),
        st(o, &["spec", "schedule"]).into(),
        ost(o, &["spec", "timeZone"]).unwrap_or("<none>").into(),
        suspend.into(),
        len_of(o, &["status", "active"]).into(),
        last_schedule.into(),
        created(o, now),
    ];
    wide_containers(
        &mut cells,
        arr(job_spec, &["template", "spec", "containers"]),
    );
    cells.push(format_label_selector(get(job_spec, &["selector"])).into());
    cells
}

// ---- networking, discovery

fn ingress(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    const MAX: usize = 3;
    let rules = arr(o, &["spec", "rules"]);
    let mut hosts: Vec<&str> = Vec::new();
    let mut more = false;
    for rule in rules {
        if hosts.len() == MAX {
            more = true;
        }
        let host = st(rule, &["host"]);
        if !more && !host.is_empty() {
            hosts.push(host);
        }
    }
    let hosts_text = if hosts.is_empty() {
        "*".to_string()
    } else if more {
        format!("{} + {} more...", hosts.join(","), rules.len() - MAX)
    } else {
        hosts.join(",")
    };
    let address = load_balancer_addresses(arr(o, &["status", "loadBalancer", "ingress"])).join(",");
    let ports = if arr(o, &["spec", "tls"]).is_empty() {
        "80"
    } else {
        "80, 443"
    };
    vec![
        name(o).into(),
        ost(o, &["spec", "ingressClassName"])
            .unwrap_or("<none>")
            .into(),
        hosts_text.into(),
        address.into(),
        ports.into(),
        created(o, now),
    ]
}

fn ingress_class(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let parameters = match present(o, &["spec", "parameters"]) {
        None => "<none>".to_string(),
        Some(p) => {
            let mut text = st(p, &["kind"]).to_string();
            if let Some(group) = ost(p, &["apiGroup"]) {
                text.push('.');
                text.push_str(group);
            }
            format!("{text}/{}", st(p, &["name"]))
        }
    };
    vec![
        name(o).into(),
        st(o, &["spec", "controller"]).into(),
        parameters.into(),
        created(o, now),
    ]
}

fn network_policy(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        format_label_selector(get(o, &["spec", "podSelector"])).into(),
        created(o, now),
    ]
}

fn service_cidr(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let cidrs: Vec<&str> = arr(o, &["spec", "cidrs"])
        .iter()
        .map(|v| v.as_str().unwrap_or(""))
        .collect();
    vec![name(o).into(), cidrs.join(",").into(), created(o, now)]
}

/// Upstream's printer also appends an Age cell that has no column; the row
/// here keeps to the two declared columns.
fn ip_address(o: &Value, _now: DateTime<Utc>) -> Vec<Value> {
    let parent = match present(o, &["spec", "parentRef"]) {
        None => "<none>".to_string(),
        Some(p) => {
            let resource = st(p, &["resource"]);
            let mut text = match st(p, &["group"]) {
                "" => resource.to_lowercase(),
                g => format!("{resource}.{g}").to_lowercase(),
            };
            let ns = st(p, &["namespace"]);
            if !ns.is_empty() {
                text.push('/');
                text.push_str(ns);
            }
            format!("{text}/{}", st(p, &["name"]))
        }
    };
    vec![name(o).into(), parent.into()]
}

fn endpoint_slice(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let ports = arr(o, &["ports"]);
    let port_list: Vec<String> = ports
        .iter()
        .take(3)
        .map(|p| match (oint(p, &["port"]), ost(p, &["name"])) {
            (Some(n), _) => n.to_string(),
            (None, Some(n)) => n.to_string(),
            (None, None) => "*".to_string(),
        })
        .collect();
    let addresses: Vec<String> = arr(o, &["endpoints"])
        .iter()
        .flat_map(|e| arr(e, &["addresses"]))
        .map(|a| a.as_str().unwrap_or("").to_string())
        .collect();
    vec![
        name(o).into(),
        st(o, &["addressType"]).into(),
        list_with_more(&port_list, ports.len(), 3).into(),
        list_with_more(&addresses, addresses.len(), 3).into(),
        created(o, now),
    ]
}

// ---- autoscaling

fn horizontal_pod_autoscaler(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let reference = format!(
        "{}/{}",
        st(o, &["spec", "scaleTargetRef", "kind"]),
        st(o, &["spec", "scaleTargetRef", "name"])
    );
    let min_pods = oint(o, &["spec", "minReplicas"])
        .map(|n| n.to_string())
        .unwrap_or_else(|| "<unset>".to_string());
    vec![
        name(o).into(),
        reference.into(),
        hpa_targets(o).into(),
        min_pods.into(),
        int(o, &["spec", "maxReplicas"]).into(),
        int(o, &["status", "currentReplicas"]).into(),
        created(o, now),
    ]
}

/// `Quantity.String()` of an optional quantity (`<nil>` when unset).
fn opt_quantity(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "<nil>".to_string(),
        v => quantity(v),
    }
}

/// The metric specs and statuses of an HPA, as autoscaling/v2 has them;
/// an autoscaling/v1 object's CPU target is converted as the server does.
fn hpa_metrics(o: &Value) -> (Vec<Value>, Vec<Value>) {
    if let Some(target) = oint(o, &["spec", "targetCPUUtilizationPercentage"]) {
        let spec = serde_json::json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": target}}});
        let status = oint(o, &["status", "currentCPUUtilizationPercentage"])
            .map(|c| {
                vec![
                    serde_json::json!({"type": "Resource", "resource": {"name": "cpu",
                    "current": {"averageUtilization": c}}}),
                ]
            })
            .unwrap_or_default();
        return (vec![spec], status);
    }
    (
        arr(o, &["spec", "metrics"]).to_vec(),
        arr(o, &["status", "currentMetrics"]).to_vec(),
    )
}

fn hpa_targets(o: &Value) -> String {
    let (specs, statuses) = hpa_metrics(o);
    if specs.is_empty() {
        return "<none>".to_string();
    }
    let status_of = |i: usize, field: &str| statuses.get(i).and_then(|s| present(s, &[field]));
    let list: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| match st(spec, &["type"]) {
            field @ ("External" | "Object") => {
                let key = if field == "External" {
                    "external"
                } else {
                    "object"
                };
                let target = get(spec, &[key, "target"]).unwrap_or(&Value::Null);
                let current = status_of(i, key);
                if get(target, &["averageValue"]).is_some_and(|v| !v.is_null()) {
                    let cur = current
                        .and_then(|c| get(c, &["current", "averageValue"]))
                        .filter(|v| !v.is_null())
                        .map(|v| quantity(Some(v)))
                        .unwrap_or_else(|| "<unknown>".to_string());
                    format!(
                        "{cur}/{} (avg)",
                        opt_quantity(get(target, &["averageValue"]))
                    )
                } else {
                    let cur = current
                        .map(|c| opt_quantity(get(c, &["current", "value"])))
                        .unwrap_or_else(|| "<unknown>".to_string());
                    format!("{cur}/{}", opt_quantity(get(target, &["value"])))
                }
            }
            "Pods" => {
                let cur = status_of(i, "pods")
                    .map(|c| opt_quantity(get(c, &["current", "averageValue"])))
                    .unwrap_or_else(|| "<unknown>".to_string());
                format!(
                    "{cur}/{}",
                    opt_quantity(get(spec, &["pods", "target", "averageValue"]))
                )
            }
            field @ ("Resource" | "ContainerResource") => {
                let key = if field == "Resource" {
                    "resource"
                } else {
                    "containerResource"
                };
                let metric = get(spec, &[key]).unwrap_or(&Value::Null);
                let resource = st(metric, &["name"]);
                let current = status_of(i, key);
                if get(metric, &["target", "averageValue"]).is_some_and(|v| !v.is_null()) {
                    let cur = current
                        .map(|c| opt_quantity(get(c, &["current", "averageValue"])))
                        .unwrap_or_else(|| "<unknown>".to_string());
                    format!(
                        "{resource}: {cur}/{}",
                        opt_quantity(get(metric, &["target", "averageValue"]))
                    )
                } else {
                    let cur = current
                        .and_then(|c| oint(c, &["current", "averageUtilization"]))
                        .map(|u| format!("{u}%"))
                        .unwrap_or_else(|| "<unknown>".to_string());
                    let target = oint(metric, &["target", "averageUtilization"])
                        .map(|u| format!("{u}%"))
                        .unwrap_or_else(|| "<auto>".to_string());
                    format!("{resource}: {cur}/{target}")
                }
            }
            _ => "<unknown type>".to_string(),
        })
        .collect();
    const MAX: usize = 2;
    if list.len() > MAX {
        format!("{} + {} more...", list[..MAX].join(", "), list.len() - MAX)
    } else {
        list.join(", ")
    }
}

fn scale(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        int(o, &["spec", "replicas"]).into(),
        int(o, &["status", "replicas"]).into(),
        created(o, now),
    ]
}

// ---- rbac, certificates, coordination

fn role_binding(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let role = format!(
        "{}/{}",
        st(o, &["roleRef", "kind"]),
        st(o, &["roleRef", "name"])
    );
    let mut users = Vec::new();
    let mut groups = Vec::new();
    let mut service_accounts = Vec::new();
    for s in arr(o, &["subjects"]) {
        match st(s, &["kind"]) {
            "User" => users.push(st(s, &["name"]).to_string()),
            "Group" => groups.push(st(s, &["name"]).to_string()),
            "ServiceAccount" => {
                service_accounts.push(format!("{}/{}", st(s, &["namespace"]), st(s, &["name"])));
            }
            _ => {}
        }
    }
    vec![
        name(o).into(),
        role.into(),
        created(o, now),
        users.join(", ").into(),
        groups.join(", ").into(),
        service_accounts.join(", ").into(),
    ]
}

fn certificate_signing_request(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let conditions = arr(o, &["status", "conditions"]);
    let has = |t: &str| conditions.iter().any(|c| st(c, &["type"]) == t);
    // Denied outranks Approved, whatever the order of the conditions.
    let mut condition = if has("Denied") {
        "Denied"
    } else if has("Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_string();
    if has("Failed") {
        condition.push_str(",Failed");
    }
    if !st(o, &["status", "certificate"]).is_empty() {
        condition.push_str(",Issued");
    }
    let requested = oint(o, &["spec", "expirationSeconds"])
        .map(|s| human_duration(s.saturating_mul(SECOND)))
        .unwrap_or_else(|| "<none>".to_string());
    vec![
        name(o).into(),
        created(o, now),
        or_none(st(o, &["spec", "signerName"])).into(),
        st(o, &["spec", "username"]).into(),
        requested.into(),
        condition.into(),
    ]
}

fn cluster_trust_bundle(o: &Value, _now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        or_none(st(o, &["spec", "signerName"])).into(),
    ]
}

fn lease(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        st(o, &["spec", "holderIdentity"]).into(),
        created(o, now),
    ]
}

fn lease_candidate(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        st(o, &["spec", "leaseName"]).into(),
        st(o, &["spec", "binaryVersion"]).into(),
        st(o, &["spec", "emulationVersion"]).into(),
        created(o, now),
    ]
}

// ---- storage, scheduling, node

fn storage_class(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
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
fn volume_attributes_class(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        st(o, &["driverName"]).into(),
        created(o, now),
    ]
}

fn volume_attachment(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        st(o, &["spec", "attacher"]).into(),
        st(o, &["spec", "source", "persistentVolumeName"]).into(),
        st(o, &["spec", "nodeName"]).into(),
        boolean(o, &["status", "attached"]).unwrap_or(false).into(),
        created(o, now),
    ]
}

fn csi_node(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        len_of(o, &["spec", "drivers"]).into(),
        created(o, now),
    ]
}

/// The unset fields print as their storage.k8s.io/v1 defaults
/// (attachRequired true, the lifecycle mode `Persistent`).
fn csi_driver(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
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

fn csi_storage_capacity(o: &Value, _now: DateTime<Utc>) -> Vec<Value> {
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

fn priority_class(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
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

fn runtime_class(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![name(o).into(), st(o, &["handler"]).into(), created(o, now)]
}

// ---- admissionregistration

fn webhook_configuration(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        len_of(o, &["webhooks"]).into(),
        created(o, now),
    ]
}

fn param_kind(o: &Value) -> String {
    match present(o, &["spec", "paramKind"]) {
        None => "<unset>".to_string(),
        Some(p) => format!("{}/{}", st(p, &["apiVersion"]), st(p, &["kind"])),
    }
}

fn validating_admission_policy(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        len_of(o, &["spec", "validations"]).into(),
        param_kind(o).into(),
        created(o, now),
    ]
}

fn mutating_admission_policy(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        len_of(o, &["spec", "mutations"]).into(),
        param_kind(o).into(),
        created(o, now),
    ]
}

fn admission_policy_binding(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let param = match present(o, &["spec", "paramRef"]) {
        None => "<unset>".to_string(),
        Some(p) => match (st(p, &["name"]), st(p, &["namespace"])) {
            ("", _) => match present(p, &["selector"]) {
                Some(sel) => go_label_selector_debug(sel),
                None => "<unset>".to_string(),
            },
            // The scope of the param kind is unknown here, so a name
            // without a namespace gets `*`.
            (n, "") => format!("*/{n}"),
            (n, ns) => format!("{ns}/{n}"),
        },
    };
    vec![
        name(o).into(),
        st(o, &["spec", "policyName"]).into(),
        param.into(),
        created(o, now),
    ]
}

/// The Go (gogo-protobuf generated) `String()` of a `LabelSelector`,
/// which upstream prints for a param reference by selector. Written from
/// the generator's output format, not confirmed against a live server.
fn go_label_selector_debug(sel: &Value) -> String {
    let mut labels: Vec<(&str, &str)> = map(sel, &["matchLabels"])
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    labels.sort();
    let labels: String = labels.iter().map(|(k, v)| format!("{k}: {v},")).collect();
    let exprs: String = arr(sel, &["matchExpressions"])
        .iter()
        .map(|e| {
            let values: Vec<&str> = arr(e, &["values"])
                .iter()
                .map(|v| v.as_str().unwrap_or(""))
                .collect();
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                st(e, &["key"]),
                st(e, &["operator"]),
                values.join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}"
    )
}

// ---- flowcontrol, internal

fn flow_schema(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let distinguisher = present(o, &["spec", "distinguisherMethod"])
        .map(|d| st(d, &["type"]))
        .unwrap_or("<none>");
    let missing = arr(o, &["status", "conditions"])
        .iter()
        .find(|c| st(c, &["type"]) == "Dangling")
        .map(|c| st(c, &["status"]))
        .unwrap_or("?");
    vec![
        name(o).into(),
        st(o, &["spec", "priorityLevelConfiguration", "name"]).into(),
        int(o, &["spec", "matchingPrecedence"]).into(),
        distinguisher.into(),
        created(o, now),
        missing.into(),
    ]
}

/// Unset numbers print as their flowcontrol/v1 defaults (30 shares, 64
/// queues, hand size 8, 50 requests a queue).
fn priority_level_configuration(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let none = || Value::from("<none>");
    let (mut shares, mut queues, mut hand, mut limit) = (none(), none(), none(), none());
    if let Some(limited) = present(o, &["spec", "limited"]) {
        shares = oint(limited, &["nominalConcurrencyShares"])
            .unwrap_or(30)
            .into();
        if let Some(q) = present(limited, &["limitResponse", "queuing"]) {
            queues = oint(q, &["queues"]).unwrap_or(64).into();
            hand = oint(q, &["handSize"]).unwrap_or(8).into();
            limit = oint(q, &["queueLengthLimit"]).unwrap_or(50).into();
        }
    }
    vec![
        name(o).into(),
        st(o, &["spec", "type"]).into(),
        shares,
        queues,
        hand,
        limit,
        created(o, now),
    ]
}

fn storage_version(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let versions = arr(o, &["status", "storageVersions"]);
    let list: Vec<String> = versions
        .iter()
        .take(3)
        .map(|v| {
            format!(
                "{}={}",
                st(v, &["apiServerID"]),
                st(v, &["encodingVersion"])
            )
        })
        .collect();
    vec![
        name(o).into(),
        ost(o, &["status", "commonEncodingVersion"])
            .unwrap_or("<unset>")
            .into(),
        list_with_more(&list, versions.len(), 3).into(),
        created(o, now),
    ]
}

fn storage_version_migration(o: &Value, _now: DateTime<Utc>) -> Vec<Value> {
    let r = get(o, &["spec", "resource"]).unwrap_or(&Value::Null);
    let gvr = format!(
        "{}.{}.{}",
        st(r, &["resource"]),
        st(r, &["version"]),
        st(r, &["group"])
    );
    vec![name(o).into(), gvr.into()]
}

// ---- resource (dynamic resource allocation)

fn name_age(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![name(o).into(), created(o, now)]
}

fn resource_claim(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let mut states = Vec::new();
    if deleting(o) {
        states.push("deleted");
    }
    if present(o, &["status", "allocation"]).is_none() {
        if !deleting(o) {
            states.push("pending");
        }
    } else {
        states.push("allocated");
        if !arr(o, &["status", "reservedFor"]).is_empty() {
            states.push("reserved");
        }
    }
    vec![name(o).into(), states.join(",").into(), created(o, now)]
}

fn resource_slice(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        st(o, &["spec", "nodeName"]).into(),
        st(o, &["spec", "driver"]).into(),
        st(o, &["spec", "pool", "name"]).into(),
        created(o, now),
    ]
}
