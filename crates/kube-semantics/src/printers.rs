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
// Upstream prints the age second for quotas, before the two summaries.
const RESOURCE_QUOTA: &[Column] = &[
    NAME,
    AGE,
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
const API_SERVICE: &[Column] = &[
    NAME,
    c(
        "Service",
        "string",
        "The reference to the service that hosts this API endpoint.",
    ),
    c("Available", "string", "Whether this service is available."),
    AGE,
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

/// `metav1.LabelSelectorAsSelector(..).String()` of a `LabelSelector`
/// (`a=b,c in (d,e),!f`, requirements sorted by key), as a Scale's
/// `status.selector` carries it; `None` where upstream fails to build the
/// selector, an empty string for a missing or empty one.
pub fn label_selector_string(sel: Option<&Value>) -> Option<String> {
    selector_string(sel).ok()
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

    // The v1 conversion makes podIP, when set, the first of podIPs.
    let ip = match st(status, &["podIP"]) {
        "" => arr(status, &["podIPs"])
            .first()
            .map(|first| st(first, &["ip"]))
            .unwrap_or(""),
        ip => ip,
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

/// NAME DESIRED CURRENT READY AGE and the wide CONTAINERS IMAGES of a
/// ReplicationController or ReplicaSet; the caller adds its SELECTOR.
fn replica_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
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
    cells
}

fn replication_controller(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    // A ReplicationController's selector is a plain label map.
    let mut cells = replica_cells(o, now);
    cells.push(format_labels(map(o, &["spec", "selector"])).into());
    cells
}

fn service(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let spec = get(o, &["spec"]).unwrap_or(&Value::Null);
    let type_ = match st(spec, &["type"]) {
        "" => "ClusterIP",
        t => t,
    };
    // clusterIP, when set, is the first of clusterIPs (the server keeps
    // them in step); clusterIPs alone is read for objects without it.
    let cluster_ip = match st(spec, &["clusterIP"]) {
        "" => match arr(spec, &["clusterIPs"]).first() {
            Some(ip) => ip.as_str().unwrap_or(""),
            None => "<none>",
        },
        ip => ip,
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

/// v1.33 still prints the number of `secrets`; the column was dropped
/// later (kubernetes/kubernetes#117160, merged after 1.34).
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
        created(o, now),
        requests.join(", ").into(),
        limits.join(", ").into(),
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
    let mut cells = replica_cells(o, now);
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
    // Both autoscaling versions default minReplicas to 1, so upstream's
    // `<unset>` does not show for a stored object.
    let min_pods = oint(o, &["spec", "minReplicas"]).unwrap_or(1).to_string();
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

// A Scale has no age column (kubectl get --subresource=scale prints NAME
// DESIRED AVAILABLE).
fn scale(o: &Value, _now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        int(o, &["spec", "replicas"]).into(),
        int(o, &["status", "replicas"]).into(),
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
        // flowcontrol/v1 defaults an unset (zero) precedence to 1000.
        match int(o, &["spec", "matchingPrecedence"]) {
            0 => 1000,
            p => p,
        }
        .into(),
        distinguisher.into(),
        created(o, now),
        missing.into(),
    ]
}

/// Unset numbers print as their flowcontrol/v1 defaults: 30 shares when
/// the field is absent; 64 queues, hand size 8 and 50 requests a queue
/// when absent or zero.
fn priority_level_configuration(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let none = || Value::from("<none>");
    let (mut shares, mut queues, mut hand, mut limit) = (none(), none(), none(), none());
    if let Some(limited) = present(o, &["spec", "limited"]) {
        shares = oint(limited, &["nominalConcurrencyShares"])
            .unwrap_or(30)
            .into();
        if let Some(q) = present(limited, &["limitResponse", "queuing"]) {
            let or_default = |field: &str, default: i64| match int(q, &[field]) {
                0 => default,
                n => n,
            };
            queues = or_default("queues", 64).into();
            hand = or_default("handSize", 8).into();
            limit = or_default("queueLengthLimit", 50).into();
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

// ---- apiregistration (the aggregator's convertor)

fn api_service(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let service = present(o, &["spec", "service"])
        .map(|s| format!("{}/{}", st(s, &["namespace"]), st(s, &["name"])))
        .unwrap_or_else(|| "Local".to_string());
    let available = arr(o, &["status", "conditions"])
        .iter()
        .find(|c| st(c, &["type"]) == "Available")
        .map(|c| match (st(c, &["status"]), st(c, &["reason"])) {
            ("True", _) | (_, "") => st(c, &["status"]).to_string(),
            (status, reason) => format!("{status} ({reason})"),
        })
        .unwrap_or_else(|| "Unknown".to_string());
    vec![
        name(o).into(),
        service.into(),
        available.into(),
        created(o, now),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2024-05-01T12:00:00Z")
            .map(|t| t.with_timezone(&Utc))
            .expect("valid time")
    }

    /// The RFC 3339 time `secs` seconds before `now()`.
    fn ago(secs: i64) -> String {
        (now() - chrono::TimeDelta::seconds(secs))
            .format("%Y-%m-%dT%H:%M:%SZ")
            .to_string()
    }

    fn row(group: &str, kind: &str, obj: Value) -> Vec<Value> {
        let cells = cells(group, kind, &obj, now());
        let columns = columns(group, kind).expect("a printer");
        assert_eq!(cells.len(), columns.len(), "{group}/{kind}");
        cells
    }

    fn head(group: &str, kind: &str, obj: Value, n: usize) -> Value {
        Value::Array(row(group, kind, obj)[..n].to_vec())
    }

    fn names(group: &str, kind: &str) -> Vec<(&'static str, u8)> {
        columns(group, kind)
            .expect("a printer")
            .iter()
            .map(|c| (c.name, c.priority))
            .collect()
    }

    // ---- age / HumanDuration (apimachinery duration_test.go boundaries)

    #[test]
    fn age_boundaries() {
        let cases: &[(i64, &str)] = &[
            (0, "0s"),
            (-1, "0s"),
            (-2, "<invalid>"),
            (1, "1s"),
            (119, "119s"),
            (120, "2m"),
            (121, "2m1s"),
            (9 * 60 + 59, "9m59s"),
            (10 * 60, "10m"),
            (179 * 60 + 59, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 5 * 60, "3h5m"),
            (7 * 3600 + 59 * 60 + 59, "7h59m"),
            (8 * 3600, "8h"),
            (47 * 3600 + 3599, "47h"),
            (48 * 3600, "2d"),
            (2 * 86400 + 5 * 3600, "2d5h"),
            (7 * 86400 + 23 * 3600, "7d23h"),
            (8 * 86400, "8d"),
            (729 * 86400, "729d"),
            (730 * 86400, "2y"),
            ((3 * 365 + 45) * 86400, "3y45d"),
            (8 * 365 * 86400 - 1, "7y364d"),
            (8 * 365 * 86400, "8y"),
        ];
        for (secs, want) in cases {
            assert_eq!(age(Some(&ago(*secs)), now()), *want, "{secs}s");
        }
    }

    #[test]
    fn age_of_missing_zero_and_malformed_timestamps() {
        assert_eq!(age(None, now()), "<unknown>");
        assert_eq!(age(Some(""), now()), "<unknown>");
        assert_eq!(age(Some("0001-01-01T00:00:00Z"), now()), "<unknown>");
        assert_eq!(age(Some("yesterday"), now()), "<unknown>");
        assert_eq!(age(Some("2024-05-01"), now()), "<unknown>");
        // Offsets and fractions are read as RFC 3339 allows.
        assert_eq!(age(Some("2024-05-01T13:59:00+02:00"), now()), "60s");
        assert_eq!(age(Some("2024-05-01T11:59:59.9Z"), now()), "0s");
        // Go's Duration saturates at about 292 years.
        assert_eq!(age(Some("0001-01-02T00:00:00Z"), now()), "292y");
        assert_eq!(human_duration(i64::MIN), "<invalid>");
        assert_eq!(human_duration(i64::MAX), "292y");
    }

    // ---- Pod (printers_test.go TestPrintPod, TestPrintPodWithRestartableInitContainer,
    // TestPrintPodwide)

    fn pod(containers: usize, status: Value) -> Value {
        json!({
            "metadata": {"name": "test", "creationTimestamp": ago(3600)},
            "spec": {"containers": vec![json!({"name": "c"}); containers]},
            "status": status,
        })
    }

    #[test]
    fn pod_columns() {
        assert_eq!(
            names("", "Pod"),
            [
                ("Name", 0),
                ("Ready", 0),
                ("Status", 0),
                ("Restarts", 0),
                ("Age", 0),
                ("IP", 1),
                ("Node", 1),
                ("Nominated Node", 1),
                ("Readiness Gates", 1)
            ]
        );
        let cols = columns("", "Pod").expect("pod");
        assert_eq!(cols[0].format, "name");
        assert_eq!(cols[3].type_, "string");
    }

    #[test]
    fn pod_status_from_containers() {
        let running = json!({"ready": true, "restartCount": 3, "state": {"running": {}}});
        // test1: phase shows through.
        let p = pod(
            2,
            json!({"phase": "podPhase", "containerStatuses": [running, {"restartCount": 3}]}),
        );
        assert_eq!(
            head("", "Pod", p, 5),
            json!(["test", "1/2", "podPhase", "6", "60m"])
        );
        // test2: a waiting reason overrides the phase.
        let p = pod(
            2,
            json!({"phase": "podPhase", "containerStatuses": [running,
                {"restartCount": 3, "state": {"waiting": {"reason": "ContainerWaitingReason"}}}]}),
        );
        assert_eq!(head("", "Pod", p, 3)[2], "ContainerWaitingReason");
        // test3: the first container's state wins.
        let p = pod(
            2,
            json!({"phase": "podPhase", "containerStatuses": [
                {"state": {"waiting": {"reason": "ContainerWaitingReason"}}},
                {"state": {"terminated": {"reason": "ContainerTerminatedReason"}}}]}),
        );
        assert_eq!(
            head("", "Pod", p, 3),
            json!(["test", "0/2", "ContainerWaitingReason"])
        );
        // test5: status.reason replaces the phase.
        let p = pod(2, json!({"reason": "podReason", "phase": "podPhase"}));
        assert_eq!(head("", "Pod", p, 3)[2], "podReason");
        // Terminated without a reason: the signal, else the exit code.
        let p = pod(
            1,
            json!({"containerStatuses": [{"state": {"terminated": {"exitCode": 2}}}]}),
        );
        assert_eq!(head("", "Pod", p, 3)[2], "ExitCode:2");
        let p = pod(
            1,
            json!({"containerStatuses": [{"state": {"terminated": {"exitCode": 137, "signal": 9}}}]}),
        );
        assert_eq!(head("", "Pod", p, 3)[2], "Signal:9");
    }

    #[test]
    fn pod_completed_with_a_running_container() {
        let statuses = json!([
            {"ready": true, "restartCount": 3, "state": {"terminated": {"reason": "Completed"}}},
            {"ready": true, "restartCount": 3, "state": {"running": {}}}
        ]);
        let p = pod(
            2,
            json!({"phase": "Running", "containerStatuses": statuses}),
        );
        assert_eq!(head("", "Pod", p, 3)[2], "NotReady");
        let p = pod(
            2,
            json!({"phase": "Running", "containerStatuses": statuses,
                "conditions": [{"type": "Ready", "status": "True"}]}),
        );
        assert_eq!(
            head("", "Pod", p, 4),
            json!(["test", "1/2", "Running", "6"])
        );
    }

    #[test]
    fn pod_init_containers() {
        let mut p = pod(
            1,
            json!({"phase": "podPhase",
                "initContainerStatuses": [{"restartCount": 3, "state": {"running": {}},
                    "lastState": {"terminated": {"finishedAt": ago(10)}}}],
                "containerStatuses": [{"state": {"waiting": {}}}]}),
        );
        p["spec"]["initContainers"] = json!([{"name": "i"}]);
        // test7
        assert_eq!(
            head("", "Pod", p, 4),
            json!(["test", "0/1", "Init:0/1", "3 (10s ago)"])
        );

        // test10: restarts of all init containers add up; the latest restart shows.
        let mut p = pod(
            1,
            json!({"phase": "podPhase", "initContainerStatuses": [
                {"restartCount": 2, "state": {"terminated": {}},
                    "lastState": {"terminated": {"finishedAt": ago(120)}}},
                {"restartCount": 3, "state": {"running": {}},
                    "lastState": {"terminated": {"finishedAt": ago(10)}}}]}),
        );
        p["spec"]["initContainers"] = json!([{"name": "a"}, {"name": "b"}]);
        assert_eq!(
            head("", "Pod", p, 4),
            json!(["test", "0/1", "Init:1/2", "5 (10s ago)"])
        );

        let failed = |term: Value| {
            let mut p = pod(
                1,
                json!({"initContainerStatuses": [{"state": {"terminated": term}}]}),
            );
            p["spec"]["initContainers"] = json!([{"name": "a"}]);
            row("", "Pod", p)[2].clone()
        };
        assert_eq!(failed(json!({"exitCode": 1})), "Init:ExitCode:1");
        assert_eq!(
            failed(json!({"exitCode": 1, "signal": 15})),
            "Init:Signal:15"
        );
        assert_eq!(
            failed(json!({"exitCode": 1, "reason": "Error"})),
            "Init:Error"
        );
        let mut p = pod(
            1,
            json!({"initContainerStatuses": [{"state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}),
        );
        p["spec"]["initContainers"] = json!([{"name": "a"}]);
        assert_eq!(row("", "Pod", p)[2], "Init:CrashLoopBackOff");

        // test11: initialized; only the app containers' restarts count.
        let mut p = pod(
            1,
            json!({"phase": "Running",
                "initContainerStatuses": [{"restartCount": 2, "state": {"terminated": {}},
                    "lastState": {"terminated": {"finishedAt": ago(120)}}}],
                "containerStatuses": [{"restartCount": 4, "state": {"running": {}},
                    "lastState": {"terminated": {"finishedAt": ago(20)}}}]}),
        );
        p["spec"]["initContainers"] = json!([{"name": "a"}]);
        assert_eq!(
            head("", "Pod", p, 4),
            json!(["test", "0/1", "Running", "4 (20s ago)"])
        );
    }

    #[test]
    fn pod_sidecars() {
        let spec_init = json!([
            {"name": "restartable-init-1", "restartPolicy": "Always"},
            {"name": "restartable-init-2", "restartPolicy": "Always"}
        ]);
        // test2 of TestPrintPodWithRestartableInitContainer.
        let mut p = pod(
            1,
            json!({"phase": "Running",
                "initContainerStatuses": [
                    {"name": "restartable-init-1", "restartCount": 3, "started": true,
                        "state": {"running": {}},
                        "lastState": {"terminated": {"finishedAt": ago(10)}}},
                    {"name": "restartable-init-2", "started": true, "state": {"running": {}}}],
                "containerStatuses": [{"ready": true, "restartCount": 4, "state": {"running": {}},
                    "lastState": {"terminated": {"finishedAt": ago(20)}}}],
                "conditions": [{"type": "Initialized", "status": "True"}]}),
        );
        p["spec"]["initContainers"] = spec_init.clone();
        assert_eq!(
            head("", "Pod", p, 4),
            json!(["test", "1/3", "Running", "7 (10s ago)"])
        );

        // test4: statuses of containers the spec does not have.
        let mut p = pod(
            1,
            json!({"phase": "Running",
                "initContainerStatuses": [{"name": "initinvalid"}, {"name": "init1"}, {"name": "sidecar1"}],
                "containerStatuses": [{"name": "containerinvalid"}, {"name": "c"}]}),
        );
        p["spec"]["initContainers"] =
            json!([{"name": "init1"}, {"name": "sidecar1", "restartPolicy": "Always"}]);
        assert_eq!(
            head("", "Pod", p, 4),
            json!(["test", "0/2", "Init:0/2", "0"])
        );
    }

    #[test]
    fn pod_scheduling_gated_and_terminating() {
        let p = pod(
            2,
            json!({"phase": "podPhase", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}),
        );
        assert_eq!(
            head("", "Pod", p, 4),
            json!(["test", "0/2", "SchedulingGated", "0"])
        );

        let mut p = pod(
            1,
            json!({"phase": "Running", "containerStatuses": [{"state": {"running": {}}}]}),
        );
        p["metadata"]["deletionTimestamp"] = json!(ago(10));
        assert_eq!(row("", "Pod", p.clone())[2], "Terminating");
        p["status"]["phase"] = json!("Succeeded");
        p["status"]["containerStatuses"] =
            json!([{"state": {"terminated": {"reason": "Completed"}}}]);
        assert_eq!(row("", "Pod", p.clone())[2], "Completed");
        p["status"]["reason"] = json!("NodeLost");
        assert_eq!(row("", "Pod", p)[2], "Unknown");
    }

    #[test]
    fn pod_row_conditions() {
        // TestPrintPodConditions
        let finished = |phase: &str| row_conditions("", "Pod", &pod(1, json!({"phase": phase})));
        assert_eq!(
            finished("Succeeded"),
            [
                json!({"type": "Completed", "status": "True", "reason": "Succeeded",
                "message": "The pod has completed successfully."})
            ]
        );
        assert_eq!(
            finished("Failed"),
            [
                json!({"type": "Completed", "status": "True", "reason": "Failed",
                "message": "The pod failed."})
            ]
        );
        assert!(finished("Running").is_empty());
        assert!(row_conditions("batch", "Job", &json!({"status": {"phase": "Failed"}})).is_empty());
    }

    #[test]
    fn pod_wide() {
        let mut p = pod(
            2,
            json!({"phase": "podPhase", "podIPs": [{"ip": "1.1.1.1"}, {"ip": "2001:db8::"}],
                "nominatedNodeName": "node1",
                "conditions": [{"type": "condition1", "status": "False"},
                    {"type": "condition2", "status": "True"}],
                "containerStatuses": [{"ready": true, "restartCount": 3, "state": {"running": {}}},
                    {"restartCount": 3}]}),
        );
        p["spec"]["nodeName"] = json!("test1");
        p["spec"]["readinessGates"] = json!([{"conditionType": "condition1"},
            {"conditionType": "condition2"}, {"conditionType": "condition3"}]);
        assert_eq!(
            row("", "Pod", p),
            json!([
                "test", "1/2", "podPhase", "6", "60m", "1.1.1.1", "test1", "node1", "1/3"
            ])
            .as_array()
            .cloned()
            .unwrap_or_default()
        );
        let p = pod(
            1,
            json!({"podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.9"}]}),
        );
        assert_eq!(
            row("", "Pod", p)[5..],
            [
                json!("10.0.0.1"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>")
            ]
        );
    }

    /// Headers as `kubectl get` prints them (priority-0 columns) and the
    /// extra ones of `-o wide`, per the column definitions of AddHandlers.
    #[test]
    fn headers_of_the_common_kinds() {
        let headers = |group: &str, kind: &str, wide: u8| {
            columns(group, kind)
                .expect("a printer")
                .iter()
                .filter(|c| c.priority == wide)
                .map(|c| c.name.to_uppercase())
                .collect::<Vec<_>>()
                .join(" ")
        };
        let cases: &[(&str, &str, &str, &str)] = &[
            (
                "",
                "Service",
                "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE",
                "SELECTOR",
            ),
            (
                "",
                "Node",
                "NAME STATUS ROLES AGE VERSION",
                "INTERNAL-IP EXTERNAL-IP OS-IMAGE KERNEL-VERSION CONTAINER-RUNTIME",
            ),
            (
                "",
                "Event",
                "LAST SEEN TYPE REASON OBJECT MESSAGE",
                "SUBOBJECT SOURCE FIRST SEEN COUNT NAME",
            ),
            (
                "",
                "PersistentVolume",
                "NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM STORAGECLASS VOLUMEATTRIBUTESCLASS REASON AGE",
                "VOLUMEMODE",
            ),
            (
                "",
                "PersistentVolumeClaim",
                "NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE",
                "VOLUMEMODE",
            ),
            ("", "Secret", "NAME TYPE DATA AGE", ""),
            ("", "ConfigMap", "NAME DATA AGE", ""),
            ("", "ResourceQuota", "NAME AGE REQUEST LIMIT", ""),
            (
                "batch",
                "Job",
                "NAME STATUS COMPLETIONS DURATION AGE",
                "CONTAINERS IMAGES SELECTOR",
            ),
            (
                "batch",
                "CronJob",
                "NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE",
                "CONTAINERS IMAGES SELECTOR",
            ),
            ("apps", "StatefulSet", "NAME READY AGE", "CONTAINERS IMAGES"),
            (
                "apps",
                "DaemonSet",
                "NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE",
                "CONTAINERS IMAGES SELECTOR",
            ),
            (
                "networking.k8s.io",
                "Ingress",
                "NAME CLASS HOSTS ADDRESS PORTS AGE",
                "",
            ),
            (
                "discovery.k8s.io",
                "EndpointSlice",
                "NAME ADDRESSTYPE PORTS ENDPOINTS AGE",
                "",
            ),
            (
                "storage.k8s.io",
                "CSIDriver",
                "NAME ATTACHREQUIRED PODINFOONMOUNT STORAGECAPACITY TOKENREQUESTS REQUIRESREPUBLISH MODES AGE",
                "",
            ),
            (
                "storage.k8s.io",
                "StorageClass",
                "NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE",
                "",
            ),
            (
                "autoscaling",
                "HorizontalPodAutoscaler",
                "NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE",
                "",
            ),
            (
                "certificates.k8s.io",
                "CertificateSigningRequest",
                "NAME AGE SIGNERNAME REQUESTOR REQUESTEDDURATION CONDITION",
                "",
            ),
            (
                "flowcontrol.apiserver.k8s.io",
                "FlowSchema",
                "NAME PRIORITYLEVEL MATCHINGPRECEDENCE DISTINGUISHERMETHOD AGE MISSINGPL",
                "",
            ),
        ];
        for (group, kind, normal, wide) in cases {
            assert_eq!(headers(group, kind, 0), *normal, "{kind}");
            assert_eq!(headers(group, kind, 1), *wide, "{kind} wide");
        }
        // Only the Name column is marked as the name, except where upstream
        // marks another (VolumeAttachment's Attacher) or none (Scale).
        for (group, kind) in KINDS {
            let Some(cols) = columns(group, kind) else {
                continue;
            };
            let marked: Vec<&str> = cols
                .iter()
                .filter(|c| c.format == "name")
                .map(|c| c.name)
                .collect();
            match *kind {
                "VolumeAttachment" => assert_eq!(marked, ["Name", "Attacher"]),
                "Scale" | "StorageVersionMigration" => assert!(marked.is_empty()),
                _ => assert_eq!(marked, ["Name"], "{kind}"),
            }
        }
    }

    // ---- workloads

    fn workload(spec: Value, status: Value) -> Value {
        json!({"metadata": {"name": "web", "creationTimestamp": ago(300)},
            "spec": spec, "status": status})
    }

    fn template() -> Value {
        json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
            {"name": "fake-container1", "image": "fake-image1"},
            {"name": "fake-container2", "image": "fake-image2"}]}})
    }

    #[test]
    fn deployment() {
        // TestPrintDeployment
        let d = workload(
            json!({"replicas": 5, "template": template(),
                "selector": {"matchLabels": {"foo": "bar"}}}),
            json!({"replicas": 10, "updatedReplicas": 2, "availableReplicas": 1, "readyReplicas": 1}),
        );
        assert_eq!(
            Value::Array(row("apps", "Deployment", d)),
            json!([
                "web",
                "1/5",
                2,
                1,
                "5m",
                "fake-container1,fake-container2",
                "fake-image1,fake-image2",
                "foo=bar"
            ])
        );
        assert_eq!(
            names("apps", "Deployment"),
            [
                ("Name", 0),
                ("Ready", 0),
                ("Up-to-date", 0),
                ("Available", 0),
                ("Age", 0),
                ("Containers", 1),
                ("Images", 1),
                ("Selector", 1)
            ]
        );
        // Defaulted replicas; an empty selector prints nothing, a broken one <invalid>.
        let d = workload(json!({"selector": {}}), json!({}));
        let cells = row("apps", "Deployment", d);
        assert_eq!(cells[1], "0/1");
        assert_eq!(cells[7], "");
        let d = workload(
            json!({"selector": {"matchExpressions": [{"key": "a", "operator": "Bad"}]}}),
            json!({}),
        );
        assert_eq!(row("apps", "Deployment", d)[7], "<invalid>");
    }

    #[test]
    fn replica_set_and_replication_controller() {
        let rs = workload(
            json!({"replicas": 3, "template": template(), "selector": {"matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]},
                    {"key": "env", "operator": "DoesNotExist"}]}}),
            json!({"replicas": 3, "readyReplicas": 2}),
        );
        assert_eq!(
            Value::Array(row("apps", "ReplicaSet", rs)),
            json!([
                "web",
                3,
                3,
                2,
                "5m",
                "fake-container1,fake-container2",
                "fake-image1,fake-image2",
                "app=web,!env,tier in (a,b)"
            ])
        );
        let rc = workload(
            json!({"template": template(), "selector": {"b": "2", "a": "1"}}),
            json!({"replicas": 1}),
        );
        assert_eq!(
            Value::Array(row("", "ReplicationController", rc)),
            json!([
                "web",
                1,
                1,
                0,
                "5m",
                "fake-container1,fake-container2",
                "fake-image1,fake-image2",
                "a=1,b=2"
            ])
        );
    }

    #[test]
    fn daemon_set_and_stateful_set() {
        // TestPrintDaemonSet
        let ds = workload(
            json!({"template": {"spec": {"containers": [{"name": "c", "image": "i"}],
                "nodeSelector": {"disk": "ssd"}}}, "selector": {"matchLabels": {"app": "d"}}}),
            json!({"currentNumberScheduled": 2, "desiredNumberScheduled": 3, "numberReady": 1,
                "updatedNumberScheduled": 2, "numberAvailable": 0}),
        );
        assert_eq!(
            Value::Array(row("apps", "DaemonSet", ds)),
            json!(["web", 3, 2, 1, 2, 0, "disk=ssd", "5m", "c", "i", "app=d"])
        );
        let ds = workload(json!({}), json!({}));
        assert_eq!(row("apps", "DaemonSet", ds)[6], "<none>");
        assert_eq!(
            row("apps", "DaemonSet", workload(json!({}), json!({})))[10],
            "<none>"
        );

        let sts = workload(
            json!({"replicas": 5, "template": template()}),
            json!({"readyReplicas": 2}),
        );
        assert_eq!(
            Value::Array(row("apps", "StatefulSet", sts)),
            json!([
                "web",
                "2/5",
                "5m",
                "fake-container1,fake-container2",
                "fake-image1,fake-image2"
            ])
        );
    }

    #[test]
    fn job() {
        let j = |spec: Value, status: Value| row("batch", "Job", workload(spec, status));
        // TestPrintJob: completions, parallelism and the duration.
        let cells = j(
            json!({"completions": 2, "template": template(), "selector": {"matchLabels": {"a": "b"}}}),
            json!({"succeeded": 1, "startTime": ago(600), "completionTime": ago(290)}),
        );
        assert_eq!(
            Value::Array(cells),
            json!([
                "web",
                "Running",
                "1/2",
                "5m10s",
                "5m",
                "fake-container1,fake-container2",
                "fake-image1,fake-image2",
                "a=b"
            ])
        );
        assert_eq!(j(json!({"parallelism": 3}), json!({}))[2], "0/1 of 3");
        assert_eq!(j(json!({"parallelism": 1}), json!({}))[2], "0/1");
        assert_eq!(j(json!({}), json!({"succeeded": 1}))[2], "1/1");
        assert_eq!(j(json!({}), json!({"startTime": ago(65)}))[3], "65s");
        assert_eq!(j(json!({}), json!({}))[3], "");
        let cond = |t: &str, s: &str| json!({"conditions": [{"type": t, "status": s}]});
        assert_eq!(j(json!({}), cond("Complete", "True"))[1], "Complete");
        assert_eq!(j(json!({}), cond("Complete", "False"))[1], "Running");
        assert_eq!(j(json!({}), cond("Failed", "True"))[1], "Failed");
        assert_eq!(j(json!({}), cond("Suspended", "True"))[1], "Suspended");
        assert_eq!(
            j(json!({}), cond("FailureTarget", "True"))[1],
            "FailureTarget"
        );
        let mut deleted = workload(json!({}), cond("Suspended", "True"));
        deleted["metadata"]["deletionTimestamp"] = json!(ago(1));
        assert_eq!(row("batch", "Job", deleted)[1], "Terminating");
    }

    #[test]
    fn cron_job() {
        let cj = workload(
            json!({"schedule": "0/5 * * * ?", "suspend": false, "jobTemplate": {"spec": {
                "template": template(), "selector": {"matchLabels": {"a": "b"}}}}}),
            json!({"lastScheduleTime": ago(10), "active": [{"name": "x"}]}),
        );
        assert_eq!(
            Value::Array(row("batch", "CronJob", cj)),
            json!([
                "web",
                "0/5 * * * ?",
                "<none>",
                "False",
                1,
                "10s",
                "5m",
                "fake-container1,fake-container2",
                "fake-image1,fake-image2",
                "a=b"
            ])
        );
        let cj = workload(
            json!({"schedule": "@daily", "timeZone": "Etc/UTC", "suspend": true}),
            json!({}),
        );
        let cells = row("batch", "CronJob", cj);
        assert_eq!(
            cells[2..6],
            [json!("Etc/UTC"), json!("True"), json!(0), json!("<none>")]
        );
        assert_eq!(cells[9], "<none>");
    }

    #[test]
    fn pod_disruption_budget_and_template() {
        let pdb = workload(
            json!({"minAvailable": "22%"}),
            json!({"disruptionsAllowed": 5}),
        );
        assert_eq!(
            Value::Array(row("policy", "PodDisruptionBudget", pdb)),
            json!(["web", "22%", "N/A", 5, "5m"])
        );
        let pdb = workload(json!({"maxUnavailable": 1}), json!({}));
        assert_eq!(
            row("policy", "PodDisruptionBudget", pdb)[1..3],
            [json!("N/A"), json!("1")]
        );
        let pt = json!({"metadata": {"name": "t"}, "template": template()});
        assert_eq!(
            Value::Array(row("", "PodTemplate", pt)),
            json!([
                "t",
                "fake-container1,fake-container2",
                "fake-image1,fake-image2",
                "app=web"
            ])
        );
        assert_eq!(
            row("", "PodTemplate", json!({"metadata": {"name": "t"}}))[3],
            "<none>"
        );
    }

    #[test]
    fn controller_revision() {
        let mut cr = json!({"metadata": {"name": "web-6d4", "creationTimestamp": ago(5),
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web",
                "controller": true}]}, "revision": 3});
        assert_eq!(
            Value::Array(row("apps", "ControllerRevision", cr.clone())),
            json!(["web-6d4", "statefulset.apps/web", 3, "5s"])
        );
        cr["metadata"]["ownerReferences"][0]["apiVersion"] = json!("v1");
        assert_eq!(
            row("apps", "ControllerRevision", cr.clone())[1],
            "statefulset/web"
        );
        cr["metadata"]["ownerReferences"][0]["controller"] = json!(false);
        assert_eq!(row("apps", "ControllerRevision", cr)[1], "<none>");
    }

    // ---- core networking

    fn svc(spec: Value, status: Value) -> Vec<Value> {
        row(
            "",
            "Service",
            json!({"metadata": {"name": "svc", "creationTimestamp": ago(60)},
            "spec": spec, "status": status}),
        )
    }

    #[test]
    fn service() {
        // TestPrintService
        assert_eq!(
            Value::Array(svc(
                json!({"type": "ClusterIP", "clusterIP": "10.9.8.7", "clusterIPs": ["10.9.8.7"],
                    "ports": [{"protocol": "TCP", "port": 2233}], "selector": {"app": "x"}}),
                json!({}),
            )),
            json!([
                "svc",
                "ClusterIP",
                "10.9.8.7",
                "<none>",
                "2233/TCP",
                "60s",
                "app=x"
            ])
        );
        let cells = svc(
            json!({"type": "NodePort", "clusterIPs": ["10.9.8.7"],
                "ports": [{"port": 80, "nodePort": 30000}, {"protocol": "UDP", "port": 53}]}),
            json!({}),
        );
        assert_eq!(cells[3..5], [json!("<none>"), json!("80:30000/TCP,53/UDP")]);
        assert_eq!(cells[6], "<none>");
        let cells = svc(
            json!({"type": "LoadBalancer", "clusterIPs": ["10.0.0.1"]}),
            json!({}),
        );
        assert_eq!(cells[3..5], [json!("<pending>"), json!("<none>")]);
        let cells = svc(
            json!({"type": "LoadBalancer", "externalIPs": ["3.3.3.3"]}),
            json!({"loadBalancer": {"ingress": [{"ip": "2.2.2.2"}, {"hostname": "lb.example.com"},
                {"ip": "1.1.1.1"}]}}),
        );
        assert_eq!(
            cells[2..4],
            [
                json!("<none>"),
                json!("1.1.1.1,2.2.2.2,lb.example.com,3.3.3.3")
            ]
        );
        let cells = svc(
            json!({"type": "ExternalName", "externalName": "db.example.com"}),
            json!({}),
        );
        assert_eq!(cells[3], "db.example.com");
        let cells = svc(
            json!({"clusterIP": "None", "externalIPs": ["5.5.5.5", "6.6.6.6"]}),
            json!({}),
        );
        assert_eq!(
            cells[1..4],
            [json!("ClusterIP"), json!("None"), json!("5.5.5.5,6.6.6.6")]
        );
        assert_eq!(svc(json!({"type": "Weird"}), json!({}))[3], "<unknown>");
    }

    #[test]
    fn endpoints_and_slices() {
        // TestPrintEndpoint
        let ep = |subsets: Value| {
            row(
                "",
                "Endpoints",
                json!({"metadata": {"name": "e"}, "subsets": subsets}),
            )[1]
            .clone()
        };
        assert_eq!(ep(json!([])), "<none>");
        assert_eq!(
            ep(
                json!([{"addresses": [{"ip": "127.0.0.1"}, {"ip": "::1"}], "ports": [{"port": 8080}]}])
            ),
            "127.0.0.1:8080,[::1]:8080"
        );
        assert_eq!(
            ep(json!([{"addresses": [{"ip": "1.1.1.1"}, {"ip": "2.2.2.2"}],
                "ports": [{"port": 80}, {"port": 443}, {"port": 8080}]}])),
            "1.1.1.1:80,2.2.2.2:80,1.1.1.1:443 + 3 more..."
        );
        assert_eq!(ep(json!([{"addresses": [{"ip": "10.0.0.1"}]}])), "10.0.0.1");

        let slice = json!({"metadata": {"name": "s", "creationTimestamp": ago(30)},
            "addressType": "IPv4",
            "ports": [{"port": 80}, {"name": "https"}, {}, {"port": 9}],
            "endpoints": [{"addresses": ["10.1.2.3"]}, {"addresses": ["2001:db8::1", "10.1.2.4"]}]});
        assert_eq!(
            Value::Array(row("discovery.k8s.io", "EndpointSlice", slice)),
            json!([
                "s",
                "IPv4",
                "80,https,* + 1 more...",
                "10.1.2.3,2001:db8::1,10.1.2.4",
                "30s"
            ])
        );
        let empty = json!({"metadata": {"name": "s"}, "addressType": "FQDN"});
        assert_eq!(
            row("discovery.k8s.io", "EndpointSlice", empty)[2..4],
            [json!("<unset>"), json!("<unset>")]
        );
    }

    #[test]
    fn ingress_and_class() {
        let ing = json!({"metadata": {"name": "test1", "creationTimestamp": ago(10)},
            "spec": {"ingressClassName": "foo", "rules": [{"host": "a"}, {"host": "b"}, {},
                {"host": "c"}, {"host": "d"}], "tls": [{"hosts": ["a"]}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "2.3.4.5"}, {"hostname": "lb.example"}]}}});
        assert_eq!(
            Value::Array(row("networking.k8s.io", "Ingress", ing)),
            json!([
                "test1",
                "foo",
                "a,b,c + 2 more...",
                "2.3.4.5,lb.example",
                "80, 443",
                "10s"
            ])
        );
        let ing = json!({"metadata": {"name": "x"}, "spec": {"rules": [{}]}});
        assert_eq!(
            row("networking.k8s.io", "Ingress", ing)[1..5],
            [json!("<none>"), json!("*"), json!(""), json!("80")]
        );
        let class = json!({"metadata": {"name": "nginx"}, "spec": {"controller": "k8s.io/ingress-nginx",
            "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "p"}}});
        assert_eq!(
            row("networking.k8s.io", "IngressClass", class)[1..3],
            [
                json!("k8s.io/ingress-nginx"),
                json!("IngressParameters.k8s.example.com/p")
            ]
        );
        let class = json!({"metadata": {"name": "c"}, "spec": {"controller": "x"}});
        assert_eq!(row("networking.k8s.io", "IngressClass", class)[2], "<none>");
    }

    #[test]
    fn network_policy_and_selectors() {
        let np = |sel: Value| {
            row(
                "networking.k8s.io",
                "NetworkPolicy",
                json!({"metadata": {"name": "np"}, "spec": {"podSelector": sel}}),
            )[1]
            .clone()
        };
        assert_eq!(np(json!({})), "<none>");
        assert_eq!(
            np(json!({"matchLabels": {"app": "db", "tier": "x"}})),
            "app=db,tier=x"
        );
        assert_eq!(
            np(
                json!({"matchExpressions": [{"key": "b", "operator": "NotIn", "values": ["z", "y"]},
                {"key": "a", "operator": "Exists"}]})
            ),
            "a,b notin (y,z)"
        );
        assert_eq!(
            np(json!({"matchExpressions": [{"key": "a", "operator": "In"}]})),
            "<error>"
        );
        assert_eq!(
            np(json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["v"]}]})),
            "<error>"
        );
        assert_eq!(np(json!({"matchLabels": {"bad key": "v"}})), "<error>");
        assert_eq!(np(json!({"matchLabels": {"k": "bad value!"}})), "<error>");
        let np = json!({"metadata": {"name": "np"}});
        assert_eq!(row("networking.k8s.io", "NetworkPolicy", np)[1], "<none>");
    }

    #[test]
    fn node() {
        // TestPrintNodeStatus, TestPrintNodeRole, TestPrintNodeOSImage...
        let n = json!({"metadata": {"name": "n1", "creationTimestamp": ago(86400 * 3),
                "labels": {"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/": "x",
                    "kubernetes.io/role": "worker", "other": "y"}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "MemoryPressure", "status": "False"},
                    {"type": "Ready", "status": "True"}],
                "addresses": [{"type": "Hostname", "address": "n1"}, {"type": "InternalIP", "address": "10.0.0.5"}],
                "nodeInfo": {"kubeletVersion": "v1.33.0", "osImage": "Debian"}}});
        assert_eq!(
            Value::Array(row("", "Node", n)),
            json!([
                "n1",
                "Ready,SchedulingDisabled",
                "control-plane,worker",
                "3d",
                "v1.33.0",
                "10.0.0.5",
                "<none>",
                "Debian",
                "<unknown>",
                "<unknown>"
            ])
        );
        let n = json!({"metadata": {"name": "n2"}, "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}});
        assert_eq!(
            row("", "Node", n)[1..3],
            [json!("NotReady"), json!("<none>")]
        );
        assert_eq!(
            row("", "Node", json!({"metadata": {"name": "n3"}}))[1],
            "Unknown"
        );
    }

    // ---- events

    #[test]
    fn core_event() {
        // TestPrintEvent
        let e = json!({"metadata": {"name": "event1"},
            "involvedObject": {"kind": "Deployment", "name": "foo", "namespace": "default",
                "fieldPath": "spec.containers{foo}"},
            "source": {"component": "kubelet", "host": "Node1"},
            "reason": "Event Reason", "message": " Message Data \n", "type": "Normal",
            "firstTimestamp": ago(3 * 86400), "lastTimestamp": ago(2 * 86400), "count": 6});
        assert_eq!(
            Value::Array(row("", "Event", e)),
            json!([
                "2d",
                "Normal",
                "Event Reason",
                "deployment/foo",
                "spec.containers{foo}",
                "kubelet, Node1",
                "Message Data",
                "3d",
                6,
                "event1"
            ])
        );
        // No timestamps but the event time, no count, reporting fields as source.
        let e = json!({"metadata": {"name": "event2"}, "involvedObject": {"kind": "Node"},
            "eventTime": "2024-05-01T11:59:30.000000Z", "reportingComponent": "ctrl",
            "type": "Warning"});
        let cells = row("", "Event", e);
        assert_eq!(
            cells[..4],
            [json!("30s"), json!("Warning"), json!(""), json!("node")]
        );
        assert_eq!(cells[5], "ctrl");
        assert_eq!(cells[7..9], [json!("30s"), json!(1)]);
        // A series overrides the last time and the count.
        let e = json!({"metadata": {"name": "e"}, "count": 3, "firstTimestamp": ago(600),
            "series": {"count": 9, "lastObservedTime": "2024-05-01T11:59:00.000000Z"}});
        let cells = row("", "Event", e);
        assert_eq!(cells[0], "60s");
        assert_eq!(cells[7..9], [json!("10m"), json!(9)]);
        assert_eq!(row("", "Event", json!({}))[0], "<unknown>");
    }

    #[test]
    fn events_api_event() {
        let e = json!({"metadata": {"name": "ev", "namespace": "default"},
            "regarding": {"kind": "Pod", "name": "web-0", "fieldPath": "spec.containers{app}"},
            "reason": "Pulled", "note": "Image pulled", "type": "Normal",
            "eventTime": ago(90), "reportingController": "kubelet", "reportingInstance": "node-1",
            "deprecatedCount": 2, "deprecatedFirstTimestamp": ago(120),
            "deprecatedLastTimestamp": ago(90)});
        assert_eq!(
            Value::Array(row("events.k8s.io", "Event", e)),
            json!([
                "90s",
                "Normal",
                "Pulled",
                "pod/web-0",
                "spec.containers{app}",
                "kubelet, node-1",
                "Image pulled",
                "2m",
                2,
                "ev"
            ])
        );
        assert_eq!(columns("events.k8s.io", "Event"), columns("", "Event"));
    }

    // ---- config and storage

    #[test]
    fn namespace_secret_config_map_service_account() {
        let ns = json!({"metadata": {"name": "ns1", "creationTimestamp": ago(45)},
            "status": {"phase": "Terminating"}});
        assert_eq!(
            Value::Array(row("", "Namespace", ns)),
            json!(["ns1", "Terminating", "45s"])
        );
        assert_eq!(
            row("", "Namespace", json!({"metadata": {"name": "x"}}))[1],
            "Active"
        );

        let secret = json!({"metadata": {"name": "s"}, "type": "kubernetes.io/tls",
            "data": {"tls.crt": "", "tls.key": ""}});
        assert_eq!(
            Value::Array(row("", "Secret", secret)),
            json!(["s", "kubernetes.io/tls", 2, "<unknown>"])
        );
        assert_eq!(
            row("", "Secret", json!({}))[1..3],
            [json!("Opaque"), json!(0)]
        );

        let cm =
            json!({"metadata": {"name": "cm"}, "data": {"a": "1"}, "binaryData": {"b": "AA=="}});
        assert_eq!(row("", "ConfigMap", cm)[1], 2);
        let sa = json!({"metadata": {"name": "default"}, "secrets": [{"name": "tok"}]});
        assert_eq!(
            names("", "ServiceAccount"),
            [("Name", 0), ("Secrets", 0), ("Age", 0)]
        );
        assert_eq!(row("", "ServiceAccount", sa)[1], 1);
    }

    #[test]
    fn persistent_volumes_and_claims() {
        // TestPrintPersistentVolume, TestPrintPersistentVolumeClaim
        let pv = json!({"metadata": {"name": "pv1", "creationTimestamp": ago(60)},
            "spec": {"capacity": {"storage": "4Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce",
                "ReadWriteOnce"], "claimRef": {"namespace": "default", "name": "claim"},
                "storageClassName": "fast", "persistentVolumeReclaimPolicy": "Delete"},
            "status": {"phase": "Bound"}});
        assert_eq!(
            Value::Array(row("", "PersistentVolume", pv)),
            json!([
                "pv1",
                "4Gi",
                "RWO,RWX",
                "Delete",
                "Bound",
                "default/claim",
                "fast",
                "<unset>",
                "",
                "60s",
                "Filesystem"
            ])
        );
        let pv = json!({"metadata": {"name": "pv2", "deletionTimestamp": ago(1),
                "annotations": {"volume.beta.kubernetes.io/storage-class": "beta"}},
            "spec": {"volumeMode": "Block", "volumeAttributesClassName": "gold"},
            "status": {"reason": "Lost"}});
        assert_eq!(
            Value::Array(row("", "PersistentVolume", pv)),
            json!([
                "pv2",
                "0",
                "",
                "Retain",
                "Terminating",
                "",
                "beta",
                "gold",
                "Lost",
                "<unknown>",
                "Block"
            ])
        );
        let pvc = json!({"metadata": {"name": "c1", "creationTimestamp": ago(60)},
            "spec": {"volumeName": "pv1", "storageClassName": "fast",
                "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"phase": "Bound", "capacity": {"storage": "4Gi"}, "accessModes": ["ReadOnlyMany"]}});
        assert_eq!(
            Value::Array(row("", "PersistentVolumeClaim", pvc)),
            json!([
                "c1",
                "Bound",
                "pv1",
                "4Gi",
                "ROX",
                "fast",
                "<unset>",
                "60s",
                "Filesystem"
            ])
        );
        let pvc = json!({"metadata": {"name": "c2"}, "spec": {}});
        assert_eq!(
            row("", "PersistentVolumeClaim", pvc)[1..6],
            [json!("Pending"), json!(""), json!(""), json!(""), json!("")]
        );
    }

    #[test]
    fn resource_quota() {
        // TestPrintResourceQuota: sorted by name, limits.* in their own column.
        let rq = json!({"metadata": {"name": "q", "creationTimestamp": ago(10)},
            "status": {"hard": {"pods": "10", "limits.memory": "2Gi", "cpu": "1",
                "requests.memory": "1Gi", "limits.cpu": "2"},
                "used": {"cpu": "100m", "pods": "1", "limits.cpu": "0"}}});
        assert_eq!(
            Value::Array(row("", "ResourceQuota", rq)),
            json!([
                "q",
                "10s",
                "cpu: 100m/1, pods: 1/10, requests.memory: 0/1Gi",
                "limits.cpu: 0/2, limits.memory: 0/2Gi"
            ])
        );
        assert_eq!(
            row("", "ResourceQuota", json!({}))[2..4],
            [json!(""), json!("")]
        );
    }

    #[test]
    fn storage_kinds() {
        let sc = json!({"metadata": {"name": "standard", "creationTimestamp": ago(5),
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "rancher.io/local-path", "volumeBindingMode": "WaitForFirstConsumer"});
        assert_eq!(
            Value::Array(row("storage.k8s.io", "StorageClass", sc)),
            json!([
                "standard (default)",
                "rancher.io/local-path",
                "Delete",
                "WaitForFirstConsumer",
                false,
                "5s"
            ])
        );
        let va = json!({"metadata": {"name": "csi-1"}, "spec": {"attacher": "ebs.csi.aws.com",
            "source": {"persistentVolumeName": "pv1"}, "nodeName": "n1"}, "status": {"attached": true}});
        assert_eq!(
            Value::Array(row("storage.k8s.io", "VolumeAttachment", va)),
            json!(["csi-1", "ebs.csi.aws.com", "pv1", "n1", true, "<unknown>"])
        );
        assert_eq!(
            columns("storage.k8s.io", "VolumeAttachment").expect("va")[1].format,
            "name"
        );
        let node = json!({"metadata": {"name": "n1"}, "spec": {"drivers": [{"name": "a"}, {"name": "b"}]}});
        assert_eq!(row("storage.k8s.io", "CSINode", node)[1], 2);
        let driver = json!({"metadata": {"name": "d"}, "spec": {}});
        assert_eq!(
            Value::Array(row("storage.k8s.io", "CSIDriver", driver)),
            json!([
                "d",
                true,
                false,
                false,
                "<unset>",
                false,
                "Persistent",
                "<unknown>"
            ])
        );
        let driver = json!({"metadata": {"name": "d"}, "spec": {"attachRequired": false,
            "tokenRequests": [{"audience": "a"}, {"audience": "b"}],
            "volumeLifecycleModes": ["Persistent", "Ephemeral"]}});
        assert_eq!(
            row("storage.k8s.io", "CSIDriver", driver)[1..7],
            [
                json!(false),
                json!(false),
                json!(false),
                json!("a,b"),
                json!(false),
                json!("Persistent,Ephemeral")
            ]
        );
        let cap = json!({"metadata": {"name": "c"}, "storageClassName": "fast"});
        assert_eq!(
            Value::Array(row("storage.k8s.io", "CSIStorageCapacity", cap)),
            json!(["c", "fast", "<unset>"])
        );
    }

    // ---- rbac, certificates, coordination, scheduling, node

    #[test]
    fn bindings_and_roles() {
        let rb = json!({"metadata": {"name": "rb", "creationTimestamp": ago(3600 * 9)},
            "roleRef": {"kind": "ClusterRole", "name": "view", "apiGroup": "rbac.authorization.k8s.io"},
            "subjects": [{"kind": "User", "name": "alice"}, {"kind": "Group", "name": "devs"},
                {"kind": "ServiceAccount", "namespace": "ci", "name": "bot"},
                {"kind": "User", "name": "bob"}]});
        assert_eq!(
            Value::Array(row("rbac.authorization.k8s.io", "RoleBinding", rb.clone())),
            json!([
                "rb",
                "ClusterRole/view",
                "9h",
                "alice, bob",
                "devs",
                "ci/bot"
            ])
        );
        assert_eq!(
            row("rbac.authorization.k8s.io", "ClusterRoleBinding", rb)[1],
            "ClusterRole/view"
        );
        assert_eq!(
            names("rbac.authorization.k8s.io", "ClusterRoleBinding"),
            [
                ("Name", 0),
                ("Role", 0),
                ("Age", 0),
                ("Users", 1),
                ("Groups", 1),
                ("ServiceAccounts", 1)
            ]
        );
        // Roles have no printer: the default table, created-at in RFC 3339.
        assert_eq!(columns("rbac.authorization.k8s.io", "Role"), None);
        assert_eq!(columns("", "LimitRange"), None);
        let role =
            json!({"metadata": {"name": "r", "creationTimestamp": "2024-04-30T10:00:00.5+02:00"}});
        assert_eq!(
            cells("rbac.authorization.k8s.io", "Role", &role, now()),
            [json!("r"), json!("2024-04-30T08:00:00Z")]
        );
        assert_eq!(default_cells(&json!({}))[1], "0001-01-01T00:00:00Z");
        let cols = default_columns();
        assert_eq!(
            cols.iter()
                .map(|c| (c.name, c.type_, c.format))
                .collect::<Vec<_>>(),
            [("Name", "string", "name"), ("Created At", "date", "")]
        );
    }

    #[test]
    fn certificate_signing_request() {
        // TestPrintCertificateSigningRequest
        let csr = |status: Value, spec: Value| {
            row(
                "certificates.k8s.io",
                "CertificateSigningRequest",
                json!({"metadata": {"name": "csr1", "creationTimestamp": ago(60)},
                    "spec": spec, "status": status}),
            )
        };
        assert_eq!(
            Value::Array(csr(json!({}), json!({"username": "CSRRequestor"}))),
            json!(["csr1", "60s", "<none>", "CSRRequestor", "<none>", "Pending"])
        );
        let cells = csr(
            json!({"conditions": [{"type": "Approved"}, {"type": "Denied"}]}),
            json!({"signerName": "example.com/signer", "expirationSeconds": 7200}),
        );
        assert_eq!(
            cells[2..6],
            [
                json!("example.com/signer"),
                json!(""),
                json!("120m"),
                json!("Denied")
            ]
        );
        let cells = csr(
            json!({"conditions": [{"type": "Approved"}, {"type": "Failed"}], "certificate": "Y2VydA=="}),
            json!({}),
        );
        assert_eq!(cells[5], "Approved,Failed,Issued");
        assert_eq!(
            csr(json!({}), json!({"expirationSeconds": 86400}))[4],
            "24h"
        );
    }

    #[test]
    fn small_kinds() {
        let lease = json!({"metadata": {"name": "l", "creationTimestamp": ago(3)},
            "spec": {"holderIdentity": "node-1"}});
        assert_eq!(
            Value::Array(row("coordination.k8s.io", "Lease", lease)),
            json!(["l", "node-1", "3s"])
        );
        assert_eq!(row("coordination.k8s.io", "Lease", json!({}))[1], "");
        let pc = json!({"metadata": {"name": "high"}, "value": 1000000, "globalDefault": true});
        assert_eq!(
            Value::Array(row("scheduling.k8s.io", "PriorityClass", pc)),
            json!(["high", 1000000, true, "<unknown>", "PreemptLowerPriority"])
        );
        assert_eq!(
            names("scheduling.k8s.io", "PriorityClass"),
            [
                ("Name", 0),
                ("Value", 0),
                ("Global-Default", 0),
                ("Age", 0),
                ("PreemptionPolicy", 0)
            ]
        );
        let rc = json!({"metadata": {"name": "gvisor"}, "handler": "runsc"});
        assert_eq!(row("node.k8s.io", "RuntimeClass", rc)[1], "runsc");
        let wh = json!({"metadata": {"name": "w"}, "webhooks": [{}, {}, {}]});
        assert_eq!(
            row(
                "admissionregistration.k8s.io",
                "MutatingWebhookConfiguration",
                wh.clone()
            )[1],
            3
        );
        assert_eq!(
            row(
                "admissionregistration.k8s.io",
                "ValidatingWebhookConfiguration",
                wh
            )[1],
            3
        );
        let cs = json!({"metadata": {"name": "etcd-0"}, "conditions": [{"type": "Healthy",
            "status": "True", "message": "ok"}]});
        assert_eq!(
            Value::Array(row("", "ComponentStatus", cs)),
            json!(["etcd-0", "Healthy", "ok", ""])
        );
    }

    #[test]
    fn admission_policies() {
        let vap = json!({"metadata": {"name": "p"}, "spec": {"validations": [{}, {}],
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}});
        assert_eq!(
            row(
                "admissionregistration.k8s.io",
                "ValidatingAdmissionPolicy",
                vap
            )[1..3],
            [json!(2), json!("v1/ConfigMap")]
        );
        let vap = json!({"metadata": {"name": "p"}, "spec": {}});
        assert_eq!(
            row(
                "admissionregistration.k8s.io",
                "ValidatingAdmissionPolicy",
                vap
            )[2],
            "<unset>"
        );
        let binding = |param: Value| {
            row(
                "admissionregistration.k8s.io",
                "ValidatingAdmissionPolicyBinding",
                json!({"metadata": {"name": "b"}, "spec": {"policyName": "p", "paramRef": param}}),
            )[2]
            .clone()
        };
        assert_eq!(binding(Value::Null), "<unset>");
        assert_eq!(binding(json!({"name": "cfg", "namespace": "ns"})), "ns/cfg");
        assert_eq!(binding(json!({"name": "cfg"})), "*/cfg");
        assert_eq!(
            binding(json!({"selector": {"matchLabels": {"b": "2", "a": "1"},
                "matchExpressions": [{"key": "k", "operator": "In", "values": ["x", "y"]}]}})),
            "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:k,Operator:In,Values:[x y],},},}"
        );
        let map_ = json!({"metadata": {"name": "m"}, "spec": {"mutations": [{}]}});
        assert_eq!(
            row(
                "admissionregistration.k8s.io",
                "MutatingAdmissionPolicy",
                map_
            )[1],
            1
        );
    }

    #[test]
    fn flow_control() {
        let fs = json!({"metadata": {"name": "system-nodes"}, "spec": {
                "priorityLevelConfiguration": {"name": "system"}, "matchingPrecedence": 500,
                "distinguisherMethod": {"type": "ByUser"}},
            "status": {"conditions": [{"type": "Dangling", "status": "False"}]}});
        assert_eq!(
            Value::Array(row("flowcontrol.apiserver.k8s.io", "FlowSchema", fs)),
            json!([
                "system-nodes",
                "system",
                500,
                "ByUser",
                "<unknown>",
                "False"
            ])
        );
        let fs = json!({"metadata": {"name": "f"}, "spec": {}});
        let cells = row("flowcontrol.apiserver.k8s.io", "FlowSchema", fs);
        assert_eq!(cells[2..4], [json!(1000), json!("<none>")]);
        assert_eq!(cells[5], "?");
        let pl = json!({"metadata": {"name": "global-default"}, "spec": {"type": "Limited",
            "limited": {"nominalConcurrencyShares": 20, "limitResponse": {"type": "Queue",
                "queuing": {"queues": 128, "handSize": 6, "queueLengthLimit": 50}}}}});
        assert_eq!(
            Value::Array(row(
                "flowcontrol.apiserver.k8s.io",
                "PriorityLevelConfiguration",
                pl
            )),
            json!(["global-default", "Limited", 20, 128, 6, 50, "<unknown>"])
        );
        let pl = json!({"metadata": {"name": "p"}, "spec": {"type": "Limited",
            "limited": {"limitResponse": {"type": "Queue", "queuing": {"queues": 0}}}}});
        assert_eq!(
            row(
                "flowcontrol.apiserver.k8s.io",
                "PriorityLevelConfiguration",
                pl
            )[2..6],
            [json!(30), json!(64), json!(8), json!(50)]
        );
        let pl = json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt", "exempt": {}}});
        assert_eq!(
            row(
                "flowcontrol.apiserver.k8s.io",
                "PriorityLevelConfiguration",
                pl
            )[2..6],
            [
                json!("<none>"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>")
            ]
        );
    }

    #[test]
    fn horizontal_pod_autoscaler() {
        let hpa = |spec: Value, status: Value| {
            row(
                "autoscaling",
                "HorizontalPodAutoscaler",
                json!({"metadata": {"name": "h"}, "spec": spec, "status": status}),
            )
        };
        // autoscaling/v1: the CPU target is converted to a Resource metric.
        let cells = hpa(
            json!({"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 1,
                "maxReplicas": 10, "targetCPUUtilizationPercentage": 80}),
            json!({"currentReplicas": 4, "currentCPUUtilizationPercentage": 50}),
        );
        assert_eq!(
            Value::Array(cells),
            json!([
                "h",
                "Deployment/web",
                "cpu: 50%/80%",
                "1",
                10,
                4,
                "<unknown>"
            ])
        );
        // TestPrintHPA: v2 metrics, two shown then "+ N more...".
        let metrics = json!([
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}},
            {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "100"}}},
            {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}}}
        ]);
        let cells = hpa(
            json!({"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3, "metrics": metrics}),
            json!({"currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 10}}}]}),
        );
        assert_eq!(cells[2], "cpu: 10%/80%, <unknown>/100 + 1 more...");
        assert_eq!(cells[3], "1");
        let cells = hpa(
            json!({"metrics": [{"type": "External", "external": {"target": {"value": "5"}}},
            {"type": "Other"}]}),
            json!({}),
        );
        assert_eq!(cells[2], "<unknown>/5, <unknown type>");
        assert_eq!(hpa(json!({}), json!({}))[2], "<none>");
    }

    #[test]
    fn newer_and_internal_kinds() {
        let sv = json!({"metadata": {"name": "apps.deployments"}, "status": {
            "storageVersions": [{"apiServerID": "a", "encodingVersion": "apps/v1"},
                {"apiServerID": "b", "encodingVersion": "apps/v1"}, {"apiServerID": "c", "encodingVersion": "v1"},
                {"apiServerID": "d", "encodingVersion": "v1"}]}});
        assert_eq!(
            row("internal.apiserver.k8s.io", "StorageVersion", sv)[1..3],
            [
                json!("<unset>"),
                json!("a=apps/v1,b=apps/v1,c=v1 + 1 more...")
            ]
        );
        let claim = |status: Value, deleting: bool| {
            let mut o = json!({"metadata": {"name": "c"}, "status": status});
            if deleting {
                o["metadata"]["deletionTimestamp"] = json!(ago(1));
            }
            row("resource.k8s.io", "ResourceClaim", o)[1].clone()
        };
        assert_eq!(claim(json!({}), false), "pending");
        assert_eq!(claim(json!({}), true), "deleted");
        assert_eq!(
            claim(json!({"allocation": {}, "reservedFor": [{}]}), true),
            "deleted,allocated,reserved"
        );
        let ip = json!({"metadata": {"name": "10.96.0.1"}, "spec": {"parentRef": {"group": "",
            "resource": "services", "namespace": "default", "name": "kubernetes"}}});
        assert_eq!(
            row("networking.k8s.io", "IPAddress", ip)[1],
            "services/default/kubernetes"
        );
        let cidr = json!({"metadata": {"name": "kubernetes"}, "spec": {"cidrs": ["10.96.0.0/12", "fd00::/108"]}});
        assert_eq!(
            row("networking.k8s.io", "ServiceCIDR", cidr)[1],
            "10.96.0.0/12,fd00::/108"
        );
        let svm = json!({"metadata": {"name": "m"}, "spec": {"resource": {"group": "apps", "version": "v1",
            "resource": "deployments"}}});
        assert_eq!(
            row("storagemigration.k8s.io", "StorageVersionMigration", svm)[1],
            "deployments.v1.apps"
        );
        let slice = json!({"metadata": {"name": "s"}, "spec": {"nodeName": "n", "driver": "gpu.example.com",
            "pool": {"name": "p"}}});
        assert_eq!(
            row("resource.k8s.io", "ResourceSlice", slice)[1..4],
            [json!("n"), json!("gpu.example.com"), json!("p")]
        );
        let api = |o: Value| row("apiregistration.k8s.io", "APIService", o);
        let local = json!({"metadata": {"name": "v1.apps", "creationTimestamp": ago(100)},
            "spec": {"group": "apps"}, "status": {"conditions": [{"type": "Available", "status": "True",
                "reason": "Local"}]}});
        assert_eq!(
            Value::Array(api(local)),
            json!(["v1.apps", "Local", "True", "100s"])
        );
        let remote = json!({"metadata": {"name": "v1beta1.metrics.k8s.io"},
            "spec": {"service": {"namespace": "kube-system", "name": "metrics-server"}},
            "status": {"conditions": [{"type": "Available", "status": "False",
                "reason": "MissingEndpoints"}]}});
        assert_eq!(
            api(remote)[1..3],
            [
                json!("kube-system/metrics-server"),
                json!("False (MissingEndpoints)")
            ]
        );
        assert_eq!(api(json!({}))[2], "Unknown");
        assert_eq!(columns("core", "Pod"), columns("", "Pod"));
        assert_eq!(columns("apps", "Pod"), None);
        assert_eq!(columns("", "Deployment"), None);
    }

    // ---- properties

    const KINDS: &[(&str, &str)] = &[
        ("", "Pod"),
        ("", "PodTemplate"),
        ("", "ReplicationController"),
        ("", "Service"),
        ("", "Endpoints"),
        ("", "Node"),
        ("", "Event"),
        ("", "Namespace"),
        ("", "Secret"),
        ("", "ServiceAccount"),
        ("", "PersistentVolume"),
        ("", "PersistentVolumeClaim"),
        ("", "ComponentStatus"),
        ("", "ConfigMap"),
        ("", "ResourceQuota"),
        ("", "LimitRange"),
        ("events.k8s.io", "Event"),
        ("policy", "PodDisruptionBudget"),
        ("apps", "ReplicaSet"),
        ("apps", "DaemonSet"),
        ("apps", "StatefulSet"),
        ("apps", "Deployment"),
        ("apps", "ControllerRevision"),
        ("batch", "Job"),
        ("batch", "CronJob"),
        ("networking.k8s.io", "Ingress"),
        ("networking.k8s.io", "IngressClass"),
        ("networking.k8s.io", "NetworkPolicy"),
        ("networking.k8s.io", "ServiceCIDR"),
        ("networking.k8s.io", "IPAddress"),
        ("autoscaling", "HorizontalPodAutoscaler"),
        ("autoscaling", "Scale"),
        ("rbac.authorization.k8s.io", "RoleBinding"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("rbac.authorization.k8s.io", "Role"),
        ("certificates.k8s.io", "CertificateSigningRequest"),
        ("certificates.k8s.io", "ClusterTrustBundle"),
        ("coordination.k8s.io", "Lease"),
        ("coordination.k8s.io", "LeaseCandidate"),
        ("storage.k8s.io", "StorageClass"),
        ("storage.k8s.io", "VolumeAttributesClass"),
        ("storage.k8s.io", "VolumeAttachment"),
        ("storage.k8s.io", "CSINode"),
        ("storage.k8s.io", "CSIDriver"),
        ("storage.k8s.io", "CSIStorageCapacity"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("node.k8s.io", "RuntimeClass"),
        ("discovery.k8s.io", "EndpointSlice"),
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration",
        ),
        (
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration",
        ),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
        (
            "admissionregistration.k8s.io",
            "ValidatingAdmissionPolicyBinding",
        ),
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
        (
            "admissionregistration.k8s.io",
            "MutatingAdmissionPolicyBinding",
        ),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
        ("internal.apiserver.k8s.io", "StorageVersion"),
        ("resource.k8s.io", "DeviceClass"),
        ("resource.k8s.io", "ResourceClaim"),
        ("resource.k8s.io", "ResourceClaimTemplate"),
        ("resource.k8s.io", "ResourceSlice"),
        ("storagemigration.k8s.io", "StorageVersionMigration"),
        ("apiregistration.k8s.io", "APIService"),
    ];

    /// JSON built from the field names the printers read, so that random
    /// trees reach deep into the objects.
    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            (-5i64..5).prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            prop_oneof![
                Just("2024-04-30T12:00:00Z"),
                Just("0001-01-01T00:00:00Z"),
                Just("9999-12-31T23:59:59Z"),
                Just("True"),
                Just("Always"),
                Just("In"),
                Just("Exists"),
                Just("Ready"),
                Just("Completed"),
                Just("LoadBalancer"),
                Just("limits.cpu"),
                Just("::1"),
                Just(""),
            ]
            .prop_map(Value::from),
            "[a-z/. :-]{0,6}".prop_map(Value::from),
        ];
        let keys = prop_oneof![
            Just("metadata"),
            Just("name"),
            Just("spec"),
            Just("status"),
            Just("creationTimestamp"),
            Just("deletionTimestamp"),
            Just("containers"),
            Just("initContainers"),
            Just("containerStatuses"),
            Just("initContainerStatuses"),
            Just("state"),
            Just("lastState"),
            Just("terminated"),
            Just("waiting"),
            Just("running"),
            Just("finishedAt"),
            Just("restartCount"),
            Just("ready"),
            Just("started"),
            Just("reason"),
            Just("exitCode"),
            Just("signal"),
            Just("conditions"),
            Just("type"),
            Just("phase"),
            Just("replicas"),
            Just("selector"),
            Just("matchLabels"),
            Just("matchExpressions"),
            Just("key"),
            Just("operator"),
            Just("values"),
            Just("ports"),
            Just("port"),
            Just("nodePort"),
            Just("template"),
            Just("labels"),
            Just("subsets"),
            Just("addresses"),
            Just("ip"),
            Just("metrics"),
            Just("resource"),
            Just("target"),
            Just("averageValue"),
            Just("current"),
            Just("currentMetrics"),
            Just("hard"),
            Just("used"),
            Just("parentRef"),
            Just("paramRef"),
            Just("limited"),
            Just("queuing"),
            Just("limitResponse"),
            Just("series"),
            Just("count"),
            Just("startTime"),
            Just("completionTime"),
            Just("completions"),
            Just("parallelism"),
            Just("jobTemplate"),
            Just("loadBalancer"),
            Just("ingress"),
            Just("rules"),
            Just("endpoints"),
            Just("storageVersions"),
            Just("ownerReferences"),
            Just("controller"),
            Just("apiVersion"),
            Just("subjects"),
            Just("kind"),
            Just("capacity"),
            Just("storage"),
            Just("clusterIPs"),
            Just("externalIPs"),
            Just("podIPs"),
            Just("readinessGates"),
            Just("conditionType"),
            Just("involvedObject"),
            Just("regarding"),
            Just("allocation"),
            Just("annotations"),
            Just("data"),
        ]
        .prop_map(String::from);
        leaf.prop_recursive(6, 64, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(keys.clone(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn cells_match_columns_on_any_json(obj in arb_json(), offset in any::<i64>()) {
            let now = DateTime::from_timestamp(offset % 300_000_000_000, 0).unwrap_or_else(now_fallback);
            for (group, kind) in KINDS {
                let cells = cells(group, kind, &obj, now);
                let want = columns(group, kind).unwrap_or_else(default_columns).len();
                prop_assert_eq!(cells.len(), want, "{}/{}", group, kind);
            }
        }

        #[test]
        fn age_never_panics(s in ".{0,40}", nanos in any::<i64>()) {
            let _ = age(Some(&s), now());
            let text = human_duration(nanos);
            prop_assert!(!text.is_empty());
        }
    }

    fn now_fallback() -> DateTime<Utc> {
        now()
    }
}
