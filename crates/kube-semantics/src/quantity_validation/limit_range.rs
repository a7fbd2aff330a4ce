//! core/v1 LimitRange: limit types, resource names and the min, max, default
//! and ratio rules of each item.
//!
//! This module must NOT validate ResourceQuota (see `quota`).

use super::*;

/// Go's `q.Cmp(other)`, including its side effect of moving the receiver
/// to the decimal form when either side is decimal (visible in `%#v`).
pub(super) fn go_cmp(recv: &mut Quantity, other: &Quantity) -> std::cmp::Ordering {
    if recv.is_dec_form() || other.is_dec_form() {
        recv.make_dec_form();
    }
    (*recv).cmp(other)
}

/// Go's `q.String()` on an addressable copy: it caches the text.
pub(super) fn go_string(q: &mut Quantity) -> String {
    q.cache_string();
    q.canonical()
}

/// Go's `%f`: six decimals, and Go's names for the non-finite values.
pub(super) fn go_float_f(x: f64) -> String {
    if x.is_nan() {
        "NaN".to_string()
    } else if x.is_infinite() {
        if x > 0.0 { "+Inf" } else { "-Inf" }.to_string()
    } else {
        format!("{x:.6}")
    }
}

/// `validateLimitRangeTypeName`.
pub(super) fn validate_limit_type_name(value: &str, path: &str) -> Vec<FieldError> {
    validate_standard_or_qualified(
        value,
        path,
        |t| STANDARD_LIMIT_TYPES.contains(&t),
        "must be a standard limit type or fully qualified",
    )
}

pub(super) fn validate_limit_resource_name(
    limit_type: &str,
    name: &str,
    path: &str,
) -> Vec<FieldError> {
    match limit_type {
        "Pod" | "Container" => validate_container_resource_name(name, path),
        _ => validate_resource_name(name, path),
    }
}

/// The spec checks of `ValidateLimitRange` (metadata is not checked here).
pub fn validate_limit_range(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(limits) = obj.pointer("/spec/limits").and_then(Value::as_array) else {
        return errs;
    };
    let mut seen_types: HashSet<&str> = HashSet::new();
    for (i, limit) in limits.iter().enumerate() {
        let idx = format!("spec.limits[{i}]");
        let limit_type = limit.get("type").and_then(Value::as_str).unwrap_or("");
        errs.extend(validate_limit_type_name(limit_type, &format!("{idx}.type")));
        if !seen_types.insert(limit_type) {
            errs.push(FieldError::duplicate(format!("{idx}.type"), limit_type));
        }

        let mut keys: BTreeSet<String> = BTreeSet::new();
        let mut read = |field: &str, errs: &mut Vec<FieldError>| {
            let mut out: HashMap<String, Quantity> = HashMap::new();
            for (k, v) in members(Some(limit), field).into_iter().flatten() {
                errs.extend(validate_limit_resource_name(
                    limit_type,
                    k,
                    &format!("{idx}.{field}[{k}]"),
                ));
                keys.insert(k.clone());
                if let Some(q) = decoded(v) {
                    out.insert(k.clone(), q);
                }
            }
            out
        };
        let max = read("max", &mut errs);
        let min = read("min", &mut errs);
        let (defaults, default_requests) = if limit_type == "Pod" {
            for field in ["default", "defaultRequest"] {
                if members(Some(limit), field).is_some_and(|m| !m.is_empty()) {
                    errs.push(FieldError::forbidden(
                        format!("{idx}.{field}"),
                        "may not be specified when `type` is 'Pod'",
                    ));
                }
            }
            (HashMap::new(), HashMap::new())
        } else {
            let d = read("default", &mut errs);
            let dr = read("defaultRequest", &mut errs);
            (d, dr)
        };
        if limit_type == "PersistentVolumeClaim" {
            let has = |field: &str| {
                members(Some(limit), field).is_some_and(|m| m.contains_key("storage"))
            };
            if !has("min") && !has("max") {
                errs.push(FieldError::required(
                    format!("{idx}.limits"),
                    "either minimum or maximum storage value is required, but neither was provided",
                ));
            }
        }
        let ratios = read("maxLimitRequestRatio", &mut errs);

        for k in &keys {
            let mut min_q = min.get(k).cloned();
            let mut max_q = max.get(k).cloned();
            let mut def_q = defaults.get(k).cloned();
            let mut req_q = default_requests.get(k).cloned();
            let mut ratio_q = ratios.get(k).cloned();
            check_limit_key(
                &idx,
                k,
                &mut min_q,
                &mut max_q,
                &mut def_q,
                &mut req_q,
                &mut ratio_q,
                &mut errs,
            );
        }
    }
    errs
}

