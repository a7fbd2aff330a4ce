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
    let mut p = Pruner::default();
    if schema.is_object() && flag(schema, "x-kubernetes-preserve-unknown-fields") {
        p.skip(obj, Some(schema), true, "");
    } else {
        p.node(obj, Some(schema).filter(|s| s.is_object()), true, "");
    }
    p.pruned.sort();
    meta.extend(p.pruned);
    meta.extend(p.embedded);
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

/// The paths a pruning walk removes: undeclared fields, and, kept apart to
/// be reported last, the unknown metadata fields of embedded resources.
#[derive(Default)]
struct Pruner {
    pruned: Vec<String>,
    embedded: Vec<String>,
}

impl Pruner {
    /// Prunes an embedded resource's `metadata` (not the root's: that one
    /// is done first by [`prune`]).
    fn coerce_embedded(&mut self, x: &mut Value, root: bool, path: &str) {
        if root {
            return;
        }
        if let Some(m) = x.get_mut("metadata") {
            prune_object_meta(m, &child(path, "metadata"), &mut self.embedded);
        }
    }

    fn node(&mut self, x: &mut Value, s: Option<&Value>, root: bool, path: &str) {
        if let Some(s) = s
            && flag(s, "x-kubernetes-preserve-unknown-fields")
        {
            self.skip(x, Some(s), root, path);
            return;
        }
        match x {
            Value::Object(m) => {
                let Some(s) = s else {
                    // No schema: nothing inside is declared.
                    self.pruned.extend(m.keys().map(|k| child(path, k)));
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
                    let declared = self.declared(v, k, props, extra, &p);
                    if !declared {
                        self.pruned.push(p);
                    }
                    declared
                });
                if keeps_meta {
                    self.coerce_embedded(x, root, path);
                }
            }
            Value::Array(a) => {
                let item = s.and_then(items);
                for (i, v) in a.iter_mut().enumerate() {
                    self.node(v, item, false, &index(path, i));
                }
            }
            _ => {}
        }
    }

    /// Prunes the value of the field `k` by the schema that declares it:
    /// its property, else `additionalProperties`. False, with nothing
    /// pruned, when neither declares it.
    fn declared(
        &mut self,
        v: &mut Value,
        k: &str,
        props: Option<&Map<String, Value>>,
        extra: Option<&Value>,
        path: &str,
    ) -> bool {
        let Some(s) = props.and_then(|p| p.get(k)).or(extra) else {
            return false;
        };
        self.node(v, Some(s).filter(|s| s.is_object()), false, path);
        true
    }

    /// A node that preserves unknown fields: only what it declares is
    /// pruned.
    fn skip(&mut self, x: &mut Value, s: Option<&Value>, root: bool, path: &str) {
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
                    self.declared(v, k, props, extra, &child(path, k));
                }
                if keeps_meta {
                    self.coerce_embedded(x, root, path);
                }
            }
            Value::Array(a) => {
                let item = items(s);
                for (i, v) in a.iter_mut().enumerate() {
                    self.skip(v, item, false, &index(path, i));
                }
            }
            _ => {}
        }
    }
}
