//! The kinds the sandbox serves: built-in resources and those added by
//! CustomResourceDefinitions.
//!
//! A [`Resource`] describes one REST resource (group, version, plural, kind,
//! scope, subresources) and the per-kind behaviour the store applies to it.
//! The registry answers discovery and routes URLs; it holds no objects.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

/// How a kind's names are validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// DNS-1123 subdomain (most kinds).
    Subdomain,
    /// DNS-1123 label (Namespace, Service).
    Label,
    /// Path segment name only (RBAC kinds allow `:` and more).
    PathSegment,
}

/// Kind-specific behaviour the store applies on writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    /// No special handling.
    None,
    /// Namespaces: phase, finalizers, the `kubernetes.io/metadata.name` label.
    Namespace,
    /// Services: defaulting, clusterIP and nodePort allocation, immutability.
    Service,
    /// ConfigMaps: `immutable`.
    ConfigMap,
    /// Secrets: `immutable`, immutable `type`.
    Secret,
    /// CustomResourceDefinitions: serve the resources they define.
    Crd,
    /// Pods: admitted and left Pending (no scheduler or kubelet).
    Pod,
    /// Nodes: status is kept on create (a kubelet registers its Node with
    /// capacity and addresses in one create), though not on later writes.
    Node,
    /// The create-only reviews (TokenReview, SubjectAccessReview and the
    /// others): answered by `crate::review`, never stored.
    Review,
    /// `componentstatuses`: list and get only, answered by
    /// `crate::component_status` from the control plane's health.
    ComponentStatus,
}

/// One REST resource.
#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    /// API group, empty for core.
    pub group: String,
    /// Version served (one per resource in this sandbox).
    pub version: String,
    /// Plural resource name used in URLs.
    pub plural: String,
    /// Singular name (for discovery).
    pub singular: String,
    /// Kind.
    pub kind: String,
    /// `ListKind`.
    pub list_kind: String,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Short names for kubectl (`cm`, `svc`, ...).
    pub short_names: Vec<String>,
    /// Whether `/status` is a separate subresource (status ignored on main
    /// writes, everything but status ignored on status writes).
    pub status_subresource: bool,
    /// Whether `/scale` is served (an `autoscaling/v1` Scale over
    /// `spec.replicas`).
    pub scale_subresource: bool,
    /// Whether a DELETE answers the deleted object instead of a `Status`
    /// (the registries built with `ReturnDeletedObject`).
    pub returns_deleted: bool,
    /// A built-in kind (its typed form, schema and defaults are known).
    pub builtin: bool,
    /// Whether `metadata.generation` is tracked (bumped on spec changes).
    pub tracks_generation: bool,
    /// Name validation rule.
    pub name_rule: NameRule,
    /// Special write behaviour.
    pub special: Special,
    /// Whether strategic merge patch is accepted (not for custom resources).
    pub strategic_merge: bool,
    /// Additional printer columns (CRDs) as the server serves them: the
    /// storage version's `additionalPrinterColumns`, or a single `Age`
    /// column when none is declared.
    pub printer_columns: Vec<PrinterColumn>,
    /// Categories (`all`).
    pub categories: Vec<String>,
    /// Fields a `fieldSelector` may name (`metadata.name`,
    /// `metadata.namespace` and the kind's own); others are refused with
    /// 400, as the real server does.
    pub selectable_fields: Vec<String>,
    /// Defined by a CustomResourceDefinition (changes error wording).
    pub custom: bool,
    /// The storage version's `schema.openAPIV3Schema` of a CRD: custom
    /// resources are pruned, defaulted and validated by it
    /// (`kube_semantics::structural`). `None` for built-in kinds and for
    /// CRDs without a schema.
    pub schema: Option<Arc<Value>>,
    /// The version the objects are stored at when this resource is a
    /// converted view of them (`autoscaling/v1` HorizontalPodAutoscalers
    /// are stored at `v2`); `None` for the storage version.
    pub stored_as: Option<String>,
}

/// One `additionalPrinterColumns` entry of a CRD version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrinterColumn {
    /// The header.
    pub name: String,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    pub type_: String,
    /// The OpenAPI format, usually empty.
    pub format: String,
    /// The column description (the server's default names the path).
    pub description: String,
    /// 0 for the normal output, more for `-o wide` only.
    pub priority: i64,
    /// The JSONPath of the cell (`.spec.size`).
    pub json_path: String,
}

