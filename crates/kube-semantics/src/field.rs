//! Field errors in the API server's wording.
//!
//! Validation failures are reported by the API server as a list of field
//! errors (`metadata.name: Invalid value: "X": ...`) inside a 422 `Invalid`
//! Status, and some parse failures (label selectors) embed a single field
//! error. This module renders them byte for byte. It must NOT decide what is
//! valid: the validators live in [`crate::names`] and [`crate::selector`].

use std::fmt;

use crate::gofmt;

/// The kind of a field error; each renders with its own fixed prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldErrorType {
    /// The value is malformed: `Invalid value: "v": detail`.
    Invalid,
    /// A required value is missing: `Required value: detail`.
    Required,
    /// The value is not allowed here: `Forbidden: detail`.
    Forbidden,
    /// The value is one of a closed set it is not in:
    /// `Unsupported value: "v": detail`.
    NotSupported,
    /// The value repeats one already given: `Duplicate value: "v"`.
    Duplicate,
}

/// One field error, as apimachinery's `field.Error` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// What went wrong.
    pub error_type: FieldErrorType,
    /// The field path, e.g. `metadata.name`. Apimachinery prints a missing
    /// path as `<nil>`, and so does [`FieldError`]'s `Display` when this is
    /// `None`.
    pub field: Option<String>,
    /// The offending value (a string: every value this crate reports is).
    pub bad_value: Option<String>,
    /// The human explanation.
    pub detail: String,
}

impl FieldError {
    /// An `Invalid value` error on `field`.
    pub fn invalid(field: Option<&str>, value: &str, detail: impl Into<String>) -> Self {
        Self {
            error_type: FieldErrorType::Invalid,
            field: field.map(str::to_string),
            bad_value: Some(value.to_string()),
            detail: detail.into(),
        }
    }

    /// A `Required value` error on `field`.
    pub fn required(field: &str, detail: impl Into<String>) -> Self {
        Self {
            error_type: FieldErrorType::Required,
            field: Some(field.to_string()),
            bad_value: None,
            detail: detail.into(),
        }
    }

    /// The part after `field: `, e.g. `Invalid value: "x": must be ...`.
    pub fn body(&self) -> String {
        let value = || gofmt::quote(self.bad_value.as_deref().unwrap_or_default());
        let mut s = match self.error_type {
            FieldErrorType::Invalid => format!("Invalid value: {}", value()),
            FieldErrorType::NotSupported => format!("Unsupported value: {}", value()),
            FieldErrorType::Duplicate => format!("Duplicate value: {}", value()),
            FieldErrorType::Required => "Required value".to_string(),
            FieldErrorType::Forbidden => "Forbidden".to_string(),
        };
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}",
            self.field.as_deref().unwrap_or("<nil>"),
            self.body()
        )
    }
}

/// The message of a 422 `Invalid` Status, e.g.
/// `ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: ...`.
///
/// `group_kind` is `Kind` for the core group and `Kind.group` otherwise
/// (`Deployment.apps`), as `schema.GroupKind.String()` prints it.
pub fn invalid_object_message(group_kind: &str, name: &str, errors: &[FieldError]) -> String {
    let texts: Vec<String> = errors.iter().map(ToString::to_string).collect();
    format!(
        "{group_kind} {} is invalid: {}",
        gofmt::quote(name),
        gofmt::aggregate(&texts)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_error_prints_like_apimachinery() {
        let e = FieldError::invalid(Some("metadata.name"), "Foo", "bad");
        assert_eq!(e.to_string(), "metadata.name: Invalid value: \"Foo\": bad");
        let e = FieldError::invalid(None, "a b", "bad");
        assert_eq!(e.to_string(), "<nil>: Invalid value: \"a b\": bad");
    }

    #[test]
    fn required_error_has_no_value() {
        let e = FieldError::required("metadata.name", "name or generateName is required");
        assert_eq!(
            e.to_string(),
            "metadata.name: Required value: name or generateName is required"
        );
    }

    #[test]
    fn invalid_object_message_aggregates() {
        let one = [FieldError::invalid(Some("metadata.name"), "X", "d1")];
        assert_eq!(
            invalid_object_message("ConfigMap", "X", &one),
            "ConfigMap \"X\" is invalid: metadata.name: Invalid value: \"X\": d1"
        );
        let two = [
            FieldError::invalid(Some("metadata.name"), "X", "d1"),
            FieldError::invalid(Some("metadata.name"), "X", "d2"),
        ];
        assert_eq!(
            invalid_object_message("Deployment.apps", "X", &two),
            "Deployment.apps \"X\" is invalid: [metadata.name: Invalid value: \"X\": d1, \
             metadata.name: Invalid value: \"X\": d2]"
        );
    }
}
