//! Field errors and field paths as apimachinery builds and prints them
//! (`field.Required`, `field.Invalid`, ... and `field.Path.String()`).
//!
//! This module must NOT decide whether a value is valid: the checks of each
//! kind call these constructors with the texts upstream uses.

use super::*;

/// `field.Required`: `Required value[: detail]`.
pub(super) fn required(field: &str, detail: &str) -> FieldError {
    FieldError {
        reason: "FieldValueRequired",
        field: field.to_string(),
        message: with_detail("Required value".to_string(), detail),
    }
}

/// `field.Invalid`: `Invalid value: <value>[: detail]`. `value` is already
/// rendered the way Go's `%q`/`%v`/`%#v` would print it.
pub(super) fn invalid(field: &str, value: &str, detail: &str) -> FieldError {
    FieldError {
        reason: "FieldValueInvalid",
        field: field.to_string(),
        message: with_detail(format!("Invalid value: {value}"), detail),
    }
}

/// `field.Invalid` on a string value (printed with `%q`).
pub(super) fn invalid_str(field: &str, value: &str, detail: &str) -> FieldError {
    invalid(field, &quote(value), detail)
}

/// `field.NotSupported`: `Unsupported value: <value>: supported values: ...`.
pub(super) fn not_supported(field: &str, value: &str, supported: &[&str]) -> FieldError {
    let detail = if supported.is_empty() {
        String::new()
    } else {
        let quoted: Vec<String> = supported.iter().map(|s| quote(s)).collect();
        format!("supported values: {}", quoted.join(", "))
    };
    FieldError {
        reason: "FieldValueNotSupported",
        field: field.to_string(),
        message: with_detail(format!("Unsupported value: {}", quote(value)), &detail),
    }
}

/// `field.NotSupported` on a value already rendered (a struct's `%#v`).
pub(super) fn not_supported_raw(field: &str, value: &str, supported: &[&str]) -> FieldError {
    let mut e = not_supported(field, "", supported);
    e.message = e.message.replacen("\"\"", value, 1);
    e
}

/// `field.Forbidden`: `Forbidden: detail`.
pub(super) fn forbidden(field: &str, detail: &str) -> FieldError {
    FieldError {
        reason: "FieldValueForbidden",
        field: field.to_string(),
        message: with_detail("Forbidden".to_string(), detail),
    }
}

/// `field.Duplicate`: `Duplicate value: "v"`.
pub(super) fn duplicate(field: &str, value: &str) -> FieldError {
    FieldError {
        reason: "FieldValueDuplicate",
        field: field.to_string(),
        message: format!("Duplicate value: {}", quote(value)),
    }
}

/// `field.NotFound`: `Not found: "v"`.
pub(super) fn not_found(field: &str, value: &str) -> FieldError {
    FieldError {
        reason: "FieldValueNotFound",
        field: field.to_string(),
        message: format!("Not found: {}", quote(value)),
    }
}

/// `field.TooLong` as apimachinery words it since v1.32 (`may not be more
/// than N bytes`; older servers said `may not be more than N bytes`), as
/// reports from v1.32 clusters show it.
pub(super) fn too_long(field: &str, max: usize) -> FieldError {
    FieldError {
        reason: "FieldValueTooLong",
        field: field.to_string(),
        message: format!("Too long: may not be more than {max} bytes"),
    }
}

pub(super) fn with_detail(mut s: String, detail: &str) -> String {
    if !detail.is_empty() {
        s.push_str(": ");
        s.push_str(detail);
    }
    s
}

/// The Status message of a 422 `Invalid` (`errors.NewInvalid`):
/// `ConfigMap "x" is invalid: data[k]: Invalid value: ...` for one error,
/// `... is invalid: [a, b]` for several (repeated texts printed once), and
/// `ConfigMap "x" is invalid` for none.
///
/// `kind` is the qualified kind as `schema.GroupKind.String()` prints it:
/// `Kind` for the core group, `Kind.group` otherwise (`Deployment.apps`).
pub fn summary(kind: &str, name: &str, errs: &[FieldError]) -> String {
    if errs.is_empty() {
        return format!("{kind} {} is invalid", quote(name));
    }
    let texts: Vec<String> = errs
        .iter()
        .map(|e| format!("{}: {}", e.field, e.message))
        .collect();
    format!("{kind} {} is invalid: {}", quote(name), aggregate(&texts))
}

pub(super) fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

pub(super) fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

pub(super) fn key(path: &str, k: &str) -> String {
    format!("{path}[{k}]")
}
