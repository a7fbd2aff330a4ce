//! Conversion of an autoscaling/v1 HorizontalPodAutoscaler to the v2 layout,
//! restoring the fields kept in annotations.
//!
//! This module must NOT convert the other way (see `to_v1`).

use super::*;

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

pub(super) fn parse_list(
    annotation: &'static str,
    text: &str,
) -> Result<Vec<Value>, ConversionError> {
    let err = |error: String| ConversionError { annotation, error };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(items)) => Ok(items),
        // Go decodes a JSON null into a nil slice.
        Ok(Value::Null) => Ok(Vec::new()),
        Ok(other) => Err(err(format!(
            "json: cannot unmarshal {} into Go value of type []v1.{}",
            crate::gofmt::json_type(&other),
            match annotation {
                CONDITIONS_ANNOTATION => "HorizontalPodAutoscalerCondition",
                CURRENT_METRICS_ANNOTATION => "MetricStatus",
                _ => "MetricSpec",
            }
        ))),
        Err(e) => Err(err(e.to_string())),
    }
}

pub(super) fn cpu_target(utilization: Value) -> Value {
    json!({
        "type": "Resource",
        "resource": {
            "name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": utilization}
        }
    })
}

pub(super) fn identifier(name: Option<&Value>, selector: Option<&Value>) -> Value {
    let mut m = Obj::new();
    m.insert("name".into(), str_or_empty(name));
    put(&mut m, "selector", selector);
    Value::Object(m)
}

pub(super) fn described(target: Option<&Value>) -> Value {
    cross_ref(target)
}

pub(super) fn metric_spec_to_v2(m: &Value) -> Value {
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

pub(super) fn metric_status_to_v2(m: &Value) -> Value {
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

pub(super) fn condition_to_v2(c: &Value) -> Value {
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
pub(super) fn field<'a>(m: &'a Obj, name: &str) -> Option<&'a Value> {
    m.get(name).or_else(|| {
        m.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    })
}

/// `spec.behavior` from the internal encoding; `None` when it does not
/// decode or names neither direction (upstream then leaves it unset).
pub(super) fn behavior_from_internal(text: &str) -> Option<Value> {
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

pub(super) fn rules_from_internal(r: &Obj) -> Option<Value> {
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
