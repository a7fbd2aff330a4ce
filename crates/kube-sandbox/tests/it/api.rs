//! kube-sandbox through real clients over HTTP: kube-rs for the typed API,
//! reqwest for malformed input and the sandbox's own endpoints.

// Test fixtures: a failure to set up is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Service};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube_sandbox::{FaultRule, Sandbox};
use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{
    CMS, DEPLOYS, JSON, MERGE, api_status, client, contains, create_crd, create_namespace,
    get_json, next_event, object_event, post_json, raw, request, rv_of, sandbox, send_json, watch,
    watch_error, widget_crd,
};

/// Where faults are injected over HTTP.
const FAULTS: &str = "/sandbox/faults";

fn cm(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "data": data.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>(),
    }))
    .unwrap()
}

#[tokio::test]
async fn crud_and_resource_versions() {
    let (sb, client) = sandbox().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let created = api
        .create(&PostParams::default(), &cm("a", &[("k", "v")]))
        .await
        .unwrap();
    let rv1 = rv_of(&created);
    assert!(created.metadata.uid.is_some());
    assert!(created.metadata.creation_timestamp.is_some());
    let got = api.get("a").await.unwrap();
    assert_eq!(got.data.unwrap()["k"], "v");

    // Update bumps the revision; a stale one conflicts.
    let mut upd = created.clone();
    upd.data = Some([("k".to_string(), "w".to_string())].into());
    let updated = api
        .replace("a", &PostParams::default(), &upd)
        .await
        .unwrap();
    assert!(rv_of(&updated) > rv1);
    let err = api
        .replace("a", &PostParams::default(), &upd)
        .await
        .unwrap_err();
    let s = api_status(err);
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));

    // A no-op update keeps the revision.
    let same = api
        .replace("a", &PostParams::default(), &updated)
        .await
        .unwrap();
    assert_eq!(
        same.metadata.resource_version,
        updated.metadata.resource_version
    );

    // Duplicate create.
    let err = api
        .create(&PostParams::default(), &cm("a", &[]))
        .await
        .unwrap_err();
    let s = api_status(err);
    assert_eq!((s.code, s.reason.as_str()), (409, "AlreadyExists"));

    api.delete("a", &DeleteParams::default()).await.unwrap();
    let s = api_status(api.get("a").await.unwrap_err());
    assert_eq!((s.code, s.reason.as_str()), (404, "NotFound"));

    let stats = sb.stats();
    assert_eq!(stats.get("create configmaps"), 2);
    assert_eq!(stats.get("update configmaps"), 3);
    assert_eq!(stats.get("delete configmaps"), 1);
    assert_eq!(stats.get("get configmaps"), 2);
    assert_eq!(stats.namespaces["default"]["create configmaps"], 2);
}

#[tokio::test]
async fn generate_name_and_dry_run() {
    let (sb, client) = sandbox().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut c = cm("", &[]);
    c.metadata.name = None;
    c.metadata.generate_name = Some("gen-".into());
    let made = api.create(&PostParams::default(), &c).await.unwrap();
    let name = made.metadata.name.unwrap();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");

    let before = sb.revision().await;
    let pp = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let dry = api.create(&pp, &cm("dry", &[])).await.unwrap();
    assert_eq!(dry.metadata.name.as_deref(), Some("dry"));
    assert_eq!(sb.revision().await, before);
    assert!(api.get_opt("dry").await.unwrap().is_none());
}

#[tokio::test]
async fn server_side_apply_owns_fields() {
    let (_sb, client) = sandbox().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let a = PatchParams::apply("alpha");
    let b = PatchParams::apply("beta");
    let body = |data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": data});
    api.patch(
        "x",
        &a,
        &Patch::Apply(body(json!({"a": "1", "shared": "s"}))),
    )
    .await
    .unwrap();
    api.patch("x", &b, &Patch::Apply(body(json!({"b": "2"}))))
        .await
        .unwrap();
    // Alpha drops `shared`: removed. Beta's field stays.
    let out = api
        .patch("x", &a, &Patch::Apply(body(json!({"a": "1"}))))
        .await
        .unwrap();
    let data = out.data.unwrap();
    assert_eq!(data.get("a").map(String::as_str), Some("1"));
    assert_eq!(data.get("b").map(String::as_str), Some("2"));
    assert!(!data.contains_key("shared"));
    let managers: Vec<String> = out
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    assert!(managers.contains(&"alpha".to_string()) && managers.contains(&"beta".to_string()));

    // Beta changing alpha's field conflicts, unless forced.
    let takeover = Patch::Apply(body(json!({"a": "9", "b": "2"})));
    let err = api.patch("x", &b, &takeover).await.unwrap_err();
    assert_eq!(api_status(err).code, 409);
    let b_forced = b.clone().force();
    let forced = api.patch("x", &b_forced, &takeover).await.unwrap();
    assert_eq!(forced.data.unwrap()["a"], "9");

    // Applying the same thing again changes nothing.
    let again = api.patch("x", &b_forced, &takeover).await.unwrap();
    assert_eq!(
        again.metadata.resource_version,
        api.get("x").await.unwrap().metadata.resource_version
    );
}

#[tokio::test]
async fn merge_and_json_patches() {
    let (_sb, client) = sandbox().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &cm("p", &[("a", "1")]))
        .await
        .unwrap();
    let out = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"b": "2", "a": null}})),
        )
        .await
        .unwrap();
    let data = out.data.unwrap();
    assert_eq!(data.len(), 1);
    assert_eq!(data["b"], "2");
    let ops: json_patch::Patch =
        serde_json::from_value(json!([{"op": "add", "path": "/data/c", "value": "3"}])).unwrap();
    let out = api
        .patch("p", &PatchParams::default(), &Patch::<()>::Json(ops))
        .await
        .unwrap();
    assert_eq!(out.data.unwrap()["c"], "3");
    let bad: json_patch::Patch =
        serde_json::from_value(json!([{"op": "test", "path": "/data/c", "value": "nope"}]))
            .unwrap();
    assert!(
        api.patch("p", &PatchParams::default(), &Patch::<()>::Json(bad))
            .await
            .is_err()
    );
    let missing = api
        .patch(
            "nope",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {}})),
        )
        .await
        .unwrap_err();
    assert_eq!(api_status(missing).code, 404);
}

#[tokio::test]
async fn pagination_and_selectors() {
    let (_sb, client) = sandbox().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for i in 0..7 {
        let mut c = cm(&format!("c{i}"), &[]);
        c.metadata.labels = Some(
            [(
                "tier".to_string(),
                if i % 2 == 0 { "even" } else { "odd" }.to_string(),
            )]
            .into(),
        );
        api.create(&PostParams::default(), &c).await.unwrap();
    }
    let mut names = Vec::new();
    let mut lp = ListParams::default().limit(3);
    loop {
        let page = api.list(&lp).await.unwrap();
        assert!(page.items.len() <= 3);
        names.extend(page.items.into_iter().map(|c| c.metadata.name.unwrap()));
        match page.metadata.continue_ {
            Some(c) if !c.is_empty() => lp = lp.continue_token(&c),
            _ => break,
        }
    }
    names.sort();
    assert_eq!(names, (0..7).map(|i| format!("c{i}")).collect::<Vec<_>>());
    let listed = |lp: ListParams| {
        let api = api.clone();
        async move { api.list(&lp).await.map(|l| l.items.len()) }
    };
    let all = ListParams::default();
    assert_eq!(listed(all.clone().labels("tier=even")).await.unwrap(), 4);
    assert_eq!(
        listed(all.clone().labels("tier in (odd)")).await.unwrap(),
        3
    );
    assert_eq!(
        listed(all.clone().labels("tier notin (odd,even)"))
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        listed(all.clone().fields("metadata.name=c3"))
            .await
            .unwrap(),
        1
    );
    let bad = listed(all.labels("tier in (")).await.unwrap_err();
    assert_eq!(api_status(bad).code, 400);
}

#[tokio::test]
async fn watch_from_revision_and_410_after_compaction() {
    let (sb, client) = sandbox().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let list = api.list(&ListParams::default()).await.unwrap();
    let rv = list.metadata.resource_version.unwrap();
    api.create(&PostParams::default(), &cm("w1", &[]))
        .await
        .unwrap();
    api.patch(
        "w1",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"x": "y"}})),
    )
    .await
    .unwrap();
    api.delete("w1", &DeleteParams::default()).await.unwrap();
    let mut stream = watch(&api, &WatchParams::default().timeout(5), &rv).await;
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let (type_, c) = object_event(next_event(&mut stream).await)
            .unwrap_or_else(|e| panic!("unexpected {e:?}"));
        seen.push((type_, c.metadata.name.unwrap()));
    }
    assert_eq!(
        seen,
        vec![
            ("ADDED", "w1".into()),
            ("MODIFIED", "w1".into()),
            ("DELETED", "w1".into())
        ]
    );

    sb.compact().await;
    let mut stream = watch(&api, &WatchParams::default().timeout(5), &rv).await;
    let e = watch_error(next_event(&mut stream).await);
    assert_eq!((e.code, e.reason.as_str()), (410, "Expired"));
}

#[tokio::test]
async fn bookmarks_are_sent_when_asked() {
    let config = kube_sandbox::Config {
        bookmark_interval: Duration::from_millis(50),
        ..Default::default()
    };
    let sb = Sandbox::start(config).await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client(&sb), "default");
    let mut stream = watch(&api, &WatchParams::default().timeout(10), "0").await;
    loop {
        match next_event(&mut stream).await {
            WatchEvent::Bookmark(b) => {
                assert!(!b.metadata.resource_version.is_empty());
                break;
            }
            WatchEvent::Added(_) => continue,
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[tokio::test]
async fn namespaces_terminate_and_take_their_contents() {
    let (_sb, client) = sandbox().await;
    create_namespace(&client, "team").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "team");
    cms.create(&PostParams::default(), &cm("plain", &[]))
        .await
        .unwrap();
    let mut held = cm("held", &[]);
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cms.create(&PostParams::default(), &held).await.unwrap();

    let nss: Api<Namespace> = Api::all(client.clone());
    nss.delete("team", &DeleteParams::default()).await.unwrap();
    let ns = nss.get("team").await.unwrap();
    assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Terminating"));
    assert!(cms.get_opt("plain").await.unwrap().is_none());
    let h = cms.get("held").await.unwrap();
    assert!(h.metadata.deletion_timestamp.is_some());
    // Nothing new goes into a terminating namespace.
    let err = cms
        .create(&PostParams::default(), &cm("late", &[]))
        .await
        .unwrap_err();
    let s = api_status(err);
    assert_eq!((s.code, s.reason.as_str()), (403, "Forbidden"));
    // Removing the finalizer lets the object, then the namespace, go.
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(cms.get_opt("held").await.unwrap().is_none());
    assert!(nss.get_opt("team").await.unwrap().is_none());
    // A missing namespace is 404.
    let gone: Api<ConfigMap> = Api::namespaced(client.clone(), "nowhere");
    let err = gone
        .create(&PostParams::default(), &cm("x", &[]))
        .await
        .unwrap_err();
    assert_eq!(api_status(err).code, 404);
}

#[tokio::test]
async fn services_are_defaulted_and_cluster_ip_is_immutable() {
    let (_sb, client) = sandbox().await;
    let api: Api<Service> = Api::namespaced(client.clone(), "default");
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"type": "NodePort", "ports": [{"port": 80}]}
    }))
    .unwrap();
    let made = api.create(&PostParams::default(), &svc).await.unwrap();
    let spec = made.spec.clone().unwrap();
    assert!(
        spec.cluster_ip
            .as_deref()
            .is_some_and(|ip| ip.starts_with("10.96."))
    );
    let np = spec.ports.unwrap()[0].node_port.unwrap();
    assert!((30000..=32767).contains(&np));
    let err = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"clusterIP": "10.96.200.200", "clusterIPs": ["10.96.200.200"]}}),
            ),
        )
        .await
        .unwrap_err();
    let s = api_status(err);
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
}

