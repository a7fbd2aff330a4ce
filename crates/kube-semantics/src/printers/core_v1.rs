//! Cells of the core/v1 kinds: pods, pod templates, replication controllers,
//! services, endpoints, nodes, events, namespaces, secrets, service accounts,
//! volumes and claims, component statuses, config maps, resource quotas.
//!
//! This module must NOT declare columns (see `columns`).

use super::*;

pub(super) fn pod(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let status = get(o, &["status"]).unwrap_or(&Value::Null);
    let init_specs = arr(o, &["spec", "initContainers"]);
    // A sidecar is an init container that restarts always; a status whose
    // name has no spec is not one (the last spec of a name wins, as in a map).
    let sidecar = |name: &str| {
        init_specs
            .iter()
            .rev()
            .find(|c| st(c, &["name"]) == name)
            .is_some_and(|c| st(c, &["restartPolicy"]) == "Always")
    };
    let total = arr(o, &["spec", "containers"]).len()
        + init_specs
            .iter()
            .filter(|c| st(c, &["restartPolicy"]) == "Always")
            .count();
    let mut ready = 0usize;
    let phase = st(status, &["phase"]);
    let mut reason = match st(status, &["reason"]) {
        "" => phase.to_string(),
        r => r.to_string(),
    };
    let conditions = arr(status, &["conditions"]);
    if conditions
        .iter()
        .any(|c| st(c, &["type"]) == "PodScheduled" && st(c, &["reason"]) == "SchedulingGated")
    {
        reason = "SchedulingGated".to_string();
    }

    let mut restarts = 0i64;
    let mut sidecar_restarts = 0i64;
    let mut last_restart = None;
    let mut last_sidecar_restart = None;
    let mut initializing = false;
    for (i, cs) in arr(status, &["initContainerStatuses"]).iter().enumerate() {
        let count = int(cs, &["restartCount"]);
        let finished =
            present(cs, &["lastState", "terminated"]).and_then(|t| time(t, &["finishedAt"]));
        restarts = restarts.saturating_add(count);
        keep_later(&mut last_restart, finished);
        let is_sidecar = sidecar(st(cs, &["name"]));
        if is_sidecar {
            sidecar_restarts = sidecar_restarts.saturating_add(count);
            keep_later(&mut last_sidecar_restart, finished);
        }
        let terminated = present(cs, &["state", "terminated"]);
        let waiting = present(cs, &["state", "waiting"]);
        if terminated.is_some_and(|t| int(t, &["exitCode"]) == 0) {
            continue;
        }
        if is_sidecar && boolean(cs, &["started"]) == Some(true) {
            if boolean(cs, &["ready"]) == Some(true) {
                ready += 1;
            }
            continue;
        }
        reason = if let Some(t) = terminated {
            match st(t, &["reason"]) {
                "" if int(t, &["signal"]) != 0 => format!("Init:Signal:{}", int(t, &["signal"])),
                "" => format!("Init:ExitCode:{}", int(t, &["exitCode"])),
                r => format!("Init:{r}"),
            }
        } else if let Some(r) = waiting
            .map(|w| st(w, &["reason"]))
            .filter(|r| !r.is_empty() && *r != "PodInitializing")
        {
            format!("Init:{r}")
        } else {
            format!("Init:{i}/{}", init_specs.len())
        };
        initializing = true;
        break;
    }

    if !initializing || condition_true(conditions, "Initialized") {
        restarts = sidecar_restarts;
        last_restart = last_sidecar_restart;
        let mut has_running = false;
        // Walked backwards so that the first container's state is the one
        // left in `reason`.
        for cs in arr(status, &["containerStatuses"]).iter().rev() {
            restarts = restarts.saturating_add(int(cs, &["restartCount"]));
            keep_later(
                &mut last_restart,
                present(cs, &["lastState", "terminated"]).and_then(|t| time(t, &["finishedAt"])),
            );
            let waiting = present(cs, &["state", "waiting"]);
            let terminated = present(cs, &["state", "terminated"]);
            if let Some(r) = waiting
                .map(|w| st(w, &["reason"]))
                .filter(|r| !r.is_empty())
            {
                reason = r.to_string();
            } else if let Some(t) = terminated {
                reason = match st(t, &["reason"]) {
                    "" if int(t, &["signal"]) != 0 => format!("Signal:{}", int(t, &["signal"])),
                    "" => format!("ExitCode:{}", int(t, &["exitCode"])),
                    r => r.to_string(),
                };
            } else if boolean(cs, &["ready"]) == Some(true)
                && present(cs, &["state", "running"]).is_some()
            {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            let pod_ready = conditions
                .iter()
                .any(|c| st(c, &["type"]) == "Ready" && st(c, &["status"]) == "True");
            reason = if pod_ready { "Running" } else { "NotReady" }.to_string();
        }
    }

    if deleting(o) && st(status, &["reason"]) == "NodeLost" {
        reason = "Unknown".to_string();
    } else if deleting(o) && phase != "Failed" && phase != "Succeeded" {
        reason = "Terminating".to_string();
    }

    let restarts_text = match last_restart {
        Some(_) if restarts != 0 => format!("{restarts} ({} ago)", since(last_restart, now)),
        _ => restarts.to_string(),
    };

    // The v1 conversion makes podIP, when set, the first of podIPs.
    let ip = match st(status, &["podIP"]) {
        "" => arr(status, &["podIPs"])
            .first()
            .map(|first| st(first, &["ip"]))
            .unwrap_or(""),
        ip => ip,
    };
    let gates = arr(o, &["spec", "readinessGates"]);
    let gates_text = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let true_gates = gates
            .iter()
            .filter(|g| condition_true(conditions, st(g, &["conditionType"])))
            .count();
        format!("{true_gates}/{}", gates.len())
    };
    vec![
        name(o).into(),
        format!("{ready}/{total}").into(),
        reason.into(),
        restarts_text.into(),
        created(o, now),
        or_none(ip).into(),
        or_none(st(o, &["spec", "nodeName"])).into(),
        or_none(st(status, &["nominatedNodeName"])).into(),
        gates_text.into(),
    ]
}

