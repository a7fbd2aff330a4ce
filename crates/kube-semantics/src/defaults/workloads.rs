//! `SetDefaults_*` of apps/v1 (Deployment, DaemonSet, StatefulSet) and
//! batch/v1 (Job, CronJob), including the DaemonSet template generation and the
//! selector a Job generates.
//!
//! This module must NOT default pod specs itself: it calls `pods` for them.

use super::*;

pub(super) fn deployment(root: &mut Obj) {
    let Some(spec) = struct_field(root, "spec") else {
        return;
    };
    set_if_unset(spec, "replicas", json!(1));
    if let Some(strategy) = struct_field(spec, "strategy") {
        set_if_empty_str(strategy, "type", "RollingUpdate");
        if str_field(strategy, "type") == "RollingUpdate"
            && let Some(ru) = struct_field(strategy, "rollingUpdate")
        {
            set_if_unset(ru, "maxUnavailable", json!("25%"));
            set_if_unset(ru, "maxSurge", json!("25%"));
        }
    }
    set_if_unset(spec, "revisionHistoryLimit", json!(10));
    set_if_unset(spec, "progressDeadlineSeconds", json!(600));
    if let Some(t) = struct_field(spec, "template") {
        pod_template_spec(t);
    }
}

pub(super) fn daemon_set(root: &mut Obj) {
    let Some(spec) = struct_field(root, "spec") else {
        return;
    };
    if let Some(strategy) = struct_field(spec, "updateStrategy") {
        set_if_empty_str(strategy, "type", "RollingUpdate");
        if str_field(strategy, "type") == "RollingUpdate"
            && let Some(ru) = struct_field(strategy, "rollingUpdate")
        {
            set_if_unset(ru, "maxUnavailable", json!(1));
            set_if_unset(ru, "maxSurge", json!(0));
        }
    }
    set_if_unset(spec, "revisionHistoryLimit", json!(10));
    if let Some(t) = struct_field(spec, "template") {
        pod_template_spec(t);
    }
}

pub(super) fn stateful_set(root: &mut Obj) {
    let Some(spec) = struct_field(root, "spec") else {
        return;
    };
    set_if_empty_str(spec, "podManagementPolicy", "OrderedReady");
    if let Some(strategy) = struct_field(spec, "updateStrategy") {
        // Only a strategy without a type gets an empty rollingUpdate; an
        // explicit RollingUpdate without one stays without one.
        if matches!(opt_str(strategy.get("type")), Some("")) {
            strategy.insert("type".into(), json!("RollingUpdate"));
            set_if_unset(strategy, "rollingUpdate", json!({}));
        }
        if str_field(strategy, "type") == "RollingUpdate"
            && let Some(ru) = ptr_field(strategy, "rollingUpdate")
        {
            set_if_unset(ru, "partition", json!(0));
        }
    }
    set_if_unset(spec, "persistentVolumeClaimRetentionPolicy", json!({}));
    if let Some(p) = ptr_field(spec, "persistentVolumeClaimRetentionPolicy") {
        set_if_empty_str(p, "whenDeleted", "Retain");
        set_if_empty_str(p, "whenScaled", "Retain");
    }
    set_if_unset(spec, "replicas", json!(1));
    set_if_unset(spec, "revisionHistoryLimit", json!(10));
    if let Some(t) = struct_field(spec, "template") {
        pod_template_spec(t);
    }
    each_obj(spec, "volumeClaimTemplates", |claim| {
        embedded_meta(claim);
        pvc(claim);
    });
}

/// The annotation through which apps/v1 carries a DaemonSet's template
/// generation (a field only the internal type still has).
pub const DAEMON_SET_TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

/// The DaemonSet strategy's template generation, as apps/v1 shows it in the
/// `deprecated.daemonset.template.generation` annotation: `"1"` on create
/// (unless the client sent a positive one), and on update the old value,
/// plus one when `spec.template` changed. Both objects should already be
/// defaulted, since the server compares defaulted templates. A value that
/// is not an integer is left alone (the server would refuse the body).
pub fn daemon_set_template_generation(old: Option<&Value>, obj: &mut Value) {
    let generation = |v: &Value| -> Option<i64> {
        match v
            .get("metadata")
            .and_then(|m| m.get("annotations"))
            .and_then(|a| a.get(DAEMON_SET_TEMPLATE_GENERATION))
        {
            None | Some(Value::Null) => Some(0),
            Some(Value::String(s)) => s.parse().ok(),
            Some(_) => None,
        }
    };
    let template = |v: &Value| v.get("spec").and_then(|s| s.get("template")).cloned();
    let Some(current) = generation(obj) else {
        return;
    };
    let next = match old {
        None => current.max(1),
        Some(old) => {
            let Some(previous) = generation(old) else {
                return;
            };
            if template(old) == template(obj) {
                previous
            } else {
                previous.saturating_add(1)
            }
        }
    };
    if let Some(annotations) = obj
        .as_object_mut()
        .and_then(|root| struct_field(root, "metadata"))
        .and_then(|meta| struct_field(meta, "annotations"))
    {
        annotations.insert(
            DAEMON_SET_TEMPLATE_GENERATION.into(),
            json!(next.to_string()),
        );
    }
}

