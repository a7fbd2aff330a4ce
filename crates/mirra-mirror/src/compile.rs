//! Validation: a SyncConfig becomes a [`CompiledConfig`], either with a
//! [`CompiledSpec`] the planner can use or with the full list of problems.
//!
//! Rules (each problem is reported with its field path, all at once):
//!
//! - a namespace selector is required, with `labelSelector` or `matchNames`
//!   (`ignoreNames` alone is not enough); every pattern must compile and the
//!   label selector must be valid;
//! - at least one of `syncItems` / `deleteItems` / `copyItems`;
//! - every syncItem is an object with `apiVersion`, `kind` and
//!   `metadata.name`; `apiVersion` and `kind` may not use `${PROJECT_NAME}`
//!   (the object's type must not depend on the namespace); the name, with a
//!   sample namespace substituted, must be a valid name for its kind;
//!   `metadata.labels` / `metadata.annotations`, when present, are maps of
//!   strings;
//! - every deleteItem has `apiVersion`, `kind` and `name`, with the same rules;
//! - every copyItem names its source with `apiVersion`, `kind`, `namespace`
//!   and `name` (none templated: the source is one object) and may give a
//!   `targetName` (templated like a syncItem's name); its label and
//!   annotation keys are non-empty;
//! - the same object (group, kind, name as written) may not appear twice in
//!   syncItems and copyItems, nor in both those and deleteItems: such a spec
//!   asks for two contradictory things, which espejo executed as a fight.
//!
//! `metadata.namespace` in a syncItem is IGNORED, not rejected: every copy is
//! written to the target namespace, as espejo did, so SyncConfigs exported
//! with a namespace keep working.
//!
//! What this module must NOT do: look at namespaces or existing objects; it
//! judges the SyncConfig alone.

use serde_json::{Map, Value};

use k8s_openapi::jiff::Timestamp;

use crate::error::ValidationError;
use crate::marks::{PRUNE_ANNOTATION, prune_opted_out};
use crate::names::{NameRule, check_name, strict_name_rule};
use crate::plan::ItemRef;
use crate::refs::{ConfigRef, ObjectRef, group_of};
use crate::resource::{CopyItem, SyncConfig, SyncConfigSpec};
use crate::selector::{CompiledSelector, NamespaceView};
use crate::template::{PROJECT_NAME, template_str};

/// The namespace name substituted for `${PROJECT_NAME}` when checking names
/// statically. A single letter is a valid DNS-1035 label, so it never causes
/// an error by itself; real namespaces are checked again when planning.
const SAMPLE_NAMESPACE: &str = "a";

/// Metadata fields the API server owns; copying them from a syncItem (for
/// example one exported with `kubectl get -o yaml`) would make every apply
/// fail or every comparison differ, so they are dropped.
const SERVER_METADATA: &[&str] = &[
    "namespace",
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "selfLink",
    "managedFields",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

/// One syncItem, validated, before templating.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncTemplate {
    /// Position in `spec.syncItems`.
    pub index: usize,
    /// apiVersion (never templated).
    pub api_version: String,
    /// API group derived from `api_version`.
    pub group: String,
    /// Kind (never templated).
    pub kind: String,
    /// `metadata.name` as written, possibly containing `${PROJECT_NAME}`.
    pub name: String,
    /// The item without server-owned metadata and without `status`.
    pub body: Value,
    /// For a copyItem's copy, the object it is made from.
    pub source: Option<ObjectRef>,
}

impl SyncTemplate {
    /// Which entry of the spec this is.
    pub fn item_ref(&self) -> ItemRef {
        match self.source {
            Some(_) => ItemRef::Copy(self.index),
            None => ItemRef::Sync(self.index),
        }
    }
}

/// One copyItem, validated, and what its source resolved to.
#[derive(Debug, Clone, PartialEq)]
pub struct CopyTemplate {
    /// Position in `spec.copyItems`.
    pub index: usize,
    /// apiVersion of the source and of its copies.
    pub api_version: String,
    /// API group derived from `api_version`.
    pub group: String,
    /// Kind of the source and of its copies.
    pub kind: String,
    /// The source object.
    pub source: ObjectRef,
    /// Name of the copies as written, possibly containing
    /// `${PROJECT_NAME}` (the source's name by default).
    pub target_name: String,
    /// Label keys copied from the source.
    pub labels: Vec<String>,
    /// Annotation keys copied from the source.
    pub annotations: Vec<String>,
    /// What the source resolved to.
    pub resolved: CopySource,
}

