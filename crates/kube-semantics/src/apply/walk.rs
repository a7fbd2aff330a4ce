//! Walking two objects side by side to find the leaf fields each sets and the
//! fields whose values differ, the way structured-merge-diff compares them.
//!
//! This module must NOT read or write `managedFields`: it only compares values.

use super::*;

/// Leaf paths of an object with their values (`None` for list-item
/// members, which are owned but have no value of their own).
pub(super) type Leaves<'a> = BTreeMap<FieldPath, Option<&'a Value>>;

/// How a list's items are identified.
pub(super) enum Items {
    Atomic,
    /// One element per item, in item order.
    Elements(Vec<PathElement>),
}

/// Metadata fields the server sets or that identify the object: the API
/// server strips exactly these from every manager's set (`stripMeta`), so
/// no manager can conflict over them or prune them.
pub(super) const IDENTITY_METADATA: [&str; 9] = [
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "selfLink",
    "managedFields",
    "clusterName",
];

pub(super) fn field(name: &str) -> PathElement {
    PathElement::Field(name.to_string())
}

pub(super) fn is_identity(path: &[PathElement]) -> bool {
    match path {
        [PathElement::Field(f)] => f == "apiVersion" || f == "kind" || f == "metadata",
        [PathElement::Field(m), PathElement::Field(f), ..] if m == "metadata" => {
            f == "managedFields" || (path.len() == 2 && IDENTITY_METADATA.contains(&f.as_str()))
        }
        _ => false,
    }
}

pub(super) struct Walker<'s> {
    pub(super) schema: &'s ListSchema,
    pub(super) kind: String,
    pub(super) reset: &'s ResetFields,
}

impl<'s> Walker<'s> {
    pub(super) fn new(options: &'s ManagedFieldsOptions, kind: &str) -> Self {
        Self {
            schema: &options.schema,
            kind: kind.to_string(),
            reset: &options.reset,
        }
    }

    pub(super) fn is_excluded(&self, path: &[PathElement]) -> bool {
        is_identity(path)
            || matches!(path.first(), Some(PathElement::Field(top)) if self.reset.resets(top))
    }

