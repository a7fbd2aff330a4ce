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

// ---------------------------------------------------------------- pruning

/// Removes from `obj` (a whole custom resource) every field `schema` does
/// not declare, and returns their paths (`spec.foo`, `spec.items[0].bar`,
/// `metadata.foo`), as the server reports them in `unknown field` warnings.
///
/// As the real server does: the root keeps `apiVersion`, `kind` and
/// `metadata` whatever the schema says, and `metadata` keeps the
/// `ObjectMeta` fields only (reported first); a node with
/// `x-kubernetes-preserve-unknown-fields: true` keeps its undeclared fields
/// (declared ones are still pruned inside); `additionalProperties` declares
/// every key; an object with `x-kubernetes-embedded-resource: true` keeps
/// `apiVersion`, `kind` and an `ObjectMeta` `metadata` (its unknown
/// metadata fields reported last). The schema paths between are sorted, as
/// the pruning algorithm sorts them.
pub fn prune(schema: &Value, obj: &mut Value) -> Vec<String> {
    let mut meta = Vec::new();
    if let Some(m) = obj.get_mut("metadata") {
        prune_object_meta(m, "metadata", &mut meta);
    }
    let mut pruned = Vec::new();
    let mut embedded = Vec::new();
    if schema.is_object() && flag(schema, "x-kubernetes-preserve-unknown-fields") {
        skip_prune(obj, Some(schema), true, "", &mut pruned, &mut embedded);
    } else {
        prune_node(
            obj,
            Some(schema).filter(|s| s.is_object()),
            true,
            "",
            &mut pruned,
            &mut embedded,
        );
    }
    pruned.sort();
    meta.extend(pruned);
    meta.extend(embedded);
    meta
}

/// Keeps the `ObjectMeta` fields of a `metadata` object.
fn prune_object_meta(meta: &mut Value, path: &str, out: &mut Vec<String>) {
    if let Value::Object(m) = meta {
        let mut unknown: Vec<String> = Vec::new();
        m.retain(|k, _| {
            let known = OBJECT_META_FIELDS.contains(&k.as_str());
            if !known {
                unknown.push(child(path, k));
            }
            known
        });
        unknown.sort();
        out.extend(unknown);
    }
}

/// Prunes an embedded resource's `metadata` (not the root's: that one is
/// done first by [`prune`]).
fn coerce_embedded(x: &mut Value, root: bool, path: &str, embedded: &mut Vec<String>) {
    if root {
        return;
    }
    if let Some(m) = x.get_mut("metadata") {
        prune_object_meta(m, &child(path, "metadata"), embedded);
    }
}

fn prune_node(
    x: &mut Value,
    s: Option<&Value>,
    root: bool,
    path: &str,
    out: &mut Vec<String>,
    embedded: &mut Vec<String>,
) {
    if let Some(s) = s
        && flag(s, "x-kubernetes-preserve-unknown-fields")
    {
        skip_prune(x, Some(s), root, path, out, embedded);
        return;
    }
    match x {
        Value::Object(m) => {
            let Some(s) = s else {
                // No schema: nothing inside is declared.
                out.extend(m.keys().map(|k| child(path, k)));
                m.clear();
                return;
            };
            let keeps_meta = root || flag(s, "x-kubernetes-embedded-resource");
            let props = properties(s);
            let extra = additional(s);
            m.retain(|k, v| {
                if keeps_meta && META_FIELDS.contains(&k.as_str()) {
                    return true;
                }
                let p = child(path, k);
                if let Some(prop) = props.and_then(|p| p.get(k)) {
                    prune_node(
                        v,
                        Some(prop).filter(|s| s.is_object()),
                        false,
                        &p,
                        out,
                        embedded,
                    );
                    true
                } else if let Some(extra) = extra {
                    prune_node(
                        v,
                        Some(extra).filter(|s| s.is_object()),
                        false,
                        &p,
                        out,
                        embedded,
                    );
                    true
                } else {
                    out.push(p);
                    false
                }
            });
            if keeps_meta {
                coerce_embedded(x, root, path, embedded);
            }
        }
        Value::Array(a) => {
            let item = s.and_then(items);
            for (i, v) in a.iter_mut().enumerate() {
                prune_node(v, item, false, &index(path, i), out, embedded);
            }
        }
        _ => {}
    }
}

/// A node that preserves unknown fields: only what it declares is pruned.
fn skip_prune(
    x: &mut Value,
    s: Option<&Value>,
    root: bool,
    path: &str,
    out: &mut Vec<String>,
    embedded: &mut Vec<String>,
) {
    let Some(s) = s else { return };
    match x {
        Value::Object(m) => {
            let keeps_meta = root || flag(s, "x-kubernetes-embedded-resource");
            let props = properties(s);
            let extra = additional(s);
            for (k, v) in m.iter_mut() {
                if keeps_meta && META_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                let p = child(path, k);
                if let Some(prop) = props.and_then(|p| p.get(k)) {
                    prune_node(
                        v,
                        Some(prop).filter(|s| s.is_object()),
                        false,
                        &p,
                        out,
                        embedded,
                    );
                } else if let Some(extra) = extra {
                    prune_node(
                        v,
                        Some(extra).filter(|s| s.is_object()),
                        false,
                        &p,
                        out,
                        embedded,
                    );
                }
            }
            if keeps_meta {
                coerce_embedded(x, root, path, embedded);
            }
        }
        Value::Array(a) => {
            let item = items(s);
            for (i, v) in a.iter_mut().enumerate() {
                skip_prune(v, item, false, &index(path, i), out, embedded);
            }
        }
        _ => {}
    }
}

