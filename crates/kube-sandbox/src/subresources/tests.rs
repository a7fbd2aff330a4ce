use super::*;

#[test]
fn selectors_follow_label_selector_semantics() {
    let labels = json!({"app": "a", "tier": "web"});
    assert_eq!(selects(None, Some(&labels)), Some(false));
    assert_eq!(selects(Some(&json!({})), Some(&labels)), Some(true));
    assert_eq!(
        selects(Some(&json!({"matchLabels": {"app": "a"}})), Some(&labels)),
        Some(true)
    );
    assert_eq!(
        selects(Some(&json!({"matchLabels": {"app": "b"}})), Some(&labels)),
        Some(false)
    );
    let expr = json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}]});
    assert_eq!(selects(Some(&expr), Some(&labels)), Some(true));
    let bad = json!({"matchExpressions": [{"key": "tier", "operator": "Near"}]});
    assert_eq!(selects(Some(&bad), Some(&labels)), None);
}

#[test]
fn containers_are_picked_as_the_server_picks_them() {
    let one = json!({"spec": {"containers": [{"name": "a"}]}});
    assert!(pick_container(&one, "p", None).is_ok());
    let e = pick_container(&one, "p", Some("b")).unwrap_err();
    assert_eq!(e.message, "container b is not valid for pod p");
    let two = json!({"spec": {"initContainers": [{"name": "i"}], "containers": [{"name": "a"}, {"name": "b"}]}});
    let e = pick_container(&two, "p", None).unwrap_err();
    assert_eq!(
        e.message,
        "a container name must be specified for pod p, choose one of: [i a b]"
    );
}

#[test]
fn ephemeral_updates_take_only_ephemeral_containers() {
    let current = json!({"spec": {"containers": [{"name": "a", "image": "x"}]}});
    let wanted = json!({"spec": {"containers": [{"name": "changed"}], "ephemeralContainers": [{"name": "dbg", "image": "busybox"}]}});
    let (new, causes) = ephemeral_update(&current, &wanted);
    assert!(causes.is_empty(), "{causes:?}");
    assert_eq!(new["spec"]["containers"][0]["name"], "a");
    assert_eq!(new["spec"]["ephemeralContainers"][0]["name"], "dbg");
    let (_, causes) = ephemeral_update(&new, &current);
    assert_eq!(
        causes[0].message,
        "Forbidden: existing ephemeral containers \"dbg\" may not be removed\n"
    );
    let dup = json!({"spec": {"ephemeralContainers": [{"name": "a", "image": "x", "ports": [{"containerPort": 1}]}]}});
    let (_, causes) = ephemeral_update(&current, &dup);
    let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "spec.ephemeralContainers[0].name",
            "spec.ephemeralContainers[0].ports"
        ]
    );
}

#[test]
fn approvals_take_only_conditions_and_keep_decisions() {
    let current = json!({"spec": {"signerName": "s"}, "status": {}});
    let wanted = json!({"spec": {"signerName": "other"}, "status": {"certificate": "x", "conditions": [{"type": "Approved", "status": "True", "reason": "r"}]}});
    let (new, causes) = approval_update(&current, &wanted, "now");
    assert!(causes.is_empty(), "{causes:?}");
    assert_eq!(new["spec"]["signerName"], "s");
    assert!(new["status"].get("certificate").is_none());
    assert_eq!(new["status"]["conditions"][0]["lastUpdateTime"], "now");
    let (_, causes) = approval_update(&new, &json!({"status": {"conditions": []}}), "now");
    assert_eq!(
        causes[0].message,
        "Forbidden: updates may not remove a condition of type \"Approved\""
    );
    let both = json!({"status": {"conditions": [{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}]}});
    let (_, causes) = approval_update(&current, &both, "now");
    assert!(
        causes[0].message.contains("mutually exclusive"),
        "{causes:?}"
    );
}

#[test]
fn resizes_take_only_resources_and_keep_the_qos_class() {
    let current = json!({"spec": {"containers": [{"name": "a", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}, "status": {"qosClass": "Burstable"}});
    let wanted = json!({"spec": {"containers": [{"name": "a", "image": "y", "resources": {"requests": {"cpu": "2"}}}]}});
    let (new, causes) = resize_update(&current, &wanted);
    assert!(causes.is_empty(), "{causes:?}");
    assert_eq!(new["spec"]["containers"][0]["image"], "x");
    assert_eq!(
        new["spec"]["containers"][0]["resources"]["requests"]["cpu"],
        "2"
    );
    let guaranteed = json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}]}});
    let (_, causes) = resize_update(&current, &guaranteed);
    assert_eq!(
        causes[0].message,
        "Forbidden: Pod QOS Class may not change as a result of resizing"
    );
}
