//! Checking one syncItem, and the parts every item shares: its type
//! fields and a name valid for its kind.
//!
//! This module must NOT look at namespaces or existing objects, like the
//! rest of compilation.

use super::*;

/// Checks an apiVersion or kind: present, not templated, and (for an
/// apiVersion) of the form `version` or `group/version`.
pub(super) fn required_type_field(
    value: &str,
    path: &str,
    errors: &mut Vec<ValidationError>,
) -> Option<String> {
    if value.is_empty() {
        errors.push(ValidationError::Missing {
            path: path.into(),
            message: "is required".into(),
        });
        return None;
    }
    if value.contains(PROJECT_NAME) {
        errors.push(ValidationError::Malformed {
            path: path.into(),
            message: format!(
                "must not contain {PROJECT_NAME}: the object's type cannot depend on the namespace"
            ),
        });
        return None;
    }
    if path.ends_with("apiVersion") {
        let parts: Vec<&str> = value.split('/').collect();
        if parts.len() > 2
            || parts
                .iter()
                .any(|p| p.is_empty() || p.contains(char::is_whitespace))
        {
            errors.push(ValidationError::Malformed {
                path: path.into(),
                message: format!("{value:?} is not of the form <version> or <group>/<version>"),
            });
            return None;
        }
    } else if !value.chars().all(|c| c.is_ascii_alphanumeric()) {
        errors.push(ValidationError::Malformed {
            path: path.into(),
            message: format!("{value:?} is not a kind (letters and digits only)"),
        });
        return None;
    }
    Some(value.to_string())
}

pub(super) fn check_static_name(
    name: &str,
    group: &str,
    kind: &str,
    path: &str,
    errors: &mut Vec<ValidationError>,
) {
    let sample = template_str(name, SAMPLE_NAMESPACE);
    if let Err(message) = check_name(&sample, strict_name_rule(group, kind)) {
        errors.push(ValidationError::Name {
            path: path.into(),
            name: name.into(),
            message,
        });
    }
}

pub(super) fn compile_sync_item(
    index: usize,
    item: &Value,
    path: &str,
) -> Result<SyncTemplate, Vec<ValidationError>> {
    let mut errors = Vec::new();
    let Some(obj) = item.as_object() else {
        return Err(vec![ValidationError::Malformed {
            path: path.into(),
            message: format!("must be an object, found {}", type_name(item)),
        }]);
    };
    let string_field = |field: &str, errors: &mut Vec<ValidationError>| -> Option<String> {
        match obj.get(field) {
            None | Some(Value::Null) => {
                errors.push(ValidationError::Missing {
                    path: format!("{path}.{field}"),
                    message: "is required".into(),
                });
                None
            }
            Some(Value::String(s)) => required_type_field(s, &format!("{path}.{field}"), errors),
            Some(other) => {
                errors.push(ValidationError::Malformed {
                    path: format!("{path}.{field}"),
                    message: format!("must be a string, found {}", type_name(other)),
                });
                None
            }
        }
    };
    let api_version = string_field("apiVersion", &mut errors);
    let kind = string_field("kind", &mut errors);
    let name = match obj.get("metadata") {
        None | Some(Value::Null) => {
            errors.push(ValidationError::Missing {
                path: format!("{path}.metadata.name"),
                message: "is required".into(),
            });
            None
        }
        Some(Value::Object(meta)) => {
            for field in ["labels", "annotations"] {
                match meta.get(field) {
                    None | Some(Value::Null) => {}
                    Some(Value::Object(m)) => {
                        for (k, v) in m {
                            if !v.is_string() {
                                errors.push(ValidationError::Malformed {
                                    path: format!("{path}.metadata.{field}[{k:?}]"),
                                    message: format!("must be a string, found {}", type_name(v)),
                                });
                            }
                        }
                    }
                    Some(other) => errors.push(ValidationError::Malformed {
                        path: format!("{path}.metadata.{field}"),
                        message: format!("must be a map of strings, found {}", type_name(other)),
                    }),
                }
            }
            match meta.get("name") {
                Some(Value::String(n)) if !n.is_empty() => Some(n.clone()),
                None | Some(Value::Null) | Some(Value::String(_)) => {
                    errors.push(ValidationError::Missing {
                        path: format!("{path}.metadata.name"),
                        message: "is required (generateName is not supported: a copy needs a stable name)"
                            .into(),
                    });
                    None
                }
                Some(other) => {
                    errors.push(ValidationError::Malformed {
                        path: format!("{path}.metadata.name"),
                        message: format!("must be a string, found {}", type_name(other)),
                    });
                    None
                }
            }
        }
        Some(other) => {
            errors.push(ValidationError::Malformed {
                path: format!("{path}.metadata"),
                message: format!("must be an object, found {}", type_name(other)),
            });
            None
        }
    };
    if let (Some(av), Some(k), Some(n)) = (&api_version, &kind, &name) {
        check_static_name(
            n,
            group_of(av),
            k,
            &format!("{path}.metadata.name"),
            &mut errors,
        );
    }
    match (api_version, kind, name) {
        (Some(api_version), Some(kind), Some(name)) if errors.is_empty() => {
            let group = group_of(&api_version).to_string();
            Ok(SyncTemplate {
                index,
                api_version,
                group,
                kind,
                name,
                body: clean_body(obj),
                source: None,
            })
        }
        _ => Err(errors),
    }
}

/// The item without `status` and without server-owned metadata.
pub(super) fn clean_body(obj: &Map<String, Value>) -> Value {
    let mut body = obj.clone();
    body.remove("status");
    if let Some(Value::Object(meta)) = body.get_mut("metadata") {
        for field in SERVER_METADATA {
            meta.remove(*field);
        }
    }
    Value::Object(body)
}

pub(super) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
