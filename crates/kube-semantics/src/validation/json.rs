//! Typed views of untyped JSON (a value of the wrong type reads as absent) and
//! the Go `%#v` renderings of composite values that some messages print.
//!
//! This module must NOT report errors: it only reads values and formats them.

use super::*;

pub(super) fn get<'a>(v: &'a Value, k: &str) -> Option<&'a Value> {
    v.as_object()
        .and_then(|m| m.get(k))
        .filter(|x| !x.is_null())
}

pub(super) fn map_at<'a>(v: &'a Value, k: &str) -> Option<&'a Map<String, Value>> {
    get(v, k).and_then(Value::as_object)
}

pub(super) fn string<'a>(v: &'a Value, k: &str) -> &'a str {
    get(v, k).and_then(Value::as_str).unwrap_or("")
}

pub(super) fn opt_string<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    get(v, k).and_then(Value::as_str)
}

pub(super) fn arr<'a>(v: &'a Value, k: &str) -> &'a [Value] {
    get(v, k)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

pub(super) fn int(v: &Value, k: &str) -> Option<i64> {
    get(v, k).and_then(as_int)
}

pub(super) fn as_int(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e18)
            .map(|f| f as i64)
    })
}

pub(super) fn strings_of<'a>(v: &'a Value, k: &str) -> Vec<&'a str> {
    arr(v, k).iter().filter_map(Value::as_str).collect()
}

/// A `map[string]string` field: non-string values are skipped.
pub(super) fn string_map<'a>(v: &'a Value, k: &str) -> Option<BTreeMap<&'a str, &'a str>> {
    map_at(v, k).map(|m| {
        m.iter()
            .filter_map(|(k, v)| v.as_str().map(|s| (k.as_str(), s)))
            .collect()
    })
}

pub(super) fn go_string_slice(items: Option<&[&str]>) -> String {
    match items {
        None => "[]string(nil)".to_string(),
        Some(items) => {
            let q: Vec<String> = items.iter().map(|s| quote(s)).collect();
            format!("[]string{{{}}}", q.join(", "))
        }
    }
}

pub(super) fn go_string_map(m: Option<&BTreeMap<&str, &str>>) -> String {
    match m {
        None => "map[string]string(nil)".to_string(),
        Some(m) => {
            let parts: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}:{}", quote(k), quote(v)))
                .collect();
            format!("map[string]string{{{}}}", parts.join(", "))
        }
    }
}

/// `%#v` of a `metav1.LabelSelector` (the form kubectl users know from
/// `spec.selector: Invalid value: v1.LabelSelector{...}: field is immutable`).
/// `null` stands for a nil selector.
pub(super) fn go_label_selector(sel: Option<&Value>) -> String {
    let Some(sel) = sel.filter(|s| s.is_object()) else {
        return "null".to_string();
    };
    let labels = string_map(sel, "matchLabels");
    let exprs = match get(sel, "matchExpressions").and_then(Value::as_array) {
        None => "[]v1.LabelSelectorRequirement(nil)".to_string(),
        Some(items) => {
            let parts: Vec<String> = items
                .iter()
                .map(|e| {
                    let values = get(e, "values")
                        .and_then(Value::as_array)
                        .map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>());
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{}}}",
                        quote(string(e, "key")),
                        quote(string(e, "operator")),
                        go_string_slice(values.as_deref())
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", parts.join(", "))
        }
    };
    format!(
        "v1.LabelSelector{{MatchLabels:{}, MatchExpressions:{}}}",
        go_string_map(labels.as_ref()),
        exprs
    )
}

/// How an `intstr.IntOrString` prints (it is a `fmt.Stringer`: unquoted).
pub(super) fn go_int_or_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => as_int(other).map_or_else(|| other.to_string(), |n| n.to_string()),
    }
}