#[tokio::test]
async fn faults_are_injected_and_counted() {
    let (sb, client) = sandbox().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    sb.inject(FaultRule {
        verb: Some("create".into()),
        resource: Some("configmaps".into()),
        status: Some(500),
        count: Some(1),
        ..Default::default()
    })
    .await
    .unwrap();
    let err = api
        .create(&PostParams::default(), &cm("f", &[]))
        .await
        .unwrap_err();
    assert_eq!(api_status(err).code, 500);
    api.create(&PostParams::default(), &cm("f", &[]))
        .await
        .unwrap();
    assert_eq!(sb.stats().get("create configmaps"), 2);

    // Over HTTP: a 429 with Retry-After.
    let rule = json!({"verb": "get", "status": 429, "retryAfterSeconds": 7, "count": 1});
    assert_eq!(post_json(&sb, FAULTS, &rule).await.0, 200);
    let r = reqwest::get(format!("{}{CMS}/f", sb.url())).await.unwrap();
    assert_eq!(r.status(), 429);
    assert_eq!(r.headers()["retry-after"], "7");
    assert_eq!(post_json(&sb, FAULTS, &json!({"status": 418})).await.0, 400);
}

#[tokio::test]
async fn forbidden_is_injected_per_namespace_as_a_status() {
    let (sb, client) = sandbox().await;
    create_namespace(&client, "locked").await;
    // Through the library: every patch in `locked` is denied.
    sb.inject(FaultRule {
        verb: Some("patch".into()),
        namespace: Some("locked".into()),
        status: Some(403),
        ..Default::default()
    })
    .await
    .unwrap();
    let locked: Api<ConfigMap> = Api::namespaced(client.clone(), "locked");
    let open: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let apply = PatchParams::apply("test").force();
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
    let err = locked
        .patch("x", &apply, &Patch::Apply(&body))
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 403);
            assert_eq!(s.reason, "Forbidden");
            assert_eq!(s.status, Some(kube::core::response::StatusSummary::Failure));
            assert!(
                s.message
                    .starts_with("configmaps \"x\" is forbidden: User ")
                    && s.message.contains("cannot patch resource \"configmaps\"")
                    && s.message.contains("namespace \"locked\""),
                "{}",
                s.message
            );
        }
        other => panic!("{other:?}"),
    }
    // Other namespaces and other verbs pass.
    open.patch("x", &apply, &Patch::Apply(&body)).await.unwrap();
    locked
        .create(&PostParams::default(), &cm("y", &[]))
        .await
        .unwrap();
    sb.clear_faults().await;

    // Over HTTP, with the same effect.
    let rule = json!({"verb": "get", "namespace": "locked", "status": 403, "count": 1});
    assert_eq!(post_json(&sb, FAULTS, &rule).await.0, 200);
    let (code, status) = get_json(&sb, "/api/v1/namespaces/locked/configmaps/y").await;
    assert_eq!(code, 403);
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(status["code"], 403);
    assert_eq!(status["details"]["name"], "y");
    assert_eq!(status["details"]["kind"], "configmaps");
    // count 1: the next one passes.
    assert!(locked.get("y").await.is_ok());
}

#[tokio::test]
async fn closing_watches_ends_streams() {
    let (sb, client) = sandbox().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut stream = watch(&api, &WatchParams::default().timeout(60), "0").await;
    wait_for_open_watches(&sb, 1).await;
    assert_eq!(sb.stats().open_watches, 1);
    sb.close_watches();
    assert!(stream.try_next().await.unwrap().is_none());
}

/// Waits, two seconds at most, until the sandbox counts `n` open watches
/// (a watch is counted once its request has been received).
async fn wait_for_open_watches(sb: &Sandbox, n: u64) {
    for _ in 0..200 {
        if sb.stats().open_watches == n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn bad_input_gets_the_real_status_and_changes_nothing() {
    let (sb, _client) = sandbox().await;
    let before = sb.revision().await;
    // (method, path, content type, body, expected code, expected reason)
    type Case<'a> = (Method, String, &'a str, Vec<u8>, u16, &'a str);
    // A JSON POST of `body` to `path`.
    let post_to = |path: &str, body: &[u8], code: u16, reason: &'static str| -> Case<'static> {
        (Method::POST, path.into(), JSON, body.to_vec(), code, reason)
    };
    let post = |body: &[u8], code: u16, reason: &'static str| post_to(CMS, body, code, reason);
    let get = |query: &str| -> Case<'static> {
        (
            Method::GET,
            format!("{CMS}?{query}"),
            JSON,
            vec![],
            400,
            "BadRequest",
        )
    };
    let cases: Vec<Case> = vec![
        post(b"{not json", 400, "BadRequest"),
        post(b"[1,2]", 400, "BadRequest"),
        post(
            br#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"a"}}"#,
            400,
            "BadRequest",
        ),
        post(
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}}"#,
            422,
            "Invalid",
        ),
        post(
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}"#,
            422,
            "Invalid",
        ),
        post(
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"l1","labels":{"bad key":"v"}}}"#,
            422,
            "Invalid",
        ),
        post(
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"l2","labels":{"k":"bad value!"}}}"#,
            422,
            "Invalid",
        ),
        post(
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"l3","labels":{"k":"a\u0000b"}}}"#,
            422,
            "Invalid",
        ),
        post_to(
            "/api/v1/namespaces/missing/configmaps",
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}"#,
            404,
            "NotFound",
        ),
        post_to("/api/v1/namespaces/default/gizmos", b"{}", 404, "NotFound"),
        post(
            " ".repeat(3 * 1024 * 1024 + 1).as_bytes(),
            413,
            "RequestEntityTooLarge",
        ),
        (
            Method::PATCH,
            format!("{CMS}/a"),
            "text/plain",
            b"{}".to_vec(),
            415,
            "UnsupportedMediaType",
        ),
        get("labelSelector=%3D%3D"),
        get("continue=garbage"),
        (
            Method::POST,
            format!("{CMS}?dryRun=Some"),
            JSON,
            br#"{"metadata":{"name":"a"}}"#.to_vec(),
            400,
            "BadRequest",
        ),
    ];
    for (method, path, ct, body, code, reason) in cases {
        let (got, status) = raw(&sb, method.clone(), &path, ct, body).await;
        assert_eq!(got, code, "{method} {path}: {status}");
        assert_eq!(status["kind"], "Status", "{method} {path}");
        assert_eq!(status["reason"], reason, "{method} {path}: {status}");
    }
    assert_eq!(
        sb.revision().await,
        before,
        "a failed request changed the store"
    );
}

#[tokio::test]
async fn crds_serve_their_resources() {
    let (sb, client) = sandbox().await;
    let mut crd = widget_crd();
    crd["spec"]["versions"][0]["subresources"] = json!({"status": {}});
    create_crd(&sb, &crd).await;
    let gvk = kube::api::GroupVersionKind::gvk("example.com", "v1", "Widget");
    let (ar, _caps) = kube::discovery::pinned_kind(&client, &gvk).await.unwrap();
    let api: Api<kube::api::DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let w: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 3}, "status": {"ok": true}
    }))
    .unwrap();
    let made = api.create(&PostParams::default(), &w).await.unwrap();
    assert_eq!(made.metadata.generation, Some(1));
    assert!(
        made.data.get("status").is_none(),
        "status is a subresource: ignored on create"
    );
    let st = api
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ok": true}})),
        )
        .await
        .unwrap();
    assert_eq!(st.data["status"]["ok"], true);
    assert_eq!(
        st.metadata.generation,
        Some(1),
        "status writes do not bump generation"
    );
    let sp = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 4}})),
        )
        .await
        .unwrap();
    assert_eq!(sp.metadata.generation, Some(2));
    let lbl = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .unwrap();
    assert_eq!(
        lbl.metadata.generation,
        Some(2),
        "metadata writes do not bump generation"
    );
    // Strategic merge patch is refused for custom resources, as upstream.
    let err = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {}})),
        )
        .await
        .unwrap_err();
    assert_eq!(api_status(err).code, 415);
}

mod random_input {
    use super::*;
    use proptest::prelude::*;

    fn bodies() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..256),
            "[{}\\[\\]\":,a-z0-9 ]{0,64}".prop_map(String::into_bytes),
            Just(br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":7}}"#.to_vec()),
            Just(br#"{"metadata":{"name":"x","labels":[1]},"data":{"a":{"b":1}}}"#.to_vec()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        /// Random bodies and paths get an answer (never a dropped
        /// connection), and the server keeps serving afterwards.
        #[test]
        fn random_requests_never_break_the_server(
            body in bodies(),
            path in "/api/v1(/namespaces/default)?/(configmaps|services|namespaces|x)(/[a-z%0-9]{0,6})?",
            method in prop_oneof![Just(reqwest::Method::POST), Just(reqwest::Method::PUT), Just(reqwest::Method::PATCH)],
            ct in prop_oneof![Just("application/json"), Just("application/merge-patch+json"), Just("application/json-patch+json"), Just("application/apply-patch+yaml"), Just("application/strategic-merge-patch+json")],
        ) {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async {
                let (sb, client) = sandbox().await;
                let r = reqwest::Client::new()
                    .request(method, format!("{}{path}?fieldManager=fuzz", sb.url()))
                    .header("content-type", ct)
                    .body(body)
                    .send()
                    .await
                    .unwrap();
                assert!(r.status().as_u16() < 500, "server error {}", r.status());
                let api: Api<Namespace> = Api::all(client);
                assert!(api.get("default").await.is_ok(), "server stopped answering");
            });
        }
    }
}

// ---------------------------------------------------------------------
// Bulk delete, dry runs, every built-in kind, strategic merge, the history
// window, faults and stats over HTTP, immutable fields, selectors and
// YAML bodies.
// ---------------------------------------------------------------------

