//! HorizontalPodAutoscalers served at `autoscaling/v2` (where they are
//! stored) and `autoscaling/v1` (converted), through kube-rs's typed APIs
//! over HTTP: whatever is written at one version reads back at the other,
//! the v2-only fields survive a read-modify-write through v1 in the
//! server's round-trip annotations, watches and lists answer at the
//! version asked for, and the Table is the same at both.

// Test fixtures: a failure to set up is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::autoscaling::{v1, v2};
use kube::Client;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube_sandbox::Sandbox;
use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{JSON, create_namespace, get_json, post_json, request, send_json, watch};

const NS: &str = "scaling";
const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";

/// A sandbox with the namespace [`NS`], and a client of it.
async fn sandbox() -> (Sandbox, Client) {
    let (sb, client) = crate::common::sandbox().await;
    create_namespace(&client, NS).await;
    (sb, client)
}

fn v2_hpa(name: &str) -> v2::HorizontalPodAutoscaler {
    serde_json::from_value(json!({
        "metadata": {"name": name, "annotations": {"team": "web"}},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2,
            "maxReplicas": 10,
            "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
                {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "512Mi"}}}
            ],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 120}}
        }
    }))
    .unwrap()
}

#[tokio::test]
async fn a_v2_object_reads_back_at_v1_with_the_rest_in_annotations() {
    let (_sb, client) = sandbox().await;
    let a2: Api<v2::HorizontalPodAutoscaler> = Api::namespaced(client.clone(), NS);
    let a1: Api<v1::HorizontalPodAutoscaler> = Api::namespaced(client.clone(), NS);
    a2.create(&PostParams::default(), &v2_hpa("web"))
        .await
        .unwrap();

    let got = a1.get("web").await.unwrap();
    let spec = got.spec.clone().unwrap();
    assert_eq!(spec.target_cpu_utilization_percentage, Some(60));
    assert_eq!((spec.min_replicas, spec.max_replicas), (Some(2), 10));
    assert_eq!(spec.scale_target_ref.name, "web");
    let ann = got.metadata.annotations.clone().unwrap();
    assert_eq!(ann["team"], "web");
    assert_eq!(
        ann[METRICS],
        r#"[{"type":"Resource","resource":{"name":"memory","targetAverageValue":"512Mi"}}]"#
    );
    // The stored behavior is the defaulted one (scale-up filled in).
    let behavior: Value = serde_json::from_str(&ann[BEHAVIOR]).unwrap();
    assert_eq!(behavior["ScaleDown"]["StabilizationWindowSeconds"], 120);
    assert_eq!(behavior["ScaleUp"]["SelectPolicy"], "Max");
    // The status a create leaves, as v1 prints it.
    let status = got.status.clone().unwrap();
    assert_eq!((status.current_replicas, status.desired_replicas), (0, 0));

    // A read-modify-write through v1 keeps everything v1 cannot say.
    let mut edited = got.clone();
    edited.metadata.managed_fields = None;
    edited.spec.as_mut().unwrap().max_replicas = 20;
    edited
        .spec
        .as_mut()
        .unwrap()
        .target_cpu_utilization_percentage = Some(75);
    let replaced = a1
        .replace("web", &PostParams::default(), &edited)
        .await
        .unwrap();
    assert_eq!(replaced.spec.unwrap().max_replicas, 20);
    let back = a2.get("web").await.unwrap();
    let spec = back.spec.unwrap();
    assert_eq!(spec.max_replicas, 20);
    let metrics = serde_json::to_value(spec.metrics.unwrap()).unwrap();
    assert_eq!(
        metrics,
        json!([
            {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "512Mi"}}},
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 75}}}
        ])
    );
    assert_eq!(
        spec.behavior
            .unwrap()
            .scale_down
            .unwrap()
            .stabilization_window_seconds,
        Some(120)
    );
    // The round-trip annotations are never stored.
    let ann = back.metadata.annotations.unwrap();
    assert_eq!(ann.keys().collect::<Vec<_>>(), ["team"]);
}

#[tokio::test]
async fn a_v1_object_without_a_target_is_stored_with_the_eighty_percent_default() {
    let (_sb, client) = sandbox().await;
    let a2: Api<v2::HorizontalPodAutoscaler> = Api::namespaced(client.clone(), NS);
    let a1: Api<v1::HorizontalPodAutoscaler> = Api::namespaced(client.clone(), NS);
    let hpa: v1::HorizontalPodAutoscaler = serde_json::from_value(json!({
        "metadata": {"name": "plain"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 4}
    }))
    .unwrap();
    let created = a1.create(&PostParams::default(), &hpa).await.unwrap();
    // k8s-openapi's decoder refuses any apiVersion but its own, so the
    // typed answers here are v1 objects.
    let spec = created.spec.unwrap();
    // v1 defaults minReplicas and answers the stored default target.
    assert_eq!(spec.min_replicas, Some(1));
    assert_eq!(spec.target_cpu_utilization_percentage, Some(80));
    assert!(created.metadata.annotations.is_none());

    let stored = a2.get("plain").await.unwrap();
    assert_eq!(
        serde_json::to_value(stored.spec.unwrap().metrics.unwrap()).unwrap(),
        json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}])
    );

    // Merge patch and server-side apply through v1 act on the v1 form.
    let patched = a1
        .patch(
            "plain",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"targetCPUUtilizationPercentage": 50}})),
        )
        .await
        .unwrap();
    assert_eq!(
        patched.spec.unwrap().target_cpu_utilization_percentage,
        Some(50)
    );
    let applied = a1
        .patch(
            "plain",
            &PatchParams::apply("scaler").force(),
            &Patch::Apply(json!({
                "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": "plain"},
                "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 6}
            })),
        )
        .await
        .unwrap();
    assert_eq!(applied.spec.unwrap().max_replicas, 6);
    let stored = a2.get("plain").await.unwrap().spec.unwrap();
    assert_eq!(stored.max_replicas, 6);
    assert_eq!(
        stored.metrics.unwrap()[0]
            .resource
            .as_ref()
            .unwrap()
            .target
            .average_utilization,
        Some(50)
    );

    // Lists answer at the version asked for.
    let list = a1.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);
    assert_eq!(
        list.items[0]
            .spec
            .as_ref()
            .unwrap()
            .target_cpu_utilization_percentage,
        Some(50)
    );
}