// ------------------------------------------------------------- defaulting

/// Removes the `null` values of fields whose schema is neither `nullable`
/// nor has a `default`, as the server's decoder does before defaulting (a
/// `null` there means "not set"). Nulls in lists stay (validation refuses
/// them).
pub fn drop_non_nullable_nulls(schema: &Value, obj: &mut Value) {
    if !schema.is_object() {
        return;
    }
    match obj {
        Value::Object(m) => {
            let props = properties(schema);
            let extra = additional(schema).filter(|s| s.is_object());
            m.retain(|k, v| {
                let Some(s) = props.and_then(|p| p.get(k)).or(extra) else {
                    return true;
                };
                if v.is_null() && s.get("default").is_none() && !flag(s, "nullable") {
                    return false;
                }
                drop_non_nullable_nulls(s, v);
                true
            });
        }
        Value::Array(a) => {
            if let Some(item) = items(schema) {
                for v in a {
                    drop_non_nullable_nulls(item, v);
                }
            }
        }
        _ => {}
    }
}

fn non_nullable_null(v: &Value, s: &Value) -> bool {
    v.is_null() && !flag(s, "nullable")
}

/// Applies the schema's `default`s, as the server does on every write (and
/// on every read from storage): a declared field that is missing, or `null`
/// while its schema is not `nullable`, gets a copy of its default; list
/// items and map values that are such a `null` get their schema's default
/// too. Defaults are applied top-down, so a defaulted object is defaulted
/// inside as well.
pub fn default(schema: &Value, obj: &mut Value) {
    if !schema.is_object() {
        return;
    }
    match obj {
        Value::Object(m) => {
            let props = properties(schema);
            if let Some(props) = props {
                for (k, prop) in props {
                    let Some(d) = prop.get("default") else {
                        continue;
                    };
                    // A `default: null` changes nothing (Go keeps nil).
                    if d.is_null() {
                        continue;
                    }
                    match m.get(k) {
                        None => {
                            m.insert(k.clone(), d.clone());
                        }
                        Some(v) if non_nullable_null(v, prop) => {
                            m.insert(k.clone(), d.clone());
                        }
                        Some(_) => {}
                    }
                }
            }
            let extra = additional(schema).filter(|s| s.is_object());
            for (k, v) in m.iter_mut() {
                if let Some(prop) = props.and_then(|p| p.get(k)) {
                    default(prop, v);
                } else if let Some(extra) = extra {
                    if non_nullable_null(v, extra)
                        && let Some(d) = extra.get("default").filter(|d| !d.is_null())
                    {
                        *v = d.clone();
                    }
                    default(extra, v);
                }
            }
        }
        Value::Array(a) => {
            let Some(item) = items(schema) else { return };
            for v in a {
                if non_nullable_null(v, item)
                    && let Some(d) = item.get("default").filter(|d| !d.is_null())
                {
                    *v = d.clone();
                }
                default(item, v);
            }
        }
        _ => {}
    }
}

// ------------------------------------------------------------- validation

/// Validates `obj` against `schema` as kube-openapi's schema validator
/// does, with the messages of the API server's 422 causes: types
/// (`nullable`, `x-kubernetes-int-or-string`), `required`, `enum`,
/// `minimum`/`maximum` (and exclusive), `multipleOf`, `minLength`/
/// `maxLength`, `pattern`, `format`, `minItems`/`maxItems`/`uniqueItems`,
/// `minProperties`/`maxProperties`, `items`, `properties`,
/// `additionalProperties`, `allOf`/`anyOf`/`oneOf`/`not`.
///
/// Not checked: `x-kubernetes-validations` (CEL) and list-type uniqueness.
pub fn validate(schema: &Value, obj: &Value) -> Vec<FieldError> {
    validate_update(schema, obj, None)
}

/// [`validate`] for an update, with validation ratcheting (GA in v1.33):
/// a part of the object that is unchanged from `old` (correlated by field
/// name, and by key in `x-kubernetes-list-type: map` lists) is not
/// validated again, so an object stored before its schema tightened can
/// still be updated elsewhere. Without `old` this is [`validate`].
pub fn validate_update(schema: &Value, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut out = Vec::new();
    if schema.is_object() {
        validate_node(schema, obj, old, "", &mut out);
    }
    out
}

/// The item of an old `listType: map` list with the same keys as `item`.
fn correlated_item<'a>(s: &Value, item: &Value, old: Option<&'a Value>) -> Option<&'a Value> {
    if s.get("x-kubernetes-list-type").and_then(Value::as_str) != Some("map") {
        return None;
    }
    let keys: Vec<&str> = s
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    if keys.is_empty() {
        return None;
    }
    old?.as_array()?
        .iter()
        .find(|o| keys.iter().all(|k| o.get(*k) == item.get(*k)))
}

