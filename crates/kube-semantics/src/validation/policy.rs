//! policy/v1 PodDisruptionBudget: budgets, selector and eviction policy.
//!
//! This module must NOT validate the pods the budget selects.

use super::*;

/// `%#v` of a `policy.PodDisruptionBudgetSpec`. Its fields are pointers, so
/// Go prints heap addresses that differ on every request; fixed stand-ins
/// are printed where the real server prints an address.
pub(super) fn go_pdb_spec(spec: &Value) -> String {
    let ptr = |f: &str, ty: &str, addr: &str| {
        if get(spec, f).is_some() {
            format!("({ty})({addr})")
        } else {
            format!("({ty})(nil)")
        }
    };
    format!(
        "policy.PodDisruptionBudgetSpec{{MinAvailable:{}, Selector:{}, MaxUnavailable:{}, \
         UnhealthyPodEvictionPolicy:{}}}",
        ptr("minAvailable", "*intstr.IntOrString", "0xc000a00000"),
        ptr("selector", "*v1.LabelSelector", "0xc000a00020"),
        ptr("maxUnavailable", "*intstr.IntOrString", "0xc000a00040"),
        ptr(
            "unhealthyPodEvictionPolicy",
            "*policy.UnhealthyPodEvictionPolicyType",
            "0xc000a00060"
        ),
    )
}

pub(super) fn validate_pdb(obj: &Value, errs: &mut Vec<FieldError>) {
    let spec = get(obj, "spec").unwrap_or(&Value::Null);
    let min = get(spec, "minAvailable");
    let max = get(spec, "maxUnavailable");
    if min.is_some() && max.is_some() {
        errs.push(invalid(
            "spec",
            &go_pdb_spec(spec),
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for (f, v) in [("minAvailable", min), ("maxUnavailable", max)] {
        if let Some(v) = v {
            let p = child("spec", f);
            validate_int_or_percent(v, &p, errs);
            not_more_than_100_percent(v, &p, errs);
        }
    }
    if let Some(sel) = get(spec, "selector").filter(|s| s.is_object()) {
        validate_label_selector(sel, "spec.selector", errs);
    }
    if let Some(policy) = opt_string(spec, "unhealthyPodEvictionPolicy")
        && !matches!(policy, "AlwaysAllow" | "IfHealthyBudget")
    {
        errs.push(not_supported(
            "spec.unhealthyPodEvictionPolicy",
            policy,
            &["AlwaysAllow", "IfHealthyBudget"],
        ));
    }
}
