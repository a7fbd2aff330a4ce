//! How lists merge: the small piece of the OpenAPI schema that strategic
//! merge patch and server-side apply need.
//!
//! The API server knows, from each kind's OpenAPI schema, that
//! `spec.containers` is a list keyed by `name`, that `metadata.finalizers`
//! is a set, and that `spec.tolerations` is replaced as a whole. Objects here
//! are generic JSON, so this module carries that knowledge as a table of
//! rules ([`ListSchema::kubernetes`]) that callers may extend. Everything a
//! rule does not name is *atomic* (replaced whole), the schema-less default.
//!
//! This module must NOT merge or compare values itself; it only answers
//! "what kind of list is this?".

use serde_json::Value;

/// One key field of an associative list.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyField {
    /// The field of each item that identifies it, e.g. `name`.
    pub name: String,
    /// The value used when an item omits the field (the API server defaults
    /// some keys, such as a port's `protocol` to `TCP`, before merging).
    pub default: Option<Value>,
}

impl KeyField {
    /// A key field without a default.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_string(),
            default: None,
        }
    }

    /// A key field that defaults to `default` when an item omits it.
    pub fn with_default(name: &str, default: Value) -> Self {
        Self {
            name: name.to_string(),
            default: Some(default),
        }
    }
}

/// What kind of list a field holds.
#[derive(Clone, Debug, PartialEq)]
pub enum ListType {
    /// Replaced whole; owned as one field (`x-kubernetes-list-type: atomic`).
    Atomic,
    /// A set of scalars, merged by value (`x-kubernetes-list-type: set`);
    /// items are owned as `v:"value"`.
    Set,
    /// A list of objects merged item by item by these key fields
    /// (`x-kubernetes-list-type: map`); items are owned as `k:{"name":"x"}`.
    /// Strategic merge patch uses the first key as its `patchMergeKey`.
    Map(Vec<KeyField>),
}

/// Where a rule applies.
#[derive(Clone, Debug, PartialEq)]
pub enum ListMatcher {
    /// The list at exactly this path of field names from the object root
    /// (list items are not path steps), optionally only for one `kind`.
    Path {
        /// `Some("Service")` limits the rule to that kind.
        kind: Option<String>,
        /// e.g. `["spec", "ports"]`.
        path: Vec<String>,
    },
    /// Any list whose field is called `name`, optionally only when the
    /// enclosing field (the list holding the item this list sits in, e.g.
    /// `containers`) is one of `parents`.
    Name {
        /// The list field's name, e.g. `env`.
        name: String,
        /// Required enclosing field names; empty means anywhere.
        parents: Vec<String>,
    },
}

impl ListMatcher {
    fn matches(&self, kind: &str, path: &[&str]) -> bool {
        match self {
            Self::Path { kind: k, path: p } => {
                k.as_deref().is_none_or(|k| k == kind)
                    && p.len() == path.len()
                    && p.iter().zip(path).all(|(a, b)| a == b)
            }
            Self::Name { name, parents } => {
                let Some((last, rest)) = path.split_last() else {
                    return false;
                };
                last == name
                    && (parents.is_empty()
                        || rest.last().is_some_and(|p| parents.iter().any(|x| x == p)))
            }
        }
    }
}

/// A rule: lists matched by `matcher` are of type `list_type`.
#[derive(Clone, Debug, PartialEq)]
pub struct ListRule {
    /// Which lists.
    pub matcher: ListMatcher,
    /// What they are.
    pub list_type: ListType,
}

/// The table of list rules; the first matching rule wins, unmatched lists
/// are atomic.
#[derive(Clone, Debug, PartialEq)]
pub struct ListSchema {
    rules: Vec<ListRule>,
}

impl Default for ListSchema {
    fn default() -> Self {
        Self::kubernetes()
    }
}

/// The lists of containers in a pod spec; their `ports` are keyed by
/// `containerPort`, unlike a Service's `ports`.
const CONTAINER_LISTS: [&str; 3] = ["containers", "initContainers", "ephemeralContainers"];

fn by_name(name: &str, keys: &[&str]) -> ListRule {
    ListRule {
        matcher: ListMatcher::Name {
            name: name.to_string(),
            parents: Vec::new(),
        },
        list_type: ListType::Map(keys.iter().map(|k| KeyField::new(k)).collect()),
    }
}

impl ListSchema {
    /// No rules: every list is atomic (what the API server does for a custom
    /// resource whose schema declares no list types).
    pub fn atomic() -> Self {
        Self { rules: Vec::new() }
    }

