use super::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry};
use mirra_mirror::marks::{
    FIELD_MANAGER, MANAGED_BY_LABEL, OWNER_ANNOTATION, PROOF_FIELDS_TYPE, marks_written_by_mirra,
    ownership_proof_entry,
};
use proptest::prelude::*;
use serde_json::json;

fn entry() -> impl Strategy<Value = ManagedFieldsEntry> {
    (
        prop_oneof![Just(Some(FIELD_MANAGER)), Just(Some("kubectl")), Just(None)],
        prop_oneof![Just(Some("Apply")), Just(Some("Update")), Just(None)],
        prop_oneof![
            Just(Some("FieldsV1")),
            Just(Some(PROOF_FIELDS_TYPE)),
            Just(None)
        ],
        any::<(bool, bool, bool)>(),
    )
        .prop_map(
            |(manager, operation, fields_type, (label, owner, fields))| {
                let mut f =
                    json!({"f:metadata": {"f:labels": {}, "f:annotations": {}}, "f:data": {}});
                if label {
                    f["f:metadata"]["f:labels"][format!("f:{MANAGED_BY_LABEL}")] = json!({});
                }
                if owner {
                    f["f:metadata"]["f:annotations"][format!("f:{OWNER_ANNOTATION}")] = json!({});
                }
                ManagedFieldsEntry {
                    manager: manager.map(str::to_string),
                    operation: operation.map(str::to_string),
                    fields_type: fields_type.map(str::to_string),
                    fields_v1: fields.then_some(FieldsV1(f)),
                    ..Default::default()
                }
            },
        )
}

proptest! {
    /// The typed judgement keeps the proof exactly when the JSON
    /// judgement the planner makes (`marks_written_by_mirra`) finds
    /// the entries prove mirra's marks, and nothing else.
    #[test]
    fn the_typed_proof_agrees_with_the_json_judgement(
        entries in proptest::option::of(proptest::collection::vec(entry(), 0..4)),
    ) {
        let as_json = entries.as_ref().map(|e| serde_json::to_value(e).unwrap());
        let want = marks_written_by_mirra(as_json.as_ref());
        let mut meta = kube::api::ObjectMeta { managed_fields: entries, ..Default::default() };
        keep_ownership_proof(&mut meta);
        prop_assert_eq!(meta.managed_fields.is_some(), want);
        if let Some(kept) = meta.managed_fields {
            prop_assert_eq!(kept, vec![ownership_proof_entry()]);
        }
    }
}
