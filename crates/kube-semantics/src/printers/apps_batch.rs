//! Cells of policy/v1 PodDisruptionBudget and of the apps/v1 and batch/v1
//! workloads.
//!
//! This module must NOT declare columns (see `columns`).

use super::*;

pub(super) fn pod_disruption_budget(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        int_or_string(get(o, &["spec", "minAvailable"])).into(),
        int_or_string(get(o, &["spec", "maxUnavailable"])).into(),
        int(o, &["status", "disruptionsAllowed"]).into(),
        created(o, now),
    ]
}

/// The wide Containers and Images cells of the pod template in `spec`,
/// then the Selector cell of its `LabelSelector`.
fn wide_template_and_selector(cells: &mut Vec<Value>, spec: &Value) {
    wide_containers(cells, arr(spec, &["template", "spec", "containers"]));
    cells.push(format_label_selector(get(spec, &["selector"])).into());
}

pub(super) fn replica_set(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let mut cells = replica_cells(o, now);
    cells.push(format_label_selector(get(o, &["spec", "selector"])).into());
    cells
}

pub(super) fn daemon_set(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let mut cells = vec![
        name(o).into(),
        int(o, &["status", "desiredNumberScheduled"]).into(),
        int(o, &["status", "currentNumberScheduled"]).into(),
        int(o, &["status", "numberReady"]).into(),
        int(o, &["status", "updatedNumberScheduled"]).into(),
        int(o, &["status", "numberAvailable"]).into(),
        format_labels(map(o, &["spec", "template", "spec", "nodeSelector"])).into(),
        created(o, now),
    ];
    wide_template_and_selector(&mut cells, get(o, &["spec"]).unwrap_or(&Value::Null));
    cells
}

pub(super) fn stateful_set(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let mut cells = vec![
        name(o).into(),
        format!("{}/{}", int(o, &["status", "readyReplicas"]), replicas(o)).into(),
        created(o, now),
    ];
    wide_containers(
        &mut cells,
        arr(o, &["spec", "template", "spec", "containers"]),
    );
    cells
}

pub(super) fn deployment(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    // Unlike the other workloads, an empty selector prints as nothing and a
    // broken one as `<invalid>`.
    let selector =
        selector_string(get(o, &["spec", "selector"])).unwrap_or_else(|()| "<invalid>".to_string());
    let mut cells = vec![
        name(o).into(),
        format!("{}/{}", int(o, &["status", "readyReplicas"]), replicas(o)).into(),
        int(o, &["status", "updatedReplicas"]).into(),
        int(o, &["status", "availableReplicas"]).into(),
        created(o, now),
    ];
    wide_containers(
        &mut cells,
        arr(o, &["spec", "template", "spec", "containers"]),
    );
    cells.push(selector.into());
    cells
}

pub(super) fn controller_revision(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let controller = arr(o, &["metadata", "ownerReferences"])
        .iter()
        .find(|r| boolean(r, &["controller"]) == Some(true))
        .map(|r| {
            let api_version = st(r, &["apiVersion"]);
            // Upstream fails the whole request on an apiVersion with more
            // than one slash; here the bare name is printed instead.
            let group = match api_version.matches('/').count() {
                1 => api_version.split('/').next().unwrap_or(""),
                0 => "",
                _ => return st(r, &["name"]).to_string(),
            };
            let kind = st(r, &["kind"]);
            let ref_name = st(r, &["name"]);
            if group.is_empty() && kind.is_empty() {
                ref_name.to_string()
            } else if group.is_empty() {
                format!("{}/{ref_name}", kind.to_lowercase())
            } else {
                format!("{}/{ref_name}", format!("{kind}.{group}").to_lowercase())
            }
        })
        .unwrap_or_else(|| "<none>".to_string());
    vec![
        name(o).into(),
        controller.into(),
        int(o, &["revision"]).into(),
        created(o, now),
    ]
}

pub(super) fn job(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let succeeded = int(o, &["status", "succeeded"]);
    let parallelism = oint(o, &["spec", "parallelism"]);
    // A Job with neither completions nor parallelism is defaulted to one of each.
    let completions = oint(o, &["spec", "completions"]).or(match parallelism {
        None => Some(1),
        Some(_) => None,
    });
    let completions_text = match completions {
        Some(c) => format!("{succeeded}/{c}"),
        None => match parallelism.unwrap_or(1) {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let start = time(o, &["status", "startTime"]);
    let duration = match (start, time(o, &["status", "completionTime"])) {
        (None, _) => String::new(),
        (Some(s), None) => human_duration(nanos_between(s, now)),
        (Some(s), Some(c)) => human_duration(nanos_between(s, c)),
    };
    let conditions = arr(o, &["status", "conditions"]);
    let status = if condition_true(conditions, "Complete") {
        "Complete"
    } else if condition_true(conditions, "Failed") {
        "Failed"
    } else if deleting(o) {
        "Terminating"
    } else if condition_true(conditions, "Suspended") {
        "Suspended"
    } else if condition_true(conditions, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    let mut cells = vec![
        name(o).into(),
        status.into(),
        completions_text.into(),
        duration.into(),
        created(o, now),
    ];
    wide_template_and_selector(&mut cells, get(o, &["spec"]).unwrap_or(&Value::Null));
    cells
}

pub(super) fn cron_job(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let last_schedule = match get(o, &["status", "lastScheduleTime"]) {
        None | Some(Value::Null) => "<none>".to_string(),
        Some(t) => since(t.as_str().and_then(parse_time), now),
    };
    // spec.suspend is defaulted to false, so `<unset>` is never printed.
    let suspend = bool_text(boolean(o, &["spec", "suspend"]).unwrap_or(false));
    let job_spec = get(o, &["spec", "jobTemplate", "spec"]).unwrap_or(&Value::Null);
    let mut cells = vec![
        name(o).into(),
        st(o, &["spec", "schedule"]).into(),
        ost(o, &["spec", "timeZone"]).unwrap_or("<none>").into(),
        suspend.into(),
        len_of(o, &["status", "active"]).into(),
        last_schedule.into(),
        created(o, now),
    ];
    wide_template_and_selector(&mut cells, job_spec);
    cells
}