/// Sorted names of a list's items.
fn names_of<K: kube::Resource>(items: &[K]) -> Vec<String> {
    let mut v: Vec<String> = items
        .iter()
        .map(|o| o.meta().name.clone().unwrap())
        .collect();
    v.sort();
    v
}

fn labelled(name: &str, app: &str, finalizer: bool) -> ConfigMap {
    let mut c = cm(name, &[("k", "v")]);
    c.metadata.labels = Some([("app".to_string(), app.to_string())].into());
    if finalizer {
        c.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    }
    c
}

/// Every ConfigMap in `default`, serialized: the stored state a failed or
/// dry-run write must leave as it was.
async fn stored_configmaps(sb: &Sandbox, api: &Api<ConfigMap>) -> (u64, Value) {
    let list = api.list(&ListParams::default()).await.unwrap();
    (
        sb.revision().await,
        serde_json::to_value(&list.items).unwrap(),
    )
}

#[tokio::test]
async fn delete_collection_removes_only_matching_objects() {
    let (sb, client) = sandbox().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for (name, app, held) in [
        ("a1", "x", false),
        ("a2", "x", false),
        ("held", "x", true),
        ("other", "y", false),
    ] {
        api.create(&PostParams::default(), &labelled(name, app, held))
            .await
            .unwrap();
    }
    create_namespace(&client, "elsewhere").await;
    let elsewhere: Api<ConfigMap> = Api::namespaced(client.clone(), "elsewhere");
    elsewhere
        .create(&PostParams::default(), &labelled("a1", "x", false))
        .await
        .unwrap();
    let by_label = ListParams::default().labels("app=x");

    // dryRun=All answers with what would go and changes nothing.
    let before = stored_configmaps(&sb, &api).await;
    let dry = DeleteParams {
        dry_run: true,
        ..Default::default()
    };
    let would = api
        .delete_collection(&dry, &by_label)
        .await
        .unwrap()
        .left()
        .expect("a list of the objects");
    assert_eq!(names_of(&would.items), ["a1", "a2", "held"]);
    let held = would
        .items
        .iter()
        .find(|c| c.metadata.name.as_deref() == Some("held"))
        .unwrap();
    assert!(
        held.metadata.deletion_timestamp.is_some(),
        "the would-be object of a delete held by a finalizer"
    );
    assert_eq!(stored_configmaps(&sb, &api).await, before);

    let stats_before = sb.stats();
    let gone = api
        .delete_collection(&DeleteParams::default(), &by_label)
        .await
        .unwrap()
        .left()
        .expect("a list of the objects");
    let delta = sb.stats().since(&stats_before);
    assert_eq!(names_of(&gone.items), ["a1", "a2", "held"]);
    let one = BTreeMap::from([("deletecollection configmaps".to_string(), 1)]);
    assert_eq!(delta.requests, one);
    assert_eq!(delta.namespaces, BTreeMap::from([("default".into(), one)]));
    // Two removals and one deletionTimestamp: three revisions.
    assert_eq!(sb.revision().await, before.0 + 3);

    let left = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(names_of(&left.items), ["held", "other"]);
    let held = api.get("held").await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some());
    assert_eq!(
        held.metadata.finalizers,
        Some(vec!["example.com/hold".to_string()])
    );
    assert!(
        api.get("other")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_none()
    );
    assert!(
        elsewhere.get_opt("a1").await.unwrap().is_some(),
        "another namespace is outside a namespaced collection"
    );

    // The all-namespaces path serves list and watch only, as upstream.
    let all = "/api/v1/configmaps?labelSelector=app%3Dx";
    let (code, status) = raw(&sb, Method::DELETE, all, JSON, vec![]).await;
    assert_eq!(code, 405, "{status}");
    assert_eq!(status["reason"], "MethodNotAllowed");
    assert!(elsewhere.get_opt("a1").await.unwrap().is_some());

    // Namespaces have no collection delete at all.
    let (code, status) = raw(&sb, Method::DELETE, "/api/v1/namespaces", JSON, vec![]).await;
    assert_eq!(code, 405, "{status}");
    assert!(elsewhere.get_opt("a1").await.unwrap().is_some());
}

#[tokio::test]
async fn dry_run_writes_answer_the_would_be_object_and_change_nothing() {
    let (sb, client) = sandbox().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let stored = api
        .create(&PostParams::default(), &labelled("d", "x", true))
        .await
        .unwrap();
    api.create(&PostParams::default(), &cm("plain", &[]))
        .await
        .unwrap();
    let before = stored_configmaps(&sb, &api).await;
    let dry_post = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let dry_patch = PatchParams::default().dry_run();

    // PUT.
    let mut changed = stored.clone();
    changed.data = Some([("k".to_string(), "put".to_string())].into());
    let out = api.replace("d", &dry_post, &changed).await.unwrap();
    assert_eq!(out.data.unwrap()["k"], "put");
    assert_eq!(out.metadata.uid, stored.metadata.uid);
    assert_eq!(
        out.metadata.resource_version,
        stored.metadata.resource_version
    );
    assert_eq!(stored_configmaps(&sb, &api).await, before, "PUT");

    // Merge patch.
    let out = api
        .patch(
            "d",
            &dry_patch,
            &Patch::Merge(json!({"data": {"k": "merge", "n": "1"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        out.data.unwrap(),
        BTreeMap::from([("k".into(), "merge".into()), ("n".into(), "1".into())])
    );
    assert_eq!(stored_configmaps(&sb, &api).await, before, "merge patch");

    // JSON patch.
    let ops: json_patch::Patch =
        serde_json::from_value(json!([{"op": "replace", "path": "/data/k", "value": "json"}]))
            .unwrap();
    let out = api
        .patch("d", &dry_patch, &Patch::<()>::Json(ops))
        .await
        .unwrap();
    assert_eq!(out.data.unwrap()["k"], "json");
    assert_eq!(stored_configmaps(&sb, &api).await, before, "JSON patch");

    // Server-side apply, to an existing object and one that would be created.
    let applied = |name: &str, v: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": v}});
    let ssa = PatchParams::apply("dry").force().dry_run();
    let out = api
        .patch("d", &ssa, &Patch::Apply(applied("d", "apply")))
        .await
        .unwrap();
    assert_eq!(out.data.unwrap()["k"], "apply");
    assert!(
        out.metadata
            .managed_fields
            .unwrap()
            .iter()
            .any(|m| m.manager.as_deref() == Some("dry")),
        "the answer records the would-be ownership"
    );
    let out = api
        .patch("fresh", &ssa, &Patch::Apply(applied("fresh", "new")))
        .await
        .unwrap();
    assert_eq!(out.metadata.name.as_deref(), Some("fresh"));
    assert!(api.get_opt("fresh").await.unwrap().is_none());
    assert_eq!(stored_configmaps(&sb, &api).await, before, "apply");

    // Delete: held by a finalizer, the would-be object; otherwise Success.
    let dry_delete = DeleteParams {
        dry_run: true,
        ..Default::default()
    };
    let held = api
        .delete("d", &dry_delete)
        .await
        .unwrap()
        .left()
        .expect("the object, held by its finalizer");
    assert!(held.metadata.deletion_timestamp.is_some());
    let status = api
        .delete("plain", &dry_delete)
        .await
        .unwrap()
        .right()
        .expect("a Success status");
    assert_eq!(
        status.status,
        Some(kube::core::response::StatusSummary::Success)
    );
    assert_eq!(stored_configmaps(&sb, &api).await, before, "delete");

    // No dry run reached a watcher: the first event after them is a real
    // write.
    let rv = before.0.to_string();
    let mut stream = watch(&api, &WatchParams::default().timeout(10), &rv).await;
    api.patch(
        "plain",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"real": "yes"}})),
    )
    .await
    .unwrap();
    match next_event(&mut stream).await {
        WatchEvent::Modified(c) => {
            assert_eq!(c.metadata.name.as_deref(), Some("plain"));
            assert_eq!(c.data.unwrap()["real"], "yes");
        }
        other => panic!("expected the real write, got {other:?}"),
    }
}

/// One built-in kind, exercised by [`every_builtin_kind_over_http`].
struct KindCase {
    api_version: &'static str,
    kind: &'static str,
    plural: &'static str,
    name: &'static str,
    namespaced: bool,
    /// A status written through `/status`, for kinds with the subresource.
    status: Option<Value>,
    /// Whether a create keeps the status it is given (Node only).
    status_on_create: bool,
    /// Whether `metadata.generation` is tracked.
    generation: bool,
    /// The object without apiVersion, kind and metadata.
    body: Value,
    /// A merge patch that changes the spec part.
    change: Value,
    /// Deserializes the JSON into the k8s-openapi type.
    typed: fn(&Value) -> Result<(), serde_json::Error>,
}

/// The status a create leaves on the kinds of `kind_cases` that have one.
fn zero_status(kind: &str) -> Value {
    match kind {
        "Ingress" => json!({"loadBalancer": {}}),
        _ => json!({}),
    }
}

fn typed<K: serde::de::DeserializeOwned>(v: &Value) -> Result<(), serde_json::Error> {
    serde_json::from_value::<K>(v.clone()).map(|_| ())
}

