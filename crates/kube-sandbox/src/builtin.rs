//! Every built-in resource of the Kubernetes version the sandbox reports,
//! from ONE table.
//!
//! Each row names a k8s-openapi type, which already knows its group,
//! version, kind, plural and scope, its fields (for the unknown-field
//! check) and its schema (for OpenAPI and for finding where quantities are
//! stored). The row adds what the type does not carry: short names,
//! categories, subresources and the registry strategy's choices
//! (generation, name rule, whether a delete answers the object).
//!
//! What this module must NOT do: store objects or decide per-request
//! behaviour. It describes kinds; the store and `kinds` act on them.
//!
//! Rows that are not stored kinds: the create-only reviews of
//! `authentication.k8s.io` and `authorization.k8s.io` (`Special::Review`,
//! answered by `crate::review`) and `componentstatuses`
//! (`Special::ComponentStatus`, `crate::component_status`). Their rows
//! give discovery, OpenAPI and body decoding what they give every kind.
//! The pods' and CSRs' own subresources (`binding`, `eviction`, `log`...)
//! are listed by `crate::subresources`, not here.
//!
//! A kind served at two versions has two rows: the first is the version
//! objects are stored at, the later one names it in `stored_as` and is a
//! converted view of the same objects (`autoscaling/v1`
//! HorizontalPodAutoscaler over `autoscaling/v2`, `crate::convert`).
//!
//! Left out on purpose (docs/ARCHITECTURE.md lists them): every alpha or
//! beta API (a v1.33 server serves none of them by default).
//! `serviceaccounts/token` is served by `crate::subresources`.

use std::any::TypeId;
use std::collections::BTreeMap;
use std::sync::OnceLock;

use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::registry::{NameRule, Resource, Special};

/// One served kind: what k8s-openapi knows of it, and the functions that
/// work on its typed form.
pub struct Builtin {
    /// API group, empty for core.
    pub group: &'static str,
    /// Version.
    pub version: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Plural resource name.
    pub plural: &'static str,
    /// `ListKind`.
    pub list_kind: &'static str,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// The object as its typed form keeps it (`None` when the body does
    /// not decode into the typed form).
    pub typed: fn(&Value) -> Option<Value>,
    /// Adds the kind's schema (and what it refers to) to a generator and
    /// returns the name it is stored under.
    pub schema: fn(&mut schemars::SchemaGenerator) -> String,
    /// The definition name of the kind's schema
    /// (`io.k8s.api.core.v1.ConfigMap`).
    pub schema_name: fn() -> String,
    /// The status a create leaves: the zero value of the kind's status
    /// struct as the server serialises it (`None` for kinds without one).
    pub zero_status: fn() -> Option<Value>,
    /// For a second served version: the version the objects are stored
    /// at (`None` for the storage version itself).
    pub stored_as: Option<&'static str>,
}

fn roundtrip<T: DeserializeOwned + Serialize>(v: &Value) -> Option<Value> {
    // Decoded from the borrowed value: no copy of the body per write.
    let typed = T::deserialize(v).ok()?;
    serde_json::to_value(typed).ok()
}

fn schema_of<T: JsonSchema>(g: &mut schemars::SchemaGenerator) -> String {
    g.subschema_for::<T>();
    T::schema_name().into_owned()
}

fn schema_name_of<T: JsonSchema>() -> String {
    T::schema_name().into_owned()
}

fn zero_status_of<T: k8s_openapi::Resource + DeserializeOwned + Serialize>() -> Option<Value> {
    // An empty status decoded and encoded again gives the fields the
    // server always writes (the non-`omitempty` ones, such as a
    // StatefulSet's `replicas: 0`); a kind without a status field loses
    // it on the way.
    let probe = serde_json::json!({
        "apiVersion": T::API_VERSION, "kind": T::KIND, "metadata": {}, "status": {}
    });
    roundtrip::<T>(&probe)?.get("status").cloned()
}