/// A copyItem's source as the planner sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum CopySource {
    /// Not looked up: offline, or before the controller has read it. Its
    /// copies are kept and nothing is written.
    Unresolved,
    /// The copy every selected namespace gets, made from the source.
    Copy(Box<SyncTemplate>),
    /// The source cannot be copied now (the reason): missing, unreadable,
    /// or without content to copy. Its copies are kept as they are.
    Held(String),
}

/// What the caller knows of a source object.
#[derive(Debug, Clone, Copy)]
pub enum SourceState<'a> {
    /// The object as read.
    Found(&'a Value),
    /// Read: there is no such object.
    Missing,
    /// Not read yet.
    Unknown,
    /// It cannot be read (why).
    Unreadable(&'a str),
}

/// One deleteItem, validated, before templating.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteTemplate {
    /// Position in `spec.deleteItems`.
    pub index: usize,
    /// apiVersion.
    pub api_version: String,
    /// API group derived from `api_version`.
    pub group: String,
    /// Kind.
    pub kind: String,
    /// Name as written, possibly containing `${PROJECT_NAME}`.
    pub name: String,
}

/// A valid spec, ready for planning.
#[derive(Debug, Clone)]
pub struct CompiledSpec {
    /// The namespace selector.
    pub selector: CompiledSelector,
    /// The syncItems, in spec order.
    pub sync_items: Vec<SyncTemplate>,
    /// The deleteItems, in spec order.
    pub delete_items: Vec<DeleteTemplate>,
    /// The copyItems, in spec order.
    pub copy_items: Vec<CopyTemplate>,
    /// `serviceAccountName`, when given.
    pub service_account: Option<String>,
}

impl CompiledSpec {
    /// The copies this spec wants made: every syncItem, then every copyItem
    /// whose source resolved to a copy.
    pub fn templates(&self) -> impl Iterator<Item = &SyncTemplate> {
        self.sync_items
            .iter()
            .chain(self.copy_items.iter().filter_map(|c| match &c.resolved {
                CopySource::Copy(t) => Some(&**t),
                _ => None,
            }))
    }
}

/// Everything the planner needs to know about one SyncConfig.
#[derive(Debug, Clone)]
pub struct CompiledConfig {
    /// `namespace/name` of the SyncConfig.
    pub key: ConfigRef,
    /// `metadata.uid` (empty when unknown, e.g. offline).
    pub uid: String,
    /// `metadata.creationTimestamp`; the oldest SyncConfig wins a conflict.
    /// `None` (offline manifests) sorts before every timestamp.
    pub created: Option<Timestamp>,
    /// `metadata.generation`, reported back as `status.observedGeneration`.
    pub generation: Option<i64>,
    /// Whether copies that are no longer wanted are deleted; `false` when the
    /// SyncConfig carries [`PRUNE_ANNOTATION`]`: "false"`.
    pub prune: bool,
    /// `spec.forceRecreate`: on a 422 the controller may delete and recreate.
    pub force_recreate: bool,
    /// The compiled spec, or every problem found in it.
    pub spec: Result<CompiledSpec, Vec<ValidationError>>,
    /// `spec.serviceAccountName`: the ServiceAccount of the SyncConfig's
    /// namespace whose rights every write for it uses.
    pub service_account: Option<String>,
    /// The valid spec, set aside while its ServiceAccount is known not to
    /// exist (`spec` then says so); restored when it does.
    held_spec: Option<CompiledSpec>,
    /// What planning depends on, for [`CompiledConfig::same_plan_input`].
    plan_input: Value,
}

impl CompiledConfig {
    /// Compiles a typed SyncConfig.
    pub fn compile(config: &SyncConfig) -> CompiledConfig {
        let meta = &config.metadata;
        let prune = !prune_opted_out(
            meta.annotations
                .as_ref()
                .and_then(|a| a.get(PRUNE_ANNOTATION))
                .map(String::as_str),
        );
        let key = ConfigRef::new(
            meta.namespace.clone().unwrap_or_default(),
            meta.name.clone().unwrap_or_default(),
        );
        let spec_value = serde_json::to_value(&config.spec).unwrap_or(Value::Null);
        Self::assemble(
            key,
            meta.uid.clone().unwrap_or_default(),
            meta.creation_timestamp.as_ref().map(|t| t.0),
            meta.generation,
            prune,
            with_metadata_errors(compile_spec(&config.spec), meta.name.as_deref()),
            config.spec.force_recreate,
            spec_value,
        )
    }

    /// Compiles a SyncConfig given as JSON, accepting anything: a spec of the
    /// wrong shape (say, a string where a list belongs) yields an invalid
    /// config whose errors name the field, never a panic or a lost object.
    pub fn from_json(object: &Value) -> CompiledConfig {
        let spec_value = object.get("spec").cloned().unwrap_or(Value::Null);
        Self::from_parts(object.get("metadata"), Ok(spec_value))
    }

