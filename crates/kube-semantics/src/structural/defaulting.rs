//! Defaulting: filling in the `default` values a structural schema declares.
//!
//! This module must NOT prune or validate (see `pruning`, `validation`).

use super::*;

/// Removes the `null` values of fields whose schema is neither `nullable`
/// nor has a `default`, as the server's decoder does before defaulting (a
/// `null` there means "not set"). Nulls in lists stay (validation refuses
/// them).
pub fn drop_non_nullable_nulls(schema: &Value, obj: &mut Value) {
    if !schema.is_object() {
        return;
    }
    match obj {
        Value::Object(m) => {
            let props = properties(schema);
            let extra = additional(schema).filter(|s| s.is_object());
            m.retain(|k, v| {
                let Some(s) = props.and_then(|p| p.get(k)).or(extra) else {
                    return true;
                };
                if v.is_null() && s.get("default").is_none() && !flag(s, "nullable") {
                    return false;
                }
                drop_non_nullable_nulls(s, v);
                true
            });
        }
        Value::Array(a) => {
            if let Some(item) = items(schema) {
                for v in a {
                    drop_non_nullable_nulls(item, v);
                }
            }
        }
        _ => {}
    }
}

pub(super) fn non_nullable_null(v: &Value, s: &Value) -> bool {
    v.is_null() && !flag(s, "nullable")
}

/// Applies the schema's `default`s, as the server does on every write (and
/// on every read from storage): a declared field that is missing, or `null`
/// while its schema is not `nullable`, gets a copy of its default; list
/// items and map values that are such a `null` get their schema's default
/// too. Defaults are applied top-down, so a defaulted object is defaulted
/// inside as well.
pub fn default(schema: &Value, obj: &mut Value) {
    if !schema.is_object() {
        return;
    }
    match obj {
        Value::Object(m) => {
            let props = properties(schema);
            if let Some(props) = props {
                for (k, prop) in props {
                    let Some(d) = prop.get("default") else {
                        continue;
                    };
                    // A `default: null` changes nothing (Go keeps nil).
                    if d.is_null() {
                        continue;
                    }
                    match m.get(k) {
                        None => {
                            m.insert(k.clone(), d.clone());
                        }
                        Some(v) if non_nullable_null(v, prop) => {
                            m.insert(k.clone(), d.clone());
                        }
                        Some(_) => {}
                    }
                }
            }
            let extra = additional(schema).filter(|s| s.is_object());
            for (k, v) in m.iter_mut() {
                if let Some(prop) = props.and_then(|p| p.get(k)) {
                    default(prop, v);
                } else if let Some(extra) = extra {
                    if non_nullable_null(v, extra)
                        && let Some(d) = extra.get("default").filter(|d| !d.is_null())
                    {
                        *v = d.clone();
                    }
                    default(extra, v);
                }
            }
        }
        Value::Array(a) => {
            let Some(item) = items(schema) else { return };
            for v in a {
                if non_nullable_null(v, item)
                    && let Some(d) = item.get("default").filter(|d| !d.is_null())
                {
                    *v = d.clone();
                }
                default(item, v);
            }
        }
        _ => {}
    }
}
