//! Pruning: removing the fields a structural schema does not declare.
//!
//! This module must NOT default or validate (see `defaulting`, `validation`).

use super::*;

/// Removes from `obj` (a whole custom resource) every field `schema` does
/// not declare, and returns their paths (`spec.foo`, `spec.items[0].bar`,
/// `metadata.foo`), as the server reports them in `unknown field` warnings.
///
/// As the real server does: the root keeps `apiVersion`, `kind` and
/// `metadata` whatever the schema says, and `metadata` keeps the
/// `ObjectMeta` fields only (reported first); a node with
/// `x-kubernetes-preserve-unknown-fields: true` keeps its undeclared fields
/// (declared ones are still pruned inside); `additionalProperties` declares
/// every key; an object with `x-kubernetes-embedded-resource: true` keeps
/// `apiVersion`, `kind` and an `ObjectMeta` `metadata` (its unknown
/// metadata fields reported last). The schema paths between are sorted, as
/// the pruning algorithm sorts them.
pub fn prune(schema: &Value, obj: &mut Value) -> Vec<String> {
    let mut meta = Vec::new();
    if let Some(m) = obj.get_mut("metadata") {
        prune_object_meta(m, "metadata", &mut meta);
    }
    let mut pruned = Vec::new();
    let mut embedded = Vec::new();
    if schema.is_object() && flag(schema, "x-kubernetes-preserve-unknown-fields") {
        skip_prune(obj, Some(schema), true, "", &mut pruned, &mut embedded);
    } else {
        prune_node(
            obj,
            Some(schema).filter(|s| s.is_object()),
            true,
            "",
            &mut pruned,
            &mut embedded,
        );
    }
    pruned.sort();
    meta.extend(pruned);
    meta.extend(embedded);
    meta
}

/// Keeps the `ObjectMeta` fields of a `metadata` object.
pub(super) fn prune_object_meta(meta: &mut Value, path: &str, out: &mut Vec<String>) {
    if let Value::Object(m) = meta {
        let mut unknown: Vec<String> = Vec::new();
        m.retain(|k, _| {
            let known = OBJECT_META_FIELDS.contains(&k.as_str());
            if !known {
                unknown.push(child(path, k));
            }
            known
        });
        unknown.sort();
        out.extend(unknown);
    }
}

/// Prunes an embedded resource's `metadata` (not the root's: that one is
/// done first by [`prune`]).
pub(super) fn coerce_embedded(x: &mut Value, root: bool, path: &str, embedded: &mut Vec<String>) {
    if root {
        return;
    }
    if let Some(m) = x.get_mut("metadata") {
        prune_object_meta(m, &child(path, "metadata"), embedded);
    }
}

pub(super) fn prune_node(
    x: &mut Value,
    s: Option<&Value>,
    root: bool,
    path: &str,
    out: &mut Vec<String>,
    embedded: &mut Vec<String>,
) {
    if let Some(s) = s
        && flag(s, "x-kubernetes-preserve-unknown-fields")
    {
        skip_prune(x, Some(s), root, path, out, embedded);
        return;
    }
    match x {
        Value::Object(m) => {
            let Some(s) = s else {
                // No schema: nothing inside is declared.
                out.extend(m.keys().map(|k| child(path, k)));
                m.clear();
                return;
            };
            let keeps_meta = root || flag(s, "x-kubernetes-embedded-resource");
            let props = properties(s);
            let extra = additional(s);
            m.retain(|k, v| {
                if keeps_meta && META_FIELDS.contains(&k.as_str()) {
                    return true;
                }
                let p = child(path, k);
                if let Some(prop) = props.and_then(|p| p.get(k)) {
                    prune_node(
                        v,
                        Some(prop).filter(|s| s.is_object()),
                        false,
                        &p,
                        out,
                        embedded,
                    );
                    true
                } else if let Some(extra) = extra {
                    prune_node(
                        v,
                        Some(extra).filter(|s| s.is_object()),
                        false,
                        &p,
                        out,
                        embedded,
                    );
                    true
                } else {
                    out.push(p);
                    false
                }
            });
            if keeps_meta {
                coerce_embedded(x, root, path, embedded);
            }
        }
        Value::Array(a) => {
            let item = s.and_then(items);
            for (i, v) in a.iter_mut().enumerate() {
                prune_node(v, item, false, &index(path, i), out, embedded);
            }
        }
        _ => {}
    }
}

/// A node that preserves unknown fields: only what it declares is pruned.
pub(super) fn skip_prune(
    x: &mut Value,
    s: Option<&Value>,
    root: bool,
    path: &str,
    out: &mut Vec<String>,
    embedded: &mut Vec<String>,
) {
    let Some(s) = s else { return };
    match x {
        Value::Object(m) => {
            let keeps_meta = root || flag(s, "x-kubernetes-embedded-resource");
            let props = properties(s);
            let extra = additional(s);
            for (k, v) in m.iter_mut() {
                if keeps_meta && META_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                let p = child(path, k);
                if let Some(prop) = props.and_then(|p| p.get(k)) {
                    prune_node(
                        v,
                        Some(prop).filter(|s| s.is_object()),
                        false,
                        &p,
                        out,
                        embedded,
                    );
                } else if let Some(extra) = extra {
                    prune_node(
                        v,
                        Some(extra).filter(|s| s.is_object()),
                        false,
                        &p,
                        out,
                        embedded,
                    );
                }
            }
            if keeps_meta {
                coerce_embedded(x, root, path, embedded);
            }
        }
        Value::Array(a) => {
            let item = items(s);
            for (i, v) in a.iter_mut().enumerate() {
                skip_prune(v, item, false, &index(path, i), out, embedded);
            }
        }
        _ => {}
    }
}
