//! Server-side apply and `metadata.managedFields` bookkeeping.
//!
//! ```text
//!             live object ──┐                         ┌─> new object + managedFields
//! apply:  applied config ───┼─> merge ─> prune ─> compare(live, new) ─> conflicts / ownership
//!                           │   (config   (fields this      (other managers' changed
//!                           │    wins)     manager dropped)   fields conflict unless force)
//! update:    old object ──┐ │
//!            new object ──┴─┴────────────> compare(old, new) ─> changed fields move to the updater
//! ```
//!
//! Semantics, following structured-merge-diff as the API server uses it:
//!
//! * A manager's set is the paths it owns, recorded per (manager,
//!   operation, subresource; plus apiVersion for updates) in
//!   `managedFields` entries, `FieldsV1`-encoded (see [`crate::fieldpath`]).
//!   Identity fields (`apiVersion`, `kind`, `metadata.name`, `namespace`,
//!   `uid`, `resourceVersion`, `generation`, `creationTimestamp`,
//!   `selfLink`, `managedFields`) are never owned.
//! * Apply: the config is merged into the live object (maps field by
//!   field, associative lists item by item, sets by value, atomic lists
//!   replaced). A changed field owned by another manager is a conflict
//!   unless `force`, which moves ownership. An unchanged field becomes
//!   shared. The applier then owns exactly its config's fields. A field the
//!   applier owned and no longer applies is removed unless another manager
//!   (or the new config) owns it or something beneath it; a list item kept
//!   that way keeps its key fields.
//! * Update (create, update, patch): changed and added fields move to the
//!   updater and leave every other manager; removed fields leave everyone.
//! * An empty map or list is owned as a leaf (`"f:emptyDir":{}`): it says
//!   the container exists. Another manager filling it is not a conflict.
//! * `null` in an applied config means "not set" and is dropped.
//! * Lists the [`ListSchema`] calls associative but whose items lack a key
//!   or repeat one are treated as atomic instead of failing.
//! * Status: pass [`ResetFields`] in [`ManagedFieldsOptions`] to keep a
//!   request away from fields another endpoint owns (`status` for a main
//!   resource with a status subresource, everything but `status` for the
//!   subresource): their incoming values are ignored and they are never
//!   owned through this request. [`apply`] and [`record_update`] reset
//!   nothing; the caller strips or copies as its kind requires.
//!
//! Deliberate differences: a list item the applier dropped is kept (with
//! its keys) when another manager owns a field inside it, where the API
//! server would delete the item with that field; and a field of another
//! manager removed because the applier replaced its parent (a map turned
//! into a scalar) is a conflict, not a silent takeover. Both keep the rule
//! "an apply without force never removes another manager's field".
//! Entry times are compared as strings, so `now` must always use the same
//! RFC 3339 form (UTC, `Z`, fixed precision), as the API server's do.
//!
//! Not reproduced: conversion between API versions (managers recorded at
//! another apiVersion are compared as if at this one), the
//! `kubectl.kubernetes.io/last-applied-configuration` annotation
//! interplay, and schema defaulting beyond list keys.
//!
//! This module must NOT touch `resourceVersion`, `uid`, `generation` or
//! timestamps other than the `time` of managedFields entries: the caller
//! owns those, and passes the time in (`now`, RFC 3339).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use serde_json::{Map, Value};

use crate::fieldpath::{self, FieldPath, FieldSet, PathElement};
use crate::gofmt;
use crate::schema::{ListSchema, ListType, is_scalar, item_key};

mod entries;
mod walk;

use entries::*;
use walk::*;

/// At most this many `Update` entries are kept; older ones are merged into
/// [`ANCIENT_CHANGES_MANAGER`]. The API server's `DefaultMaxUpdateManagers`:
/// it bounds the size of `managedFields` on objects many tools touch.
pub const MAX_UPDATE_MANAGERS: usize = 10;

/// The manager that absorbs the oldest `Update` entries beyond
/// [`MAX_UPDATE_MANAGERS`].
pub const ANCIENT_CHANGES_MANAGER: &str = "ancient-changes";

/// The manager that takes ownership of every existing field when an object
/// that never had `managedFields` is first applied to, so the first apply
/// cannot silently delete fields nobody was recorded as owning.
pub const BEFORE_FIRST_APPLY_MANAGER: &str = "before-first-apply";

/// The `operation` of a managedFields entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    /// Server-side apply.
    Apply,
    /// Create, update or patch.
    Update,
}

