//! `Table` responses (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`),
//! which kubectl asks for to print `get` output.
//!
//! Built-in kinds get the columns of the real server's printers
//! (`kube_semantics::printers`, including the `-o wide` ones at priority
//! 1); custom resources get Name and the printer columns their CRD
//! declares (simple JSONPaths), as apiextensions-apiserver's table
//! convertor builds them.

use serde_json::{Value, json};

use crate::registry::Resource;

/// One step of a printer column's JSONPath.
#[derive(Debug, PartialEq)]
enum Step {
    /// `.name` or `['name']`.
    Key(String),
    /// `[2]` (negative counts from the end).
    Index(i64),
    /// `[*]` or `..`-less wildcard: every element.
    All,
    /// `[?(@.a.b=="x")]`: the elements whose field equals the literal.
    Filter(Vec<String>, Value),
}

/// Parses the simple JSONPaths CRDs use (`.spec.size`,
/// `.status.conditions[?(@.type=="Ready")].status`, `.spec.items[0]`);
/// `None` for anything else.
fn parse_path(path: &str) -> Option<Vec<Step>> {
    let mut steps = Vec::new();
    let mut rest = path.trim();
    // `{.spec}` is accepted as the server wraps the path in braces itself.
    rest = rest
        .strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .unwrap_or(rest);
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            if end > 0 {
                steps.push(Step::Key(r[..end].to_string()));
            }
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            let inner = r[..end].trim();
            // A filter may contain `]` only inside its literal; the paths
            // CRDs use do not.
            rest = &r[end + 1..];
            if inner == "*" {
                steps.push(Step::All);
            } else if let Some(f) = inner.strip_prefix("?(").and_then(|f| f.strip_suffix(')')) {
                let (lhs, rhs) = f.split_once("==")?;
                let field: Vec<String> = lhs
                    .trim()
                    .strip_prefix('@')?
                    .split('.')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect();
                let rhs = rhs.trim();
                let literal = if let Some(q) = rhs
                    .strip_prefix('"')
                    .and_then(|q| q.strip_suffix('"'))
                    .or_else(|| rhs.strip_prefix('\'').and_then(|q| q.strip_suffix('\'')))
                {
                    Value::String(q.to_string())
                } else {
                    serde_json::from_str(rhs).ok()?
                };
                steps.push(Step::Filter(field, literal));
            } else if let Some(k) = inner
                .strip_prefix('\'')
                .and_then(|k| k.strip_suffix('\''))
                .or_else(|| inner.strip_prefix('"').and_then(|k| k.strip_suffix('"')))
            {
                steps.push(Step::Key(k.to_string()));
            } else {
                steps.push(Step::Index(inner.parse().ok()?));
            }
        } else {
            return None;
        }
    }
    Some(steps)
}

/// The first value a JSONPath finds (missing keys find nothing, as with
/// the server's `AllowMissingKeys`).
fn json_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let steps = parse_path(path)?;
    let mut current: Vec<&Value> = vec![obj];
    for step in &steps {
        let mut next = Vec::new();
        for v in current {
            match step {
                Step::Key(k) => next.extend(v.get(k.as_str())),
                Step::Index(i) => {
                    if let Some(a) = v.as_array() {
                        let n = a.len() as i64;
                        let at = if *i < 0 { n + i } else { *i };
                        if (0..n).contains(&at) {
                            next.extend(usize::try_from(at).ok().and_then(|at| a.get(at)));
                        }
                    }
                }
                Step::All => match v {
                    Value::Array(a) => next.extend(a.iter()),
                    Value::Object(m) => next.extend(m.values()),
                    _ => {}
                },
                Step::Filter(field, literal) => {
                    if let Some(a) = v.as_array() {
                        next.extend(a.iter().filter(|item| {
                            field
                                .iter()
                                .try_fold(*item, |cur, k| cur.get(k.as_str()))
                                .is_some_and(|found| found == literal)
                        }));
                    }
                }
            }
        }
        current = next;
    }
    current.into_iter().next()
}

/// A number as Go's JSON encoder writes a float64 (`3`, not `3.0`).
fn float_cell(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        json!(f as i64)
    } else {
        json!(f)
    }
}

/// A value as Go's JSON encoder writes the decoded value: map keys sorted,
/// floats without a needless `.0`.
fn go_json(v: &Value) -> String {
    match v {
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(f)) => float_cell(f).to_string(),
            _ => n.to_string(),
        },
        Value::Array(a) => format!("[{}]", a.iter().map(go_json).collect::<Vec<_>>().join(",")),
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .iter()
                .map(|k| {
                    format!(
                        "{}:{}",
                        Value::String((*k).clone()),
                        go_json(&m[k.as_str()])
                    )
                })
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        other => other.to_string(),
    }
}

