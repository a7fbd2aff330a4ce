//! A SyncConfig nested about as deep as the API server lets through must
//! neither break the SyncConfig watch nor stop the other SyncConfigs: the
//! list that holds it is deeper than serde_json's 128 levels once wrapped in
//! the list, which used to fail every list and leave every SyncConfig
//! unsynced.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests may unwrap: a panic is a test failure.

use crate::common;

use common::*;
use kube::api::{DynamicObject, ObjectList};
use mirra_mirror_controller::Settings;
use serde_json::{Value, json};

/// A value nested `depth` arrays deep.
fn nested(depth: usize) -> Value {
    let mut v = json!("leaf");
    for _ in 0..depth {
        v = json!([v]);
    }
    v
}

/// A SyncConfig whose one ConfigMap item carries a field nested so deep that
/// the whole object is `depth` levels deep.
fn deep_config(name: &str, depth: usize) -> Value {
    // object > spec > syncItems > item > deep: four levels before the arrays.
    let item = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "deep-item"}, "deep": nested(depth - 4)});
    json!({"apiVersion": "sync.appuio.ch/v1alpha1", "kind": "SyncConfig",
        "metadata": {"name": name, "namespace": OPS},
        "spec": {"namespaceSelector": {"matchNames": ["team-.*"]}, "syncItems": [item]}})
}

/// Creates an object from its JSON over plain HTTP (a typed client would
/// fail to decode the answer).
async fn post_raw(env: &Env, body: &Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!(
            "{}/apis/sync.appuio.ch/v1alpha1/namespaces/{OPS}/syncconfigs",
            env.sb.url()
        ))
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body).unwrap())
        .send()
        .await
        .unwrap()
}

/// Decodes JSON of any depth (the test's own view; serde_json's default
/// stops at 128 levels).
fn parse_deep(text: &str) -> Value {
    use serde::Deserialize;
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    Value::deserialize(&mut de).unwrap()
}

async fn get_deep(env: &Env, name: &str) -> Value {
    let text = reqwest::get(format!(
        "{}/apis/sync.appuio.ch/v1alpha1/namespaces/{OPS}/syncconfigs/{name}",
        env.sb.url()
    ))
    .await
    .unwrap()
    .text()
    .await
    .unwrap();
    parse_deep(&text)
}

async fn list_text(env: &Env) -> String {
    reqwest::get(format!(
        "{}/apis/sync.appuio.ch/v1alpha1/namespaces/{OPS}/syncconfigs",
        env.sb.url()
    ))
    .await
    .unwrap()
    .text()
    .await
    .unwrap()
}

/// Starts the controller with a plain SyncConfig beside the deep one and
/// waits for its copy.
async fn start_with_plain(env: &Env) -> Running {
    env.create_team_sc("plain", "a", vec![cm_item("shared", json!({"k": "v"}))])
        .await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    ctl.wait_ready().await;
    wait_for("plain copy", || async {
        plain_value(env).await.as_deref() == Some("v")
    })
    .await;
    ctl
}

async fn plain_value(env: &Env) -> Option<String> {
    env.cm_data("team-a", "shared").await?.get("k").cloned()
}

/// An edit of the plain SyncConfig still reaches its copy.
async fn plain_edit_syncs(env: &Env) {
    env.patch_sc_spec(
        "plain",
        spec_for_team("a", vec![cm_item("shared", json!({"k": "w"}))]),
    )
    .await;
    wait_for("plain edit", || async {
        plain_value(env).await.as_deref() == Some("w")
    })
    .await;
}

#[tokio::test]
async fn a_deeply_nested_syncconfig_does_not_stop_the_others() {
    let env = Env::new().await;
    env.create_ns("team-a", &[("team", "a")]).await;
    // The deepest object mirra's decoder reads whole.
    let answer = post_raw(&env, &deep_config("deep", 127)).await;
    assert!(answer.status().is_success(), "{}", answer.status());
    // The precondition of the test: a list holding it is too deep for a
    // client that decodes lists whole (as kube-runtime's watcher does).
    let text = list_text(&env).await;
    assert!(serde_json::from_str::<ObjectList<DynamicObject>>(&text).is_err());

    let ctl = start_with_plain(&env).await;
    // The deep one was read and planned: it has a status, and its item's
    // fate is reported there.
    wait_for("deep status", || async {
        get_deep(&env, "deep").await["status"]["conditions"].is_array()
    })
    .await;
    // Edits after the deep one arrived still sync.
    plain_edit_syncs(&env).await;
    assert_eq!(ctl.metric("mirra_errors_total{class=\"watch\"}"), 0.0);
    ctl.stop().await;
}

#[tokio::test]
async fn a_syncconfig_too_deep_to_decode_is_reported_and_the_others_sync() {
    let env = Env::new().await;
    env.create_ns("team-a", &[("team", "a")]).await;
    // 200 levels: the API server takes it, serde_json (128) cannot read it.
    let answer = post_raw(&env, &deep_config("deep", 200)).await;
    assert!(answer.status().is_success(), "{}", answer.status());
    let ctl = start_with_plain(&env).await;
    // Reported on the SyncConfig itself: Invalid, with the reason...
    wait_for("deep reported", || async {
        let object = get_deep(&env, "deep").await;
        object["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| {
                c["type"] == "Invalid"
                    && c["status"] == "True"
                    && c["message"]
                        .as_str()
                        .is_some_and(|m| m.contains("nested more than 128 levels"))
            })
    })
    .await;
    // ... in an Event, and in the metric.
    wait_for("deep event", || async {
        env.events("deep")
            .await
            .iter()
            .any(|(reason, _)| reason == "InvalidSyncConfigSpec")
    })
    .await;
    assert!(ctl.metric("mirra_errors_total{class=\"syncconfig-undecodable\"}") >= 1.0);
    // Nothing of it was written, and the others keep syncing.
    assert!(env.cm("team-a", "deep-item").await.is_none());
    plain_edit_syncs(&env).await;
    assert_eq!(ctl.metric("mirra_errors_total{class=\"watch\"}"), 0.0);
    ctl.stop().await;
}
