//! Cells of admissionregistration.k8s.io: webhook configurations, admission
//! policies and their bindings.
//!
//! This module must NOT declare columns (see `columns`).

use super::*;

pub(super) fn webhook_configuration(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        len_of(o, &["webhooks"]).into(),
        created(o, now),
    ]
}

pub(super) fn param_kind(o: &Value) -> String {
    match present(o, &["spec", "paramKind"]) {
        None => "<unset>".to_string(),
        Some(p) => format!("{}/{}", st(p, &["apiVersion"]), st(p, &["kind"])),
    }
}

pub(super) fn validating_admission_policy(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        len_of(o, &["spec", "validations"]).into(),
        param_kind(o).into(),
        created(o, now),
    ]
}

pub(super) fn mutating_admission_policy(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        len_of(o, &["spec", "mutations"]).into(),
        param_kind(o).into(),
        created(o, now),
    ]
}

pub(super) fn admission_policy_binding(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let param = match present(o, &["spec", "paramRef"]) {
        None => "<unset>".to_string(),
        Some(p) => match (st(p, &["name"]), st(p, &["namespace"])) {
            ("", _) => match present(p, &["selector"]) {
                Some(sel) => go_label_selector_debug(sel),
                None => "<unset>".to_string(),
            },
            // The scope of the param kind is unknown here, so a name
            // without a namespace gets `*`.
            (n, "") => format!("*/{n}"),
            (n, ns) => format!("{ns}/{n}"),
        },
    };
    vec![
        name(o).into(),
        st(o, &["spec", "policyName"]).into(),
        param.into(),
        created(o, now),
    ]
}

/// The Go (gogo-protobuf generated) `String()` of a `LabelSelector`,
/// which upstream prints for a param reference by selector. Written from
/// the generator's output format, not confirmed against a live server.
pub(super) fn go_label_selector_debug(sel: &Value) -> String {
    let mut labels: Vec<(&str, &str)> = map(sel, &["matchLabels"])
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    labels.sort();
    let labels: String = labels.iter().map(|(k, v)| format!("{k}: {v},")).collect();
    let exprs: String = arr(sel, &["matchExpressions"])
        .iter()
        .map(|e| {
            let values: Vec<&str> = arr(e, &["values"])
                .iter()
                .map(|v| v.as_str().unwrap_or(""))
                .collect();
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                st(e, &["key"]),
                st(e, &["operator"]),
                values.join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}"
    )
}
