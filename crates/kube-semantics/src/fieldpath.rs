//! Field paths and field sets: what `managedFields` records.
//!
//! A field set is the set of paths a manager owns. Its wire form is the
//! `FieldsV1` trie of `metadata.managedFields[].fieldsV1`:
//!
//! ```text
//! {"f:metadata":{"f:labels":{"f:app":{}}},
//!  "f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:name":{}}}},
//!  "f:metadata":{"f:finalizers":{"v:\"example.com/x\"":{}}}}
//! ```
//!
//! `f:` is a field, `k:` a keyed list item, `v:` a set member, `i:` a list
//! index, and `"."` marks a node that is itself owned as well as having
//! owned children. Conflicts print paths in the human form
//! `.spec.containers[name="web"].image`.
//!
//! This module must NOT decide what is owned (see [`mod@crate::apply`]); it only
//! represents, encodes and decodes sets.

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Map, Value};

use crate::gofmt;

/// One step of a field path. The variant order is the order of the
/// wire form (fields before keys before values before indices).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathElement {
    /// A field of an object: `f:name`.
    Field(String),
    /// An item of an associative list, by its key fields: the canonical JSON
    /// object of those fields with sorted keys, e.g. `{"name":"web"}`.
    Key(String),
    /// A member of a set: the canonical JSON of the scalar, e.g. `"x"`.
    Value(String),
    /// A list index (only ever decoded; this crate owns atomic lists whole).
    Index(usize),
}

impl PathElement {
    /// A key element from `(name, value)` pairs (sorted here).
    pub fn key(mut fields: Vec<(String, Value)>) -> Self {
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        let map: Map<String, Value> = fields.into_iter().collect();
        Self::Key(Value::Object(map).to_string())
    }

    /// A set-member element for a scalar.
    pub fn value(v: &Value) -> Self {
        Self::Value(v.to_string())
    }

    /// The `FieldsV1` form: `f:name`, `k:{...}`, `v:...`, `i:3`.
    pub fn to_fields_v1(&self) -> String {
        match self {
            Self::Field(n) => format!("f:{n}"),
            Self::Key(k) => format!("k:{k}"),
            Self::Value(v) => format!("v:{v}"),
            Self::Index(i) => format!("i:{i}"),
        }
    }

    /// Parses a `FieldsV1` key. `Ok(None)` for a prefix this version does
    /// not know (skipped, as the API server does).
    ///
    /// # Errors
    /// A message when a known prefix carries malformed content.
    pub fn from_fields_v1(s: &str) -> Result<Option<Self>, String> {
        let Some((prefix, rest)) = s.split_once(':') else {
            return Ok(None);
        };
        match prefix {
            "f" => Ok(Some(Self::Field(rest.to_string()))),
            "k" => match serde_json::from_str::<Value>(rest) {
                Ok(Value::Object(m)) => Ok(Some(Self::key(m.into_iter().collect()))),
                _ => Err(format!("malformed key path element {}", gofmt::quote(s))),
            },
            "v" => match serde_json::from_str::<Value>(rest) {
                Ok(v) => Ok(Some(Self::value(&v))),
                Err(_) => Err(format!("malformed value path element {}", gofmt::quote(s))),
            },
            "i" => rest
                .parse::<usize>()
                .map(|i| Some(Self::Index(i)))
                .map_err(|_| format!("malformed index path element {}", gofmt::quote(s))),
            _ => Ok(None),
        }
    }
}

/// Prints a scalar the way structured-merge-diff's `value.ToString` does.
fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => gofmt::quote(s),
        Value::Null => "null".to_string(),
        other => other.to_string(),
    }
}

