//! The three PATCH flavours of the API server: JSON merge patch (RFC 7386),
//! JSON patch (RFC 6902) and strategic merge patch.
//!
//! ```text
//! application/merge-patch+json           -> merge_patch
//! application/json-patch+json            -> json_patch
//! application/strategic-merge-patch+json -> strategic_merge_patch
//! ```
//!
//! JSON patch follows the library the API server uses (evanphx/json-patch
//! v4), including its quirks: negative array indices count from the end,
//! `replace` of a missing object key adds it, a path's first segment must be
//! empty (`/a`), and the error texts are that library's. The API server does
//! not show those texts to clients (see [`PatchError::status_message`]).
//!
//! Strategic merge patch supports: maps merged key by key with `null`
//! deleting; lists merged by the merge keys of [`ListSchema`] (the first key
//! of each associative list, e.g. containers by `name`, Service ports by
//! `port`, container ports by `containerPort`, conditions by `type`); sets
//! (`metadata.finalizers`) merged as a union; every other list replaced; the
//! directives `$patch: replace|delete|merge` (on maps and as list items),
//! `$retainKeys`, `$deleteFromPrimitiveList/<field>` and
//! `$setElementOrder/<field>`. Not supported: `patchStrategy:
//! retainKeys` unions driven by the schema (only the explicit directive) and
//! per-field `patchStrategy: replace` overrides beyond the list table.
//!
//! This module must NOT know about resource versions, managed fields or
//! validation: the caller checks the patched object like any update.

use serde_json::{Map, Value};

use crate::gofmt::json_type;
use crate::schema::{ListSchema, ListType, is_scalar};

/// The most operations one JSON patch may carry: the API server's
/// `maxJSONPatchOperations`, which bounds the CPU one request can burn.
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The message the API server puts in its 422 Status when a JSON patch does
/// not apply (a failed `test`, a missing path): it hides the library's text.
pub const JSON_PATCH_NOT_APPLIED_MESSAGE: &str =
    "the server rejected our request due to an error in our request";

/// A patch the API server would refuse. None is retryable as-is; the user
/// must fix the patch (or, for a failed JSON patch `test`, re-read the object
/// and build a new patch).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The patch document is malformed (HTTP 400 BadRequest).
    #[error("{0}")]
    BadRequest(String),
    /// The patch is well-formed but does not apply to this object (HTTP 422
    /// Invalid). The text is the detailed reason; see
    /// [`PatchError::status_message`] for what the server says.
    #[error("{0}")]
    NotApplicable(String),
    /// More than [`MAX_JSON_PATCH_OPERATIONS`] operations (HTTP 413).
    #[error("{0}")]
    TooLarge(String),
}

impl PatchError {
    /// The HTTP status the API server answers with.
    pub fn status_code(&self) -> u16 {
        match self {
            Self::BadRequest(_) => 400,
            Self::NotApplicable(_) => 422,
            Self::TooLarge(_) => 413,
        }
    }

    /// The `message` of the Status the API server answers with: the detailed
    /// text, except for a JSON patch that does not apply, where the server
    /// says only [`JSON_PATCH_NOT_APPLIED_MESSAGE`].
    pub fn status_message(&self) -> String {
        match self {
            Self::NotApplicable(_) => JSON_PATCH_NOT_APPLIED_MESSAGE.to_string(),
            Self::BadRequest(m) | Self::TooLarge(m) => m.clone(),
        }
    }
}

/// Applies an RFC 7386 JSON merge patch: objects merge key by key, `null`
/// deletes, anything else (lists included) replaces.
pub fn merge_patch(target: &Value, patch: &Value) -> Value {
    let Value::Object(p) = patch else {
        return patch.clone();
    };
    let mut out = match target {
        Value::Object(t) => t.clone(),
        _ => Map::new(),
    };
    for (k, pv) in p {
        if pv.is_null() {
            out.shift_remove(k);
        } else {
            let merged = merge_patch(out.get(k).unwrap_or(&Value::Null), pv);
            out.insert(k.clone(), merged);
        }
    }
    Value::Object(out)
}

// ---------------------------------------------------------------------------
// JSON patch

/// evanphx's `decodePatchKey`: JSON pointer unescaping.
fn decode_key(k: &str) -> String {
    k.replace("~1", "/").replace("~0", "~")
}

/// Go's `strconv.Atoi`, with its error text.
fn atoi(key: &str) -> Result<i64, String> {
    key.parse::<i64>().map_err(|e| {
        let why = match e.kind() {
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                "value out of range"
            }
            _ => "invalid syntax",
        };
        format!("strconv.Atoi: parsing {}: {why}", crate::gofmt::quote(key))
    })
}