/// `ObjectMeta.creationTimestamp`'s description, which the server gives the
/// `Age` column it adds to a CRD without printer columns.
pub const CREATION_TIMESTAMP_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// The columns of a CRD version as the server serves them
/// (`serveDefaultColumnsIfEmpty`): the declared ones, or `Age` alone.
fn printer_columns(version: &Value) -> Vec<PrinterColumn> {
    let declared: Vec<PrinterColumn> = version
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .map(|cols| {
            cols.iter()
                .filter_map(|c| {
                    let json_path = c.get("jsonPath")?.as_str()?.to_string();
                    let text = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default();
                    Some(PrinterColumn {
                        name: c.get("name")?.as_str()?.to_string(),
                        type_: match text("type") {
                            "" => "string".to_string(),
                            t => t.to_string(),
                        },
                        format: text("format").to_string(),
                        description: match text("description") {
                            "" => format!(
                                "Custom resource definition column (in JSONPath format): {json_path}"
                            ),
                            d => d.to_string(),
                        },
                        priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                        json_path,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    if !declared.is_empty() {
        return declared;
    }
    vec![PrinterColumn {
        name: "Age".into(),
        type_: "date".into(),
        format: String::new(),
        description: CREATION_TIMESTAMP_DESCRIPTION.into(),
        priority: 0,
        json_path: ".metadata.creationTimestamp".into(),
    }]
}

impl Resource {
    /// The `autoscaling/v1` Scale a `/scale` subresource answers (not a
    /// resource of its own; used to print its Table).
    pub fn scale() -> Resource {
        Resource {
            group: "autoscaling".into(),
            version: "v1".into(),
            plural: "scale".into(),
            singular: "scale".into(),
            kind: "Scale".into(),
            list_kind: "ScaleList".into(),
            namespaced: true,
            short_names: Vec::new(),
            status_subresource: false,
            scale_subresource: false,
            returns_deleted: false,
            builtin: true,
            tracks_generation: false,
            name_rule: NameRule::Subdomain,
            special: Special::None,
            strategic_merge: true,
            printer_columns: Vec::new(),
            categories: Vec::new(),
            selectable_fields: Vec::new(),
            custom: false,
            schema: None,
            stored_as: None,
        }
    }

    /// Whether a DELETE on the collection is served: every registry but
    /// the namespaces' has a collection delete.
    pub fn deletes_collections(&self) -> bool {
        !(self.group.is_empty() && self.plural == "namespaces")
    }

    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The key used in stats and stores: `configmaps` or
    /// `deployments.apps`.
    pub fn qualified(&self) -> String {
        crate::status::qualified(&self.group, &self.plural)
    }
}

/// The built-in resources, in discovery order (one table: `crate::builtin`).
pub fn builtins() -> Vec<Resource> {
    crate::builtin::resources()
}

/// Errors in a CustomResourceDefinition that stop it from being served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CrdError {
    /// A required field is missing or has the wrong type.
    #[error("{0}: Required value")]
    Missing(&'static str),
    /// `metadata.name` must be `<plural>.<group>`.
    #[error("metadata.name: Invalid value: {0:?}: must be spec.names.plural+\".\"+spec.group")]
    Name(String),
    /// `spec.scope` must be Namespaced or Cluster.
    #[error("spec.scope: Unsupported value: {0:?}: supported values: \"Cluster\", \"Namespaced\"")]
    Scope(String),
    /// No version is served.
    #[error(
        "spec.versions: Invalid value: must have exactly one version marked as storage version"
    )]
    Versions,
}

impl CrdError {
    /// The field path for the `Status` cause.
    pub fn field(&self) -> &'static str {
        match self {
            CrdError::Missing(f) => f,
            CrdError::Name(_) => "metadata.name",
            CrdError::Scope(_) => "spec.scope",
            CrdError::Versions => "spec.versions",
        }
    }
}

/// Reads the resource a CRD defines (the storage version; a CRD serving
/// several versions is served at its storage version only).
pub fn resource_from_crd(crd: &Value) -> Result<Resource, CrdError> {
    let spec = crd.get("spec").ok_or(CrdError::Missing("spec"))?;
    let group = spec
        .get("group")
        .and_then(Value::as_str)
        .ok_or(CrdError::Missing("spec.group"))?;
    let names = spec.get("names").ok_or(CrdError::Missing("spec.names"))?;
    let plural = names
        .get("plural")
        .and_then(Value::as_str)
        .ok_or(CrdError::Missing("spec.names.plural"))?;
    let kind = names
        .get("kind")
        .and_then(Value::as_str)
        .ok_or(CrdError::Missing("spec.names.kind"))?;
    let singular = names
        .get("singular")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| kind.to_lowercase());
    let list_kind = names
        .get("listKind")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| format!("{kind}List"));
    let short_names = str_list(names.get("shortNames"));
    let categories = str_list(names.get("categories"));
    let name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if name != format!("{plural}.{group}") {
        return Err(CrdError::Name(name.to_string()));
    }
    let scope = spec
        .get("scope")
        .and_then(Value::as_str)
        .ok_or(CrdError::Missing("spec.scope"))?;
    let namespaced = match scope {
        "Namespaced" => true,
        "Cluster" => false,
        other => return Err(CrdError::Scope(other.to_string())),
    };
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .ok_or(CrdError::Missing("spec.versions"))?;
    let storage: Vec<&Value> = versions
        .iter()
        .filter(|v| v.get("storage").and_then(Value::as_bool).unwrap_or(false))
        .collect();
    let [version] = storage.as_slice() else {
        return Err(CrdError::Versions);
    };
    let version_name = version
        .get("name")
        .and_then(Value::as_str)
        .ok_or(CrdError::Missing("spec.versions[].name"))?;
    let status_subresource = version.pointer("/subresources/status").is_some();
    let printer_columns = printer_columns(version);
    let schema = version
        .pointer("/schema/openAPIV3Schema")
        .filter(|s| s.is_object())
        .map(|s| Arc::new(s.clone()));
    Ok(Resource {
        group: group.to_string(),
        version: version_name.to_string(),
        plural: plural.to_string(),
        singular,
        kind: kind.to_string(),
        list_kind,
        namespaced,
        short_names,
        status_subresource,
        // A CRD's scale subresource (with its own replica paths) is not
        // served; see docs/ARCHITECTURE.md.
        scale_subresource: false,
        returns_deleted: false,
        builtin: false,
        // Custom resources always track generation.
        tracks_generation: true,
        name_rule: NameRule::Subdomain,
        special: Special::None,
        strategic_merge: false,
        printer_columns,
        categories,
        selectable_fields: crd_selectable_fields(version),
        custom: true,
        schema,
        stored_as: None,
    })
}

/// `metadata.name`, `metadata.namespace` and the version's
/// `selectableFields` (JSON paths such as `.spec.color`, named without
/// the leading dot in selectors).
fn crd_selectable_fields(version: &Value) -> Vec<String> {
    let mut fields = vec![
        "metadata.name".to_string(),
        "metadata.namespace".to_string(),
    ];
    if let Some(list) = version.get("selectableFields").and_then(Value::as_array) {
        fields.extend(
            list.iter()
                .filter_map(|f| f.get("jsonPath")?.as_str())
                .map(|p| p.trim_start_matches('.').to_string()),
        );
    }
    fields
}

fn str_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// All resources currently served, indexed for routing.
#[derive(Debug, Default, Clone)]
pub struct Registry {
    /// (group, version, plural) -> resource.
    by_path: BTreeMap<(String, String, String), Arc<Resource>>,
    /// Insertion order, for discovery.
    order: Vec<Arc<Resource>>,
}

impl Registry {
    /// A registry with the built-in kinds.
    pub fn with_builtins() -> Self {
        let mut r = Registry::default();
        for res in builtins() {
            r.insert(res);
        }
        r
    }

    /// Adds or replaces a resource.
    pub fn insert(&mut self, res: Resource) -> Arc<Resource> {
        let key = (res.group.clone(), res.version.clone(), res.plural.clone());
        let res = Arc::new(res);
        self.order.retain(|r| {
            (r.group.as_str(), r.version.as_str(), r.plural.as_str())
                != (key.0.as_str(), key.1.as_str(), key.2.as_str())
        });
        self.order.push(res.clone());
        self.by_path.insert(key, res.clone());
        res
    }

    /// Removes a resource (a CRD was deleted).
    pub fn remove(&mut self, group: &str, version: &str, plural: &str) {
        self.by_path
            .remove(&(group.to_string(), version.to_string(), plural.to_string()));
        self.order
            .retain(|r| !(r.group == group && r.version == version && r.plural == plural));
    }

    /// Looks a resource up by its URL parts.
    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<Arc<Resource>> {
        self.by_path
            .get(&(group.to_string(), version.to_string(), plural.to_string()))
            .cloned()
    }

    /// Every resource, in discovery order.
    pub fn all(&self) -> impl Iterator<Item = &Arc<Resource>> {
        self.order.iter()
    }

    /// The served groups, each with its versions, in discovery order
    /// (core `""` first when present).
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for r in &self.order {
            match out.iter_mut().find(|(g, _)| *g == r.group) {
                Some((_, versions)) => {
                    if !versions.contains(&r.version) {
                        versions.push(r.version.clone());
                    }
                }
                None => out.push((r.group.clone(), vec![r.version.clone()])),
            }
        }
        out
    }

    /// Whether a group/version is served.
    pub fn serves(&self, group: &str, version: &str) -> bool {
        self.order
            .iter()
            .any(|r| r.group == group && r.version == version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(scope: &str) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": scope,
                "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
                "versions": [
                    {"name": "v1beta1", "served": true, "storage": false},
                    {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                     "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]}
                ]
            }
        })
    }

    #[test]
    fn crd_defines_a_resource() {
        let r = resource_from_crd(&crd("Namespaced")).unwrap();
        assert_eq!(r.plural, "widgets");
        assert_eq!(r.version, "v1");
        assert!(r.namespaced);
        assert!(r.status_subresource);
        assert_eq!(r.list_kind, "WidgetList");
        assert_eq!(
            r.printer_columns,
            vec![PrinterColumn {
                name: "Size".into(),
                type_: "integer".into(),
                format: String::new(),
                description: "Custom resource definition column (in JSONPath format): .spec.size"
                    .into(),
                priority: 0,
                json_path: ".spec.size".into(),
            }]
        );
        assert!(r.schema.is_none());
        // Without declared columns the server serves Age alone.
        let mut c = crd("Namespaced");
        c["spec"]["versions"][1]
            .as_object_mut()
            .unwrap()
            .remove("additionalPrinterColumns");
        c["spec"]["versions"][1]["schema"] = json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}});
        let r = resource_from_crd(&c).unwrap();
        let names: Vec<(&str, &str)> = r
            .printer_columns
            .iter()
            .map(|c| (c.name.as_str(), c.type_.as_str()))
            .collect();
        assert_eq!(names, [("Age", "date")]);
        assert_eq!(
            r.schema.as_deref(),
            Some(&json!({"type": "object", "properties": {"spec": {"type": "object"}}}))
        );
        assert!(!resource_from_crd(&crd("Cluster")).unwrap().namespaced);
    }

    #[test]
    fn malformed_crds_are_refused() {
        assert!(matches!(
            resource_from_crd(&crd("Galaxy")),
            Err(CrdError::Scope(_))
        ));
        let mut c = crd("Namespaced");
        c["metadata"]["name"] = json!("wrong.example.com");
        assert!(matches!(resource_from_crd(&c), Err(CrdError::Name(_))));
        let mut c = crd("Namespaced");
        c["spec"]["versions"][0]["storage"] = json!(true);
        assert_eq!(resource_from_crd(&c), Err(CrdError::Versions));
        assert_eq!(
            resource_from_crd(&json!({})),
            Err(CrdError::Missing("spec"))
        );
        assert_eq!(
            resource_from_crd(&json!({"spec": 3})),
            Err(CrdError::Missing("spec.group"))
        );
    }

    #[test]
    fn builtins_route() {
        let r = Registry::with_builtins();
        assert_eq!(r.get("", "v1", "configmaps").unwrap().kind, "ConfigMap");
        assert_eq!(
            r.get("discovery.k8s.io", "v1", "endpointslices")
                .unwrap()
                .kind,
            "EndpointSlice"
        );
        assert_eq!(r.get("", "v1", "pods").unwrap().kind, "Pod");
        assert_eq!(
            r.get("", "v1", "componentstatuses").unwrap().special,
            Special::ComponentStatus
        );
        let groups = r.groups();
        assert_eq!(groups[0].0, "");
        assert!(groups.iter().any(|(g, _)| g == "apps"));
    }
}
