//! Validation of labels and of `metav1.LabelSelector`, and the parsed selector
//! the workload checks compare templates against.
//!
//! This module must NOT match selectors against stored objects (that is
//! [`crate::selector`]): it only checks their shape.

use super::*;

/// `ValidateLabels` (apimachinery): every problem is reported on `path`
/// itself, not on the key.
pub(super) fn validate_labels(labels: &Map<String, Value>, path: &str, errs: &mut Vec<FieldError>) {
    for (k, v) in labels {
        for msg in is_qualified_name(k) {
            errs.push(invalid_str(path, k, &msg));
        }
        if let Some(v) = v.as_str() {
            for msg in is_valid_label_value(v) {
                errs.push(invalid_str(path, v, &msg));
            }
        }
    }
}

/// `ValidateLabelSelector` with invalid label values rejected.
pub(super) fn validate_label_selector(sel: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if let Some(labels) = map_at(sel, "matchLabels") {
        validate_labels(labels, &child(path, "matchLabels"), errs);
    }
    for (i, expr) in arr(sel, "matchExpressions").iter().enumerate() {
        let p = index(&child(path, "matchExpressions"), i);
        let values = arr(expr, "values");
        match string(expr, "operator") {
            "In" | "NotIn" => {
                if values.is_empty() {
                    errs.push(required(
                        &child(&p, "values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    errs.push(forbidden(
                        &child(&p, "values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            other => errs.push(invalid_str(
                &child(&p, "operator"),
                other,
                "not a valid selector operator",
            )),
        }
        let k = string(expr, "key");
        for msg in is_qualified_name(k) {
            errs.push(invalid_str(&child(&p, "key"), k, &msg));
        }
        for (j, v) in values.iter().enumerate() {
            let v = v.as_str().unwrap_or("");
            for msg in is_valid_label_value(v) {
                errs.push(invalid_str(&index(&child(&p, "values"), j), v, &msg));
            }
        }
    }
}

/// A selector as `metav1.LabelSelectorAsSelector` converts it.
pub(super) enum Selector {
    /// A nil selector: matches nothing.
    Nothing,
    /// The AND of these requirements (none: matches everything).
    Requirements(Vec<(String, String, Vec<String>)>),
}

impl Selector {
    /// `LabelSelectorAsSelector`; `None` where it returns an error.
    pub(super) fn from_json(sel: Option<&Value>) -> Option<Self> {
        let Some(sel) = sel else {
            return Some(Self::Nothing);
        };
        let mut reqs = Vec::new();
        if let Some(labels) = map_at(sel, "matchLabels") {
            for (k, v) in labels {
                let v = v.as_str().unwrap_or("");
                if !is_qualified_name(k).is_empty() || !is_valid_label_value(v).is_empty() {
                    return None;
                }
                reqs.push((k.clone(), "In".to_string(), vec![v.to_string()]));
            }
        }
        for expr in arr(sel, "matchExpressions") {
            let k = string(expr, "key");
            let op = string(expr, "operator");
            let values: Vec<String> = arr(expr, "values")
                .iter()
                .map(|v| v.as_str().unwrap_or("").to_string())
                .collect();
            let ok = match op {
                "In" | "NotIn" => !values.is_empty(),
                "Exists" | "DoesNotExist" => values.is_empty(),
                _ => false,
            };
            if !ok
                || !is_qualified_name(k).is_empty()
                || values.iter().any(|v| !is_valid_label_value(v).is_empty())
            {
                return None;
            }
            reqs.push((k.to_string(), op.to_string(), values));
        }
        Some(Self::Requirements(reqs))
    }

    pub(super) fn is_empty(&self) -> bool {
        matches!(self, Self::Requirements(r) if r.is_empty())
    }

    pub(super) fn matches(&self, labels: Option<&BTreeMap<&str, &str>>) -> bool {
        let Self::Requirements(reqs) = self else {
            return false;
        };
        reqs.iter().all(|(k, op, values)| {
            let got = labels.and_then(|l| l.get(k.as_str()).copied());
            match op.as_str() {
                "In" => got.is_some_and(|g| values.iter().any(|v| v == g)),
                "NotIn" => got.is_none_or(|g| values.iter().all(|v| v != g)),
                "Exists" => got.is_some(),
                _ => got.is_none(),
            }
        })
    }
}
