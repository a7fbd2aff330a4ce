//! `Table` responses (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`),
//! which kubectl asks for to print `get` output.
//!
//! Columns are Name and Age for every kind, plus the printer columns a CRD
//! declares (evaluated as simple dotted JSON paths). Built-in kinds do not
//! get their kind-specific columns here.

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

/// A Table of objects.
pub fn table(res: &Resource, items: &[Value], rv: u64, cont: Option<&str>) -> Value {
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
            json!({
                "cells": cells,
                "object": {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": obj.get("metadata").cloned().unwrap_or(json!({})),
                },
            })
        })
        .collect();
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if let Some(c) = cont {
        meta["continue"] = json!(c);
    }
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "columnDefinitions": columns, "rows": rows})
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
        let r = (*Registry::with_builtins()
            .get("", "v1", "configmaps")
            .unwrap())
        .clone();
        let t = table(&r, &[json!(3)], 1, Some("x"));
        assert_eq!(t["rows"][0]["cells"][0], Value::Null);
        assert_eq!(t["rows"][0]["cells"][1], "<unknown>");
        assert_eq!(t["metadata"]["continue"], "x");
    }
}
