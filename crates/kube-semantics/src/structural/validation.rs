//! Validation of a custom resource against its structural schema: types,
//! bounds, lengths, patterns, enums, required fields, with the API server's
//! field errors.
//!
//! This module must NOT check string formats itself (see `formats`).

use super::*;

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
pub(super) fn correlated_item<'a>(
    s: &Value,
    item: &Value,
    old: Option<&'a Value>,
) -> Option<&'a Value> {
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
pub(super) fn type_name(v: &Value) -> &'static str {
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
pub(super) fn is_integer(n: &serde_json::Number) -> bool {
    n.is_i64()
        || n.is_u64()
        || n.as_f64()
            .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
}

/// The schema's allowed types (`x-kubernetes-int-or-string` means
/// `integer,string`); empty for any type.
pub(super) fn schema_types(s: &Value) -> Vec<&str> {
    if flag(s, "x-kubernetes-int-or-string") {
        return vec!["integer", "string"];
    }
    match s.get("type") {
        Some(Value::String(t)) if !t.is_empty() => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

pub(super) fn type_allows(types: &[&str], actual: &str) -> bool {
    types.is_empty()
        || types.contains(&actual)
        || (actual == "integer" && types.contains(&"number"))
}

/// Go's `%v` of a float64: the shortest representation, with an exponent
/// (`1e+21`, `1e-05`) below 1e-4 and from 1e21 on.
pub(super) fn go_float(f: f64) -> String {
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
pub(super) fn go_number(n: &serde_json::Number) -> String {
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
pub(super) fn go_sharp(v: &Value) -> String {
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
pub(super) fn render(v: &Value) -> String {
    match v {
        Value::Null => gofmt::quote("null"),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n),
        Value::String(s) => gofmt::quote(s),
        other => go_sharp(other),
    }
}

pub(super) fn invalid(path: &str, value: &Value, detail: String) -> FieldError {
    FieldError::invalid_rendered(path, &render(value), &detail)
}

pub(super) fn type_invalid(path: &str, shown: &str, detail: String) -> FieldError {
    FieldError {
        reason: FIELD_VALUE_TYPE_INVALID,
        field: path.to_string(),
        message: format!("Invalid value: {}: {detail}", gofmt::quote(shown)),
    }
}

pub(super) fn too_many(path: &str, actual: Option<usize>, max: u64) -> FieldError {
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

pub(super) fn num(s: &Value, key: &str) -> Option<f64> {
    s.get(key).and_then(Value::as_f64)
}

pub(super) fn count(s: &Value, key: &str) -> Option<u64> {
    s.get(key).and_then(|v| {
        v.as_u64()
            .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
    })
}

pub(super) fn validate_node(
    s: &Value,
    v: &Value,
    old: Option<&Value>,
    path: &str,
    out: &mut Vec<FieldError>,
) {
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
pub(super) fn json_equal(a: &Value, b: &Value) -> bool {
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

pub(super) fn validate_string(
    s: &Value,
    text: &str,
    v: &Value,
    path: &str,
    out: &mut Vec<FieldError>,
) {
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

pub(super) fn validate_number(
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

pub(super) fn validate_array(
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

pub(super) fn validate_object(
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
pub(super) fn validate_composition(
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