impl Operation {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Apply => "Apply",
            Self::Update => "Update",
        }
    }
}

/// One decoded `metadata.managedFields` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManagedFieldsEntry {
    /// The field manager's name.
    pub manager: String,
    /// How it wrote.
    pub operation: Operation,
    /// The API version it wrote with.
    pub api_version: String,
    /// When the entry last took fields (RFC 3339), if recorded.
    pub time: Option<String>,
    /// The paths it owns.
    pub fields: FieldSet,
    /// The subresource it wrote through (`status`, `scale`), if any.
    pub subresource: Option<String>,
}

/// What makes two entries the same manager: appliers are one manager
/// whatever version they applied with, updaters are per version.
type Identity = (String, Operation, String, String);

impl ManagedFieldsEntry {
    fn identity(&self) -> Identity {
        let version = match self.operation {
            Operation::Apply => String::new(),
            Operation::Update => self.api_version.clone(),
        };
        (
            self.manager.clone(),
            self.operation,
            version,
            self.subresource.clone().unwrap_or_default(),
        )
    }

    fn to_json(&self) -> Value {
        // Field order and omissions follow Go's encoding of
        // ManagedFieldsEntry (`omitempty` on every field).
        let mut m = Map::new();
        if !self.manager.is_empty() {
            m.insert("manager".into(), Value::String(self.manager.clone()));
        }
        m.insert(
            "operation".into(),
            Value::String(self.operation.as_str().into()),
        );
        if !self.api_version.is_empty() {
            m.insert("apiVersion".into(), Value::String(self.api_version.clone()));
        }
        if let Some(t) = &self.time {
            m.insert("time".into(), Value::String(t.clone()));
        }
        m.insert("fieldsType".into(), Value::String("FieldsV1".into()));
        m.insert("fieldsV1".into(), fieldpath::to_fields_v1(&self.fields));
        if let Some(s) = self.subresource.as_ref().filter(|s| !s.is_empty()) {
            m.insert("subresource".into(), Value::String(s.clone()));
        }
        Value::Object(m)
    }

    /// How the API server names this manager in conflict messages:
    /// `"kubectl"`, `"kubectl-edit" using v1`,
    /// `"ctrl" with subresource "status" using v1`.
    pub fn display_name(&self) -> String {
        describe_manager(
            &self.manager,
            self.operation,
            &self.api_version,
            self.subresource.as_deref(),
        )
    }
}

fn describe_manager(manager: &str, op: Operation, api_version: &str, sub: Option<&str>) -> String {
    let mut s = gofmt::quote(manager);
    if let Some(sub) = sub.filter(|s| !s.is_empty()) {
        s.push_str(&format!(" with subresource {}", gofmt::quote(sub)));
    }
    if op == Operation::Update {
        s.push_str(&format!(" using {api_version}"));
    }
    s
}

fn decode_entry(v: &Value) -> Option<ManagedFieldsEntry> {
    let m = v.as_object()?;
    let s = |k: &str| m.get(k).and_then(Value::as_str);
    let operation = match s("operation")? {
        "Apply" => Operation::Apply,
        "Update" => Operation::Update,
        _ => return None,
    };
    if s("fieldsType").is_some_and(|t| t != "FieldsV1") {
        return None;
    }
    let fields = match m.get("fieldsV1") {
        Some(f) => fieldpath::from_fields_v1(f).ok()?,
        None => FieldSet::new(),
    };
    Some(ManagedFieldsEntry {
        manager: s("manager").unwrap_or_default().to_string(),
        operation,
        api_version: s("apiVersion").unwrap_or_default().to_string(),
        time: s("time").map(str::to_string),
        fields,
        subresource: s("subresource")
            .filter(|x| !x.is_empty())
            .map(str::to_string),
    })
}

/// Decodes `metadata.managedFields` of an object. Malformed entries are
/// skipped (the API server also never fails a request over them); entries
/// of the same manager are merged.
pub fn managed_fields(object: &Value) -> Vec<ManagedFieldsEntry> {
    let raw = object
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .and_then(Value::as_array);
    decode_entries(raw.map_or(&[][..], Vec::as_slice))
}

fn decode_entries(raw: &[Value]) -> Vec<ManagedFieldsEntry> {
    let mut by_id: BTreeMap<Identity, ManagedFieldsEntry> = BTreeMap::new();
    for e in raw.iter().filter_map(decode_entry) {
        match by_id.get_mut(&e.identity()) {
            Some(prev) => {
                prev.fields.extend(e.fields);
                if e.time > prev.time {
                    prev.time = e.time;
                }
            }
            None => {
                by_id.insert(e.identity(), e);
            }
        }
    }
    by_id.into_values().collect()
}