fn kind_cases() -> Vec<KindCase> {
    use k8s_openapi::api::{apps, coordination, core, discovery, events, networking, rbac};
    let rules =
        |verb: &str| json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": [verb]}]);
    let subjects =
        |name: &str| json!([{"kind": "ServiceAccount", "name": name, "namespace": "default"}]);
    vec![
        KindCase {
            api_version: "v1",
            kind: "ServiceAccount",
            plural: "serviceaccounts",
            name: "robot",
            namespaced: true,
            status: None,
            status_on_create: false,
            generation: false,
            body: json!({"automountServiceAccountToken": true}),
            change: json!({"automountServiceAccountToken": false}),
            typed: typed::<core::v1::ServiceAccount>,
        },
        KindCase {
            api_version: "v1",
            kind: "Endpoints",
            plural: "endpoints",
            name: "web",
            namespaced: true,
            status: None,
            status_on_create: false,
            generation: false,
            body: json!({"subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]}),
            change: json!({"subsets": [{"addresses": [{"ip": "10.0.0.2"}], "ports": [{"port": 80}]}]}),
            typed: typed::<core::v1::Endpoints>,
        },
        KindCase {
            api_version: "v1",
            kind: "Node",
            plural: "nodes",
            name: "node-1",
            namespaced: false,
            status: Some(json!({"capacity": {"cpu": "4"}})),
            status_on_create: true,
            generation: false,
            body: json!({"spec": {"podCIDR": "10.244.0.0/24"}, "status": {"capacity": {"cpu": "2"}}}),
            change: json!({"spec": {"unschedulable": true}}),
            typed: typed::<core::v1::Node>,
        },
        KindCase {
            api_version: "v1",
            kind: "Event",
            plural: "events",
            name: "web.1",
            namespaced: true,
            status: None,
            status_on_create: false,
            generation: false,
            body: json!({
                "involvedObject": {"kind": "ConfigMap", "name": "web", "namespace": "default"},
                "reason": "Synced", "message": "synced", "type": "Normal", "count": 1
            }),
            change: json!({"count": 2}),
            typed: typed::<core::v1::Event>,
        },
        KindCase {
            api_version: "events.k8s.io/v1",
            kind: "Event",
            plural: "events",
            name: "web.2",
            namespaced: true,
            status: None,
            status_on_create: false,
            generation: false,
            body: json!({
                "eventTime": "2026-01-01T00:00:00.000000Z",
                "reportingController": "example.com/mirra", "reportingInstance": "mirra-1",
                "action": "Sync", "reason": "Synced", "note": "synced", "type": "Normal",
                "regarding": {"kind": "ConfigMap", "name": "web", "namespace": "default"}
            }),
            change: json!({"note": "synced again"}),
            typed: typed::<events::v1::Event>,
        },
        KindCase {
            api_version: "discovery.k8s.io/v1",
            kind: "EndpointSlice",
            plural: "endpointslices",
            name: "web-abc",
            namespaced: true,
            status: None,
            status_on_create: false,
            generation: false,
            body: json!({"addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}], "ports": [{"port": 80}]}),
            change: json!({"endpoints": [{"addresses": ["10.0.0.2"]}]}),
            typed: typed::<discovery::v1::EndpointSlice>,
        },
        KindCase {
            api_version: "coordination.k8s.io/v1",
            kind: "Lease",
            plural: "leases",
            name: "leader",
            namespaced: true,
            status: None,
            status_on_create: false,
            generation: false,
            body: json!({"spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}),
            change: json!({"spec": {"holderIdentity": "b"}}),
            typed: typed::<coordination::v1::Lease>,
        },
        KindCase {
            api_version: "networking.k8s.io/v1",
            kind: "Ingress",
            plural: "ingresses",
            name: "web",
            namespaced: true,
            status: Some(json!({"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}})),
            status_on_create: false,
            generation: true,
            body: json!({
                "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}},
                "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.9"}]}}
            }),
            change: json!({"spec": {"defaultBackend": {"service": {"port": {"number": 81}}}}}),
            typed: typed::<networking::v1::Ingress>,
        },
        KindCase {
            api_version: "networking.k8s.io/v1",
            kind: "NetworkPolicy",
            plural: "networkpolicies",
            name: "deny",
            namespaced: true,
            status: None,
            status_on_create: false,
            generation: true,
            body: json!({"spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}),
            change: json!({"spec": {"policyTypes": ["Ingress", "Egress"]}}),
            typed: typed::<networking::v1::NetworkPolicy>,
        },
        KindCase {
            api_version: "rbac.authorization.k8s.io/v1",
            kind: "Role",
            plural: "roles",
            name: "reader",
            namespaced: true,
            status: None,
            status_on_create: false,
            generation: false,
            body: json!({"rules": rules("get")}),
            change: json!({"rules": rules("list")}),
            typed: typed::<rbac::v1::Role>,
        },
        KindCase {
            api_version: "rbac.authorization.k8s.io/v1",
            kind: "RoleBinding",
            plural: "rolebindings",
            name: "reader",
            namespaced: true,
            status: None,
            status_on_create: false,
            generation: false,
            body: json!({
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
                "subjects": subjects("a")
            }),
            change: json!({"subjects": subjects("b")}),
            typed: typed::<rbac::v1::RoleBinding>,
        },
        KindCase {
            api_version: "rbac.authorization.k8s.io/v1",
            kind: "ClusterRole",
            plural: "clusterroles",
            // RBAC names are path segments: a colon is allowed.
            name: "mirra:reader",
            namespaced: false,
            status: None,
            status_on_create: false,
            generation: false,
            body: json!({"rules": rules("get")}),
            change: json!({"rules": rules("watch")}),
            typed: typed::<rbac::v1::ClusterRole>,
        },
        KindCase {
            api_version: "rbac.authorization.k8s.io/v1",
            kind: "ClusterRoleBinding",
            plural: "clusterrolebindings",
            name: "mirra:reader",
            namespaced: false,
            status: None,
            status_on_create: false,
            generation: false,
            body: json!({
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "mirra:reader"},
                "subjects": subjects("a")
            }),
            change: json!({"subjects": subjects("c")}),
            typed: typed::<rbac::v1::ClusterRoleBinding>,
        },
        KindCase {
            api_version: "apps/v1",
            kind: "Deployment",
            plural: "deployments",
            name: "web",
            namespaced: true,
            status: Some(json!({"replicas": 1, "readyReplicas": 1, "observedGeneration": 1})),
            status_on_create: false,
            generation: true,
            body: json!({
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {
                        "metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "web", "image": "nginx"}]}
                    }
                },
                "status": {"replicas": 5}
            }),
            change: json!({"spec": {"replicas": 3}}),
            typed: typed::<apps::v1::Deployment>,
        },
    ]
}

/// Create, get, list and watch every built-in kind through kube-rs, with
/// its status subresource, generation and scope as the real server has
/// them; the answers deserialize into the k8s-openapi types.
#[tokio::test]
async fn every_builtin_kind_over_http() {
    use kube::api::{ApiResource, DynamicObject};
    let (sb, client) = sandbox().await;
    for case in kind_cases() {
        let (group, version) = case
            .api_version
            .split_once('/')
            .unwrap_or(("", case.api_version));
        let qualified = if group.is_empty() {
            case.plural.to_string()
        } else {
            format!("{}.{group}", case.plural)
        };
        let what = qualified.as_str();
        let ar = ApiResource {
            group: group.into(),
            version: version.into(),
            api_version: case.api_version.into(),
            kind: case.kind.into(),
            plural: case.plural.into(),
        };
        let api: Api<DynamicObject> = if case.namespaced {
            Api::namespaced_with(client.clone(), "default", &ar)
        } else {
            Api::all_with(client.clone(), &ar)
        };
        let base = if group.is_empty() {
            "/api/v1".to_string()
        } else {
            format!("/apis/{}", case.api_version)
        };
        let collection = if case.namespaced {
            format!("{base}/namespaces/default/{}", case.plural)
        } else {
            format!("{base}/{}", case.plural)
        };
        let item = format!("{collection}/{}", case.name);

        let listed = api.list(&ListParams::default()).await.unwrap();
        assert!(listed.items.is_empty(), "{what}");
        let rv = listed.metadata.resource_version.unwrap();
        let mut stream = watch(&api, &WatchParams::default().timeout(10), &rv).await;

        // Create.
        let mut body = case.body.clone();
        body["apiVersion"] = json!(case.api_version);
        body["kind"] = json!(case.kind);
        body["metadata"] = json!({"name": case.name, "labels": {"case": "kinds"}});
        let obj: DynamicObject = serde_json::from_value(body.clone()).unwrap();
        let made = api.create(&PostParams::default(), &obj).await.unwrap();
        let made_json = serde_json::to_value(&made).unwrap();
        assert_eq!(made_json["apiVersion"], case.api_version, "{what}");
        assert_eq!(made_json["kind"], case.kind, "{what}");
        assert_eq!(
            made.metadata.namespace.as_deref(),
            case.namespaced.then_some("default"),
            "{what}"
        );
        assert!(made.metadata.uid.is_some(), "{what}");
        assert!(made.metadata.creation_timestamp.is_some(), "{what}");
        assert_eq!(
            made.metadata.generation,
            case.generation.then_some(1),
            "{what}"
        );
        let made_status = made.data.get("status").cloned().unwrap_or_default();
        if case.status.is_some() {
            // Otherwise the strategy resets it to the zero value of the
            // status struct (an Ingress's `loadBalancer` is a struct Go
            // always writes).
            // A Node's kept status also gets the fields Go always writes
            // (`nodeInfo`, `daemonEndpoints`), so it is compared by
            // containment.
            if case.status_on_create {
                assert!(
                    contains(&made_status, &body["status"]),
                    "{what}: status on create: {made_status}"
                );
            } else {
                assert_eq!(
                    made_status,
                    zero_status(case.kind),
                    "{what}: status on create"
                );
            }
        }
        for (k, v) in case.body.as_object().unwrap() {
            if k != "status" {
                assert!(contains(&made.data[k], v), "{what}: {k}: {made_json}");
            }
        }

        // Get, typed, list.
        let got = api.get(case.name).await.unwrap();
        let got_json = serde_json::to_value(&got).unwrap();
        assert_eq!(got_json, made_json, "{what}");
        (case.typed)(&got_json).unwrap_or_else(|e| panic!("{what}: {e}: {got_json}"));
        let by_label = api
            .list(&ListParams::default().labels("case=kinds"))
            .await
            .unwrap();
        assert_eq!(names_of(&by_label.items), [case.name], "{what}");
        let (code, list) = get_json(&sb, &collection).await;
        assert_eq!(code, 200, "{what}");
        assert_eq!(list["kind"], format!("{}List", case.kind), "{what}");
        assert_eq!(list["apiVersion"], case.api_version, "{what}");
        assert_eq!(list["items"].as_array().unwrap().len(), 1, "{what}");
        assert_eq!(list["items"][0]["metadata"], got_json["metadata"], "{what}");

        // The status subresource, or its absence.
        let mut expected_events = vec!["ADDED"];
        match &case.status {
            Some(status) => {
                let st = api
                    .patch_status(
                        case.name,
                        &PatchParams::default(),
                        &Patch::Merge(json!({"status": status})),
                    )
                    .await
                    .unwrap();
                expected_events.push("MODIFIED");
                let mut want = made_status.clone();
                json_patch::merge(&mut want, status);
                assert_eq!(st.data["status"], want, "{what}: status write");
                assert_eq!(st.metadata.generation, made.metadata.generation, "{what}");
                assert!(rv_of(&st) > rv_of(&made), "{what}");
            }
            None => {
                let (code, _) = get_json(&sb, &format!("{item}/status")).await;
                assert_eq!(code, 404, "{what}: no status subresource");
            }
        }
        let status_now = api
            .get(case.name)
            .await
            .unwrap()
            .data
            .get("status")
            .cloned();

        // A spec change bumps generation where it is tracked; a main-resource
        // write cannot change status; a label change leaves generation.
        let mut change = case.change.clone();
        if case.status.is_some() {
            change["status"] = json!({"ignored": true});
        }
        let changed = api
            .patch(case.name, &PatchParams::default(), &Patch::Merge(change))
            .await
            .unwrap();
        expected_events.push("MODIFIED");
        assert_eq!(
            changed.metadata.generation,
            case.generation.then_some(2),
            "{what}"
        );
        assert_eq!(changed.data.get("status").cloned(), status_now, "{what}");
        assert!(rv_of(&changed) > rv_of(&got), "{what}");
        let relabelled = api
            .patch(
                case.name,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {"extra": "1"}}})),
            )
            .await
            .unwrap();
        expected_events.push("MODIFIED");
        assert_eq!(
            relabelled.metadata.generation, changed.metadata.generation,
            "{what}"
        );

        // Scope: a cluster-scoped kind has no namespaced URL; a namespaced
        // kind has no cluster-scoped item URL, lists across namespaces and
        // cannot be created there.
        if case.namespaced {
            let all = format!("{base}/{}", case.plural);
            let (code, _) = get_json(&sb, &format!("{all}/{}", case.name)).await;
            assert_eq!(code, 404, "{what}");
            let (code, list) = get_json(&sb, &all).await;
            assert_eq!(code, 200, "{what}");
            assert_eq!(list["items"].as_array().unwrap().len(), 1, "{what}");
            let (code, status) = post_json(&sb, &all, &body).await;
            assert_eq!(code, 405, "{what}: {status}");
        } else {
            let namespaced = format!("{base}/namespaces/default/{}", case.plural);
            for (method, path) in [
                (Method::GET, format!("{namespaced}/{}", case.name)),
                (Method::GET, namespaced.clone()),
                (Method::POST, namespaced.clone()),
            ] {
                let (code, status) = send_json(&sb, method.clone(), &path, JSON, &body).await;
                assert_eq!(code, 404, "{what}: {method} {path}");
                assert_eq!(status["reason"], "NotFound", "{what}: {method} {path}");
            }
        }

        // Delete, and the watch saw every change in order.
        api.delete(case.name, &DeleteParams::default())
            .await
            .unwrap();
        expected_events.push("DELETED");
        assert!(api.get_opt(case.name).await.unwrap().is_none(), "{what}");
        let mut seen = Vec::new();
        while seen.len() < expected_events.len() {
            let (kind, o) = object_event(next_event(&mut stream).await)
                .unwrap_or_else(|other| panic!("{what}: unexpected {other:?}"));
            assert_eq!(o.metadata.name.as_deref(), Some(case.name), "{what}");
            seen.push(kind);
        }
        assert_eq!(seen, expected_events, "{what}");

        let stats = sb.stats();
        // The refused create at the all-namespaces path counts too.
        assert_eq!(
            stats.get(&format!("create {qualified}")),
            1 + u64::from(case.namespaced),
            "{what}"
        );
        assert_eq!(stats.get(&format!("watch {qualified}")), 1, "{what}");
        assert_eq!(stats.get(&format!("delete {qualified}")), 1, "{what}");
        assert_eq!(stats.get(&format!("patch {qualified}")), 2, "{what}");
        assert_eq!(
            stats.get(&format!("patch {qualified}/status")),
            u64::from(case.status.is_some()),
            "{what}"
        );
    }
}

#[tokio::test]
async fn strategic_merge_patch_merges_service_ports_by_port() {
    let (sb, client) = sandbox().await;
    let api: Api<Service> = Api::namespaced(client.clone(), "default");
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"app": "web"},
            "ports": [
                {"name": "http", "port": 80, "targetPort": 8080},
                {"name": "https", "port": 443, "targetPort": 8443}
            ]
        }
    }))
    .unwrap();
    let made = api.create(&PostParams::default(), &svc).await.unwrap();
    let ip = made.spec.unwrap().cluster_ip;
    let ports = |s: &Service| -> Vec<Value> {
        s.spec
            .as_ref()
            .unwrap()
            .ports
            .as_ref()
            .unwrap()
            .iter()
            .map(|p| json!([p.name, p.port, p.target_port, p.protocol]))
            .collect()
    };
    let sp = PatchParams::default();

    // A port the patch names is merged into by `port`; a new one is added;
    // maps merge key by key.
    let out = api
        .patch(
            "web",
            &sp,
            &Patch::Strategic(json!({"spec": {
                "ports": [{"port": 443, "targetPort": 9443}, {"name": "metrics", "port": 9090}],
                "selector": {"tier": "front"}
            }})),
        )
        .await
        .unwrap();
    assert_eq!(
        ports(&out),
        vec![
            json!(["http", 80, 8080, "TCP"]),
            json!(["https", 443, 9443, "TCP"]),
            json!(["metrics", 9090, 9090, "TCP"]),
        ]
    );
    let spec = out.spec.clone().unwrap();
    assert_eq!(
        spec.selector.unwrap(),
        BTreeMap::from([
            ("app".to_string(), "web".to_string()),
            ("tier".to_string(), "front".to_string())
        ])
    );
    assert_eq!(spec.cluster_ip, ip, "what the patch does not name stays");

    // `$patch: delete` removes one item by its key; `$patch: replace`
    // replaces a whole map.
    let out = api
        .patch(
            "web",
            &sp,
            &Patch::Strategic(json!({"spec": {
                "ports": [{"port": 80, "$patch": "delete"}],
                "selector": {"$patch": "replace", "only": "this"}
            }})),
        )
        .await
        .unwrap();
    assert_eq!(
        ports(&out),
        vec![
            json!(["https", 443, 9443, "TCP"]),
            json!(["metrics", 9090, 9090, "TCP"]),
        ]
    );
    assert_eq!(
        out.spec.clone().unwrap().selector.unwrap(),
        BTreeMap::from([("only".to_string(), "this".to_string())])
    );
    let stored = api.get("web").await.unwrap();
    assert_eq!(ports(&stored), ports(&out));

    // The same list in a merge patch replaces the whole list instead.
    let out = api
        .patch(
            "web",
            &sp,
            &Patch::Merge(json!({"spec": {"ports": [{"port": 443, "targetPort": 1443}]}})),
        )
        .await
        .unwrap();
    assert_eq!(ports(&out), vec![json!([null, 443, 1443, "TCP"])]);
    assert_eq!(sb.stats().get("patch services"), 3);
}

