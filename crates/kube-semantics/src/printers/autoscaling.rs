//! Cells of HorizontalPodAutoscaler (its targets column) and of the scale
//! subresource.
//!
//! This module must NOT convert autoscaling/v1 objects: they reach the printer
//! already in the v2 layout.

use super::*;

pub(super) fn horizontal_pod_autoscaler(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let reference = format!(
        "{}/{}",
        st(o, &["spec", "scaleTargetRef", "kind"]),
        st(o, &["spec", "scaleTargetRef", "name"])
    );
    // Both autoscaling versions default minReplicas to 1, so upstream's
    // `<unset>` does not show for a stored object.
    let min_pods = oint(o, &["spec", "minReplicas"]).unwrap_or(1).to_string();
    vec![
        name(o).into(),
        reference.into(),
        hpa_targets(o).into(),
        min_pods.into(),
        int(o, &["spec", "maxReplicas"]).into(),
        int(o, &["status", "currentReplicas"]).into(),
        created(o, now),
    ]
}

/// `Quantity.String()` of an optional quantity (`<nil>` when unset).
pub(super) fn opt_quantity(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "<nil>".to_string(),
        v => quantity(v),
    }
}

/// The metric specs and statuses of an HPA, as autoscaling/v2 has them;
/// an autoscaling/v1 object's CPU target is converted as the server does.
pub(super) fn hpa_metrics(o: &Value) -> (Vec<Value>, Vec<Value>) {
    if let Some(target) = oint(o, &["spec", "targetCPUUtilizationPercentage"]) {
        let spec = serde_json::json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": target}}});
        let status = oint(o, &["status", "currentCPUUtilizationPercentage"])
            .map(|c| {
                vec![
                    serde_json::json!({"type": "Resource", "resource": {"name": "cpu",
                    "current": {"averageUtilization": c}}}),
                ]
            })
            .unwrap_or_default();
        return (vec![spec], status);
    }
    (
        arr(o, &["spec", "metrics"]).to_vec(),
        arr(o, &["status", "currentMetrics"]).to_vec(),
    )
}

pub(super) fn hpa_targets(o: &Value) -> String {
    let (specs, statuses) = hpa_metrics(o);
    if specs.is_empty() {
        return "<none>".to_string();
    }
    let status_of = |i: usize, field: &str| statuses.get(i).and_then(|s| present(s, &[field]));
    let list: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| match st(spec, &["type"]) {
            field @ ("External" | "Object") => {
                let key = if field == "External" {
                    "external"
                } else {
                    "object"
                };
                let target = get(spec, &[key, "target"]).unwrap_or(&Value::Null);
                let current = status_of(i, key);
                if get(target, &["averageValue"]).is_some_and(|v| !v.is_null()) {
                    let cur = current
                        .and_then(|c| get(c, &["current", "averageValue"]))
                        .filter(|v| !v.is_null())
                        .map(|v| quantity(Some(v)))
                        .unwrap_or_else(|| "<unknown>".to_string());
                    format!(
                        "{cur}/{} (avg)",
                        opt_quantity(get(target, &["averageValue"]))
                    )
                } else {
                    let cur = current
                        .map(|c| opt_quantity(get(c, &["current", "value"])))
                        .unwrap_or_else(|| "<unknown>".to_string());
                    format!("{cur}/{}", opt_quantity(get(target, &["value"])))
                }
            }
            "Pods" => {
                let cur = status_of(i, "pods")
                    .map(|c| opt_quantity(get(c, &["current", "averageValue"])))
                    .unwrap_or_else(|| "<unknown>".to_string());
                format!(
                    "{cur}/{}",
                    opt_quantity(get(spec, &["pods", "target", "averageValue"]))
                )
            }
            field @ ("Resource" | "ContainerResource") => {
                let key = if field == "Resource" {
                    "resource"
                } else {
                    "containerResource"
                };
                let metric = get(spec, &[key]).unwrap_or(&Value::Null);
                let resource = st(metric, &["name"]);
                let current = status_of(i, key);
                if get(metric, &["target", "averageValue"]).is_some_and(|v| !v.is_null()) {
                    let cur = current
                        .map(|c| opt_quantity(get(c, &["current", "averageValue"])))
                        .unwrap_or_else(|| "<unknown>".to_string());
                    format!(
                        "{resource}: {cur}/{}",
                        opt_quantity(get(metric, &["target", "averageValue"]))
                    )
                } else {
                    let cur = current
                        .and_then(|c| oint(c, &["current", "averageUtilization"]))
                        .map(|u| format!("{u}%"))
                        .unwrap_or_else(|| "<unknown>".to_string());
                    let target = oint(metric, &["target", "averageUtilization"])
                        .map(|u| format!("{u}%"))
                        .unwrap_or_else(|| "<auto>".to_string());
                    format!("{resource}: {cur}/{target}")
                }
            }
            _ => "<unknown type>".to_string(),
        })
        .collect();
    const MAX: usize = 2;
    if list.len() > MAX {
        format!("{} + {} more...", list[..MAX].join(", "), list.len() - MAX)
    } else {
        list.join(", ")
    }
}

// A Scale has no age column (kubectl get --subresource=scale prints NAME
// DESIRED AVAILABLE).
pub(super) fn scale(o: &Value, _now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        int(o, &["spec", "replicas"]).into(),
        int(o, &["status", "replicas"]).into(),
    ]
}
