//! The seam between the store and `kube-semantics` (selectors, patches,
//! server-side apply): turns that crate's errors into API `Status` errors.
//!
//! Nothing here decides behaviour; it only adapts types.

use serde_json::Value;

use crate::registry::Resource;
use crate::status::{ApiError, Cause};

// Recording updates and server-side apply are used as they are; an
// apply's error becomes an API error in `apply_error`.
pub use kube_semantics::apply::{apply, record_update};
pub use kube_semantics::selector::{FieldSelector, LabelSelector};

/// Parses `labelSelector`; a bad one is 400 BadRequest.
pub fn parse_labels(s: &str) -> Result<LabelSelector, ApiError> {
    kube_semantics::selector::parse_label_selector(s)
        .map_err(|e| ApiError::bad_request(e.to_string()))
}

/// Parses `fieldSelector`; a bad one is 400 BadRequest.
pub fn parse_fields(s: &str) -> Result<FieldSelector, ApiError> {
    kube_semantics::selector::parse_field_selector(s)
        .map_err(|e| ApiError::bad_request(e.to_string()))
}

/// Refuses a field selector naming a field the kind does not support
/// (400 BadRequest, worded as the real server words it).
pub fn check_fields(sel: &FieldSelector, res: &Resource) -> Result<(), ApiError> {
    let allowed: Vec<&str> = res.selectable_fields.iter().map(String::as_str).collect();
    sel.check_fields(&allowed, !res.custom)
        .map_err(|e| ApiError::bad_request(e.to_string()))
}

/// Whether an object matches a field selector.
pub fn field_matches(sel: &FieldSelector, obj: &Value) -> bool {
    sel.matches(obj)
}

/// An apply failure as the API server reports it.
pub fn apply_error(res: &Resource, name: &str, e: kube_semantics::apply::ApplyError) -> ApiError {
    use kube_semantics::apply::ApplyError;
    match e {
        ApplyError::Conflict(conflicts) => {
            let causes = conflicts
                .iter()
                .map(|c| Cause {
                    reason: "FieldManagerConflict".into(),
                    field: c.field.clone(),
                    message: format!("conflict with {:?}", c.manager),
                })
                .collect();
            let message = kube_semantics::apply::conflict_message(&conflicts);
            ApiError::apply_conflict(&res.group, &res.plural, name, message, causes)
        }
        other => ApiError::bad_request(other.to_string()),
    }
}

/// The body of an apply: YAML or JSON.
pub fn parse_apply_body(body: &[u8]) -> Result<Value, ApiError> {
    // JSON is YAML, but a JSON parse gives the better error for JSON input.
    if let Ok(v) = crate::json::parse(body) {
        return Ok(v);
    }
    serde_yaml::from_slice::<Value>(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))
}

fn decode_patch(patch: &[u8]) -> Result<Value, ApiError> {
    crate::json::parse(patch)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))
}

/// RFC 7386 merge patch.
pub fn merge_patch(old: &Value, patch: &[u8]) -> Result<Value, ApiError> {
    let p = decode_patch(patch)?;
    Ok(kube_semantics::patch::merge_patch(old, &p))
}

/// RFC 6902 JSON patch.
pub fn json_patch(old: &Value, patch: &[u8]) -> Result<Value, ApiError> {
    let p = decode_patch(patch)?;
    kube_semantics::patch::json_patch(old, &p).map_err(|e| {
        ApiError::with_code(422)
            .with_message(e.to_string())
            .with_reason("Invalid")
    })
}

/// Strategic merge patch.
pub fn strategic_patch(old: &Value, patch: &[u8]) -> Result<Value, ApiError> {
    let p = decode_patch(patch)?;
    kube_semantics::patch::strategic_merge_patch(old, &p)
        .map_err(|e| ApiError::bad_request(e.to_string()))
}

impl ApiError {
    /// Replaces the reason.
    pub fn with_reason(mut self, reason: &'static str) -> Self {
        self.reason = reason;
        self
    }
}