#[tokio::test]
async fn a_small_history_window_expires_old_watches_and_continue_tokens() {
    let config = kube_sandbox::Config {
        store: kube_sandbox::StoreConfig {
            history_limit: 3,
            ..Default::default()
        },
        ..Default::default()
    };
    let sb = Sandbox::start(config).await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client(&sb), "default");
    for name in ["c0", "c1"] {
        api.create(&PostParams::default(), &cm(name, &[]))
            .await
            .unwrap();
    }
    let first = api.list(&ListParams::default().limit(1)).await.unwrap();
    let rv = first.metadata.resource_version.clone().unwrap();
    let token = first.metadata.continue_.clone().unwrap();
    let write = |i: usize| {
        let api = api.clone();
        async move {
            api.patch(
                "c0",
                &PatchParams::default(),
                &Patch::Merge(json!({"data": {"i": i.to_string()}})),
            )
            .await
            .unwrap();
        }
    };
    let watch_from = |rv: String| {
        let api = api.clone();
        async move { watch(&api, &WatchParams::default().timeout(5), &rv).await }
    };
    let modified = |event: WatchEvent<ConfigMap>| match event {
        WatchEvent::Modified(c) => c.data.unwrap()["i"].clone(),
        other => panic!("expected a write, got {other:?}"),
    };

    // As many writes as the window holds: the list's revision is still
    // inside it.
    for i in 1..=3 {
        write(i).await;
    }
    let mut stream = watch_from(rv.clone()).await;
    for i in 1..=3 {
        assert_eq!(modified(next_event(&mut stream).await), i.to_string());
    }
    let page = api
        .list(&ListParams::default().limit(1).continue_token(&token))
        .await
        .unwrap();
    assert_eq!(names_of(&page.items), ["c1"]);

    // One more and the window has moved past it: 410 Expired for both.
    write(4).await;
    let mut stream = watch_from(rv.clone()).await;
    let e = watch_error(next_event(&mut stream).await);
    assert_eq!((e.code, e.reason.as_str()), (410, "Expired"), "{e:?}");
    let err = api
        .list(&ListParams::default().limit(1).continue_token(&token))
        .await
        .unwrap_err();
    let status = api_status(err);
    assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
    // The revision right after it is the oldest still served.
    let next = (rv.parse::<u64>().unwrap() + 1).to_string();
    let mut stream = watch_from(next).await;
    for i in 2..=4 {
        assert_eq!(modified(next_event(&mut stream).await), i.to_string());
    }
    // A fresh list starts over.
    assert_eq!(
        names_of(&api.list(&ListParams::default()).await.unwrap().items),
        ["c0", "c1"]
    );
}

/// `POST /sandbox/faults` with a rule; the sandbox must accept it.
async fn add_fault(sb: &Sandbox, rule: Value) {
    let (code, answer) = post_json(sb, FAULTS, &rule).await;
    assert_eq!(code, 200, "{rule}: {answer}");
}

/// A request without a body to one of the sandbox's own endpoints; its
/// status code.
async fn sandbox_post(sb: &Sandbox, method: Method, path: &str) -> u16 {
    request(sb, method, path, &[], vec![]).await.code
}

#[tokio::test]
async fn injected_conflict_and_unavailable_over_http() {
    let (sb, client) = sandbox().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let made = api
        .create(&PostParams::default(), &cm("c", &[("k", "v")]))
        .await
        .unwrap();
    let before = stored_configmaps(&sb, &api).await;

    add_fault(
        &sb,
        json!({"verb": "update", "resource": "configmaps", "status": 409, "count": 1}),
    )
    .await;
    let mut upd = made.clone();
    upd.data = Some([("k".to_string(), "w".to_string())].into());
    let s = api_status(
        api.replace("c", &PostParams::default(), &upd)
            .await
            .unwrap_err(),
    );
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
    assert_eq!(stored_configmaps(&sb, &api).await, before);
    // count 1: the retry goes through.
    let ok = api
        .replace("c", &PostParams::default(), &upd)
        .await
        .unwrap();
    assert_eq!(ok.data.unwrap()["k"], "w");

    add_fault(&sb, json!({"verb": "get", "status": 503, "count": 2})).await;
    for _ in 0..2 {
        let (code, status) = get_json(&sb, &format!("{CMS}/c")).await;
        assert_eq!(code, 503);
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["reason"], "ServiceUnavailable");
        assert_eq!(status["code"], 503);
    }
    assert!(api.get("c").await.is_ok());
    // Faulted requests are still counted: 2 failed + 1 good get.
    assert_eq!(sb.stats().get("get configmaps"), 3);
    assert_eq!(sb.stats().get("update configmaps"), 2);
}

/// A sandbox with the empty ConfigMap `c` in `default`, and the API of
/// that namespace's ConfigMaps.
async fn sandbox_with_c() -> (Sandbox, Api<ConfigMap>) {
    let (sb, client) = sandbox().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.create(&PostParams::default(), &cm("c", &[]))
        .await
        .unwrap();
    (sb, api)
}