/// kube-openapi's name of a JSON value's type.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if is_integer(n) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whether a JSON number is an integer (a float with no fraction counts, as
/// in kube-openapi).
fn is_integer(n: &serde_json::Number) -> bool {
    n.is_i64()
        || n.is_u64()
        || n.as_f64()
            .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
}

/// The schema's allowed types (`x-kubernetes-int-or-string` means
/// `integer,string`); empty for any type.
fn schema_types(s: &Value) -> Vec<&str> {
    if flag(s, "x-kubernetes-int-or-string") {
        return vec!["integer", "string"];
    }
    match s.get("type") {
        Some(Value::String(t)) if !t.is_empty() => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn type_allows(types: &[&str], actual: &str) -> bool {
    types.is_empty()
        || types.contains(&actual)
        || (actual == "integer" && types.contains(&"number"))
}

/// Go's `%v` of a float64: the shortest representation, with an exponent
/// (`1e+21`, `1e-05`) below 1e-4 and from 1e21 on.
fn go_float(f: f64) -> String {
    if !f.is_finite() {
        return if f.is_nan() {
            "NaN".into()
        } else if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return "0".into();
    }
    let exp = f.abs().log10().floor();
    if !(-4.0..21.0).contains(&exp) {
        // Rust's `{:e}` is `1e-5`; Go's is `1e-05`.
        let s = format!("{f:e}");
        let Some((mantissa, e)) = s.split_once('e') else {
            return s;
        };
        let (sign, digits) = match e.strip_prefix('-') {
            Some(d) => ('-', d),
            None => ('+', e),
        };
        return format!("{mantissa}e{sign}{digits:0>2}");
    }
    let s = format!("{f}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

/// A number as Go prints the value the JSON decoder made of it (`int64`
/// for integers, `float64` otherwise).
fn go_number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        i.to_string()
    } else if let Some(u) = n.as_u64() {
        // Beyond int64 the decoder makes a float64.
        go_float(u as f64)
    } else {
        go_float(n.as_f64().unwrap_or(0.0))
    }
}

/// Go's `%#v` of a decoded JSON value (inside maps and slices).
fn go_sharp(v: &Value) -> String {
    match v {
        Value::Null => "interface {}(nil)".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n),
        Value::String(s) => gofmt::quote(s),
        Value::Array(a) => format!(
            "[]interface {{}}{{{}}}",
            a.iter().map(go_sharp).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(m) => {
            // Go prints maps with their keys sorted.
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            format!(
                "map[string]interface {{}}{{{}}}",
                keys.iter()
                    .map(|k| format!("{}:{}", gofmt::quote(k), go_sharp(&m[k.as_str()])))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    }
}

/// A bad value as `field.Error` prints it: strings quoted, numbers and
/// booleans plain, `null` as `"null"`, maps and lists as Go's `%#v`.
fn render(v: &Value) -> String {
    match v {
        Value::Null => gofmt::quote("null"),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n),
        Value::String(s) => gofmt::quote(s),
        other => go_sharp(other),
    }
}

fn invalid(path: &str, value: &Value, detail: String) -> FieldError {
    FieldError::invalid_rendered(path, &render(value), &detail)
}

fn type_invalid(path: &str, shown: &str, detail: String) -> FieldError {
    FieldError {
        reason: FIELD_VALUE_TYPE_INVALID,
        field: path.to_string(),
        message: format!("Invalid value: {}: {detail}", gofmt::quote(shown)),
    }
}

fn too_many(path: &str, actual: Option<usize>, max: u64) -> FieldError {
    let detail = format!("must have at most {max} items");
    FieldError {
        reason: crate::field_error::FIELD_VALUE_TOO_MANY,
        field: path.to_string(),
        message: match actual {
            Some(a) => format!("Too many: {a}: {detail}"),
            None => format!("Too many: {detail}"),
        },
    }
}

fn num(s: &Value, key: &str) -> Option<f64> {
    s.get(key).and_then(Value::as_f64)
}

fn count(s: &Value, key: &str) -> Option<u64> {
    s.get(key).and_then(|v| {
        v.as_u64()
            .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
    })
}

fn validate_node(s: &Value, v: &Value, old: Option<&Value>, path: &str, out: &mut Vec<FieldError>) {
    if old.is_some_and(|o| json_equal(o, v)) {
        // Unchanged: ratcheted.
        return;
    }
    let types = schema_types(s);
    let actual = type_name(v);
    if v.is_null() {
        if !types.is_empty() && !flag(s, "nullable") {
            out.push(type_invalid(
                path,
                "null",
                format!(
                    "{path} in body must be of type {}: {}",
                    types.join(","),
                    gofmt::quote("null")
                ),
            ));
        }
    } else if !type_allows(&types, actual) {
        out.push(type_invalid(
            path,
            actual,
            format!(
                "{path} in body must be of type {}: {}",
                types.join(","),
                gofmt::quote(actual)
            ),
        ));
    } else {
        match v {
            Value::String(text) => validate_string(s, text, v, path, out),
            Value::Number(n) => validate_number(s, n, v, path, &types, out),
            Value::Array(a) => validate_array(s, a, old, path, out),
            Value::Object(m) => validate_object(s, m, old, path, out),
            _ => {}
        }
    }
    if let Some(allowed) = s.get("enum").and_then(Value::as_array)
        && !allowed.iter().any(|a| json_equal(a, v))
    {
        let values: Vec<String> = allowed
            .iter()
            .map(|a| match a {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect();
        let detail = if values.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = values.iter().map(|x| gofmt::quote(x)).collect();
            format!(": supported values: {}", quoted.join(", "))
        };
        out.push(FieldError {
            reason: crate::field_error::FIELD_VALUE_NOT_SUPPORTED,
            field: path.to_string(),
            message: format!("Unsupported value: {}{detail}", render(v)),
        });
    }
    validate_composition(s, v, old, path, out);
}

/// JSON equality with numbers compared by value (`1` equals `1.0`).
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, a)| y.get(k).is_some_and(|b| json_equal(a, b)))
        }
        _ => a == b,
    }
}

