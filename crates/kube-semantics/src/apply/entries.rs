//! Reading `managedFields` entries out of an object and writing them back:
//! identity, the update-manager cap, merging and sorting of entries.
//!
//! This module must NOT decide ownership or conflicts (see `walk` and the
//! apply and update entry points).

use super::*;

pub(super) fn kind_of(v: &Value) -> &str {
    v.get("kind").and_then(Value::as_str).unwrap_or_default()
}

pub(super) fn api_version_of(v: &Value) -> &str {
    v.get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

pub(super) fn raw_managed_fields(v: &Value) -> Option<&Value> {
    v.get("metadata").and_then(|m| m.get("managedFields"))
}

/// `v` without `metadata.managedFields`.
pub(super) fn body_of(v: &Value) -> Value {
    let mut body = v.clone();
    if let Some(Value::Object(meta)) = body.get_mut("metadata") {
        meta.shift_remove("managedFields");
    }
    body
}

/// The API server's `capManagers`: beyond [`MAX_UPDATE_MANAGERS`] update
/// entries, the oldest are merged (per apiVersion) into
/// [`ANCIENT_CHANGES_MANAGER`].
pub(super) fn cap_update_managers(entries: &mut Vec<ManagedFieldsEntry>) {
    let mut updaters: Vec<usize> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.operation == Operation::Update)
        .map(|(i, _)| i)
        .collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    updaters.sort_by(|&a, &b| {
        let (ea, eb) = (&entries[a], &entries[b]);
        ea.time
            .cmp(&eb.time)
            .then_with(|| ea.identity().cmp(&eb.identity()))
    });
    let mut count = updaters.len();
    let mut first_of_version: BTreeMap<String, usize> = BTreeMap::new();
    let mut gone: BTreeSet<usize> = BTreeSet::new();
    for &i in &updaters {
        if count <= MAX_UPDATE_MANAGERS {
            break;
        }
        let version = entries[i].api_version.clone();
        match first_of_version.get(&version).copied() {
            Some(bucket) => {
                let moved = std::mem::take(&mut entries[i].fields);
                let time = entries[i].time.clone();
                let b = &mut entries[bucket];
                b.manager = ANCIENT_CHANGES_MANAGER.to_string();
                b.subresource = None;
                b.fields.extend(moved);
                // The bucket takes the time of the newer update merged in.
                b.time = time;
                gone.insert(i);
                count -= 1;
            }
            None => {
                first_of_version.insert(version, i);
            }
        }
    }
    let mut idx = 0;
    entries.retain(|_| {
        let keep = !gone.contains(&idx);
        idx += 1;
        keep
    });
}

/// Merges entries that name the same manager (capping can create a second
/// [`ANCIENT_CHANGES_MANAGER`] entry for a version): fields united, the
/// newer time kept.
pub(super) fn merge_same_identity(entries: Vec<ManagedFieldsEntry>) -> Vec<ManagedFieldsEntry> {
    let mut out: Vec<ManagedFieldsEntry> = Vec::with_capacity(entries.len());
    for e in entries {
        match out.iter_mut().find(|o| o.identity() == e.identity()) {
            Some(o) => {
                o.fields.extend(e.fields);
                if e.time > o.time {
                    o.time = e.time;
                }
            }
            None => out.push(e),
        }
    }
    out
}

/// Sorts entries the way the API server stores them: Apply before Update,
/// then oldest first, then by manager, apiVersion and subresource.
pub(super) fn sort_entries(entries: &mut [ManagedFieldsEntry]) {
    entries.sort_by(|a, b| {
        a.operation
            .cmp(&b.operation)
            .then_with(|| a.time.cmp(&b.time))
            .then_with(|| a.manager.cmp(&b.manager))
            .then_with(|| a.api_version.cmp(&b.api_version))
            .then_with(|| a.subresource.cmp(&b.subresource))
    });
}

/// `body` with `metadata.managedFields` set from `entries` (or removed when
/// there are none).
pub(super) fn with_entries(mut body: Value, mut entries: Vec<ManagedFieldsEntry>) -> Value {
    entries.retain(|e| !e.fields.is_empty());
    cap_update_managers(&mut entries);
    let mut entries = merge_same_identity(entries);
    sort_entries(&mut entries);
    let Value::Object(obj) = &mut body else {
        return body;
    };
    if entries.is_empty() {
        if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
            meta.shift_remove("managedFields");
        }
        return body;
    }
    let encoded = Value::Array(entries.iter().map(ManagedFieldsEntry::to_json).collect());
    match obj.get_mut("metadata") {
        Some(Value::Object(meta)) => {
            meta.insert("managedFields".into(), encoded);
        }
        // A malformed metadata is left for the caller's validation to
        // report rather than overwritten.
        Some(other) if !other.is_null() => {}
        _ => {
            let mut meta = Map::new();
            meta.insert("managedFields".into(), encoded);
            obj.insert("metadata".into(), Value::Object(meta));
        }
    }
    body
}

/// Drops `null` members of objects (an applied `null` means "not set").
pub(super) fn strip_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), strip_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(strip_nulls).collect()),
        other => other.clone(),
    }
}