/// The per-resource checks of `ValidateLimitRange`, in the server's order.
/// The quantities are the loop's local copies, which Go's `Cmp` and
/// `String` mutate, so later messages print them as mutated.
#[allow(clippy::too_many_arguments)]
pub(super) fn check_limit_key(
    idx: &str,
    k: &str,
    min: &mut Option<Quantity>,
    max: &mut Option<Quantity>,
    def: &mut Option<Quantity>,
    req: &mut Option<Quantity>,
    ratio: &mut Option<Quantity>,
    errs: &mut Vec<FieldError>,
) {
    use std::cmp::Ordering::{Equal, Greater, Less};
    let min_path = format!("{idx}.min[{k}]");
    let def_path = format!("{idx}.default[{k}]");
    let req_path = format!("{idx}.defaultRequest[{k}]");
    let ratio_path = format!("{idx}.maxLimitRequestRatio[{k}]");

    if let (Some(mn), Some(mx)) = (min.as_mut(), max.as_mut())
        && go_cmp(mn, mx) == Greater
    {
        let shown = mn.go_syntax();
        let detail = format!(
            "min value {} is greater than max value {}",
            go_string(mn),
            go_string(mx)
        );
        errs.push(FieldError::invalid_rendered(&min_path, &shown, &detail));
    }
    if let (Some(rq), Some(mn)) = (req.as_mut(), min.as_mut())
        && go_cmp(mn, rq) == Greater
    {
        let shown = rq.go_syntax();
        let detail = format!(
            "min value {} is greater than default request value {}",
            go_string(mn),
            go_string(rq)
        );
        errs.push(FieldError::invalid_rendered(&req_path, &shown, &detail));
    }
    if let (Some(rq), Some(mx)) = (req.as_mut(), max.as_mut())
        && go_cmp(rq, mx) == Greater
    {
        let shown = rq.go_syntax();
        let detail = format!(
            "default request value {} is greater than max value {}",
            go_string(rq),
            go_string(mx)
        );
        errs.push(FieldError::invalid_rendered(&req_path, &shown, &detail));
    }
    if let (Some(rq), Some(df)) = (req.as_mut(), def.as_mut())
        && go_cmp(rq, df) == Greater
    {
        let shown = rq.go_syntax();
        let detail = format!(
            "default request value {} is greater than default limit value {}",
            go_string(rq),
            go_string(df)
        );
        errs.push(FieldError::invalid_rendered(&req_path, &shown, &detail));
    }
    if let (Some(df), Some(mn)) = (def.as_mut(), min.as_mut())
        && go_cmp(mn, df) == Greater
    {
        let shown = mn.go_syntax();
        let detail = format!(
            "min value {} is greater than default value {}",
            go_string(mn),
            go_string(df)
        );
        errs.push(FieldError::invalid_rendered(&def_path, &shown, &detail));
    }
    if let (Some(df), Some(mx)) = (def.as_mut(), max.as_mut())
        && go_cmp(df, mx) == Greater
    {
        // The server shows the max quantity here, not the default.
        let shown = mx.go_syntax();
        let detail = format!(
            "default value {} is greater than max value {}",
            go_string(df),
            go_string(mx)
        );
        errs.push(FieldError::invalid_rendered(&def_path, &shown, &detail));
    }
    if let Some(r) = ratio.as_mut()
        && go_cmp(r, &Quantity::from_i64(1, Format::DecimalSI)) == Less
    {
        let shown = r.go_syntax();
        let detail = format!("ratio {} is less than 1", go_string(r));
        errs.push(FieldError::invalid_rendered(&ratio_path, &shown, &detail));
    }
    if let (Some(r), Some(mn), Some(mx)) = (ratio.as_mut(), min.as_ref(), max.as_ref()) {
        let mut ratio_value = r.value() as f64;
        let mut min_value = mn.value();
        let mut max_value = mx.value();
        if r.value() < MAX_MILLI_VALUE && min_value < MAX_MILLI_VALUE && max_value < MAX_MILLI_VALUE
        {
            ratio_value = r.milli_value() as f64 / 1000.0;
            min_value = mn.milli_value();
            max_value = mx.milli_value();
        }
        let ratio_limit = max_value as f64 / min_value as f64;
        if ratio_value > ratio_limit {
            let shown = r.go_syntax();
            let detail = format!(
                "ratio {} is greater than max/min = {}",
                go_string(r),
                go_float_f(ratio_limit)
            );
            errs.push(FieldError::invalid_rendered(&ratio_path, &shown, &detail));
        }
    }
    if !is_overcommit_allowed(k)
        && let (Some(df), Some(rq)) = (def.as_mut(), req.as_mut())
        && go_cmp(df, rq) != Equal
    {
        let shown = rq.go_syntax();
        let detail = format!(
            "default value {} must equal to defaultRequest value {} in {k}",
            go_string(df),
            go_string(rq)
        );
        errs.push(FieldError::invalid_rendered(&req_path, &shown, &detail));
    }
}