/// One field another manager owns that an apply would change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldConflict {
    /// The other manager's name.
    pub manager: String,
    /// The field, in the API server's form (`.data.key`,
    /// `.spec.containers[name="web"].image`).
    pub field: String,
    /// The other manager's operation.
    pub operation: Operation,
    /// The other manager's apiVersion.
    pub api_version: String,
    /// The other manager's subresource, if any.
    pub subresource: Option<String>,
}

impl FieldConflict {
    /// The manager as the API server prints it (see
    /// [`ManagedFieldsEntry::display_name`]).
    pub fn manager_display(&self) -> String {
        describe_manager(
            &self.manager,
            self.operation,
            &self.api_version,
            self.subresource.as_deref(),
        )
    }
}

/// The message of the 409 Conflict Status the API server answers a
/// conflicting apply with, e.g.
/// `Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .data.key`.
pub fn conflict_message(conflicts: &[FieldConflict]) -> String {
    if let [one] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            one.manager_display(),
            one.field
        );
    }
    let mut by_manager: BTreeMap<Identity, (String, Vec<&str>)> = BTreeMap::new();
    for c in conflicts {
        let id = (
            c.manager.clone(),
            c.operation,
            c.api_version.clone(),
            c.subresource.clone().unwrap_or_default(),
        );
        by_manager
            .entry(id)
            .or_insert_with(|| (c.manager_display(), Vec::new()))
            .1
            .push(&c.field);
    }
    let mut lines = Vec::new();
    for (display, fields) in by_manager.values() {
        lines.push(format!("conflicts with {display}:"));
        lines.extend(fields.iter().map(|f| format!("- {f}")));
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

/// Why an apply was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// Fields owned by other managers would change (HTTP 409 Conflict). Not
    /// retryable as-is: apply with `force` to take them over, or leave them
    /// out of the configuration.
    #[error("{}", conflict_message(.0))]
    Conflict(Vec<FieldConflict>),
    /// The applied configuration is malformed (HTTP 400 BadRequest). Not
    /// retryable: fix the configuration.
    #[error("{0}")]
    Invalid(String),
}

/// Top-level fields a request may not change (the API server's
/// "reset fields" of a status-subresource strategy).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ResetFields {
    /// The request may change everything.
    #[default]
    None,
    /// These top-level fields are kept as they are (main resource of a kind
    /// with a status subresource: `["status"]`).
    Fields(Vec<String>),
    /// Every top-level field except these and the identity fields is kept
    /// as it is (the status subresource: `["status", "metadata"]`).
    AllExcept(Vec<String>),
}

impl ResetFields {
    fn resets(&self, top: &str) -> bool {
        match self {
            Self::None => false,
            Self::Fields(f) => f.iter().any(|x| x == top),
            Self::AllExcept(keep) => {
                !(keep.iter().any(|x| x == top)
                    || top == "apiVersion"
                    || top == "kind"
                    || top == "metadata")
            }
        }
    }
}

/// Options of [`apply_with`] and [`record_update_with`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ManagedFieldsOptions {
    /// The subresource the request came through (`status`), recorded in the
    /// entry.
    pub subresource: Option<String>,
    /// Fields this request may not change or own.
    pub reset: ResetFields,
    /// How lists merge ([`ListSchema::kubernetes`] by default).
    pub schema: ListSchema,
}

impl ManagedFieldsOptions {
    /// A main-resource request on a kind with a status subresource: `status`
    /// is neither changed nor owned.
    pub fn main_resource_with_status() -> Self {
        Self {
            reset: ResetFields::Fields(vec!["status".into()]),
            ..Self::default()
        }
    }

    /// A request through the `status` subresource: only `status` (and
    /// metadata) may change.
    pub fn status_subresource() -> Self {
        Self {
            subresource: Some("status".into()),
            reset: ResetFields::AllExcept(vec!["status".into()]),
            ..Self::default()
        }
    }
}

// ---------------------------------------------------------------------------
// Update

