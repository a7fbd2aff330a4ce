//! The desired copy of one syncItem in one namespace, exactly as mirra will
//! server-side apply it, and the test for whether an observed copy already
//! matches it.
//!
//! Building a copy: template the item for the namespace, set
//! `metadata.namespace`, normalise what the API server would rewrite (a
//! Secret's write-only `stringData` becomes base64 `data`), add the ownership
//! marks, and finally the hash of all of that as [`HASH_ANNOTATION`].
//!
//! Comparing ([`is_subset`]): an Apply is needed iff the desired copy is NOT
//! contained in the observed object, where
//!
//! - maps are compared key by key, and only the desired keys: labels,
//!   annotations, finalizers, data keys and any field added by someone else
//!   are ignored;
//! - a desired key missing from the observed object is fine only when its
//!   value is "empty" (null, false, 0, "", {} or []), because the API server
//!   drops such values on many types;
//! - a desired `null` matches anything (in an apply it means "not set");
//! - lists are compared in order: the desired elements must match (each as a
//!   subset) a subsequence of the observed elements, so defaults the server
//!   fills into list elements and elements other managers merged into an
//!   associative list do not count as drift;
//! - numbers compare by value (`1` equals `1.0`), strings and booleans
//!   exactly; an observed string the controller's cache replaced by its
//!   digest ([`digest_large_strings`]) equals a desired string with that
//!   digest.
//!
//! Because the hash annotation is itself part of the desired copy, a field
//! REMOVED from the spec changes the hash and is caught, although the
//! observed copy still carries the old field. Known limit: a value the server
//! normalises (a quantity `1000m` stored as `1`) reads as drift and is
//! re-applied on every verification pass; write such values canonically.
//!
//! What this module must NOT do: look at anything but the one item and the
//! one observed object.

use std::borrow::Cow;

use base64::Engine as _;
use serde_json::{Map, Value};

use crate::compile::{CompiledConfig, SyncTemplate};
use crate::marks::{
    ADOPTED_ANNOTATION, HASH_ANNOTATION, MANAGED_BY_LABEL, MANAGED_BY_VALUE, OWNER_ANNOTATION,
    PRUNE_ANNOTATION, SERVICE_ACCOUNT_ANNOTATION, content_hash,
};
use crate::names::{check_name, strict_name_rule};
use crate::refs::ObjectRef;
use crate::template::template_value;

/// A copy ready to apply.
#[derive(Debug, Clone, PartialEq)]
pub struct DesiredCopy {
    /// Where it goes.
    pub target: ObjectRef,
    /// The full server-side apply body, marks and hash included.
    pub body: Value,
}

/// Builds the copy of `item` for `namespace`. `Err` explains why this item
/// cannot be written to this namespace (e.g. its templated name is invalid).
pub fn desired_copy(
    config: &CompiledConfig,
    item: &SyncTemplate,
    namespace: &str,
) -> Result<DesiredCopy, String> {
    let mut body = item.body.clone();
    template_value(&mut body, namespace);
    let Value::Object(obj) = &mut body else {
        return Err("item is not an object".into());
    };
    let meta = object_entry(obj, "metadata")?;
    let name = match meta.get("name") {
        Some(Value::String(n)) => n.clone(),
        _ => return Err("metadata.name is not a string".into()),
    };
    check_name(&name, strict_name_rule(&item.group, &item.kind))
        .map_err(|e| format!("name {name:?} for namespace {namespace:?} {e}"))?;
    meta.insert("namespace".into(), Value::String(namespace.into()));

    let labels = object_entry(meta, "labels")?;
    labels.insert(MANAGED_BY_LABEL.into(), MANAGED_BY_VALUE.into());
    let annotations = object_entry(meta, "annotations")?;
    annotations.remove(HASH_ANNOTATION);
    annotations.insert(
        OWNER_ANNOTATION.into(),
        Value::String(config.key.to_string()),
    );
    if !config.prune {
        annotations.insert(PRUNE_ANNOTATION.into(), "false".into());
    }
    if let Some(sa) = &config.service_account {
        annotations.insert(SERVICE_ACCOUNT_ANNOTATION.into(), Value::String(sa.clone()));
    }

    if item.group.is_empty() && item.kind == "Secret" {
        if obj.get("type").and_then(Value::as_str) == Some(SERVICE_ACCOUNT_TOKEN) {
            return Err(format!(
                "Secrets of type {SERVICE_ACCOUNT_TOKEN} are never copied: they carry a \
                 service account's credentials, and the API server would fill in a token \
                 for the service account of each namespace"
            ));
        }
        normalise_secret(obj)?;
    }

    let hash = content_hash(&body);
    if let Some(Value::Object(annotations)) = body.pointer_mut("/metadata/annotations") {
        annotations.insert(HASH_ANNOTATION.into(), Value::String(hash));
    }
    Ok(DesiredCopy {
        target: ObjectRef {
            api_version: item.api_version.as_str().into(),
            kind: item.kind.as_str().into(),
            namespace: namespace.into(),
            name: name.into(),
        },
        body,
    })
}

