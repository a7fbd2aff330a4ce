//! HorizontalPodAutoscaler between `autoscaling/v1` and `autoscaling/v2`,
//! as the API server converts it.
//!
//! The server stores HPAs at `autoscaling/v2` and serves `autoscaling/v1`
//! too. v1 has room for one CPU utilisation target only, so everything
//! else travels in four annotations, which the server writes when it
//! answers in v1 and reads back (and drops) when a v1 object is written:
//!
//! ```text
//! v2 spec.metrics (all but the CPU utilisation) -> autoscaling.alpha.kubernetes.io/metrics
//! v2 spec.behavior                             -> autoscaling.alpha.kubernetes.io/behavior
//! v2 status.currentMetrics (all of them)       -> autoscaling.alpha.kubernetes.io/current-metrics
//! v2 status.conditions                         -> autoscaling.alpha.kubernetes.io/conditions
//! ```
//!
//! The metric annotations hold the v1 metric shapes (`targetAverageValue`,
//! `metricName`, ...), in the field order of the v1 Go types. The behavior
//! annotation holds the server's internal type marshalled without JSON
//! tags (`{"ScaleUp":{"StabilizationWindowSeconds":0,...}}`); where the
//! v1.33 source of that internal type could not be read here, its field
//! order (`StabilizationWindowSeconds`, `SelectPolicy`, `Policies`,
//! `Tolerance`) is taken from the feature's design document.
//!
//! A v1 object with no metric at all gets the CPU target of 80 %, as the
//! conversion does (v1 once defaulted that in the controller).
//!
//! This module must NOT default, validate or store anything: it maps one
//! shape to the other. Malformed metric annotations are the caller's 400;
//! a malformed behavior annotation is ignored, as upstream ignores it.

use serde_json::{Map, Value, json};

/// The annotation holding the v2 metrics v1 cannot express.
pub const METRICS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/metrics";
/// The annotation holding `status.currentMetrics`.
pub const CURRENT_METRICS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
/// The annotation holding `status.conditions`.
pub const CONDITIONS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/conditions";
/// The annotation holding `spec.behavior`.
pub const BEHAVIOR_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/behavior";

const ROUND_TRIP: [&str; 4] = [
    METRICS_ANNOTATION,
    BEHAVIOR_ANNOTATION,
    CURRENT_METRICS_ANNOTATION,
    CONDITIONS_ANNOTATION,
];

/// A v1 object whose round-trip annotations do not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("annotation {annotation}: {error}")]
pub struct ConversionError {
    /// Which annotation.
    pub annotation: &'static str,
    /// The JSON decoder's complaint.
    pub error: String,
}

type Obj = Map<String, Value>;

fn obj(v: Option<&Value>) -> Option<&Obj> {
    v.and_then(Value::as_object)
}

fn put(out: &mut Obj, key: &str, v: Option<&Value>) {
    if let Some(v) = v.filter(|v| !v.is_null()) {
        out.insert(key.into(), v.clone());
    }
}

/// A `resource.Quantity` that is not a pointer: its zero value is `"0"`.
fn quantity_or_zero(v: Option<&Value>) -> Value {
    v.filter(|v| !v.is_null())
        .cloned()
        .unwrap_or_else(|| json!("0"))
}

fn str_or_empty(v: Option<&Value>) -> Value {
    v.filter(|v| v.is_string())
        .cloned()
        .unwrap_or_else(|| json!(""))
}

// ---------------------------------------------------------------------------
// v2 -> v1

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

fn is_cpu_utilization(m: &Value) -> bool {
    m.get("type").and_then(Value::as_str) == Some("Resource")
        && m.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
        && m.pointer("/resource/target/averageUtilization")
            .is_some_and(|u| !u.is_null())
}