fn invalid_index(idx: i64) -> String {
    format!("Unable to access invalid index: {idx}: invalid index referenced")
}

/// Resolves an array index the way evanphx does for get/set/remove: negative
/// counts from the end; must land inside the array.
fn array_index(len: usize, key: &str) -> Result<usize, String> {
    let idx = atoi(key)?;
    let len_i = i64::try_from(len).unwrap_or(i64::MAX);
    let real = if idx < 0 {
        if idx < -len_i {
            return Err(invalid_index(idx));
        }
        idx + len_i
    } else {
        idx
    };
    if real >= len_i {
        return Err(invalid_index(real));
    }
    usize::try_from(real).map_err(|_| invalid_index(idx))
}

/// A container reached by a JSON pointer, as evanphx's `findObject` finds it:
/// the parent of the last segment, plus that segment (unescaped).
fn find_parent<'a>(doc: &'a mut Value, path: &str) -> Option<(&'a mut Value, String)> {
    let split: Vec<&str> = path.split('/').collect();
    if split.len() < 2 {
        return None;
    }
    let (last, middle) = split[1..].split_last()?;
    let mut cur = doc;
    for part in middle {
        let key = decode_key(part);
        cur = match cur {
            Value::Object(m) => m.get_mut(&key)?,
            Value::Array(a) => {
                let i = array_index(a.len(), &key).ok()?;
                a.get_mut(i)?
            }
            _ => return None,
        };
        if !matches!(cur, Value::Object(_) | Value::Array(_)) {
            return None;
        }
    }
    Some((cur, decode_key(last)))
}

fn container_get(con: &Value, key: &str) -> Result<Option<Value>, String> {
    match con {
        Value::Object(m) => Ok(m.get(key).filter(|v| !v.is_null()).cloned()),
        Value::Array(a) => {
            let i = array_index(a.len(), key)?;
            Ok(a.get(i).filter(|v| !v.is_null()).cloned())
        }
        _ => Ok(None),
    }
}

fn container_add(con: &mut Value, key: &str, val: Value) -> Result<(), String> {
    match con {
        Value::Object(m) => {
            m.insert(key.to_string(), val);
            Ok(())
        }
        Value::Array(a) => {
            if key == "-" {
                a.push(val);
                return Ok(());
            }
            let idx = atoi(key)?;
            let new_len = i64::try_from(a.len() + 1).unwrap_or(i64::MAX);
            if idx >= new_len {
                return Err(invalid_index(idx));
            }
            let real = if idx < 0 {
                if idx < -new_len {
                    return Err(invalid_index(idx));
                }
                idx + new_len
            } else {
                idx
            };
            let at = usize::try_from(real).map_err(|_| invalid_index(idx))?;
            a.insert(at.min(a.len()), val);
            Ok(())
        }
        _ => Err("invalid state detected".to_string()),
    }
}

fn container_set(con: &mut Value, key: &str, val: Value) -> Result<(), String> {
    match con {
        Value::Object(m) => {
            m.insert(key.to_string(), val);
            Ok(())
        }
        Value::Array(a) => {
            let i = array_index(a.len(), key)?;
            if let Some(slot) = a.get_mut(i) {
                *slot = val;
            }
            Ok(())
        }
        _ => Err("invalid state detected".to_string()),
    }
}

fn container_remove(con: &mut Value, key: &str) -> Result<(), String> {
    match con {
        Value::Object(m) => {
            if m.shift_remove(key).is_none() {
                return Err(format!(
                    "Unable to remove nonexistent key: {key}: missing value"
                ));
            }
            Ok(())
        }
        Value::Array(a) => {
            let i = array_index(a.len(), key)?;
            a.remove(i);
            Ok(())
        }
        _ => Err("invalid state detected".to_string()),
    }
}

/// Reads a string member of an operation (`path`, `from`).
fn op_string(op: &Map<String, Value>, field: &str) -> Option<String> {
    op.get(field).and_then(Value::as_str).map(str::to_string)
}