/// What tells two apply bodies apart, for "is this the body mirra sent
/// last?": a body [`desired_copy`] built carries the hash of everything
/// else in it as [`HASH_ANNOTATION`], added last, so that annotation names
/// the whole body and the body need not be serialized and hashed again (a
/// SyncConfig edit asks this of every copy it writes, more than once).
/// The one mark added after the hash, the adoption mark
/// ([`crate::with_adopted_mark`]), makes the body hashed whole, as
/// is a body without the annotation.
pub fn body_id(body: &Value) -> Cow<'_, str> {
    let annotations = body.get("metadata").and_then(|m| m.get("annotations"));
    let adopted = annotations.is_some_and(|a| a.get(ADOPTED_ANNOTATION).is_some());
    match annotations
        .and_then(|a| a.get(HASH_ANNOTATION))
        .and_then(Value::as_str)
    {
        Some(hash) if !adopted => Cow::Borrowed(hash),
        _ => Cow::Owned(content_hash(body)),
    }
}

/// The Secret type mirra refuses to copy.
pub const SERVICE_ACCOUNT_TOKEN: &str = "kubernetes.io/service-account-token";

/// `message` with every value of the Secret `body` (its `data` values,
/// base64 and decoded, and `stringData` values) replaced by `[redacted]`:
/// API error texts may quote what was sent, and a Secret's values must
/// never reach a status, an Event or a log. Values shorter than 3 bytes
/// are left: replacing every `a` would make the message unreadable, and
/// such values protect nothing.
pub fn redact_secret_values(message: &str, body: &Value) -> String {
    let mut values: Vec<String> = Vec::new();
    for field in ["data", "stringData"] {
        if let Some(Value::Object(m)) = body.get(field) {
            for v in m.values().filter_map(Value::as_str) {
                values.push(v.to_string());
                if field == "data"
                    && let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(v)
                    && let Ok(text) = String::from_utf8(bytes)
                {
                    values.push(text);
                }
            }
        }
    }
    // Longest first, so a value containing another is replaced whole.
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    let mut out = message.to_string();
    for v in values.iter().filter(|v| v.len() >= 3) {
        out = out.replace(v.as_str(), "[redacted]");
    }
    out
}

/// The map under `key`, created when absent or null.
fn object_entry<'m>(
    map: &'m mut Map<String, Value>,
    key: &str,
) -> Result<&'m mut Map<String, Value>, String> {
    let entry = map
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if entry.is_null() {
        *entry = Value::Object(Map::new());
    }
    entry
        .as_object_mut()
        .ok_or_else(|| format!("{key} is not an object"))
}

/// Folds a Secret's write-only `stringData` into `data` (base64), as the API
/// server does; `stringData` wins over `data` for the same key. Without this
/// the observed Secret never has `stringData` and every comparison differs.
fn normalise_secret(obj: &mut Map<String, Value>) -> Result<(), String> {
    let Some(string_data) = obj.remove("stringData") else {
        return Ok(());
    };
    let string_data = match string_data {
        Value::Null => return Ok(()),
        Value::Object(m) => m,
        _ => return Err("stringData is not a map of strings".into()),
    };
    let data = object_entry(obj, "data")?;
    for (k, v) in string_data {
        let Value::String(s) = v else {
            return Err(format!("stringData[{k:?}] is not a string"));
        };
        let encoded = base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
        data.insert(k, Value::String(encoded));
    }
    Ok(())
}