pub(super) fn or_none(s: &str) -> &str {
    if s.is_empty() { "<none>" } else { s }
}

pub(super) fn pod_template(o: &Value, _now: DateTime<Utc>) -> Vec<Value> {
    let (names, images) = layout_containers(arr(o, &["template", "spec", "containers"]));
    vec![
        name(o).into(),
        names.into(),
        images.into(),
        format_labels(map(o, &["template", "metadata", "labels"])).into(),
    ]
}

/// Replicas of the workload kinds default to 1 when the field is unset.
pub(super) fn replicas(o: &Value) -> i64 {
    oint(o, &["spec", "replicas"]).unwrap_or(1)
}

/// NAME DESIRED CURRENT READY AGE and the wide CONTAINERS IMAGES of a
/// ReplicationController or ReplicaSet; the caller adds its SELECTOR.
pub(super) fn replica_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let mut cells = vec![
        name(o).into(),
        replicas(o).into(),
        int(o, &["status", "replicas"]).into(),
        int(o, &["status", "readyReplicas"]).into(),
        created(o, now),
    ];
    wide_containers(
        &mut cells,
        arr(o, &["spec", "template", "spec", "containers"]),
    );
    cells
}

pub(super) fn replication_controller(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    // A ReplicationController's selector is a plain label map.
    let mut cells = replica_cells(o, now);
    cells.push(format_labels(map(o, &["spec", "selector"])).into());
    cells
}

pub(super) fn service(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let spec = get(o, &["spec"]).unwrap_or(&Value::Null);
    let type_ = match st(spec, &["type"]) {
        "" => "ClusterIP",
        t => t,
    };
    // clusterIP, when set, is the first of clusterIPs (the server keeps
    // them in step); clusterIPs alone is read for objects without it.
    let cluster_ip = match st(spec, &["clusterIP"]) {
        "" => match arr(spec, &["clusterIPs"]).first() {
            Some(ip) => ip.as_str().unwrap_or(""),
            None => "<none>",
        },
        ip => ip,
    };
    let external_ips: Vec<&str> = arr(spec, &["externalIPs"])
        .iter()
        .map(|v| v.as_str().unwrap_or(""))
        .collect();
    let external = match type_ {
        "ClusterIP" | "NodePort" if external_ips.is_empty() => "<none>".to_string(),
        "ClusterIP" | "NodePort" => external_ips.join(","),
        "LoadBalancer" => {
            let lb = load_balancer_addresses(arr(o, &["status", "loadBalancer", "ingress"]));
            if !external_ips.is_empty() {
                let mut all: Vec<&str> = lb.iter().map(String::as_str).collect();
                all.extend(external_ips.iter().copied());
                all.join(",")
            } else if !lb.is_empty() {
                lb.join(",")
            } else {
                "<pending>".to_string()
            }
        }
        "ExternalName" => st(spec, &["externalName"]).to_string(),
        _ => "<unknown>".to_string(),
    };
    let ports = arr(spec, &["ports"])
        .iter()
        .map(|p| {
            let protocol = match st(p, &["protocol"]) {
                "" => "TCP",
                proto => proto,
            };
            let node_port = int(p, &["nodePort"]);
            if node_port > 0 {
                format!("{}:{node_port}/{protocol}", int(p, &["port"]))
            } else {
                format!("{}/{protocol}", int(p, &["port"]))
            }
        })
        .collect::<Vec<_>>()
        .join(",");
    vec![
        name(o).into(),
        type_.into(),
        cluster_ip.into(),
        external.into(),
        (if ports.is_empty() {
            "<none>".to_string()
        } else {
            ports
        })
        .into(),
        created(o, now),
        format_labels(map(spec, &["selector"])).into(),
    ]
}