fn entry<T>() -> Builtin
where
    T: k8s_openapi::ListableResource + DeserializeOwned + Serialize + JsonSchema + 'static,
    T::Scope: 'static,
{
    let scope = TypeId::of::<T::Scope>();
    debug_assert!(
        scope == TypeId::of::<NamespaceResourceScope>()
            || scope == TypeId::of::<ClusterResourceScope>()
    );
    Builtin {
        group: T::GROUP,
        version: T::VERSION,
        kind: T::KIND,
        plural: T::URL_PATH_SEGMENT,
        list_kind: T::LIST_KIND,
        namespaced: scope == TypeId::of::<NamespaceResourceScope>(),
        typed: roundtrip::<T>,
        schema: schema_of::<T>,
        schema_name: schema_name_of::<T>,
        zero_status: zero_status_of::<T>,
        stored_as: None,
    }
}

/// A second served version of a kind whose objects are stored at
/// `stored_as`.
fn view<T>(stored_as: &'static str) -> Builtin
where
    T: k8s_openapi::ListableResource + DeserializeOwned + Serialize + JsonSchema + 'static,
    T::Scope: 'static,
{
    Builtin {
        stored_as: Some(stored_as),
        ..entry::<T>()
    }
}

/// A kind with no list type (the create-only reviews): its `list_kind`
/// is empty.
fn unlisted<T>() -> Builtin
where
    T: k8s_openapi::Resource + DeserializeOwned + Serialize + JsonSchema + 'static,
    T::Scope: 'static,
{
    Builtin {
        group: T::GROUP,
        version: T::VERSION,
        kind: T::KIND,
        plural: T::URL_PATH_SEGMENT,
        list_kind: "",
        namespaced: TypeId::of::<T::Scope>() == TypeId::of::<NamespaceResourceScope>(),
        typed: roundtrip::<T>,
        schema: schema_of::<T>,
        schema_name: schema_name_of::<T>,
        zero_status: zero_status_of::<T>,
        stored_as: None,
    }
}

/// Every served built-in kind, in the order a v1.33 server lists its
/// groups in discovery (core first).
pub fn table() -> &'static [Builtin] {
    static TABLE: OnceLock<Vec<Builtin>> = OnceLock::new();
    TABLE.get_or_init(|| {
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
        vec![
            entry::<core::Namespace>(),
            entry::<k8s_openapi::api::core::v1::ComponentStatus>(),
            entry::<core::ConfigMap>(),
            entry::<core::Secret>(),
            entry::<core::Service>(),
            entry::<core::Endpoints>(),
            entry::<core::Node>(),
            entry::<core::ServiceAccount>(),
            entry::<core::Event>(),
            entry::<core::Pod>(),
            entry::<core::PodTemplate>(),
            entry::<core::ReplicationController>(),
            entry::<core::LimitRange>(),
            entry::<core::ResourceQuota>(),
            entry::<core::PersistentVolume>(),
            entry::<core::PersistentVolumeClaim>(),
            entry::<apireg::APIService>(),
            entry::<apps::Deployment>(),
            entry::<apps::StatefulSet>(),
            entry::<apps::DaemonSet>(),
            entry::<apps::ReplicaSet>(),
            entry::<apps::ControllerRevision>(),
            entry::<events::Event>(),
            // The create-only reviews (`crate::review`), never stored.
            unlisted::<k8s_openapi::api::authentication::v1::TokenReview>(),
            unlisted::<k8s_openapi::api::authentication::v1::SelfSubjectReview>(),
            unlisted::<k8s_openapi::api::authorization::v1::LocalSubjectAccessReview>(),
            unlisted::<k8s_openapi::api::authorization::v1::SelfSubjectAccessReview>(),
            unlisted::<k8s_openapi::api::authorization::v1::SelfSubjectRulesReview>(),
            unlisted::<k8s_openapi::api::authorization::v1::SubjectAccessReview>(),
            entry::<autoscaling::HorizontalPodAutoscaler>(),
            view::<autoscaling_v1::HorizontalPodAutoscaler>("v2"),
            entry::<batch::Job>(),
            entry::<batch::CronJob>(),
            entry::<certificates::CertificateSigningRequest>(),
            entry::<networking::Ingress>(),
            entry::<networking::IngressClass>(),
            entry::<networking::NetworkPolicy>(),
            entry::<networking::IPAddress>(),
            entry::<networking::ServiceCIDR>(),
            entry::<policy::PodDisruptionBudget>(),
            entry::<rbac::ClusterRole>(),
            entry::<rbac::ClusterRoleBinding>(),
            entry::<rbac::Role>(),
            entry::<rbac::RoleBinding>(),
            entry::<storage::StorageClass>(),
            entry::<storage::VolumeAttachment>(),
            entry::<storage::CSIDriver>(),
            entry::<storage::CSINode>(),
            entry::<storage::CSIStorageCapacity>(),
            entry::<admission::MutatingWebhookConfiguration>(),
            entry::<admission::ValidatingWebhookConfiguration>(),
            entry::<admission::ValidatingAdmissionPolicy>(),
            entry::<admission::ValidatingAdmissionPolicyBinding>(),
            entry::<apiext::CustomResourceDefinition>(),
            entry::<scheduling::PriorityClass>(),
            entry::<coordination::Lease>(),
            entry::<node::RuntimeClass>(),
            entry::<flowcontrol::FlowSchema>(),
            entry::<flowcontrol::PriorityLevelConfiguration>(),
            entry::<discovery::EndpointSlice>(),
        ]
    })
}

