//! scheduling.k8s.io PriorityClass: value, system classes and preemption
//! policy, and their immutability.
//!
//! This module must NOT validate a pod's `priorityClassName` (see `pods`).

use super::*;

/// `HighestUserDefinablePriority`.
pub(super) const HIGHEST_USER_DEFINABLE_PRIORITY: i64 = 1_000_000_000;
/// The built-in system classes: name, value (neither is a global default).
pub(super) const SYSTEM_PRIORITY_CLASSES: [(&str, i64); 2] = [
    ("system-node-critical", 2_000_001_000),
    ("system-cluster-critical", 2_000_000_000),
];

pub(super) fn validate_priority_class(
    obj: &Value,
    old: Option<&Value>,
    errs: &mut Vec<FieldError>,
) {
    if let Some(old) = old {
        let (new_value, old_value) = (int(obj, "value"), int(old, "value"));
        if new_value.unwrap_or(0) != old_value.unwrap_or(0) {
            errs.push(forbidden("value", "may not be changed in an update."));
        }
        let policy = opt_string(obj, "preemptionPolicy");
        if policy != opt_string(old, "preemptionPolicy") {
            let shown = policy.map_or_else(|| "null".to_string(), quote);
            errs.push(invalid("preemptionPolicy", &shown, IMMUTABLE));
        }
        return;
    }
    let name = get(obj, "metadata").map_or("", |m| string(m, "name"));
    let value = int(obj, "value").unwrap_or(0);
    if name.starts_with("system-") {
        let global = get(obj, "globalDefault")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let problem = match SYSTEM_PRIORITY_CLASSES.iter().find(|(n, _)| *n == name) {
            None => Some(format!("{name} is not a known system priority class")),
            Some((n, v)) if *v != value => Some(format!("value of {n} PriorityClass must be {v}")),
            Some((n, _)) if global => {
                Some(format!("globalDefault of {n} PriorityClass must be false"))
            }
            Some(_) => None,
        };
        if let Some(problem) = problem {
            errs.push(forbidden(
                "metadata.name",
                &format!(
                    "priority class names with 'system-' prefix are reserved for system use \
                     only. error: {problem}"
                ),
            ));
        }
    } else if value > HIGHEST_USER_DEFINABLE_PRIORITY {
        errs.push(forbidden(
            "value",
            &format!(
                "maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
            ),
        ));
    }
    if let Some(policy) = opt_string(obj, "preemptionPolicy") {
        match policy {
            "PreemptLowerPriority" | "Never" => {}
            "" => errs.push(required("preemptionPolicy", "")),
            other => errs.push(not_supported(
                "preemptionPolicy",
                other,
                &["PreemptLowerPriority", "Never"],
            )),
        }
    }
}