fn apply_op(doc: &mut Value, op: &Map<String, Value>) -> Result<(), PatchError> {
    let na = PatchError::NotApplicable;
    let kind = op.get("op").and_then(Value::as_str).unwrap_or("unknown");
    // A missing `value` is JSON null, as in evanphx.
    let value = || op.get("value").cloned().unwrap_or(Value::Null);
    let path = || {
        op_string(op, "path").ok_or_else(|| {
            na(format!(
                "{kind} operation failed to decode path: missing value"
            ))
        })
    };
    let from = || {
        op_string(op, "from").ok_or_else(|| {
            na(format!(
                "{kind} operation failed to decode from: missing value"
            ))
        })
    };
    match kind {
        "add" => {
            let path = path()?;
            let (con, key) = find_parent(doc, &path).ok_or_else(|| {
                na(format!(
                    "add operation does not apply: doc is missing path: \"{path}\": missing value"
                ))
            })?;
            container_add(con, &key, value())
                .map_err(|e| na(format!("error in add for path: '{path}': {e}")))
        }
        "remove" => {
            let path = path()?;
            let (con, key) = find_parent(doc, &path).ok_or_else(|| {
                na(format!("remove operation does not apply: doc is missing path: \"{path}\": missing value"))
            })?;
            container_remove(con, &key)
                .map_err(|e| na(format!("error in remove for path: '{path}': {e}")))
        }
        "replace" => {
            let path = path()?;
            let (con, key) = find_parent(doc, &path).ok_or_else(|| {
                na(format!(
                    "replace operation does not apply: doc is missing path: {path}: missing value"
                ))
            })?;
            if container_get(con, &key).is_err() {
                return Err(na(format!(
                    "replace operation does not apply: doc is missing key: {path}: missing value"
                )));
            }
            container_set(con, &key, value())
                .map_err(|e| na(format!("error in replace for path: '{path}': {e}")))
        }
        "move" => {
            let from = from()?;
            let (con, key) = find_parent(doc, &from).ok_or_else(|| {
                na(format!(
                    "move operation does not apply: doc is missing from path: {from}: missing value"
                ))
            })?;
            let val = container_get(con, &key)
                .map_err(|e| na(format!("error in move for path: '{key}': {e}")))?
                .unwrap_or(Value::Null);
            container_remove(con, &key)
                .map_err(|e| na(format!("error in move for path: '{key}': {e}")))?;
            let path = path()?;
            let (con, key) = find_parent(doc, &path).ok_or_else(|| {
                na(format!("move operation does not apply: doc is missing destination path: {path}: missing value"))
            })?;
            container_add(con, &key, val)
                .map_err(|e| na(format!("error in move for path: '{key}': {e}")))
        }
        "test" => {
            let path = path()?;
            let (con, key) = find_parent(doc, &path).ok_or_else(|| {
                na(format!(
                    "test operation does not apply: is missing path: {path}: missing value"
                ))
            })?;
            let have = container_get(con, &key)
                .map_err(|e| na(format!("error in test for path: '{path}': {e}")))?;
            let want = op.get("value").filter(|v| !v.is_null());
            if have.as_ref() == want {
                Ok(())
            } else {
                Err(na(format!("testing value {path} failed: test failed")))
            }
        }
        "copy" => {
            let from = from()?;
            let (con, key) = find_parent(doc, &from).ok_or_else(|| {
                na(format!(
                    "copy operation does not apply: doc is missing from path: {from}: missing value"
                ))
            })?;
            let val = container_get(con, &key)
                .map_err(|e| na(format!("error in copy for from: '{from}': {e}")))?
                .unwrap_or(Value::Null);
            let path = path()?;
            let (con, key) = find_parent(doc, &path).ok_or_else(|| {
                na(format!("copy operation does not apply: doc is missing destination path: {path}: missing value"))
            })?;
            container_add(con, &key, val)
                .map_err(|e| na(format!("error in copy for path: '{path}': {e}")))
        }
        other => Err(na(format!("Unexpected kind: {other}"))),
    }
}

/// Applies an RFC 6902 JSON patch (`add`, `remove`, `replace`, `move`,
/// `copy`, `test`, JSON pointers with `~0`/`~1` escapes). The operations are
/// all-or-nothing: on error the input is untouched.
///
/// # Errors
/// [`PatchError::BadRequest`] when the patch is not a list of operation
/// objects, [`PatchError::TooLarge`] beyond [`MAX_JSON_PATCH_OPERATIONS`],
/// [`PatchError::NotApplicable`] when an operation fails.
pub fn json_patch(target: &Value, patch: &Value) -> Result<Value, PatchError> {
    let ops: &[Value] = match patch {
        // Go decodes `null` into an empty patch.
        Value::Null => &[],
        Value::Array(ops) => ops,
        other => {
            return Err(PatchError::BadRequest(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
                json_type(other)
            )));
        }
    };
    if ops.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(PatchError::TooLarge(format!(
            "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
            ops.len()
        )));
    }
    let mut maps = Vec::with_capacity(ops.len());
    for op in ops {
        match op {
            Value::Object(m) => maps.push(m),
            Value::Null => {}
            other => {
                return Err(PatchError::BadRequest(format!(
                    "json: cannot unmarshal {} into Go value of type jsonpatch.Operation",
                    json_type(other)
                )));
            }
        }
    }
    let mut doc = target.clone();
    for op in maps {
        apply_op(&mut doc, op)?;
    }
    Ok(doc)
}

