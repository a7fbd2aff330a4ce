//! Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob and
//! ReplicationController: selectors, replicas, strategies, the StatefulSet
//! update rule and the Job counters.
//!
//! This module must NOT check the pod template itself beyond handing it to
//! `pods`.

use super::*;

/// Which workload a template belongs to, for the kind-specific messages.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Workload {
    Deployment,
    ReplicaSet,
    StatefulSet,
    DaemonSet,
}

impl Workload {
    /// The word in `empty selector is invalid for <x>` (ReplicaSets share
    /// the Deployment wording upstream).
    pub(super) fn selector_word(self) -> &'static str {
        match self {
            Self::Deployment | Self::ReplicaSet => "deployment",
            Self::StatefulSet => "statefulset",
            Self::DaemonSet => "daemonset",
        }
    }

    /// The kind in `activeDeadlineSeconds in <X> is not Supported`
    /// (Deployments share the ReplicaSet template check upstream).
    pub(super) fn deadline_word(self) -> &'static str {
        match self {
            Self::Deployment | Self::ReplicaSet => "ReplicaSet",
            Self::StatefulSet => "StatefulSet",
            Self::DaemonSet => "DaemonSet",
        }
    }
}

/// A controller's pods run until replaced: the template's `restartPolicy`
/// must be `Always` and it may not set `activeDeadlineSeconds` (refused
/// with a message naming `kind`).
fn validate_long_running_pods(tspec: &Value, kind: &str, errs: &mut Vec<FieldError>) {
    let policy = string(tspec, "restartPolicy");
    if policy != "Always" {
        errs.push(not_supported(
            "spec.template.spec.restartPolicy",
            policy,
            &["Always"],
        ));
    }
    if get(tspec, "activeDeadlineSeconds").is_some() {
        errs.push(forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            &format!("activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
}

pub(super) fn nonnegative(spec: &Value, f: &str, path: &str, errs: &mut Vec<FieldError>) {
    if let Some(v) = int(spec, f)
        && v < 0
    {
        errs.push(invalid(&child(path, f), &v.to_string(), NEGATIVE));
    }
}

/// `%#v` of a strategy struct whose `RollingUpdate` is a pointer: nil
/// prints as Go does, a set pointer prints its address upstream, which
/// cannot be reproduced (`(...)` stands for it here).
pub(super) fn go_strategy(go_type: &str, pointer_type: &str, strategy: &Value) -> String {
    let ru = if get(strategy, "rollingUpdate").is_some() {
        format!("(*{pointer_type})(...)")
    } else {
        format!("(*{pointer_type})(nil)")
    };
    format!(
        "{go_type}{{Type:{}, RollingUpdate:{ru}}}",
        quote(string(strategy, "type"))
    )
}

/// `ValidateDeploymentSpec`, `ValidateReplicaSetSpec`,
/// `ValidateStatefulSetSpec` and `ValidateDaemonSetSpec`, plus the update
/// rules of their registry strategies.
pub(super) fn validate_workload(
    obj: &Value,
    old: Option<&Value>,
    w: Workload,
    errs: &mut Vec<FieldError>,
) {
    let spec = get(obj, "spec").unwrap_or(&Value::Null);
    match w {
        Workload::Deployment => nonnegative(spec, "replicas", "spec", errs),
        Workload::ReplicaSet => {
            nonnegative(spec, "replicas", "spec", errs);
            nonnegative(spec, "minReadySeconds", "spec", errs);
        }
        Workload::StatefulSet => validate_statefulset_head(spec, errs),
        Workload::DaemonSet => {}
    }
    let sel = get(spec, "selector").filter(|s| s.is_object());
    let template = get(spec, "template").unwrap_or(&Value::Null);
    let template_labels = get(template, "metadata").and_then(|m| string_map(m, "labels"));
    let mismatch = |errs: &mut Vec<FieldError>| {
        errs.push(invalid(
            "spec.template.metadata.labels",
            &go_string_map(template_labels.as_ref()),
            SELECTOR_MISMATCH,
        ));
    };
    let empty_selector = |s: &Value, errs: &mut Vec<FieldError>| {
        let n = map_at(s, "matchLabels").map_or(0, Map::len) + arr(s, "matchExpressions").len();
        if n == 0 {
            errs.push(invalid(
                "spec.selector",
                &go_label_selector(Some(s)),
                &format!("empty selector is invalid for {}", w.selector_word()),
            ));
        }
    };
    let opts = PodOpts { is_pod: false };
    let tspec = get(template, "spec").unwrap_or(&Value::Null);
    let mut template_checked = true;
    if w == Workload::DaemonSet {
        if let Some(s) = sel {
            validate_label_selector(s, "spec.selector", errs);
        }
        if Selector::from_json(sel).is_some_and(|s| !s.matches(template_labels.as_ref())) {
            mismatch(errs);
        }
        if let Some(s) = sel {
            empty_selector(s, errs);
        }
        validate_pod_template(template, "spec.template", opts, errs);
    } else {
        match sel {
            None => errs.push(required("spec.selector", "")),
            Some(s) => {
                validate_label_selector(s, "spec.selector", errs);
                empty_selector(s, errs);
            }
        }
        match Selector::from_json(sel) {
            None => {
                let detail = if w == Workload::StatefulSet {
                    ""
                } else {
                    "invalid label selector"
                };
                errs.push(invalid("spec.selector", &go_label_selector(sel), detail));
                template_checked = false;
            }
            Some(selector) => {
                if !selector.is_empty() && !selector.matches(template_labels.as_ref()) {
                    mismatch(errs);
                }
                if w == Workload::StatefulSet {
                    // Upstream leaves a StatefulSet's pod spec unvalidated
                    // (its volumes come partly from volumeClaimTemplates).
                    if let Some(meta) = get(template, "metadata") {
                        if let Some(labels) = map_at(meta, "labels") {
                            validate_labels(labels, "spec.template.labels", errs);
                        }
                        if let Some(annotations) = map_at(meta, "annotations") {
                            validate_annotations(annotations, "spec.template.annotations", errs);
                        }
                    }
                } else {
                    validate_pod_template(template, "spec.template", opts, errs);
                }
            }
        }
    }
    // Deployments and ReplicaSets check these inside the template check,
    // which a broken selector skips; the others always do.
    if template_checked || w == Workload::StatefulSet {
        validate_long_running_pods(tspec, w.deadline_word(), errs);
    }
    match w {
        Workload::Deployment => {
            validate_deployment_strategy(spec, errs);
            nonnegative(spec, "minReadySeconds", "spec", errs);
            nonnegative(spec, "revisionHistoryLimit", "spec", errs);
            if let Some(pds) = int(spec, "progressDeadlineSeconds") {
                nonnegative(spec, "progressDeadlineSeconds", "spec", errs);
                if pds <= int(spec, "minReadySeconds").unwrap_or(0) {
                    errs.push(invalid(
                        "spec.progressDeadlineSeconds",
                        &pds.to_string(),
                        "must be greater than minReadySeconds",
                    ));
                }
            }
        }
        Workload::DaemonSet => {
            nonnegative(spec, "minReadySeconds", "spec", errs);
            nonnegative(spec, "templateGeneration", "spec", errs);
            validate_daemonset_strategy(spec, errs);
            nonnegative(spec, "revisionHistoryLimit", "spec", errs);
        }
        _ => {}
    }
    let Some(old) = old else {
        return;
    };
    let old_spec = get(old, "spec").unwrap_or(&Value::Null);
    if w == Workload::StatefulSet {
        if statefulset_fixed_fields(spec) != statefulset_fixed_fields(old_spec) {
            errs.push(forbidden(
                "spec",
                "updates to statefulset spec for fields other than 'replicas', 'ordinals', \
                 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and \
                 'minReadySeconds' are forbidden",
            ));
        }
    } else {
        // apps/v1 forbids selector changes (the registry strategies add
        // this for every version but the retired beta ones).
        let old_sel = get(old_spec, "selector");
        if !same_selector(sel, old_sel) {
            errs.push(invalid("spec.selector", &go_label_selector(sel), IMMUTABLE));
        }
    }
}

/// The StatefulSet fields an update may not change: the spec without the
/// ones `ValidateStatefulSetUpdate` lets through.
pub(super) fn statefulset_fixed_fields(spec: &Value) -> Map<String, Value> {
    let mut out = spec.as_object().cloned().unwrap_or_default();
    for f in [
        "replicas",
        "template",
        "updateStrategy",
        "minReadySeconds",
        "ordinals",
        "persistentVolumeClaimRetentionPolicy",
    ] {
        out.remove(f);
    }
    out.retain(|_, v| !v.is_null());
    out
}

/// The StatefulSet checks that come before the selector upstream.
pub(super) fn validate_statefulset_head(spec: &Value, errs: &mut Vec<FieldError>) {
    match string(spec, "podManagementPolicy") {
        "" => errs.push(required("spec.podManagementPolicy", "")),
        "OrderedReady" | "Parallel" => {}
        other => errs.push(invalid_str(
            "spec.podManagementPolicy",
            other,
            "must be 'OrderedReady' or 'Parallel'",
        )),
    }
    let strategy = get(spec, "updateStrategy").unwrap_or(&Value::Null);
    let ru = get(strategy, "rollingUpdate");
    match string(strategy, "type") {
        "" => errs.push(required("spec.updateStrategy", "")),
        "OnDelete" => {
            if let Some(ru) = ru {
                let max = if get(ru, "maxUnavailable").is_some() {
                    "(*intstr.IntOrString)(...)"
                } else {
                    "(*intstr.IntOrString)(nil)"
                };
                errs.push(invalid(
                    "spec.updateStrategy.rollingUpdate",
                    &format!(
                        "apps.RollingUpdateStatefulSetStrategy{{Partition:{}, MaxUnavailable:{max}}}",
                        int(ru, "partition").unwrap_or(0)
                    ),
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "RollingUpdate" => {
            if let Some(ru) = ru {
                let base = "spec.updateStrategy.rollingUpdate";
                nonnegative(ru, "partition", base, errs);
                if let Some(max) = get(ru, "maxUnavailable") {
                    let path = child(base, "maxUnavailable");
                    validate_int_or_percent(max, &path, errs);
                    if int_or_percent_value(Some(max)) == 0 {
                        errs.push(invalid(&path, &go_int_or_string(max), "cannot be 0"));
                    }
                    not_more_than_100_percent(max, &path, errs);
                }
            }
        }
        _ => errs.push(invalid(
            "spec.updateStrategy",
            &go_strategy(
                "apps.StatefulSetUpdateStrategy",
                "apps.RollingUpdateStatefulSetStrategy",
                strategy,
            ),
            "must be 'RollingUpdate' or 'OnDelete'",
        )),
    }
    if let Some(policy) = get(spec, "persistentVolumeClaimRetentionPolicy") {
        for f in ["whenDeleted", "whenScaled"] {
            let v = string(policy, f);
            if v != "Retain" && v != "Delete" {
                errs.push(not_supported(
                    &format!("spec.persistentVolumeClaimRetentionPolicy.{f}"),
                    v,
                    &["Retain", "Delete"],
                ));
            }
        }
    }
    nonnegative(spec, "replicas", "spec", errs);
    nonnegative(spec, "minReadySeconds", "spec", errs);
    if let Some(start) = get(spec, "ordinals").and_then(|o| int(o, "start"))
        && start < 0
    {
        // Upstream names this path with a literal dot in one segment.
        errs.push(invalid("spec.ordinals.start", &start.to_string(), NEGATIVE));
    }
}

/// Selector equality for the immutability check. Absent and empty
/// `matchLabels`/`matchExpressions` compare equal: after a JSON round trip
/// clients cannot tell them apart.
pub(super) fn same_selector(a: Option<&Value>, b: Option<&Value>) -> bool {
    fn norm(v: Option<&Value>) -> Value {
        let mut out = Map::new();
        if let Some(v) = v {
            if let Some(m) = map_at(v, "matchLabels").filter(|m| !m.is_empty()) {
                out.insert("matchLabels".into(), Value::Object(m.clone()));
            }
            let e = arr(v, "matchExpressions");
            if !e.is_empty() {
                out.insert("matchExpressions".into(), Value::Array(e.to_vec()));
            }
        }
        Value::Object(out)
    }
    a.is_some() == b.is_some() && norm(a) == norm(b)
}

pub(super) fn validate_deployment_strategy(spec: &Value, errs: &mut Vec<FieldError>) {
    let strategy = get(spec, "strategy").unwrap_or(&Value::Null);
    let ru = get(strategy, "rollingUpdate");
    match string(strategy, "type") {
        "Recreate" => {
            if ru.is_some() {
                errs.push(forbidden(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        "RollingUpdate" => match ru {
            None => errs.push(required(
                "spec.strategy.rollingUpdate",
                "this should be defaulted and never be nil",
            )),
            Some(ru) => validate_rolling_update(ru, errs),
        },
        _ => errs.push(not_supported_raw(
            "spec.strategy",
            &go_strategy(
                "apps.DeploymentStrategy",
                "apps.RollingUpdateDeployment",
                strategy,
            ),
            &["Recreate", "RollingUpdate"],
        )),
    }
}

pub(super) fn validate_daemonset_strategy(spec: &Value, errs: &mut Vec<FieldError>) {
    let strategy = get(spec, "updateStrategy").unwrap_or(&Value::Null);
    let base = "spec.updateStrategy.rollingUpdate";
    match string(strategy, "type") {
        "OnDelete" => {}
        "RollingUpdate" => {
            let Some(ru) = get(strategy, "rollingUpdate") else {
                errs.push(required(base, ""));
                return;
            };
            let unavailable = get(ru, "maxUnavailable");
            let surge = get(ru, "maxSurge");
            for (f, v) in [("maxUnavailable", unavailable), ("maxSurge", surge)] {
                if let Some(v) = v {
                    validate_int_or_percent(v, &child(base, f), errs);
                }
            }
            for (f, v) in [("maxUnavailable", unavailable), ("maxSurge", surge)] {
                if let Some(v) = v {
                    not_more_than_100_percent(v, &child(base, f), errs);
                }
            }
            let has_unavailable = int_or_percent_value(unavailable) != 0;
            let has_surge = int_or_percent_value(surge) != 0;
            if has_unavailable && has_surge {
                errs.push(invalid(
                    &child(base, "maxSurge"),
                    &surge.map_or_else(|| "0".to_string(), go_int_or_string),
                    "may not be set when maxUnavailable is non-zero",
                ));
            } else if !has_unavailable && !has_surge {
                errs.push(required(
                    &child(base, "maxUnavailable"),
                    "cannot be 0 when maxSurge is 0",
                ));
            }
        }
        _ => errs.push(not_supported_raw(
            "spec.updateStrategy",
            &go_strategy(
                "apps.DaemonSetUpdateStrategy",
                "apps.RollingUpdateDaemonSet",
                strategy,
            ),
            &["RollingUpdate", "OnDelete"],
        )),
    }
}

/// `getIntOrPercentValue`: a valid percent's number, an int's value, else 0.
pub(super) fn int_or_percent_value(v: Option<&Value>) -> i64 {
    match v {
        Some(Value::String(s)) if is_valid_percent(s) => s[..s.len() - 1].parse().unwrap_or(0),
        Some(Value::String(s)) => s.parse().unwrap_or(0),
        Some(other) => as_int(other).unwrap_or(0),
        None => 0,
    }
}

/// `ValidatePositiveIntOrPercent`. The value prints unquoted: an
/// `IntOrString` is a `fmt.Stringer`.
pub(super) fn validate_int_or_percent(v: &Value, path: &str, errs: &mut Vec<FieldError>) {
    match v {
        Value::String(s) => {
            if !is_valid_percent(s) {
                errs.push(invalid(path, s, PERCENT_ERR));
            }
        }
        other => {
            let n = as_int(other).unwrap_or(0);
            if n < 0 {
                errs.push(invalid(path, &n.to_string(), NEGATIVE));
            }
        }
    }
}

/// `IsNotMoreThan100Percent`.
pub(super) fn not_more_than_100_percent(v: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if let Value::String(s) = v
        && is_valid_percent(s)
        && int_or_percent_value(Some(v)) > 100
    {
        errs.push(invalid(path, s, "must not be greater than 100%"));
    }
}

pub(super) fn validate_rolling_update(ru: &Value, errs: &mut Vec<FieldError>) {
    let base = "spec.strategy.rollingUpdate";
    let unavailable = get(ru, "maxUnavailable");
    for f in ["maxUnavailable", "maxSurge"] {
        if let Some(v) = get(ru, f) {
            validate_int_or_percent(v, &child(base, f), errs);
        }
    }
    if int_or_percent_value(unavailable) == 0 && int_or_percent_value(get(ru, "maxSurge")) == 0 {
        errs.push(invalid(
            &child(base, "maxUnavailable"),
            &unavailable.map_or_else(|| "0".to_string(), go_int_or_string),
            "may not be 0 when `maxSurge` is 0",
        ));
    }
    if let Some(v) = unavailable {
        not_more_than_100_percent(v, &child(base, "maxUnavailable"), errs);
    }
}

/// Jobs: the template, and the restart policies a Job allows. The
/// selector the server generates is checked against the labels only when
/// present.
pub(super) fn validate_job_spec(spec: &Value, path: &str, errs: &mut Vec<FieldError>) {
    for f in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
    ] {
        nonnegative(spec, f, path, errs);
    }
    let template = get(spec, "template").unwrap_or(&Value::Null);
    let tpath = child(path, "template");
    if let Some(sel) = get(spec, "selector").filter(|s| s.is_object()) {
        validate_label_selector(sel, &child(path, "selector"), errs);
        if let Some(selector) = Selector::from_json(Some(sel)) {
            let labels = get(template, "metadata").and_then(|m| string_map(m, "labels"));
            if !selector.matches(labels.as_ref()) {
                errs.push(invalid(
                    &child(&child(&tpath, "metadata"), "labels"),
                    &go_string_map(labels.as_ref()),
                    SELECTOR_MISMATCH,
                ));
            }
        }
    }
    validate_pod_template(template, &tpath, PodOpts { is_pod: false }, errs);
    let tspec = get(template, "spec").unwrap_or(&Value::Null);
    let policy = string(tspec, "restartPolicy");
    if policy != "OnFailure" && policy != "Never" {
        errs.push(not_supported(
            &child(&child(&tpath, "spec"), "restartPolicy"),
            policy,
            &["OnFailure", "Never"],
        ));
    }
}

pub(super) fn validate_replication_controller(obj: &Value, errs: &mut Vec<FieldError>) {
    let spec = get(obj, "spec").unwrap_or(&Value::Null);
    nonnegative(spec, "minReadySeconds", "spec", errs);
    let selector = string_map(spec, "selector").unwrap_or_default();
    if selector.is_empty() {
        errs.push(required("spec.selector", ""));
    }
    nonnegative(spec, "replicas", "spec", errs);
    let Some(template) = get(spec, "template") else {
        errs.push(required("spec.template", ""));
        return;
    };
    let labels = get(template, "metadata").and_then(|m| string_map(m, "labels"));
    let matches = selector
        .iter()
        .all(|(k, v)| labels.as_ref().and_then(|l| l.get(k)) == Some(v));
    if !selector.is_empty() && !matches {
        errs.push(invalid(
            "spec.template.metadata.labels",
            &go_string_map(labels.as_ref()),
            SELECTOR_MISMATCH,
        ));
    }
    validate_pod_template(template, "spec.template", PodOpts { is_pod: false }, errs);
    let tspec = get(template, "spec").unwrap_or(&Value::Null);
    validate_long_running_pods(tspec, "ReplicationController", errs);
}
