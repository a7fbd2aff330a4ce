//! Validation causes as the API server reports them in a 422 Status.
//!
//! Each cause of an `Invalid` Status carries a `reason` (a `metav1.CauseType`
//! such as `FieldValueInvalid`), the `field` path and a `message`: the text
//! that follows `field: ` in the Status message (`Invalid value: "2": must
//! be ...`). Validators in this crate return lists of [`FieldError`]; the
//! constructors render the message as apimachinery's `field.Error` does.
//! This module must NOT decide what is valid, and must NOT build the
//! Status itself (that is the HTTP layer's job).

use std::fmt;

use crate::gofmt;

/// `metav1.CauseTypeFieldValueNotFound`.
pub const FIELD_VALUE_NOT_FOUND: &str = "FieldValueNotFound";
/// `metav1.CauseTypeFieldValueRequired`.
pub const FIELD_VALUE_REQUIRED: &str = "FieldValueRequired";
/// `metav1.CauseTypeFieldValueDuplicate`.
pub const FIELD_VALUE_DUPLICATE: &str = "FieldValueDuplicate";
/// `metav1.CauseTypeFieldValueInvalid`.
pub const FIELD_VALUE_INVALID: &str = "FieldValueInvalid";
/// `metav1.CauseTypeFieldValueNotSupported`.
pub const FIELD_VALUE_NOT_SUPPORTED: &str = "FieldValueNotSupported";
/// `metav1.CauseTypeFieldValueForbidden`.
pub const FIELD_VALUE_FORBIDDEN: &str = "FieldValueForbidden";
/// `metav1.CauseTypeFieldValueTooLong`.
pub const FIELD_VALUE_TOO_LONG: &str = "FieldValueTooLong";
/// `metav1.CauseTypeFieldValueTooMany`.
pub const FIELD_VALUE_TOO_MANY: &str = "FieldValueTooMany";

/// One validation cause: what a `StatusCause` holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// The cause type, one of the `FIELD_VALUE_*` constants.
    pub reason: &'static str,
    /// The field path as apimachinery prints it (`spec.limits[0].max[cpu]`).
    pub field: String,
    /// The text after `field: ` (`Invalid value: "2": must be ...`).
    pub message: String,
}

fn with_detail(mut head: String, detail: &str) -> String {
    if !detail.is_empty() {
        head.push_str(": ");
        head.push_str(detail);
    }
    head
}

impl FieldError {
    /// `field.Invalid` with a string value (printed quoted, as `%q`).
    pub fn invalid(field: impl Into<String>, value: &str, detail: &str) -> Self {
        Self::invalid_rendered(field, &gofmt::quote(value), detail)
    }

    /// `field.Invalid` with a value already rendered as Go prints it: `%v`
    /// for numbers and booleans, `%#v` for structs and slices.
    pub fn invalid_rendered(field: impl Into<String>, rendered: &str, detail: &str) -> Self {
        FieldError {
            reason: FIELD_VALUE_INVALID,
            field: field.into(),
            message: with_detail(format!("Invalid value: {rendered}"), detail),
        }
    }

    /// `field.Required`: `Required value` and the optional detail.
    pub fn required(field: impl Into<String>, detail: &str) -> Self {
        FieldError {
            reason: FIELD_VALUE_REQUIRED,
            field: field.into(),
            message: with_detail("Required value".to_string(), detail),
        }
    }

    /// `field.Forbidden`: `Forbidden` and the optional detail.
    pub fn forbidden(field: impl Into<String>, detail: &str) -> Self {
        FieldError {
            reason: FIELD_VALUE_FORBIDDEN,
            field: field.into(),
            message: with_detail("Forbidden".to_string(), detail),
        }
    }

    /// `field.Duplicate` with a string value.
    pub fn duplicate(field: impl Into<String>, value: &str) -> Self {
        FieldError {
            reason: FIELD_VALUE_DUPLICATE,
            field: field.into(),
            message: format!("Duplicate value: {}", gofmt::quote(value)),
        }
    }

    /// `field.NotFound` with a string value.
    pub fn not_found(field: impl Into<String>, value: &str) -> Self {
        FieldError {
            reason: FIELD_VALUE_NOT_FOUND,
            field: field.into(),
            message: format!("Not found: {}", gofmt::quote(value)),
        }
    }

    /// `field.NotSupported` with a string value and the accepted values
    /// (`supported values: "a", "b"`; no detail when the list is empty).
    pub fn not_supported(field: impl Into<String>, value: &str, supported: &[&str]) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|v| gofmt::quote(v)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        FieldError {
            reason: FIELD_VALUE_NOT_SUPPORTED,
            field: field.into(),
            message: with_detail(
                format!("Unsupported value: {}", gofmt::quote(value)),
                &detail,
            ),
        }
    }
}

impl fmt::Display for FieldError {
    /// `field: message`, one entry of the Status message's list.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_like_apimachinery() {
        let e = FieldError::invalid(
            "spec.containers[0].resources.requests",
            "2",
            "must be less than or equal to memory limit of 1",
        );
        assert_eq!(e.reason, "FieldValueInvalid");
        assert_eq!(
            e.to_string(),
            "spec.containers[0].resources.requests: Invalid value: \"2\": \
             must be less than or equal to memory limit of 1"
        );
        assert_eq!(FieldError::required("x", "").message, "Required value");
        assert_eq!(
            FieldError::required("x", "why").message,
            "Required value: why"
        );
        assert_eq!(FieldError::forbidden("x", "no").message, "Forbidden: no");
        assert_eq!(FieldError::forbidden("x", "").message, "Forbidden");
        assert_eq!(
            FieldError::duplicate("x", "Pod").message,
            "Duplicate value: \"Pod\""
        );
        assert_eq!(FieldError::not_found("x", "a").message, "Not found: \"a\"");
        assert_eq!(
            FieldError::not_supported("x", "z", &["a", "b"]).message,
            "Unsupported value: \"z\": supported values: \"a\", \"b\""
        );
        assert_eq!(
            FieldError::not_supported("x", "z", &[]).message,
            "Unsupported value: \"z\""
        );
        assert_eq!(
            FieldError::invalid("x", "", "").message,
            "Invalid value: \"\""
        );
        assert_eq!(
            FieldError::invalid_rendered("x", "-1", "must be greater than or equal to 0").message,
            "Invalid value: -1: must be greater than or equal to 0"
        );
    }
}