#[tokio::test]
async fn a_v1_watch_sees_v1_objects_of_writes_made_at_v2() {
    let (_sb, client) = sandbox().await;
    let a2: Api<v2::HorizontalPodAutoscaler> = Api::namespaced(client.clone(), NS);
    let a1: Api<v1::HorizontalPodAutoscaler> = Api::namespaced(client.clone(), NS);
    let mut events = watch(&a1, &WatchParams::default(), "0").await;
    a2.create(&PostParams::default(), &v2_hpa("watched"))
        .await
        .unwrap();
    let event = tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .expect("no watch event")
        .unwrap()
        .unwrap();
    let WatchEvent::Added(obj) = event else {
        panic!("not an ADDED event: {event:?}");
    };
    assert_eq!(
        obj.spec.unwrap().target_cpu_utilization_percentage,
        Some(60)
    );
    assert!(obj.metadata.annotations.unwrap().contains_key(METRICS));
}

#[tokio::test]
async fn discovery_lists_v2_first_and_prefers_it() {
    let (sb, _client) = sandbox().await;
    let (_, group) = get_json(&sb, "/apis/autoscaling").await;
    assert_eq!(
        group["versions"],
        json!([
            {"groupVersion": "autoscaling/v2", "version": "v2"},
            {"groupVersion": "autoscaling/v1", "version": "v1"}
        ])
    );
    assert_eq!(group["preferredVersion"]["version"], "v2");
    let (_, v1) = get_json(&sb, "/apis/autoscaling/v1").await;
    let hpa = v1["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "horizontalpodautoscalers")
        .unwrap();
    assert_eq!(hpa["kind"], "HorizontalPodAutoscaler");
    assert_eq!(hpa["shortNames"], json!(["hpa"]));
    // The v1 schema is published for `kubectl explain`.
    let (_, doc) = get_json(&sb, "/openapi/v3/apis/autoscaling/v1").await;
    let schema =
        &doc["components"]["schemas"]["io.k8s.api.autoscaling.v1.HorizontalPodAutoscalerSpec"];
    assert!(
        schema["properties"]["targetCPUUtilizationPercentage"].is_object(),
        "{schema}"
    );
}

#[tokio::test]
async fn the_table_is_the_same_at_both_versions() {
    let (sb, client) = sandbox().await;
    let a2: Api<v2::HorizontalPodAutoscaler> = Api::namespaced(client.clone(), NS);
    a2.create(&PostParams::default(), &v2_hpa("web"))
        .await
        .unwrap();
    let mut tables = Vec::new();
    for version in ["v1", "v2"] {
        let path = format!("/apis/autoscaling/{version}/namespaces/{NS}/horizontalpodautoscalers");
        let accept = [("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")];
        let t = request(&sb, Method::GET, &path, &accept, vec![]).await.body;
        tables.push((
            t["columnDefinitions"].clone(),
            t["rows"][0]["cells"].clone(),
        ));
    }
    assert_eq!(tables[0], tables[1]);
    let cells = tables[0].1.as_array().unwrap();
    // NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE: both metrics.
    assert_eq!(cells[1], "Deployment/web");
    assert!(
        cells[2].as_str().unwrap().contains("memory"),
        "{}",
        cells[2]
    );
}

#[tokio::test]
async fn a_malformed_round_trip_annotation_is_refused_and_nothing_changes() {
    let (sb, client) = sandbox().await;
    let a2: Api<v2::HorizontalPodAutoscaler> = Api::namespaced(client.clone(), NS);
    a2.create(&PostParams::default(), &v2_hpa("web"))
        .await
        .unwrap();
    let before = a2.get("web").await.unwrap();
    let url = format!("/apis/autoscaling/v1/namespaces/{NS}/horizontalpodautoscalers");
    let body = |name: &str| {
        json!({
            "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "annotations": {METRICS: "[{\"type\":"}},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 2}
        })
    };
    let (code, status) = post_json(&sb, &url, &body("bad")).await;
    assert_eq!(code, 400);
    assert_eq!(status["reason"], "BadRequest");
    assert!(
        status["message"].as_str().unwrap().contains(METRICS),
        "{status}"
    );
    let (code, _) = send_json(&sb, Method::PUT, &format!("{url}/web"), JSON, &body("web")).await;
    assert_eq!(code, 400);
    assert!(a2.get_opt("bad").await.unwrap().is_none());
    let after = a2.get("web").await.unwrap();
    assert_eq!(
        after.metadata.resource_version,
        before.metadata.resource_version
    );
    // A value of the wrong type is judged against the v1 type.
    let typed = json!({
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "typed"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 2,
                 "targetCPUUtilizationPercentage": "high"}
    });
    let (code, status) = post_json(&sb, &url, &typed).await;
    assert_eq!(code, 400);
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("HorizontalPodAutoscaler in version \"v1\" cannot be handled"),
        "{status}"
    );
}
