//! Reading the stored JSON the way the Go printers read typed objects (a
//! missing or ill-typed field is Go's zero value), and the shared formatting of
//! times, labels, selectors, containers and lists.
//!
//! This module must NOT know any kind: the per-group modules build rows from
//! these pieces.

use super::*;

pub(super) fn get<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut cur = v;
    for key in path {
        cur = cur.as_object()?.get(*key)?;
    }
    Some(cur)
}

pub(super) fn st<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    get(v, path).and_then(Value::as_str).unwrap_or("")
}

pub(super) fn ost<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    get(v, path).and_then(Value::as_str)
}

pub(super) fn int(v: &Value, path: &[&str]) -> i64 {
    oint(v, path).unwrap_or(0)
}

pub(super) fn oint(v: &Value, path: &[&str]) -> Option<i64> {
    get(v, path).and_then(Value::as_i64)
}

pub(super) fn boolean(v: &Value, path: &[&str]) -> Option<bool> {
    get(v, path).and_then(Value::as_bool)
}

pub(super) fn arr<'a>(v: &'a Value, path: &[&str]) -> &'a [Value] {
    get(v, path)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

pub(super) fn map<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Map<String, Value>> {
    get(v, path).and_then(Value::as_object)
}

/// A pointer to a struct in Go: set when the field holds an object.
pub(super) fn present<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    get(v, path).filter(|v| v.is_object())
}

pub(super) fn len_of(v: &Value, path: &[&str]) -> i64 {
    match get(v, path) {
        Some(Value::Array(a)) => a.len() as i64,
        Some(Value::Object(m)) => m.len() as i64,
        _ => 0,
    }
}

pub(super) fn name(o: &Value) -> &str {
    st(o, &["metadata", "name"])
}

pub(super) fn deleting(o: &Value) -> bool {
    get(o, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null())
}

pub(super) fn zero_time() -> Option<DateTime<Utc>> {
    Utc.with_ymd_and_hms(1, 1, 1, 0, 0, 0).single()
}

/// An RFC 3339 timestamp; `None` for Go's zero time too, which upstream
/// prints as unknown.
pub(super) fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    let t = DateTime::parse_from_rfc3339(s).ok()?.with_timezone(&Utc);
    if Some(t) == zero_time() {
        None
    } else {
        Some(t)
    }
}

pub(super) fn time(v: &Value, path: &[&str]) -> Option<DateTime<Utc>> {
    ost(v, path).and_then(parse_time)
}

/// Nanoseconds from `from` to `to`, saturating like Go's `Time.Sub`.
pub(super) fn nanos_between(from: DateTime<Utc>, to: DateTime<Utc>) -> i64 {
    let d = to.signed_duration_since(from);
    d.num_nanoseconds()
        .unwrap_or(if d < chrono::TimeDelta::zero() {
            i64::MIN
        } else {
            i64::MAX
        })
}

pub(super) fn since(t: Option<DateTime<Utc>>, now: DateTime<Utc>) -> String {
    match t {
        None => "<unknown>".to_string(),
        Some(t) => human_duration(nanos_between(t, now)),
    }
}

pub(super) fn created(o: &Value, now: DateTime<Utc>) -> Value {
    since(time(o, &["metadata", "creationTimestamp"]), now).into()
}

/// Keeps the later of two times, as `if last.Before(&t) { last = t }`.
pub(super) fn keep_later(last: &mut Option<DateTime<Utc>>, t: Option<DateTime<Utc>>) {
    if let Some(t) = t
        && last.is_none_or(|l| l < t)
    {
        *last = Some(t);
    }
}

/// `Quantity.String()` of a stored quantity. Stored quantities are taken
/// as already canonical (the real server re-serializes them canonically);
/// a missing one is the zero quantity, "0".
pub(super) fn quantity(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "0".to_string(),
    }
}

