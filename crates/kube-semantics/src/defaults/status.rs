//! The status a create leaves on an object, including a pod's initial status
//! and QoS class.
//!
//! This module must NOT default spec fields: [`super::apply_defaults`] does,
//! before this runs.

use super::*;

/// The status a create leaves on an object of `group`/`kind`: the
/// strategy's `PrepareForCreate` resets what the client sent, then
/// defaulting and Go's marshalling shape it. `None` means the create keeps
/// the status as sent (or the kind has none, or the sandbox handles it:
/// Namespace and Service).
///
/// Fields stamped with the current time (a scheduling-gated Pod's
/// condition, a PersistentVolume's `lastPhaseTransitionTime`) are left out;
/// [`initial_status_at`] adds them.
pub fn initial_status(group: &str, kind: &str, obj: &Value) -> Option<Value> {
    initial_status_with(group, kind, obj, None)
}

/// [`initial_status`] with the time-stamped fields set to `now` (RFC 3339,
/// seconds precision, as the server writes them).
pub fn initial_status_at(group: &str, kind: &str, obj: &Value, now: &str) -> Option<Value> {
    initial_status_with(group, kind, obj, Some(now))
}

pub(super) fn initial_status_with(
    group: &str,
    kind: &str,
    obj: &Value,
    now: Option<&str>,
) -> Option<Value> {
    let status = match (group, kind) {
        ("", "Pod") => pod_initial_status(obj, now),
        ("", "PersistentVolumeClaim") => json!({"phase": "Pending"}),
        ("", "PersistentVolume") => match now {
            Some(t) => json!({"phase": "Pending", "lastPhaseTransitionTime": t}),
            None => json!({"phase": "Pending"}),
        },
        ("", "ReplicationController") | ("apps", "ReplicaSet") => json!({"replicas": 0}),
        ("", "ResourceQuota")
        | ("apps", "Deployment")
        | ("batch", "Job" | "CronJob")
        | ("certificates.k8s.io", "CertificateSigningRequest") => json!({}),
        ("apps", "StatefulSet") => json!({"replicas": 0, "availableReplicas": 0}),
        ("apps", "DaemonSet") => json!({
            "currentNumberScheduled": 0,
            "numberMisscheduled": 0,
            "desiredNumberScheduled": 0,
            "numberReady": 0
        }),
        ("autoscaling", "HorizontalPodAutoscaler") => {
            if obj.get("apiVersion").and_then(Value::as_str) == Some("autoscaling/v1") {
                json!({"currentReplicas": 0, "desiredReplicas": 0})
            } else {
                // v2's currentMetrics has no `omitempty`.
                json!({"currentMetrics": null, "desiredReplicas": 0})
            }
        }
        ("policy", "PodDisruptionBudget") => json!({
            "disruptionsAllowed": 0,
            "currentHealthy": 0,
            "desiredHealthy": 0,
            "expectedPods": 0
        }),
        ("networking.k8s.io", "Ingress") => json!({"loadBalancer": {}}),
        ("storage.k8s.io", "VolumeAttachment") => json!({"attached": false}),
        _ => return None,
    };
    Some(status)
}

pub(super) fn pod_initial_status(obj: &Value, now: Option<&str>) -> Value {
    let mut status = json!({"phase": "Pending", "qosClass": pod_qos(obj)});
    let gated = obj
        .get("spec")
        .and_then(|s| s.get("schedulingGates"))
        .and_then(Value::as_array)
        .is_some_and(|g| !g.is_empty());
    if gated && let Some(s) = status.as_object_mut() {
        let mut cond = json!({
            "type": "PodScheduled",
            "status": "False",
            "lastProbeTime": null,
            "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates"
        });
        if let (Some(t), Some(c)) = (now, cond.as_object_mut()) {
            c.insert("lastTransitionTime".into(), json!(t));
        }
        s.insert("conditions".into(), json!([cond]));
    }
    status
}

