use super::*;
use proptest::prelude::*;

fn v2_full() -> Value {
    json!({
        "kind": "HorizontalPodAutoscaler",
        "apiVersion": "autoscaling/v2",
        "metadata": {"name": "web", "namespace": "a", "annotations": {"team": "x"}},
        "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
            "minReplicas": 2,
            "maxReplicas": 10,
            "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
                {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}},
                {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}},
                {"type": "External", "external": {"metric": {"name": "queue", "selector": {"matchLabels": {"q": "a"}}}, "target": {"type": "Value", "value": "30"}}},
                {"type": "Object", "object": {"describedObject": {"kind": "Service", "name": "s"}, "metric": {"name": "rps"}, "target": {"type": "Value", "value": "2k"}}}
            ],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [{"type": "Percent", "value": 10, "periodSeconds": 60}]}}
        },
        "status": {
            "observedGeneration": 3,
            "currentReplicas": 4,
            "desiredReplicas": 5,
            "currentMetrics": [
                {"type": "Resource", "resource": {"name": "cpu", "current": {"averageValue": "120m", "averageUtilization": 70}}}
            ],
            "conditions": [
                {"type": "AbleToScale", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "ReadyForNewScale", "message": "ok"}
            ]
        }
    })
}

#[test]
fn v2_to_v1_keeps_cpu_in_the_field_and_the_rest_in_annotations() {
    let v1 = to_v1(&v2_full());
    assert_eq!(v1["apiVersion"], "autoscaling/v1");
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 60);
    assert_eq!(v1["spec"]["minReplicas"], 2);
    assert_eq!(v1["spec"]["maxReplicas"], 10);
    assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 70);
    assert_eq!(v1["status"]["currentReplicas"], 4);
    let a = v1["metadata"]["annotations"].as_object().unwrap();
    let keys: Vec<&str> = a.keys().map(String::as_str).collect();
    // Sorted, as Go prints a map.
    assert_eq!(
        keys,
        [
            BEHAVIOR_ANNOTATION,
            CONDITIONS_ANNOTATION,
            CURRENT_METRICS_ANNOTATION,
            METRICS_ANNOTATION,
            "team"
        ]
    );
    assert_eq!(
        a[METRICS_ANNOTATION],
        r#"[{"type":"Resource","resource":{"name":"memory","targetAverageValue":"500Mi"}},{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}},{"type":"External","external":{"metricName":"queue","metricSelector":{"matchLabels":{"q":"a"}},"targetValue":"30"}},{"type":"Object","object":{"target":{"kind":"Service","name":"s"},"metricName":"rps","targetValue":"2k"}}]"#
    );
    assert_eq!(
        a[BEHAVIOR_ANNOTATION],
        r#"{"ScaleUp":null,"ScaleDown":{"StabilizationWindowSeconds":60,"SelectPolicy":"Max","Policies":[{"Type":"Percent","Value":10,"PeriodSeconds":60}],"Tolerance":null}}"#
    );
    assert_eq!(
        a[CURRENT_METRICS_ANNOTATION],
        r#"[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":70,"currentAverageValue":"120m"}}]"#
    );
    assert_eq!(
        a[CONDITIONS_ANNOTATION],
        r#"[{"type":"AbleToScale","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z","reason":"ReadyForNewScale","message":"ok"}]"#
    );
}

#[test]
fn a_round_trip_through_v1_keeps_every_v2_field() {
    let v2 = v2_full();
    let back = to_v2(&to_v1(&v2)).unwrap();
    assert_eq!(back["metadata"]["annotations"], json!({"team": "x"}));
    // The CPU target moves to the end of the list, as upstream's
    // conversion appends it after the annotation's metrics.
    let metrics = back["spec"]["metrics"].as_array().unwrap();
    assert_eq!(metrics.len(), 5);
    assert_eq!(metrics[4], v2["spec"]["metrics"][0]);
    for (i, m) in metrics[..4].iter().enumerate() {
        let original = &v2["spec"]["metrics"][i + 1];
        assert_eq!(m["type"], original["type"], "{m}");
    }
    assert_eq!(
        metrics[0]["resource"]["target"],
        v2["spec"]["metrics"][1]["resource"]["target"]
    );
    assert_eq!(
        metrics[2]["external"]["target"],
        v2["spec"]["metrics"][3]["external"]["target"]
    );
    assert_eq!(back["spec"]["behavior"], v2["spec"]["behavior"]);
    assert_eq!(back["status"]["conditions"], v2["status"]["conditions"]);
    assert_eq!(
        back["status"]["currentMetrics"],
        v2["status"]["currentMetrics"]
    );
    assert_eq!(back["status"]["desiredReplicas"], 5);
}

#[test]
fn a_v1_object_without_target_gets_the_eighty_percent_cpu_target() {
    let v1 = json!({
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "a"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d"}, "maxReplicas": 3}
    });
    let v2 = to_v2(&v1).unwrap();
    assert_eq!(v2["apiVersion"], "autoscaling/v2");
    assert_eq!(v2["spec"]["metrics"], json!([cpu_target(json!(80))]));
    assert!(v2["spec"].get("behavior").is_none());
    assert!(v2["metadata"].get("annotations").is_none());
}

