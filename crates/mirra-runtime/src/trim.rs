//! Dropping the metadata no controller reads before an object is cached.
//!
//! `metadata.managedFields` is often larger than the rest of the object,
//! and kubectl's last-applied annotation is a second copy of it; at tens
//! of thousands of cached objects they would be most of the memory. No
//! planner reads either, except the mirror's proof of its own apply, which
//! the mirror controller extracts before calling this. Both controllers and
//! every watch strip through these functions so that what a cache holds is
//! decided in one place.
//!
//! This module must NOT drop anything a planner reads (labels, the other
//! annotations, ownerReferences, resourceVersion, uid).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

/// The annotation where `kubectl apply` keeps the last applied object.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Drops `metadata.managedFields`.
pub fn strip_managed_fields(meta: &mut ObjectMeta) {
    meta.managed_fields = None;
}

/// Drops `metadata.managedFields` and kubectl's last-applied annotation.
pub fn strip_managed_fields_and_last_applied(meta: &mut ObjectMeta) {
    strip_managed_fields(meta);
    if let Some(a) = meta.annotations.as_mut() {
        a.remove(LAST_APPLIED);
    }
}

/// Drops `managedFields` from an object's metadata still in JSON form, so
/// that decoding the metadata never reads them. Anything that is not a
/// JSON object is left alone (the decoder reports it).
pub fn strip_managed_fields_json(metadata: &mut Value) {
    if let Some(m) = metadata.as_object_mut() {
        m.remove("managedFields");
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
    use serde_json::json;

    use super::*;

    fn meta() -> ObjectMeta {
        ObjectMeta {
            name: Some("a".into()),
            labels: Some(BTreeMap::from([("l".into(), "v".into())])),
            annotations: Some(BTreeMap::from([
                (LAST_APPLIED.into(), "{}".into()),
                ("keep".into(), "me".into()),
            ])),
            managed_fields: Some(vec![ManagedFieldsEntry {
                manager: Some("kubectl".into()),
                ..Default::default()
            }]),
            resource_version: Some("7".into()),
            ..Default::default()
        }
    }

    #[test]
    fn managed_fields_go_and_everything_else_stays() {
        let mut m = meta();
        strip_managed_fields(&mut m);
        assert!(m.managed_fields.is_none());
        let mut expected = meta();
        expected.managed_fields = None;
        assert_eq!(m, expected);
    }

    #[test]
    fn last_applied_goes_with_managed_fields_and_other_annotations_stay() {
        let mut m = meta();
        strip_managed_fields_and_last_applied(&mut m);
        assert!(m.managed_fields.is_none());
        assert_eq!(
            m.annotations,
            Some(BTreeMap::from([("keep".into(), "me".into())]))
        );
        assert_eq!(m.labels, meta().labels);
        assert_eq!(m.resource_version.as_deref(), Some("7"));
    }

    #[test]
    fn metadata_without_annotations_is_fine() {
        let mut m = ObjectMeta::default();
        strip_managed_fields_and_last_applied(&mut m);
        assert_eq!(m, ObjectMeta::default());
    }

    #[test]
    fn json_metadata_loses_only_managed_fields() {
        let mut v = json!({"name": "a", "managedFields": [{"manager": "x"}], "labels": {"l": "v"}});
        strip_managed_fields_json(&mut v);
        assert_eq!(v, json!({"name": "a", "labels": {"l": "v"}}));
    }

    #[test]
    fn json_that_is_not_an_object_is_left_alone() {
        for mut v in [
            json!(null),
            json!([1, {"managedFields": 1}]),
            json!("managedFields"),
        ] {
            let before = v.clone();
            strip_managed_fields_json(&mut v);
            assert_eq!(v, before);
        }
    }
}
