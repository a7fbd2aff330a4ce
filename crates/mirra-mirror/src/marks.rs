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
//! - on a copy of a cluster-scoped kind, [`FOR_NAMESPACE_ANNOTATION`]
//!   naming the namespace it was made for (one such object per selected
//!   namespace),
//! - and, when the SyncConfig opted out of pruning, [`PRUNE_ANNOTATION`]`:
//!   "false"`. The opt-out is copied onto each copy because the decision to
//!   prune is often made after the SyncConfig is gone (deleted): the copy
//!   itself then says whether it may be removed.
//!
//! An object is mirra's only if it has BOTH the label and a well-formed owner
//! annotation AND its `managedFields` show that mirra's own server-side
//! apply (field manager [`FIELD_MANAGER`], operation `Apply`) wrote both:
//! marks someone else added (a copied manifest, a hand-made label) make
//! nothing mirra's, so mirra never deletes or overwrites such an object on
//! the strength of them ([`marks_written_by_mirra`]). The caches keep only
//! that proof of a copy's managedFields ([`ownership_proof_entry`]).
//!
//! A copy of an object that existed before mirra applied it (mirra adopted
//! it: a syncItem named it) carries [`ADOPTED_ANNOTATION`]`: "true"`; when
//! it is no longer wanted it is released (mirra's fields and marks
//! removed), never deleted.
//!
//! What this module must NOT do: treat anything else as mirra's.

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
/// On a copy of a cluster-scoped kind: the namespace it was made for.
/// Such an object has no namespace of its own, so this mark is what ties
/// it to the namespace whose selection, pruning and start-up sweep it
/// follows, as a namespaced copy follows its own namespace.
pub const FOR_NAMESPACE_ANNOTATION: &str = "sync.appuio.ch/for-namespace";
/// On a copy of a SyncConfig that names a ServiceAccount: that account's
/// name (in the SyncConfig's namespace). Once the SyncConfig is gone, the
/// copy is still pruned as that account, never with mirra's own rights.
pub const SERVICE_ACCOUNT_ANNOTATION: &str = "sync.appuio.ch/service-account";
/// The field manager mirra's server-side applies use.
pub const FIELD_MANAGER: &str = "mirra";
/// On a copy: `"true"` when the object existed before mirra first applied
/// it. Such a copy is released, not deleted, when no longer wanted.
pub const ADOPTED_ANNOTATION: &str = "sync.appuio.ch/adopted";

/// The `fieldsType` of the compact proof [`ownership_proof_entry`]. The
/// API server accepts no `fieldsType` but `FieldsV1`, so an entry of this
/// type never comes from the server: only mirra's caches hold it.
pub const PROOF_FIELDS_TYPE: &str = "mirra.proof/marks";
/// The `fieldsV1` paths of the marks mirra's apply entry must own: the
/// [`MANAGED_BY_LABEL`] label and the [`OWNER_ANNOTATION`] annotation
/// (spelt out: read for every watched copy; a test holds them equal).
const MARK_PATHS: [[&str; 3]; 2] = [
    ["f:metadata", "f:labels", "f:app.kubernetes.io/managed-by"],
    ["f:metadata", "f:annotations", "f:sync.appuio.ch/syncconfig"],
];

fn is_mirra_apply(entry: &Value) -> bool {
    is_mirra_apply_entry(
        entry.get("manager").and_then(Value::as_str),
        entry.get("operation").and_then(Value::as_str),
    )
}

/// Whether a managedFields entry with this `manager` and `operation` is
/// mirra's own server-side apply (an `Update` under mirra's name is not).
pub fn is_mirra_apply_entry(manager: Option<&str>, operation: Option<&str>) -> bool {
    manager == Some(FIELD_MANAGER) && operation == Some("Apply")
}

fn owns(fields: &Value, path: &[&str]) -> bool {
    path.iter()
        .try_fold(fields, |at, key| at.get(key))
        .is_some()
}

/// Whether one managedFields entry (its `manager`, `operation`,
/// `fieldsType` and `fieldsV1`) is mirra's apply owning both marks, or the
/// proof the caches keep of one: the test of [`marks_written_by_mirra`],
/// for callers holding typed entries.
pub fn entry_proves_marks(
    manager: Option<&str>,
    operation: Option<&str>,
    fields_type: Option<&str>,
    fields_v1: Option<&Value>,
) -> bool {
    is_mirra_apply_entry(manager, operation)
        && (fields_type == Some(PROOF_FIELDS_TYPE)
            || fields_v1.is_some_and(|f| MARK_PATHS.iter().all(|p| owns(f, p))))
}