/// Strings at least this long (bytes) are kept as a digest in the
/// controller's copy caches. 1 KiB: a digest is about 60 bytes, so shorter
/// strings would save little, while the values that make copies large (a
/// certificate bundle, a dashboard, a script) are all longer.
pub const DIGEST_MIN_LEN: usize = 1024;

/// What starts a digest string. The NUL byte keeps it apart from anything a
/// user writes by accident; a string deliberately written like a digest
/// only matches a desired string that has that very digest.
const DIGEST_PREFIX: &str = "\u{0}mirra-sha1:";

/// The digest a long string is replaced by: SHA-1 of its bytes (a second
/// preimage, which is what matching a wanted value would take, is not
/// feasible for SHA-1).
fn string_digest(s: &str) -> String {
    let mut out = String::with_capacity(DIGEST_PREFIX.len() + 40);
    out.push_str(DIGEST_PREFIX);
    out.push_str(&crate::marks::sha1_hex(s.as_bytes()));
    out
}

/// Replaces every string of at least [`DIGEST_MIN_LEN`] bytes outside
/// `metadata` (and `apiVersion` and `kind`) by its digest, in place. For
/// caches of copies: [`is_subset`] compares a desired string with such a
/// digest as it would with the string, so a copy of a megabyte item costs
/// the cache a few hundred bytes, and drift is still seen. Metadata is left
/// whole: names, marks and annotations are read as they are.
pub fn digest_large_strings(object: &mut Value) {
    fn walk(v: &mut Value) {
        match v {
            Value::String(s) if s.len() >= DIGEST_MIN_LEN && !s.starts_with(DIGEST_PREFIX) => {
                *s = string_digest(s);
            }
            Value::Array(a) => a.iter_mut().for_each(walk),
            Value::Object(m) => m.values_mut().for_each(walk),
            _ => {}
        }
    }
    if let Value::Object(m) = object {
        for (k, v) in m.iter_mut() {
            if !matches!(k.as_str(), "metadata" | "apiVersion" | "kind") {
                walk(v);
            }
        }
    }
}

/// Whether every field of `desired` is present and equal in `observed`, by
/// the rules in the module documentation.
pub fn is_subset(desired: &Value, observed: &Value) -> bool {
    match (desired, observed) {
        (Value::Null, _) => true,
        (Value::Object(d), Value::Object(o)) => d.iter().all(|(k, dv)| match o.get(k) {
            Some(ov) => is_subset(dv, ov),
            None => is_empty(dv),
        }),
        (Value::Array(d), Value::Array(o)) => {
            // Greedy matching finds an ordered subsequence whenever one
            // exists: taking the earliest match leaves the most room for the
            // remaining desired elements.
            let mut rest = o.iter();
            d.iter().all(|dv| rest.any(|ov| is_subset(dv, ov)))
        }
        (Value::Number(d), Value::Number(o)) => numbers_equal(d, o),
        (Value::String(d), Value::String(o)) => {
            d == o
                || (d.len() >= DIGEST_MIN_LEN
                    && o.starts_with(DIGEST_PREFIX)
                    && string_digest(d) == *o)
        }
        (d, o) if is_empty(d) && o.is_null() => true,
        (d, o) => d == o,
    }
}

/// Values the API server commonly drops (Go's `omitempty`).
pub(crate) fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.values().all(is_empty),
    }
}

