//! Custom resources as apiextensions-apiserver serves them: the structural
//! schema of a CustomResourceDefinition version (its `openAPIV3Schema`)
//! prunes, defaults and validates the objects written to it.
//!
//! On every write the real server decodes the body, prunes what the schema
//! does not declare ([`prune`], whose paths become `unknown field "spec.foo"`
//! warnings or the `Strict` 400), drops `null`s the schema does not allow
//! ([`drop_non_nullable_nulls`]), applies `default`s ([`default`]) and
//! validates the result ([`validate`], the causes of the 422). The texts are
//! kube-openapi's validation messages as `kubeOpenAPIResultToFieldErrors`
//! turns them into field errors, for instance
//! `spec.replicas: Invalid value: "string": spec.replicas in body must be of
//! type integer: "string"`.
//!
//! What this module must NOT do: evaluate CEL (`x-kubernetes-validations`
//! rules are accepted and ignored, as are the list-type uniqueness checks
//! of `x-kubernetes-list-type: set|map`), check that a schema is itself
//! structural (the CRD's own validation), or read a clock. Every function
//! accepts any JSON as schema or object and never panics: what is not a
//! schema declares nothing.

use serde_json::{Map, Value};

use crate::field_error::{FIELD_VALUE_INVALID, FieldError};
use crate::gofmt;

mod defaulting;
mod formats;
mod pruning;
mod validation;

pub use defaulting::*;
use formats::*;
pub use pruning::*;
pub use validation::*;

/// `metav1.CauseTypeTypeInvalid`: a value of the wrong JSON type (or
/// format), reported as `Invalid value`.
pub const FIELD_VALUE_TYPE_INVALID: &str = "FieldValueTypeInvalid";

/// The fields of `metav1.ObjectMeta`: what survives in a custom resource's
/// `metadata` (and an embedded resource's), whatever its schema says.
const OBJECT_META_FIELDS: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// The fields an embedded resource (and the root) keeps without a schema.
const META_FIELDS: &[&str] = &["apiVersion", "kind", "metadata"];

fn flag(s: &Value, key: &str) -> bool {
    s.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn properties(s: &Value) -> Option<&Map<String, Value>> {
    s.get("properties").and_then(Value::as_object)
}

/// The schema of the values of a map: `additionalProperties` as a schema,
/// `true` as the empty schema (which declares no fields); `None` when the
/// object has no additional properties.
fn additional(s: &Value) -> Option<&Value> {
    static EMPTY: Value = Value::Null;
    match s.get("additionalProperties") {
        Some(v @ Value::Object(_)) => Some(v),
        Some(Value::Bool(true)) => Some(&EMPTY),
        _ => None,
    }
}

fn items(s: &Value) -> Option<&Value> {
    s.get("items").filter(|i| i.is_object())
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

#[cfg(test)]
mod tests;