/// Whether an object's `metadata.managedFields` show that mirra's own
/// server-side apply owns both of its marks (the managed-by label and the
/// owner annotation). Anything else (no managedFields, another manager,
/// an `Update` entry of a client that borrowed mirra's name) is no proof.
pub fn marks_written_by_mirra(managed_fields: Option<&Value>) -> bool {
    let Some(entries) = managed_fields.and_then(Value::as_array) else {
        return false;
    };
    entries.iter().any(|e| {
        let s = |k: &str| e.get(k).and_then(Value::as_str);
        entry_proves_marks(
            s("manager"),
            s("operation"),
            s("fieldsType"),
            e.get("fieldsV1"),
        )
    })
}

/// Whether someone other than mirra's apply has an entry in
/// `managedFields`: after mirra's first apply of an object it believed
/// absent, that means the object existed before (mirra adopted it).
pub fn has_other_managers(managed_fields: Option<&Value>) -> bool {
    managed_fields
        .and_then(Value::as_array)
        .is_some_and(|entries| entries.iter().any(|e| !is_mirra_apply(e)))
}

/// The one managedFields entry the caches keep of a copy whose entries
/// prove mirra wrote its marks ([`marks_written_by_mirra`]): mirra's apply
/// with the [`PROOF_FIELDS_TYPE`] and no fields. A few dozen bytes per
/// cached copy rather than a field tree often larger than the object.
pub fn ownership_proof_entry() -> k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry
{
    k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry {
        manager: Some(FIELD_MANAGER.to_string()),
        operation: Some("Apply".to_string()),
        fields_type: Some(PROOF_FIELDS_TYPE.to_string()),
        ..Default::default()
    }
}

/// Whether an adopted-annotation value says the copy was adopted (only
/// `"true"`).
pub fn is_adopted(value: Option<&str>) -> bool {
    value == Some("true")
}

/// The SyncConfig an object belongs to, if it carries both of mirra's
/// marks: `managed_by` is its [`MANAGED_BY_LABEL`] label, `owner` its
/// [`OWNER_ANNOTATION`].
pub fn owner_of(managed_by: Option<&str>, owner: Option<&str>) -> Option<ConfigRef> {
    if managed_by != Some(MANAGED_BY_VALUE) {
        return None;
    }
    ConfigRef::parse(owner?)
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
    // Built in one buffer: a plan hashes every body it compares or sends,
    // and an allocation per key and string showed in profiles.
    let mut text = Vec::with_capacity(256);
    canonical_json(value, &mut text);
    sha1_hex(&text)
}

/// SHA-1 of `bytes` as 40 hex digits.
pub(crate) fn sha1_hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha1::digest(bytes);
    let mut out = String::with_capacity(40);
    for byte in digest {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    out
}

/// Serializes with map keys sorted; numbers and strings as serde_json writes
/// them (the compact form).
fn canonical_json(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_compact(k, out);
                out.push(b':');
                canonical_json(v, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical_json(v, out);
            }
            out.push(b']');
        }
        other => write_compact(other, out),
    }
}