// ---------------------------------------------------------------------------
// Strategic merge patch

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";

fn bad(msg: impl Into<String>) -> PatchError {
    PatchError::BadRequest(msg.into())
}

/// Removes every strategic-merge directive from a value that is inserted as
/// new (it has nothing to merge with); list items that are only a directive
/// disappear.
fn strip_directives(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), strip_directives(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .filter(|i| i.get(DIRECTIVE).is_none())
                .map(strip_directives)
                .collect(),
        ),
        other => other.clone(),
    }
}

struct Smp<'s> {
    schema: &'s ListSchema,
    kind: String,
}

/// What merging a map produced.
enum MapOutcome {
    Keep(Map<String, Value>),
    Delete,
}

impl Smp<'_> {
    fn merge_map(
        &self,
        orig: &Map<String, Value>,
        patch: &Map<String, Value>,
        path: &mut Vec<String>,
    ) -> Result<MapOutcome, PatchError> {
        match patch.get(DIRECTIVE) {
            None => {}
            Some(Value::String(d)) if d == "merge" => {}
            Some(Value::String(d)) if d == "replace" => {
                let Value::Object(m) = strip_directives(&Value::Object(patch.clone())) else {
                    return Ok(MapOutcome::Keep(Map::new()));
                };
                return Ok(MapOutcome::Keep(m));
            }
            Some(Value::String(d)) if d == "delete" => return Ok(MapOutcome::Delete),
            Some(other) => {
                return Err(bad(format!(
                    "unknown patch type: {other} in map: {}",
                    Value::Object(patch.clone())
                )));
            }
        }
        let mut out = orig.clone();
        if let Some(retain) = patch.get(RETAIN_KEYS) {
            let Some(keys) = retain.as_array() else {
                return Err(bad("invalid patch: $retainKeys must be a list of strings"));
            };
            let keep: Vec<&str> = keys.iter().filter_map(Value::as_str).collect();
            if keep.len() != keys.len() {
                return Err(bad("invalid patch: $retainKeys must be a list of strings"));
            }
            out.retain(|k, _| keep.contains(&k.as_str()));
        }
        for (k, pv) in patch {
            if let Some(field) = k.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
                let Some(drop) = pv.as_array() else {
                    return Err(bad(format!("invalid patch: {k} must be a list")));
                };
                if let Some(Value::Array(items)) = out.get_mut(field) {
                    items.retain(|i| !drop.contains(i));
                }
            }
        }
        for (k, pv) in patch {
            if k.starts_with('$') {
                continue;
            }
            if pv.is_null() {
                out.shift_remove(k);
                continue;
            }
            path.push(k.clone());
            let merged = match (out.get(k), pv) {
                (Some(Value::Object(o)), Value::Object(p)) => match self.merge_map(o, p, path)? {
                    MapOutcome::Keep(m) => Some(Value::Object(m)),
                    MapOutcome::Delete => None,
                },
                (Some(Value::Array(o)), Value::Array(p)) => {
                    Some(Value::Array(self.merge_list(o, p, path)?))
                }
                (_, Value::Object(p))
                    if p.get(DIRECTIVE).and_then(Value::as_str) == Some("delete") =>
                {
                    None
                }
                (_, pv) => Some(strip_directives(pv)),
            };
            path.pop();
            match merged {
                Some(v) => {
                    out.insert(k.clone(), v);
                }
                None => {
                    out.shift_remove(k);
                }
            }
        }
        for (k, order) in patch {
            if let Some(field) = k.strip_prefix(SET_ELEMENT_ORDER) {
                path.push(field.to_string());
                let list_type = self.list_type(path).clone();
                path.pop();
                if let (Some(Value::Array(items)), Some(order)) =
                    (out.get_mut(field), order.as_array())
                {
                    reorder(items, order, &list_type);
                }
            }
        }
        Ok(MapOutcome::Keep(out))
    }

    fn list_type(&self, path: &[String]) -> &ListType {
        let names: Vec<&str> = path.iter().map(String::as_str).collect();
        self.schema.list_type(&self.kind, &names)
    }

    fn merge_list(
        &self,
        orig: &[Value],
        patch: &[Value],
        path: &mut Vec<String>,
    ) -> Result<Vec<Value>, PatchError> {
        let replace = patch
            .iter()
            .any(|i| i.get(DIRECTIVE).and_then(Value::as_str) == Some("replace"));
        if replace {
            return Ok(patch
                .iter()
                .filter(|i| i.get(DIRECTIVE).is_none())
                .map(strip_directives)
                .collect());
        }
        match self.list_type(path).clone() {
            ListType::Atomic => Ok(patch.iter().map(strip_directives).collect()),
            ListType::Set => {
                let mut out = orig.to_vec();
                for p in patch {
                    if !is_scalar(p) {
                        return Err(bad(format!(
                            "invalid patch: {} is not a primitive list item",
                            p
                        )));
                    }
                    if !out.contains(p) {
                        out.push(p.clone());
                    }
                }
                Ok(out)
            }
            ListType::Map(keys) => {
                let Some(merge_key) = keys.first() else {
                    return Ok(patch.iter().map(strip_directives).collect());
                };
                let key_of = |v: &Value| -> Option<Value> {
                    match v.get(&merge_key.name) {
                        Some(k) if !k.is_null() => Some(k.clone()),
                        _ => merge_key.default.clone().filter(|_| v.is_object()),
                    }
                };
                let mut out = orig.to_vec();
                for item in patch {
                    let Some(obj) = item.as_object() else {
                        return Err(bad(format!(
                            "invalid patch: list item {item} of a list merged by {} is not an object",
                            merge_key.name
                        )));
                    };
                    let Some(key) = obj.get(&merge_key.name).filter(|k| !k.is_null()).cloned()
                    else {
                        return Err(bad(format!(
                            "map: {item} does not contain declared merge key: {}",
                            merge_key.name
                        )));
                    };
                    let pos = out.iter().position(|o| key_of(o).as_ref() == Some(&key));
                    match obj.get(DIRECTIVE).and_then(Value::as_str) {
                        Some("delete") => {
                            out.retain(|o| key_of(o).as_ref() != Some(&key));
                            continue;
                        }
                        Some("merge") | Some("replace") | None => {}
                        Some(other) => {
                            return Err(bad(format!("unknown patch type: {other} in map: {item}")));
                        }
                    }
                    match pos.and_then(|p| out.get(p).map(|o| (p, o))) {
                        Some((p, Value::Object(o))) => match self.merge_map(o, obj, path)? {
                            MapOutcome::Keep(m) => {
                                if let Some(slot) = out.get_mut(p) {
                                    *slot = Value::Object(m);
                                }
                            }
                            MapOutcome::Delete => {
                                out.remove(p);
                            }
                        },
                        _ => out.push(strip_directives(item)),
                    }
                }
                Ok(out)
            }
        }
    }
}

