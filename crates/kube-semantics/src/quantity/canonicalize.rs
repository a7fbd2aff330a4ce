//! Rewriting the quantities inside a decoded object to their canonical form,
//! and the field errors for the ones that do not parse.
//!
//! This module must NOT know which kinds hold quantities beyond the paths its
//! callers give it.

use super::*;

/// The server's printed form of `s` (`parse(s)?.canonical()`).
pub fn canonicalize(s: &str) -> Result<String, QuantityError> {
    Ok(parse(s)?.canonical())
}

/// One step of a path pattern for [`canonicalize_at`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seg {
    /// The member with this name of an object.
    Key(String),
    /// Every member of an object (the values of a map such as a ResourceList).
    AnyKey,
    /// Every element of an array.
    AnyIndex,
}

/// A quantity that does not parse, with where it was found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {error}")]
pub struct QuantityFieldError {
    /// The field path, e.g. `spec.limits[0].max.cpu`.
    pub path: String,
    /// Why it does not parse; its text is the API server's.
    pub error: QuantityError,
}

/// Rewrites every quantity found at `pattern` to the text the API server
/// would store (its `String()`); fails, changing nothing, on the first value
/// that does not parse. Paths that do not exist are skipped. A `null` map
/// value (pattern ending in [`Seg::AnyKey`]) becomes `"0"`, as decoding a
/// `null` into a map of quantities gives zero; a `null` field is left alone
/// (a nil `*Quantity`).
pub fn canonicalize_at(obj: &mut Value, pattern: &[Seg]) -> Result<(), QuantityFieldError> {
    rewrite(obj, pattern, false)
}

/// [`canonicalize_at`] for fields of type `ResourceList` in `core/v1` (and
/// the pod templates embedding them): the server's defaulting also rounds
/// those up to milli precision (`SetDefaults_ResourceList`), so `1n` is
/// stored as `1m`.
pub fn canonicalize_resource_list_at(
    obj: &mut Value,
    pattern: &[Seg],
) -> Result<(), QuantityFieldError> {
    rewrite(obj, pattern, true)
}

pub(super) fn rewrite(
    obj: &mut Value,
    pattern: &[Seg],
    milli: bool,
) -> Result<(), QuantityFieldError> {
    let mut found = Vec::new();
    collect(obj, pattern, String::new(), false, milli, &mut found)?;
    let mut replacements = found.into_iter();
    apply(obj, pattern, &mut replacements);
    Ok(())
}

pub(super) fn join_key(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Read-only pass: the new text of every matched value, in visit order.
pub(super) fn collect(
    v: &Value,
    pattern: &[Seg],
    path: String,
    in_map: bool,
    milli: bool,
    out: &mut Vec<Option<String>>,
) -> Result<(), QuantityFieldError> {
    let Some((seg, rest)) = pattern.split_first() else {
        if v.is_null() && !in_map {
            out.push(None);
            return Ok(());
        }
        let mut q = parse_json(v).map_err(|error| QuantityFieldError {
            path: path.clone(),
            error,
        })?;
        if milli {
            q.round_up(-3);
        }
        out.push(Some(q.canonical()));
        return Ok(());
    };
    match (seg, v) {
        (Seg::Key(k), Value::Object(m)) => {
            if let Some(child) = m.get(k) {
                collect(child, rest, join_key(&path, k), false, milli, out)?;
            }
        }
        (Seg::AnyKey, Value::Object(m)) => {
            for (k, child) in m {
                collect(child, rest, join_key(&path, k), true, milli, out)?;
            }
        }
        (Seg::AnyIndex, Value::Array(items)) => {
            for (i, child) in items.iter().enumerate() {
                collect(child, rest, format!("{path}[{i}]"), false, milli, out)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Write pass: same traversal as [`collect`], consuming its results.
pub(super) fn apply(
    v: &mut Value,
    pattern: &[Seg],
    repl: &mut impl Iterator<Item = Option<String>>,
) {
    let Some((seg, rest)) = pattern.split_first() else {
        if let Some(Some(text)) = repl.next() {
            *v = Value::String(text);
        }
        return;
    };
    match (seg, v) {
        (Seg::Key(k), Value::Object(m)) => {
            if let Some(child) = m.get_mut(k) {
                apply(child, rest, repl);
            }
        }
        (Seg::AnyKey, Value::Object(m)) => {
            for (_, child) in m.iter_mut() {
                apply(child, rest, repl);
            }
        }
        (Seg::AnyIndex, Value::Array(items)) => {
            for child in items.iter_mut() {
                apply(child, rest, repl);
            }
        }
        _ => {}
    }
}
