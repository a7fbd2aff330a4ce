//! Every built-in kind the sandbox serves, through the typed `kube::Api<K>`
//! of its k8s-openapi type: create, get, list, watch, replace, delete and
//! the 404 after. One line per kind in [`cases`] generates its case; the
//! kinds listed there must be exactly the kinds discovery serves, so a row
//! added to the sandbox's table without a case here fails.
//!
//! Then a property test posts mutated bodies of a sample of kinds (wrong
//! types, huge numbers, bad quantities, missing fields) and checks that a
//! refused write changes nothing and an accepted one decodes as its kind;
//! the invalid bodies it found stored are pinned one by one at the end.

// Test fixtures: a failure to set up is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};
use kube::{Client, Resource, ResourceExt};
use kube_sandbox::Sandbox;
use reqwest::Method;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::common::{
    Answer, CMS, JSON, answer, contains, create_namespace, get_json, object_event, post_json,
    rv_of, sandbox, typed, watch,
};

/// The namespace every namespaced case lives in.
const NS: &str = "typed";

/// How long an eventual condition (a terminating namespace going away, a
/// watch event arriving) may take before the test gives up.
const DEADLINE: Duration = Duration::from_secs(10);

/// Builds the typed `Api` of a kind from its scope: namespaced kinds in
/// [`NS`], cluster-scoped ones at the cluster.
trait Scope {
    const NAMESPACED: bool;
    fn api<K>(client: Client) -> Api<K>
    where
        K: Resource<Scope = Self, DynamicType = ()>;
}

impl Scope for NamespaceResourceScope {
    const NAMESPACED: bool = true;
    fn api<K>(client: Client) -> Api<K>
    where
        K: Resource<Scope = Self, DynamicType = ()>,
    {
        Api::namespaced(client, NS)
    }
}

impl Scope for ClusterResourceScope {
    const NAMESPACED: bool = false;
    fn api<K>(client: Client) -> Api<K>
    where
        K: Resource<Scope = Self, DynamicType = ()>,
    {
        Api::all(client)
    }
}