/// `labels.FormatLabels`: `k=v` sorted by key, comma separated; `<none>`.
pub(super) fn format_labels(m: Option<&Map<String, Value>>) -> String {
    let mut pairs: Vec<(&str, &str)> = m
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    pairs.sort();
    let s = pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    if s.is_empty() {
        "<none>".to_string()
    } else {
        s
    }
}

/// `metav1.LabelSelectorAsSelector(..).String()` of a `LabelSelector`
/// (`a=b,c in (d,e),!f`, requirements sorted by key), as a Scale's
/// `status.selector` carries it; `None` where upstream fails to build the
/// selector, an empty string for a missing or empty one.
pub fn label_selector_string(sel: Option<&Value>) -> Option<String> {
    selector_string(sel).ok()
}

/// `metav1.LabelSelectorAsSelector(..).String()`: `Err` where upstream
/// fails to build the selector (bad operator, key or value, wrong number of
/// values); an empty string for a missing or empty selector.
pub(super) fn selector_string(sel: Option<&Value>) -> Result<String, ()> {
    let Some(sel) = sel.and_then(Value::as_object) else {
        return Ok(String::new());
    };
    let mut reqs: Vec<(String, String)> = Vec::new();
    if let Some(labels) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in labels {
            let v = v.as_str().unwrap_or("");
            if !is_qualified_name(k).is_empty() || !is_valid_label_value(v).is_empty() {
                return Err(());
            }
            reqs.push((k.clone(), format!("{k}={v}")));
        }
    }
    for expr in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
    {
        let key = st(expr, &["key"]);
        let mut values: Vec<&str> = arr(expr, &["values"])
            .iter()
            .map(|v| v.as_str().unwrap_or(""))
            .collect();
        if !is_qualified_name(key).is_empty()
            || values.iter().any(|v| !is_valid_label_value(v).is_empty())
        {
            return Err(());
        }
        values.sort_unstable();
        let text = match st(expr, &["operator"]) {
            "In" | "NotIn" if values.is_empty() => return Err(()),
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" | "DoesNotExist" if !values.is_empty() => return Err(()),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => return Err(()),
        };
        reqs.push((key.to_string(), text));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(reqs
        .into_iter()
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join(","))
}

/// `metav1.FormatLabelSelector`: `<none>` when empty, `<error>` when invalid.
pub(super) fn format_label_selector(sel: Option<&Value>) -> String {
    match selector_string(sel) {
        Ok(s) if s.is_empty() => "<none>".to_string(),
        Ok(s) => s,
        Err(()) => "<error>".to_string(),
    }
}

/// Container names and images, each joined with commas.
pub(super) fn layout_containers(containers: &[Value]) -> (String, String) {
    let names: Vec<&str> = containers.iter().map(|c| st(c, &["name"])).collect();
    let images: Vec<&str> = containers.iter().map(|c| st(c, &["image"])).collect();
    (names.join(","), images.join(","))
}

pub(super) fn wide_containers(cells: &mut Vec<Value>, containers: &[Value]) {
    let (names, images) = layout_containers(containers);
    cells.push(names.into());
    cells.push(images.into());
}

/// Up to `max` items joined with commas, then ` + N more...`; `<unset>`
/// when there are none.
pub(super) fn list_with_more(list: &[String], total: usize, max: usize) -> String {
    let shown = list.iter().take(max).cloned().collect::<Vec<_>>().join(",");
    if total > max {
        return format!("{shown} + {} more...", total - max);
    }
    if shown.is_empty() {
        "<unset>".to_string()
    } else {
        shown
    }
}

pub(super) fn bool_text(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// `IntOrString.String()`, or `N/A` when unset.
pub(super) fn int_or_string(v: Option<&Value>) -> String {
    match v {
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) => s.clone(),
        _ => "N/A".to_string(),
    }
}

pub(super) fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// The first condition of `type_` decides (status "True").
pub(super) fn condition_true(conditions: &[Value], type_: &str) -> bool {
    conditions
        .iter()
        .find(|c| st(c, &["type"]) == type_)
        .is_some_and(|c| st(c, &["status"]) == "True")
}