/// The IPs (or else hostnames) of a load balancer status, sorted and
/// without duplicates. Never clipped: the server prints wide.
pub(super) fn load_balancer_addresses(ingress: &[Value]) -> Vec<String> {
    let set: BTreeSet<String> = ingress
        .iter()
        .filter_map(|i| match (st(i, &["ip"]), st(i, &["hostname"])) {
            ("", "") => None,
            ("", host) => Some(host.to_string()),
            (ip, _) => Some(ip.to_string()),
        })
        .collect();
    set.into_iter().collect()
}

pub(super) fn endpoints(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![name(o).into(), format_endpoints(o).into(), created(o, now)]
}

pub(super) fn format_endpoints(o: &Value) -> String {
    let subsets = arr(o, &["subsets"]);
    if subsets.is_empty() {
        return "<none>".to_string();
    }
    const MAX: usize = 3;
    let mut list: Vec<String> = Vec::new();
    let mut more = false;
    let mut count = 0usize;
    for ss in subsets {
        let addresses = arr(ss, &["addresses"]);
        let ports = arr(ss, &["ports"]);
        if ports.is_empty() {
            // Headless services may have no ports: the bare IPs are listed.
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(st(a, &["ip"]).to_string());
            }
            continue;
        }
        for p in ports {
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(join_host_port(st(a, &["ip"]), int(p, &["port"])));
            }
        }
    }
    let joined = list.join(",");
    if more {
        format!("{joined} + {} more...", count.saturating_sub(MAX))
    } else {
        joined
    }
}

pub(super) fn node(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let conditions = arr(o, &["status", "conditions"]);
    // Only the Ready condition is shown; a later duplicate wins, as in a map.
    let mut status = match conditions
        .iter()
        .rev()
        .find(|c| st(c, &["type"]) == "Ready")
    {
        Some(c) if st(c, &["status"]) == "True" => "Ready".to_string(),
        Some(_) => "NotReady".to_string(),
        None => "Unknown".to_string(),
    };
    if boolean(o, &["spec", "unschedulable"]) == Some(true) {
        status.push_str(",SchedulingDisabled");
    }
    let mut roles = BTreeSet::new();
    if let Some(labels) = map(o, &["metadata", "labels"]) {
        for (k, v) in labels {
            if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.insert(role.to_string());
                }
            } else if k == "kubernetes.io/role" {
                let v = v.as_str().unwrap_or("");
                if !v.is_empty() {
                    roles.insert(v.to_string());
                }
            }
        }
    }
    let roles = roles.into_iter().collect::<Vec<_>>().join(",");
    let address = |type_: &str| {
        arr(o, &["status", "addresses"])
            .iter()
            .find(|a| st(a, &["type"]) == type_)
            .map(|a| st(a, &["address"]))
            .unwrap_or("<none>")
            .to_string()
    };
    let info = |field: &str| match st(o, &["status", "nodeInfo", field]) {
        "" => "<unknown>".to_string(),
        v => v.to_string(),
    };
    vec![
        name(o).into(),
        status.into(),
        or_none(&roles).into(),
        created(o, now),
        st(o, &["status", "nodeInfo", "kubeletVersion"]).into(),
        address("InternalIP").into(),
        address("ExternalIP").into(),
        info("osImage").into(),
        info("kernelVersion").into(),
        info("containerRuntimeVersion").into(),
    ]
}

