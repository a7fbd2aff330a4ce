//! Ownership marks: how mirra recognises the copies it wrote.
//!
//! Every copy carries
//!
//! - the label [`MANAGED_BY_LABEL`]`: `[`MANAGED_BY_VALUE`] (so the controller
//!   can watch only its own copies with a label selector),
//! - the annotation [`OWNER_ANNOTATION`]`: <namespace>/<name>` naming the
//!   SyncConfig that wants it,
//! - the annotation [`HASH_ANNOTATION`] with a hash of everything else mirra
//!   wrote (see [`crate::desired`]), so that a field removed from the spec is
//!   noticed even though the observed copy still has it,
//! - and, when the SyncConfig opted out of pruning, [`PRUNE_ANNOTATION`]`:
//!   "false"`. The opt-out is copied onto each copy because the decision to
//!   prune is often made after the SyncConfig is gone (deleted): the copy
//!   itself then says whether it may be removed.
//!
//! An object is mirra's only if it has BOTH the label and a well-formed owner
//! annotation. What this module must NOT do: treat anything else as mirra's.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;
use sha1::{Digest, Sha1};

use crate::refs::ConfigRef;

/// The label every copy carries.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// The value of [`MANAGED_BY_LABEL`] on mirra's copies.
pub const MANAGED_BY_VALUE: &str = "mirra";
/// The annotation naming the SyncConfig (`namespace/name`) a copy belongs to.
pub const OWNER_ANNOTATION: &str = "sync.appuio.ch/syncconfig";
/// On a SyncConfig: `"false"` keeps its copies when they are no longer wanted
/// (item removed, namespace no longer selected, SyncConfig deleted). Copied
/// onto each copy so the choice survives the SyncConfig.
pub const PRUNE_ANNOTATION: &str = "sync.appuio.ch/prune";
/// The annotation holding the hash of the content mirra wrote.
pub const HASH_ANNOTATION: &str = "sync.appuio.ch/content-hash";
/// The field manager mirra's server-side applies use.
pub const FIELD_MANAGER: &str = "mirra";

/// The SyncConfig an object belongs to, if it carries both of mirra's marks.
pub fn owner_of(
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
) -> Option<ConfigRef> {
    if labels.get(MANAGED_BY_LABEL).map(String::as_str) != Some(MANAGED_BY_VALUE) {
        return None;
    }
    ConfigRef::parse(annotations.get(OWNER_ANNOTATION)?)
}

/// Whether a prune annotation value opts out of pruning. Only `false` (any
/// case, surrounding spaces ignored) does; anything else, including a typo,
/// keeps the default of pruning, as the annotation's absence would.
pub fn prune_opted_out(value: Option<&str>) -> bool {
    value.is_some_and(|v| v.trim().eq_ignore_ascii_case("false"))
}

/// A stable hash of a JSON value: SHA-1 over a canonical serialization (map
/// keys sorted), as 40 hex digits. Stable across key order and across
/// versions of this program, so a restart never rewrites every copy. SHA-1 is
/// used for change detection only, not for security.
pub fn content_hash(value: &Value) -> String {
    let mut text = String::new();
    canonical_json(value, &mut text);
    let digest = Sha1::digest(text.as_bytes());
    let mut out = String::with_capacity(40);
    for byte in digest {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// Serializes with map keys sorted; numbers and strings as serde_json writes
/// them.
fn canonical_json(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical_json(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(v, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn ownership_needs_both_marks() {
        let owned_labels = map(&[(MANAGED_BY_LABEL, MANAGED_BY_VALUE)]);
        let owner = map(&[(OWNER_ANNOTATION, "ops/base")]);
        let cases = [
            (
                owned_labels.clone(),
                owner.clone(),
                Some(ConfigRef::new("ops", "base")),
            ),
            (map(&[]), owner.clone(), None),
            (map(&[(MANAGED_BY_LABEL, "helm")]), owner.clone(), None),
            (owned_labels.clone(), map(&[]), None),
            (
                owned_labels.clone(),
                map(&[(OWNER_ANNOTATION, "garbage")]),
                None,
            ),
        ];
        for (labels, annotations, want) in cases {
            assert_eq!(
                owner_of(&labels, &annotations),
                want,
                "{labels:?} {annotations:?}"
            );
        }
    }

    #[test]
    fn prune_opt_out_values() {
        assert!(prune_opted_out(Some("false")));
        assert!(prune_opted_out(Some(" False ")));
        assert!(!prune_opted_out(Some("true")));
        assert!(!prune_opted_out(Some("no")));
        assert!(!prune_opted_out(Some("")));
        assert!(!prune_opted_out(None));
    }

    #[test]
    fn hash_ignores_key_order_but_not_content() {
        let a: Value = serde_json::from_str(r#"{"a":1,"b":{"x":[1,2],"y":"s"}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"b":{"y":"s","x":[1,2]},"a":1}"#).unwrap();
        assert_eq!(content_hash(&a), content_hash(&b));
        assert_ne!(
            content_hash(&a),
            content_hash(&json!({"a":1,"b":{"x":[2,1],"y":"s"}}))
        );
        assert_ne!(
            content_hash(&a),
            content_hash(&json!({"a":1.5,"b":{"x":[1,2],"y":"s"}}))
        );
        assert_eq!(content_hash(&a).len(), 40);
        // A pinned value: the hash must not change between releases, or every
        // copy in every cluster would be rewritten after an upgrade.
        assert_eq!(
            content_hash(&json!({})),
            "bf21a9e8fbc5a3846fb05b4fa0859e0917b2202f"
        );
    }

    proptest! {
        #[test]
        fn hash_is_deterministic(s in "[a-z]{0,10}", n in any::<i64>()) {
            let v = json!({"s": s, "n": n});
            prop_assert_eq!(content_hash(&v), content_hash(&v.clone()));
        }
    }
}