/// The table row of a kind's storage version, by group and kind.
#[cfg(test)]
pub fn find(group: &str, kind: &str) -> Option<&'static Builtin> {
    index_of(group, kind).and_then(|i| table().get(i))
}

/// The table row of a kind at one served version.
pub fn find_version(group: &str, version: &str, kind: &str) -> Option<&'static Builtin> {
    static INDEX: OnceLock<BTreeMap<(&'static str, &'static str, &'static str), usize>> =
        OnceLock::new();
    let index = INDEX.get_or_init(|| {
        table()
            .iter()
            .enumerate()
            .map(|(i, b)| ((b.group, b.version, b.kind), i))
            .collect()
    });
    index
        .get(&(group, version, kind))
        .and_then(|i| table().get(*i))
}

fn index_of(group: &str, kind: &str) -> Option<usize> {
    static INDEX: OnceLock<BTreeMap<(&'static str, &'static str), usize>> = OnceLock::new();
    let index = INDEX.get_or_init(|| {
        table()
            .iter()
            .enumerate()
            .filter(|(_, b)| b.stored_as.is_none())
            .map(|(i, b)| ((b.group, b.kind), i))
            .collect()
    });
    index.get(&(group, kind)).copied()
}

/// What the registry strategy of each kind decides, beyond its type.
struct Traits {
    short: &'static [&'static str],
    status: bool,
    scale: bool,
    generation: bool,
    name_rule: NameRule,
    special: Special,
    categories: &'static [&'static str],
    returns_deleted: bool,
}

const PLAIN: Traits = Traits {
    short: &[],
    status: false,
    scale: false,
    generation: false,
    name_rule: NameRule::Subdomain,
    special: Special::None,
    categories: &[],
    returns_deleted: false,
};

/// The workload kinds: status, generation and the `all` category.
const WORKLOAD: Traits = Traits {
    status: true,
    generation: true,
    categories: &["all"],
    ..PLAIN
};

const API_EXTENSIONS: &[&str] = &["api-extensions"];