fn validate_string(s: &Value, text: &str, v: &Value, path: &str, out: &mut Vec<FieldError>) {
    let len = text.chars().count() as u64;
    if let Some(max) = count(s, "maxLength")
        && len > max
    {
        out.push(FieldError {
            reason: crate::field_error::FIELD_VALUE_TOO_LONG,
            field: path.to_string(),
            message: format!("Too long: may not be more than {max} bytes"),
        });
    }
    if let Some(min) = count(s, "minLength")
        && len < min
    {
        out.push(invalid(
            path,
            v,
            format!("{path} in body should be at least {min} chars long"),
        ));
    }
    if let Some(pattern) = s.get("pattern").and_then(Value::as_str)
        && let Ok(re) = regex::Regex::new(pattern)
        && !re.is_match(text)
    {
        out.push(invalid(
            path,
            v,
            format!("{path} in body should match '{pattern}'"),
        ));
    }
    if let Some(format) = s.get("format").and_then(Value::as_str)
        && !format_ok(format, text)
    {
        out.push(type_invalid(
            path,
            text,
            format!(
                "{path} in body must be of type {format}: {}",
                gofmt::quote(text)
            ),
        ));
    }
}

fn validate_number(
    s: &Value,
    n: &serde_json::Number,
    v: &Value,
    path: &str,
    types: &[&str],
    out: &mut Vec<FieldError>,
) {
    let f = n.as_f64().unwrap_or(0.0);
    // Whether the value fits the declared format (`int32`, `int64`,
    // `float`); a misfit is an error without a field path, as
    // kube-openapi reports it.
    let type_name = if types.contains(&"integer") {
        "integer"
    } else {
        "number"
    };
    if let Some(format) = s.get("format").and_then(Value::as_str) {
        let fits = match (type_name, format) {
            ("integer", "int32") => match n.as_i64() {
                Some(i) => i32::try_from(i).is_ok(),
                None => (f64::from(i32::MIN)..=f64::from(i32::MAX)).contains(&f),
            },
            ("integer", "int64") => n.as_i64().is_some() || (n.is_f64() && f.abs() < 9.2e18),
            ("number", "float") => f.abs() <= f64::from(f32::MAX),
            _ => true,
        };
        if !fits {
            out.push(FieldError {
                reason: FIELD_VALUE_INVALID,
                field: String::new(),
                message: format!(
                    "Invalid value: \"\": Checked value must be of type {type_name} with format {format} in {path}"
                ),
            });
        }
    }
    if let Some(m) = num(s, "multipleOf")
        && m > 0.0
    {
        let q = f / m;
        if (q - q.round()).abs() > 1e-9 {
            out.push(invalid(
                path,
                v,
                format!("{path} in body should be a multiple of {}", go_float(m)),
            ));
        }
    }
    if let Some(max) = num(s, "maximum") {
        let exclusive = flag(s, "exclusiveMaximum");
        if (exclusive && f >= max) || (!exclusive && f > max) {
            let how = if exclusive { "" } else { " or equal to" };
            out.push(invalid(
                path,
                v,
                format!("{path} in body should be less than{how} {}", go_float(max)),
            ));
        }
    }
    if let Some(min) = num(s, "minimum") {
        let exclusive = flag(s, "exclusiveMinimum");
        if (exclusive && f <= min) || (!exclusive && f < min) {
            let how = if exclusive { "" } else { " or equal to" };
            out.push(invalid(
                path,
                v,
                format!(
                    "{path} in body should be greater than{how} {}",
                    go_float(min)
                ),
            ));
        }
    }
}

fn validate_array(
    s: &Value,
    a: &[Value],
    old: Option<&Value>,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    let size = a.len();
    if let Some(min) = count(s, "minItems")
        && (size as u64) < min
    {
        out.push(FieldError::invalid_rendered(
            path,
            &size.to_string(),
            &format!("{path} in body should have at least {min} items"),
        ));
    }
    if let Some(max) = count(s, "maxItems")
        && (size as u64) > max
    {
        out.push(too_many(path, Some(size), max));
    }
    if flag(s, "uniqueItems")
        && a.iter()
            .enumerate()
            .any(|(i, x)| a[..i].iter().any(|y| json_equal(x, y)))
    {
        out.push(FieldError::invalid(
            path,
            "",
            &format!("{path} in body shouldn't contain duplicates"),
        ));
    }
    if let Some(item) = items(s) {
        for (i, v) in a.iter().enumerate() {
            validate_node(item, v, correlated_item(s, v, old), &index(path, i), out);
        }
    }
}