    /// The list types of the built-in kinds mirra meets, from their OpenAPI
    /// schemas:
    ///
    /// | list | type |
    /// |---|---|
    /// | `metadata.finalizers` | set |
    /// | `metadata.ownerReferences` | map by `uid` |
    /// | Service `spec.ports` | map by `port`, `protocol` (default `TCP`) |
    /// | `ports` of a container | map by `containerPort`, `protocol` (default `TCP`) |
    /// | `containers`, `initContainers`, `ephemeralContainers`, `volumes`, `env`, `imagePullSecrets`, `resourceClaims`, `schedulingGates` | map by `name` |
    /// | `volumeMounts` | map by `mountPath` |
    /// | `volumeDevices` | map by `devicePath` |
    /// | `conditions` | map by `type` |
    /// | `hostAliases` | map by `ip` |
    /// | `topologySpreadConstraints` | map by `topologyKey`, `whenUnsatisfiable` |
    /// | anything else | atomic |
    pub fn kubernetes() -> Self {
        let protocol = || KeyField::with_default("protocol", Value::String("TCP".into()));
        let mut rules = vec![
            ListRule {
                matcher: ListMatcher::Path {
                    kind: None,
                    path: vec!["metadata".into(), "finalizers".into()],
                },
                list_type: ListType::Set,
            },
            ListRule {
                matcher: ListMatcher::Path {
                    kind: None,
                    path: vec!["metadata".into(), "ownerReferences".into()],
                },
                list_type: ListType::Map(vec![KeyField::new("uid")]),
            },
            ListRule {
                matcher: ListMatcher::Path {
                    kind: Some("Service".into()),
                    path: vec!["spec".into(), "ports".into()],
                },
                list_type: ListType::Map(vec![KeyField::new("port"), protocol()]),
            },
            ListRule {
                matcher: ListMatcher::Name {
                    name: "ports".into(),
                    parents: CONTAINER_LISTS.iter().map(|s| s.to_string()).collect(),
                },
                list_type: ListType::Map(vec![KeyField::new("containerPort"), protocol()]),
            },
        ];
        for name in CONTAINER_LISTS.iter().chain(&[
            "volumes",
            "env",
            "imagePullSecrets",
            "resourceClaims",
            "schedulingGates",
        ]) {
            rules.push(by_name(name, &["name"]));
        }
        rules.push(by_name("volumeMounts", &["mountPath"]));
        rules.push(by_name("volumeDevices", &["devicePath"]));
        rules.push(by_name("conditions", &["type"]));
        rules.push(by_name("hostAliases", &["ip"]));
        rules.push(by_name(
            "topologySpreadConstraints",
            &["topologyKey", "whenUnsatisfiable"],
        ));
        Self { rules }
    }

    /// Adds a rule that takes precedence over the existing ones (e.g. a
    /// custom resource's `x-kubernetes-list-type: map`).
    #[must_use]
    pub fn with_rule(mut self, rule: ListRule) -> Self {
        self.rules.insert(0, rule);
        self
    }

    /// The type of the list at `path` (field names from the root, list items
    /// skipped) in an object of `kind`.
    pub fn list_type(&self, kind: &str, path: &[&str]) -> &ListType {
        const ATOMIC: &ListType = &ListType::Atomic;
        self.rules
            .iter()
            .find(|r| r.matcher.matches(kind, path))
            .map_or(ATOMIC, |r| &r.list_type)
    }
}

/// A scalar (string, number, bool) usable as a key or set value.
pub(crate) fn is_scalar(v: &Value) -> bool {
    matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_))
}

/// The identity of a list item under `keys`: the key fields (defaults
/// filled in) as `(name, value)` pairs sorted by name, or `None` when the
/// item is not an object or a key is missing or not a scalar.
pub(crate) fn item_key(item: &Value, keys: &[KeyField]) -> Option<Vec<(String, Value)>> {
    let obj = item.as_object()?;
    let mut out = Vec::with_capacity(keys.len());
    for k in keys {
        let v = match obj.get(&k.name) {
            Some(v) if is_scalar(v) => v.clone(),
            Some(Value::Null) | None => k.default.clone()?,
            Some(_) => return None,
        };
        out.push((k.name.clone(), v));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn well_known_lists() {
        let s = ListSchema::kubernetes();
        assert_eq!(
            s.list_type("Pod", &["metadata", "finalizers"]),
            &ListType::Set
        );
        let ListType::Map(keys) = s.list_type("Pod", &["spec", "containers"]) else {
            panic!("containers must be keyed");
        };
        assert_eq!(keys[0].name, "name");
        let ListType::Map(keys) = s.list_type("Service", &["spec", "ports"]) else {
            panic!("service ports must be keyed");
        };
        assert_eq!(keys.len(), 2);
        assert_eq!(keys[0].name, "port");
        let ListType::Map(keys) = s.list_type(
            "Deployment",
            &["spec", "template", "spec", "containers", "ports"],
        ) else {
            panic!("container ports must be keyed");
        };
        assert_eq!(keys[0].name, "containerPort");
        // Ports elsewhere (EndpointSlice) stay atomic.
        assert_eq!(s.list_type("EndpointSlice", &["ports"]), &ListType::Atomic);
        assert_eq!(
            s.list_type("Pod", &["spec", "tolerations"]),
            &ListType::Atomic
        );
        assert_eq!(
            ListSchema::atomic().list_type("Pod", &["spec", "containers"]),
            &ListType::Atomic
        );
    }

    #[test]
    fn custom_rules_take_precedence() {
        let s = ListSchema::kubernetes().with_rule(ListRule {
            matcher: ListMatcher::Path {
                kind: Some("SyncConfig".into()),
                path: vec!["spec".into(), "syncItems".into()],
            },
            list_type: ListType::Map(vec![KeyField::new("name")]),
        });
        assert!(matches!(
            s.list_type("SyncConfig", &["spec", "syncItems"]),
            ListType::Map(_)
        ));
        assert_eq!(
            s.list_type("Other", &["spec", "syncItems"]),
            &ListType::Atomic
        );
    }

    #[test]
    fn item_keys_fill_defaults_and_reject_bad_items() {
        let keys = vec![
            KeyField::new("port"),
            KeyField::with_default("protocol", json!("TCP")),
        ];
        assert_eq!(
            item_key(&json!({"port": 80}), &keys),
            Some(vec![
                ("port".into(), json!(80)),
                ("protocol".into(), json!("TCP"))
            ])
        );
        assert_eq!(item_key(&json!({"protocol": "UDP"}), &keys), None);
        assert_eq!(item_key(&json!({"port": {"x": 1}}), &keys), None);
        assert_eq!(item_key(&json!("scalar"), &keys), None);
    }
}
