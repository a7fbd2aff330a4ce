//! autoscaling HorizontalPodAutoscaler, in the v2 field layout (v1 objects are
//! converted first): replica bounds, scaleTargetRef, metrics and behavior.
//!
//! This module must NOT convert between v1 and v2: [`crate::hpa_conversion`]
//! does.

use super::*;

/// `MaxStabilizationWindowSeconds`.
pub(super) const MAX_STABILIZATION_WINDOW_SECONDS: i64 = 3600;
/// `MaxPeriodSeconds`.
pub(super) const MAX_PERIOD_SECONDS: i64 = 1800;

/// `ValidateCrossVersionObjectReference`: kind and name required and path
/// segments.
pub(super) fn validate_cross_version_ref(r: &Value, path: &str, errs: &mut Vec<FieldError>) {
    for f in ["kind", "name"] {
        let v = string(r, f);
        if v.is_empty() {
            errs.push(required(&child(path, f), ""));
        } else {
            for msg in is_valid_path_segment_name(v) {
                errs.push(invalid_str(&child(path, f), v, &msg));
            }
        }
    }
}

/// The sign of a quantity field and its canonical text (`Quantity.String()`),
/// or `None` when absent or unparseable (the decoder refuses those).
pub(super) fn quantity_sign(v: &Value, k: &str) -> Option<(i32, String)> {
    let q = crate::quantity::parse_json(get(v, k)?).ok()?;
    Some((q.sign(), q.canonical()))
}

pub(super) fn validate_hpa(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let spec = get(obj, "spec").unwrap_or(&Value::Null);
    // Scale-to-zero (`HPAScaleToZero`) is alpha and off in v1.33; an object
    // already stored with `minReplicas: 0` keeps it on update.
    let old_zero =
        old.is_some_and(|o| get(o, "spec").and_then(|s| int(s, "minReplicas")) == Some(0));
    let lower = if old_zero { 0 } else { 1 };
    let min = int(spec, "minReplicas");
    let max = int(spec, "maxReplicas").unwrap_or(0);
    if let Some(m) = min
        && m < lower
    {
        errs.push(invalid(
            "spec.minReplicas",
            &m.to_string(),
            &format!("must be greater than or equal to {lower}"),
        ));
    }
    if max < 1 {
        errs.push(invalid(
            "spec.maxReplicas",
            &max.to_string(),
            "must be greater than 0",
        ));
    }
    if let Some(m) = min
        && max < m
    {
        errs.push(invalid(
            "spec.maxReplicas",
            &max.to_string(),
            "must be greater than or equal to `minReplicas`",
        ));
    }
    let target = get(spec, "scaleTargetRef").unwrap_or(&Value::Null);
    validate_cross_version_ref(target, "spec.scaleTargetRef", errs);
    let metrics = arr(spec, "metrics");
    let mut object_or_external = false;
    for (i, m) in metrics.iter().enumerate() {
        validate_metric_spec(m, &index("spec.metrics", i), errs);
        object_or_external |= matches!(string(m, "type"), "Object" | "External");
    }
    if min == Some(0) && !object_or_external {
        errs.push(forbidden(
            "spec.metrics",
            "must specify at least one Object or External metric to support scaling to zero replicas",
        ));
    }
    if let Some(behavior) = get(spec, "behavior") {
        for f in ["scaleUp", "scaleDown"] {
            if let Some(rules) = get(behavior, f) {
                validate_scaling_rules(rules, &child("spec.behavior", f), errs);
            }
        }
    }
}

pub(super) fn validate_scaling_rules(rules: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if let Some(w) = int(rules, "stabilizationWindowSeconds") {
        let p = child(path, "stabilizationWindowSeconds");
        if w < 0 {
            errs.push(invalid(
                &p,
                &w.to_string(),
                "must be greater than or equal to zero",
            ));
        }
        if w > MAX_STABILIZATION_WINDOW_SECONDS {
            errs.push(invalid(
                &p,
                &w.to_string(),
                &format!("must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}"),
            ));
        }
    }
    if let Some(sp) = opt_string(rules, "selectPolicy")
        && !matches!(sp, "Disabled" | "Max" | "Min")
    {
        errs.push(not_supported(
            &child(path, "selectPolicy"),
            sp,
            &["Disabled", "Max", "Min"],
        ));
    }
    let policies = arr(rules, "policies");
    let ppath = child(path, "policies");
    if policies.is_empty() {
        errs.push(required(&ppath, "must specify at least one Policy"));
    }
    for (i, p) in policies.iter().enumerate() {
        let ip = index(&ppath, i);
        let ty = string(p, "type");
        if !matches!(ty, "Pods" | "Percent") {
            errs.push(not_supported(&child(&ip, "type"), ty, &["Percent", "Pods"]));
        }
        let value = int(p, "value").unwrap_or(0);
        if value <= 0 {
            errs.push(invalid(
                &child(&ip, "value"),
                &value.to_string(),
                "must be greater than zero",
            ));
        }
        let period = int(p, "periodSeconds").unwrap_or(0);
        if period <= 0 {
            errs.push(invalid(
                &child(&ip, "periodSeconds"),
                &period.to_string(),
                "must be greater than zero",
            ));
        }
        if period > MAX_PERIOD_SECONDS {
            errs.push(invalid(
                &child(&ip, "periodSeconds"),
                &period.to_string(),
                &format!("must be less than or equal to {MAX_PERIOD_SECONDS}"),
            ));
        }
    }
}

/// The metric source types, sorted as `sets.String.List()` returns them.
pub(super) const METRIC_SOURCE_TYPES: [&str; 5] = [
    "ContainerResource",
    "External",
    "Object",
    "Pods",
    "Resource",
];