    pub(super) fn list_type<S: AsRef<str>>(&self, names: &[S]) -> &'s ListType {
        let names: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
        self.schema.list_type(&self.kind, &names)
    }

    /// Identifies a list's items, falling back to atomic when the list type
    /// cannot identify every item uniquely.
    pub(super) fn classify<S: AsRef<str>>(&self, names: &[S], items: &[Value]) -> Items {
        if items.is_empty() {
            return Items::Atomic;
        }
        let elements: Option<Vec<PathElement>> = match self.list_type(names) {
            ListType::Atomic => None,
            ListType::Set => items
                .iter()
                .map(|i| is_scalar(i).then(|| PathElement::value(i)))
                .collect(),
            ListType::Map(keys) => items
                .iter()
                .map(|i| item_key(i, keys).map(PathElement::key))
                .collect(),
        };
        match elements {
            Some(e) if e.iter().collect::<BTreeSet<_>>().len() == e.len() => Items::Elements(e),
            _ => Items::Atomic,
        }
    }

    /// Every owned path of `obj` (identity and reset fields excluded).
    pub(super) fn leaves<'a>(&self, obj: &'a Value) -> Leaves<'a> {
        let mut out = Leaves::new();
        if let Value::Object(m) = obj {
            self.walk_map(m, &mut Vec::new(), &mut Vec::new(), &mut out);
        }
        out.retain(|p, _| !self.is_excluded(p));
        out
    }

    pub(super) fn walk_map<'a>(
        &self,
        m: &'a Map<String, Value>,
        path: &mut FieldPath,
        names: &mut Vec<&'a str>,
        out: &mut Leaves<'a>,
    ) {
        for (k, v) in m {
            path.push(field(k));
            names.push(k);
            self.walk_value(v, path, names, out);
            names.pop();
            path.pop();
        }
    }

    pub(super) fn walk_value<'a>(
        &self,
        v: &'a Value,
        path: &mut FieldPath,
        names: &mut Vec<&'a str>,
        out: &mut Leaves<'a>,
    ) {
        match v {
            Value::Object(m) if !m.is_empty() => self.walk_map(m, path, names, out),
            Value::Array(items) => match self.classify(names, items) {
                Items::Atomic => {
                    out.insert(path.clone(), Some(v));
                }
                Items::Elements(elements) => {
                    for (item, pe) in items.iter().zip(elements) {
                        path.push(pe);
                        out.insert(path.clone(), None);
                        if let Value::Object(im) = item {
                            self.walk_map(im, path, names, out);
                        }
                        path.pop();
                    }
                }
            },
            _ => {
                out.insert(path.clone(), Some(v));
            }
        }
    }

    /// Merges an applied config into the live object: the config wins on
    /// scalars and atomic lists, maps and associative lists merge.
    pub(super) fn merge(&self, live: &Value, cfg: &Value, names: &mut Vec<String>) -> Value {
        match (live, cfg) {
            (Value::Object(l), Value::Object(c)) => {
                let mut out = Map::new();
                for (k, lv) in l {
                    let v = match c.get(k) {
                        Some(cv) => {
                            names.push(k.clone());
                            let v = self.merge(lv, cv, names);
                            names.pop();
                            v
                        }
                        None => lv.clone(),
                    };
                    out.insert(k.clone(), v);
                }
                for (k, cv) in c {
                    if !l.contains_key(k) {
                        out.insert(k.clone(), cv.clone());
                    }
                }
                Value::Object(out)
            }
            // An empty config list adds no items to a merged list (it only
            // claims the list exists); it replaces only an atomic one.
            (Value::Array(l), Value::Array(c))
                if c.is_empty()
                    && !l.is_empty()
                    && matches!(self.classify(names, l), Items::Elements(_)) =>
            {
                live.clone()
            }
            (Value::Array(l), Value::Array(c)) => {
                let (Items::Elements(le), Items::Elements(ce)) =
                    (self.classify(names, l), self.classify(names, c))
                else {
                    return cfg.clone();
                };
                let cfg_items: BTreeMap<&PathElement, &Value> = ce.iter().zip(c).collect();
                let mut out = Vec::with_capacity(l.len().max(c.len()));
                for (pe, li) in le.iter().zip(l) {
                    match cfg_items.get(pe) {
                        Some(ci) => out.push(self.merge(li, ci, names)),
                        None => out.push(li.clone()),
                    }
                }
                let live_set: BTreeSet<&PathElement> = le.iter().collect();
                for (pe, ci) in ce.iter().zip(c) {
                    if !live_set.contains(pe) {
                        out.push(ci.clone());
                    }
                }
                Value::Array(out)
            }
            _ => cfg.clone(),
        }
    }

    pub(super) fn is_leaf_value(&self, v: &Value, names: &[String]) -> bool {
        match v {
            Value::Object(m) => m.is_empty(),
            Value::Array(items) => matches!(self.classify(names, items), Items::Atomic),
            _ => true,
        }
    }

    /// Removes `to_remove` from a map; containers emptied by the removal go
    /// too unless `keep` owns them as (empty) leaves.
    pub(super) fn remove_in_map(
        &self,
        m: &mut Map<String, Value>,
        to_remove: &FieldSet,
        keep: &FieldSet,
        path: &mut FieldPath,
        names: &mut Vec<String>,
    ) {
        let keys: Vec<String> = m.keys().cloned().collect();
        for k in keys {
            path.push(field(&k));
            names.push(k.clone());
            let mut drop = false;
            if let Some(v) = m.get_mut(&k) {
                if to_remove.contains(path) && self.is_leaf_value(v, names) {
                    drop = true;
                } else if any_under(to_remove, path) {
                    let was_empty = is_empty_container(v);
                    match v {
                        Value::Object(child) => {
                            self.remove_in_map(child, to_remove, keep, path, names)
                        }
                        Value::Array(items) => {
                            self.remove_in_list(items, to_remove, keep, path, names)
                        }
                        _ => {}
                    }
                    drop = !was_empty && is_empty_container(v) && !keep.contains(path);
                }
            }
            if drop {
                m.shift_remove(&k);
            }
            names.pop();
            path.pop();
        }
    }

    pub(super) fn remove_in_list(
        &self,
        items: &mut Vec<Value>,
        to_remove: &FieldSet,
        keep: &FieldSet,
        path: &mut FieldPath,
        names: &mut Vec<String>,
    ) {
        let Items::Elements(elements) = self.classify(names, items) else {
            return;
        };
        let old = std::mem::take(items);
        for (mut item, pe) in old.into_iter().zip(elements) {
            path.push(pe);
            let removed = to_remove.contains(path);
            if !removed
                && any_under(to_remove, path)
                && let Value::Object(im) = &mut item
            {
                self.remove_in_map(im, to_remove, keep, path, names);
            }
            path.pop();
            if !removed {
                items.push(item);
            }
        }
    }
}