impl fmt::Display for PathElement {
    /// The human form used in conflict messages: `.name`,
    /// `[name="web",port=80]`, `[="x"]`, `[3]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Field(n) => write!(f, ".{n}"),
            Self::Key(k) => {
                let parts: Vec<String> = match serde_json::from_str::<Value>(k) {
                    Ok(Value::Object(m)) => m
                        .iter()
                        .map(|(n, v)| format!("{n}={}", value_text(v)))
                        .collect(),
                    _ => vec![k.clone()],
                };
                write!(f, "[{}]", parts.join(","))
            }
            Self::Value(v) => match serde_json::from_str::<Value>(v) {
                Ok(v) => write!(f, "[={}]", value_text(&v)),
                Err(_) => write!(f, "[={v}]"),
            },
            Self::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A path from the object root.
pub type FieldPath = Vec<PathElement>;

/// A set of owned paths.
pub type FieldSet = BTreeSet<FieldPath>;

/// The human form of a path, e.g. `.data.key`.
pub fn path_to_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// Encodes a set as its `FieldsV1` trie.
pub fn to_fields_v1(set: &FieldSet) -> Value {
    let paths: Vec<&[PathElement]> = set
        .iter()
        .map(Vec::as_slice)
        .filter(|p| !p.is_empty())
        .collect();
    Value::Object(encode_level(&paths))
}

/// Encodes paths that share a parent (already relative to it, sorted).
fn encode_level(paths: &[&[PathElement]]) -> Map<String, Value> {
    let mut out = Map::new();
    let mut i = 0;
    while let Some(first) = paths.get(i).and_then(|p| p.first()) {
        let mut j = i;
        let mut member = false;
        let mut rest: Vec<&[PathElement]> = Vec::new();
        while let Some(p) = paths.get(j) {
            match p.split_first() {
                Some((head, tail)) if head == first => {
                    if tail.is_empty() {
                        member = true;
                    } else {
                        rest.push(tail);
                    }
                    j += 1;
                }
                _ => break,
            }
        }
        let mut node = Map::new();
        if !rest.is_empty() {
            if member {
                node.insert(".".to_string(), Value::Object(Map::new()));
            }
            node.extend(encode_level(&rest));
        }
        out.insert(first.to_fields_v1(), Value::Object(node));
        i = j.max(i + 1);
    }
    out
}

/// Decodes a `FieldsV1` trie. Unknown element prefixes are skipped.
///
/// # Errors
/// A message when the trie is not made of objects or an element is
/// malformed.
pub fn from_fields_v1(v: &Value) -> Result<FieldSet, String> {
    let mut set = FieldSet::new();
    let mut prefix = Vec::new();
    decode_level(v, &mut prefix, &mut set)?;
    Ok(set)
}

/// Decodes one node; returns whether the node itself is a member.
fn decode_level(v: &Value, prefix: &mut FieldPath, set: &mut FieldSet) -> Result<bool, String> {
    // Bound the recursion: real tries are a few dozen levels deep; a deeper
    // one is garbage (or hostile) and must not overflow the stack.
    const MAX_DEPTH: usize = 256;
    if prefix.len() > MAX_DEPTH {
        return Err("fieldsV1 nested too deeply".to_string());
    }
    let Value::Object(m) = v else {
        return Err(format!("fieldsV1 node must be an object, got {v}"));
    };
    let mut dot = false;
    let mut children = false;
    for (k, child) in m {
        if k == "." {
            dot = true;
            continue;
        }
        let Some(pe) = PathElement::from_fields_v1(k)? else {
            continue;
        };
        children = true;
        prefix.push(pe);
        let member = decode_level(child, prefix, set)?;
        if member {
            set.insert(prefix.clone());
        }
        prefix.pop();
    }
    Ok(dot || !children)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn f(s: &str) -> PathElement {
        PathElement::Field(s.into())
    }

    #[test]
    fn encodes_the_server_format() {
        let key = PathElement::key(vec![("name".into(), json!("web"))]);
        let set: FieldSet = [
            vec![f("metadata"), f("labels"), f("app")],
            vec![f("data"), f("key")],
            vec![f("spec"), f("containers"), key.clone()],
            vec![f("spec"), f("containers"), key.clone(), f("image")],
            vec![f("spec"), f("containers"), key, f("name")],
            vec![
                f("metadata"),
                f("finalizers"),
                PathElement::value(&json!("x")),
            ],
        ]
        .into_iter()
        .collect();
        let v = to_fields_v1(&set);
        assert_eq!(
            v.to_string(),
            r#"{"f:data":{"f:key":{}},"f:metadata":{"f:finalizers":{"v:\"x\"":{}},"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:name":{}}}}}"#
        );
        assert_eq!(from_fields_v1(&v).unwrap(), set);
    }

    #[test]
    fn keys_are_canonical() {
        let a = PathElement::key(vec![
            ("protocol".into(), json!("TCP")),
            ("port".into(), json!(80)),
        ]);
        assert_eq!(
            a,
            PathElement::Key(r#"{"port":80,"protocol":"TCP"}"#.into())
        );
        assert_eq!(
            PathElement::from_fields_v1(r#"k:{"protocol":"TCP","port":80}"#).unwrap(),
            Some(a.clone())
        );
        assert_eq!(a.to_string(), r#"[port=80,protocol="TCP"]"#);
        assert_eq!(
            path_to_string(&[f("spec"), f("ports"), a, f("targetPort")]),
            r#".spec.ports[port=80,protocol="TCP"].targetPort"#
        );
        assert_eq!(PathElement::value(&json!("a")).to_string(), r#"[="a"]"#);
        assert_eq!(PathElement::Index(2).to_string(), "[2]");
    }

    #[test]
    fn decoding_tolerates_unknown_prefixes_and_rejects_garbage() {
        let set = from_fields_v1(&json!({"f:a": {}, "z:future": {}, "f:b": {"x:y": {}}})).unwrap();
        assert_eq!(set.len(), 2, "{set:?}");
        assert!(from_fields_v1(&json!({"f:a": 1})).is_err());
        assert!(from_fields_v1(&json!([1])).is_err());
        assert!(from_fields_v1(&json!({"k:notjson": {}})).is_err());
        assert!(from_fields_v1(&json!({"i:-1": {}})).is_err());
        let mut deep = json!({});
        for _ in 0..400 {
            deep = json!({ "f:a": deep });
        }
        assert!(from_fields_v1(&deep).is_err());
    }

    fn arb_element() -> impl Strategy<Value = PathElement> {
        prop_oneof![
            "[a-c.]{1,3}".prop_map(PathElement::Field),
            ("[a-c]{1,2}", "[x-z]{0,2}").prop_map(|(k, v)| PathElement::key(vec![(k, json!(v))])),
            any::<i8>().prop_map(|v| PathElement::value(&json!(v))),
            (0usize..4).prop_map(PathElement::Index),
        ]
    }

    proptest! {
        #[test]
        fn fields_v1_round_trips(paths in proptest::collection::btree_set(proptest::collection::vec(arb_element(), 1..4), 0..8)) {
            let v = to_fields_v1(&paths);
            prop_assert_eq!(from_fields_v1(&v).unwrap(), paths);
        }

        #[test]
        fn decoding_random_json_never_panics(s in any::<String>(), n in any::<i64>()) {
            let _ = from_fields_v1(&json!({ s.clone(): {"f:x": n} }));
            let _ = from_fields_v1(&json!({ s.clone(): {} }));
            let _ = PathElement::from_fields_v1(&s);
        }
    }
}
