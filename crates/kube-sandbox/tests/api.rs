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
use kube::{Client, Config};
use kube_sandbox::{FaultRule, Sandbox};
use serde_json::{Value, json};

async fn sandbox() -> (Sandbox, Client) {
    let sb = Sandbox::start(kube_sandbox::Config::default())
        .await
        .unwrap();
    let config = Config::new(sb.url().parse().unwrap());
    let client = Client::try_from(config).unwrap();
    (sb, client)
}

fn cm(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "data": data.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>(),
    }))
    .unwrap()
}

async fn create_ns(client: &Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    api.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": name}})).unwrap(),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn crud_and_resource_versions() {
    let (sb, client) = sandbox().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let created = api
        .create(&PostParams::default(), &cm("a", &[("k", "v")]))
        .await
        .unwrap();
    let rv1: u64 = created
        .metadata
        .resource_version
        .clone()
        .unwrap()
        .parse()
        .unwrap();
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
    let rv2: u64 = updated
        .metadata
        .resource_version
        .clone()
        .unwrap()
        .parse()
        .unwrap();
    assert!(rv2 > rv1);
    let err = api
        .replace("a", &PostParams::default(), &upd)
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 409 && s.reason == "Conflict"),
        "{err:?}"
    );

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
    assert!(matches!(err, kube::Error::Api(ref s) if s.code == 409 && s.reason == "AlreadyExists"));

    api.delete("a", &DeleteParams::default()).await.unwrap();
    let err = api.get("a").await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(ref s) if s.code == 404 && s.reason == "NotFound"));

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
    let err = api
        .patch("x", &b, &Patch::Apply(body(json!({"a": "9", "b": "2"}))))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 409),
        "{err:?}"
    );
    let forced = api
        .patch(
            "x",
            &b.clone().force(),
            &Patch::Apply(body(json!({"a": "9", "b": "2"}))),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.unwrap()["a"], "9");

    // Applying the same thing again changes nothing.
    let again = api
        .patch(
            "x",
            &b.clone().force(),
            &Patch::Apply(body(json!({"a": "9", "b": "2"}))),
        )
        .await
        .unwrap();
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
    assert!(matches!(missing, kube::Error::Api(ref s) if s.code == 404));
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
    assert_eq!(
        api.list(&ListParams::default().labels("tier=even"))
            .await
            .unwrap()
            .items
            .len(),
        4
    );
    assert_eq!(
        api.list(&ListParams::default().labels("tier in (odd)"))
            .await
            .unwrap()
            .items
            .len(),
        3
    );
    assert_eq!(
        api.list(&ListParams::default().labels("tier notin (odd,even)"))
            .await
            .unwrap()
            .items
            .len(),
        0
    );
    assert_eq!(
        api.list(&ListParams::default().fields("metadata.name=c3"))
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    let bad = api
        .list(&ListParams::default().labels("tier in ("))
        .await
        .unwrap_err();
    assert!(
        matches!(bad, kube::Error::Api(ref s) if s.code == 400),
        "{bad:?}"
    );
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
    let mut stream = api
        .watch(&WatchParams::default().timeout(5), &rv)
        .await
        .unwrap()
        .boxed();
    let mut seen = Vec::new();
    while seen.len() < 3 {
        match stream.try_next().await.unwrap().unwrap() {
            WatchEvent::Added(c) => seen.push(("ADDED", c.metadata.name.unwrap())),
            WatchEvent::Modified(c) => seen.push(("MODIFIED", c.metadata.name.unwrap())),
            WatchEvent::Deleted(c) => seen.push(("DELETED", c.metadata.name.unwrap())),
            other => panic!("unexpected {other:?}"),
        }
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
    let mut stream = api
        .watch(&WatchParams::default().timeout(5), &rv)
        .await
        .unwrap()
        .boxed();
    match stream.try_next().await.unwrap().unwrap() {
        WatchEvent::Error(e) => {
            assert_eq!(e.code, 410);
            assert_eq!(e.reason, "Expired");
        }
        other => panic!("expected 410, got {other:?}"),
    }
}

#[tokio::test]
async fn bookmarks_are_sent_when_asked() {
    let config = kube_sandbox::Config {
        bookmark_interval: Duration::from_millis(50),
        ..Default::default()
    };
    let sb = Sandbox::start(config).await.unwrap();
    let client = Client::try_from(Config::new(sb.url().parse().unwrap())).unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut stream = api
        .watch(&WatchParams::default().timeout(10), "0")
        .await
        .unwrap()
        .boxed();
    loop {
        match stream.try_next().await.unwrap().unwrap() {
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
    create_ns(&client, "team").await;
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
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 403 && s.reason == "Forbidden"),
        "{err:?}"
    );
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
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 404),
        "{err:?}"
    );
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
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 422 && s.reason == "Invalid"),
        "{err:?}"
    );
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
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 500),
        "{err:?}"
    );
    api.create(&PostParams::default(), &cm("f", &[]))
        .await
        .unwrap();
    assert_eq!(sb.stats().get("create configmaps"), 2);

    // Over HTTP: a 429 with Retry-After.
    let http = reqwest::Client::new();
    let r = http
        .post(format!("{}/sandbox/faults", sb.url()))
        .json(&json!({"verb": "get", "status": 429, "retryAfterSeconds": 7, "count": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = http
        .get(format!(
            "{}/api/v1/namespaces/default/configmaps/f",
            sb.url()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 429);
    assert_eq!(r.headers()["retry-after"], "7");
    let r = http
        .post(format!("{}/sandbox/faults", sb.url()))
        .json(&json!({"status": 418}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
}

#[tokio::test]
async fn forbidden_is_injected_per_namespace_as_a_status() {
    let (sb, client) = sandbox().await;
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "locked"}})).unwrap(),
        )
        .await
        .unwrap();
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
    let http = reqwest::Client::new();
    let r = http
        .post(format!("{}/sandbox/faults", sb.url()))
        .json(&json!({"verb": "get", "namespace": "locked", "status": 403, "count": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = http
        .get(format!(
            "{}/api/v1/namespaces/locked/configmaps/y",
            sb.url()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let status: Value = r.json().await.unwrap();
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
    let mut stream = api
        .watch(&WatchParams::default().timeout(60), "0")
        .await
        .unwrap()
        .boxed();
    // Wait until the sandbox counts the watch as open.
    for _ in 0..200 {
        if sb.stats().open_watches == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(sb.stats().open_watches, 1);
    sb.close_watches();
    assert!(stream.try_next().await.unwrap().is_none());
}

async fn raw(
    sb: &Sandbox,
    method: reqwest::Method,
    path: &str,
    ct: &str,
    body: Vec<u8>,
) -> (u16, Value) {
    let r = reqwest::Client::new()
        .request(method, format!("{}{path}", sb.url()))
        .header("content-type", ct)
        .body(body)
        .send()
        .await
        .unwrap();
    let code = r.status().as_u16();
    let v = r.json::<Value>().await.unwrap_or(Value::Null);
    (code, v)
}

#[tokio::test]
async fn bad_input_gets_the_real_status_and_changes_nothing() {
    use reqwest::Method;
    let (sb, _client) = sandbox().await;
    let before = sb.revision().await;
    let cms = "/api/v1/namespaces/default/configmaps";
    // (method, path, content type, body, expected code, expected reason)
    type Case<'a> = (Method, String, &'a str, Vec<u8>, u16, &'a str);
    let cases: Vec<Case> = vec![
        (
            Method::POST,
            cms.into(),
            "application/json",
            b"{not json".to_vec(),
            400,
            "BadRequest",
        ),
        (
            Method::POST,
            cms.into(),
            "application/json",
            b"[1,2]".to_vec(),
            400,
            "BadRequest",
        ),
        (
            Method::POST,
            cms.into(),
            "application/json",
            br#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"a"}}"#.to_vec(),
            400,
            "BadRequest",
        ),
        (
            Method::POST,
            cms.into(),
            "application/json",
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}}"#.to_vec(),
            422,
            "Invalid",
        ),
        (
            Method::POST,
            cms.into(),
            "application/json",
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}"#.to_vec(),
            422,
            "Invalid",
        ),
        (
            Method::POST,
            cms.into(),
            "application/json",
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"l1","labels":{"bad key":"v"}}}"#.to_vec(),
            422,
            "Invalid",
        ),
        (
            Method::POST,
            cms.into(),
            "application/json",
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"l2","labels":{"k":"bad value!"}}}"#.to_vec(),
            422,
            "Invalid",
        ),
        (
            Method::POST,
            cms.into(),
            "application/json",
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"l3","labels":{"k":"a\u0000b"}}}"#.to_vec(),
            422,
            "Invalid",
        ),
        (
            Method::POST,
            "/api/v1/namespaces/missing/configmaps".into(),
            "application/json",
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}"#.to_vec(),
            404,
            "NotFound",
        ),
        (
            Method::POST,
            "/api/v1/namespaces/default/gizmos".into(),
            "application/json",
            b"{}".to_vec(),
            404,
            "NotFound",
        ),
        (
            Method::POST,
            cms.into(),
            "application/json",
            vec![b' '; 3 * 1024 * 1024 + 1],
            413,
            "RequestEntityTooLarge",
        ),
        (
            Method::PATCH,
            format!("{cms}/a"),
            "text/plain",
            b"{}".to_vec(),
            415,
            "UnsupportedMediaType",
        ),
        (
            Method::GET,
            format!("{cms}?labelSelector=%3D%3D"),
            "application/json",
            vec![],
            400,
            "BadRequest",
        ),
        (
            Method::GET,
            format!("{cms}?continue=garbage"),
            "application/json",
            vec![],
            400,
            "BadRequest",
        ),
        (
            Method::POST,
            format!("{cms}?dryRun=Some"),
            "application/json",
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
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    });
    let (code, _) = raw(
        &sb,
        reqwest::Method::POST,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "application/json",
        serde_json::to_vec(&crd).unwrap(),
    )
    .await;
    assert_eq!(code, 201);
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
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 415),
        "{err:?}"
    );
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

fn api_status(err: kube::Error) -> kube::core::Status {
    match err {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn rv_of<K: kube::Resource>(o: &K) -> u64 {
    o.meta()
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap()
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

    // A second LoadBalancer never gets a port already taken.
    let other = api
        .create(&PostParams::default(), &lb("lb2", json!({})))
        .await
        .unwrap();
    let p = other.spec.unwrap().ports.unwrap()[0].node_port.unwrap();
    assert_ne!(p, allocated);
    assert_ne!(p, 31443);

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
    let kept: Vec<Option<i32>> = out
        .spec
        .unwrap()
        .ports
        .unwrap()
        .iter()
        .map(|p| p.node_port)
        .collect();
    assert_eq!(kept, [Some(allocated), Some(31443)]);

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
    let ports: Vec<Option<i32>> = none
        .spec
        .unwrap()
        .ports
        .unwrap()
        .iter()
        .map(|p| p.node_port)
        .collect();
    assert_eq!(ports, [None, Some(31444)]);
}