/// Short names and categories as a v1.33 server's discovery lists them;
/// subresources as its registries install them; generation for the
/// strategies that set `metadata.generation`; `returns_deleted` for the
/// registries built with `ReturnDeletedObject` (a DELETE answers the
/// object, not a `Status`; the official clients' DELETE answer types,
/// generated from the server's OpenAPI, say which).
fn traits(group: &str, plural: &str) -> Traits {
    use NameRule::{Label, PathSegment};
    match (group, plural) {
        ("", "namespaces") => Traits {
            short: &["ns"],
            status: true,
            name_rule: Label,
            special: Special::Namespace,
            returns_deleted: true,
            ..PLAIN
        },
        ("", "configmaps") => Traits {
            short: &["cm"],
            special: Special::ConfigMap,
            ..PLAIN
        },
        ("", "secrets") => Traits {
            special: Special::Secret,
            ..PLAIN
        },
        ("", "services") => Traits {
            short: &["svc"],
            status: true,
            name_rule: Label,
            special: Special::Service,
            categories: &["all"],
            returns_deleted: true,
            ..PLAIN
        },
        ("", "endpoints") => Traits {
            short: &["ep"],
            ..PLAIN
        },
        ("", "nodes") => Traits {
            short: &["no"],
            status: true,
            special: Special::Node,
            ..PLAIN
        },
        ("", "serviceaccounts") => Traits {
            short: &["sa"],
            returns_deleted: true,
            ..PLAIN
        },
        ("", "events") | ("events.k8s.io", "events") => Traits {
            short: &["ev"],
            ..PLAIN
        },
        ("", "pods") => Traits {
            short: &["po"],
            status: true,
            categories: &["all"],
            returns_deleted: true,
            special: Special::Pod,
            ..PLAIN
        },
        ("", "replicationcontrollers") => Traits {
            short: &["rc"],
            scale: true,
            ..WORKLOAD
        },
        ("", "limitranges") => Traits {
            short: &["limits"],
            ..PLAIN
        },
        ("", "resourcequotas") => Traits {
            short: &["quota"],
            status: true,
            returns_deleted: true,
            ..PLAIN
        },
        ("", "persistentvolumes") => Traits {
            short: &["pv"],
            status: true,
            returns_deleted: true,
            ..PLAIN
        },
        ("", "persistentvolumeclaims") => Traits {
            short: &["pvc"],
            status: true,
            returns_deleted: true,
            ..PLAIN
        },
        ("", "podtemplates") => Traits {
            returns_deleted: true,
            ..PLAIN
        },
        ("apiregistration.k8s.io", "apiservices") => Traits {
            status: true,
            categories: API_EXTENSIONS,
            ..PLAIN
        },
        ("apps", "deployments") => Traits {
            short: &["deploy"],
            scale: true,
            ..WORKLOAD
        },
        ("apps", "statefulsets") => Traits {
            short: &["sts"],
            scale: true,
            ..WORKLOAD
        },
        ("apps", "daemonsets") => Traits {
            short: &["ds"],
            ..WORKLOAD
        },
        ("apps", "replicasets") => Traits {
            short: &["rs"],
            scale: true,
            ..WORKLOAD
        },
        ("autoscaling", "horizontalpodautoscalers") => Traits {
            short: &["hpa"],
            status: true,
            categories: &["all"],
            ..PLAIN
        },
        ("batch", "jobs") => WORKLOAD,
        ("batch", "cronjobs") => Traits {
            short: &["cj"],
            ..WORKLOAD
        },
        ("certificates.k8s.io", "certificatesigningrequests") => Traits {
            short: &["csr"],
            status: true,
            name_rule: PathSegment,
            ..PLAIN
        },
        ("networking.k8s.io", "ingresses") => Traits {
            short: &["ing"],
            status: true,
            generation: true,
            ..PLAIN
        },
        ("networking.k8s.io", "ingressclasses") => Traits {
            generation: true,
            ..PLAIN
        },
        ("networking.k8s.io", "networkpolicies") => Traits {
            short: &["netpol"],
            generation: true,
            ..PLAIN
        },
        ("networking.k8s.io", "ipaddresses") => Traits {
            short: &["ip"],
            name_rule: PathSegment,
            ..PLAIN
        },
        ("networking.k8s.io", "servicecidrs") => Traits {
            status: true,
            ..PLAIN
        },
        ("policy", "poddisruptionbudgets") => Traits {
            short: &["pdb"],
            status: true,
            generation: true,
            ..PLAIN
        },
        ("rbac.authorization.k8s.io", _) => Traits {
            name_rule: PathSegment,
            ..PLAIN
        },
        ("storage.k8s.io", "storageclasses") => Traits {
            short: &["sc"],
            returns_deleted: true,
            ..PLAIN
        },
        ("storage.k8s.io", "volumeattachments") => Traits {
            status: true,
            returns_deleted: true,
            ..PLAIN
        },
        ("storage.k8s.io", "csidrivers" | "csinodes") => Traits {
            returns_deleted: true,
            ..PLAIN
        },
        ("admissionregistration.k8s.io", "validatingadmissionpolicies") => Traits {
            status: true,
            generation: true,
            categories: API_EXTENSIONS,
            ..PLAIN
        },
        ("admissionregistration.k8s.io", _) => Traits {
            generation: true,
            categories: API_EXTENSIONS,
            ..PLAIN
        },
        ("apiextensions.k8s.io", "customresourcedefinitions") => Traits {
            short: &["crd", "crds"],
            status: true,
            generation: true,
            special: Special::Crd,
            categories: API_EXTENSIONS,
            ..PLAIN
        },
        ("scheduling.k8s.io", "priorityclasses") => Traits {
            short: &["pc"],
            ..PLAIN
        },
        ("", "componentstatuses") => Traits {
            short: &["cs"],
            special: Special::ComponentStatus,
            ..PLAIN
        },
        ("authentication.k8s.io" | "authorization.k8s.io", _) => Traits {
            special: Special::Review,
            ..PLAIN
        },
        ("flowcontrol.apiserver.k8s.io", _) => Traits {
            status: true,
            generation: true,
            name_rule: PathSegment,
            ..PLAIN
        },
        _ => PLAIN,
    }
}