fn validate_object(
    s: &Value,
    m: &Map<String, Value>,
    old: Option<&Value>,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    if let Some(max) = count(s, "maxProperties")
        && (m.len() as u64) > max
    {
        out.push(too_many(path, None, max));
    }
    if let Some(min) = count(s, "minProperties")
        && (m.len() as u64) < min
    {
        out.push(FieldError::invalid(
            path,
            "",
            &format!("{path} in body should have at least {min} properties"),
        ));
    }
    if let Some(required) = s.get("required").and_then(Value::as_array) {
        for r in required.iter().filter_map(Value::as_str) {
            if !m.contains_key(r) {
                out.push(FieldError::required(child(path, r), ""));
            }
        }
    }
    let props = properties(s);
    let extra = additional(s).filter(|s| s.is_object());
    for (k, v) in m {
        if let Some(prop) = props.and_then(|p| p.get(k)).filter(|p| p.is_object()) {
            validate_node(prop, v, old.and_then(|o| o.get(k)), &child(path, k), out);
        } else if let Some(extra) = extra {
            validate_node(extra, v, old.and_then(|o| o.get(k)), &child(path, k), out);
        }
    }
}

/// `allOf`, `anyOf`, `oneOf` and `not`, with kube-openapi's texts.
fn validate_composition(
    s: &Value,
    v: &Value,
    old: Option<&Value>,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    if let Some(all) = s.get("allOf").and_then(Value::as_array) {
        for sub in all.iter().filter(|x| x.is_object()) {
            validate_node(sub, v, old, path, out);
        }
    }
    if let Some(any) = s.get("anyOf").and_then(Value::as_array) {
        let subs: Vec<&Value> = any.iter().filter(|x| x.is_object()).collect();
        let mut errs: Vec<FieldError> = Vec::new();
        let mut passed = false;
        for sub in &subs {
            let mut e = Vec::new();
            validate_node(sub, v, old, path, &mut e);
            if e.is_empty() {
                passed = true;
                break;
            }
            errs.extend(e);
        }
        if !subs.is_empty() && !passed {
            out.push(invalid(
                path,
                v,
                format!("{path} in body must validate at least one schema (anyOf)"),
            ));
            out.extend(errs);
        }
    }
    if let Some(one) = s.get("oneOf").and_then(Value::as_array) {
        let subs: Vec<&Value> = one.iter().filter(|x| x.is_object()).collect();
        let mut errs: Vec<FieldError> = Vec::new();
        let mut passed = 0;
        for sub in &subs {
            let mut e = Vec::new();
            validate_node(sub, v, old, path, &mut e);
            if e.is_empty() {
                passed += 1;
            } else {
                errs.extend(e);
            }
        }
        if !subs.is_empty() && passed != 1 {
            out.push(invalid(
                path,
                v,
                format!("{path} in body must validate one and only one schema (oneOf)"),
            ));
            if passed == 0 {
                out.extend(errs);
            }
        }
    }
    if let Some(not) = s.get("not").filter(|x| x.is_object()) {
        let mut e = Vec::new();
        validate_node(not, v, None, path, &mut e);
        if e.is_empty() {
            out.push(invalid(
                path,
                v,
                format!("{path} in body must not validate the schema (not)"),
            ));
        }
    }
}

// ---------------------------------------------------------------- formats

/// Whether a string has the format, for the formats the server's format
/// registry knows; unknown formats accept everything, as there.
fn format_ok(format: &str, s: &str) -> bool {
    match format {
        "date-time" | "datetime" => date_time_ok(s),
        "date" => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok() && s.len() == 10,
        "byte" => base64_ok(s),
        "uuid" => uuid_ok(s, None),
        "uuid3" => uuid_ok(s, Some('3')),
        "uuid4" => uuid_ok(s, Some('4')),
        "uuid5" => uuid_ok(s, Some('5')),
        "ipv4" => s.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<std::net::Ipv6Addr>().is_ok(),
        "cidr" => cidr_ok(s),
        "mac" => mac_ok(s),
        "hostname" => hostname_ok(s),
        "duration" => duration_ok(s),
        _ => true,
    }
}

fn date_time_ok(s: &str) -> bool {
    if chrono::DateTime::parse_from_rfc3339(s).is_ok() {
        return true;
    }
    // strfmt also takes a time without an offset and a `Z0700` offset.
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f%z"]
        .iter()
        .any(|f| {
            chrono::NaiveDateTime::parse_from_str(s, f).is_ok()
                || chrono::DateTime::parse_from_str(s, f).is_ok()
        })
}