#[test]
fn a_v1_cpu_target_becomes_a_utilization_metric() {
    let v1 = json!({
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "a", "annotations": {"x": "y"}},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d"}, "maxReplicas": 3, "targetCPUUtilizationPercentage": 55},
        "status": {"currentReplicas": 1, "desiredReplicas": 2, "currentCPUUtilizationPercentage": 40}
    });
    let v2 = to_v2(&v1).unwrap();
    assert_eq!(v2["spec"]["metrics"], json!([cpu_target(json!(55))]));
    assert_eq!(
        v2["status"]["currentMetrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 40}}}])
    );
    assert_eq!(v2["metadata"]["annotations"], json!({"x": "y"}));
    let again = to_v1(&v2);
    assert_eq!(again["spec"]["targetCPUUtilizationPercentage"], 55);
    assert_eq!(again["status"]["currentCPUUtilizationPercentage"], 40);
    // Current metrics are kept raw even when they are only the CPU.
    assert_eq!(
        again["metadata"]["annotations"],
        json!({
            CURRENT_METRICS_ANNOTATION: r#"[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":40,"currentAverageValue":"0"}}]"#,
            "x": "y"
        })
    );
}

#[test]
fn round_trip_annotations_a_client_wrote_are_replaced_by_the_servers() {
    let mut v2 = v2_full();
    v2["metadata"]["annotations"][METRICS_ANNOTATION] = json!("stale");
    v2["spec"]["metrics"] = json!([cpu_target(json!(50))]);
    let v1 = to_v1(&v2);
    assert!(
        v1["metadata"]["annotations"]
            .get(METRICS_ANNOTATION)
            .is_none()
    );
}

#[test]
fn malformed_metric_annotations_are_errors_and_a_malformed_behavior_is_ignored() {
    let mut v1 = json!({
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "a", "annotations": {METRICS_ANNOTATION: "{not json"}},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d"}, "maxReplicas": 3}
    });
    let e = to_v2(&v1).unwrap_err();
    assert_eq!(e.annotation, METRICS_ANNOTATION);
    v1["metadata"]["annotations"] = json!({CONDITIONS_ANNOTATION: "{}"});
    let e = to_v2(&v1).unwrap_err();
    assert_eq!(
        e.error,
        "json: cannot unmarshal object into Go value of type []v1.HorizontalPodAutoscalerCondition"
    );
    v1["metadata"]["annotations"] = json!({BEHAVIOR_ANNOTATION: "[1]"});
    let v2 = to_v2(&v1).unwrap();
    assert!(v2["spec"].get("behavior").is_none());
    assert!(v2["metadata"].get("annotations").is_none());
    v1["metadata"]["annotations"] =
        json!({BEHAVIOR_ANNOTATION: "{\"ScaleUp\":{\"SelectPolicy\":3}}"});
    assert!(to_v2(&v1).unwrap()["spec"].get("behavior").is_none());
    // Field names are matched without regard to case, as Go decodes.
    v1["metadata"]["annotations"] =
        json!({BEHAVIOR_ANNOTATION: "{\"scaleUp\":{\"selectPolicy\":\"Min\"}}"});
    assert_eq!(
        to_v2(&v1).unwrap()["spec"]["behavior"],
        json!({"scaleUp": {"selectPolicy": "Min"}})
    );
    // An empty behavior is no behavior.
    v1["metadata"]["annotations"] = json!({BEHAVIOR_ANNOTATION: "{}"});
    assert!(to_v2(&v1).unwrap()["spec"].get("behavior").is_none());
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        "[a-zA-Z/.:{}\\[\\]\"0-9]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("spec".to_string()),
                    Just("status".to_string()),
                    Just("metadata".to_string()),
                    Just("annotations".to_string()),
                    Just("metrics".to_string()),
                    Just("resource".to_string()),
                    Just("target".to_string()),
                    Just(METRICS_ANNOTATION.to_string()),
                    Just(BEHAVIOR_ANNOTATION.to_string()),
                    "[a-zA-Z]{1,8}",
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn never_panics(v in arb_json()) {
        let v1 = to_v1(&v);
        let _ = to_v2(&v);
        let _ = to_v2(&v1);
    }

    #[test]
    fn v1_objects_survive_a_trip_through_storage(
        target in proptest::option::of(1..100i64),
        min in proptest::option::of(1..5i64),
        max in 1..50i64,
    ) {
        let mut spec = json!({"scaleTargetRef": {"kind": "Deployment", "name": "d", "apiVersion": "apps/v1"}, "maxReplicas": max});
        if let Some(t) = target { spec["targetCPUUtilizationPercentage"] = json!(t); }
        if let Some(m) = min { spec["minReplicas"] = json!(m); }
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "a"}, "spec": spec});
        let back = to_v1(&to_v2(&v1).unwrap());
        prop_assert_eq!(&back["spec"]["maxReplicas"], &v1["spec"]["maxReplicas"]);
        prop_assert_eq!(&back["spec"]["minReplicas"], &v1["spec"]["minReplicas"]);
        prop_assert_eq!(&back["spec"]["scaleTargetRef"], &v1["spec"]["scaleTargetRef"]);
        // No target means the server's 80 %.
        prop_assert_eq!(&back["spec"]["targetCPUUtilizationPercentage"], &json!(target.unwrap_or(80)));
        prop_assert!(back["metadata"].get("annotations").is_none());
    }
}