/// What a kind's case needs beyond its type: a name, the fields of a
/// minimal valid object and one change a replace makes.
struct Fixture {
    name: &'static str,
    /// Everything but `apiVersion`, `kind` and `metadata.name`.
    body: Value,
    /// JSON pointer and the value a replace writes there; the answer and
    /// a later get must hold it.
    change: (&'static str, Value),
}

/// A label change, for kinds whose spec a real server keeps immutable.
fn relabel() -> (&'static str, Value) {
    ("/metadata/labels/changed", json!("yes"))
}

fn containers(image: &str) -> Value {
    json!([{"name": "c", "image": image}])
}

fn pod_template(restart: &str) -> Value {
    json!({
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": containers("nginx:1.27"), "restartPolicy": restart}
    })
}

fn selector() -> Value {
    json!({"matchLabels": {"app": "web"}})
}

fn rules(verb: &str) -> Value {
    json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": [verb]}])
}

fn subjects(name: &str) -> Value {
    json!([{"kind": "ServiceAccount", "name": name, "namespace": NS}])
}

fn webhook() -> Value {
    json!([{
        "name": "typed.example.com",
        "clientConfig": {"url": "https://typed.example.com/hook"},
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None"
    }])
}

/// A PEM certificate request (P-256 key, CN=mirra), base64 encoded as the
/// CertificateSigningRequest's `spec.request` carries it: a real server
/// parses it.
const CSR_PEM_B64: &str = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlISk1ISUNBUUF3RURFT01Bd0dBMVVFQXd3RmJXbHljbUV3V1RBVEJnY3Foa2pPUFFJQkJnZ3Foa2pPUFFNQgpCd05DQUFSVE5WQUJBNUJqdWxhL3ZNYnVHUlpWTXc4Wk1QbHNyelVSanNKRDFvclJnTzYyZHhLSXZnUHY4NzhWCkNsR3MrQ3VtMFdoZW1Dem14Nlk4cmlEaktYWmlvQUF3Q2dZSUtvWkl6ajBFQXdJRFJ3QXdSQUlnR2E5S1dRaHMKV3dzZWI0RWJHSFR3SkFKb2N0SHVyY3N2dHRKbWxkWlJWU2dDSUYvYkc4NWt6T09tVHFxR1dXZTd3emI1R0ppZAppcldTMXJBbDRMcDc5cUFtCi0tLS0tRU5EIENFUlRJRklDQVRFIFJFUVVFU1QtLS0tLQo=";

/// The minimal valid object of each kind, by group and kind: what a real
/// v1.33 server's validation accepts.
fn fixture(group: &str, kind: &str) -> Fixture {
    let f = |name, body, change| Fixture { name, body, change };
    let demo = "typed-demo";
    match (group, kind) {
        ("", "Namespace") => f("typed-ns-case", json!({}), relabel()),
        ("", "ConfigMap") => f(demo, json!({"data": {"k": "v"}}), ("/data/k", json!("w"))),
        ("", "Secret") => f(
            demo,
            json!({"type": "Opaque", "data": {"k": "dg=="}}),
            ("/data/k", json!("dw==")),
        ),
        ("", "Service") => f(
            demo,
            json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}], "selector": {"app": "web"}}}),
            ("/spec/selector/app", json!("web2")),
        ),
        ("", "Endpoints") => f(
            demo,
            json!({"subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]}),
            ("/subsets/0/addresses/0/ip", json!("10.0.0.2")),
        ),
        ("", "Node") => f(
            "typed-node",
            json!({"spec": {"podCIDR": "10.244.0.0/24"}}),
            ("/spec/unschedulable", json!(true)),
        ),
        ("", "ServiceAccount") => f(
            demo,
            json!({"automountServiceAccountToken": true}),
            ("/automountServiceAccountToken", json!(false)),
        ),
        ("", "Event") => f(
            "web.1",
            json!({
                "involvedObject": {"kind": "ConfigMap", "name": "web", "namespace": NS},
                "reason": "Synced", "message": "synced", "type": "Normal", "count": 1
            }),
            ("/count", json!(2)),
        ),
        ("", "Pod") => f(
            demo,
            json!({"spec": {"containers": containers("nginx:1.27")}}),
            // A container image is one of the few mutable pod fields.
            ("/spec/containers/0/image", json!("nginx:1.28")),
        ),
        ("", "PodTemplate") => f(
            demo,
            json!({"template": pod_template("Always")}),
            ("/template/spec/containers/0/image", json!("nginx:1.28")),
        ),
        ("", "ReplicationController") => f(
            demo,
            json!({"spec": {"replicas": 1, "selector": {"app": "web"}, "template": pod_template("Always")}}),
            ("/spec/replicas", json!(2)),
        ),
        ("", "LimitRange") => f(
            demo,
            json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}}]}}),
            ("/spec/limits/0/max/cpu", json!("2")),
        ),
        ("", "ResourceQuota") => f(
            demo,
            json!({"spec": {"hard": {"pods": "10"}}}),
            ("/spec/hard/pods", json!("20")),
        ),
        ("", "PersistentVolume") => f(
            "typed-pv",
            json!({"spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "hostPath": {"path": "/tmp/typed"}
            }}),
            ("/spec/capacity/storage", json!("2Gi")),
        ),
        // An unbound claim's spec is immutable, its storage request too.
        ("", "PersistentVolumeClaim") => f(
            demo,
            json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
            relabel(),
        ),
        ("apiregistration.k8s.io", "APIService") => f(
            // A local APIService (no service) is named version.group.
            "v1alpha1.typed.example.com",
            json!({"spec": {
                "group": "typed.example.com", "version": "v1alpha1",
                "groupPriorityMinimum": 1000, "versionPriority": 15
            }}),
            ("/spec/versionPriority", json!(20)),
        ),
        ("apps", "Deployment") => f(
            demo,
            json!({"spec": {"replicas": 1, "selector": selector(), "template": pod_template("Always")}}),
            ("/spec/replicas", json!(3)),
        ),
        ("apps", "StatefulSet") => f(
            demo,
            json!({"spec": {
                "serviceName": "web", "replicas": 1,
                "selector": selector(), "template": pod_template("Always")
            }}),
            ("/spec/replicas", json!(2)),
        ),
        ("apps", "DaemonSet") => f(
            demo,
            json!({"spec": {"selector": selector(), "template": pod_template("Always")}}),
            (
                "/spec/template/spec/containers/0/image",
                json!("nginx:1.28"),
            ),
        ),
        ("apps", "ReplicaSet") => f(
            demo,
            json!({"spec": {"replicas": 1, "selector": selector(), "template": pod_template("Always")}}),
            ("/spec/replicas", json!(2)),
        ),
        // `data` is immutable; `revision` is not.
        ("apps", "ControllerRevision") => f(
            demo,
            json!({"revision": 1, "data": {"spec": {"replicas": 1}}}),
            ("/revision", json!(2)),
        ),
        ("events.k8s.io", "Event") => f(
            "web.2",
            json!({
                "eventTime": "2026-01-01T00:00:00.000000Z",
                "reportingController": "example.com/mirra", "reportingInstance": "mirra-1",
                "action": "Sync", "reason": "Synced", "note": "synced", "type": "Normal",
                "regarding": {"kind": "ConfigMap", "name": "web", "namespace": NS}
            }),
            // Most of an events.k8s.io Event is immutable; the note is not.
            ("/note", json!("synced again")),
        ),
        ("autoscaling", "HorizontalPodAutoscaler") => f(
            demo,
            json!({"spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1, "maxReplicas": 3
            }}),
            ("/spec/maxReplicas", json!(5)),
        ),
        ("batch", "Job") => f(
            demo,
            json!({"spec": {"template": {"spec": {"containers": containers("busybox:1.36"), "restartPolicy": "Never"}}}}),
            ("/spec/parallelism", json!(2)),
        ),
        ("batch", "CronJob") => f(
            demo,
            json!({"spec": {
                "schedule": "*/5 * * * *",
                "jobTemplate": {"spec": {"template": {"spec": {
                    "containers": containers("busybox:1.36"), "restartPolicy": "OnFailure"
                }}}}
            }}),
            ("/spec/schedule", json!("*/10 * * * *")),
        ),
        // A CSR's spec is immutable.
        ("certificates.k8s.io", "CertificateSigningRequest") => f(
            demo,
            json!({"spec": {
                "request": CSR_PEM_B64, "signerName": "example.com/typed",
                "usages": ["digital signature"]
            }}),
            relabel(),
        ),
        ("networking.k8s.io", "Ingress") => f(
            demo,
            json!({"spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}}),
            ("/spec/defaultBackend/service/port/number", json!(81)),
        ),
        ("networking.k8s.io", "IngressClass") => f(
            demo,
            json!({"spec": {"controller": "example.com/typed"}}),
            relabel(),
        ),
        ("networking.k8s.io", "NetworkPolicy") => f(
            demo,
            json!({"spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}),
            ("/spec/policyTypes", json!(["Ingress", "Egress"])),
        ),
        // An IPAddress is named by its address; its spec is immutable.
        ("networking.k8s.io", "IPAddress") => f(
            "10.200.0.5",
            json!({"spec": {"parentRef": {"group": "", "resource": "services", "name": "web", "namespace": NS}}}),
            relabel(),
        ),
        ("networking.k8s.io", "ServiceCIDR") => f(
            demo,
            json!({"spec": {"cidrs": ["10.200.0.0/24"]}}),
            relabel(),
        ),
        ("policy", "PodDisruptionBudget") => f(
            demo,
            json!({"spec": {"minAvailable": 1, "selector": selector()}}),
            ("/spec/minAvailable", json!(2)),
        ),
        // RBAC names are path segments: a colon is allowed.
        ("rbac.authorization.k8s.io", "ClusterRole") => f(
            "typed:reader",
            json!({"rules": rules("get")}),
            ("/rules/0/verbs", json!(["watch"])),
        ),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => f(
            "typed:reader",
            json!({
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "typed:reader"},
                "subjects": subjects("a")
            }),
            ("/subjects/0/name", json!("c")),
        ),
        ("rbac.authorization.k8s.io", "Role") => f(
            demo,
            json!({"rules": rules("get")}),
            ("/rules/0/verbs", json!(["list"])),
        ),
        ("rbac.authorization.k8s.io", "RoleBinding") => f(
            demo,
            json!({
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
                "subjects": subjects("a")
            }),
            ("/subjects/0/name", json!("b")),
        ),
        ("storage.k8s.io", "StorageClass") => f(
            demo,
            json!({"provisioner": "example.com/typed"}),
            ("/allowVolumeExpansion", json!(true)),
        ),
        ("storage.k8s.io", "VolumeAttachment") => f(
            demo,
            json!({"spec": {
                "attacher": "typed.example.com", "nodeName": "typed-node",
                "source": {"persistentVolumeName": "typed-pv"}
            }}),
            relabel(),
        ),
        ("storage.k8s.io", "CSIDriver") => f("typed.example.com", json!({"spec": {}}), relabel()),
        ("storage.k8s.io", "CSINode") => f(
            "typed-node",
            json!({"spec": {"drivers": [{"name": "typed.example.com", "nodeID": "n1", "topologyKeys": ["zone"]}]}}),
            relabel(),
        ),
        ("storage.k8s.io", "CSIStorageCapacity") => f(
            demo,
            json!({"storageClassName": "standard", "capacity": "1Gi"}),
            ("/capacity", json!("2Gi")),
        ),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => f(
            demo,
            json!({"webhooks": webhook()}),
            ("/webhooks/0/timeoutSeconds", json!(5)),
        ),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => f(
            demo,
            json!({"webhooks": webhook()}),
            ("/webhooks/0/timeoutSeconds", json!(5)),
        ),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => f(
            demo,
            json!({"spec": {
                "matchConstraints": {"resourceRules": [{
                    "apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["configmaps"]
                }]},
                "validations": [{"expression": "true"}]
            }}),
            ("/spec/validations/0/expression", json!("1 == 1")),
        ),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => f(
            demo,
            json!({"spec": {"policyName": demo, "validationActions": ["Deny"]}}),
            ("/spec/validationActions", json!(["Warn", "Audit"])),
        ),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => f(
            "widgets.typed.example.com",
            json!({"spec": {
                "group": "typed.example.com",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "scope": "Namespaced",
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
                }]
            }}),
            ("/spec/names/shortNames", json!(["wdg"])),
        ),
        // A PriorityClass's value is immutable; its description is not.
        ("scheduling.k8s.io", "PriorityClass") => f(
            demo,
            json!({"value": 1000}),
            ("/description", json!("changed")),
        ),
        ("coordination.k8s.io", "Lease") => f(
            demo,
            json!({"spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}),
            ("/spec/holderIdentity", json!("b")),
        ),
        // Only the handler of a RuntimeClass is immutable.
        ("node.k8s.io", "RuntimeClass") => f(
            demo,
            json!({"handler": "runc"}),
            ("/scheduling/nodeSelector", json!({"typed": "yes"})),
        ),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => f(
            demo,
            json!({"spec": {"priorityLevelConfiguration": {"name": demo}, "matchingPrecedence": 5000}}),
            ("/spec/matchingPrecedence", json!(6000)),
        ),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => f(
            demo,
            json!({"spec": {"type": "Limited", "limited": {
                "nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"}
            }}}),
            ("/spec/limited/nominalConcurrencyShares", json!(10)),
        ),
        ("discovery.k8s.io", "EndpointSlice") => f(
            demo,
            json!({"addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}], "ports": [{"port": 80}]}),
            ("/endpoints/0/addresses/0", json!("10.0.0.2")),
        ),
        _ => panic!("no fixture for {group}/{kind}: add one with its case"),
    }
}

/// Whether a DELETE answers the object rather than a `Status`: the kinds
/// whose registry is built with `ReturnDeletedObject`, and
/// CustomResourceDefinitions, whose registry answers the definition it
/// marked for deletion (the cleanup finalizer added, the `Terminating`
/// condition set) and leaves the removal to the finalizing controller.
fn returns_object(group: &str, plural: &str) -> bool {
    matches!(
        (group, plural),
        ("", "services")
            | ("", "serviceaccounts")
            | ("", "pods")
            | ("", "podtemplates")
            | ("", "namespaces")
            | ("", "resourcequotas")
            | ("", "persistentvolumes")
            | ("", "persistentvolumeclaims")
            | (
                "storage.k8s.io",
                "storageclasses" | "volumeattachments" | "csidrivers" | "csinodes"
            )
            | ("apiextensions.k8s.io", "customresourcedefinitions")
    )
}

/// Whether a delete goes through a terminating state before the object is
/// gone (a controller finishes it): namespaces and CRDs.
fn terminates(group: &str, plural: &str) -> bool {
    matches!(
        (group, plural),
        ("", "namespaces") | ("apiextensions.k8s.io", "customresourcedefinitions")
    )
}

/// One kind's case, generated from its k8s-openapi type.
struct Case {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    /// The typed round trip.
    run: fn(Client) -> BoxFuture<'static, ()>,
    /// Whether an answer body decodes as the kind.
    decode: fn(&[u8]) -> Result<(), String>,
}

impl Case {
    fn of<K>() -> Case
    where
        K: k8s_openapi::Resource + Resource<DynamicType = ()> + Clone + DeserializeOwned,
        K: Serialize + Debug + Send + Sync + 'static,
        <K as Resource>::Scope: Scope,
    {
        Case {
            group: <K as k8s_openapi::Resource>::GROUP,
            version: <K as k8s_openapi::Resource>::VERSION,
            kind: <K as k8s_openapi::Resource>::KIND,
            plural: <K as k8s_openapi::Resource>::URL_PATH_SEGMENT,
            namespaced: <<K as Resource>::Scope as Scope>::NAMESPACED,
            run: |client| Box::pin(roundtrip::<K>(client)),
            decode: |bytes| {
                serde_json::from_slice::<K>(bytes)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            },
        }
    }

    fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The collection URL path (in [`NS`] for namespaced kinds).
    fn collection(&self) -> String {
        let base = if self.group.is_empty() {
            "/api/v1".to_string()
        } else {
            format!("/apis/{}", self.api_version())
        };
        if self.namespaced {
            format!("{base}/namespaces/{NS}/{}", self.plural)
        } else {
            format!("{base}/{}", self.plural)
        }
    }

    /// The minimal valid object, whole.
    fn object(&self) -> Value {
        let fx = fixture(self.group, self.kind);
        let mut body = fx.body;
        body["apiVersion"] = json!(self.api_version());
        body["kind"] = json!(self.kind);
        body["metadata"] = json!({"name": fx.name, "labels": {"case": "typed"}});
        body
    }
}

/// One case per listed k8s-openapi type.
macro_rules! cases {
    ($($ty:ty),* $(,)?) => {
        vec![$(Case::of::<$ty>()),*]
    };
}

/// Every kind the sandbox should serve, one line each.
fn cases() -> Vec<Case> {
    use k8s_openapi::api::{
        admissionregistration::v1 as admission, apps::v1 as apps,
        autoscaling::v1 as autoscaling_v1, autoscaling::v2 as autoscaling, batch::v1 as batch,
        certificates::v1 as certificates, coordination::v1 as coordination, core::v1 as core,
        discovery::v1 as discovery, events::v1 as events, flowcontrol::v1 as flowcontrol,
        networking::v1 as networking, node::v1 as node, policy::v1 as policy, rbac::v1 as rbac,
        scheduling::v1 as scheduling, storage::v1 as storage,
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
    use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apireg;
    cases![
        core::Namespace,
        core::ConfigMap,
        core::Secret,
        core::Service,
        core::Endpoints,
        core::Node,
        core::ServiceAccount,
        core::Event,
        core::Pod,
        core::PodTemplate,
        core::ReplicationController,
        core::LimitRange,
        core::ResourceQuota,
        core::PersistentVolume,
        core::PersistentVolumeClaim,
        apireg::APIService,
        apps::Deployment,
        apps::StatefulSet,
        apps::DaemonSet,
        apps::ReplicaSet,
        apps::ControllerRevision,
        events::Event,
        autoscaling::HorizontalPodAutoscaler,
        autoscaling_v1::HorizontalPodAutoscaler,
        batch::Job,
        batch::CronJob,
        certificates::CertificateSigningRequest,
        networking::Ingress,
        networking::IngressClass,
        networking::NetworkPolicy,
        networking::IPAddress,
        networking::ServiceCIDR,
        policy::PodDisruptionBudget,
        rbac::ClusterRole,
        rbac::ClusterRoleBinding,
        rbac::Role,
        rbac::RoleBinding,
        storage::StorageClass,
        storage::VolumeAttachment,
        storage::CSIDriver,
        storage::CSINode,
        storage::CSIStorageCapacity,
        admission::MutatingWebhookConfiguration,
        admission::ValidatingWebhookConfiguration,
        admission::ValidatingAdmissionPolicy,
        admission::ValidatingAdmissionPolicyBinding,
        apiext::CustomResourceDefinition,
        scheduling::PriorityClass,
        coordination::Lease,
        node::RuntimeClass,
        flowcontrol::FlowSchema,
        flowcontrol::PriorityLevelConfiguration,
        discovery::EndpointSlice,
    ]
}

/// Sets `value` at a JSON pointer, creating the objects on the way.
fn set(target: &mut Value, pointer: &str, value: Value) {
    let mut at = target;
    let keys: Vec<&str> = pointer.split('/').skip(1).collect();
    let (last, parents) = keys.split_last().unwrap();
    for key in parents {
        at = match at {
            Value::Array(items) => &mut items[key.parse::<usize>().unwrap()],
            Value::Object(map) => map.entry(key.to_string()).or_insert_with(|| json!({})),
            other => panic!("{pointer}: {other} is not a container"),
        };
    }
    match at {
        Value::Array(items) => items[last.parse::<usize>().unwrap()] = value,
        Value::Object(map) => {
            map.insert(last.to_string(), value);
        }
        other => panic!("{pointer}: {other} is not a container"),
    }
}

fn is_not_found<T: Debug>(r: &Result<T, kube::Error>) -> bool {
    matches!(r, Err(kube::Error::Api(s)) if s.code == 404 && s.reason == "NotFound")
}

/// Create, get, list, watch, replace and delete one kind through its typed
/// `Api`, checking each answer decodes as the kind and means what the real
/// server's would.
async fn roundtrip<K>(client: Client)
where
    K: k8s_openapi::Resource + Resource<DynamicType = ()> + Clone + DeserializeOwned,
    K: Serialize + Debug + Send + Sync + 'static,
    <K as Resource>::Scope: Scope,
{
    let group = <K as k8s_openapi::Resource>::GROUP;
    let kind = <K as k8s_openapi::Resource>::KIND;
    let plural = <K as k8s_openapi::Resource>::URL_PATH_SEGMENT;
    let what = format!("{group}/{kind}");
    let case = Case::of::<K>();
    let fx = fixture(group, kind);
    let name = fx.name;
    let api: Api<K> = <<K as Resource>::Scope as Scope>::api(client);

    let before = api.list(&ListParams::default()).await.unwrap();
    assert!(
        before.items.iter().all(|o| o.name_any() != name),
        "{what}: {name} exists before the case"
    );
    let rv = before.metadata.resource_version.clone().unwrap();
    let mut events = watch(&api, &WatchParams::default().timeout(30), &rv).await;

    // Create from the minimal object as the typed form holds it.
    let body = case.object();
    let obj: K = serde_json::from_value(body.clone())
        .unwrap_or_else(|e| panic!("{what}: fixture does not decode: {e}"));
    let made = api
        .create(&PostParams::default(), &obj)
        .await
        .unwrap_or_else(|e| panic!("{what}: create: {e:?}"));
    let made_json = serde_json::to_value(&made).unwrap();
    assert_eq!(made.name_any(), name, "{what}");
    assert_eq!(
        made.meta().namespace.as_deref(),
        case.namespaced.then_some(NS),
        "{what}"
    );
    assert!(made.meta().uid.is_some(), "{what}");
    assert!(made.meta().creation_timestamp.is_some(), "{what}");
    for (k, v) in body.as_object().unwrap() {
        if k == "metadata" {
            continue;
        }
        assert!(
            contains(&made_json[k], v),
            "{what}: {k} sent {v}, answered {made_json}"
        );
    }

    // Get answers what the create did; the list holds it.
    let got = api.get(name).await.unwrap();
    let got_json = serde_json::to_value(&got).unwrap();
    assert_eq!(got_json, made_json, "{what}: get");
    let listed = api.list(&ListParams::default()).await.unwrap();
    let in_list: Vec<&K> = listed
        .items
        .iter()
        .filter(|o| o.name_any() == name)
        .collect();
    assert_eq!(in_list.len(), 1, "{what}: list");
    assert_eq!(
        serde_json::to_value(in_list[0]).unwrap(),
        got_json,
        "{what}"
    );
    assert!(
        rv_of(&got) > before.metadata.resource_version.unwrap().parse().unwrap(),
        "{what}: the create moved the revision"
    );

    // Replace: the change round-trips and the revision moves.
    let (pointer, value) = fx.change;
    let mut changed_json = got_json.clone();
    set(&mut changed_json, pointer, value.clone());
    let changed: K = serde_json::from_value(changed_json).unwrap();
    let replaced = api
        .replace(name, &PostParams::default(), &changed)
        .await
        .unwrap_or_else(|e| panic!("{what}: replace {pointer}: {e:?}"));
    let replaced_json = serde_json::to_value(&replaced).unwrap();
    assert_eq!(
        replaced_json.pointer(pointer),
        Some(&value),
        "{what}: replace: {replaced_json}"
    );
    assert!(rv_of(&replaced) > rv_of(&got), "{what}");
    let again = api.get(name).await.unwrap();
    assert_eq!(
        serde_json::to_value(&again).unwrap(),
        replaced_json,
        "{what}"
    );

    // Delete: the object (ReturnDeletedObject kinds, and kinds that go
    // through a terminating state) or a success Status.
    let answer = api
        .delete(name, &DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("{what}: delete: {e:?}"));
    let terminates = terminates(group, plural);
    let wants_object = returns_object(group, plural);
    if answer.is_left() {
        let deleted = answer.left().unwrap();
        assert!(
            wants_object,
            "{what}: delete answered the object, not a Status: {deleted:?}"
        );
        assert_eq!(deleted.name_any(), name, "{what}");
        assert_eq!(deleted.meta().uid, made.meta().uid, "{what}");
        if terminates {
            assert!(
                deleted.meta().deletion_timestamp.is_some(),
                "{what}: {deleted:?}"
            );
        }
        if kind == "Namespace" {
            let ns = serde_json::to_value(&deleted).unwrap();
            assert_eq!(ns["status"]["phase"], "Terminating", "{what}: {ns}");
        }
    } else {
        let status = answer.right().unwrap();
        assert!(
            !wants_object,
            "{what}: delete answered a Status, not the object: {status:?}"
        );
        assert_eq!(
            status.status,
            Some(kube::core::response::StatusSummary::Success),
            "{what}: {status:?}"
        );
        let details = status.details.unwrap();
        assert_eq!(details.name, name, "{what}");
        assert_eq!(details.kind, plural, "{what}");
        assert_eq!(details.group, group, "{what}");
        assert_eq!(Some(details.uid), made.meta().uid, "{what}");
    }

    // Gone: at once, or once a terminating kind's controller is done.
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let r = api.get(name).await;
        if is_not_found(&r) {
            break;
        }
        let o = r.unwrap_or_else(|e| panic!("{what}: get after delete: {e:?}"));
        assert!(terminates, "{what}: still there after delete: {o:?}");
        assert!(o.meta().deletion_timestamp.is_some(), "{what}: {o:?}");
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: still terminating"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // The watch saw ADDED, the writes, then DELETED, each decoded as K.
    let mut seen = Vec::new();
    loop {
        let ev = tokio::time::timeout(DEADLINE, events.next())
            .await
            .unwrap_or_else(|_| panic!("{what}: watch stalled after {seen:?}"))
            .unwrap_or_else(|| panic!("{what}: watch ended after {seen:?}"))
            .unwrap_or_else(|e| panic!("{what}: watch event does not decode: {e:?}"));
        let (type_, o) = match object_event(ev) {
            Ok(change) => change,
            Err(WatchEvent::Bookmark(_)) => continue,
            Err(other) => panic!("{what}: watch error {other:?}"),
        };
        assert_eq!(o.name_any(), name, "{what}: {type_}");
        seen.push(type_);
        if type_ == "DELETED" {
            break;
        }
    }
    assert_eq!(seen.first(), Some(&"ADDED"), "{what}: {seen:?}");
    // The replace; for a terminating kind also the deletion mark and
    // whatever its controller writes before the object goes.
    let modified = seen.iter().filter(|t| **t == "MODIFIED").count();
    assert!(
        seen.len() == modified + 2 && (modified == 1 || (terminates && modified >= 1)),
        "{what}: {seen:?}"
    );
}

/// A real server answers a CRD's DELETE with the definition it marked:
/// `deletionTimestamp` set, the `customresourcecleanup` finalizer added
/// and a `Terminating` condition; the finalizing controller then removes
/// the custom resources and the finalizer, and the CRD is gone.
#[tokio::test]
async fn crd_delete_answers_the_terminating_definition() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let (_sb, client) = sandbox().await;
    let api: Api<CustomResourceDefinition> = Api::all(client);
    let fx = fixture("apiextensions.k8s.io", "CustomResourceDefinition");
    let case = Case::of::<CustomResourceDefinition>();
    let crd: CustomResourceDefinition = serde_json::from_value(case.object()).unwrap();
    api.create(&PostParams::default(), &crd).await.unwrap();
    let answer = api.delete(fx.name, &DeleteParams::default()).await.unwrap();
    let deleted = answer
        .left()
        .expect("the CRD marked for deletion, not a Status");
    assert!(deleted.metadata.deletion_timestamp.is_some());
    assert!(
        deleted
            .metadata
            .finalizers
            .unwrap_or_default()
            .contains(&"customresourcecleanup.apiextensions.k8s.io".to_string())
    );
    let terminating = deleted
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .any(|c| c.type_ == "Terminating" && c.status == "True");
    assert!(terminating);
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while !is_not_found(&api.get(fx.name).await) {
        assert!(tokio::time::Instant::now() < deadline, "never removed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `(group, version, kind, plural)` of a served resource.
type Gvkr = (String, String, String, String);

/// What discovery serves as stored kinds (created and listed), through
/// kube-rs's discovery (plain or aggregated); the create-only reviews and
/// the read-only `componentstatuses` have tests of their own
/// (`review_and_subresources.rs`).
fn served(discovery: &kube::Discovery) -> BTreeSet<Gvkr> {
    let mut out = BTreeSet::new();
    for group in discovery.groups() {
        for version in group.versions() {
            for (ar, caps) in group.versioned_resources(version) {
                if caps.supports_operation("create") && caps.supports_operation("list") {
                    out.insert((ar.group, ar.version, ar.kind, ar.plural));
                }
            }
        }
    }
    out
}

#[tokio::test]
async fn every_served_kind_round_trips_through_its_typed_api() {
    let (sb, client) = sandbox().await;
    let all = cases();

    // The cases are exactly what discovery serves, in both of its forms.
    let ours: BTreeSet<Gvkr> = all
        .iter()
        .map(|c| {
            (
                c.group.to_string(),
                c.version.to_string(),
                c.kind.to_string(),
                c.plural.to_string(),
            )
        })
        .collect();
    assert_eq!(ours.len(), all.len(), "a kind is listed twice");
    let plain = served(&kube::Discovery::new(client.clone()).run().await.unwrap());
    let aggregated = served(
        &kube::Discovery::new(client.clone())
            .run_aggregated()
            .await
            .unwrap(),
    );
    assert_eq!(plain, aggregated, "plain and aggregated discovery differ");
    let missing: Vec<_> = plain.difference(&ours).collect();
    let extra: Vec<_> = ours.difference(&plain).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "served without a case: {missing:?}; cased but not served: {extra:?}"
    );
    // Each served kind's scope is its type's.
    let namespaced: BTreeSet<(String, String)> = {
        let d = kube::Discovery::new(client.clone()).run().await.unwrap();
        d.groups()
            .flat_map(|g| {
                g.versions()
                    .flat_map(|v| g.versioned_resources(v))
                    .filter(|(_, caps)| caps.scope == kube::discovery::Scope::Namespaced)
                    .map(|(ar, _)| (ar.group, ar.kind))
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    for c in &all {
        assert_eq!(
            namespaced.contains(&(c.group.to_string(), c.kind.to_string())),
            c.namespaced,
            "{}/{}: scope",
            c.group,
            c.kind
        );
    }

    create_namespace(&client, NS).await;
    let start = sb.revision().await;
    for c in &all {
        (c.run)(client.clone()).await;
    }
    // Every case wrote at least its create, replace and delete.
    assert!(sb.revision().await >= start + 3 * all.len() as u64);
}

/// The kinds the property test mutates: plain data, quantities (limits,
/// quotas, claims, pod resources), pod templates, int-or-string fields,
/// label selectors and both scopes.
const SAMPLE: &[(&str, &str)] = &[
    ("", "ConfigMap"),
    ("", "Secret"),
    ("", "Service"),
    ("", "Pod"),
    ("", "LimitRange"),
    ("", "ResourceQuota"),
    ("", "PersistentVolumeClaim"),
    ("apps", "Deployment"),
    ("batch", "Job"),
    ("networking.k8s.io", "Ingress"),
    ("policy", "PodDisruptionBudget"),
    ("autoscaling", "HorizontalPodAutoscaler"),
    ("rbac.authorization.k8s.io", "Role"),
    ("scheduling.k8s.io", "PriorityClass"),
    ("storage.k8s.io", "StorageClass"),
];

/// One step of a JSON path.
#[derive(Debug, Clone)]
enum Seg {
    Key(String),
    Index(usize),
}

/// What a mutation does at its path.
#[derive(Debug, Clone)]
enum Mutation {
    /// Any value, whatever the field's type.
    Set(Value),
    /// A value of the JSON type already there (a string for a string, an
    /// `int32` for a number, a bool for a bool): bad content, well typed.
    Retype {
        text: String,
        number: i32,
        flag: bool,
    },
    Remove,
}

/// Every path below the root of `v`.
fn paths(v: &Value, at: &mut Vec<Seg>, out: &mut Vec<Vec<Seg>>) {
    let children: Vec<(Seg, &Value)> = match v {
        Value::Object(map) => map.iter().map(|(k, c)| (Seg::Key(k.clone()), c)).collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, c)| (Seg::Index(i), c))
            .collect(),
        _ => Vec::new(),
    };
    for (seg, child) in children {
        at.push(seg);
        out.push(at.clone());
        paths(child, at, out);
        at.pop();
    }
}

/// Applies a mutation at a path; a path an earlier mutation removed or
/// replaced is skipped.
fn mutate(target: &mut Value, path: &[Seg], m: &Mutation) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut at = target;
    for seg in parents {
        let next = match (seg, at) {
            (Seg::Key(k), Value::Object(map)) => map.get_mut(k),
            (Seg::Index(i), Value::Array(items)) => items.get_mut(*i),
            _ => None,
        };
        match next {
            Some(n) => at = n,
            None => return,
        }
    }
    let slot = match (last, &mut *at) {
        (Seg::Key(k), Value::Object(map)) => map.get_mut(k),
        (Seg::Index(i), Value::Array(items)) => items.get_mut(*i),
        _ => None,
    };
    let Some(slot) = slot else {
        return;
    };
    match m {
        Mutation::Set(v) => *slot = v.clone(),
        Mutation::Retype { text, number, flag } => match slot {
            Value::String(_) => *slot = json!(text),
            Value::Number(_) => *slot = json!(number),
            Value::Bool(_) => *slot = json!(flag),
            // Containers and nulls keep their type by staying as they are.
            _ => {}
        },
        Mutation::Remove => match (last, at) {
            (Seg::Key(k), Value::Object(map)) => {
                map.remove(k);
            }
            (Seg::Index(i), Value::Array(items)) => {
                items.remove(*i);
            }
            _ => {}
        },
    }
}

/// Strings a field should not hold: malformed quantities, numbers in
/// words, odd spacing, an overlong name.
fn bad_strings() -> Vec<&'static str> {
    vec![
        "1.5.5Gi",
        "-1",
        "",
        "1e1000",
        "99999999999999999999999999999Ei",
        "0x10",
        "1Gb",
        "1 Gi",
        " 1",
        "+",
        "1m1",
        ".",
        "NaN",
        "Inf",
        "1e-1000",
        "123456789012345678901234567890",
        "UPPER_case",
        "a/b",
    ]
}

/// Values a body should not hold where they land: wrong types, numbers out
/// of every integer range, malformed quantities, long and odd strings.
fn junk() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        prop::sample::select(vec![
            json!(u64::MAX),
            json!(1e308),
            json!(-1e-300),
            json!(0.5),
            json!(-1),
            json!(0),
            json!(2_147_483_648_i64),
            json!(9_007_199_254_740_993_i64),
        ]),
        prop::sample::select(bad_strings()).prop_map(Value::from),
        "[ -~]{0,24}".prop_map(Value::from),
        Just(json!("a".repeat(300))),
        Just(json!([])),
        Just(json!([1, "x", null])),
        Just(json!({})),
        Just(json!({"x": {"y": 1}})),
    ]
}

/// Well-typed bad values: any string from [`bad_strings`], printable
/// noise or an overlong one; any `int32`; either bool.
fn retype() -> impl proptest::strategy::Strategy<Value = Mutation> {
    use proptest::prelude::*;
    let text = prop_oneof![
        prop::sample::select(bad_strings()).prop_map(str::to_string),
        "[ -~]{0,24}",
        Just("a".repeat(300)),
    ];
    (text, any::<i32>(), any::<bool>()).prop_map(|(text, number, flag)| Mutation::Retype {
        text,
        number,
        flag,
    })
}

/// A request to the sandbox by `http`, with a JSON body or none.
async fn raw(
    http: &reqwest::Client,
    sb: &Sandbox,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> Answer {
    let bytes = body.map(|b| serde_json::to_vec(b).unwrap());
    let headers: &[(&str, &str)] = match bytes {
        Some(_) => &[("content-type", JSON)],
        None => &[],
    };
    let req = http.request(method, format!("{}{path}", sb.url()));
    answer(req, headers, bytes.unwrap_or_default()).await
}

/// The path of the object a create answered, in the case's collection.
fn created_path(case: &Case, made: &Value) -> String {
    let name = made["metadata"]["name"].as_str().unwrap_or_default();
    format!("{}/{}", case.collection(), segment(name))
}

/// A name as one URL path segment: RBAC names may hold `?`, `#` and
/// spaces, which must not end the path.
fn segment(name: &str) -> String {
    name.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~:".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The stored state a refused write must leave: the revision and the
/// collection's items.
async fn state_of(http: &reqwest::Client, sb: &Sandbox, case: &Case) -> (u64, Value) {
    let a = raw(http, sb, Method::GET, &case.collection(), None).await;
    assert_eq!(a.code, 200);
    let list: Value = serde_json::from_slice(&a.bytes).unwrap();
    (sb.revision().await, list["items"].clone())
}

/// Posts one mutated body and checks the answer against the invariants.
async fn post_mutated(
    http: &reqwest::Client,
    sb: &Sandbox,
    case: &Case,
    body: &Value,
) -> Result<(), proptest::test_runner::TestCaseError> {
    use proptest::prop_assert;
    let what = format!("{}/{}", case.group, case.kind);
    let before = state_of(http, sb, case).await;
    let a = raw(http, sb, Method::POST, &case.collection(), Some(body)).await;
    let (code, text) = (a.code, &a.text);
    prop_assert!(
        (200..300).contains(&code) || (400..500).contains(&code),
        "{what}: {code} for {body}: {text}"
    );
    if code >= 400 {
        // Refused: a Status with the same code, and nothing stored.
        let status: Value = serde_json::from_slice(&a.bytes)
            .map_err(|e| proptest::test_runner::TestCaseError::fail(format!("{e}: {text}")))?;
        prop_assert!(
            status["kind"] == "Status" && status["code"] == code,
            "{what}: {code}: {text}"
        );
        let after = state_of(http, sb, case).await;
        prop_assert!(
            before == after,
            "{what}: refused ({code}) but the state changed: {text}"
        );
        return Ok(());
    }
    // Accepted: the answer is the kind, and it is removed again so the
    // next case starts from the same state.
    (case.decode)(&a.bytes).map_err(|e| {
        proptest::test_runner::TestCaseError::fail(format!(
            "{what}: accepted body does not decode: {e}: {text}"
        ))
    })?;
    let path = created_path(case, &a.body);
    let code = raw(http, sb, Method::DELETE, &path, None).await.code;
    prop_assert!(code == 200, "{what}: delete after accepted create: {code}");
    let code = raw(http, sb, Method::GET, &path, None).await.code;
    prop_assert!(code == 404, "{what}: still there after delete: {code}");
    Ok(())
}

/// Posts `cases` bodies of the sample kinds, each with one to three
/// mutations drawn from `mutation`, and checks every answer.
fn mutated_posts<S>(mutation: S)
where
    S: proptest::strategy::Strategy<Value = Mutation>,
{
    use proptest::prelude::*;
    use proptest::test_runner::{Config as PropConfig, TestRunner};

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (sb, client) = rt.block_on(sandbox());
    rt.block_on(create_namespace(&client, NS));
    let sample: Vec<Case> = cases()
        .into_iter()
        .filter(|c| SAMPLE.contains(&(c.group, c.kind)))
        .collect();
    // Every sampled kind at every version it is served at (both
    // HorizontalPodAutoscaler versions).
    for (g, k) in SAMPLE {
        assert!(
            sample.iter().any(|c| (c.group, c.kind) == (*g, *k)),
            "{g}/{k}"
        );
    }
    let http = reqwest::Client::new();

    // Each valid body is accepted as it is: the mutations start from
    // objects the server takes.
    rt.block_on(async {
        for case in &sample {
            let state = state_of(&http, &sb, case).await;
            let before = sb.revision().await;
            post_mutated(&http, &sb, case, &case.object())
                .await
                .unwrap();
            assert!(sb.revision().await > before, "{}: not stored", case.kind);
            assert_eq!(state_of(&http, &sb, case).await.1, state.1);
        }
    });

    let strategy = (
        0..sample.len(),
        prop::collection::vec((any::<prop::sample::Index>(), mutation), 1..=3),
    );
    let mut runner = TestRunner::new(PropConfig {
        cases: 64,
        failure_persistence: None,
        ..PropConfig::default()
    });
    let refused = std::cell::Cell::new(0_u32);
    let result = runner.run(&strategy, |(which, mutations)| {
        let case = &sample[which];
        let mut body = case.object();
        let mut all = Vec::new();
        paths(&body, &mut Vec::new(), &mut all);
        for (index, m) in &mutations {
            let path: &Vec<Seg> = index.get(&all);
            mutate(&mut body, path, m);
        }
        let before = rt.block_on(sb.revision());
        rt.block_on(post_mutated(&http, &sb, case, &body))?;
        if rt.block_on(sb.revision()) == before {
            refused.set(refused.get() + 1);
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    // Most mutations break the object: the run exercised refusals.
    assert!(refused.get() > 0, "no mutated body was refused");
}

/// Well-typed bad values and missing fields: refused without a change,
/// or accepted as the kind.
#[test]
fn well_typed_mutations_are_refused_without_change_or_accepted_as_their_kind() {
    use proptest::prelude::*;
    mutated_posts(prop_oneof![3 => retype(), 1 => Just(Mutation::Remove)]);
}

/// Any value at any path, wrong JSON types and integer overflows
/// included: a real server refuses what does not decode into the Go type
/// with 400 BadRequest (`X in version "v1" cannot be handled as a X: json:
/// cannot unmarshal ...`).
#[test]
fn mutated_bodies_are_refused_without_change_or_accepted_as_their_kind() {
    use proptest::prelude::*;
    mutated_posts(prop_oneof![
        3 => junk().prop_map(Mutation::Set),
        1 => retype(),
        1 => Just(Mutation::Remove),
    ]);
}

/// One body a real v1.33 server refuses as invalid: the sample kind's
/// minimal object with one field set (or removed), and the field the
/// 422's cause names.
struct Refusal {
    group: &'static str,
    kind: &'static str,
    pointer: &'static str,
    /// `None` removes the field.
    value: Option<Value>,
    field: &'static str,
}

fn refusal(
    group: &'static str,
    kind: &'static str,
    pointer: &'static str,
    value: Option<Value>,
    field: &'static str,
) -> Refusal {
    Refusal {
        group,
        kind,
        pointer,
        value,
        field,
    }
}

/// Posts each refusal's body and checks the 422 Invalid answer, its cause
/// and that nothing was stored.
async fn check_refusals(refusals: Vec<Refusal>) {
    let (sb, client) = sandbox().await;
    create_namespace(&client, NS).await;
    let http = reqwest::Client::new();
    let all = cases();
    let mut wrong = Vec::new();
    for r in refusals {
        let case = all
            .iter()
            .find(|c| (c.group, c.kind) == (r.group, r.kind))
            .unwrap();
        let mut body = case.object();
        match &r.value {
            Some(v) => set(&mut body, r.pointer, v.clone()),
            None => {
                let (parent, key) = r.pointer.rsplit_once('/').unwrap();
                let holder = body.pointer_mut(parent).unwrap();
                match holder {
                    Value::Object(map) => {
                        map.remove(key);
                    }
                    Value::Array(items) => {
                        items.remove(key.parse::<usize>().unwrap());
                    }
                    other => panic!("{}: {other}", r.pointer),
                }
            }
        }
        let before = state_of(&http, &sb, case).await;
        let a = raw(&http, &sb, Method::POST, &case.collection(), Some(&body)).await;
        let (code, status) = (a.code, a.body);
        let named = status["details"]["causes"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|c| c["field"] == r.field));
        let what = format!("{}/{} {} = {:?}", r.group, r.kind, r.pointer, r.value);
        if code == 201 {
            // Put the state back for the next case.
            let path = created_path(case, &status);
            raw(&http, &sb, Method::DELETE, &path, None).await;
        } else {
            assert_eq!(state_of(&http, &sb, case).await, before, "{what}");
        }
        if code != 422 || status["reason"] != "Invalid" || !named {
            wrong.push(format!("{what}: {code} {status}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "not refused as a real server does:\n{}",
        wrong.join("\n")
    );
}

/// Invalid bodies of the sample kinds the sandbox refuses as a real
/// server does.
#[tokio::test]
async fn invalid_sample_bodies_are_refused() {
    check_refusals(vec![
        refusal(
            "apps",
            "Deployment",
            "/spec/replicas",
            Some(json!(-1)),
            "spec.replicas",
        ),
        refusal(
            "",
            "Pod",
            "/spec/containers/0/name",
            Some(json!("UPPER")),
            "spec.containers[0].name",
        ),
        refusal(
            "",
            "Pod",
            "/spec/restartPolicy",
            Some(json!("Sometimes")),
            "spec.restartPolicy",
        ),
    ])
    .await;
}

/// Invalid bodies found by the property test that the sandbox stores: a
/// real v1.33 server refuses each with 422 Invalid naming the field.
#[tokio::test]
async fn invalid_sample_bodies_the_sandbox_stores_are_refused() {
    let (hpa, ing) = ("autoscaling", "networking.k8s.io");
    check_refusals(vec![
        refusal(
            hpa,
            "HorizontalPodAutoscaler",
            "/spec/maxReplicas",
            Some(json!(0)),
            "spec.maxReplicas",
        ),
        refusal(
            hpa,
            "HorizontalPodAutoscaler",
            "/spec/minReplicas",
            Some(json!(5)),
            "spec.maxReplicas",
        ),
        refusal(
            hpa,
            "HorizontalPodAutoscaler",
            "/spec/scaleTargetRef/name",
            None,
            "spec.scaleTargetRef.name",
        ),
        refusal(
            ing,
            "Ingress",
            "/spec/defaultBackend/service/port/number",
            Some(json!(70000)),
            "spec.defaultBackend.service.port.number",
        ),
        refusal(
            ing,
            "Ingress",
            "/spec/defaultBackend/service/name",
            Some(json!("1web")),
            "spec.defaultBackend.service.name",
        ),
        refusal(
            "",
            "PersistentVolumeClaim",
            "/spec/accessModes",
            None,
            "spec.accessModes",
        ),
        refusal(
            "",
            "PersistentVolumeClaim",
            "/spec/accessModes/0",
            Some(json!("ReadWriteSometimes")),
            "spec.accessModes",
        ),
        refusal(
            "",
            "PersistentVolumeClaim",
            "/spec/resources/requests/storage",
            None,
            "spec.resources[storage]",
        ),
        refusal(
            "policy",
            "PodDisruptionBudget",
            "/spec/minAvailable",
            Some(json!(-1)),
            "spec.minAvailable",
        ),
        refusal(
            "policy",
            "PodDisruptionBudget",
            "/spec/selector/matchLabels/app",
            Some(json!("a b")),
            "spec.selector.matchLabels",
        ),
        refusal(
            "scheduling.k8s.io",
            "PriorityClass",
            "/value",
            Some(json!(1_000_000_001)),
            "value",
        ),
        refusal(
            "",
            "Service",
            "/spec/ports/0/targetPort",
            Some(json!(70000)),
            "spec.ports[0].targetPort",
        ),
        refusal(
            "",
            "Service",
            "/spec/selector/app",
            Some(json!("a b")),
            "spec.selector",
        ),
        refusal("", "Service", "/spec/ports/0", None, "spec.ports"),
        refusal(
            "storage.k8s.io",
            "StorageClass",
            "/provisioner",
            Some(json!("not a qualified name!")),
            "provisioner",
        ),
        refusal(
            "storage.k8s.io",
            "StorageClass",
            "/provisioner",
            None,
            "provisioner",
        ),
    ])
    .await;
}

/// A `null` element of a map or list decodes to its type's zero value on a
/// real server; the object is stored, and answered, that way.
#[tokio::test]
async fn null_elements_are_stored_as_zero_values() {
    let (sb, _client) = sandbox().await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "nulls", "labels": {"a": null}},
        "data": {"k": null, "j": "x"}});
    let (code, made) = post_json(&sb, CMS, &cm).await;
    assert_eq!(code, 201, "{made}");
    assert_eq!(made["data"], json!({"j": "x", "k": ""}));
    assert_eq!(made["metadata"]["labels"], json!({"a": ""}));
    let (code, read) = get_json(&sb, &format!("{CMS}/nulls")).await;
    assert_eq!(code, 200);
    let read: k8s_openapi::api::core::v1::ConfigMap = typed(read);
    assert_eq!(read.data.unwrap()["k"], "");
}