pub(super) fn validate_metric_spec(m: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let ty = string(m, "type");
    if ty.is_empty() {
        errs.push(required(
            &child(path, "type"),
            "must specify a metric source type",
        ));
    }
    if !METRIC_SOURCE_TYPES.contains(&ty) {
        errs.push(not_supported(
            &child(path, "type"),
            ty,
            &METRIC_SOURCE_TYPES,
        ));
    }
    // Upstream checks the sources in this order and only the first present.
    let sources = [
        "object",
        "external",
        "pods",
        "resource",
        "containerResource",
    ];
    let present: Vec<&str> = sources
        .iter()
        .copied()
        .filter(|s| get(m, s).is_some_and(Value::is_object))
        .collect();
    if let Some(first) = present.first() {
        let src = get(m, first).unwrap_or(&Value::Null);
        validate_metric_source(first, src, &child(path, first), errs);
    }
    let expected = match ty {
        "Object" => "object",
        "Pods" => "pods",
        "Resource" => "resource",
        "External" => "external",
        "ContainerResource" => "containerResource",
        _ => "",
    };
    if expected.is_empty() {
        // The switch's default case reports the type a second time.
        errs.push(not_supported(
            &child(path, "type"),
            ty,
            &METRIC_SOURCE_TYPES,
        ));
    } else if !present.contains(&expected) {
        errs.push(required(
            &child(path, expected),
            "must populate information for the given metric source",
        ));
    }
    if present.len() != 1 {
        // Go iterates a set here: the order is random; sorted in this module.
        let mut extra: Vec<&str> = present.into_iter().filter(|s| *s != expected).collect();
        extra.sort_unstable();
        for s in extra {
            errs.push(forbidden(
                &child(path, s),
                "must populate the given metric source only",
            ));
        }
    }
}

pub(super) fn validate_metric_source(
    kind: &str,
    src: &Value,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let target = get(src, "target").unwrap_or(&Value::Null);
    let tpath = child(path, "target");
    let has = |k: &str| get(target, k).is_some();
    match kind {
        "object" => {
            let described = get(src, "describedObject").unwrap_or(&Value::Null);
            validate_cross_version_ref(described, &child(path, "describedObject"), errs);
            validate_metric_identifier(src, path, errs);
            validate_metric_target(target, &tpath, errs);
            if !has("value") && !has("averageValue") {
                errs.push(required(
                    &child(&tpath, "averageValue"),
                    "must set either a target value or averageValue",
                ));
            }
        }
        "external" => {
            validate_metric_identifier(src, path, errs);
            validate_metric_target(target, &tpath, errs);
            if !has("value") && !has("averageValue") {
                errs.push(required(
                    &child(&tpath, "averageValue"),
                    "must set either a target value for metric or a per-pod target",
                ));
            }
            if has("value") && has("averageValue") {
                errs.push(forbidden(
                    &child(&tpath, "value"),
                    "may not set both a target value for metric and a per-pod target",
                ));
            }
        }
        "pods" => {
            validate_metric_identifier(src, path, errs);
            validate_metric_target(target, &tpath, errs);
            if !has("averageValue") {
                errs.push(required(
                    &child(&tpath, "averageValue"),
                    "must specify a positive target averageValue",
                ));
            }
        }
        _ => {
            if string(src, "name").is_empty() {
                errs.push(required(
                    &child(path, "name"),
                    "must specify a resource name",
                ));
            }
            if kind == "containerResource" {
                let c = string(src, "container");
                if c.is_empty() {
                    errs.push(required(
                        &child(path, "container"),
                        "must specify a container",
                    ));
                } else {
                    for msg in is_dns1123_label(c) {
                        errs.push(invalid_str(&child(path, "container"), c, &msg));
                    }
                }
            }
            validate_metric_target(target, &tpath, errs);
            if !has("averageUtilization") && !has("averageValue") {
                errs.push(required(
                    &child(&tpath, "averageUtilization"),
                    "must set either a target raw value or a target utilization",
                ));
            }
            if has("averageUtilization") && has("averageValue") {
                errs.push(forbidden(
                    &child(&tpath, "averageValue"),
                    "may not set both a target raw value and a target utilization",
                ));
            }
        }
    }
}

pub(super) fn validate_metric_identifier(src: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let metric = get(src, "metric").unwrap_or(&Value::Null);
    let p = child(&child(path, "metric"), "name");
    let name = string(metric, "name");
    if name.is_empty() {
        errs.push(required(&p, "must specify a metric name"));
    } else {
        for msg in is_valid_path_segment_name(name) {
            errs.push(invalid_str(&p, name, &msg));
        }
    }
}

pub(super) fn validate_metric_target(t: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let ty = string(t, "type");
    if ty.is_empty() {
        errs.push(required(
            &child(path, "type"),
            "must specify a metric target type",
        ));
    }
    if !matches!(ty, "Utilization" | "Value" | "AverageValue") {
        errs.push(invalid_str(
            &child(path, "type"),
            ty,
            "must be either Utilization, Value, or AverageValue",
        ));
    }
    for f in ["value", "averageValue"] {
        // A Quantity is a Stringer: its canonical form prints unquoted.
        if let Some((sign, text)) = quantity_sign(t, f)
            && sign != 1
        {
            errs.push(invalid(&child(path, f), &text, "must be positive"));
        }
    }
    if let Some(u) = int(t, "averageUtilization")
        && u < 1
    {
        errs.push(invalid(
            &child(path, "averageUtilization"),
            &u.to_string(),
            "must be greater than 0",
        ));
    }
}
