//! The columns of each kind's Table, as the API server's printers declare
//! them (names, types, descriptions, wide-only priority).
//!
//! This module must NOT compute cells: the per-group modules do.

use super::*;

pub(super) const NAME: Column = Column {
    name: "Name",
    type_: "string",
    format: "name",
    description: "Name must be unique within a namespace.",
    priority: 0,
};
/// The Name column of the printers that do not mark it as the name column.
pub(super) const PLAIN_NAME: Column =
    c("Name", "string", "Name must be unique within a namespace.");
pub(super) const AGE: Column = c(
    "Age",
    "string",
    "Time since the object was created (creationTimestamp).",
);
pub(super) const CONTAINERS: Column = w(
    "Containers",
    "string",
    "Names of each container in the template.",
);
pub(super) const IMAGES: Column = w(
    "Images",
    "string",
    "Images referenced by each container in the template.",
);
pub(super) const SELECTOR: Column = w("Selector", "string", "The label selector of the object.");

pub(super) const POD: &[Column] = &[
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
pub(super) const POD_TEMPLATE: &[Column] = &[
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
pub(super) const PDB: &[Column] = &[
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
pub(super) const REPLICAS: &[Column] = &[
    NAME,
    c("Desired", "integer", "The number of desired replicas."),
    c("Current", "integer", "The number of current replicas."),
    c("Ready", "integer", "The number of ready replicas."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];
pub(super) const DAEMON_SET: &[Column] = &[
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
pub(super) const JOB: &[Column] = &[
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
pub(super) const CRON_JOB: &[Column] = &[
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
pub(super) const SERVICE: &[Column] = &[
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
pub(super) const INGRESS: &[Column] = &[
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
pub(super) const INGRESS_CLASS: &[Column] = &[
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
pub(super) const STATEFUL_SET: &[Column] = &[
    NAME,
    c("Ready", "string", "Number of the pod with ready state"),
    AGE,
    CONTAINERS,
    IMAGES,
];
pub(super) const ENDPOINTS: &[Column] = &[
    NAME,
    c(
        "Endpoints",
        "string",
        "The addresses and ports of the endpoints.",
    ),
    AGE,
];
pub(super) const NODE: &[Column] = &[
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
pub(super) const EVENT: &[Column] = &[
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
pub(super) const NAMESPACE: &[Column] = &[
    NAME,
    c("Status", "string", "The status of the namespace"),
    AGE,
];
pub(super) const SECRET: &[Column] = &[
    NAME,
    c("Type", "string", "The type of the secret."),
    c("Data", "string", "The number of data items."),
    AGE,
];
pub(super) const SERVICE_ACCOUNT: &[Column] = &[
    NAME,
    c(
        "Secrets",
        "string",
        "The number of secrets listed in the service account.",
    ),
    AGE,
];
pub(super) const PV: &[Column] = &[
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
pub(super) const PVC: &[Column] = &[
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
pub(super) const COMPONENT_STATUS: &[Column] = &[
    NAME,
    c("Status", "string", "Status of the component conditions"),
    c("Message", "string", "Message of the component conditions"),
    c("Error", "string", "Error of the component conditions"),
];
pub(super) const DEPLOYMENT: &[Column] = &[
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
pub(super) const HPA: &[Column] = &[
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
pub(super) const CONFIG_MAP: &[Column] =
    &[NAME, c("Data", "string", "The number of data items."), AGE];
pub(super) const NETWORK_POLICY: &[Column] = &[
    NAME,
    c("Pod-Selector", "string", "The pods the policy applies to."),
    AGE,
];
pub(super) const ROLE_BINDING: &[Column] = &[
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
pub(super) const CLUSTER_ROLE_BINDING: &[Column] = &[
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
pub(super) const CSR: &[Column] = &[
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
pub(super) const CLUSTER_TRUST_BUNDLE: &[Column] = &[
    NAME,
    c(
        "SignerName",
        "string",
        "The signer the trust anchors belong to.",
    ),
];
pub(super) const LEASE: &[Column] = &[NAME, c("Holder", "string", "The holder of the lease."), AGE];
pub(super) const LEASE_CANDIDATE: &[Column] = &[
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
pub(super) const STORAGE_CLASS: &[Column] = &[
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
pub(super) const VOLUME_ATTRIBUTES_CLASS: &[Column] = &[
    NAME,
    c("DriverName", "string", "The CSI driver of the class."),
    AGE,
];
pub(super) const CONTROLLER_REVISION: &[Column] = &[
    NAME,
    c("Controller", "string", "Controller of the object"),
    c("Revision", "string", "The revision of the state."),
    AGE,
];
// Upstream prints the age second for quotas, before the two summaries.
pub(super) const RESOURCE_QUOTA: &[Column] = &[
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
pub(super) const PRIORITY_CLASS: &[Column] = &[
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
pub(super) const RUNTIME_CLASS: &[Column] = &[
    NAME,
    c("Handler", "string", "The CRI handler of the class."),
    AGE,
];
pub(super) const VOLUME_ATTACHMENT: &[Column] = &[
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
pub(super) const ENDPOINT_SLICE: &[Column] = &[
    NAME,
    c("AddressType", "string", "The type of the addresses."),
    c("Ports", "string", "The ports of the slice."),
    c("Endpoints", "string", "The addresses of the endpoints."),
    AGE,
];
pub(super) const CSI_NODE: &[Column] = &[
    NAME,
    c(
        "Drivers",
        "integer",
        "Drivers indicates the number of CSI drivers registered on the node",
    ),
    AGE,
];
pub(super) const CSI_DRIVER: &[Column] = &[
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
pub(super) const CSI_STORAGE_CAPACITY: &[Column] = &[
    NAME,
    c(
        "StorageClassName",
        "string",
        "The storage class of the capacity.",
    ),
    c("Capacity", "string", "The capacity available."),
];
pub(super) const WEBHOOK_CONFIGURATION: &[Column] = &[
    NAME,
    c(
        "Webhooks",
        "integer",
        "Webhooks indicates the number of webhooks registered in this configuration",
    ),
    AGE,
];
pub(super) const VALIDATING_ADMISSION_POLICY: &[Column] = &[
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
pub(super) const MUTATING_ADMISSION_POLICY: &[Column] = &[
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
pub(super) const ADMISSION_POLICY_BINDING: &[Column] = &[
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
pub(super) const FLOW_SCHEMA: &[Column] = &[
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
pub(super) const PRIORITY_LEVEL: &[Column] = &[
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
pub(super) const STORAGE_VERSION: &[Column] = &[
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
pub(super) const SCALE: &[Column] = &[
    PLAIN_NAME,
    c("Desired", "integer", "The desired number of replicas."),
    c("Available", "integer", "The actual number of replicas."),
];
pub(super) const NAME_AGE: &[Column] = &[NAME, AGE];
pub(super) const RESOURCE_CLAIM: &[Column] = &[
    NAME,
    c(
        "State",
        "string",
        "A summary of the current state (allocated, pending, reserved, etc.).",
    ),
    AGE,
];
pub(super) const RESOURCE_SLICE: &[Column] = &[
    NAME,
    c("Node", "string", "The node providing the resources."),
    c("Driver", "string", "The driver providing the resources."),
    c("Pool", "string", "The pool of the resources."),
    AGE,
];
pub(super) const SERVICE_CIDR: &[Column] = &[
    NAME,
    c("CIDRs", "string", "The ranges of the service IPs."),
    AGE,
];
pub(super) const IP_ADDRESS: &[Column] = &[
    NAME,
    c("ParentRef", "string", "The object the address belongs to."),
];
pub(super) const STORAGE_VERSION_MIGRATION: &[Column] = &[
    PLAIN_NAME,
    c("Resource", "string", "Fully qualified resource to migrate"),
];
pub(super) const API_SERVICE: &[Column] = &[
    NAME,
    c(
        "Service",
        "string",
        "The reference to the service that hosts this API endpoint.",
    ),
    c("Available", "string", "Whether this service is available."),
    AGE,
];
pub(super) const DEFAULT: &[Column] = &[
    NAME,
    c(
        "Created At",
        "date",
        "CreationTimestamp is a timestamp representing the server time when this object was created.",
    ),
];