fn base64_ok(s: &str) -> bool {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(4) {
        return false;
    }
    let pad = b.iter().rev().take_while(|c| **c == b'=').count();
    if pad > 2 {
        return false;
    }
    b[..b.len() - pad]
        .iter()
        .all(|c| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/')
}

fn uuid_ok(s: &str, version: Option<char>) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    let lens = [8, 4, 4, 4, 12];
    if parts.len() != 5
        || parts
            .iter()
            .zip(lens)
            .any(|(p, l)| p.len() != l || !p.chars().all(|c| c.is_ascii_hexdigit()))
    {
        return false;
    }
    match version {
        None => true,
        Some(v) => {
            parts[2].starts_with(v)
                && (v == '3' || parts[3].starts_with(['8', '9', 'a', 'b', 'A', 'B']))
        }
    }
}

fn cidr_ok(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    match ip.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => bits <= 32,
        Ok(std::net::IpAddr::V6(_)) => bits <= 128,
        Err(_) => false,
    }
}

fn mac_ok(s: &str) -> bool {
    let sep = if s.contains(':') { ':' } else { '-' };
    let parts: Vec<&str> = s.split(sep).collect();
    matches!(parts.len(), 6 | 8 | 20)
        && parts
            .iter()
            .all(|p| p.len() == 2 && p.chars().all(|c| c.is_ascii_hexdigit()))
}

fn hostname_ok(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 255
        && s.trim_end_matches('.').split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
}