fn metadata_to_v1(meta: &Value, produced: &[(&str, String)]) -> Value {
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

fn cross_ref(r: Option<&Value>) -> Value {
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

fn spec_to_v1(spec: Option<&Obj>, metrics: &[Value]) -> Value {
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

fn status_to_v1(status: Option<&Obj>, current: &[Value]) -> Value {
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

fn metric_name(m: Option<&Obj>) -> Value {
    str_or_empty(m.and_then(|m| m.get("metric")).and_then(|m| m.get("name")))
}

fn metric_selector(m: Option<&Obj>) -> Option<&Value> {
    m.and_then(|m| m.get("metric"))
        .and_then(|m| m.get("selector"))
}

fn metric_spec_to_v1(m: &Value) -> Value {
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

fn metric_status_to_v1(m: &Value) -> Value {
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

fn condition_to_v1(c: &Value) -> Value {
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
fn behavior_to_internal(b: &Obj) -> Value {
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

// ---------------------------------------------------------------------------
// v1 -> v2

/// The v2 (storage) form of a v1 HorizontalPodAutoscaler; the round-trip
/// annotations are read and dropped.
pub fn to_v2(v1: &Value) -> Result<Value, ConversionError> {
    let Some(root) = v1.as_object() else {
        return Ok(v1.clone());
    };
    let annotations = root
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object);
    let annotation = |k: &str| annotations.and_then(|a| a.get(k)).and_then(Value::as_str);
    let spec = obj(root.get("spec"));
    let status = obj(root.get("status"));

    let mut metrics: Vec<Value> = Vec::new();
    if let Some(text) = annotation(METRICS_ANNOTATION) {
        let list = parse_list(METRICS_ANNOTATION, text)?;
        metrics.extend(list.iter().map(metric_spec_to_v2));
    }
    if let Some(cpu) = spec
        .and_then(|s| s.get("targetCPUUtilizationPercentage"))
        .filter(|v| !v.is_null())
    {
        metrics.push(cpu_target(cpu.clone()));
    }
    if metrics.is_empty() {
        metrics.push(cpu_target(json!(80)));
    }
    let behavior = annotation(BEHAVIOR_ANNOTATION).and_then(behavior_from_internal);

    let mut current: Option<Vec<Value>> = status
        .and_then(|s| s.get("currentCPUUtilizationPercentage"))
        .filter(|v| !v.is_null())
        .map(|u| {
            vec![json!({
                "type": "Resource",
                "resource": {"name": "cpu", "current": {"averageUtilization": u}}
            })]
        });
    if let Some(text) = annotation(CURRENT_METRICS_ANNOTATION) {
        let list = parse_list(CURRENT_METRICS_ANNOTATION, text)?;
        current = Some(list.iter().map(metric_status_to_v2).collect());
    }
    let mut conditions: Option<Vec<Value>> = None;
    if let Some(text) = annotation(CONDITIONS_ANNOTATION) {
        let list = parse_list(CONDITIONS_ANNOTATION, text)?;
        conditions = Some(list.iter().map(condition_to_v2).collect());
    }

    let mut out = Obj::new();
    for (k, v) in root {
        match k.as_str() {
            "apiVersion" => {
                out.insert(k.clone(), json!("autoscaling/v2"));
            }
            "metadata" => {
                let mut m = v.clone();
                if let Some(Value::Object(a)) = m.get_mut("annotations") {
                    a.retain(|k, _| !ROUND_TRIP.contains(&k.as_str()));
                    if a.is_empty()
                        && let Some(meta) = m.as_object_mut()
                    {
                        meta.remove("annotations");
                    }
                }
                out.insert(k.clone(), m);
            }
            "spec" | "status" => {}
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    let mut s = Obj::new();
    if let Some(r) = spec.and_then(|s| s.get("scaleTargetRef")) {
        s.insert("scaleTargetRef".into(), r.clone());
    }
    put(
        &mut s,
        "minReplicas",
        spec.and_then(|s| s.get("minReplicas")),
    );
    put(
        &mut s,
        "maxReplicas",
        spec.and_then(|s| s.get("maxReplicas")),
    );
    s.insert("metrics".into(), Value::Array(metrics));
    if let Some(b) = behavior {
        s.insert("behavior".into(), b);
    }
    out.insert("spec".into(), Value::Object(s));

    let get = |k: &str| status.and_then(|s| s.get(k));
    let mut st = Obj::new();
    put(&mut st, "observedGeneration", get("observedGeneration"));
    put(&mut st, "lastScaleTime", get("lastScaleTime"));
    put(&mut st, "currentReplicas", get("currentReplicas"));
    put(&mut st, "desiredReplicas", get("desiredReplicas"));
    if let Some(c) = current {
        st.insert("currentMetrics".into(), Value::Array(c));
    }
    if let Some(c) = conditions {
        st.insert("conditions".into(), Value::Array(c));
    }
    out.insert("status".into(), Value::Object(st));
    Ok(Value::Object(out))
}

fn parse_list(annotation: &'static str, text: &str) -> Result<Vec<Value>, ConversionError> {
    let err = |error: String| ConversionError { annotation, error };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(items)) => Ok(items),
        // Go decodes a JSON null into a nil slice.
        Ok(Value::Null) => Ok(Vec::new()),
        Ok(other) => Err(err(format!(
            "json: cannot unmarshal {} into Go value of type []v1.{}",
            json_type(&other),
            match annotation {
                CONDITIONS_ANNOTATION => "HorizontalPodAutoscalerCondition",
                CURRENT_METRICS_ANNOTATION => "MetricStatus",
                _ => "MetricSpec",
            }
        ))),
        Err(e) => Err(err(e.to_string())),
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn cpu_target(utilization: Value) -> Value {
    json!({
        "type": "Resource",
        "resource": {
            "name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": utilization}
        }
    })
}

fn identifier(name: Option<&Value>, selector: Option<&Value>) -> Value {
    let mut m = Obj::new();
    m.insert("name".into(), str_or_empty(name));
    put(&mut m, "selector", selector);
    Value::Object(m)
}

fn described(target: Option<&Value>) -> Value {
    cross_ref(target)
}

fn metric_spec_to_v2(m: &Value) -> Value {
    let mut out = Obj::new();
    out.insert("type".into(), str_or_empty(m.get("type")));
    if let Some(o) = obj(m.get("object")) {
        let average = o.get("averageValue").filter(|v| !v.is_null());
        let mut target = Obj::new();
        target.insert(
            "type".into(),
            json!(if average.is_some() {
                "AverageValue"
            } else {
                "Value"
            }),
        );
        target.insert("value".into(), quantity_or_zero(o.get("targetValue")));
        put(&mut target, "averageValue", average);
        out.insert(
            "object".into(),
            json!({
                "describedObject": described(o.get("target")),
                "target": target,
                "metric": identifier(o.get("metricName"), o.get("selector")),
            }),
        );
    }
    if let Some(p) = obj(m.get("pods")) {
        out.insert(
            "pods".into(),
            json!({
                "metric": identifier(p.get("metricName"), p.get("selector")),
                "target": {
                    "type": "AverageValue",
                    "averageValue": quantity_or_zero(p.get("targetAverageValue")),
                },
            }),
        );
    }
    for key in ["resource", "containerResource"] {
        if let Some(r) = obj(m.get(key)) {
            let utilization = r.get("targetAverageUtilization").filter(|v| !v.is_null());
            let mut target = Obj::new();
            target.insert(
                "type".into(),
                json!(if utilization.is_some() {
                    "Utilization"
                } else {
                    "AverageValue"
                }),
            );
            put(&mut target, "averageValue", r.get("targetAverageValue"));
            put(&mut target, "averageUtilization", utilization);
            let mut v = Obj::new();
            v.insert("name".into(), str_or_empty(r.get("name")));
            if key == "containerResource" {
                v.insert("container".into(), str_or_empty(r.get("container")));
            }
            v.insert("target".into(), Value::Object(target));
            out.insert(key.into(), Value::Object(v));
        }
    }
    if let Some(e) = obj(m.get("external")) {
        let value = e.get("targetValue").filter(|v| !v.is_null());
        let mut target = Obj::new();
        target.insert(
            "type".into(),
            json!(if value.is_some() {
                "Value"
            } else {
                "AverageValue"
            }),
        );
        put(&mut target, "value", value);
        put(&mut target, "averageValue", e.get("targetAverageValue"));
        out.insert(
            "external".into(),
            json!({
                "metric": identifier(e.get("metricName"), e.get("metricSelector")),
                "target": target,
            }),
        );
    }
    Value::Object(out)
}

fn metric_status_to_v2(m: &Value) -> Value {
    let mut out = Obj::new();
    out.insert("type".into(), str_or_empty(m.get("type")));
    if let Some(o) = obj(m.get("object")) {
        let mut current = Obj::new();
        current.insert("value".into(), quantity_or_zero(o.get("currentValue")));
        put(&mut current, "averageValue", o.get("averageValue"));
        out.insert(
            "object".into(),
            json!({
                "metric": identifier(o.get("metricName"), o.get("selector")),
                "current": current,
                "describedObject": described(o.get("target")),
            }),
        );
    }
    if let Some(p) = obj(m.get("pods")) {
        out.insert(
            "pods".into(),
            json!({
                "metric": identifier(p.get("metricName"), p.get("selector")),
                "current": {"averageValue": quantity_or_zero(p.get("currentAverageValue"))},
            }),
        );
    }
    for key in ["resource", "containerResource"] {
        if let Some(r) = obj(m.get(key)) {
            let mut current = Obj::new();
            current.insert(
                "averageValue".into(),
                quantity_or_zero(r.get("currentAverageValue")),
            );
            put(
                &mut current,
                "averageUtilization",
                r.get("currentAverageUtilization"),
            );
            let mut v = Obj::new();
            v.insert("name".into(), str_or_empty(r.get("name")));
            if key == "containerResource" {
                v.insert("container".into(), str_or_empty(r.get("container")));
            }
            v.insert("current".into(), Value::Object(current));
            out.insert(key.into(), Value::Object(v));
        }
    }
    if let Some(e) = obj(m.get("external")) {
        let mut current = Obj::new();
        current.insert("value".into(), quantity_or_zero(e.get("currentValue")));
        put(&mut current, "averageValue", e.get("currentAverageValue"));
        out.insert(
            "external".into(),
            json!({
                "metric": identifier(e.get("metricName"), e.get("metricSelector")),
                "current": current,
            }),
        );
    }
    Value::Object(out)
}

fn condition_to_v2(c: &Value) -> Value {
    let c = c.as_object();
    let get = |k: &str| c.and_then(|c| c.get(k));
    let mut out = Obj::new();
    out.insert("type".into(), str_or_empty(get("type")));
    out.insert("status".into(), str_or_empty(get("status")));
    put(&mut out, "lastTransitionTime", get("lastTransitionTime"));
    for k in ["reason", "message"] {
        if let Some(v) = get(k).filter(|v| v.as_str().is_some_and(|s| !s.is_empty())) {
            out.insert(k.into(), v.clone());
        }
    }
    Value::Object(out)
}

/// Go's decoder matches field names without regard to case.
fn field<'a>(m: &'a Obj, name: &str) -> Option<&'a Value> {
    m.get(name).or_else(|| {
        m.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    })
}

/// `spec.behavior` from the internal encoding; `None` when it does not
/// decode or names neither direction (upstream then leaves it unset).
fn behavior_from_internal(text: &str) -> Option<Value> {
    let v: Value = serde_json::from_str(text).ok()?;
    let b = v.as_object()?;
    let mut out = Obj::new();
    for (go, json_name) in [("ScaleUp", "scaleUp"), ("ScaleDown", "scaleDown")] {
        match field(b, go) {
            None | Some(Value::Null) => {}
            Some(Value::Object(r)) => {
                out.insert(json_name.into(), rules_from_internal(r)?);
            }
            Some(_) => return None,
        }
    }
    if out.is_empty() {
        None
    } else {
        Some(Value::Object(out))
    }
}

fn rules_from_internal(r: &Obj) -> Option<Value> {
    let mut out = Obj::new();
    match field(r, "StabilizationWindowSeconds") {
        None | Some(Value::Null) => {}
        Some(n) if n.is_i64() => {
            out.insert("stabilizationWindowSeconds".into(), n.clone());
        }
        Some(_) => return None,
    }
    match field(r, "SelectPolicy") {
        None | Some(Value::Null) => {}
        Some(s) if s.is_string() => {
            out.insert("selectPolicy".into(), s.clone());
        }
        Some(_) => return None,
    }
    match field(r, "Policies") {
        None | Some(Value::Null) => {}
        Some(Value::Array(ps)) => {
            let mut policies = Vec::with_capacity(ps.len());
            for p in ps {
                let p = p.as_object()?;
                let int = |k: &str| match field(p, k) {
                    None | Some(Value::Null) => Some(json!(0)),
                    Some(n) if n.is_i64() => Some(n.clone()),
                    Some(_) => None,
                };
                let kind = match field(p, "Type") {
                    None | Some(Value::Null) => json!(""),
                    Some(s) if s.is_string() => s.clone(),
                    Some(_) => return None,
                };
                policies.push(json!({
                    "type": kind,
                    "value": int("Value")?,
                    "periodSeconds": int("PeriodSeconds")?,
                }));
            }
            out.insert("policies".into(), Value::Array(policies));
        }
        Some(_) => return None,
    }
    match field(r, "Tolerance") {
        None | Some(Value::Null) => {}
        Some(t) if t.is_string() || t.is_number() => {
            out.insert("tolerance".into(), t.clone());
        }
        Some(_) => return None,
    }
    Some(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v2_full() -> Value {
        json!({
            "kind": "HorizontalPodAutoscaler",
            "apiVersion": "autoscaling/v2",
            "metadata": {"name": "web", "namespace": "a", "annotations": {"team": "x"}},
            "spec": {
                "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                "minReplicas": 2,
                "maxReplicas": 10,
                "metrics": [
                    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
                    {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}},
                    {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}},
                    {"type": "External", "external": {"metric": {"name": "queue", "selector": {"matchLabels": {"q": "a"}}}, "target": {"type": "Value", "value": "30"}}},
                    {"type": "Object", "object": {"describedObject": {"kind": "Service", "name": "s"}, "metric": {"name": "rps"}, "target": {"type": "Value", "value": "2k"}}}
                ],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [{"type": "Percent", "value": 10, "periodSeconds": 60}]}}
            },
            "status": {
                "observedGeneration": 3,
                "currentReplicas": 4,
                "desiredReplicas": 5,
                "currentMetrics": [
                    {"type": "Resource", "resource": {"name": "cpu", "current": {"averageValue": "120m", "averageUtilization": 70}}}
                ],
                "conditions": [
                    {"type": "AbleToScale", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "ReadyForNewScale", "message": "ok"}
                ]
            }
        })
    }

    #[test]
    fn v2_to_v1_keeps_cpu_in_the_field_and_the_rest_in_annotations() {
        let v1 = to_v1(&v2_full());
        assert_eq!(v1["apiVersion"], "autoscaling/v1");
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 60);
        assert_eq!(v1["spec"]["minReplicas"], 2);
        assert_eq!(v1["spec"]["maxReplicas"], 10);
        assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 70);
        assert_eq!(v1["status"]["currentReplicas"], 4);
        let a = v1["metadata"]["annotations"].as_object().unwrap();
        let keys: Vec<&str> = a.keys().map(String::as_str).collect();
        // Sorted, as Go prints a map.
        assert_eq!(
            keys,
            [
                BEHAVIOR_ANNOTATION,
                CONDITIONS_ANNOTATION,
                CURRENT_METRICS_ANNOTATION,
                METRICS_ANNOTATION,
                "team"
            ]
        );
        assert_eq!(
            a[METRICS_ANNOTATION],
            r#"[{"type":"Resource","resource":{"name":"memory","targetAverageValue":"500Mi"}},{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}},{"type":"External","external":{"metricName":"queue","metricSelector":{"matchLabels":{"q":"a"}},"targetValue":"30"}},{"type":"Object","object":{"target":{"kind":"Service","name":"s"},"metricName":"rps","targetValue":"2k"}}]"#
        );
        assert_eq!(
            a[BEHAVIOR_ANNOTATION],
            r#"{"ScaleUp":null,"ScaleDown":{"StabilizationWindowSeconds":60,"SelectPolicy":"Max","Policies":[{"Type":"Percent","Value":10,"PeriodSeconds":60}],"Tolerance":null}}"#
        );
        assert_eq!(
            a[CURRENT_METRICS_ANNOTATION],
            r#"[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":70,"currentAverageValue":"120m"}}]"#
        );
        assert_eq!(
            a[CONDITIONS_ANNOTATION],
            r#"[{"type":"AbleToScale","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z","reason":"ReadyForNewScale","message":"ok"}]"#
        );
    }

    #[test]
    fn a_round_trip_through_v1_keeps_every_v2_field() {
        let v2 = v2_full();
        let back = to_v2(&to_v1(&v2)).unwrap();
        assert_eq!(back["metadata"]["annotations"], json!({"team": "x"}));
        // The CPU target moves to the end of the list, as upstream's
        // conversion appends it after the annotation's metrics.
        let metrics = back["spec"]["metrics"].as_array().unwrap();
        assert_eq!(metrics.len(), 5);
        assert_eq!(metrics[4], v2["spec"]["metrics"][0]);
        for (i, m) in metrics[..4].iter().enumerate() {
            let original = &v2["spec"]["metrics"][i + 1];
            assert_eq!(m["type"], original["type"], "{m}");
        }
        assert_eq!(
            metrics[0]["resource"]["target"],
            v2["spec"]["metrics"][1]["resource"]["target"]
        );
        assert_eq!(
            metrics[2]["external"]["target"],
            v2["spec"]["metrics"][3]["external"]["target"]
        );
        assert_eq!(back["spec"]["behavior"], v2["spec"]["behavior"]);
        assert_eq!(back["status"]["conditions"], v2["status"]["conditions"]);
        assert_eq!(
            back["status"]["currentMetrics"],
            v2["status"]["currentMetrics"]
        );
        assert_eq!(back["status"]["desiredReplicas"], 5);
    }

    #[test]
    fn a_v1_object_without_target_gets_the_eighty_percent_cpu_target() {
        let v1 = json!({
            "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "a"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d"}, "maxReplicas": 3}
        });
        let v2 = to_v2(&v1).unwrap();
        assert_eq!(v2["apiVersion"], "autoscaling/v2");
        assert_eq!(v2["spec"]["metrics"], json!([cpu_target(json!(80))]));
        assert!(v2["spec"].get("behavior").is_none());
        assert!(v2["metadata"].get("annotations").is_none());
    }

    #[test]
    fn a_v1_cpu_target_becomes_a_utilization_metric() {
        let v1 = json!({
            "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "a", "annotations": {"x": "y"}},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d"}, "maxReplicas": 3, "targetCPUUtilizationPercentage": 55},
            "status": {"currentReplicas": 1, "desiredReplicas": 2, "currentCPUUtilizationPercentage": 40}
        });
        let v2 = to_v2(&v1).unwrap();
        assert_eq!(v2["spec"]["metrics"], json!([cpu_target(json!(55))]));
        assert_eq!(
            v2["status"]["currentMetrics"],
            json!([{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 40}}}])
        );
        assert_eq!(v2["metadata"]["annotations"], json!({"x": "y"}));
        let again = to_v1(&v2);
        assert_eq!(again["spec"]["targetCPUUtilizationPercentage"], 55);
        assert_eq!(again["status"]["currentCPUUtilizationPercentage"], 40);
        // Current metrics are kept raw even when they are only the CPU.
        assert_eq!(
            again["metadata"]["annotations"],
            json!({
                CURRENT_METRICS_ANNOTATION: r#"[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":40,"currentAverageValue":"0"}}]"#,
                "x": "y"
            })
        );
    }

    #[test]
    fn round_trip_annotations_a_client_wrote_are_replaced_by_the_servers() {
        let mut v2 = v2_full();
        v2["metadata"]["annotations"][METRICS_ANNOTATION] = json!("stale");
        v2["spec"]["metrics"] = json!([cpu_target(json!(50))]);
        let v1 = to_v1(&v2);
        assert!(
            v1["metadata"]["annotations"]
                .get(METRICS_ANNOTATION)
                .is_none()
        );
    }

    #[test]
    fn malformed_metric_annotations_are_errors_and_a_malformed_behavior_is_ignored() {
        let mut v1 = json!({
            "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "a", "annotations": {METRICS_ANNOTATION: "{not json"}},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d"}, "maxReplicas": 3}
        });
        let e = to_v2(&v1).unwrap_err();
        assert_eq!(e.annotation, METRICS_ANNOTATION);
        v1["metadata"]["annotations"] = json!({CONDITIONS_ANNOTATION: "{}"});
        let e = to_v2(&v1).unwrap_err();
        assert_eq!(
            e.error,
            "json: cannot unmarshal object into Go value of type []v1.HorizontalPodAutoscalerCondition"
        );
        v1["metadata"]["annotations"] = json!({BEHAVIOR_ANNOTATION: "[1]"});
        let v2 = to_v2(&v1).unwrap();
        assert!(v2["spec"].get("behavior").is_none());
        assert!(v2["metadata"].get("annotations").is_none());
        v1["metadata"]["annotations"] =
            json!({BEHAVIOR_ANNOTATION: "{\"ScaleUp\":{\"SelectPolicy\":3}}"});
        assert!(to_v2(&v1).unwrap()["spec"].get("behavior").is_none());
        // Field names are matched without regard to case, as Go decodes.
        v1["metadata"]["annotations"] =
            json!({BEHAVIOR_ANNOTATION: "{\"scaleUp\":{\"selectPolicy\":\"Min\"}}"});
        assert_eq!(
            to_v2(&v1).unwrap()["spec"]["behavior"],
            json!({"scaleUp": {"selectPolicy": "Min"}})
        );
        // An empty behavior is no behavior.
        v1["metadata"]["annotations"] = json!({BEHAVIOR_ANNOTATION: "{}"});
        assert!(to_v2(&v1).unwrap()["spec"].get("behavior").is_none());
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i32>().prop_map(Value::from),
            "[a-zA-Z/.:{}\\[\\]\"0-9]{0,12}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(
                    prop_oneof![
                        Just("spec".to_string()),
                        Just("status".to_string()),
                        Just("metadata".to_string()),
                        Just("annotations".to_string()),
                        Just("metrics".to_string()),
                        Just("resource".to_string()),
                        Just("target".to_string()),
                        Just(METRICS_ANNOTATION.to_string()),
                        Just(BEHAVIOR_ANNOTATION.to_string()),
                        "[a-zA-Z]{1,8}",
                    ],
                    inner,
                    0..5
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn never_panics(v in arb_json()) {
            let v1 = to_v1(&v);
            let _ = to_v2(&v);
            let _ = to_v2(&v1);
        }

        #[test]
        fn v1_objects_survive_a_trip_through_storage(
            target in proptest::option::of(1..100i64),
            min in proptest::option::of(1..5i64),
            max in 1..50i64,
        ) {
            let mut spec = json!({"scaleTargetRef": {"kind": "Deployment", "name": "d", "apiVersion": "apps/v1"}, "maxReplicas": max});
            if let Some(t) = target { spec["targetCPUUtilizationPercentage"] = json!(t); }
            if let Some(m) = min { spec["minReplicas"] = json!(m); }
            let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "a"}, "spec": spec});
            let back = to_v1(&to_v2(&v1).unwrap());
            prop_assert_eq!(&back["spec"]["maxReplicas"], &v1["spec"]["maxReplicas"]);
            prop_assert_eq!(&back["spec"]["minReplicas"], &v1["spec"]["minReplicas"]);
            prop_assert_eq!(&back["spec"]["scaleTargetRef"], &v1["spec"]["scaleTargetRef"]);
            // No target means the server's 80 %.
            prop_assert_eq!(&back["spec"]["targetCPUUtilizationPercentage"], &json!(target.unwrap_or(80)));
            prop_assert!(back["metadata"].get("annotations").is_none());
        }
    }
}