/// Orders `items` by `order` (`$setElementOrder`): listed items first in the
/// listed order, the rest after them in their current order.
fn reorder(items: &mut [Value], order: &[Value], list_type: &ListType) {
    let rank = |v: &Value| -> usize {
        let found = match list_type {
            ListType::Map(keys) => keys.first().and_then(|k| {
                let key = v.get(&k.name)?;
                order.iter().position(|o| o.get(&k.name) == Some(key))
            }),
            _ => order.iter().position(|o| o == v),
        };
        found.unwrap_or(order.len())
    };
    items.sort_by_key(rank);
}

/// Applies a strategic merge patch to a built-in object, taking list merge
/// keys from [`ListSchema::kubernetes`] and the kind from `target.kind`.
///
/// # Errors
/// [`PatchError::BadRequest`] for a malformed patch (not an object, an item
/// without its merge key, an unknown `$patch` directive, deleting the whole
/// object).
pub fn strategic_merge_patch(target: &Value, patch: &Value) -> Result<Value, PatchError> {
    let kind = target
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    strategic_merge_patch_with(target, patch, kind, &ListSchema::kubernetes())
}

/// [`strategic_merge_patch`] with an explicit kind and list schema.
///
/// # Errors
/// As [`strategic_merge_patch`].
pub fn strategic_merge_patch_with(
    target: &Value,
    patch: &Value,
    kind: &str,
    schema: &ListSchema,
) -> Result<Value, PatchError> {
    let Value::Object(p) = patch else {
        return Err(bad(format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            json_type(patch)
        )));
    };
    let empty = Map::new();
    let orig = target.as_object().unwrap_or(&empty);
    let smp = Smp {
        schema,
        kind: kind.to_string(),
    };
    match smp.merge_map(orig, p, &mut Vec::new())? {
        MapOutcome::Keep(m) => Ok(Value::Object(m)),
        MapOutcome::Delete => Err(bad("the patch may not delete the whole object")),
    }
}

#[cfg(test)]
mod tests;
