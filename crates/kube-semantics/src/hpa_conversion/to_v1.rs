//! Conversion of a HorizontalPodAutoscaler from the v2 layout to
//! autoscaling/v1, with the fields v1 has no place for kept in annotations.
//!
//! This module must NOT convert the other way (see `to_v2`).

use super::*;

/// The v1 form of a stored (v2) HorizontalPodAutoscaler.
pub fn to_v1(v2: &Value) -> Value {
    let Some(root) = v2.as_object() else {
        return v2.clone();
    };
    let spec = obj(root.get("spec"));
    let status = obj(root.get("status"));
    let metrics: &[Value] = spec
        .and_then(|s| s.get("metrics"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let current: &[Value] = status
        .and_then(|s| s.get("currentMetrics"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let conditions: &[Value] = status
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);

    let mut produced: Vec<(&str, String)> = Vec::new();
    let others: Vec<Value> = metrics
        .iter()
        .filter(|m| !is_cpu_utilization(m))
        .map(metric_spec_to_v1)
        .collect();
    if !others.is_empty() {
        produced.push((METRICS_ANNOTATION, Value::Array(others).to_string()));
    }
    if !current.is_empty() {
        let v1: Vec<Value> = current.iter().map(metric_status_to_v1).collect();
        produced.push((CURRENT_METRICS_ANNOTATION, Value::Array(v1).to_string()));
    }
    if !conditions.is_empty() {
        let v1: Vec<Value> = conditions.iter().map(condition_to_v1).collect();
        produced.push((CONDITIONS_ANNOTATION, Value::Array(v1).to_string()));
    }
    if let Some(b) = spec
        .and_then(|s| s.get("behavior"))
        .and_then(Value::as_object)
    {
        produced.push((BEHAVIOR_ANNOTATION, behavior_to_internal(b).to_string()));
    }

    let mut out = Obj::new();
    for (k, v) in root {
        match k.as_str() {
            "apiVersion" => {
                out.insert(k.clone(), json!("autoscaling/v1"));
            }
            "metadata" => {
                out.insert(k.clone(), metadata_to_v1(v, &produced));
            }
            "spec" => {
                out.insert(k.clone(), spec_to_v1(spec, metrics));
            }
            "status" => {
                out.insert(k.clone(), status_to_v1(status, current));
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    // Neither struct is omitted by Go's encoder.
    if !out.contains_key("spec") {
        out.insert("spec".into(), spec_to_v1(None, &[]));
    }
    if !out.contains_key("status") {
        out.insert("status".into(), status_to_v1(None, &[]));
    }
    Value::Object(out)
}

pub(super) fn is_cpu_utilization(m: &Value) -> bool {
    m.get("type").and_then(Value::as_str) == Some("Resource")
        && m.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
        && m.pointer("/resource/target/averageUtilization")
            .is_some_and(|u| !u.is_null())
}

pub(super) fn metadata_to_v1(meta: &Value, produced: &[(&str, String)]) -> Value {
    let Some(m) = meta.as_object() else {
        return meta.clone();
    };
    let mut out = m.clone();
    let mut annotations: std::collections::BTreeMap<String, Value> = obj(m.get("annotations"))
        .map(|a| {
            a.iter()
                .filter(|(k, _)| !ROUND_TRIP.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    for (k, v) in produced {
        annotations.insert((*k).to_string(), json!(v));
    }
    if annotations.is_empty() {
        out.remove("annotations");
    } else {
        // Go prints map keys sorted.
        out.insert(
            "annotations".into(),
            Value::Object(annotations.into_iter().collect()),
        );
    }
    Value::Object(out)
}

pub(super) fn cross_ref(r: Option<&Value>) -> Value {
    let r = obj(r);
    let mut out = Obj::new();
    out.insert("kind".into(), str_or_empty(r.and_then(|r| r.get("kind"))));
    out.insert("name".into(), str_or_empty(r.and_then(|r| r.get("name"))));
    if let Some(a) = r
        .and_then(|r| r.get("apiVersion"))
        .filter(|a| a.as_str().is_some_and(|s| !s.is_empty()))
    {
        out.insert("apiVersion".into(), a.clone());
    }
    Value::Object(out)
}

pub(super) fn spec_to_v1(spec: Option<&Obj>, metrics: &[Value]) -> Value {
    let mut out = Obj::new();
    out.insert(
        "scaleTargetRef".into(),
        cross_ref(spec.and_then(|s| s.get("scaleTargetRef"))),
    );
    put(
        &mut out,
        "minReplicas",
        spec.and_then(|s| s.get("minReplicas")),
    );
    out.insert(
        "maxReplicas".into(),
        spec.and_then(|s| s.get("maxReplicas"))
            .cloned()
            .unwrap_or_else(|| json!(0)),
    );
    // The first CPU resource metric decides, even when it is not a
    // utilisation target (then v1 has no target at all).
    let cpu = metrics.iter().find(|m| {
        m.get("type").and_then(Value::as_str) == Some("Resource")
            && m.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
    });
    put(
        &mut out,
        "targetCPUUtilizationPercentage",
        cpu.and_then(|m| m.pointer("/resource/target/averageUtilization")),
    );
    Value::Object(out)
}

pub(super) fn status_to_v1(status: Option<&Obj>, current: &[Value]) -> Value {
    let get = |k: &str| status.and_then(|s| s.get(k));
    let mut out = Obj::new();
    put(&mut out, "observedGeneration", get("observedGeneration"));
    put(&mut out, "lastScaleTime", get("lastScaleTime"));
    out.insert(
        "currentReplicas".into(),
        get("currentReplicas").cloned().unwrap_or_else(|| json!(0)),
    );
    out.insert(
        "desiredReplicas".into(),
        get("desiredReplicas").cloned().unwrap_or_else(|| json!(0)),
    );
    // The last CPU utilisation reported wins, as the conversion loops on.
    let cpu = current
        .iter()
        .filter(|m| {
            m.get("type").and_then(Value::as_str) == Some("Resource")
                && m.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
        })
        .filter_map(|m| m.pointer("/resource/current/averageUtilization"))
        .rfind(|u| !u.is_null());
    put(&mut out, "currentCPUUtilizationPercentage", cpu);
    Value::Object(out)
}

pub(super) fn metric_name(m: Option<&Obj>) -> Value {
    str_or_empty(m.and_then(|m| m.get("metric")).and_then(|m| m.get("name")))
}

pub(super) fn metric_selector(m: Option<&Obj>) -> Option<&Value> {
    m.and_then(|m| m.get("metric"))
        .and_then(|m| m.get("selector"))
}

pub(super) fn metric_spec_to_v1(m: &Value) -> Value {
    let mut out = Obj::new();
    out.insert("type".into(), str_or_empty(m.get("type")));
    if let Some(o) = obj(m.get("object")) {
        let target = obj(o.get("target"));
        let mut v = Obj::new();
        v.insert("target".into(), cross_ref(o.get("describedObject")));
        v.insert("metricName".into(), metric_name(Some(o)));
        v.insert(
            "targetValue".into(),
            quantity_or_zero(target.and_then(|t| t.get("value"))),
        );
        put(&mut v, "selector", metric_selector(Some(o)));
        put(
            &mut v,
            "averageValue",
            target.and_then(|t| t.get("averageValue")),
        );
        out.insert("object".into(), Value::Object(v));
    }
    if let Some(p) = obj(m.get("pods")) {
        let target = obj(p.get("target"));
        let mut v = Obj::new();
        v.insert("metricName".into(), metric_name(Some(p)));
        v.insert(
            "targetAverageValue".into(),
            quantity_or_zero(target.and_then(|t| t.get("averageValue"))),
        );
        put(&mut v, "selector", metric_selector(Some(p)));
        out.insert("pods".into(), Value::Object(v));
    }
    for key in ["resource", "containerResource"] {
        if let Some(r) = obj(m.get(key)) {
            let target = obj(r.get("target"));
            let mut v = Obj::new();
            v.insert("name".into(), str_or_empty(r.get("name")));
            put(
                &mut v,
                "targetAverageUtilization",
                target.and_then(|t| t.get("averageUtilization")),
            );
            put(
                &mut v,
                "targetAverageValue",
                target.and_then(|t| t.get("averageValue")),
            );
            if key == "containerResource" {
                v.insert("container".into(), str_or_empty(r.get("container")));
            }
            out.insert(key.into(), Value::Object(v));
        }
    }
    if let Some(e) = obj(m.get("external")) {
        let target = obj(e.get("target"));
        let mut v = Obj::new();
        v.insert("metricName".into(), metric_name(Some(e)));
        put(&mut v, "metricSelector", metric_selector(Some(e)));
        put(&mut v, "targetValue", target.and_then(|t| t.get("value")));
        put(
            &mut v,
            "targetAverageValue",
            target.and_then(|t| t.get("averageValue")),
        );
        out.insert("external".into(), Value::Object(v));
    }
    Value::Object(out)
}

pub(super) fn metric_status_to_v1(m: &Value) -> Value {
    let mut out = Obj::new();
    out.insert("type".into(), str_or_empty(m.get("type")));
    if let Some(o) = obj(m.get("object")) {
        let current = obj(o.get("current"));
        let mut v = Obj::new();
        v.insert("target".into(), cross_ref(o.get("describedObject")));
        v.insert("metricName".into(), metric_name(Some(o)));
        v.insert(
            "currentValue".into(),
            quantity_or_zero(current.and_then(|c| c.get("value"))),
        );
        put(&mut v, "selector", metric_selector(Some(o)));
        put(
            &mut v,
            "averageValue",
            current.and_then(|c| c.get("averageValue")),
        );
        out.insert("object".into(), Value::Object(v));
    }
    if let Some(p) = obj(m.get("pods")) {
        let current = obj(p.get("current"));
        let mut v = Obj::new();
        v.insert("metricName".into(), metric_name(Some(p)));
        v.insert(
            "currentAverageValue".into(),
            quantity_or_zero(current.and_then(|c| c.get("averageValue"))),
        );
        put(&mut v, "selector", metric_selector(Some(p)));
        out.insert("pods".into(), Value::Object(v));
    }
    for key in ["resource", "containerResource"] {
        if let Some(r) = obj(m.get(key)) {
            let current = obj(r.get("current"));
            let mut v = Obj::new();
            v.insert("name".into(), str_or_empty(r.get("name")));
            put(
                &mut v,
                "currentAverageUtilization",
                current.and_then(|c| c.get("averageUtilization")),
            );
            v.insert(
                "currentAverageValue".into(),
                quantity_or_zero(current.and_then(|c| c.get("averageValue"))),
            );
            if key == "containerResource" {
                v.insert("container".into(), str_or_empty(r.get("container")));
            }
            out.insert(key.into(), Value::Object(v));
        }
    }
    if let Some(e) = obj(m.get("external")) {
        let current = obj(e.get("current"));
        let mut v = Obj::new();
        v.insert("metricName".into(), metric_name(Some(e)));
        put(&mut v, "metricSelector", metric_selector(Some(e)));
        v.insert(
            "currentValue".into(),
            quantity_or_zero(current.and_then(|c| c.get("value"))),
        );
        put(
            &mut v,
            "currentAverageValue",
            current.and_then(|c| c.get("averageValue")),
        );
        out.insert("external".into(), Value::Object(v));
    }
    Value::Object(out)
}

pub(super) fn condition_to_v1(c: &Value) -> Value {
    let c = c.as_object();
    let get = |k: &str| c.and_then(|c| c.get(k));
    let mut out = Obj::new();
    out.insert("type".into(), str_or_empty(get("type")));
    out.insert("status".into(), str_or_empty(get("status")));
    // A zero metav1.Time is printed as null even under omitempty.
    out.insert(
        "lastTransitionTime".into(),
        get("lastTransitionTime").cloned().unwrap_or(Value::Null),
    );
    for k in ["reason", "message"] {
        if let Some(v) = get(k).filter(|v| v.as_str().is_some_and(|s| !s.is_empty())) {
            out.insert(k.into(), v.clone());
        }
    }
    Value::Object(out)
}

/// The internal type's encoding: Go field names, nil pointers as null.
pub(super) fn behavior_to_internal(b: &Obj) -> Value {
    let rules = |key: &str| -> Value {
        let Some(r) = obj(b.get(key)) else {
            return Value::Null;
        };
        let policies = r.get("policies").and_then(Value::as_array).map(|ps| {
            ps.iter()
                .map(|p| {
                    json!({
                        "Type": str_or_empty(p.get("type")),
                        "Value": p.get("value").cloned().unwrap_or_else(|| json!(0)),
                        "PeriodSeconds": p.get("periodSeconds").cloned().unwrap_or_else(|| json!(0)),
                    })
                })
                .collect::<Vec<_>>()
        });
        json!({
            "StabilizationWindowSeconds": r.get("stabilizationWindowSeconds").cloned().unwrap_or(Value::Null),
            "SelectPolicy": r.get("selectPolicy").cloned().unwrap_or(Value::Null),
            "Policies": policies.map_or(Value::Null, Value::Array),
            "Tolerance": r.get("tolerance").cloned().unwrap_or(Value::Null),
        })
    };
    json!({"ScaleUp": rules("scaleUp"), "ScaleDown": rules("scaleDown")})
}
