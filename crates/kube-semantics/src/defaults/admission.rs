//! The default admission chain's stateless changes to a Pod on create (such as
//! the default tolerations).
//!
//! This module must NOT apply `SetDefaults_*`: they run before admission.

use super::*;

/// The default admission chain's stateless changes to a Pod on create:
/// `DefaultTolerationSeconds` (tolerate `not-ready` and `unreachable`
/// NoExecute taints for 300 s unless a toleration already covers them),
/// `ServiceAccount` (`serviceAccountName: default` when unset; the token
/// volume it also mounts needs a random name and is the caller's), and
/// `Priority` for a Pod without `priorityClassName` in a cluster without a
/// global default class (`priority: 0`, `preemptionPolicy:
/// PreemptLowerPriority`).
///
/// A Pod naming a priority class is left to the caller, who can look the
/// class up. Returns the admission plugin's Forbidden message when the Pod
/// carries a priority other than the computed one.
pub fn admit_pod_create(obj: &mut Value) -> Result<(), String> {
    let Some(spec) = obj
        .as_object_mut()
        .and_then(|root| struct_field(root, "spec"))
    else {
        return Ok(());
    };
    if matches!(opt_str(spec.get("serviceAccountName")), Some("")) {
        spec.insert("serviceAccountName".into(), json!("default"));
    }
    service_account_alias(spec);
    default_tolerations(spec);
    if matches!(opt_str(spec.get("priorityClassName")), Some("")) {
        match spec.get("priority") {
            None | Some(Value::Null) => {
                spec.insert("priority".into(), json!(0));
            }
            Some(p) if p.as_i64() == Some(0) => {}
            Some(p) => {
                return Err(format!(
                    "the integer value of priority ({p}) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name"
                ));
            }
        }
        match spec.get("preemptionPolicy") {
            None | Some(Value::Null) => {
                spec.insert("preemptionPolicy".into(), json!("PreemptLowerPriority"));
            }
            Some(Value::String(p)) if p == "PreemptLowerPriority" => {}
            Some(p) => {
                let shown = p.as_str().map_or_else(|| p.to_string(), str::to_string);
                return Err(format!(
                    "the string value of PreemptionPolicy ({shown}) must not be provided in pod spec; priority admission controller computed PreemptLowerPriority from the given PriorityClass name"
                ));
            }
        }
    }
    Ok(())
}

pub(super) fn default_tolerations(spec: &mut Obj) {
    let mut tolerates = [false, false];
    let keys = [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ];
    match spec.get("tolerations") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            for t in list {
                let key = t.get("key").and_then(Value::as_str).unwrap_or("");
                let effect = t.get("effect").and_then(Value::as_str).unwrap_or("");
                if effect.is_empty() || effect == "NoExecute" {
                    for (i, k) in keys.iter().enumerate() {
                        if key.is_empty() || key == *k {
                            tolerates[i] = true;
                        }
                    }
                }
            }
        }
        Some(_) => return,
    }
    let added: Vec<Value> = keys
        .iter()
        .zip(tolerates)
        .filter(|(_, has)| !has)
        .map(|(k, _)| {
            json!({"key": k, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})
        })
        .collect();
    if added.is_empty() {
        return;
    }
    match spec.get_mut("tolerations") {
        Some(Value::Array(list)) => list.extend(added),
        _ => {
            spec.insert("tolerations".into(), Value::Array(added));
        }
    }
}