/// A cell as the server's CRD table convertor makes it from the value the
/// column's path found: typed by the column's type, `null` when the value
/// does not have it; `string` columns print any value (objects and lists
/// as JSON); `date` columns show the age (`<invalid>` for a value that is
/// not a timestamp).
fn cell(type_: &str, value: Option<&Value>, now: chrono::DateTime<chrono::Utc>) -> Value {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Value::Null;
    };
    match (type_, value) {
        ("string", Value::String(s)) => json!(s),
        ("string", other) => json!(go_json(other)),
        ("integer", Value::Number(n)) => match n.as_i64() {
            Some(i) => json!(i),
            None => n.as_f64().map(|f| json!(f as i64)).unwrap_or(Value::Null),
        },
        ("number", Value::Number(n)) => n.as_f64().map(float_cell).unwrap_or(Value::Null),
        ("boolean", Value::Bool(b)) => json!(b),
        ("date", Value::String(s)) => {
            if chrono::DateTime::parse_from_rfc3339(s).is_err() {
                json!("<invalid>")
            } else {
                json!(kube_semantics::printers::age(Some(s), now))
            }
        }
        _ => Value::Null,
    }
}

fn column_json(c: &kube_semantics::printers::Column) -> Value {
    json!({"name": c.name, "type": c.type_, "format": c.format, "description": c.description, "priority": c.priority})
}

fn partial_metadata(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or(json!({})),
    })
}

/// A Table of objects: a built-in kind's columns as the server's printers
/// define them (its default Name / Created At table when it has none); a
/// custom resource's Name and the columns its CRD declares.
pub fn table(res: &Resource, items: &[Value], rv: u64, cont: Option<&str>) -> Value {
    let (columns, rows) = if res.builtin {
        builtin_table(res, items)
    } else {
        custom_table(res, items)
    };
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if let Some(c) = cont {
        meta["continue"] = json!(c);
    }
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "columnDefinitions": columns, "rows": rows})
}

/// The Table of a `/scale` subresource (`kubectl get --subresource=scale`),
/// printed as the server prints an `autoscaling/v1` Scale.
pub fn scale_table(scale: &Value, rv: u64) -> Value {
    table(&Resource::scale(), std::slice::from_ref(scale), rv, None)
}

fn builtin_table(res: &Resource, items: &[Value]) -> (Vec<Value>, Vec<Value>) {
    use kube_semantics::printers;
    let now = chrono::Utc::now();
    let columns =
        printers::columns(&res.group, &res.kind).unwrap_or_else(printers::default_columns);
    let rows = items
        .iter()
        .map(|obj| {
            let mut row = json!({
                "cells": printers::cells(&res.group, &res.kind, obj, now),
                "object": partial_metadata(obj),
            });
            let conditions = printers::row_conditions(&res.group, &res.kind, obj);
            if !conditions.is_empty() {
                row["conditions"] = json!(conditions);
            }
            row
        })
        .collect();
    (columns.iter().map(column_json).collect(), rows)
}

