//! Unknown fields of built-in kinds, found the way the API server finds
//! them: by decoding into the kind's schema (here the k8s-openapi types,
//! which carry the same fields as the Go structs) and seeing what did not
//! survive.
//!
//! The API server cannot store a field its Go struct lacks. Depending on
//! `fieldValidation` it drops it with a `Warning` header (`Warn`, the
//! default), drops it silently (`Ignore`) or refuses the request with 400
//! `strict decoding error: unknown field "spec.foo"` (`Strict`, which
//! kubectl sends). Server-side apply builds a typed object from the applied
//! configuration and fails on any unknown field: 500 `failed to create typed
//! patch object (...): .spec.foo: field not declared in schema`.
//!
//! Custom resources are judged by their CRD's structural schema
//! (`kube_semantics::structural::prune`): their unknown fields are what the
//! schema does not declare, warned about or refused the same way. A custom
//! resource without a schema keeps everything.
//!
//! What this module must NOT do: validate values (the store does, with a
//! 422). A body it cannot decode into the typed form is explained by
//! `decode_error`, whose answer (the server's 400) is returned instead of
//! the unknown fields.

use serde_json::Value;

use crate::registry::Resource;

/// `fieldValidation`: what happens to unknown fields of a create, update or
/// patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    /// Dropped silently.
    Ignore,
    /// Dropped, one `Warning` header each (the server's default).
    #[default]
    Warn,
    /// The request is refused with 400.
    Strict,
}

impl FieldValidation {
    /// Parses the query parameter; `None` for a value the server refuses.
    pub fn parse(value: Option<&str>) -> Option<FieldValidation> {
        match value {
            None | Some("") | Some("Warn") => Some(FieldValidation::Warn),
            Some("Ignore") => Some(FieldValidation::Ignore),
            Some("Strict") => Some(FieldValidation::Strict),
            Some(_) => None,
        }
    }
}

/// The object as its typed form keeps it, or `None` when the kind has no
/// typed form here (custom resources) or the body does not decode.
fn typed(res: &Resource, v: &Value) -> Option<Value> {
    if !res.builtin {
        return None;
    }
    crate::builtin::find_version(&res.group, &res.version, &res.kind).and_then(|b| (b.typed)(v))
}

/// Removes from `input` what `typed` lacks and records each path. Null
/// values are not fields (a merge patch's null deletes), nor are the
/// directives of a strategic merge patch (`$patch`, `$setElementOrder/..`,
/// `$retainKeys`, `$deleteFromPrimitiveList/..`).
fn prune(input: &mut Value, typed: &Value, path: &str, out: &mut Vec<String>) {
    match (input, typed) {
        (Value::Object(i), Value::Object(t)) => {
            i.retain(|k, v| {
                if v.is_null() || k.starts_with('$') {
                    return true;
                }
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match t.get(k) {
                    Some(tv) => {
                        prune(v, tv, &p, out);
                        true
                    }
                    None => {
                        out.push(p);
                        false
                    }
                }
            });
        }
        (Value::Array(i), Value::Array(t)) => {
            for (n, (a, b)) in i.iter_mut().zip(t).enumerate() {
                prune(a, b, &format!("{path}[{n}]"), out);
            }
        }
        _ => {}
    }
}

/// The unknown fields of `body` (paths like `spec.ports[0].foo`, in body
/// order), removed from it. Empty for kinds without a typed form. `Err`
/// is the decoder's 400 message for a body with a value of the wrong type
/// (the caller decides whether the body is a whole object it applies to).
pub fn drop_unknown(res: &Resource, body: &mut Value) -> Result<Vec<String>, String> {
    if let Some(schema) = custom_schema(res) {
        return Ok(kube_semantics::structural::prune(schema, body));
    }
    let typed = if has_directives(body) {
        typed(res, &strip_directives(body))
    } else {
        typed(res, body)
    };
    let Some(typed) = typed else {
        // Only a body that does not decode is walked for the reason why.
        return match crate::decode_error::message(res, body) {
            Some(message) => Err(message),
            None => Ok(Vec::new()),
        };
    };
    let mut out = Vec::new();
    prune(body, &typed, "", &mut out);
    Ok(out)
}

/// The structural schema of a custom resource, if its CRD has one.
fn custom_schema(res: &Resource) -> Option<&Value> {
    if res.builtin {
        return None;
    }
    res.schema.as_deref()
}

/// The unknown fields of a merge patch of a custom resource, the body left
/// as it is: the store prunes the patched object, and the fields a patch
/// deletes (its `null`s) are not fields of the result.
pub fn unknown_in_custom_patch(res: &Resource, patch: &Value) -> Vec<String> {
    let Some(schema) = custom_schema(res) else {
        return Vec::new();
    };
    let mut copy = without_nulls(patch);
    kube_semantics::structural::prune(schema, &mut copy)
}

fn without_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

fn has_directives(v: &Value) -> bool {
    match v {
        Value::Object(m) => m
            .iter()
            .any(|(k, v)| k.starts_with('$') || has_directives(v)),
        Value::Array(a) => a.iter().any(has_directives),
        _ => false,
    }
}

/// A strategic merge patch without its `$` directives, so that the typed
/// form can decode it. Unlike the patch code's stripping, list items stay
/// (a `$patch: delete` item keeps its other keys), so that the typed lists
/// line up with the body's item by item.
fn strip_directives(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), strip_directives(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_directives).collect()),
        other => other.clone(),
    }
}