    /// The SyncConfig whose body could not be decoded (`reason` says why):
    /// an invalid config with its metadata, so that it is reported and its
    /// copies are kept, as for any invalid spec.
    pub fn undecodable(metadata: &Value, reason: &str) -> CompiledConfig {
        Self::from_parts(Some(metadata), Err(reason.to_string()))
    }

    fn from_parts(meta: Option<&Value>, spec_value: Result<Value, String>) -> CompiledConfig {
        let meta_str = |field: &str| {
            meta.and_then(|m| m.get(field))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let name = meta_str("name");
        let key = ConfigRef::new(
            meta_str("namespace").unwrap_or_default(),
            name.clone().unwrap_or_default(),
        );
        let prune = !prune_opted_out(
            meta.and_then(|m| m.get("annotations"))
                .and_then(|a| a.get(PRUNE_ANNOTATION))
                .and_then(Value::as_str),
        );
        let created = meta_str("creationTimestamp").and_then(|t| t.parse::<Timestamp>().ok());
        let generation = meta
            .and_then(|m| m.get("generation"))
            .and_then(Value::as_i64);
        let (spec_value, parsed) = match spec_value {
            // Two undecodable versions plan alike (nothing); the reason is
            // what tells them apart.
            Err(reason) => (
                Value::String(reason.clone()),
                Err(vec![ValidationError::Malformed {
                    path: "spec".into(),
                    message: reason,
                }]),
            ),
            Ok(v) => {
                let parsed = parse_spec(&v);
                (v, parsed)
            }
        };
        let force_recreate = parsed.as_ref().is_ok_and(|s| s.force_recreate);
        // The typed form, when there is one, so that spellings of the same
        // spec (an explicit `forceRecreate: false`) compare equal.
        let spec_value = match &parsed {
            Ok(s) => serde_json::to_value(s).unwrap_or(spec_value),
            Err(_) => spec_value,
        };
        let spec = with_metadata_errors(parsed.and_then(|s| compile_spec(&s)), name.as_deref());
        Self::assemble(
            key,
            meta_str("uid").unwrap_or_default(),
            created,
            generation,
            prune,
            spec,
            force_recreate,
            spec_value,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(
        key: ConfigRef,
        uid: String,
        created: Option<Timestamp>,
        generation: Option<i64>,
        prune: bool,
        spec: Result<CompiledSpec, Vec<ValidationError>>,
        force_recreate: bool,
        spec_value: Value,
    ) -> CompiledConfig {
        let plan_input = serde_json::json!({ "uid": uid, "prune": prune, "spec": spec_value });
        let service_account = spec.as_ref().ok().and_then(|s| s.service_account.clone());
        CompiledConfig {
            key,
            uid,
            created,
            generation,
            prune,
            force_recreate,
            spec,
            service_account,
            held_spec: None,
            plan_input,
        }
    }

    /// The ServiceAccount whose rights this SyncConfig uses, as an object
    /// (to watch whether it exists).
    pub fn identity(&self) -> Option<ObjectRef> {
        self.service_account.as_ref().map(|name| ObjectRef {
            api_version: "v1".into(),
            kind: "ServiceAccount".into(),
            namespace: self.key.namespace.clone(),
            name: name.into(),
        })
    }

    /// The username a write for this SyncConfig is made as, when it names
    /// a ServiceAccount (`system:serviceaccount:<namespace>:<name>`).
    pub fn impersonated_user(&self) -> Option<String> {
        self.service_account
            .as_ref()
            .map(|sa| format!("system:serviceaccount:{}:{sa}", self.key.namespace))
    }

    /// Makes a SyncConfig without `spec.serviceAccountName` invalid, saying
    /// why (`reason`): its namespace is open to tenants, whose SyncConfigs
    /// may write only with an account of their own.
    pub fn require_service_account(&mut self, reason: &str) {
        if self.service_account.is_some() {
            return;
        }
        let problem = ValidationError::Missing {
            path: "spec.serviceAccountName".into(),
            message: format!("is required: {reason}"),
        };
        match &mut self.spec {
            Ok(_) => self.spec = Err(vec![problem]),
            Err(errors) => errors.insert(0, problem),
        }
    }

    /// Resolves every copyItem against what `lookup` says of its source,
    /// and makes the sources part of the plan input: a change of a source
    /// is a change of this SyncConfig to the planner.
    pub fn resolve_sources<'s>(&mut self, lookup: &dyn Fn(&ObjectRef) -> SourceState<'s>) {
        if let Some(spec) = self.held_spec.take() {
            self.spec = Ok(spec);
        }
        if let Some(identity) = self.identity()
            && self.spec.is_ok()
        {
            // Only a ServiceAccount known to be missing holds the spec back:
            // one not read yet is assumed to exist (the server refuses
            // whatever it may not do anyway).
            let missing = matches!(lookup(&identity), SourceState::Missing);
            if let Value::Object(input) = &mut self.plan_input {
                input.insert("identityMissing".into(), Value::Bool(missing));
            }
            if missing && let Ok(spec) = std::mem::replace(&mut self.spec, Err(Vec::new())) {
                self.held_spec = Some(spec);
                self.spec = Err(vec![ValidationError::Missing {
                    path: "spec.serviceAccountName".into(),
                    message: format!(
                        "ServiceAccount {}/{} does not exist: every write for this SyncConfig \
                         is made as that account, so nothing is written until it exists (its \
                         copies are kept)",
                        identity.namespace, identity.name
                    ),
                }]);
                return;
            }
        }
        let Ok(spec) = &mut self.spec else { return };
        if spec.copy_items.is_empty() {
            return;
        }
        let mut seen = Vec::with_capacity(spec.copy_items.len());
        for item in &mut spec.copy_items {
            item.resolved = resolve_copy(item, lookup(&item.source));
            seen.push(match &item.resolved {
                CopySource::Copy(t) => t.body.clone(),
                CopySource::Held(reason) => Value::String(reason.clone()),
                CopySource::Unresolved => Value::Null,
            });
        }
        if let Value::Object(input) = &mut self.plan_input {
            input.insert("sources".into(), Value::Array(seen));
        }
    }

    /// The sources this SyncConfig's copyItems name (none when invalid).
    pub fn sources(&self) -> impl Iterator<Item = &ObjectRef> {
        // A spec held back for its missing ServiceAccount keeps its
        // sources watched: they are needed the moment it exists.
        self.spec
            .as_ref()
            .ok()
            .or(self.held_spec.as_ref())
            .into_iter()
            .flat_map(|s| s.copy_items.iter().map(|c| &c.source))
    }

    /// Whether the spec is valid.
    pub fn is_valid(&self) -> bool {
        self.spec.is_ok()
    }

    /// The validation problems (empty when valid).
    pub fn errors(&self) -> &[ValidationError] {
        match &self.spec {
            Ok(_) => &[],
            Err(e) => e,
        }
    }

    /// Whether this config is valid and selects the namespace (which must be
    /// Active).
    pub fn selects(&self, ns: &NamespaceView<'_>) -> bool {
        self.spec.as_ref().is_ok_and(|s| s.selector.selects(ns))
    }

    /// Whether planning would see no difference between `self` and `other`
    /// (same uid, prune choice and spec), so a change between them (labels,
    /// status, other annotations) touches no namespace.
    pub fn same_plan_input(&self, other: &CompiledConfig) -> bool {
        self.key == other.key
            && self.created == other.created
            && self.plan_input == other.plan_input
    }

    /// The order in which conflicts are decided: oldest first, then by
    /// `namespace/name`. Depends only on the SyncConfigs, never on which one
    /// wrote the object last, so the winner never flips back and forth.
    pub fn precedence(&self) -> (Option<Timestamp>, &ConfigRef) {
        (self.created, &self.key)
    }
}

/// The typed spec, or the problem naming the field that does not fit.
fn parse_spec(spec_value: &Value) -> Result<SyncConfigSpec, Vec<ValidationError>> {
    match spec_value {
        Value::Null => Err(vec![ValidationError::Missing {
            path: "spec".into(),
            message: "a spec is required".into(),
        }]),
        v => serde_path_to_error::deserialize(v).map_err(|e| {
            let inner = e.path().to_string();
            let path = if inner == "." || inner.is_empty() {
                "spec".to_string()
            } else {
                format!("spec.{inner}")
            };
            vec![ValidationError::Malformed {
                path,
                message: e.inner().to_string(),
            }]
        }),
    }
}

/// Adds the metadata problems (a SyncConfig without a name cannot own
/// anything) in front of the spec's.
fn with_metadata_errors(
    spec: Result<CompiledSpec, Vec<ValidationError>>,
    name: Option<&str>,
) -> Result<CompiledSpec, Vec<ValidationError>> {
    if !name.is_none_or(str::is_empty) {
        return spec;
    }
    let mut errors = vec![ValidationError::Missing {
        path: "metadata.name".into(),
        message: "a name is required".into(),
    }];
    if let Err(e) = spec {
        errors.extend(e);
    }
    Err(errors)
}

/// Validates a spec, collecting every problem.
pub fn compile_spec(spec: &SyncConfigSpec) -> Result<CompiledSpec, Vec<ValidationError>> {
    let mut errors = Vec::new();
    let selector = match CompiledSelector::compile(spec.namespace_selector.as_ref()) {
        Ok(s) => Some(s),
        Err(e) => {
            errors.extend(e);
            None
        }
    };
    if spec.sync_items.is_empty() && spec.delete_items.is_empty() && spec.copy_items.is_empty() {
        errors.push(ValidationError::Missing {
            path: "spec".into(),
            message: "one of syncItems, deleteItems or copyItems is required".into(),
        });
    }
    // (group, kind, name as written) -> path of its first appearance.
    let mut seen: Vec<((String, String, String), String)> = Vec::new();
    let mut sync_items = Vec::new();
    for (index, item) in spec.sync_items.iter().enumerate() {
        let path = format!("spec.syncItems[{index}]");
        match compile_sync_item(index, item, &path) {
            Ok(t) => {
                let id = (t.group.clone(), t.kind.clone(), t.name.clone());
                if let Some((_, first)) = seen.iter().find(|(k, _)| *k == id) {
                    errors.push(ValidationError::Contradiction {
                        path,
                        message: format!("names the same object as {first}"),
                    });
                } else {
                    seen.push((id, path));
                }
                sync_items.push(t);
            }
            Err(e) => errors.extend(e),
        }
    }
    if let Some(sa) = &spec.service_account_name {
        let path = "spec.serviceAccountName".to_string();
        if sa.contains(':') || sa.contains('/') {
            errors.push(ValidationError::Malformed {
                path,
                message: format!(
                    "{sa:?} must be the name of a ServiceAccount of the SyncConfig's own \
                     namespace (a name, not a namespace and a name or a username)"
                ),
            });
        } else if let Err(message) = check_name(sa, NameRule::Dns1123Subdomain) {
            errors.push(ValidationError::Name {
                path,
                name: sa.clone(),
                message,
            });
        }
    }
    let mut copy_items = Vec::new();
    for (index, item) in spec.copy_items.iter().enumerate() {
        let path = format!("spec.copyItems[{index}]");
        match compile_copy_item(index, item, &path) {
            Ok(t) => {
                let id = (t.group.clone(), t.kind.clone(), t.target_name.clone());
                if let Some((_, first)) = seen.iter().find(|(k, _)| *k == id) {
                    errors.push(ValidationError::Contradiction {
                        path: format!("{path}.targetName"),
                        message: format!("names the same copy as {first}"),
                    });
                } else {
                    seen.push((id, path));
                }
                copy_items.push(t);
            }
            Err(e) => errors.extend(e),
        }
    }
    let mut delete_items = Vec::new();
    for (index, item) in spec.delete_items.iter().enumerate() {
        let path = format!("spec.deleteItems[{index}]");
        let mut item_errors = Vec::new();
        let api_version = required_type_field(
            &item.api_version,
            &format!("{path}.apiVersion"),
            &mut item_errors,
        );
        let kind = required_type_field(&item.kind, &format!("{path}.kind"), &mut item_errors);
        if item.name.is_empty() {
            item_errors.push(ValidationError::Missing {
                path: format!("{path}.name"),
                message: "a name is required".into(),
            });
        } else if let (Some(av), Some(k)) = (&api_version, &kind) {
            check_static_name(
                &item.name,
                group_of(av),
                k,
                &format!("{path}.name"),
                &mut item_errors,
            );
        }
        if let (true, Some(api_version), Some(kind)) = (item_errors.is_empty(), api_version, kind) {
            let group = group_of(&api_version).to_string();
            let id = (group.clone(), kind.clone(), item.name.clone());
            if let Some((_, first)) = seen.iter().find(|(k, _)| *k == id) {
                errors.push(ValidationError::Contradiction {
                    path: path.clone(),
                    message: format!("deletes the object that {first} syncs"),
                });
            }
            delete_items.push(DeleteTemplate {
                index,
                api_version,
                group,
                kind,
                name: item.name.clone(),
            });
        }
        errors.extend(item_errors);
    }
    match (selector, errors.is_empty()) {
        (Some(selector), true) => Ok(CompiledSpec {
            selector,
            sync_items,
            delete_items,
            copy_items,
            service_account: spec.service_account_name.clone(),
        }),
        _ => Err(errors),
    }
}

mod copy;
mod items;

use copy::{compile_copy_item, resolve_copy};
use items::{check_static_name, compile_sync_item, required_type_field};

#[cfg(test)]
mod tests;