/// The pod's QoS class as `GetPodQOS` computes it on create: over regular
/// and init containers, counting only positive cpu and memory amounts, with
/// requests defaulted from limits first.
pub fn pod_qos(pod: &Value) -> &'static str {
    let mut requests: [Option<i128>; 2] = [None, None];
    let mut limits: [Option<i128>; 2] = [None, None];
    let mut guaranteed = true;
    let spec = pod.get("spec");
    let containers = ["containers", "initContainers"]
        .into_iter()
        .filter_map(|k| spec.and_then(|s| s.get(k)).and_then(Value::as_array))
        .flatten();
    for c in containers {
        let res = c.get("resources");
        let lim = res.and_then(|r| r.get("limits")).and_then(Value::as_object);
        let req = res
            .and_then(|r| r.get("requests"))
            .and_then(Value::as_object);
        let mut limit_found = [false, false];
        for (i, name) in ["cpu", "memory"].into_iter().enumerate() {
            let limit = lim.and_then(|l| l.get(name)).and_then(quantity_milli);
            let request = match req.and_then(|r| r.get(name)) {
                Some(q) => quantity_milli(q),
                None => limit,
            };
            if let Some(q) = request.filter(|q| *q > 0) {
                requests[i] = Some(requests[i].unwrap_or(0).saturating_add(q));
            }
            if let Some(q) = limit.filter(|q| *q > 0) {
                limit_found[i] = true;
                limits[i] = Some(limits[i].unwrap_or(0).saturating_add(q));
            }
        }
        if !limit_found.iter().all(|f| *f) {
            guaranteed = false;
        }
    }
    if requests.iter().all(Option::is_none) && limits.iter().all(Option::is_none) {
        return "BestEffort";
    }
    let same = (0..2).all(|i| match (requests[i], limits[i]) {
        (None, None) => true,
        (Some(r), Some(l)) => r == l,
        _ => false,
    });
    if guaranteed && same {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// A resource quantity in milli-units, rounded up as the server's
/// defaulting rounds every resource list. `None` for anything that is not
/// a quantity. Absurdly large amounts saturate.
pub(super) fn quantity_milli(v: &Value) -> Option<i128> {
    match v {
        Value::String(s) => parse_quantity_milli(s.trim()),
        Value::Number(n) => parse_quantity_milli(&n.to_string()),
        _ => None,
    }
}

pub(super) fn parse_quantity_milli(s: &str) -> Option<i128> {
    let b = s.as_bytes();
    let mut i = 0;
    let negative = match b.first() {
        Some(b'-') => {
            i = 1;
            true
        }
        Some(b'+') => {
            i = 1;
            false
        }
        _ => false,
    };
    let mut digits: Vec<u8> = Vec::new();
    let mut frac: i64 = 0;
    while let Some(d) = b.get(i).filter(|c| c.is_ascii_digit()) {
        digits.push(d - b'0');
        i += 1;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while let Some(d) = b.get(i).filter(|c| c.is_ascii_digit()) {
            digits.push(d - b'0');
            frac += 1;
            i += 1;
        }
    }
    if digits.is_empty() {
        return None;
    }
    let (exp10, exp2): (i64, u32) = match s.get(i..)? {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        other => {
            let e = other.strip_prefix(['e', 'E'])?;
            let body = e.strip_prefix(['+', '-']).unwrap_or(e);
            if body.is_empty() || !body.bytes().all(|c| c.is_ascii_digit()) {
                return None;
            }
            (e.parse::<i64>().ok()?.clamp(-1000, 1000), 0)
        }
    };
    let first = digits.iter().position(|d| *d != 0).unwrap_or(digits.len());
    let mut digits = digits.split_off(first);
    let mut shift = 3 + exp10 - frac;
    // Digits beyond what an i128 holds only decide the rounding.
    let mut sticky = false;
    while digits.len() > 36 {
        sticky |= digits.pop().is_some_and(|d| d != 0);
        shift += 1;
    }
    let mut n: i128 = digits.iter().fold(0, |acc, d| acc * 10 + i128::from(*d));
    n = n.checked_mul(1i128 << exp2).unwrap_or(i128::MAX);
    if shift >= 0 {
        for _ in 0..shift {
            n = n.checked_mul(10).unwrap_or(i128::MAX);
        }
        if sticky {
            n = n.saturating_add(1);
        }
    } else {
        let divisor = (0..-shift).try_fold(1i128, |acc, _| acc.checked_mul(10));
        n = match divisor {
            Some(d) => n / d + i128::from(n % d != 0 || sticky),
            None => i128::from(n != 0 || sticky),
        };
    }
    Some(if negative { -n } else { n })
}
