//! The `SyncConfig` custom resource (`sync.appuio.ch/v1alpha1`), defined once,
//! and the CustomResourceDefinition generated from it.
//!
//! The wire format is espejo's, unchanged: a SyncConfig written for espejo
//! deserializes here as it is, and one written by mirra is readable by espejo.
//! The additions are the optional `status.observedGeneration`,
//! `spec.copyItems` (copies of existing objects) and
//! `spec.serviceAccountName` (whose rights the SyncConfig uses), which
//! espejo ignores.
//!
//! What this module must NOT do: interpret the spec. Validation, selection and
//! templating live in their own modules; the types here accept anything the
//! API server would store, so that a malformed spec becomes a status
//! condition instead of a deserialization failure of the whole object.

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_core::CustomResourceExt;
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The API group of the resource.
pub const GROUP: &str = "sync.appuio.ch";
/// The served (and stored) version of the resource.
pub const VERSION: &str = "v1alpha1";
/// The kind of the resource.
pub const KIND: &str = "SyncConfig";

/// What a SyncConfig asks for: which objects to copy into or delete from
/// which namespaces.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "sync.appuio.ch",
    version = "v1alpha1",
    kind = "SyncConfig",
    plural = "syncconfigs",
    singular = "syncconfig",
    namespaced,
    status = "SyncConfigStatus",
    derive = "PartialEq",
    doc = "SyncConfig copies objects into, and deletes objects from, every namespace its selector matches.",
    crates(kube_core = "::kube_core"),
    printcolumn = r#"{"name":"Synced","type":"integer","jsonPath":".status.synchronizedItemCount"}"#,
    printcolumn = r#"{"name":"Deleted","type":"integer","jsonPath":".status.deletedItemCount"}"#,
    printcolumn = r#"{"name":"Failed","type":"integer","jsonPath":".status.failedItemCount"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct SyncConfigSpec {
    /// When an update is refused as invalid (for example an immutable field
    /// changed), delete the object and create it again.
    #[serde(default, skip_serializing_if = "is_false")]
    pub force_recreate: bool,
    /// Which namespaces are targeted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<NamespaceSelector>,
    /// Whole Kubernetes objects to copy into every targeted namespace. The
    /// string `${PROJECT_NAME}` in any string value is replaced by the name of
    /// the target namespace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "sync_items_schema")]
    pub sync_items: Vec<serde_json::Value>,
    /// Objects to delete from every targeted namespace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delete_items: Vec<DeleteItem>,
    /// Existing objects to copy into every targeted namespace and keep in
    /// step with (a mirra extension; espejo ignores it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub copy_items: Vec<CopyItem>,
    /// A ServiceAccount of this SyncConfig's own namespace: every write for
    /// this SyncConfig, and every read of its copyItems' sources, is made
    /// as that account (impersonation), so it copies, prunes and deletes
    /// only where the account may. Required in the namespaces the operator
    /// opens to tenants (`--tenant-namespace`); a mirra extension espejo
    /// ignores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
}

/// An existing object (the source) whose content is copied into every
/// targeted namespace and kept equal to it: a change of the source updates
/// every copy. Secrets copy `type` and `data`, ConfigMaps `data` and
/// `binaryData`, other kinds `spec`; labels and annotations are copied only
/// where named in `labels` and `annotations`. A copy is owned, pruned and
/// opted out of like a syncItem's. When the source is missing or cannot be
/// read, its copies are kept as they are and the item is reported failed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CopyItem {
    /// apiVersion of the source, e.g. `v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of the source, e.g. `Secret`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Namespace of the source.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name of the source.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Name of the copies (default: the source's name); `${PROJECT_NAME}`
    /// is replaced by the target namespace's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_name: Option<String>,
    /// Keys of the source's labels copied onto the copies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// Keys of the source's annotations copied onto the copies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub annotations: Vec<String>,
}

/// An object to delete, named by apiVersion, kind and name.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeleteItem {
    /// apiVersion of the object to delete, e.g. `v1` or `apps/v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of the object to delete.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Name of the object to delete; `${PROJECT_NAME}` is replaced by the
    /// target namespace's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// Which namespaces a SyncConfig targets: `(labelSelector matches OR any