/// A custom resource's table, as apiextensions-apiserver's table
/// convertor makes it: Name, then the CRD's columns exactly as served
/// (`Age` alone when it declares none; see
/// `registry::Resource::printer_columns`).
fn custom_table(res: &Resource, items: &[Value]) -> (Vec<Value>, Vec<Value>) {
    let now = chrono::Utc::now();
    let name = kube_semantics::printers::default_columns()
        .into_iter()
        .next()
        .map(|c| column_json(&c))
        .unwrap_or_else(|| json!({"name": "Name", "type": "string", "format": "name", "description": "", "priority": 0}));
    let mut columns = vec![name];
    for c in &res.printer_columns {
        columns.push(json!({"name": c.name, "type": c.type_, "format": c.format, "description": c.description, "priority": c.priority}));
    }
    let rows: Vec<Value> = items
        .iter()
        .map(|obj| {
            let mut cells = vec![
                obj.pointer("/metadata/name")
                    .cloned()
                    .unwrap_or(Value::Null),
            ];
            for c in &res.printer_columns {
                cells.push(cell(&c.type_, json_path(obj, &c.json_path), now));
            }
            json!({"cells": cells, "object": partial_metadata(obj)})
        })
        .collect();
    (columns, rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{PrinterColumn, Registry};

    fn col(name: &str, type_: &str, path: &str) -> PrinterColumn {
        PrinterColumn {
            name: name.into(),
            type_: type_.into(),
            format: String::new(),
            description: String::new(),
            priority: 0,
            json_path: path.into(),
        }
    }

    /// ConfigMaps served as a custom resource with these printer columns.
    fn custom(printer_columns: Vec<PrinterColumn>) -> Resource {
        let mut r = (*Registry::with_builtins()
            .get("", "v1", "configmaps")
            .unwrap())
        .clone();
        r.builtin = false;
        r.custom = true;
        r.printer_columns = printer_columns;
        r
    }

    fn column_names(table: &Value) -> Vec<&str> {
        table["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect()
    }

    #[test]
    fn printer_columns_are_filled() {
        let r = custom(vec![
            col("Synced", "integer", ".status.synchronizedItemCount"),
            col("Created", "date", ".metadata.creationTimestamp"),
            col(
                "Ready",
                "string",
                ".status.conditions[?(@.type==\"Ready\")].status",
            ),
            col("First", "string", ".spec.list[0]"),
            col("Spec", "string", ".spec"),
            col("Ratio", "number", ".spec.ratio"),
            col("On", "boolean", ".spec.on"),
            col("Bad", "date", ".spec.when"),
            col("Wrong", "integer", ".spec.on"),
        ]);
        let obj = json!({"metadata": {"name": "a", "creationTimestamp": "2020-01-01T00:00:00Z"},
            "spec": {"list": ["x", "y"], "ratio": 2.0, "on": true, "when": "soon"},
            "status": {"synchronizedItemCount": 3,
                       "conditions": [{"type": "Synced", "status": "False"}, {"type": "Ready", "status": "True"}]}});
        let t = table(&r, &[obj], 5, None);
        let cells = &t["rows"][0]["cells"];
        assert_eq!(cells[0], "a");
        assert_eq!(cells[1], 3);
        // A date column shows the age, in days for a 2020 timestamp.
        let age = cells[2].as_str().unwrap();
        assert!(age.ends_with('d') || age.contains('y'), "{age}");
        assert_eq!(cells[3], "True");
        assert_eq!(cells[4], "x");
        assert_eq!(
            cells[5],
            r#"{"list":["x","y"],"on":true,"ratio":2,"when":"soon"}"#
        );
        assert_eq!(cells[6], 2);
        assert_eq!(cells[7], true);
        assert_eq!(cells[8], "<invalid>");
        assert_eq!(cells[9], Value::Null);
        let names = column_names(&t);
        // Exactly the declared columns after Name: no Age is added.
        assert_eq!(
            names,
            [
                "Name", "Synced", "Created", "Ready", "First", "Spec", "Ratio", "On", "Bad",
                "Wrong"
            ]
        );
        assert_eq!(t["columnDefinitions"][2]["type"], "date");
        assert_eq!(t["metadata"]["resourceVersion"], "5");
    }

    #[test]
    fn missing_fields_are_null_not_errors() {
        let r = custom(vec![col("Age", "date", ".metadata.creationTimestamp")]);
        let t = table(&r, &[json!(3)], 1, Some("x"));
        assert_eq!(t["rows"][0]["cells"][0], Value::Null);
        assert_eq!(t["rows"][0]["cells"][1], Value::Null);
        assert_eq!(t["metadata"]["continue"], "x");
    }

    #[test]
    fn built_in_kinds_print_their_own_columns() {
        let reg = Registry::with_builtins();
        let cm = reg.get("", "v1", "configmaps").unwrap();
        let obj = json!({"metadata": {"name": "a", "creationTimestamp": "2020-01-01T00:00:00Z"}, "data": {"x": "1", "y": "2"}});
        let t = table(&cm, &[obj], 5, None);
        let names = column_names(&t);
        assert_eq!(names, ["Name", "Data", "Age"]);
        assert_eq!(t["rows"][0]["cells"][1], 2);

        let svc = reg.get("", "v1", "services").unwrap();
        let obj = json!({"metadata": {"name": "web"}, "spec": {"type": "NodePort", "clusterIP": "10.96.0.9", "selector": {"app": "web"}, "ports": [{"port": 80, "nodePort": 30001, "protocol": "TCP"}]}});
        let t = table(&svc, &[obj], 5, None);
        let wide: Vec<(&str, u64)> = t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["name"].as_str().unwrap(), c["priority"].as_u64().unwrap()))
            .collect();
        assert_eq!(
            wide,
            [
                ("Name", 0),
                ("Type", 0),
                ("Cluster-IP", 0),
                ("External-IP", 0),
                ("Port(s)", 0),
                ("Age", 0),
                ("Selector", 1)
            ]
        );
        let cells = &t["rows"][0]["cells"];
        assert_eq!(cells[1], "NodePort");
        assert_eq!(cells[3], "<none>");
        assert_eq!(cells[4], "80:30001/TCP");
        assert_eq!(cells[6], "app=web");

        // A kind without a printer gets the default table.
        let role = reg.get("rbac.authorization.k8s.io", "v1", "roles").unwrap();
        let obj = json!({"metadata": {"name": "r", "creationTimestamp": "2020-01-01T00:00:00Z"}});
        let t = table(&role, &[obj], 5, None);
        assert_eq!(t["columnDefinitions"][1]["name"], "Created At");
        assert_eq!(t["rows"][0]["cells"][1], "2020-01-01T00:00:00Z");
    }
}