/// The fields of an Event the printer reads, from either API version.
pub(super) struct EventView<'a> {
    pub(super) first: Option<DateTime<Utc>>,
    pub(super) last: Option<DateTime<Utc>>,
    pub(super) event_time: Option<DateTime<Utc>>,
    pub(super) count: i64,
    pub(super) series: Option<&'a Value>,
    pub(super) object: Option<&'a Value>,
    pub(super) source: Option<&'a Value>,
    pub(super) reporting_controller: &'a str,
    pub(super) reporting_instance: &'a str,
    pub(super) message: &'a str,
}

/// The names an API version gives the Event fields whose names differ
/// (`eventTime`, `series` and `reportingInstance` are the same in both).
struct EventFields {
    first: &'static str,
    last: &'static str,
    count: &'static str,
    object: &'static str,
    source: &'static str,
    reporting_controller: &'static str,
    message: &'static str,
}

const CORE_EVENT_FIELDS: EventFields = EventFields {
    first: "firstTimestamp",
    last: "lastTimestamp",
    count: "count",
    object: "involvedObject",
    source: "source",
    reporting_controller: "reportingComponent",
    message: "message",
};

/// events.k8s.io/v1 is served from the same storage; its fields map onto
/// the core ones as the conversion does.
const EVENTS_EVENT_FIELDS: EventFields = EventFields {
    first: "deprecatedFirstTimestamp",
    last: "deprecatedLastTimestamp",
    count: "deprecatedCount",
    object: "regarding",
    source: "deprecatedSource",
    reporting_controller: "reportingController",
    message: "note",
};

impl<'a> EventView<'a> {
    fn read(o: &'a Value, f: &EventFields) -> Self {
        Self {
            first: time(o, &[f.first]),
            last: time(o, &[f.last]),
            event_time: time(o, &["eventTime"]),
            count: int(o, &[f.count]),
            series: present(o, &["series"]),
            object: get(o, &[f.object]),
            source: get(o, &[f.source]),
            reporting_controller: st(o, &[f.reporting_controller]),
            reporting_instance: st(o, &["reportingInstance"]),
            message: st(o, &[f.message]),
        }
    }
}

pub(super) fn core_event(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    event_cells(o, &EventView::read(o, &CORE_EVENT_FIELDS), now)
}

pub(super) fn events_event(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    event_cells(o, &EventView::read(o, &EVENTS_EVENT_FIELDS), now)
}

pub(super) fn event_cells(o: &Value, e: &EventView<'_>, now: DateTime<Utc>) -> Vec<Value> {
    let first = if e.first.is_none() {
        since(e.event_time, now)
    } else {
        since(e.first, now)
    };
    let mut last = if e.last.is_none() {
        first.clone()
    } else {
        since(e.last, now)
    };
    let mut count = e.count;
    if let Some(series) = e.series {
        last = since(time(series, &["lastObservedTime"]), now);
        count = int(series, &["count"]);
    } else if count == 0 {
        // Singleton events of the new API carry no count.
        count = 1;
    }
    let object = e.object.unwrap_or(&Value::Null);
    let kind = st(object, &["kind"]).to_lowercase();
    let target = match st(object, &["name"]) {
        "" => kind,
        n => format!("{kind}/{n}"),
    };
    let source = e.source.unwrap_or(&Value::Null);
    let component = match st(source, &["component"]) {
        "" => e.reporting_controller,
        c => c,
    };
    let host = match st(source, &["host"]) {
        "" => e.reporting_instance,
        h => h,
    };
    let source_text = if host.is_empty() {
        component.to_string()
    } else {
        format!("{component}, {host}")
    };
    vec![
        last.into(),
        st(o, &["type"]).into(),
        st(o, &["reason"]).into(),
        target.into(),
        st(object, &["fieldPath"]).into(),
        source_text.into(),
        e.message.trim().into(),
        first.into(),
        count.into(),
        name(o).into(),
    ]
}

pub(super) fn namespace(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let phase = match st(o, &["status", "phase"]) {
        "" => "Active",
        p => p,
    };
    vec![name(o).into(), phase.into(), created(o, now)]
}

pub(super) fn secret(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let type_ = match st(o, &["type"]) {
        "" => "Opaque",
        t => t,
    };
    vec![
        name(o).into(),
        type_.into(),
        len_of(o, &["data"]).into(),
        created(o, now),
    ]
}