#[tokio::test]
async fn latency_and_fractions_over_http() {
    let (sb, api) = sandbox_with_c().await;

    // Latency only: every request still succeeds and is counted once.
    add_fault(
        &sb,
        json!({"verb": "list", "resource": "configmaps", "latencyMs": 30, "count": 2}),
    )
    .await;
    let before = sb.stats();
    for _ in 0..3 {
        assert_eq!(
            names_of(&api.list(&ListParams::default()).await.unwrap().items),
            ["c"]
        );
    }
    assert_eq!(
        sb.stats().since(&before).requests,
        BTreeMap::from([("list configmaps".to_string(), 3)])
    );

    // Latency with a status: the delayed request fails as told.
    add_fault(
        &sb,
        json!({"verb": "get", "latencyMs": 10, "status": 500, "count": 1}),
    )
    .await;
    let s = api_status(api.get("c").await.unwrap_err());
    assert_eq!((s.code, s.reason.as_str()), (500, "InternalError"));

    // Raw requests from here on: kube-rs retries a 503 by itself, which
    // would hide how many requests a rule answered.
    let get_codes = |n: usize| {
        let url = format!("{}{CMS}/c", sb.url());
        async move {
            let http = reqwest::Client::new();
            let mut codes = Vec::new();
            for _ in 0..n {
                codes.push(http.get(&url).send().await.unwrap().status().as_u16());
            }
            codes
        }
    };

    // Fraction 0: never fires, however many requests match.
    add_fault(&sb, json!({"verb": "get", "status": 500, "fraction": 0.0})).await;
    assert_eq!(get_codes(20).await, [200; 20]);
    assert_eq!(sandbox_post(&sb, Method::DELETE, FAULTS).await, 200);

    // Fraction 1 with a count: exactly the first three of five fail.
    add_fault(
        &sb,
        json!({"verb": "get", "status": 503, "fraction": 1.0, "count": 3}),
    )
    .await;
    assert_eq!(get_codes(5).await, [503, 503, 503, 200, 200]);

    // An unlimited rule holds until DELETE /sandbox/faults clears it.
    add_fault(&sb, json!({"verb": "get", "status": 503})).await;
    assert_eq!(get_codes(4).await, [503; 4]);
    assert_eq!(sandbox_post(&sb, Method::DELETE, FAULTS).await, 200);
    assert_eq!(get_codes(1).await, [200]);

    // Bad rules are refused with 400 and add nothing.
    for bad in [
        json!({"fraction": 1.5, "status": 500}),
        json!({"status": 404}),
        json!({"verb": "get", "stauts": 500}),
    ] {
        assert_eq!(post_json(&sb, FAULTS, &bad).await.0, 400, "{bad}");
    }
    assert!(api.get("c").await.is_ok());
}

#[tokio::test]
async fn close_watches_and_compact_over_http() {
    let (sb, client) = sandbox().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let rv = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let long = WatchParams::default().timeout(60);
    let mut first = watch(&api, &long, &rv).await;
    let mut second = watch(&api, &long, &rv).await;
    api.create(&PostParams::default(), &cm("c", &[]))
        .await
        .unwrap();
    // Both watches are live (each delivered the create) before they close.
    for s in [&mut first, &mut second] {
        assert!(matches!(next_event(s).await, WatchEvent::Added(_)));
    }
    assert_eq!(sb.stats().open_watches, 2);
    let close = "/sandbox/faults/close-watches";
    assert_eq!(sandbox_post(&sb, Method::POST, close).await, 200);
    assert!(first.try_next().await.unwrap().is_none());
    assert!(second.try_next().await.unwrap().is_none());
    wait_for_open_watches(&sb, 0).await;
    assert_eq!(sb.stats().open_watches, 0);
    // A new watch from the same revision resumes with what it missed.
    let short = WatchParams::default().timeout(5);
    let mut resumed = watch(&api, &short, &rv).await;
    assert!(matches!(
        next_event(&mut resumed).await,
        WatchEvent::Added(c) if c.metadata.name.as_deref() == Some("c")
    ));

    // Compaction over HTTP: the same revision is now too old.
    let compact = "/sandbox/faults/compact";
    assert_eq!(sandbox_post(&sb, Method::POST, compact).await, 200);
    let mut expired = watch(&api, &short, &rv).await;
    let e = watch_error(next_event(&mut expired).await);
    assert_eq!((e.code, e.reason.as_str()), (410, "Expired"));
    let nonsense = "/sandbox/faults/nonsense";
    assert_eq!(sandbox_post(&sb, Method::POST, nonsense).await, 404);
}

#[tokio::test]
async fn stats_json_over_http() {
    let (sb, client) = sandbox().await;
    create_namespace(&client, "team").await;
    let default: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let team: Api<ConfigMap> = Api::namespaced(client.clone(), "team");
    for i in 0..3 {
        default
            .create(&PostParams::default(), &cm(&format!("d{i}"), &[]))
            .await
            .unwrap();
    }
    team.create(&PostParams::default(), &cm("t", &[]))
        .await
        .unwrap();
    Api::<ConfigMap>::all(client.clone())
        .list(&ListParams::default())
        .await
        .unwrap();
    let svc: Api<Service> = Api::namespaced(client.clone(), "team");
    svc.create(
        &PostParams::default(),
        &serde_json::from_value(
            json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}),
        )
        .unwrap(),
    )
    .await
    .unwrap();
    svc.patch_status(
        "s",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {}})),
    )
    .await
    .unwrap();
    let slices: Api<k8s_openapi::api::discovery::v1::EndpointSlice> =
        Api::namespaced(client.clone(), "team");
    let _watch = watch(&slices, &WatchParams::default().timeout(30), "0").await;
    wait_for_open_watches(&sb, 1).await;
    let (code, _) = get_json(&sb, "/api/v1").await;
    assert_eq!(code, 200);

    let r = reqwest::get(format!("{}/sandbox/stats", sb.url()))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/json");
    let v: Value = r.json().await.unwrap();
    let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["namespaces", "open_watches", "refused", "requests"]);
    assert_eq!(v["refused"], json!({}), "nothing refused without auth");
    assert_eq!(
        v["requests"],
        json!({
            "create namespaces": 1,
            "create configmaps": 4,
            "list configmaps": 1,
            "create services": 1,
            "patch services/status": 1,
            "watch endpointslices.discovery.k8s.io": 1,
            "get /api/v1": 1,
        })
    );
    // Per namespace: only requests whose URL names one (not the
    // cluster-scoped namespace create, the all-namespaces list or
    // discovery).
    assert_eq!(
        v["namespaces"],
        json!({
            "default": {"create configmaps": 3},
            "team": {
                "create configmaps": 1,
                "create services": 1,
                "patch services/status": 1,
                "watch endpointslices.discovery.k8s.io": 1,
            },
        })
    );
    assert_eq!(v["open_watches"], 1);
    // Reading the stats is not itself counted.
    let again: Value = reqwest::get(format!("{}/sandbox/stats", sb.url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(again["requests"], v["requests"]);
    // The library API reports the same numbers.
    let lib = sb.stats();
    assert_eq!(serde_json::to_value(&lib.requests).unwrap(), v["requests"]);
    assert_eq!(
        serde_json::to_value(&lib.namespaces).unwrap(),
        v["namespaces"]
    );
}

/// The revision, the ConfigMap `frozen` and the Secret `s`.
async fn frozen_state(
    sb: &Sandbox,
    cms: &Api<ConfigMap>,
    secrets: &Api<k8s_openapi::api::core::v1::Secret>,
) -> (u64, Value, Value) {
    (
        sb.revision().await,
        serde_json::to_value(cms.get("frozen").await.unwrap()).unwrap(),
        serde_json::to_value(secrets.get("s").await.unwrap()).unwrap(),
    )
}

#[tokio::test]
async fn immutable_fields_are_invalid_and_change_nothing() {
    use k8s_openapi::api::core::v1::Secret;
    let (sb, client) = sandbox().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut frozen = cm("frozen", &[("k", "v")]);
    frozen.immutable = Some(true);
    let frozen = cms.create(&PostParams::default(), &frozen).await.unwrap();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let secret = secrets
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "s"}, "stringData": {"a": "b"}}))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(secret.type_.as_deref(), Some("Opaque"), "type defaulted");
    let before = frozen_state(&sb, &cms, &secrets).await;

    // Data of an immutable ConfigMap: merge patch and PUT.
    let expect_frozen = |s: kube::core::Status, field: &str| {
        assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"), "{s:?}");
        assert_eq!(
            s.message,
            format!(
                "ConfigMap \"frozen\" is invalid: {field}: Forbidden: field is immutable when `immutable` is set"
            )
        );
        let d = s.details.unwrap();
        assert_eq!((d.name.as_str(), d.kind.as_str()), ("frozen", "ConfigMap"));
        let causes: Vec<(String, String)> =
            d.causes.into_iter().map(|c| (c.reason, c.field)).collect();
        assert_eq!(
            causes,
            [("FieldValueForbidden".to_string(), field.to_string())]
        );
    };
    let err = cms
        .patch(
            "frozen",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "changed"}})),
        )
        .await
        .unwrap_err();
    expect_frozen(api_status(err), "data");
    let mut put = frozen.clone();
    put.data = Some([("other".to_string(), "x".to_string())].into());
    let err = cms
        .replace("frozen", &PostParams::default(), &put)
        .await
        .unwrap_err();
    expect_frozen(api_status(err), "data");
    let err = cms
        .patch(
            "frozen",
            &PatchParams::default(),
            &Patch::Merge(json!({"immutable": false})),
        )
        .await
        .unwrap_err();
    expect_frozen(api_status(err), "immutable");

    // A Secret's type.
    let err = secrets
        .patch(
            "s",
            &PatchParams::default(),
            &Patch::Merge(json!({"type": "example.com/custom"})),
        )
        .await
        .unwrap_err();
    let s = api_status(err);
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        s.message,
        "Secret \"s\" is invalid: type: Invalid value: \"example.com/custom\": field is immutable"
    );
    let causes = s.details.unwrap().causes;
    assert_eq!(causes.len(), 1);
    assert_eq!(
        (causes[0].reason.as_str(), causes[0].field.as_str()),
        ("FieldValueInvalid", "type")
    );
    assert_eq!(
        frozen_state(&sb, &cms, &secrets).await,
        before,
        "a refused write changed something"
    );

    // Metadata of an immutable ConfigMap may still change.
    let labelled = cms
        .patch(
            "frozen",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .unwrap();
    assert_eq!(labelled.data, frozen.data);
    assert!(rv_of(&labelled) > rv_of(&frozen));
}

/// The node port of each of a Service's ports.
fn node_ports(svc: Service) -> Vec<Option<i32>> {
    let ports = svc.spec.unwrap().ports.unwrap();
    ports.iter().map(|p| p.node_port).collect()
}

