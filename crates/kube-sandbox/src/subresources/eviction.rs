//! A pod's `eviction` subresource: pods that may go at once, and the
//! PodDisruptionBudget checks decided from the budgets' status (429, 403,
//! or a decrement of `disruptionsAllowed` and a `disruptedPods` entry).
//!
//! This module must NOT run the disruption controller: no budget is
//! recomputed, an eviction only decrements the one that matches.

use super::*;

pub(super) enum Evicted {
    Deleted,
    /// A failure the registry answers as an object (several budgets).
    Refused(Value),
}

/// Whether a pod's Ready condition is True (`IsPodReady`).
pub(super) fn ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

/// A `metav1.LabelSelector` object against labels; `None` when the
/// selector does not convert (the budget is then skipped, as upstream
/// skips it). An absent selector selects nothing; an empty one everything.
pub(super) fn selects(selector: Option<&Value>, labels: Option<&Value>) -> Option<bool> {
    let Some(sel) = selector.filter(|s| !s.is_null()) else {
        return Some(false);
    };
    let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    if let Some(m) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in m {
            if label(k) != v.as_str() {
                return Some(false);
            }
        }
    }
    for e in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let key = e.get("key").and_then(Value::as_str)?;
        let values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let have = label(key);
        let ok = match e.get("operator").and_then(Value::as_str)? {
            "In" => have.is_some_and(|h| values.contains(&h)),
            "NotIn" => !have.is_some_and(|h| values.contains(&h)),
            "Exists" => have.is_some(),
            "DoesNotExist" => have.is_none(),
            _ => return None,
        };
        if !ok {
            return Some(false);
        }
    }
    Some(true)
}

/// `EvictionREST.Create`, for what the budgets' status decides.
pub(super) fn evict(
    store: &mut Store,
    res: &Arc<Resource>,
    ns: &str,
    name: &str,
    e: &Value,
    mut del: DeleteOptions,
    manager: &str,
) -> Result<Evicted, ApiError> {
    let e_name = e
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if e_name != name {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    let pod = store.get_value(res, ns, name)?;
    let rv = pod
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .map(str::to_string);
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let deleting = pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null());
    // A terminal, pending or deleting pod disrupts nothing more: it is
    // deleted without looking at budgets, guarded by its revision.
    if matches!(phase, "Succeeded" | "Failed" | "Pending") || deleting {
        if del.resource_version.is_none() {
            del.resource_version = rv;
        }
        store.delete(res, ns, name, &del)?;
        return Ok(Evicted::Deleted);
    }
    let pdb_res = store
        .registry()
        .get("policy", "v1", "poddisruptionbudgets")
        .ok_or_else(ApiError::no_route)?;
    let filter = crate::store::Filter {
        namespace: Some(ns.to_string()),
        labels: None,
        fields: None,
    };
    let budgets: Vec<Value> = store
        .list(&pdb_res, &filter, None, None)?
        .items
        .iter()
        .filter_map(|b| crate::json::parse(b).ok())
        .filter(|b| {
            selects(b.pointer("/spec/selector"), pod.pointer("/metadata/labels")) == Some(true)
        })
        .collect();
    if budgets.len() > 1 {
        return Ok(Evicted::Refused(json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            "code": 500
        })));
    }
    if let Some(pdb) = budgets.into_iter().next() {
        let pdb_name = pdb
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let int = |p: &str| pdb.pointer(p).and_then(Value::as_i64).unwrap_or(0);
        let unhealthy_may_go = !ready(&pod)
            && (pdb
                .pointer("/spec/unhealthyPodEvictionPolicy")
                .and_then(Value::as_str)
                == Some("AlwaysAllow")
                || (int("/status/currentHealthy") >= int("/status/desiredHealthy")
                    && int("/status/desiredHealthy") > 0));
        if unhealthy_may_go {
            if del.resource_version.is_none() {
                del.resource_version = rv;
            }
        } else {
            decrement(
                store,
                &pdb_res,
                ns,
                name,
                pdb,
                &pdb_name,
                del.dry_run,
                manager,
            )?;
        }
    }
    store.delete(res, ns, name, &del)?;
    Ok(Evicted::Deleted)
}

/// `checkAndDecrement`: the budget must be observed at its generation,
/// allow a disruption and not track too many; then one disruption is
/// used up and the pod recorded as disrupted, through the budget's status.
#[allow(clippy::too_many_arguments)]
pub(super) fn decrement(
    store: &mut Store,
    pdb_res: &Arc<Resource>,
    ns: &str,
    pod: &str,
    mut pdb: Value,
    pdb_name: &str,
    dry_run: bool,
    manager: &str,
) -> Result<(), ApiError> {
    let int = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_i64).unwrap_or(0);
    let budget_cause = |message: String| Cause {
        reason: "DisruptionBudget".into(),
        field: String::new(),
        message,
    };
    const VIOLATES: &str = "Cannot evict pod as it would violate the pod's disruption budget.";
    if int(&pdb, "/status/observedGeneration") < int(&pdb, "/metadata/generation") {
        return Err(ApiError::too_many_requests_because(
            VIOLATES,
            10,
            vec![budget_cause(format!(
                "The disruption budget {pdb_name} is still being processed by the server."
            ))],
        ));
    }
    let allowed = int(&pdb, "/status/disruptionsAllowed");
    if allowed < 0 {
        return Err(ApiError::forbidden(
            "policy",
            "poddisruptionbudget",
            pdb_name,
            "pdb disruptions allowed is negative",
        ));
    }
    if pdb
        .pointer("/status/disruptedPods")
        .and_then(Value::as_object)
        .is_some_and(|m| m.len() > 2000)
    {
        return Err(ApiError::forbidden(
            "policy",
            "poddisruptionbudget",
            pdb_name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        return Err(ApiError::too_many_requests_because(
            VIOLATES,
            0,
            vec![budget_cause(format!(
                "The disruption budget {pdb_name} needs {} healthy pods and has {} currently",
                int(&pdb, "/status/desiredHealthy"),
                int(&pdb, "/status/currentHealthy")
            ))],
        ));
    }
    if dry_run {
        return Ok(());
    }
    let now = now();
    pdb["status"]["disruptionsAllowed"] = json!(allowed - 1);
    if !pdb
        .pointer("/status/disruptedPods")
        .is_some_and(Value::is_object)
    {
        pdb["status"]["disruptedPods"] = json!({});
    }
    pdb["status"]["disruptedPods"][pod] = json!(now);
    if allowed - 1 == 0 {
        // The DisruptionAllowed condition follows the count to zero.
        let observed = int(&pdb, "/status/observedGeneration");
        if !pdb
            .pointer("/status/conditions")
            .is_some_and(Value::is_array)
        {
            pdb["status"]["conditions"] = json!([]);
        }
        if let Some(conds) = pdb["status"]["conditions"].as_array_mut() {
            let mut cond = json!({
                "type": "DisruptionAllowed", "status": "False", "observedGeneration": observed,
                "lastTransitionTime": now, "reason": "InsufficientPods", "message": ""
            });
            match conds.iter_mut().find(|c| c["type"] == "DisruptionAllowed") {
                Some(old) => {
                    if old["status"] == "False"
                        && let Some(t) = old.get("lastTransitionTime")
                    {
                        cond["lastTransitionTime"] = t.clone();
                    }
                    *old = cond;
                }
                None => conds.push(cond),
            }
        }
    }
    let opts = crate::store::WriteOptions {
        dry_run: false,
        manager: manager.to_string(),
        force: false,
        status: true,
        protobuf: false,
    };
    store.update(pdb_res, ns, pdb_name, pdb, &opts)?;
    Ok(())
}