/// serde_json's compact form of a key or a scalar, appended to `out`.
fn write_compact<T: serde::Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) {
    // Writing a string, number, bool or null into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;
    use std::collections::BTreeMap;

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
                owner_of(
                    labels.get(MANAGED_BY_LABEL).map(String::as_str),
                    annotations.get(OWNER_ANNOTATION).map(String::as_str)
                ),
                want,
                "{labels:?} {annotations:?}"
            );
        }
    }

    fn mirra_entry(fields: Value) -> Value {
        json!({"manager": FIELD_MANAGER, "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": fields})
    }

    fn marks_fields() -> Value {
        json!({"f:metadata": {
            "f:labels": {format!("f:{MANAGED_BY_LABEL}"): {}, "f:team": {}},
            "f:annotations": {format!("f:{OWNER_ANNOTATION}"): {}, format!("f:{HASH_ANNOTATION}"): {}}
        }, "f:data": {"f:k": {}}})
    }

    #[test]
    fn only_mirras_own_apply_of_both_marks_is_proof() {
        let proof = json!([mirra_entry(marks_fields())]);
        assert!(marks_written_by_mirra(Some(&proof)));
        // Someone else wrote the marks (kubectl, a copied manifest).
        let other = json!([{"manager": "kubectl-client-side-apply", "operation": "Update",
            "fieldsType": "FieldsV1", "fieldsV1": marks_fields()}]);
        assert!(!marks_written_by_mirra(Some(&other)));
        // mirra's name on an Update (a client that borrowed it) is no proof.
        let mut update = mirra_entry(marks_fields());
        update["operation"] = json!("Update");
        assert!(!marks_written_by_mirra(Some(&json!([update]))));
        // mirra applied the object but someone else added the owner mark.
        let partial = json!([mirra_entry(
            json!({"f:metadata": {"f:labels": {format!("f:{MANAGED_BY_LABEL}"): {}}}})
        )]);
        assert!(!marks_written_by_mirra(Some(&partial)));
        assert!(!marks_written_by_mirra(None));
        assert!(!marks_written_by_mirra(Some(&json!("junk"))));
        assert!(!marks_written_by_mirra(Some(
            &json!([1, null, {"manager": FIELD_MANAGER}])
        )));
    }

    #[test]
    fn the_proof_keeps_only_the_marks_and_still_proves() {
        let all = json!([
            {"manager": "kubectl-edit", "operation": "Update", "fieldsV1": {"f:data": {}}},
            mirra_entry(marks_fields())
        ]);
        assert!(marks_written_by_mirra(Some(&all)));
        let proof = serde_json::to_value(vec![ownership_proof_entry()]).unwrap();
        assert_eq!(
            proof,
            json!([{"manager": FIELD_MANAGER, "operation": "Apply",
                    "fieldsType": PROOF_FIELDS_TYPE}])
        );
        assert!(marks_written_by_mirra(Some(&proof)));
        assert!(has_other_managers(Some(&all)));
        assert!(!has_other_managers(Some(&proof)));
        // The compact type proves only in mirra's own Apply entry.
        let borrowed = json!([{"manager": FIELD_MANAGER, "operation": "Update",
                               "fieldsType": PROOF_FIELDS_TYPE}]);
        assert!(!marks_written_by_mirra(Some(&borrowed)));
    }

    #[test]
    fn the_mark_paths_name_the_marks() {
        assert_eq!(
            MARK_PATHS[0],
            ["f:metadata", "f:labels", &format!("f:{MANAGED_BY_LABEL}")]
        );
        assert_eq!(
            MARK_PATHS[1],
            [
                "f:metadata",
                "f:annotations",
                &format!("f:{OWNER_ANNOTATION}")
            ]
        );
    }

    #[test]
    fn adopted_values() {
        assert!(is_adopted(Some("true")));
        assert!(!is_adopted(Some("True ")));
        assert!(!is_adopted(None));
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

    /// The canonical form as it was first written (a String built from
    /// each key and scalar's own serialization): the form every deployed
    /// copy's hash was made with, which the faster one must equal.
    fn reference_canonical_json(value: &Value, out: &mut String) {
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
                    reference_canonical_json(v, out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    reference_canonical_json(v, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }

    fn json_value() -> impl Strategy<Value = Value> {
        crate::test_json::json_tree(any::<String>(), any::<String>())
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
        // Escapes, a non-ASCII character, numbers, nesting.
        assert_eq!(
            content_hash(&json!({"b": ["é\u{1}\"\\\n", 1.5, -3, null, true],
                "a": {"z": {}, "y": []}, "k\t": "v"})),
            "8e29ef2d8f4881cd55390a6a8b9ad0072ec47b36"
        );
    }

    proptest! {
        #[test]
        fn the_canonical_form_is_the_one_hashes_were_first_made_with(v in json_value()) {
            let mut fast = Vec::new();
            canonical_json(&v, &mut fast);
            let mut reference = String::new();
            reference_canonical_json(&v, &mut reference);
            prop_assert_eq!(String::from_utf8(fast).unwrap(), reference.clone());
            prop_assert_eq!(content_hash(&v), {
                let digest = Sha1::digest(reference.as_bytes());
                digest.iter().map(|b| format!("{b:02x}")).collect::<String>()
            });
        }

        #[test]
        fn hash_is_deterministic(s in "[a-z]{0,10}", n in any::<i64>()) {
            let v = json!({"s": s, "n": n});
            prop_assert_eq!(content_hash(&v), content_hash(&v.clone()));
        }

        #[test]
        fn the_proof_proves_exactly_what_the_whole_list_proves(
            manager in prop_oneof![Just(FIELD_MANAGER.to_string()), "[a-z]{1,6}"],
            operation in prop_oneof![Just("Apply"), Just("Update")],
            label in any::<bool>(),
            owner in any::<bool>(),
        ) {
            let mut fields = json!({"f:metadata": {"f:labels": {}, "f:annotations": {}}, "f:data": {}});
            if label { fields["f:metadata"]["f:labels"][format!("f:{MANAGED_BY_LABEL}")] = json!({}); }
            if owner { fields["f:metadata"]["f:annotations"][format!("f:{OWNER_ANNOTATION}")] = json!({}); }
            let list = json!([{"manager": manager, "operation": operation, "fieldsV1": fields}]);
            let proven = marks_written_by_mirra(Some(&list));
            let proof = proven.then(|| serde_json::to_value(vec![ownership_proof_entry()]).unwrap());
            prop_assert_eq!(proven, marks_written_by_mirra(proof.as_ref()));
        }
    }
}