/// `math.MaxInt32`: the backoff limit of a Job that limits per index.
pub(super) const MAX_INT32: i64 = 2_147_483_647;

pub(super) fn job(root: &mut Obj) {
    let Some(spec) = struct_field(root, "spec") else {
        return;
    };
    if is_unset(spec.get("completions")) && is_unset(spec.get("parallelism")) {
        spec.insert("completions".into(), json!(1));
        spec.insert("parallelism".into(), json!(1));
    }
    set_if_unset(spec, "parallelism", json!(1));
    let backoff = if is_unset(spec.get("backoffLimitPerIndex")) {
        6
    } else {
        MAX_INT32
    };
    set_if_unset(spec, "backoffLimit", json!(backoff));
    set_if_unset(spec, "completionMode", json!("NonIndexed"));
    set_if_unset(spec, "suspend", json!(false));
    let has_failure_policy = !is_unset(spec.get("podFailurePolicy"));
    if let Some(pfp) = ptr_field(spec, "podFailurePolicy") {
        each_obj(pfp, "rules", |rule| {
            each_obj(rule, "onPodConditions", |c| {
                set_if_empty_str(c, "status", "True")
            });
        });
    }
    let replacement = if has_failure_policy {
        "Failed"
    } else {
        "TerminatingOrFailed"
    };
    set_if_unset(spec, "podReplacementPolicy", json!(replacement));
    set_if_unset(spec, "manualSelector", json!(false));
    let labels = struct_field(spec, "template").and_then(|t| {
        pod_template_spec(t);
        template_labels(t)
    });
    if let Some(labels) = labels {
        copy_labels_if_empty(root, &labels);
    }
}

pub(super) fn cron_job(root: &mut Obj) {
    let Some(spec) = struct_field(root, "spec") else {
        return;
    };
    set_if_empty_str(spec, "concurrencyPolicy", "Allow");
    set_if_unset(spec, "suspend", json!(false));
    set_if_unset(spec, "successfulJobsHistoryLimit", json!(3));
    set_if_unset(spec, "failedJobsHistoryLimit", json!(1));
    // The job template only gets the pod template's defaults: the Job
    // defaulter takes a whole Job, and a JobTemplateSpec is not one.
    if let Some(jt) = struct_field(spec, "jobTemplate") {
        embedded_meta(jt);
        if let Some(t) = struct_field(jt, "spec").and_then(|s| struct_field(s, "template")) {
            pod_template_spec(t);
        }
    }
}

/// The Job label holding the Job's name (old and new spelling).
pub(super) const JOB_NAME_LABELS: [&str; 2] = ["job-name", "batch.kubernetes.io/job-name"];
/// The Job label holding the Job's uid (old and new spelling).
pub(super) const CONTROLLER_UID_LABELS: [&str; 2] =
    ["controller-uid", "batch.kubernetes.io/controller-uid"];

/// The Job strategy's selector generation on create, for a Job whose
/// `spec.manualSelector` is not `true`: the pod template gets the
/// `job-name`, `batch.kubernetes.io/job-name`, `controller-uid` and
/// `batch.kubernetes.io/controller-uid` labels (each unless already set),
/// and the selector matches `batch.kubernetes.io/controller-uid: <uid>`.
///
/// On the real server, when the Job had no labels of its own, its labels
/// end up equal to the final template labels (defaulting copies the
/// template's label map, sharing it, or copies it again when the object is
/// read back). Called before [`apply_defaults`] this is exact; called after,
/// Job labels equal to the template's are taken to be that copy.
pub fn job_generated_selector(obj: &mut Value, uid: &str) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let name = root
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let Some(spec) = struct_field(root, "spec") else {
        return;
    };
    if spec.get("manualSelector") == Some(&Value::Bool(true)) {
        return;
    }
    let Some(labels) = struct_field(spec, "template")
        .and_then(|t| struct_field(t, "metadata"))
        .and_then(|m| struct_field(m, "labels"))
    else {
        return;
    };
    let before = labels.clone();
    for key in JOB_NAME_LABELS {
        labels.entry(key).or_insert_with(|| json!(name));
    }
    for key in CONTROLLER_UID_LABELS {
        labels.entry(key).or_insert_with(|| json!(uid));
    }
    let after = labels.clone();
    if let Some(match_labels) =
        struct_field(spec, "selector").and_then(|s| struct_field(s, "matchLabels"))
    {
        match_labels
            .entry(CONTROLLER_UID_LABELS[1])
            .or_insert_with(|| json!(uid));
    }
    if let Some(meta) = struct_field(root, "metadata") {
        let shared = match meta.get("labels") {
            None | Some(Value::Null) => true,
            Some(Value::Object(l)) => l.is_empty() || *l == before,
            Some(_) => false,
        };
        if shared {
            meta.insert("labels".into(), Value::Object(after));
        }
    }
}