#[tokio::test]
async fn load_balancer_services_get_node_ports() {
    let (_sb, client) = sandbox().await;
    let api: Api<Service> = Api::namespaced(client.clone(), "default");
    let lb = |name: &str, extra: Value| -> Service {
        let mut v = json!({
            "metadata": {"name": name},
            "spec": {"type": "LoadBalancer", "ports": [
                {"name": "http", "port": 80},
                {"name": "https", "port": 443, "nodePort": 31443}
            ]}
        });
        json_patch::merge(&mut v, &extra);
        serde_json::from_value(v).unwrap()
    };
    let made = api
        .create(&PostParams::default(), &lb("lb", json!({})))
        .await
        .unwrap();
    let spec = made.spec.clone().unwrap();
    assert_eq!(spec.type_.as_deref(), Some("LoadBalancer"));
    assert_eq!(spec.allocate_load_balancer_node_ports, Some(true));
    assert_eq!(spec.external_traffic_policy.as_deref(), Some("Cluster"));
    assert!(spec.cluster_ip.as_deref().unwrap().starts_with("10.96."));
    let ports = spec.ports.unwrap();
    let allocated = ports[0].node_port.unwrap();
    assert!((30000..=32767).contains(&allocated), "{allocated}");
    assert_eq!(
        ports[1].node_port,
        Some(31443),
        "a requested node port is kept"
    );
    assert_eq!(
        serde_json::to_value(made.status.unwrap()).unwrap(),
        json!({"loadBalancer": {}})
    );

    // Asking for a node port another Service holds is refused, as the real
    // allocator refuses it.
    let err = api
        .create(&PostParams::default(), &lb("taken", json!({})))
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("expected a Status, got {err:?}");
    };
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "Service \"taken\" is invalid: spec.ports[1].nodePort: Invalid value: 31443: provided port is already allocated"
    );

    // A second LoadBalancer never gets a port already taken.
    let other = api
        .create(
            &PostParams::default(),
            &lb(
                "lb2",
                json!({"spec": {"ports": [
                    {"name": "http", "port": 80}, {"name": "https", "port": 443, "nodePort": 31445}
                ]}}),
            ),
        )
        .await
        .unwrap();
    let p = other.spec.unwrap().ports.unwrap()[0].node_port.unwrap();
    assert_ne!(p, allocated);
    assert_ne!(p, 31443);
    assert_ne!(p, 31445);

    // An update that omits the node ports keeps them.
    let out = api
        .patch(
            "lb",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"ports": [
                {"name": "http", "port": 80}, {"name": "https", "port": 443}
            ]}})),
        )
        .await
        .unwrap();
    assert_eq!(node_ports(out), [Some(allocated), Some(31443)]);

    // Opting out allocates nothing but keeps what was asked for.
    let none = api
        .create(
            &PostParams::default(),
            &lb(
                "lb3",
                json!({"spec": {"allocateLoadBalancerNodePorts": false, "ports": [
                    {"name": "http", "port": 80}, {"name": "https", "port": 443, "nodePort": 31444}
                ]}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(node_ports(none), [None, Some(31444)]);
}

#[tokio::test]
async fn field_selector_on_namespace() {
    let (_sb, client) = sandbox().await;
    for ns in ["team-a", "team-b"] {
        create_namespace(&client, ns).await;
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        for name in ["one", "two"] {
            api.create(&PostParams::default(), &cm(name, &[]))
                .await
                .unwrap();
        }
    }
    Api::<ConfigMap>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &cm("one", &[]))
        .await
        .unwrap();
    let all: Api<ConfigMap> = Api::all(client.clone());
    let ns_and_name = |items: Vec<ConfigMap>| -> Vec<(String, String)> {
        let mut v: Vec<_> = items
            .into_iter()
            .map(|c| (c.metadata.namespace.unwrap(), c.metadata.name.unwrap()))
            .collect();
        v.sort();
        v
    };
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    let got = all
        .list(&ListParams::default().fields("metadata.namespace=team-a"))
        .await
        .unwrap();
    assert_eq!(
        ns_and_name(got.items),
        [pair("team-a", "one"), pair("team-a", "two")]
    );
    let got = all
        .list(&ListParams::default().fields("metadata.namespace!=team-a,metadata.name=one"))
        .await
        .unwrap();
    assert_eq!(
        ns_and_name(got.items),
        [pair("default", "one"), pair("team-b", "one")]
    );
    // A watch across namespaces filters the same way.
    let mut stream = all
        .watch(
            &WatchParams::default()
                .fields("metadata.namespace=team-b")
                .timeout(5),
            "0",
        )
        .await
        .unwrap()
        .boxed();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        match stream.try_next().await.unwrap().unwrap() {
            WatchEvent::Added(c) => seen.push(c),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(
        ns_and_name(seen),
        [pair("team-b", "one"), pair("team-b", "two")]
    );
    // A field the server does not index is refused, as upstream.
    let err = all
        .list(&ListParams::default().fields("data.k=v"))
        .await
        .unwrap_err();
    assert_eq!(api_status(err).code, 400);
}

#[tokio::test]
async fn malformed_yaml_is_bad_request_and_changes_nothing() {
    let (sb, _client) = sandbox().await;
    let post_yaml = |body: &str| raw(&sb, Method::POST, CMS, "application/yaml", body.into());
    let before = sb.revision().await;
    for body in [
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n\tdata: 1\n",
        "- just\n- a list\n",
        "plain scalar",
    ] {
        let (code, status) = post_yaml(body).await;
        assert_eq!(code, 400, "{body:?}: {status}");
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["reason"], "BadRequest", "{body:?}");
        // Syntax errors are worded as the real server's YAML decoder
        // words them; a list or a scalar parses but is no object.
        let syntax_error = body.starts_with("apiVersion");
        assert_eq!(
            status["message"]
                .as_str()
                .unwrap()
                .starts_with("error converting YAML to JSON: "),
            syntax_error,
            "{status}"
        );
    }
    assert_eq!(
        sb.revision().await,
        before,
        "a refused body changed the store"
    );
    let (code, list) = get_json(&sb, CMS).await;
    assert_eq!(code, 200);
    assert_eq!(list["items"], json!([]));
    // Well-formed YAML with the same content type is stored.
    let (code, made) =
        post_yaml("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  k: v\n").await;
    assert_eq!(code, 201, "{made}");
    assert_eq!(made["data"], json!({"k": "v"}));
}

/// An injected latency delays the one request it matches: the faults lock
/// is released before the sleep, so every other request goes on (it used to
/// stall the whole server for as long as the slowest request).
#[tokio::test]
async fn a_slow_request_does_not_hold_up_the_others() {
    let (sb, api) = sandbox_with_c().await;
    // Ten minutes: far longer than the deadline below.
    add_fault(
        &sb,
        json!({"verb": "list", "resource": "configmaps", "latencyMs": 600_000, "count": 1}),
    )
    .await;
    let before = sb.stats();
    let slow = {
        let api = api.clone();
        tokio::spawn(async move { api.list(&ListParams::default()).await })
    };
    // The slow list has been received (and is sleeping)...
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    while sb.stats().since(&before).requests.get("list configmaps") != Some(&1) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the slow list never arrived"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // ...and a get, a write and another list are answered meanwhile.
    let others = async {
        api.get("c").await.unwrap();
        api.create(&PostParams::default(), &cm("d", &[]))
            .await
            .unwrap();
        api.list(&ListParams::default()).await.unwrap().items.len()
    };
    let listed = tokio::time::timeout(std::time::Duration::from_secs(30), others)
        .await
        .expect("requests stalled behind the injected latency");
    assert_eq!(listed, 2);
    assert!(!slow.is_finished());
    slow.abort();
}

/// Every cluster starts with `default/kubernetes` (the API server's own
/// Service); its address is the first of the range and never handed out
/// again.
#[tokio::test]
async fn the_kubernetes_service_exists_from_the_start() {
    let (_sb, client) = sandbox().await;
    let api: Api<Service> = Api::namespaced(client, "default");
    let svc = api.get("kubernetes").await.unwrap();
    let spec = svc.spec.unwrap();
    assert_eq!(spec.cluster_ip.as_deref(), Some("10.96.0.1"));
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    let ports = spec.ports.unwrap();
    assert_eq!(
        (ports[0].port, ports[0].name.as_deref()),
        (443, Some("https"))
    );
    assert_eq!(
        svc.metadata
            .labels
            .unwrap()
            .get("component")
            .map(String::as_str),
        Some("apiserver")
    );
    let mine: Service = serde_json::from_value(
        json!({"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}}),
    )
    .unwrap();
    let made = api.create(&PostParams::default(), &mine).await.unwrap();
    assert_ne!(made.spec.unwrap().cluster_ip.as_deref(), Some("10.96.0.1"));
}

fn deployment(name: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.25",
                    "resources": {"limits": {"cpu": "0.5", "memory": "1024Mi"}}}]}
            }
        }
    })
}

/// `/scale` reads and writes `spec.replicas` as an `autoscaling/v1` Scale;
/// a negative count is 422 and a stale resourceVersion 409, and neither
/// changes the Deployment.
#[tokio::test]
async fn workloads_scale_through_their_scale_subresource() {
    let (sb, _client) = sandbox().await;
    let (code, made) = post_json(&sb, DEPLOYS, &deployment("web")).await;
    assert_eq!(code, 201, "{made}");
    let web = format!("{DEPLOYS}/web");
    let scale_url = format!("{web}/scale");
    let put_scale = |scale: Value| {
        let (sb, url) = (&sb, &scale_url);
        async move { send_json(sb, Method::PUT, url, JSON, &scale).await }
    };
    let (code, scale) = get_json(&sb, &scale_url).await;
    assert_eq!(code, 200, "{scale}");
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["spec"]["replicas"], 1);
    assert_eq!(
        scale["status"],
        json!({"replicas": 0, "selector": "app=web"})
    );
    assert_eq!(scale["metadata"]["uid"], made["metadata"]["uid"]);

    let three = json!({"spec": {"replicas": 3}});
    let (code, scaled) = send_json(&sb, Method::PATCH, &scale_url, MERGE, &three).await;
    assert_eq!((code, &scaled["spec"]["replicas"]), (200, &json!(3)));
    let (_, dep) = get_json(&sb, &web).await;
    assert_eq!(dep["spec"]["replicas"], 3);
    assert_eq!(dep["metadata"]["generation"], 2);

    let mut put = scaled.clone();
    put["spec"]["replicas"] = json!(-1);
    let (code, status) = put_scale(put).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "Scale.autoscaling \"web\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
    );
    // Replicas of the wrong type or out of int32's range: the decoder's 400.
    for (bad, go) in [
        (json!("three"), "string"),
        (json!(2_147_483_648_i64), "number 2147483648"),
    ] {
        let mut put = scaled.clone();
        put["spec"]["replicas"] = bad;
        let (code, status) = put_scale(put).await;
        assert_eq!(code, 400, "{status}");
        assert_eq!(status["reason"], "BadRequest");
        assert!(
            status["message"].as_str().unwrap().contains(&format!(
                "cannot unmarshal {go} into Go struct field ScaleSpec.spec.replicas of type int32"
            )),
            "{status}"
        );
    }
    let mut stale = scale.clone();
    stale["spec"]["replicas"] = json!(5);
    let (code, _) = put_scale(stale).await;
    assert_eq!(code, 409);
    let (_, after) = get_json(&sb, &web).await;
    assert_eq!(after, dep);

    // Kinds without the subresource do not serve it.
    let daemonset_scale = "/apis/apps/v1/namespaces/default/daemonsets/x/scale";
    assert_eq!(get_json(&sb, daemonset_scale).await.0, 404);
}