/// The field selectors each built-in kind supports, from the real server's
/// field-label tables (`GetAttrs`/`ToSelectableFields` of each strategy).
fn selectable_fields(group: &str, plural: &str) -> Vec<String> {
    let mut fields = vec!["metadata.name", "metadata.namespace"];
    let extra: &[&str] = match (group, plural) {
        ("", "secrets") => &["type"],
        ("", "namespaces") => &["status.phase"],
        ("", "nodes") => &["spec.unschedulable"],
        ("", "services") => &["spec.clusterIP", "spec.type"],
        ("", "pods") => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        ("", "replicationcontrollers") => &["status.replicas"],
        ("", "persistentvolumeclaims") => &["status.phase"],
        ("", "persistentvolumes") => &["status.phase"],
        ("apps", "replicasets") => &["status.replicas"],
        ("batch", "jobs") => &["status.successful"],
        ("certificates.k8s.io", "certificatesigningrequests") => &["spec.signerName"],
        ("", "events") => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        // events.k8s.io/v1 names the same fields by its own field names.
        ("events.k8s.io", "events") => &[
            "regarding.kind",
            "regarding.namespace",
            "regarding.name",
            "regarding.uid",
            "regarding.apiVersion",
            "regarding.resourceVersion",
            "regarding.fieldPath",
            "reason",
            "reportingController",
            "type",
        ],
        _ => &[],
    };
    fields.extend_from_slice(extra);
    fields.into_iter().map(str::to_string).collect()
}

/// The served resources, in discovery order.
pub fn resources() -> Vec<Resource> {
    table()
        .iter()
        .map(|b| {
            let t = traits(b.group, b.plural);
            Resource {
                group: b.group.into(),
                version: b.version.into(),
                plural: b.plural.into(),
                singular: b.kind.to_lowercase(),
                kind: b.kind.into(),
                list_kind: b.list_kind.into(),
                namespaced: b.namespaced,
                short_names: t.short.iter().map(|s| s.to_string()).collect(),
                status_subresource: t.status,
                scale_subresource: t.scale,
                tracks_generation: t.generation,
                name_rule: t.name_rule,
                special: t.special,
                strategic_merge: true,
                printer_columns: Vec::new(),
                categories: t.categories.iter().map(|s| s.to_string()).collect(),
                selectable_fields: selectable_fields(b.group, b.plural),
                custom: false,
                returns_deleted: t.returns_deleted,
                builtin: true,
                schema: None,
                stored_as: b.stored_as.map(str::to_string),
            }
        })
        .collect()
}

pub use kube_semantics::quantity::Seg as PathSeg;

#[cfg(test)]
const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";

/// Every definition the built-in kinds' schemas use, keyed by definition
/// name, each kind's own carrying `x-kubernetes-group-version-kind`.
fn generate(kinds: &[&Builtin]) -> serde_json::Map<String, Value> {
    let mut g = schemars::generate::SchemaSettings::openapi3().into_generator();
    let named: Vec<(String, &Builtin)> = kinds.iter().map(|b| ((b.schema)(&mut g), *b)).collect();
    let mut defs = g.take_definitions(true);
    for (name, b) in named {
        if let Some(Value::Object(s)) = defs.get_mut(&name) {
            s.insert(
                "x-kubernetes-group-version-kind".into(),
                serde_json::json!([{"group": b.group, "kind": b.kind, "version": b.version}]),
            );
        }
    }
    defs
}