/// A Go duration (`1h30m`, `500ms`) or strfmt's `3 days` forms; the
/// digits-and-units form is what CRDs use in practice.
fn duration_ok(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    if s == "0" {
        return true;
    }
    let mut rest = s;
    let mut any = false;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if digits == 0 {
            return false;
        }
        rest = &rest[digits..];
        let unit = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let u = rest[..unit].trim();
        if !matches!(
            u,
            "ns" | "us"
                | "µs"
                | "ms"
                | "s"
                | "m"
                | "h"
                | "d"
                | "w"
                | "day"
                | "days"
                | "hour"
                | "hours"
                | "minute"
                | "minutes"
                | "second"
                | "seconds"
        ) {
            return false;
        }
        rest = &rest[unit..];
        any = true;
    }
    any
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn widget_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
                        "replicas": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 10, "default": 1},
                        "color": {"type": "string", "enum": ["red", "blue"]},
                        "ratio": {"type": "number", "exclusiveMaximum": true, "maximum": 1},
                        "when": {"type": "string", "format": "date-time"},
                        "port": {"x-kubernetes-int-or-string": true},
                        "tags": {"type": "array", "maxItems": 2, "minItems": 1, "items": {"type": "string"}},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "nested": {
                            "type": "object",
                            "default": {},
                            "properties": {"mode": {"type": "string", "default": "fast"}}
                        },
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                                 "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}}},
                        "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                                     "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}}},
                        "maybe": {"type": "string", "nullable": true},
                        "items": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}}}}
                    }
                },
                "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
            }
        })
    }

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn prune_removes_what_the_schema_does_not_declare() {
        let mut obj = json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "labels": {"a": "b"}, "colour": "red"},
            "spec": {
                "name": "ab", "zzz": 1, "foo": {"deep": true},
                "labels": {"any": "key"},
                "free": {"anything": [1, 2], "known": {"a": "x", "b": "y"}},
                "template": {"apiVersion": "v1", "kind": "Pod",
                             "metadata": {"name": "p", "bogus": 1},
                             "spec": {"x": "1", "y": "2"}, "other": 3},
                "items": [{"id": 1, "extra": 2}]
            },
            "status": {"ready": true, "noise": 1},
            "top": 1
        });
        let pruned = prune(&widget_schema(), &mut obj);
        assert_eq!(
            pruned,
            [
                "metadata.colour",
                "spec.foo",
                "spec.free.known.b",
                "spec.items[0].extra",
                "spec.template.other",
                "spec.template.spec.y",
                "spec.zzz",
                "status.noise",
                "top",
                "spec.template.metadata.bogus",
            ]
        );
        assert_eq!(
            obj,
            json!({
                "apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w", "labels": {"a": "b"}},
                "spec": {
                    "name": "ab",
                    "labels": {"any": "key"},
                    "free": {"anything": [1, 2], "known": {"a": "x"}},
                    "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                 "spec": {"x": "1"}},
                    "items": [{"id": 1}]
                },
                "status": {"ready": true}
            })
        );
    }

    #[test]
    fn a_preserving_root_keeps_everything_undeclared() {
        let schema = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        let mut obj =
            json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "n"}, "spec": {"x": 1}});
        assert!(prune(&schema, &mut obj).is_empty());
        assert_eq!(obj["spec"]["x"], 1);
    }

    #[test]
    fn defaults_fill_missing_and_non_nullable_null_fields() {
        let schema = widget_schema();
        let mut obj = json!({"spec": {"name": "ab"}});
        default(&schema, &mut obj);
        assert_eq!(obj["spec"]["replicas"], 1);
        // The defaulted object is defaulted inside too.
        assert_eq!(obj["spec"]["nested"], json!({"mode": "fast"}));

        let mut obj = json!({"spec": {"name": "ab", "replicas": null, "nested": {"mode": null}}});
        default(&schema, &mut obj);
        assert_eq!(obj["spec"]["replicas"], 1);
        assert_eq!(obj["spec"]["nested"]["mode"], "fast");

        // A set value is kept.
        let mut obj = json!({"spec": {"name": "ab", "replicas": 7}});
        default(&schema, &mut obj);
        assert_eq!(obj["spec"]["replicas"], 7);

        // A nullable field's null stays null.
        let nullable = json!({"type": "object", "properties": {
            "x": {"type": "string", "nullable": true, "default": "d"}}});
        let mut obj = json!({"x": null});
        default(&nullable, &mut obj);
        assert_eq!(obj, json!({"x": null}));
    }

    #[test]
    fn non_nullable_nulls_without_default_are_dropped() {
        let schema = widget_schema();
        let mut obj =
            json!({"spec": {"name": "ab", "color": null, "maybe": null, "replicas": null}});
        drop_non_nullable_nulls(&schema, &mut obj);
        // `color` has no default and is not nullable: gone. `maybe` is
        // nullable, `replicas` has a default: both stay for defaulting.
        assert_eq!(
            obj,
            json!({"spec": {"name": "ab", "maybe": null, "replicas": null}})
        );
    }

    #[test]
    fn validation_messages_are_the_servers() {
        let schema = widget_schema();
        let obj = json!({"spec": {"replicas": "string", "color": "pink"}});
        assert_eq!(
            messages(&validate(&schema, &obj)),
            [
                "spec.name: Required value",
                "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
                "spec.color: Unsupported value: \"pink\": supported values: \"red\", \"blue\"",
            ]
        );
        let errs = validate(&schema, &obj);
        assert_eq!(errs[0].reason, "FieldValueRequired");
        assert_eq!(errs[1].reason, "FieldValueTypeInvalid");
        assert_eq!(errs[2].reason, "FieldValueNotSupported");

        let obj = json!({"spec": {"name": "A", "replicas": 0, "ratio": 1, "tags": [],
            "when": "yesterday", "port": true, "labels": {"a": 1}}});
        assert_eq!(
            messages(&validate(&schema, &obj)),
            [
                "spec.name: Invalid value: \"A\": spec.name in body should be at least 2 chars long",
                "spec.name: Invalid value: \"A\": spec.name in body should match '^[a-z]+$'",
                "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
                "spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1",
                "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items",
                "spec.when: Invalid value: \"yesterday\": spec.when in body must be of type date-time: \"yesterday\"",
                "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"",
                "spec.labels.a: Invalid value: \"integer\": spec.labels.a in body must be of type string: \"integer\"",
            ]
        );

        let obj = json!({"spec": {"name": "abcdefg", "replicas": 11, "tags": ["a", "b", "c"],
            "port": "http", "when": "2024-01-02T03:04:05Z", "maybe": null, "items": [{"id": 1.5}, null]}});
        assert_eq!(
            messages(&validate(&schema, &obj)),
            [
                "spec.name: Too long: may not be more than 5 bytes",
                "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10",
                "spec.tags: Too many: 3: must have at most 2 items",
                "spec.items[0].id: Invalid value: \"number\": spec.items[0].id in body must be of type integer: \"number\"",
                "spec.items[1]: Invalid value: \"null\": spec.items[1] in body must be of type object: \"null\"",
            ]
        );
    }

    #[test]
    fn valid_objects_have_no_errors() {
        let schema = widget_schema();
        let obj = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
            "spec": {"name": "ab", "replicas": 3.0, "color": "red", "ratio": 0.5, "port": 80,
                     "tags": ["x"], "labels": {"a": "b"}, "when": "2024-01-02T03:04:05.5+02:00"}});
        assert!(validate(&schema, &obj).is_empty());
    }

    #[test]
    fn int32_overflow_and_formats() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "integer", "format": "int32"},
            "b": {"type": "string", "format": "byte"},
            "u": {"type": "string", "format": "uuid"},
            "ip": {"type": "string", "format": "ipv4"},
            "d": {"type": "string", "format": "date"}}});
        let errs = validate(
            &schema,
            &json!({"n": 3_000_000_000_i64, "b": "not base64!", "u": "nope", "ip": "1.2.3", "d": "2024-13-01"}),
        );
        assert_eq!(
            messages(&errs),
            [
                ": Invalid value: \"\": Checked value must be of type integer with format int32 in n",
                "b: Invalid value: \"not base64!\": b in body must be of type byte: \"not base64!\"",
                "u: Invalid value: \"nope\": u in body must be of type uuid: \"nope\"",
                "ip: Invalid value: \"1.2.3\": ip in body must be of type ipv4: \"1.2.3\"",
                "d: Invalid value: \"2024-13-01\": d in body must be of type date: \"2024-13-01\"",
            ]
        );
        assert!(
            validate(
                &schema,
                &json!({"n": 5, "b": "aGk=", "u": "123e4567-e89b-12d3-a456-426614174000", "ip": "10.0.0.1", "d": "2024-02-29"})
            )
            .is_empty()
        );
    }

    #[test]
    fn unchanged_parts_are_ratcheted_on_update() {
        let schema = widget_schema();
        // Stored before the schema said `color` is red or blue.
        let old = json!({"spec": {"name": "ab", "color": "pink", "items": [{"id": "x"}]}});
        let new = json!({"spec": {"name": "abc", "color": "pink", "items": [{"id": "x"}]}});
        assert!(validate_update(&schema, &new, Some(&old)).is_empty());
        assert_eq!(validate(&schema, &new).len(), 2);
        // A changed value is validated.
        let new = json!({"spec": {"name": "ab", "color": "green", "items": [{"id": "x"}]}});
        assert_eq!(
            messages(&validate_update(&schema, &new, Some(&old))),
            ["spec.color: Unsupported value: \"green\": supported values: \"red\", \"blue\""]
        );
        // Items of an atomic list are not correlated: a changed list is
        // validated item by item.
        let new =
            json!({"spec": {"name": "ab", "color": "pink", "items": [{"id": "x"}, {"id": 1}]}});
        assert_eq!(validate_update(&schema, &new, Some(&old)).len(), 1);
        // Items of a map list are correlated by key.
        let schema = json!({"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["k"],
            "items": {"type": "object", "properties": {"k": {"type": "string"}, "v": {"type": "integer"}}}});
        let old = json!([{"k": "a", "v": "bad"}]);
        let new = json!([{"k": "b", "v": 1}, {"k": "a", "v": "bad"}]);
        assert!(validate_update(&schema, &new, Some(&old)).is_empty());
        assert_eq!(validate(&schema, &new).len(), 1);
    }

    #[test]
    fn enums_of_other_types_are_printed_as_json() {
        let schema = json!({"type": "integer", "enum": [1, 2]});
        assert_eq!(
            messages(&validate(&schema, &json!(3))),
            [": Unsupported value: 3: supported values: \"1\", \"2\""]
        );
        assert!(validate(&schema, &json!(2.0)).is_empty());
    }

    #[test]
    fn go_number_printing() {
        assert_eq!(go_float(1.0), "1");
        assert_eq!(go_float(1.5), "1.5");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(0.00001), "1e-05");
        assert_eq!(go_float(0.0001), "0.0001");
        assert_eq!(
            render(&json!({"b": [1, "x"], "a": null})),
            "map[string]interface {}{\"a\":interface {}(nil), \"b\":[]interface {}{1, \"x\"}}"
        );
    }

    #[test]
    fn composition_keywords() {
        let schema = json!({"anyOf": [{"type": "integer"}, {"type": "string"}]});
        assert!(validate(&schema, &json!(1)).is_empty());
        let errs = validate(&schema, &json!(true));
        assert!(
            errs[0]
                .message
                .ends_with("must validate at least one schema (anyOf)")
        );
        let schema = json!({"not": {"type": "string"}});
        assert_eq!(validate(&schema, &json!("a")).len(), 1);
        assert!(validate(&schema, &json!(1)).is_empty());
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|i| json!(i)),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| json!(f)),
            "[a-z]{0,4}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 40, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map("[a-c]{1,2}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn arb_schema() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(
                json!({"type": "string", "minLength": 1, "maxLength": 3, "pattern": "^[a-b]*$", "format": "date-time"})
            ),
            Just(
                json!({"type": "integer", "minimum": -5, "maximum": 5, "format": "int32", "multipleOf": 2})
            ),
            Just(json!({"type": "number", "exclusiveMinimum": true, "minimum": 0, "default": 1.5})),
            Just(json!({"type": "boolean", "nullable": true, "enum": [true, null]})),
            Just(json!({"x-kubernetes-int-or-string": true, "default": "x"})),
            Just(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})),
            Just(json!({"type": "string", "pattern": "(unclosed"})),
            Just(json!({})),
            Just(json!(7)),
        ];
        leaf.prop_recursive(4, 40, 4, |inner| {
            prop_oneof![
                (inner.clone(), 0u8..3).prop_map(|(i, n)| json!({"type": "array", "items": i, "maxItems": n, "uniqueItems": true})),
                proptest::collection::btree_map("[a-c]{1,2}", inner.clone(), 0..4).prop_map(|m| {
                    let required: Vec<&String> = m.keys().take(1).collect();
                    json!({"type": "object", "properties": m, "required": required, "default": {}})
                }),
                inner.clone().prop_map(|i| json!({"type": "object", "additionalProperties": i, "maxProperties": 2})),
                inner.clone().prop_map(|i| json!({"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": i}})),
                (inner.clone(), inner).prop_map(|(a, b)| json!({"anyOf": [a.clone(), b.clone()], "oneOf": [a, b.clone()], "not": b})),
            ]
        })
    }

    proptest! {
        #[test]
        fn never_panics_and_prune_is_idempotent(schema in arb_schema(), obj in arb_json()) {
            let mut o = obj.clone();
            let _ = prune(&schema, &mut o);
            let once = o.clone();
            prop_assert!(prune(&schema, &mut o).is_empty());
            prop_assert_eq!(&o, &once);
            drop_non_nullable_nulls(&schema, &mut o);
            default(&schema, &mut o);
            let _ = validate(&schema, &o);
            let _ = validate(&schema, &obj);
        }

        #[test]
        fn pruned_objects_lose_exactly_the_reported_paths(schema in arb_schema(), obj in arb_json()) {
            // Reported paths are unique: each field is pruned once.
            let mut o = obj;
            let paths = prune(&schema, &mut o);
            let mut sorted = paths.clone();
            sorted.sort();
            sorted.dedup();
            prop_assert_eq!(sorted.len(), paths.len());
        }
    }
}