/// Numbers by value: integers exactly, anything involving a float as f64
/// (the API server may store `1.0` as `1`).
fn numbers_equal(a: &serde_json::Number, b: &serde_json::Number) -> bool {
    let int = |n: &serde_json::Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    match (int(a), int(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a.as_f64() == b.as_f64(),
    }
}

#[cfg(test)]
mod redaction_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_values_are_redacted_in_both_encodings() {
        // "s3cr3t-value" and its base64.
        let body = json!({"data": {"k": "czNjcjN0LXZhbHVl"}, "stringData": {"p": "hunter22"}});
        let msg = r#"Secret "x" is invalid: data[k]: Invalid value: "czNjcjN0LXZhbHVl" (s3cr3t-value), stringData: "hunter22""#;
        let out = redact_secret_values(msg, &body);
        assert!(
            !out.contains("czNjcjN0LXZhbHVl")
                && !out.contains("s3cr3t-value")
                && !out.contains("hunter22"),
            "{out}"
        );
        assert_eq!(out.matches("[redacted]").count(), 3, "{out}");
        assert!(out.starts_with(r#"Secret "x" is invalid: data[k]"#));
    }

    #[test]
    fn short_values_and_bodies_without_data_leave_the_message_alone() {
        assert_eq!(
            redact_secret_values("a b c", &json!({"data": {"k": "YQ=="}})),
            "a b c"
        );
        assert_eq!(
            redact_secret_values("text", &json!({"data": "junk"})),
            "text"
        );
        assert_eq!(redact_secret_values("text", &json!(null)), "text");
    }

    proptest::proptest! {
        #[test]
        fn no_value_of_three_bytes_or_more_survives(v in "[a-zA-Z0-9]{3,20}", pre in "[ a-z]{0,10}") {
            let msg = format!("{pre}{v}{pre}");
            let out = redact_secret_values(&msg, &json!({"stringData": {"k": v.clone()}}));
            proptest::prop_assert!(!out.contains(&v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::CompiledConfig;
    use proptest::prelude::*;
    use serde_json::json;

    fn config(prune: bool, items: Value) -> CompiledConfig {
        let mut meta = json!({"name": "base", "namespace": "ops"});
        if !prune {
            meta["annotations"] = json!({PRUNE_ANNOTATION: "false"});
        }
        CompiledConfig::from_json(&json!({
            "metadata": meta,
            "spec": {"namespaceSelector": {"matchNames": [".*"]}, "syncItems": items},
        }))
    }

    fn first_copy(c: &CompiledConfig, ns: &str) -> Result<DesiredCopy, String> {
        desired_copy(c, &c.spec.as_ref().unwrap().sync_items[0], ns)
    }

    #[test]
    fn copy_carries_marks_namespace_and_hash() {
        let c = config(
            true,
            json!([{
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cfg-${PROJECT_NAME}", "namespace": "ignored", "labels": {"team": "x"}},
                "data": {"ns": "${PROJECT_NAME}"},
            }]),
        );
        let copy = first_copy(&c, "team-a").unwrap();
        assert_eq!(copy.target.to_string(), "v1 ConfigMap team-a/cfg-team-a");
        let meta = &copy.body["metadata"];
        assert_eq!(meta["namespace"], "team-a");
        assert_eq!(meta["labels"]["team"], "x");
        assert_eq!(meta["labels"][MANAGED_BY_LABEL], MANAGED_BY_VALUE);
        assert_eq!(meta["annotations"][OWNER_ANNOTATION], "ops/base");
        assert!(meta["annotations"].get(PRUNE_ANNOTATION).is_none());
        assert_eq!(
            meta["annotations"][HASH_ANNOTATION].as_str().unwrap().len(),
            40
        );
        assert_eq!(copy.body["data"]["ns"], "team-a");
    }

    #[test]
    fn prune_opt_out_is_copied_onto_the_copy() {
        let c = config(
            false,
            json!([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}]),
        );
        let copy = first_copy(&c, "n").unwrap();
        assert_eq!(
            copy.body["metadata"]["annotations"][PRUNE_ANNOTATION],
            "false"
        );
    }

    #[test]
    fn hash_changes_when_a_field_is_removed() {
        let with = config(
            true,
            json!([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "1", "b": "2"}}]),
        );
        let without = config(
            true,
            json!([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "1"}}]),
        );
        let old = first_copy(&with, "n").unwrap();
        let new = first_copy(&without, "n").unwrap();
        // Without the hash the new copy would look contained in the old one.
        let mut new_unhashed = new.body.clone();
        new_unhashed["metadata"]["annotations"]
            .as_object_mut()
            .unwrap()
            .remove(HASH_ANNOTATION);
        assert!(is_subset(&new_unhashed, &old.body));
        assert!(!is_subset(&new.body, &old.body));
    }

    #[test]
    fn body_id_is_the_hash_annotation_unless_a_mark_came_after_it() {
        let c = config(
            true,
            json!([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "1"}}]),
        );
        let copy = first_copy(&c, "n").unwrap();
        let hash = copy.body["metadata"]["annotations"][HASH_ANNOTATION]
            .as_str()
            .unwrap();
        assert_eq!(body_id(&copy.body), hash);
        // The adoption mark is added after the hash: the body is hashed whole.
        let adopted = crate::with_adopted_mark(&copy.body);
        assert_eq!(body_id(&adopted), content_hash(&adopted));
        assert_ne!(body_id(&adopted), body_id(&copy.body));
        // Without the annotation (or with a malformed one), hashed whole.
        for body in [
            json!({"metadata": {"name": "x"}}),
            json!({"metadata": {"annotations": {HASH_ANNOTATION: 7}}}),
            json!("not an object"),
        ] {
            assert_eq!(body_id(&body), content_hash(&body), "{body}");
        }
    }

    #[test]
    fn invalid_templated_name_is_an_error_for_that_namespace_only() {
        let c = config(
            true,
            json!([{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "${PROJECT_NAME}"}}]),
        );
        assert!(first_copy(&c, "web").is_ok());
        let err = first_copy(&c, "1team").unwrap_err();
        assert!(err.contains("1team"), "{err}");
    }

    #[test]
    fn secret_string_data_becomes_data() {
        let c = config(
            true,
            json!([{
                "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                "data": {"a": "b2xk", "keep": "eA=="}, "stringData": {"a": "new", "ns": "${PROJECT_NAME}"},
            }]),
        );
        let copy = first_copy(&c, "n1").unwrap();
        assert!(copy.body.get("stringData").is_none());
        assert_eq!(
            copy.body["data"],
            json!({"a": "bmV3", "keep": "eA==", "ns": "bjE="})
        );
        let bad = config(
            true,
            json!([{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"a": 1}}]),
        );
        assert!(first_copy(&bad, "n").is_err());
    }

    #[test]
    fn subset_table() {
        let cases: Vec<(Value, Value, bool)> = vec![
            (json!({"a": 1}), json!({"a": 1, "b": 2}), true),
            (json!({"a": 1}), json!({"a": 2}), false),
            (json!({"a": 1}), json!({}), false),
            (json!({"a": 1.0}), json!({"a": 1}), true),
            (json!({"a": 1.5}), json!({"a": 1}), false),
            (json!({"a": -1}), json!({"a": u64::MAX}), false),
            (
                json!({"labels": {"x": "1"}}),
                json!({"labels": {"x": "1", "other": "y"}}),
                true,
            ),
            (
                json!({"labels": {"x": "1"}}),
                json!({"labels": {"x": "2"}}),
                false,
            ),
            // Empty values the server drops.
            (
                json!({"data": {}, "flag": false, "n": 0, "s": "", "l": [], "z": null}),
                json!({}),
                true,
            ),
            (json!({"flag": true}), json!({}), false),
            // Null desired matches anything.
            (json!({"a": null}), json!({"a": 5}), true),
            // Lists: ordered subsequence of element-wise subsets.
            (
                json!({"p": [{"port": 80}]}),
                json!({"p": [{"port": 80, "protocol": "TCP"}]}),
                true,
            ),
            (
                json!({"p": [{"port": 80}, {"port": 443}]}),
                json!({"p": [{"port": 80}, {"port": 8080}, {"port": 443}]}),
                true,
            ),
            (
                json!({"p": [{"port": 443}, {"port": 80}]}),
                json!({"p": [{"port": 80}, {"port": 443}]}),
                false,
            ),
            (json!({"p": [1, 1]}), json!({"p": [1]}), false),
            (json!({"p": [1]}), json!({"p": []}), false),
            (json!({"s": "a"}), json!({"s": "A"}), false),
            (json!({"s": "a"}), json!({"s": ["a"]}), false),
        ];
        for (i, (d, o, want)) in cases.iter().enumerate() {
            assert_eq!(is_subset(d, o), *want, "case {i}: {d} in {o}");
        }
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-5i64..5).prop_map(Value::from),
            "[a-c]{0,2}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 32, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map("[a-d]", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// What a server-side apply leaves behind, roughly: desired fields win,
    /// fields of others in maps stay.
    fn merge(observed: &Value, desired: &Value) -> Value {
        match (observed, desired) {
            (Value::Object(o), Value::Object(d)) => {
                let mut out = o.clone();
                for (k, dv) in d {
                    let merged = match o.get(k) {
                        Some(ov) => merge(ov, dv),
                        None => dv.clone(),
                    };
                    out.insert(k.clone(), merged);
                }
                Value::Object(out)
            }
            (_, d) => d.clone(),
        }
    }

    proptest! {
        /// Two copies get the same body ID exactly when they are the same
        /// body, as the whole-body hash would say.
        #[test]
        fn body_ids_tell_copies_apart_as_whole_hashes_do(
            a in proptest::collection::btree_map("[a-c]", "[xy]{0,2}", 0..3),
            b in proptest::collection::btree_map("[a-c]", "[xy]{0,2}", 0..3),
            ns_a in "n[12]",
            ns_b in "n[12]",
            adopt_a: bool,
            adopt_b: bool,
        ) {
            let copy = |data: &std::collections::BTreeMap<String, String>, ns: &str, adopt: bool| {
                let c = config(true, json!([{"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "x"}, "data": data}]));
                let body = first_copy(&c, ns).unwrap().body;
                if adopt { crate::with_adopted_mark(&body) } else { body }
            };
            let (x, y) = (copy(&a, &ns_a, adopt_a), copy(&b, &ns_b, adopt_b));
            prop_assert_eq!(body_id(&x) == body_id(&y), content_hash(&x) == content_hash(&y));
        }
    }

    proptest! {
        #[test]
        fn everything_contains_itself(v in arb_json()) {
            prop_assert!(is_subset(&v, &v));
        }

        #[test]
        fn after_apply_the_desired_state_is_contained(o in arb_json(), d in arb_json()) {
            prop_assert!(is_subset(&d, &merge(&o, &d)));
        }

        #[test]
        fn a_changed_leaf_is_noticed(key in "[a-d]", a in 0i64..5, b in 5i64..10) {
            let desired = json!({ key.clone(): a });
            let observed = json!({ key: b });
            prop_assert!(!is_subset(&desired, &observed));
        }
    }

    #[test]
    fn digested_long_strings_compare_as_the_strings() {
        let long = "x".repeat(DIGEST_MIN_LEN);
        let mut observed = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "annotations": {"a": long.clone()}},
            "data": {"big": long.clone(), "small": "s"},
            "list": [long.clone(), 1]});
        digest_large_strings(&mut observed);
        // Metadata whole, the rest digested, short strings untouched.
        assert_eq!(observed["metadata"]["annotations"]["a"], json!(long));
        let digest = observed["data"]["big"].as_str().unwrap().to_string();
        assert!(
            digest.starts_with(DIGEST_PREFIX) && digest.len() < 100,
            "{digest}"
        );
        assert_eq!(observed["data"]["small"], "s");
        assert_eq!(observed["list"][0], json!(digest));
        // Idempotent.
        let again = {
            let mut v = observed.clone();
            digest_large_strings(&mut v);
            v
        };
        assert_eq!(again, observed);
        let desired = json!({"data": {"big": long.clone(), "small": "s"}, "list": [long.clone()]});
        assert!(is_subset(&desired, &observed));
        let mut changed = long.clone();
        changed.replace_range(0..1, "y");
        assert!(!is_subset(&json!({"data": {"big": changed}}), &observed));
        // A short desired string never equals a digest.
        assert!(!is_subset(&json!({"data": {"big": "x"}}), &observed));
    }

    proptest! {
        #[test]
        fn digesting_the_observed_side_never_changes_a_comparison(
            a in "[a-c]{0,3}", b in "[a-c]{0,3}", pad in 1000usize..1100,
        ) {
            let long = |s: &str| format!("{s}{}", "z".repeat(pad));
            let desired = json!({"data": {"k": long(&a), "s": a.clone()}});
            let observed = json!({"data": {"k": long(&b), "s": b.clone()}, "extra": long("e")});
            let mut digested = observed.clone();
            digest_large_strings(&mut digested);
            prop_assert_eq!(is_subset(&desired, &observed), is_subset(&desired, &digested));
        }
    }
}
