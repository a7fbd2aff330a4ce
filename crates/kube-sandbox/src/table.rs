//! `Table` responses (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`),
//! which kubectl asks for to print `get` output.
//!
//! Built-in kinds get the columns of the real server's printers
//! (`kube_semantics::printers`, including the `-o wide` ones at priority
//! 1); custom resources get Name, the printer columns their CRD declares
//! (evaluated as simple dotted JSON paths) and Age.

use serde_json::{Value, json};

use crate::registry::Resource;

fn age(created: Option<&str>) -> String {
    let Some(ts) = created.and_then(|c| chrono::DateTime::parse_from_rfc3339(c).ok()) else {
        return "<unknown>".into();
    };
    let secs = (chrono::Utc::now() - ts.with_timezone(&chrono::Utc))
        .num_seconds()
        .max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 2 * 86400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

/// Reads a `.a.b.c` path.
fn json_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = obj;
    for seg in path
        .trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
    {
        cur = cur.get(seg)?;
    }
    Some(cur)
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
/// custom resource's Name, declared printer columns and Age.
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

fn custom_table(res: &Resource, items: &[Value]) -> (Vec<Value>, Vec<Value>) {
    let mut columns = vec![
        json!({"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace.", "priority": 0}),
    ];
    for (name, ty, _) in &res.printer_columns {
        columns.push(
            json!({"name": name, "type": ty, "format": "", "description": "", "priority": 0}),
        );
    }
    columns.push(json!({"name": "Age", "type": "string", "format": "", "description": "CreationTimestamp is a timestamp representing the server time when this object was created.", "priority": 0}));
    let rows: Vec<Value> = items
        .iter()
        .map(|obj| {
            let mut cells = vec![
                obj.pointer("/metadata/name")
                    .cloned()
                    .unwrap_or(Value::Null),
            ];
            for (_, _, path) in &res.printer_columns {
                cells.push(json_path(obj, path).cloned().unwrap_or(Value::Null));
            }
            cells.push(json!(age(obj
                .pointer("/metadata/creationTimestamp")
                .and_then(Value::as_str))));
            json!({"cells": cells, "object": partial_metadata(obj)})
        })
        .collect();
    (columns, rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    #[test]
    fn printer_columns_are_filled() {
        let mut r = (*Registry::with_builtins()
            .get("", "v1", "configmaps")
            .unwrap())
        .clone();
        r.builtin = false;
        r.custom = true;
        r.printer_columns = vec![(
            "Synced".into(),
            "integer".into(),
            ".status.synchronizedItemCount".into(),
        )];
        let obj = json!({"metadata": {"name": "a", "creationTimestamp": "2020-01-01T00:00:00Z"}, "status": {"synchronizedItemCount": 3}});
        let t = table(&r, &[obj], 5, None);
        assert_eq!(t["rows"][0]["cells"][0], "a");
        assert_eq!(t["rows"][0]["cells"][1], 3);
        assert!(t["rows"][0]["cells"][2].as_str().unwrap().ends_with('d'));
        assert_eq!(t["columnDefinitions"][1]["name"], "Synced");
        assert_eq!(t["metadata"]["resourceVersion"], "5");
    }

    #[test]
    fn missing_fields_are_null_not_errors() {
        let mut r = (*Registry::with_builtins()
            .get("", "v1", "configmaps")
            .unwrap())
        .clone();
        r.builtin = false;
        r.custom = true;
        let t = table(&r, &[json!(3)], 1, Some("x"));
        assert_eq!(t["rows"][0]["cells"][0], Value::Null);
        assert_eq!(t["rows"][0]["cells"][1], "<unknown>");
        assert_eq!(t["metadata"]["continue"], "x");
    }

    #[test]
    fn built_in_kinds_print_their_own_columns() {
        let reg = Registry::with_builtins();
        let cm = reg.get("", "v1", "configmaps").unwrap();
        let obj = json!({"metadata": {"name": "a", "creationTimestamp": "2020-01-01T00:00:00Z"}, "data": {"x": "1", "y": "2"}});
        let t = table(&cm, &[obj], 5, None);
        let names: Vec<&str> = t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
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