/// Records a create, update or patch by `manager` (operation `Update`) in
/// `managedFields`: fields that changed (all set fields on create) become
/// owned by `manager` and leave every other manager; removed fields leave
/// everyone. Returns `new` with `managedFields` updated.
///
/// `managedFields` sent in `new` that differ from `old`'s replace them (the
/// API server lets clients edit them); `[{}]` clears them.
pub fn record_update(
    old: Option<&Value>,
    new: &Value,
    manager: &str,
    now: &str,
    subresource: Option<&str>,
) -> Value {
    let options = ManagedFieldsOptions {
        subresource: subresource.map(str::to_string),
        ..ManagedFieldsOptions::default()
    };
    record_update_with(old, new, manager, now, &options)
}

/// [`record_update`] with explicit options (reset fields, list schema).
pub fn record_update_with(
    old: Option<&Value>,
    new: &Value,
    manager: &str,
    now: &str,
    options: &ManagedFieldsOptions,
) -> Value {
    if !new.is_object() {
        return new.clone();
    }
    let new_raw = raw_managed_fields(new);
    let old_raw = old.and_then(raw_managed_fields);
    let mut entries = match new_raw.and_then(Value::as_array) {
        Some(list) if list.len() == 1 && list[0].as_object().is_some_and(Map::is_empty) => {
            // `[{}]` is the documented way to clear managedFields.
            return body_of(new);
        }
        Some(list) if !list.is_empty() && new_raw != old_raw => {
            let decoded = decode_entries(list);
            if decoded.is_empty() {
                old.map(managed_fields).unwrap_or_default()
            } else {
                decoded
            }
        }
        _ => old.map(managed_fields).unwrap_or_default(),
    };

    let walker = Walker::new(options, kind_of(new));
    let old_body = old
        .map(body_of)
        .unwrap_or_else(|| Value::Object(Map::new()));
    let new_body = body_of(new);
    let diff = compare(&walker.leaves(&old_body), &walker.leaves(&new_body));
    let changed = diff.changed();
    let taken: FieldSet = diff.added.iter().chain(&diff.modified).cloned().collect();

    let me = ManagedFieldsEntry {
        manager: manager.to_string(),
        operation: Operation::Update,
        api_version: api_version_of(new).to_string(),
        time: None,
        fields: FieldSet::new(),
        subresource: options.subresource.clone().filter(|s| !s.is_empty()),
    };
    let my_id = me.identity();
    for e in &mut entries {
        if e.identity() != my_id {
            e.fields.retain(|p| !changed.contains(p));
        }
    }
    match entries.iter_mut().find(|e| e.identity() == my_id) {
        Some(mine) => {
            mine.fields.retain(|p| !diff.removed.contains(p));
            if !taken.is_empty() {
                mine.fields.extend(taken);
                mine.time = Some(now.to_string());
            }
        }
        None if !taken.is_empty() => {
            entries.push(ManagedFieldsEntry {
                time: Some(now.to_string()),
                fields: taken,
                ..me
            });
        }
        None => {}
    }
    with_entries(new_body, entries)
}

// ---------------------------------------------------------------------------
// Apply

/// Server-side apply of `applied` by `manager` onto `live` (`None` creates).
/// Returns the new full object with `metadata.managedFields` updated; the
/// caller sets `resourceVersion`, `uid`, timestamps. Applying what is
/// already there returns a value equal to `live`.
///
/// # Errors
/// [`ApplyError::Conflict`] when, without `force`, a field owned by another
/// manager would change; [`ApplyError::Invalid`] when `applied` is not an
/// object, carries `managedFields` or names another apiVersion than `live`.
pub fn apply(
    live: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
    now: &str,
) -> Result<Value, ApplyError> {
    apply_with(
        live,
        applied,
        manager,
        force,
        now,
        &ManagedFieldsOptions::default(),
    )
}