/// The OpenAPI v3 schemas of every built-in kind and what they refer to,
/// keyed by definition name (`io.k8s.api.core.v1.ConfigMap`), with each
/// kind's schema carrying `x-kubernetes-group-version-kind`. Built on first
/// use (an OpenAPI request, a body that does not decode) and kept; writes
/// that decode never need it.
pub fn schemas() -> &'static serde_json::Map<String, Value> {
    static SCHEMAS: OnceLock<serde_json::Map<String, Value>> = OnceLock::new();
    SCHEMAS.get_or_init(|| generate(&table().iter().collect::<Vec<_>>()))
}

/// The definition name of a built-in kind's schema at one version.
pub fn schema_name(group: &str, version: &str, kind: &str) -> Option<String> {
    find_version(group, version, kind).map(|b| (b.schema_name)())
}

/// Where a built-in kind stores `resource.Quantity` values (the table in
/// `quantity_table`, which the tests hold equal to a walk of the kinds'
/// schemas).
pub fn quantity_paths(group: &str, kind: &str) -> &'static [Vec<PathSeg>] {
    static PATHS: OnceLock<Vec<Vec<Vec<PathSeg>>>> = OnceLock::new();
    let all = PATHS.get_or_init(|| {
        table()
            .iter()
            .map(|b| {
                crate::quantity_table::QUANTITY_PATHS
                    .iter()
                    .filter(|_| b.stored_as.is_none())
                    .find(|(g, k, _)| *g == b.group && *k == b.kind)
                    .map(|(_, _, patterns)| {
                        patterns
                            .iter()
                            .map(|p| p.iter().map(|s| seg(s)).collect())
                            .collect()
                    })
                    .unwrap_or_default()
            })
            .collect()
    });
    index_of(group, kind)
        .and_then(|i| all.get(i))
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn seg(s: &str) -> PathSeg {
    match s {
        "*" => PathSeg::AnyKey,
        "[]" => PathSeg::AnyIndex,
        key => PathSeg::Key(key.to_string()),
    }
}

/// The quantity paths of every kind, found by walking the schemas (what
/// `quantity_table` must hold).
#[cfg(test)]
fn walked_quantity_paths() -> Vec<Vec<Vec<PathSeg>>> {
    let defs = generate(&table().iter().collect::<Vec<_>>());
    table()
        .iter()
        .map(|b| {
            let mut found = Vec::new();
            let name = (b.schema_name)();
            if let Some(s) = defs.get(&name) {
                let mut stack = vec![name];
                walk(&defs, s, &mut Vec::new(), &mut stack, &mut found);
            }
            found
        })
        .collect()
}

#[cfg(test)]
fn ref_name(s: &Value) -> Option<&str> {
    let r = s.get("$ref").and_then(Value::as_str).or_else(|| {
        // `allOf: [{$ref}]` is how a ref with siblings is written.
        s.get("allOf")?.get(0)?.get("$ref")?.as_str()
    })?;
    r.rsplit('/').next()
}

#[cfg(test)]
fn walk(
    defs: &serde_json::Map<String, Value>,
    s: &Value,
    path: &mut Vec<PathSeg>,
    stack: &mut Vec<String>,
    out: &mut Vec<Vec<PathSeg>>,
) {
    if let Some(name) = ref_name(s) {
        if name == QUANTITY {
            out.push(path.clone());
            return;
        }
        // Recursive schemas (JSONSchemaProps) hold no quantities; the
        // stack stops the walk from going round them.
        if stack.iter().any(|n| n == name) {
            return;
        }
        if let Some(target) = defs.get(name) {
            stack.push(name.to_string());
            walk(defs, target, path, stack, out);
            stack.pop();
        }
        return;
    }
    if let Some(Value::Object(props)) = s.get("properties") {
        for (k, v) in props {
            path.push(PathSeg::Key(k.clone()));
            walk(defs, v, path, stack, out);
            path.pop();
        }
    }
    if let Some(items) = s.get("items") {
        path.push(PathSeg::AnyIndex);
        walk(defs, items, path, stack, out);
        path.pop();
    }
    if let Some(add) = s.get("additionalProperties").filter(|a| a.is_object()) {
        path.push(PathSeg::AnyKey);
        walk(defs, add, path, stack, out);
        path.pop();
    }
}

#[cfg(test)]
mod tests;
