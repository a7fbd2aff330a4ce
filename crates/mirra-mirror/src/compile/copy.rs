//! copyItems: checking one, resolving it against its source object, and
//! the body a copy of that source gets.
//!
//! This module must NOT read the source: the caller hands over what the
//! source watch holds (see [`SourceState`]).

use super::items::{check_static_name, required_type_field};
use super::*;

pub(super) fn compile_copy_item(
    index: usize,
    item: &CopyItem,
    path: &str,
) -> Result<CopyTemplate, Vec<ValidationError>> {
    let mut errors = Vec::new();
    let api_version = required_type_field(
        &item.api_version,
        &format!("{path}.apiVersion"),
        &mut errors,
    );
    let kind = required_type_field(&item.kind, &format!("{path}.kind"), &mut errors);
    let mut fixed_name = |value: &str, field: &str, rule: NameRule| {
        let field_path = format!("{path}.{field}");
        if value.is_empty() {
            errors.push(ValidationError::Missing {
                path: field_path,
                message: "is required".into(),
            });
        } else if value.contains(PROJECT_NAME) {
            errors.push(ValidationError::Malformed {
                path: field_path,
                message: format!(
                    "must not contain {PROJECT_NAME}: the source is one object, the same for \
                     every namespace"
                ),
            });
        } else if let Err(message) = check_name(value, rule).and_then(|()| {
            // A namespace is a DNS-1123 label: a subdomain without dots,
            // at most 63 characters.
            if field == "namespace" && (value.contains('.') || value.len() > 63) {
                Err("must be a DNS-1123 label (no dots, at most 63 characters)".to_string())
            } else {
                Ok(())
            }
        }) {
            errors.push(ValidationError::Name {
                path: field_path,
                name: value.into(),
                message,
            });
        }
    };
    fixed_name(&item.namespace, "namespace", NameRule::Dns1123Subdomain);
    if let (Some(av), Some(k)) = (&api_version, &kind) {
        fixed_name(&item.name, "name", strict_name_rule(group_of(av), k));
    } else if item.name.is_empty() {
        fixed_name(&item.name, "name", NameRule::PathSegment);
    }
    let target_name = item
        .target_name
        .clone()
        .unwrap_or_else(|| item.name.clone());
    if item.target_name.as_deref() == Some("") {
        errors.push(ValidationError::Missing {
            path: format!("{path}.targetName"),
            message: "must not be empty (leave it out to use the source's name)".into(),
        });
    } else if let (Some(av), Some(k), Some(_)) = (&api_version, &kind, &item.target_name) {
        check_static_name(
            &target_name,
            group_of(av),
            k,
            &format!("{path}.targetName"),
            &mut errors,
        );
    }
    for (field, keys) in [("labels", &item.labels), ("annotations", &item.annotations)] {
        for (i, key) in keys.iter().enumerate() {
            if key.is_empty() {
                errors.push(ValidationError::Malformed {
                    path: format!("{path}.{field}[{i}]"),
                    message: "must be a key, found an empty string".into(),
                });
            }
        }
    }
    match (api_version, kind) {
        (Some(api_version), Some(kind)) if errors.is_empty() => {
            let group = group_of(&api_version).to_string();
            Ok(CopyTemplate {
                index,
                source: ObjectRef {
                    api_version: api_version.as_str().into(),
                    kind: kind.as_str().into(),
                    namespace: item.namespace.as_str().into(),
                    name: item.name.as_str().into(),
                },
                api_version,
                group,
                kind,
                target_name,
                labels: item.labels.clone(),
                annotations: item.annotations.clone(),
                resolved: CopySource::Unresolved,
            })
        }
        _ => Err(errors),
    }
}

/// A copyItem's copy made from what is known of its source.
pub(super) fn resolve_copy(item: &CopyTemplate, source: SourceState<'_>) -> CopySource {
    let what = format!(
        "source {} {}/{}",
        item.kind, item.source.namespace, item.source.name
    );
    let body = match source {
        SourceState::Unknown => return CopySource::Unresolved,
        SourceState::Missing => {
            return CopySource::Held(format!(
                "the {what} does not exist; its copies are kept as they are"
            ));
        }
        SourceState::Unreadable(why) => {
            return CopySource::Held(format!(
                "the {what} cannot be read ({why}); its copies are kept as they are"
            ));
        }
        SourceState::Found(body) => body,
    };
    match copy_body(item, body) {
        Ok(body) => CopySource::Copy(Box::new(SyncTemplate {
            index: item.index,
            api_version: item.api_version.clone(),
            group: item.group.clone(),
            kind: item.kind.clone(),
            name: item.target_name.clone(),
            body,
            source: Some(item.source.clone()),
        })),
        Err(why) => CopySource::Held(format!(
            "the {what} cannot be copied: {why}; its copies are kept as they are"
        )),
    }
}

/// The syncItem a source makes: its content (for Secrets `type` and
/// `data`, for ConfigMaps `data` and `binaryData`, for other kinds `spec`)
/// and the labels and annotations the item names, under the copies' name.
pub(super) fn copy_body(item: &CopyTemplate, source: &Value) -> Result<Value, String> {
    let Some(obj) = source.as_object() else {
        return Err("it is not an object".into());
    };
    let mut meta = Map::new();
    meta.insert("name".into(), Value::String(item.target_name.clone()));
    for (field, keys) in [("labels", &item.labels), ("annotations", &item.annotations)] {
        let from = source.pointer(&format!("/metadata/{field}"));
        let chosen: Map<String, Value> = keys
            .iter()
            .filter_map(|k| {
                let v = from?.get(k)?.as_str()?;
                Some((k.clone(), Value::String(v.to_string())))
            })
            .collect();
        if !chosen.is_empty() {
            meta.insert(field.into(), Value::Object(chosen));
        }
    }
    let mut body = Map::new();
    body.insert("apiVersion".into(), Value::String(item.api_version.clone()));
    body.insert("kind".into(), Value::String(item.kind.clone()));
    body.insert("metadata".into(), Value::Object(meta));
    let content: &[&str] = match (item.group.as_str(), item.kind.as_str()) {
        ("", "Secret") => &["type", "data"],
        ("", "ConfigMap") => &["data", "binaryData"],
        _ => &["spec"],
    };
    for field in content {
        if let Some(v) = obj.get(*field).filter(|v| !v.is_null()) {
            body.insert((*field).into(), v.clone());
        }
    }
    if content == ["spec"] && !body.contains_key("spec") {
        return Err(format!(
            "a {} has no spec to copy (copyItems copy the data of Secrets and ConfigMaps and \
             the spec of other kinds)",
            item.kind
        ));
    }
    Ok(Value::Object(body))
}