/// What a real server does to a body on the way in: `stringData` folded
/// into base64 `data` and never returned, quantities in canonical form,
/// defaults filled in, status reset; and what it refuses with 400.
#[tokio::test]
async fn writes_are_decoded_defaulted_and_normalised_as_the_server_does() {
    let (sb, _client) = sandbox().await;
    let secrets = "/api/v1/namespaces/default/secrets";
    let post = |path: &'static str, body: &[u8]| raw(&sb, Method::POST, path, JSON, body.to_vec());
    let (code, secret) = post(
        secrets,
        br#"{"metadata":{"name":"s"},"data":{"a":"eA=="},"stringData":{"b":"hello","a":"y"}}"#,
    )
    .await;
    assert_eq!(code, 201, "{secret}");
    assert_eq!(secret["data"], json!({"a": "eQ==", "b": "aGVsbG8="}));
    assert!(secret.get("stringData").is_none());
    assert_eq!(secret["type"], "Opaque");

    let (code, dep) = post_json(&sb, DEPLOYS, &deployment("web")).await;
    assert_eq!(code, 201, "{dep}");
    let c = &dep["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        c["resources"]["limits"],
        json!({"cpu": "500m", "memory": "1Gi"})
    );
    assert_eq!(c["imagePullPolicy"], "IfNotPresent");
    assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(dep["spec"]["replicas"], 1);
    assert_eq!(dep["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(dep["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
    assert_eq!(dep["status"], json!({}));
    assert_eq!(dep["metadata"]["generation"], 1);

    // A quantity that does not parse, base64 that is not: 400, nothing stored.
    let before = sb.revision().await;
    let (code, status) = post(
        "/api/v1/namespaces/default/limitranges",
        br#"{"metadata":{"name":"lr"},"spec":{"limits":[{"type":"Container","max":{"cpu":"abc"}}]}}"#,
    )
    .await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(
        status["message"],
        "LimitRange in version \"v1\" cannot be handled as a LimitRange: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
    let (code, status) = post(
        secrets,
        br#"{"metadata":{"name":"bad"},"data":{"a":"not base64!"}}"#,
    )
    .await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(
        status["message"],
        "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 3"
    );
    // A Deployment whose selector does not match its template: 422.
    let mut bad = deployment("bad");
    bad["spec"]["selector"]["matchLabels"]["app"] = json!("other");
    let (code, status) = post_json(&sb, DEPLOYS, &bad).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(status["reason"], "Invalid");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"bad\"}: `selector` does not match template `labels`"),
        "{status}"
    );
    assert_eq!(sb.revision().await, before);
}

/// The registries built with `ReturnDeletedObject` answer a DELETE with
/// the object; the others with a `Status`.
#[tokio::test]
async fn deletes_answer_the_object_where_the_real_registry_does() {
    let (sb, _client) = sandbox().await;
    for (path, body, returns_object) in [
        (
            "/api/v1/namespaces/default/services",
            json!({"metadata": {"name": "x"}, "spec": {"ports": [{"port": 80}]}}),
            true,
        ),
        (
            "/api/v1/namespaces/default/serviceaccounts",
            json!({"metadata": {"name": "x"}}),
            true,
        ),
        (
            "/api/v1/namespaces/default/pods",
            json!({"metadata": {"name": "x"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
            true,
        ),
        (
            "/apis/storage.k8s.io/v1/storageclasses",
            json!({"metadata": {"name": "x"}, "provisioner": "example.com/p"}),
            true,
        ),
        (CMS, json!({"metadata": {"name": "x"}}), false),
    ] {
        let (code, made) = post_json(&sb, path, &body).await;
        assert_eq!(code, 201, "{path}: {made}");
        let x = format!("{path}/x");
        let (code, answer) = raw(&sb, Method::DELETE, &x, "", vec![]).await;
        assert_eq!(code, 200, "{path}: {answer}");
        if returns_object {
            assert_eq!(answer["kind"], made["kind"], "{path}: {answer}");
            assert_eq!(answer["metadata"]["uid"], made["metadata"]["uid"]);
        } else {
            assert_eq!(answer["kind"], "Status", "{path}: {answer}");
            assert_eq!(answer["status"], "Success");
        }
        assert_eq!(get_json(&sb, &x).await.0, 404, "{path}");
    }
}

/// Size limits as the API server applies them: a ConfigMap or Secret over
/// 1 MiB of data is 422 (`ConfigMap "big" is invalid: []: Too long: ...`) (the body itself is under the 3 MiB request limit),
/// a body over 3 MiB is 413; neither stores anything.
#[tokio::test]
async fn oversized_data_and_bodies_are_refused() {
    let (sb, _client) = sandbox().await;
    let before = sb.revision().await;
    let big = "a".repeat(1024 * 1024 + 1);
    for (path, body) in [
        (
            CMS,
            json!({"metadata": {"name": "big"}, "data": {"k": big}}),
        ),
        (
            "/api/v1/namespaces/default/secrets",
            json!({"metadata": {"name": "big"}, "stringData": {"k": big}}),
        ),
    ] {
        let (code, status) = post_json(&sb, path, &body).await;
        assert_eq!(code, 422, "{path}: {status}");
        assert_eq!(status["reason"], "Invalid");
        assert!(
            status["message"]
                .as_str()
                .unwrap()
                .ends_with("Too long: may not be more than 1048576 bytes"),
            "{status}"
        );
    }
    let huge = "a".repeat(3 * 1024 * 1024 + 1);
    let (code, _) = post_json(
        &sb,
        CMS,
        &json!({"metadata": {"name": "huge"}, "data": {"k": huge}}),
    )
    .await;
    assert_eq!(code, 413);
    assert_eq!(sb.revision().await, before);
}

/// A label-selected watch hears of an object that stops matching as a
/// DELETED (the object as it was, at the new revision) and of one that
/// starts matching as an ADDED, as the real watch cache sends them; a
/// resumed watch replays the same from history.
#[tokio::test]
async fn a_filtered_watch_sees_objects_enter_and_leave_its_selection() {
    let (_sb, client) = sandbox().await;
    create_namespace(&client, "sel").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "sel");
    let mut labelled = cm("x", &[("k", "v")]);
    labelled.metadata.labels = Some(BTreeMap::from([("team".to_string(), "a".to_string())]));
    let created = api.create(&PostParams::default(), &labelled).await.unwrap();
    let start_rv = created.metadata.resource_version.clone().unwrap();
    let params = WatchParams::default().labels("team=a").timeout(10);
    let mut live = api.watch(&params, &start_rv).await.unwrap().boxed();

    let unlabel = Patch::Merge(json!({"metadata": {"labels": {"team": null}}}));
    let after = api
        .patch("x", &PatchParams::default(), &unlabel)
        .await
        .unwrap();
    // A change outside the selection is not sent at all.
    api.patch(
        "x",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "w"}})),
    )
    .await
    .unwrap();
    let relabel = Patch::Merge(json!({"metadata": {"labels": {"team": "a"}}}));
    let back = api
        .patch("x", &PatchParams::default(), &relabel)
        .await
        .unwrap();

    let mut seen = Vec::new();
    while seen.len() < 2 {
        let e = tokio::time::timeout(Duration::from_secs(10), live.try_next())
            .await
            .expect("watch event")
            .unwrap()
            .expect("stream open");
        match e {
            WatchEvent::Bookmark(_) => {}
            other => seen.push(other),
        }
    }
    let WatchEvent::Deleted(gone) = &seen[0] else {
        panic!("not DELETED: {:?}", seen[0]);
    };
    // The object as it last matched, at the revision that moved it out.
    assert_eq!(
        gone.metadata.resource_version,
        after.metadata.resource_version
    );
    assert_eq!(
        gone.metadata.labels.as_ref().unwrap().get("team").unwrap(),
        "a"
    );
    assert_eq!(gone.data.as_ref().unwrap()["k"], "v");
    let WatchEvent::Added(again) = &seen[1] else {
        panic!("not ADDED: {:?}", seen[1]);
    };
    assert_eq!(
        again.metadata.resource_version,
        back.metadata.resource_version
    );
    assert_eq!(again.data.as_ref().unwrap()["k"], "w");

    // Resuming from the start replays the same two events from history.
    let replay: Vec<_> = api
        .watch(&params, &start_rv)
        .await
        .unwrap()
        .take(2)
        .try_collect()
        .await
        .unwrap();
    assert!(matches!(replay[0], WatchEvent::Deleted(_)), "{replay:?}");
    assert!(matches!(replay[1], WatchEvent::Added(_)), "{replay:?}");
}

/// A resourceVersion in a server-side apply configuration is a
/// precondition: a stale one is refused with 409 and changes nothing.
#[tokio::test]
async fn a_server_side_apply_with_a_stale_resource_version_is_a_conflict() {
    let (_sb, client) = sandbox().await;
    create_namespace(&client, "rv").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "rv");
    let first = api
        .patch(
            "c",
            &PatchParams::apply("t"),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c"}, "data": {"k": "1"}})),
        )
        .await
        .unwrap();
    let rv1 = first.metadata.resource_version.clone().unwrap();
    api.patch(
        "c",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
    )
    .await
    .unwrap();
    let stale = api
        .patch(
            "c",
            &PatchParams::apply("t").force(),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c", "resourceVersion": rv1}, "data": {"k": "2"}})),
        )
        .await;
    match stale {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 409, "{s:?}");
            assert!(
                s.message.contains("the object has been modified"),
                "{}",
                s.message
            );
        }
        other => panic!("not a conflict: {other:?}"),
    }
    let now = api.get("c").await.unwrap();
    assert_eq!(now.data.as_ref().unwrap()["k"], "1");
    // The current version is accepted.
    let fresh = api
        .patch(
            "c",
            &PatchParams::apply("t").force(),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c", "resourceVersion": now.metadata.resource_version},
                "data": {"k": "2"}})),
        )
        .await
        .unwrap();
    assert_eq!(fresh.data.unwrap()["k"], "2");
}
