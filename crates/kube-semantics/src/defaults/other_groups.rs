//! `SetDefaults_*` of autoscaling/v2 HorizontalPodAutoscaler and of the
//! networking, discovery, rbac, storage, admissionregistration and flowcontrol
//! kinds that have defaults.
//!
//! This module must NOT convert autoscaling/v1 objects (see
//! [`crate::hpa_conversion`]).

use super::*;

pub(super) fn hpa_v2(root: &mut Obj) {
    let Some(spec) = struct_field(root, "spec") else {
        return;
    };
    set_if_unset(spec, "minReplicas", json!(1));
    if is_empty_collection(spec.get("metrics")) {
        spec.insert(
            "metrics".into(),
            json!([{
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80}
                }
            }]),
        );
    }
    // Behaviour is filled in only when the client sent one.
    if let Some(behavior) = ptr_field(spec, "behavior") {
        let up = json!({
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15}
            ]
        });
        // No scale-down window: the controller's command-line flag decides.
        let down = json!({
            "selectPolicy": "Max",
            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]
        });
        scaling_rules(behavior, "scaleUp", up);
        scaling_rules(behavior, "scaleDown", down);
    }
}

pub(super) fn scaling_rules(behavior: &mut Obj, key: &str, default: Value) {
    match behavior.get_mut(key) {
        None | Some(Value::Null) => {
            behavior.insert(key.into(), default);
        }
        Some(Value::Object(rules)) => {
            if let Value::Object(d) = default {
                for (k, v) in d {
                    set_if_unset(rules, &k, v);
                }
            }
        }
        Some(_) => {}
    }
}

pub(super) fn network_policy(root: &mut Obj) {
    let Some(spec) = struct_field(root, "spec") else {
        return;
    };
    struct_field(spec, "podSelector");
    if is_empty_collection(spec.get("policyTypes")) {
        let mut types = vec![json!("Ingress")];
        if !is_empty_collection(spec.get("egress")) {
            types.push(json!("Egress"));
        }
        spec.insert("policyTypes".into(), Value::Array(types));
    }
    for key in ["ingress", "egress"] {
        each_obj(spec, key, |rule| {
            each_obj(rule, "ports", |p| set_if_unset(p, "protocol", json!("TCP")));
        });
    }
}

pub(super) fn endpoint_slice(root: &mut Obj) {
    // Neither list has `omitempty`, so a missing one is written as null.
    for key in ["endpoints", "ports"] {
        if !root.contains_key(key) {
            root.insert(key.into(), Value::Null);
        }
    }
    each_obj(root, "ports", |p| {
        set_if_unset(p, "name", json!(""));
        set_if_unset(p, "protocol", json!("TCP"));
    });
    each_obj(root, "endpoints", |e| {
        struct_field(e, "conditions");
    });
}

pub(super) const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

pub(super) fn role_binding(root: &mut Obj) {
    if let Some(role_ref) = struct_field(root, "roleRef") {
        set_if_empty_str(role_ref, "apiGroup", RBAC_GROUP);
    }
    each_obj(root, "subjects", |s| {
        // A ServiceAccount's group is "", which marshals as nothing.
        if matches!(str_field(s, "kind"), "User" | "Group") {
            set_if_empty_str(s, "apiGroup", RBAC_GROUP);
        }
    });
}

pub(super) fn csi_driver(root: &mut Obj) {
    let Some(spec) = struct_field(root, "spec") else {
        return;
    };
    set_if_unset(spec, "attachRequired", json!(true));
    set_if_unset(spec, "podInfoOnMount", json!(false));
    set_if_unset(spec, "storageCapacity", json!(false));
    set_if_unset(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
    if is_empty_collection(spec.get("volumeLifecycleModes")) {
        spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
    }
    set_if_unset(spec, "requiresRepublish", json!(false));
    // Gated by SELinuxMountReadWriteOncePod, beta and on since v1.28.
    set_if_unset(spec, "seLinuxMount", json!(false));
}

pub(super) fn webhook(w: &mut Obj, mutating: bool) {
    set_if_unset(w, "failurePolicy", json!("Fail"));
    set_if_unset(w, "matchPolicy", json!("Equivalent"));
    set_if_unset(w, "namespaceSelector", json!({}));
    set_if_unset(w, "objectSelector", json!({}));
    set_if_unset(w, "timeoutSeconds", json!(10));
    if mutating {
        set_if_unset(w, "reinvocationPolicy", json!("Never"));
    }
    each_obj(w, "rules", rule_scope);
    if let Some(svc) = struct_field(w, "clientConfig").and_then(|c| ptr_field(c, "service")) {
        set_if_unset(svc, "port", json!(443));
    }
}

pub(super) fn rule_scope(r: &mut Obj) {
    set_if_unset(r, "scope", json!("*"));
}

pub(super) fn match_resources(m: &mut Obj) {
    set_if_unset(m, "matchPolicy", json!("Equivalent"));
    set_if_unset(m, "namespaceSelector", json!({}));
    set_if_unset(m, "objectSelector", json!({}));
    each_obj(m, "resourceRules", rule_scope);
    each_obj(m, "excludeResourceRules", rule_scope);
}

/// flowcontrol/v1 priority levels. Unlike v1beta3, v1 keeps an explicit
/// `nominalConcurrencyShares: 0`; only a missing one becomes 30.
pub(super) fn priority_level(root: &mut Obj) {
    let Some(spec) = struct_field(root, "spec") else {
        return;
    };
    if let Some(limited) = ptr_field(spec, "limited") {
        set_if_unset(limited, "nominalConcurrencyShares", json!(30));
        set_if_unset(limited, "lendablePercent", json!(0));
        if let Some(q) =
            struct_field(limited, "limitResponse").and_then(|r| ptr_field(r, "queuing"))
        {
            set_if_zero_int(q, "handSize", 8);
            set_if_zero_int(q, "queues", 64);
            set_if_zero_int(q, "queueLengthLimit", 50);
        }
    }
    if let Some(exempt) = ptr_field(spec, "exempt") {
        set_if_unset(exempt, "nominalConcurrencyShares", json!(0));
        set_if_unset(exempt, "lendablePercent", json!(0));
    }
}