pub(super) fn is_empty_container(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// Whether `set` holds a path strictly below `prefix`.
pub(super) fn any_under(set: &FieldSet, prefix: &[PathElement]) -> bool {
    set.range::<FieldPath, _>((Bound::Excluded(prefix.to_vec()), Bound::Unbounded))
        .next()
        .is_some_and(|p| p.starts_with(prefix))
}

/// Whether `path` is a key field of the list item it sits in.
pub(super) fn is_key_field(path: &[PathElement]) -> bool {
    let [.., PathElement::Key(k), PathElement::Field(f)] = path else {
        return false;
    };
    serde_json::from_str::<Value>(k)
        .ok()
        .and_then(|v| v.as_object().map(|m| m.contains_key(f)))
        .unwrap_or(false)
}

pub(super) struct Compared {
    pub(super) added: FieldSet,
    pub(super) modified: FieldSet,
    pub(super) removed: FieldSet,
}

impl Compared {
    pub(super) fn changed(&self) -> FieldSet {
        self.added
            .iter()
            .chain(&self.modified)
            .chain(&self.removed)
            .cloned()
            .collect()
    }
}

pub(super) fn compare(old: &Leaves<'_>, new: &Leaves<'_>) -> Compared {
    let mut c = Compared {
        added: FieldSet::new(),
        modified: FieldSet::new(),
        removed: FieldSet::new(),
    };
    for (p, nv) in new {
        match old.get(p) {
            None => {
                c.added.insert(p.clone());
            }
            Some(ov) if ov != nv => {
                c.modified.insert(p.clone());
            }
            Some(_) => {}
        }
    }
    for p in old.keys() {
        if !new.contains_key(p) {
            c.removed.insert(p.clone());
        }
    }
    c
}

/// The changes that take a field away from another manager. An empty map
/// or list owned as a leaf only says "this container exists": it appearing,
/// or being filled with fields, changes nothing its owner asked for.
pub(super) fn conflicting_changes(
    diff: &Compared,
    live: &Leaves<'_>,
    result: &Leaves<'_>,
) -> FieldSet {
    let empty = |v: Option<&Option<&Value>>| matches!(v, Some(Some(v)) if is_empty_container(v));
    let mut out = diff.modified.clone();
    out.extend(
        diff.added
            .iter()
            .filter(|p| !empty(result.get(*p)))
            .cloned(),
    );
    let result_paths: FieldSet = result.keys().cloned().collect();
    out.extend(
        diff.removed
            .iter()
            .filter(|p| !(empty(live.get(*p)) && any_under(&result_paths, p)))
            .cloned(),
    );
    out
}