/// v1.33 still prints the number of `secrets`; the column was dropped
/// later (kubernetes/kubernetes#117160, merged after 1.34).
pub(super) fn service_account(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        len_of(o, &["secrets"]).into(),
        created(o, now),
    ]
}

/// `GetAccessModesAsString`: the abbreviations in a fixed order.
pub(super) fn access_modes(modes: &[Value]) -> String {
    let has = |m: &str| modes.iter().any(|v| v.as_str() == Some(m));
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| has(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

pub(super) const BETA_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

/// The phase a PersistentVolume or a claim prints: `Terminating` once
/// deleted; an unset phase is the `Pending` the server defaults.
fn volume_phase(o: &Value) -> &str {
    if deleting(o) {
        "Terminating"
    } else {
        match st(o, &["status", "phase"]) {
            "" => "Pending",
            p => p,
        }
    }
}

pub(super) fn persistent_volume(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let spec = get(o, &["spec"]).unwrap_or(&Value::Null);
    let claim = present(spec, &["claimRef"])
        .map(|c| format!("{}/{}", st(c, &["namespace"]), st(c, &["name"])))
        .unwrap_or_default();
    let reclaim = match st(spec, &["persistentVolumeReclaimPolicy"]) {
        "" => "Retain",
        p => p,
    };
    let phase = volume_phase(o);
    let class = ost(o, &["metadata", "annotations", BETA_STORAGE_CLASS])
        .unwrap_or_else(|| st(spec, &["storageClassName"]));
    vec![
        name(o).into(),
        quantity(get(spec, &["capacity", "storage"])).into(),
        access_modes(arr(spec, &["accessModes"])).into(),
        reclaim.into(),
        phase.into(),
        claim.into(),
        class.into(),
        ost(spec, &["volumeAttributesClassName"])
            .unwrap_or("<unset>")
            .into(),
        st(o, &["status", "reason"]).into(),
        created(o, now),
        ost(spec, &["volumeMode"]).unwrap_or("Filesystem").into(),
    ]
}

pub(super) fn persistent_volume_claim(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let spec = get(o, &["spec"]).unwrap_or(&Value::Null);
    let phase = volume_phase(o);
    let volume = st(spec, &["volumeName"]);
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            quantity(get(o, &["status", "capacity", "storage"])),
            access_modes(arr(o, &["status", "accessModes"])),
        )
    };
    let class = ost(o, &["metadata", "annotations", BETA_STORAGE_CLASS])
        .unwrap_or_else(|| st(spec, &["storageClassName"]));
    vec![
        name(o).into(),
        phase.into(),
        volume.into(),
        capacity.into(),
        modes.into(),
        class.into(),
        ost(spec, &["volumeAttributesClassName"])
            .unwrap_or("<unset>")
            .into(),
        created(o, now),
        ost(spec, &["volumeMode"]).unwrap_or("Filesystem").into(),
    ]
}

pub(super) fn component_status(o: &Value, _now: DateTime<Utc>) -> Vec<Value> {
    let healthy = arr(o, &["conditions"])
        .iter()
        .find(|c| st(c, &["type"]) == "Healthy");
    let (status, message, error) = match healthy {
        Some(c) => (
            if st(c, &["status"]) == "True" {
                "Healthy"
            } else {
                "Unhealthy"
            },
            st(c, &["message"]),
            st(c, &["error"]),
        ),
        None => ("Unknown", "", ""),
    };
    vec![name(o).into(), status.into(), message.into(), error.into()]
}

pub(super) fn config_map(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let n = len_of(o, &["data"]) + len_of(o, &["binaryData"]);
    vec![name(o).into(), n.into(), created(o, now)]
}

pub(super) fn resource_quota(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let mut requests = Vec::new();
    let mut limits = Vec::new();
    if let Some(hard) = map(o, &["status", "hard"]) {
        let mut names: Vec<&String> = hard.keys().collect();
        names.sort();
        for resource in names {
            let used = quantity(get(o, &["status", "used", resource.as_str()]));
            let text = format!("{resource}: {used}/{}", quantity(hard.get(resource)));
            let mut pieces = resource.split('.');
            if pieces.next() == Some("limits") && pieces.next().is_some() {
                limits.push(text);
            } else {
                requests.push(text);
            }
        }
    }
    vec![
        name(o).into(),
        created(o, now),
        requests.join(", ").into(),
        limits.join(", ").into(),
    ]
}
