//! kube-rs's watcher and reflector against kube-sandbox: after any sequence
//! of writes interleaved with dropped watches and history compactions, the
//! reflector's store equals the server's state.

// Test fixtures: a failure to set up is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use proptest::prelude::*;
use serde_json::json;

use crate::common::sandbox;

#[derive(Debug, Clone)]
enum Op {
    Create(u8),
    Update(u8, u8),
    Delete(u8),
    DropWatches,
    Compact,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..6).prop_map(Op::Create),
        4 => (0u8..6, any::<u8>()).prop_map(|(n, v)| Op::Update(n, v)),
        2 => (0u8..6).prop_map(Op::Delete),
        1 => Just(Op::DropWatches),
        1 => Just(Op::Compact),
    ]
}

fn state_of<'a>(
    items: impl Iterator<Item = &'a ConfigMap>,
) -> BTreeMap<String, (String, Option<BTreeMap<String, String>>)> {
    items
        .map(|c| {
            (
                c.metadata.name.clone().unwrap_or_default(),
                (
                    c.metadata.resource_version.clone().unwrap_or_default(),
                    c.data.clone(),
                ),
            )
        })
        .collect()
}

async fn run(ops: Vec<Op>) {
    let (sb, client) = sandbox().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let (reader, writer) = reflector::store::<ConfigMap>();
    let stream = reflector(writer, watcher(api.clone(), watcher::Config::default()))
        .default_backoff()
        .applied_objects();
    let task = tokio::spawn(async move {
        futures::pin_mut!(stream);
        while stream.next().await.is_some() {}
    });
    reader.wait_until_ready().await.unwrap();
    for op in ops {
        match op {
            Op::Create(n) => {
                let cm: ConfigMap =
                    serde_json::from_value(json!({"metadata": {"name": format!("c{n}")}})).unwrap();
                let _ = api.create(&PostParams::default(), &cm).await;
            }
            Op::Update(n, v) => {
                let _ = api
                    .patch(
                        &format!("c{n}"),
                        &PatchParams::default(),
                        &Patch::Merge(json!({"data": {"v": v.to_string()}})),
                    )
                    .await;
            }
            Op::Delete(n) => {
                let _ = api.delete(&format!("c{n}"), &DeleteParams::default()).await;
            }
            Op::DropWatches => sb.close_watches(),
            Op::Compact => sb.compact().await,
        }
    }
    let truth = state_of(api.list(&ListParams::default()).await.unwrap().items.iter());
    // Liveness bound only: the reflector normally converges in
    // milliseconds; the deadline keeps a broken build from hanging.
    let mut converged = false;
    for _ in 0..600 {
        let cached = state_of(reader.state().iter().map(|a| a.as_ref()));
        if cached == truth {
            converged = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let cached = state_of(reader.state().iter().map(|a| a.as_ref()));
    task.abort();
    assert!(
        converged,
        "reflector diverged:\n cached {cached:?}\n server {truth:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]
    #[test]
    fn reflector_store_equals_server_state(ops in proptest::collection::vec(op(), 1..40)) {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(run(ops));
    }
}