/// [`apply`] with explicit options (subresource, reset fields, list schema).
///
/// # Errors
/// As [`apply`].
pub fn apply_with(
    live: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
    now: &str,
    options: &ManagedFieldsOptions,
) -> Result<Value, ApplyError> {
    let Value::Object(_) = applied else {
        return Err(ApplyError::Invalid(
            "the apply configuration must be a JSON or YAML object".to_string(),
        ));
    };
    if applied
        .get("metadata")
        .is_some_and(|m| !m.is_null() && !m.is_object())
    {
        return Err(ApplyError::Invalid(
            "metadata must be an object".to_string(),
        ));
    }
    if raw_managed_fields(applied)
        .is_some_and(|m| !m.is_null() && m.as_array().is_none_or(|a| !a.is_empty()))
    {
        return Err(ApplyError::Invalid(
            "metadata.managedFields must be nil".to_string(),
        ));
    }
    if let Some(live) = live {
        let (have, want) = (api_version_of(live), api_version_of(applied));
        if !have.is_empty() && !want.is_empty() && have != want {
            return Err(ApplyError::Invalid(format!(
                "Incorrect version specified in apply patch. Specified patch version: {want}, expected: {have}"
            )));
        }
    }

    // The config without nulls and without the fields this request may
    // not touch (they keep their live values through the merge).
    let mut config = strip_nulls(applied);
    if let Value::Object(c) = &mut config {
        c.retain(|k, _| !options.reset.resets(k));
        if let Some(Value::Object(meta)) = c.get_mut("metadata") {
            meta.shift_remove("managedFields");
        }
    }
    let kind = live
        .map(kind_of)
        .filter(|k| !k.is_empty())
        .unwrap_or_else(|| kind_of(&config));
    let walker = Walker::new(options, kind);
    let config_set: FieldSet = walker.leaves(&config).into_keys().collect();

    let live_body = live
        .map(body_of)
        .unwrap_or_else(|| Value::Object(Map::new()));
    let live_leaves = walker.leaves(&live_body);
    let mut entries = live.map(managed_fields).unwrap_or_default();
    if let Some(l) = live
        && entries.is_empty()
        && !live_leaves.is_empty()
    {
        entries.push(ManagedFieldsEntry {
            manager: BEFORE_FIRST_APPLY_MANAGER.to_string(),
            operation: Operation::Update,
            api_version: api_version_of(l).to_string(),
            time: Some(now.to_string()),
            fields: live_leaves.keys().cloned().collect(),
            subresource: None,
        });
    }

    let me = ManagedFieldsEntry {
        manager: manager.to_string(),
        operation: Operation::Apply,
        api_version: api_version_of(applied).to_string(),
        time: None,
        fields: config_set.clone(),
        subresource: options.subresource.clone().filter(|s| !s.is_empty()),
    };
    let my_id = me.identity();
    let previous = entries
        .iter()
        .position(|e| e.identity() == my_id)
        .map(|i| entries.remove(i));

    let mut result = walker.merge(&live_body, &config, &mut Vec::new());

    // Prune what this manager applied before and dropped now, unless someone
    // else (or the new config) owns it or something beneath it.
    if let Some(prev) = &previous {
        let mut protected: FieldSet = config_set.clone();
        for e in &entries {
            protected.extend(e.fields.iter().cloned());
        }
        let mut to_remove: FieldSet = prev
            .fields
            .iter()
            .filter(|p| {
                !protected.contains(*p) && !any_under(&protected, p) && !walker.is_excluded(p)
            })
            .cloned()
            .collect();
        let retained_key_fields: Vec<FieldPath> = to_remove
            .iter()
            .filter(|p| {
                is_key_field(p)
                    && p.split_last()
                        .is_some_and(|(_, item)| !to_remove.contains(item))
            })
            .cloned()
            .collect();
        for p in retained_key_fields {
            to_remove.remove(&p);
        }
        if !to_remove.is_empty()
            && let Value::Object(m) = &mut result
        {
            walker.remove_in_map(m, &to_remove, &protected, &mut Vec::new(), &mut Vec::new());
        }
    }

    let result_leaves = walker.leaves(&result);
    let diff = compare(&live_leaves, &result_leaves);
    let changed = conflicting_changes(&diff, &live_leaves, &result_leaves);
    let mut conflicts = Vec::new();
    for e in &mut entries {
        let hit: Vec<FieldPath> = e
            .fields
            .iter()
            .filter(|p| changed.contains(*p))
            .cloned()
            .collect();
        if hit.is_empty() {
            continue;
        }
        if force {
            e.fields.retain(|p| !changed.contains(p));
        } else {
            conflicts.extend(hit.iter().map(|p| FieldConflict {
                manager: e.manager.clone(),
                field: fieldpath::path_to_string(p),
                operation: e.operation,
                api_version: e.api_version.clone(),
                subresource: e.subresource.clone(),
            }));
        }
    }
    if !conflicts.is_empty() {
        return Err(ApplyError::Conflict(conflicts));
    }

    let object_changed = result != live_body;
    let time = match &previous {
        Some(prev) if !object_changed => prev.time.clone(),
        _ => Some(now.to_string()),
    };
    entries.push(ManagedFieldsEntry { time, ..me });
    Ok(with_entries(result, entries))
}

#[cfg(test)]
mod tests;