/// The 400 message of a `Strict` request, as the API server words it.
pub fn strict_message(unknown: &[String]) -> String {
    let fields: Vec<String> = unknown
        .iter()
        .map(|f| format!("unknown field {}", Value::String(f.clone())))
        .collect();
    format!("strict decoding error: {}", fields.join(", "))
}

/// The 500 message of a server-side apply naming unknown fields.
pub fn apply_message(res: &Resource, ns: &str, name: &str, unknown: &[String]) -> String {
    let object = if ns.is_empty() {
        format!("/{name}")
    } else {
        format!("{ns}/{name}")
    };
    let fields: Vec<String> = unknown
        .iter()
        .map(|f| format!(".{f}: field not declared in schema"))
        .collect();
    format!(
        "failed to create typed patch object ({object}; {}, Kind={}): {}",
        if res.group.is_empty() {
            format!("/{}", res.version)
        } else {
            format!("{}/{}", res.group, res.version)
        },
        res.kind,
        fields.join(", ")
    )
}

/// The `Warning` header value for one dropped field.
pub fn warning(field: &str) -> String {
    format!(
        "299 - {}",
        Value::String(format!("unknown field {}", Value::String(field.into())))
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::registry::builtins;
    use serde_json::json;

    fn res(plural: &str) -> Resource {
        builtins().into_iter().find(|r| r.plural == plural).unwrap()
    }

    #[test]
    fn unknown_fields_are_found_at_every_depth_and_removed() {
        let mut svc = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "s", "labels": {"any": "key"}, "colour": "red"},
            "spec": {"ports": [{"port": 80, "portt": 81}], "selectr": {"a": "b"},
                     "selector": {"free": "form"}},
            "extra": true,
        });
        let found = drop_unknown(&res("services"), &mut svc).unwrap();
        assert_eq!(
            found,
            [
                "metadata.colour",
                "spec.ports[0].portt",
                "spec.selectr",
                "extra"
            ]
        );
        assert_eq!(
            svc,
            json!({"apiVersion": "v1", "kind": "Service",
                   "metadata": {"name": "s", "labels": {"any": "key"}},
                   "spec": {"ports": [{"port": 80}], "selector": {"free": "form"}}})
        );
    }

    #[test]
    fn nulls_directives_and_custom_resources_are_not_unknown() {
        let mut patch = json!({"metadata": {"labels": {"gone": null}}, "spec": {
            "$setElementOrder/ports": [{"port": 80}],
            "ports": [{"port": 80, "$patch": "replace"}], "clusterIP": null}});
        assert!(
            drop_unknown(&res("services"), &mut patch)
                .unwrap()
                .is_empty()
        );
        let mut cr = json!({"apiVersion": "x/v1", "kind": "Foo", "anything": 1});
        let foo = Resource {
            group: "x".into(),
            kind: "Foo".into(),
            ..res("configmaps")
        };
        assert!(drop_unknown(&foo, &mut cr).unwrap().is_empty());
        assert_eq!(cr["anything"], 1);
    }

    #[test]
    fn custom_resources_are_pruned_by_their_schema() {
        let crd = json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]}
        });
        let res = crate::registry::resource_from_crd(&crd).unwrap();
        let mut body = json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w"}, "spec": {"size": 1, "foo": 2}, "bar": 3});
        assert_eq!(drop_unknown(&res, &mut body).unwrap(), ["bar", "spec.foo"]);
        assert_eq!(body["spec"], json!({"size": 1}));
        assert!(body.get("bar").is_none());
        // A patch's nulls delete; they are not unknown fields.
        let patch = json!({"spec": {"foo": null, "baz": 1}});
        assert_eq!(unknown_in_custom_patch(&res, &patch), ["spec.baz"]);
        // Without a schema nothing is unknown.
        let mut bare = res.clone();
        bare.schema = None;
        let mut body = json!({"spec": {"foo": 2}});
        assert!(drop_unknown(&bare, &mut body).unwrap().is_empty());
        assert!(unknown_in_custom_patch(&bare, &body).is_empty());
    }

    #[test]
    fn a_body_of_the_wrong_types_is_refused_and_left_alone() {
        let mut cm = json!({"metadata": {"name": 5}, "data": {"k": 1}, "unknown": 1});
        assert_eq!(
            drop_unknown(&res("configmaps"), &mut cm),
            Err(
                "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot \
                 unmarshal number into Go struct field ObjectMeta.metadata.name of type string"
                    .to_string()
            )
        );
        assert_eq!(cm["unknown"], 1);
    }

    #[test]
    fn messages_are_worded_as_the_api_server_words_them() {
        let unknown = vec!["spec.foo".to_string(), "bar".to_string()];
        assert_eq!(
            strict_message(&unknown),
            r#"strict decoding error: unknown field "spec.foo", unknown field "bar""#
        );
        assert_eq!(
            apply_message(&res("configmaps"), "ns", "c", &unknown[..1]),
            "failed to create typed patch object (ns/c; /v1, Kind=ConfigMap): \
             .spec.foo: field not declared in schema"
        );
        assert_eq!(
            apply_message(&res("deployments"), "ns", "d", &unknown[..1]),
            "failed to create typed patch object (ns/d; apps/v1, Kind=Deployment): \
             .spec.foo: field not declared in schema"
        );
        assert_eq!(warning("spec.foo"), r#"299 - "unknown field \"spec.foo\"""#);
        assert_eq!(FieldValidation::parse(None), Some(FieldValidation::Warn));
        assert_eq!(
            FieldValidation::parse(Some("Strict")),
            Some(FieldValidation::Strict)
        );
        assert_eq!(FieldValidation::parse(Some("strict")), None);
    }
}