/// matchNames pattern matches) AND no ignoreNames pattern matches`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceSelector {
    /// Label selector on the namespace's labels. Can be combined with
    /// matchNames to include unlabelled namespaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Regular expressions on the namespace name, each anchored as a whole.
    /// A namespace is included if at least one pattern matches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_names: Vec<String>,
    /// Regular expressions on the namespace name, each anchored as a whole.
    /// A namespace is excluded if at least one pattern matches, even when
    /// selected by matchNames or labelSelector.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore_names: Vec<String>,
}

/// A standard Kubernetes label selector. The operator is kept as a string so
/// that an unknown operator is reported by validation rather than failing
/// deserialization of the whole SyncConfig.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// `{key: value}` pairs; each is equivalent to an `In` requirement with a
    /// single value. The requirements are ANDed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_labels: Option<BTreeMap<String, String>>,
    /// Label selector requirements. The requirements are ANDed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_expressions: Option<Vec<LabelSelectorRequirement>>,
}

/// One requirement of a label selector.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelectorRequirement {
    /// The label key the requirement applies to.
    pub key: String,
    /// One of `In`, `NotIn`, `Exists` and `DoesNotExist`.
    pub operator: String,
    /// Values for `In` and `NotIn` (non-empty); empty for `Exists` and
    /// `DoesNotExist`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<String>>,
}

/// What mirra observed when it last acted on a SyncConfig. The counters are
/// current totals over all selected namespaces, not running sums.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SyncConfigStatus {
    /// Conditions of types `Ready` (at least one item synchronized or
    /// deleted, or none failed), `Invalid`, `Errored` (items failed and none
    /// was synchronized or deleted), `Degraded` (any item failed) and
    /// `Conflict`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<SyncConfigCondition>,
    /// Number of (namespace, syncItem) pairs that are in sync or being written.
    #[serde(default)]
    pub synchronized_item_count: i64,
    /// Number of objects deleted by deleteItems: being deleted now, or
    /// deleted since the previous status (kept until the next status).
    /// Objects that were already gone are not counted.
    #[serde(default)]
    pub deleted_item_count: i64,
    /// Number of items that failed or lost a conflict to another SyncConfig.
    #[serde(default)]
    pub failed_item_count: i64,
    /// The `metadata.generation` of the spec this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// One status condition, in espejo's shape (a subset of the Kubernetes
/// `Condition` type, so that statuses written by espejo still parse).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SyncConfigCondition {
    /// The condition type, unique within the status.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// When `status` last changed (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub last_transition_time: Option<String>,
    /// A CamelCase reason for the condition's last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A human-readable explanation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// syncItems are whole objects of any kind: the API server must keep every
/// field (preserve-unknown-fields) and check the object envelope
/// (embedded-resource: apiVersion, kind, metadata).
fn sync_items_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "description": "Whole Kubernetes objects to copy into every targeted namespace.",
        "type": "array",
        "items": {
            "type": "object",
            "x-kubernetes-embedded-resource": true,
            "x-kubernetes-preserve-unknown-fields": true
        }
    })
}

/// The CustomResourceDefinition that serves [`SyncConfig`].
pub fn crd() -> CustomResourceDefinition {
    let mut crd = SyncConfig::crd();
    // espejo's CRD accepts a SyncConfig without a spec, and espejo reports
    // it Invalid; the derived schema would require one, so that a real API
    // server refused such an object where espejo's users saw a status.
    for version in &mut crd.spec.versions {
        let schema = version
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut());
        if let Some(schema) = schema
            && let Some(required) = schema.required.as_mut()
        {
            required.retain(|field| field != "spec");
            if required.is_empty() {
                schema.required = None;
            }
        }
    }
    crd
}

/// The first line of the generated CRD file.
const CRD_HEADER: &str = "# Generated from the Rust types in crates/mirra-mirror; do not edit.\n\
                          # Regenerate with: MIRRA_BLESS=1 cargo test -p mirra-mirror --test it crd::\n";

/// [`crd()`] as YAML, the content of `deploy/crd/syncconfig.yaml`.
pub fn crd_yaml() -> String {
    match serde_yaml::to_string(&crd()) {
        Ok(yaml) => format!("{CRD_HEADER}{yaml}"),
        // Serializing a plain data structure to YAML has no failure mode in
        // practice; the golden test would catch this text in the file.
        Err(e) => format!("# failed to serialize the CRD: {e}\n"),
    }
}
