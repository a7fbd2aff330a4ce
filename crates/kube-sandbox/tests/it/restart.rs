//! A sandbox stopped and started again with its state file: every object
//! comes back as it was (uid, resourceVersion, labels), CRDs serve their
//! resources again, allocated Service addresses stay taken, new writes
//! continue the revision counter, and a watch resumed from before the
//! restart gets 410 so its client lists again. A state file that is not
//! one is refused with an error naming it.

// Test fixtures: a failure to set up is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams, WatchParams};
use kube_sandbox::Sandbox;
use serde_json::json;

use crate::common::{
    client, create_crd, create_namespace, next_event, watch, watch_error, widget_crd,
};

fn config(path: &std::path::Path) -> kube_sandbox::Config {
    kube_sandbox::Config {
        state_file: Some(path.to_path_buf()),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_restart_with_the_state_file_keeps_every_object() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("kube.json");
    let sb = Sandbox::start(config(&state)).await.unwrap();
    let addr = sb.addr();
    let c = client(&sb);
    create_namespace(&c, "keep").await;
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "keep");
    let cm = cms
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"metadata": {"name": "c", "labels": {"a": "b"}}, "data": {"k": "v"}}),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    let svcs: Api<Service> = Api::namespaced(c.clone(), "keep");
    let svc = svcs
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "s"},
                "spec": {"ports": [{"port": 80}], "selector": {"app": "x"}}}))
            .unwrap(),
        )
        .await
        .unwrap();
    create_crd(&sb, &widget_crd()).await;
    let widget_res = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    let widgets: Api<DynamicObject> = Api::namespaced_with(c.clone(), "keep", &widget_res);
    let widget = widgets
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w"}, "size": 3}))
            .unwrap(),
        )
        .await
        .unwrap();
    let last_rv: u64 = sb.revision().await;
    let mut sb = sb;
    sb.restart().await.unwrap();
    assert!(state.exists());
    assert_eq!(sb.addr(), addr);
    // The same client: the same address answers.
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "keep");
    let again = cms.get("c").await.unwrap();
    assert_eq!(again.metadata.uid, cm.metadata.uid);
    assert_eq!(
        again.metadata.resource_version,
        cm.metadata.resource_version
    );
    assert_eq!(again.data.unwrap()["k"], "v");
    let listed = cms
        .list(&kube::api::ListParams::default().labels("a=b"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);
    let widgets: Api<DynamicObject> = Api::namespaced_with(c.clone(), "keep", &widget_res);
    let w = widgets.get("w").await.unwrap();
    assert_eq!(w.metadata.uid, widget.metadata.uid);
    assert_eq!(w.data["size"], 3);
    // The old Service keeps its address; a new one gets another.
    let svcs: Api<Service> = Api::namespaced(c.clone(), "keep");
    let old_ip = svc.spec.unwrap().cluster_ip.unwrap();
    assert_eq!(
        svcs.get("s")
            .await
            .unwrap()
            .spec
            .unwrap()
            .cluster_ip
            .unwrap(),
        old_ip
    );
    let fresh = svcs
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"metadata": {"name": "t"}, "spec": {"ports": [{"port": 80}]}}),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    assert_ne!(fresh.spec.unwrap().cluster_ip.unwrap(), old_ip);
    // Revisions go on from where they were.
    let rv: u64 = fresh.metadata.resource_version.unwrap().parse().unwrap();
    assert!(rv > last_rv, "{rv} after {last_rv}");
    // A watch from before the restart: 410, list again.
    let rv = cm.metadata.resource_version.unwrap();
    let mut stream = watch(&cms, &WatchParams::default(), &rv).await;
    assert_eq!(watch_error(next_event(&mut stream).await).code, 410);
    sb.shutdown().await;

    // A plain stop and a start from the file: the same objects.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let sb = Sandbox::start_on(listener, config(&state)).unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client(&sb), "keep");
    assert_eq!(cms.get("c").await.unwrap().metadata.uid, cm.metadata.uid);
    sb.shutdown().await;
}

#[tokio::test]
async fn a_state_file_that_is_not_one_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    for (content, why) in [
        ("not json", "not JSON"),
        ("{\"objects\": []}", "revision"),
        (
            "{\"revision\": 3, \"objects\": [{\"resource\": \"configmaps\"}]}",
            "object 0",
        ),
        (
            "{\"revision\": 3, \"objects\": [{\"resource\": \"configmaps\", \"namespace\": \"a\", \"object\": {\"metadata\": {\"name\": \"x\", \"resourceVersion\": \"abc\"}}}]}",
            "invalid resource version",
        ),
    ] {
        let state = dir.path().join("bad.json");
        std::fs::write(&state, content).unwrap();
        let err = match Sandbox::start(config(&state)).await {
            Ok(_) => panic!("{content} was accepted"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains(&state.display().to_string()), "{err}");
        assert!(err.contains(why), "{content}: {err}");
    }
}
