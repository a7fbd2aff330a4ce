//! Protobuf over HTTP, checked with clients the sandbox did not write:
//! kubectl 1.32 (whose `create` generators, `run` and `expose` send
//! protobuf bodies and ask for protobuf answers) and the `k8s-pb` prost
//! bindings (which encode the requests and decode the answers, lists and
//! watch frames here). Bad protobuf is refused with the server's status and
//! message and changes nothing.
//!
//! kubectl must be on PATH (`scripts/test` installs it).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use k8s_pb::api::apps::v1::Deployment;
use k8s_pb::api::core::v1::{ConfigMap, ConfigMapList};
use k8s_pb::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Status, WatchEvent};
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use kube_sandbox::{Config, Sandbox};
use prost::Message;
use serde_json::{Value, json};

const PB: &str = "application/vnd.kubernetes.protobuf";
const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(raw),
        content_encoding: None,
        content_type: None,
    };
    [b"k8s\0".to_vec(), unknown.encode_to_vec()].concat()
}

/// The envelope's kind and raw object.
fn open(body: &[u8]) -> (String, String, Vec<u8>) {
    let rest = body.strip_prefix(b"k8s\0").expect("the protobuf magic");
    let u = Unknown::decode(rest).unwrap();
    let tm = u.type_meta.unwrap();
    (
        tm.api_version.unwrap_or_default(),
        tm.kind.unwrap_or_default(),
        u.raw.unwrap_or_default(),
    )
}

async fn send(
    sb: &Sandbox,
    method: reqwest::Method,
    path: &str,
    content_type: &str,
    accept: Option<&str>,
    body: Vec<u8>,
) -> (u16, String, Vec<u8>) {
    let mut req = reqwest::Client::new()
        .request(method, format!("{}{path}", sb.url()))
        .header("content-type", content_type)
        .body(body);
    if let Some(a) = accept {
        req = req.header("accept", a);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    let ct = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, ct, r.bytes().await.unwrap().to_vec())
}

async fn get_json(sb: &Sandbox, path: &str) -> (u16, Value) {
    let r = reqwest::get(format!("{}{path}", sb.url())).await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

fn configmap(name: &str) -> Vec<u8> {
    let cm = ConfigMap {
        metadata: Some(ObjectMeta {
            name: Some(name.into()),
            labels: [("app".to_string(), "web".to_string())].into(),
            ..Default::default()
        }),
        data: [("color".to_string(), "blue".to_string())].into(),
        binary_data: [("raw".to_string(), vec![0u8, 159, 146, 150])].into(),
        immutable: None,
    };
    envelope("v1", "ConfigMap", cm.encode_to_vec())
}

#[tokio::test]
async fn prost_encoded_creates_and_protobuf_answers_lists_and_watches() {
    let sb = Sandbox::start(Config::default()).await.unwrap();
    // A watch opened before the create sees it as a protobuf frame.
    let watch = reqwest::Client::new()
        .get(format!("{}{CMS}?watch=true", sb.url()))
        .header("accept", format!("{PB}, application/json"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        watch.headers()["content-type"],
        "application/vnd.kubernetes.protobuf;stream=watch"
    );

    let (status, ct, body) = send(
        &sb,
        reqwest::Method::POST,
        CMS,
        PB,
        Some(&format!("{PB}, application/json")),
        configmap("settings"),
    )
    .await;
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    assert_eq!(ct, PB);
    let (api_version, kind, raw) = open(&body);
    assert_eq!((api_version.as_str(), kind.as_str()), ("v1", "ConfigMap"));
    let created = ConfigMap::decode(raw.as_slice()).unwrap();
    let meta = created.metadata.unwrap();
    assert_eq!(meta.name.as_deref(), Some("settings"));
    assert_eq!(meta.namespace.as_deref(), Some("default"));
    assert!(meta.uid.is_some_and(|u| !u.is_empty()));
    assert!(
        meta.creation_timestamp
            .is_some_and(|t| t.seconds.unwrap_or(0) > 0)
    );
    assert_eq!(created.data["color"], "blue");
    assert_eq!(created.binary_data["raw"], vec![0u8, 159, 146, 150]);

    // The JSON view of the same object: JSON stays the default.
    let (status, v) = get_json(&sb, &format!("{CMS}/settings")).await;
    assert_eq!(status, 200);
    assert_eq!(v["data"], json!({"color": "blue"}));
    assert_eq!(v["binaryData"], json!({"raw": "AJ+Slg=="}));
    assert_eq!(v["metadata"]["labels"], json!({"app": "web"}));

    // A list in protobuf.
    let (status, ct, body) = send(&sb, reqwest::Method::GET, CMS, "", Some(PB), Vec::new()).await;
    assert_eq!((status, ct.as_str()), (200, PB));
    let (_, kind, raw) = open(&body);
    assert_eq!(kind, "ConfigMapList");
    let list = ConfigMapList::decode(raw.as_slice()).unwrap();
    assert_eq!(list.items.len(), 1);
    assert!(list.metadata.unwrap().resource_version.is_some());

    // The watch frame: 4-byte length, WatchEvent, enveloped object.
    let mut watch = watch;
    let mut buf = Vec::new();
    while buf.len() < 4 || buf.len() < 4 + u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize
    {
        let chunk = watch.chunk().await.unwrap().expect("a watch frame");
        buf.extend_from_slice(&chunk);
    }
    let len = u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize;
    let ev = WatchEvent::decode(&buf[4..4 + len]).unwrap();
    assert_eq!(ev.r#type.as_deref(), Some("ADDED"));
    let (_, kind, raw) = open(&ev.object.unwrap().raw.unwrap());
    assert_eq!(kind, "ConfigMap");
    assert_eq!(
        ConfigMap::decode(raw.as_slice()).unwrap().data["color"],
        "blue"
    );

    // An error answers a protobuf Status.
    let (status, ct, body) = send(
        &sb,
        reqwest::Method::POST,
        CMS,
        PB,
        Some(PB),
        configmap("settings"),
    )
    .await;
    assert_eq!((status, ct.as_str()), (409, PB));
    let (_, kind, raw) = open(&body);
    assert_eq!(kind, "Status");
    let st = Status::decode(raw.as_slice()).unwrap();
    assert_eq!(st.reason.as_deref(), Some("AlreadyExists"));
    assert_eq!(st.code, Some(409));
    assert_eq!(
        st.message.as_deref(),
        Some("configmaps \"settings\" already exists")
    );
}

#[tokio::test]
async fn a_deployment_keeps_its_values_through_protobuf() {
    let sb = Sandbox::start(Config::default()).await.unwrap();
    let manifest = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "50%", "maxUnavailable": 0}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27",
                    "env": [{"name": "K", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}],
                    "resources": {"limits": {"cpu": "500m"}}}],
                    "volumes": [{"name": "scratch", "emptyDir": {}}]}}}});
    let r = reqwest::Client::new()
        .post(format!(
            "{}/apis/apps/v1/namespaces/default/deployments",
            sb.url()
        ))
        .json(&manifest)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let (status, ct, body) = send(
        &sb,
        reqwest::Method::GET,
        "/apis/apps/v1/namespaces/default/deployments/web",
        "",
        Some(PB),
        Vec::new(),
    )
    .await;
    assert_eq!((status, ct.as_str()), (200, PB));
    let (_, kind, raw) = open(&body);
    assert_eq!(kind, "Deployment");
    let d = Deployment::decode(raw.as_slice()).unwrap();
    let spec = d.spec.unwrap();
    assert_eq!(spec.replicas, Some(0));
    let ru = spec.strategy.unwrap().rolling_update.unwrap();
    assert_eq!(ru.max_surge.unwrap().str_val.as_deref(), Some("50%"));
    let mu = ru.max_unavailable.unwrap();
    assert_eq!((mu.r#type, mu.int_val), (Some(0), Some(0)));
    let pod = spec.template.unwrap().spec.unwrap();
    let c = &pod.containers[0];
    assert_eq!(c.image.as_deref(), Some("nginx:1.27"));
    let cm_ref = c.env[0]
        .value_from
        .clone()
        .unwrap()
        .config_map_key_ref
        .unwrap();
    // Embedded inline in JSON, a message of its own in protobuf.
    assert_eq!(
        cm_ref.local_object_reference.unwrap().name.as_deref(),
        Some("cm")
    );
    assert_eq!(
        c.resources.clone().unwrap().limits["cpu"].string.as_deref(),
        Some("500m")
    );
    let vol = &pod.volumes[0];
    assert!(vol.volume_source.clone().unwrap().empty_dir.is_some());

    // Written back as protobuf with a change: JSON readers see it.
    let mut d2 = Deployment::decode(raw.as_slice()).unwrap();
    d2.spec.as_mut().unwrap().replicas = Some(3);
    let (status, _, body) = send(
        &sb,
        reqwest::Method::PUT,
        "/apis/apps/v1/namespaces/default/deployments/web",
        PB,
        None,
        envelope("apps/v1", "Deployment", d2.encode_to_vec()),
    )
    .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let (_, v) = get_json(&sb, "/apis/apps/v1/namespaces/default/deployments/web").await;
    assert_eq!(v["spec"]["replicas"], 3);
    assert_eq!(
        v["spec"]["strategy"]["rollingUpdate"],
        json!({"maxSurge": "50%", "maxUnavailable": 0})
    );
    assert_eq!(
        v["spec"]["template"]["spec"]["containers"][0]["env"][0]["valueFrom"],
        json!({"configMapKeyRef": {"name": "cm", "key": "k"}})
    );
    assert_eq!(v["metadata"]["generation"], 2);
}

#[tokio::test]
async fn bad_protobuf_is_refused_and_changes_nothing() {
    let sb = Sandbox::start(Config::default()).await.unwrap();
    let before = sb.revision().await;
    let garbage: &[(&[u8], &str)] = &[
        (
            b"k8s\0\x0a\xff",
            "the object provided is unrecognized (must be of type ConfigMap): unexpected EOF (6b3873000aff)",
        ),
        (
            b"k8s\0",
            "the object provided is unrecognized (must be of type ConfigMap): empty body (6b387300)",
        ),
        (
            b"{\"kind\":\"ConfigMap\"}",
            "the object provided is unrecognized (must be of type ConfigMap): provided data does not appear to be a protobuf message, expected prefix [107 56 115 0] (7b226b696e64223a22436f6e6669674d6170227d)",
        ),
    ];
    for (body, message) in garbage {
        let (status, _, out) = send(&sb, reqwest::Method::POST, CMS, PB, None, body.to_vec()).await;
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(status, 400);
        assert_eq!(v["reason"], "BadRequest");
        assert_eq!(v["message"], *message);
    }
    // A ConfigMap's own message cut short inside an intact envelope.
    let mut raw = ConfigMap {
        metadata: Some(ObjectMeta {
            name: Some("cut".into()),
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec();
    raw.truncate(raw.len() - 2);
    let body = envelope("v1", "ConfigMap", raw);
    let (status, _, out) = send(&sb, reqwest::Method::POST, CMS, PB, None, body).await;
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(status, 400);
    assert_eq!(
        v["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: unexpected EOF"
    );
    // A kind the server does not have.
    let (status, _, out) = send(
        &sb,
        reqwest::Method::POST,
        CMS,
        PB,
        None,
        envelope("v1", "Widget", Vec::new()),
    )
    .await;
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(status, 400);
    assert_eq!(
        v["message"],
        "Widget in version \"v1\" cannot be handled as a ConfigMap: no kind \"Widget\" is registered for version \"v1\" in scheme \"pkg/api/legacyscheme/scheme.go:30\""
    );
    // A Secret sent to the ConfigMaps: refused as the same body in JSON is.
    let secret = k8s_pb::api::core::v1::Secret {
        metadata: Some(ObjectMeta {
            name: Some("s".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let (status, _, out) = send(
        &sb,
        reqwest::Method::POST,
        CMS,
        PB,
        None,
        envelope("v1", "Secret", secret.encode_to_vec()),
    )
    .await;
    let (json_status, json_out) = {
        let r = reqwest::Client::new()
            .post(format!("{}{CMS}", sb.url()))
            .json(&json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}))
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json::<Value>().await.unwrap())
    };
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(status, json_status);
    assert_eq!(v, json_out);
    assert_eq!(status, 400, "{v}");

    // Custom resources have no protobuf form: 415 for a body, JSON for an
    // answer when JSON is also accepted, 406 when it is not.
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    let r = reqwest::Client::new()
        .post(format!(
            "{}/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            sb.url()
        ))
        .json(&crd)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let after_crd = sb.revision().await;
    let (status, _, out) = send(
        &sb,
        reqwest::Method::POST,
        widgets,
        PB,
        None,
        envelope("example.com/v1", "Widget", Vec::new()),
    )
    .await;
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(status, 415);
    assert_eq!(v["reason"], "UnsupportedMediaType");
    assert_eq!(
        v["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"
    );
    let (status, ct, _) = send(
        &sb,
        reqwest::Method::GET,
        widgets,
        "",
        Some(&format!("{PB}, application/json")),
        Vec::new(),
    )
    .await;
    assert_eq!((status, ct.as_str()), (200, "application/json"));
    let (status, _, out) = send(&sb, reqwest::Method::GET, widgets, "", Some(PB), Vec::new()).await;
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(status, 406);
    assert_eq!(
        v["message"],
        "only the following media types are accepted: application/json, application/yaml"
    );
    // Tables stay JSON whatever else is accepted.
    let (status, ct, out) = send(
        &sb,
        reqwest::Method::GET,
        CMS,
        "",
        Some(&format!(
            "application/json;as=Table;v=v1;g=meta.k8s.io, {PB}"
        )),
        Vec::new(),
    )
    .await;
    assert_eq!((status, ct.as_str()), (200, "application/json"));
    assert_eq!(
        serde_json::from_slice::<Value>(&out).unwrap()["kind"],
        "Table"
    );

    // Nothing was written but the CRD.
    assert_eq!(after_crd, before + 1);
    assert_eq!(sb.revision().await, after_crd);
    let (_, list) = get_json(&sb, CMS).await;
    assert_eq!(list["items"], json!([]));
}

/// Runs kubectl against the sandbox; (success, stdout, stderr).
fn kubectl(kubeconfig: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("KUBECACHEDIR", kubeconfig.with_extension("cache"))
        .output()
        .expect("kubectl on PATH (scripts/test installs it)");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_run_expose_and_set_image() {
    let sb = Sandbox::start(Config::default()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kubeconfig");
    std::fs::write(&kc, sb.kubeconfig()).unwrap();
    let commands: Vec<Vec<&str>> = vec![
        vec!["create", "namespace", "team-z"],
        vec![
            "create",
            "configmap",
            "cm1",
            "-n",
            "team-z",
            "--from-literal=color=blue",
        ],
        vec![
            "create",
            "secret",
            "generic",
            "s1",
            "-n",
            "team-z",
            "--from-literal=password=hunter2",
        ],
        vec![
            "create",
            "deployment",
            "web",
            "-n",
            "team-z",
            "--image=nginx:1.27",
            "--replicas=2",
            "--port=8080",
        ],
        vec![
            "create",
            "job",
            "j1",
            "-n",
            "team-z",
            "--image=busybox",
            "--",
            "echo",
            "hi",
        ],
        vec![
            "create",
            "cronjob",
            "c1",
            "-n",
            "team-z",
            "--image=busybox",
            "--schedule=*/5 * * * *",
        ],
        vec![
            "create",
            "service",
            "clusterip",
            "svc1",
            "-n",
            "team-z",
            "--tcp=80:8080",
        ],
        vec!["create", "serviceaccount", "sa1", "-n", "team-z"],
        vec![
            "create",
            "role",
            "r1",
            "-n",
            "team-z",
            "--verb=get",
            "--verb=list",
            "--resource=pods",
        ],
        vec![
            "create",
            "rolebinding",
            "rb1",
            "-n",
            "team-z",
            "--role=r1",
            "--serviceaccount=team-z:sa1",
        ],
        vec![
            "create",
            "quota",
            "q1",
            "-n",
            "team-z",
            "--hard=pods=10,requests.cpu=2",
        ],
        vec![
            "create",
            "priorityclass",
            "pc1",
            "--value=1000",
            "--description=team z",
        ],
        vec![
            "run",
            "pod1",
            "-n",
            "team-z",
            "--image=nginx:1.27",
            "--labels=app=pod1",
        ],
        vec![
            "expose",
            "deployment",
            "web",
            "-n",
            "team-z",
            "--port=80",
            "--target-port=8080",
            "--name=web-svc",
        ],
        vec![
            "set",
            "image",
            "deployment/web",
            "-n",
            "team-z",
            "nginx=nginx:1.28",
        ],
    ];
    for args in commands {
        let kc = kc.clone();
        let shown = args.join(" ");
        let args: Vec<String> = args.into_iter().map(str::to_string).collect();
        let (ok, stdout, stderr) = tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            kubectl(&kc, &args)
        })
        .await
        .unwrap();
        assert!(ok, "kubectl {shown}: {stdout}{stderr}");
    }
    let ns = "/api/v1/namespaces/team-z";
    let get = |path: String| {
        let sb = &sb;
        async move {
            let (status, v) = get_json(sb, &path).await;
            assert_eq!(status, 200, "{path}: {v}");
            v
        }
    };
    assert_eq!(get(ns.to_string()).await["status"]["phase"], "Active");
    assert_eq!(
        get(format!("{ns}/configmaps/cm1")).await["data"],
        json!({"color": "blue"})
    );
    assert_eq!(
        get(format!("{ns}/secrets/s1")).await["data"],
        json!({"password": "aHVudGVyMg=="})
    );
    let d = get("/apis/apps/v1/namespaces/team-z/deployments/web".into()).await;
    assert_eq!(d["spec"]["replicas"], 2);
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.28"
    );
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"],
        8080
    );
    let j = get("/apis/batch/v1/namespaces/team-z/jobs/j1".into()).await;
    assert_eq!(
        j["spec"]["template"]["spec"]["containers"][0]["command"],
        json!(["echo", "hi"])
    );
    assert_eq!(j["spec"]["template"]["spec"]["restartPolicy"], "Never");
    let c = get("/apis/batch/v1/namespaces/team-z/cronjobs/c1".into()).await;
    assert_eq!(c["spec"]["schedule"], "*/5 * * * *");
    let s = get(format!("{ns}/services/svc1")).await;
    assert_eq!(s["spec"]["type"], "ClusterIP");
    assert_eq!(s["spec"]["ports"][0]["port"], 80);
    assert_eq!(s["spec"]["ports"][0]["targetPort"], 8080);
    let e = get(format!("{ns}/services/web-svc")).await;
    assert_eq!(e["spec"]["ports"][0]["targetPort"], 8080);
    assert_eq!(e["spec"]["selector"], json!({"app": "web"}));
    get(format!("{ns}/serviceaccounts/sa1")).await;
    let r = get("/apis/rbac.authorization.k8s.io/v1/namespaces/team-z/roles/r1".into()).await;
    assert_eq!(
        r["rules"],
        json!([{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}])
    );
    let rb =
        get("/apis/rbac.authorization.k8s.io/v1/namespaces/team-z/rolebindings/rb1".into()).await;
    assert_eq!(
        rb["subjects"],
        json!([{"kind": "ServiceAccount", "name": "sa1", "namespace": "team-z"}])
    );
    assert_eq!(rb["roleRef"]["name"], "r1");
    let q = get(format!("{ns}/resourcequotas/q1")).await;
    assert_eq!(
        q["spec"]["hard"],
        json!({"pods": "10", "requests.cpu": "2"})
    );
    let pc = get("/apis/scheduling.k8s.io/v1/priorityclasses/pc1".into()).await;
    assert_eq!(pc["value"], 1000);
    assert_eq!(pc["description"], "team z");
    let p = get(format!("{ns}/pods/pod1")).await;
    assert_eq!(p["spec"]["containers"][0]["image"], "nginx:1.27");
    assert_eq!(p["metadata"]["labels"], json!({"app": "pod1"}));

    // kubectl did speak protobuf: its request and the answer.
    let kc2 = kc.clone();
    let (ok, _, log) = tokio::task::spawn_blocking(move || {
        kubectl(&kc2, &["create", "namespace", "team-y", "-v=8"])
    })
    .await
    .unwrap();
    assert!(ok, "{log}");
    // The request's Content-Type and the answer's.
    assert_eq!(
        log.matches("Content-Type: application/vnd.kubernetes.protobuf")
            .count(),
        2,
        "{log}"
    );
    // And reads what it created back in protobuf.
    let kc3 = kc.clone();
    let (ok, out, err) = tokio::task::spawn_blocking(move || {
        kubectl(
            &kc3,
            &[
                "get",
                "configmap",
                "cm1",
                "-n",
                "team-z",
                "-o",
                "jsonpath={.data.color}",
            ],
        )
    })
    .await
    .unwrap();
    assert!(ok, "{err}");
    assert_eq!(out, "blue");
}

/// client-go sends a TokenRequest's status zero-valued (an empty token and
/// a zero timestamp in protobuf, `null` in JSON); the server fills the
/// status and never reads the one sent, so both are answered with a token.
#[tokio::test]
async fn token_requests_with_the_zero_status_client_go_sends_get_a_token() {
    use k8s_pb::api::authentication::v1::{TokenRequest, TokenRequestSpec, TokenRequestStatus};
    use k8s_pb::apimachinery::pkg::apis::meta::v1::Time;

    let sb = Sandbox::start(Config::default()).await.unwrap();
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "builder"}});
    let (code, _, _) = send(
        &sb,
        reqwest::Method::POST,
        "/api/v1/namespaces/default/serviceaccounts",
        "application/json",
        None,
        serde_json::to_vec(&sa).unwrap(),
    )
    .await;
    assert_eq!(code, 201);
    let path = "/api/v1/namespaces/default/serviceaccounts/builder/token";

    let req = TokenRequest {
        metadata: Some(ObjectMeta::default()),
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(1200),
            ..Default::default()
        }),
        status: Some(TokenRequestStatus {
            token: Some(String::new()),
            expiration_timestamp: Some(Time {
                seconds: Some(0),
                nanos: Some(0),
            }),
        }),
    };
    let body = envelope(
        "authentication.k8s.io/v1",
        "TokenRequest",
        req.encode_to_vec(),
    );
    let (code, ct, answer) = send(&sb, reqwest::Method::POST, path, PB, Some(PB), body).await;
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&answer));
    assert_eq!(ct, PB);
    let (api_version, kind, raw) = open(&answer);
    assert_eq!(
        (api_version.as_str(), kind.as_str()),
        ("authentication.k8s.io/v1", "TokenRequest")
    );
    let status = TokenRequest::decode(raw.as_slice())
        .unwrap()
        .status
        .unwrap();
    assert!(status.token.is_some_and(|t| t.split('.').count() == 3));
    assert!(
        status
            .expiration_timestamp
            .and_then(|t| t.seconds)
            .unwrap_or(0)
            > 0
    );

    let req = json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "metadata": {"creationTimestamp": null},
        "spec": {"audiences": null, "expirationSeconds": 1200, "boundObjectRef": null},
        "status": {"token": "", "expirationTimestamp": null},
    });
    let (code, _, answer) = send(
        &sb,
        reqwest::Method::POST,
        path,
        "application/json",
        None,
        serde_json::to_vec(&req).unwrap(),
    )
    .await;
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&answer));
    let v: Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(v["status"]["token"].as_str().unwrap().split('.').count(), 3);
}

/// The server's protobuf decoder has no strict mode: `fieldValidation`
/// does not apply to a protobuf body. A field number the message does not
/// have is dropped silently even under `Strict`, with no warning, while
/// the same request in JSON with an unknown field is refused.
#[tokio::test]
async fn field_validation_does_not_apply_to_protobuf_bodies() {
    let sb = Sandbox::start(Config::default()).await.unwrap();
    // ConfigMap has fields 1 to 4; field 99 (a string) is unknown to it.
    let mut raw = ConfigMap {
        metadata: Some(ObjectMeta {
            name: Some("strict-pb".into()),
            ..Default::default()
        }),
        data: [("k".to_string(), "v".to_string())].into(),
        ..Default::default()
    }
    .encode_to_vec();
    raw.extend_from_slice(&[0x9a, 0x06, 0x01, b'x']);
    let r = reqwest::Client::new()
        .post(format!("{}{CMS}?fieldValidation=Strict", sb.url()))
        .header("content-type", PB)
        .header("accept", "application/json")
        .body(envelope("v1", "ConfigMap", raw))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    assert!(r.headers().get("warning").is_none());
    let stored: Value = r.json().await.unwrap();
    assert_eq!(stored["data"], json!({"k": "v"}));
    let (code, got) = get_json(&sb, &format!("{CMS}/strict-pb")).await;
    assert_eq!(code, 200);
    assert_eq!(got["data"], json!({"k": "v"}));

    // The same under Strict in JSON, with an unknown field: refused.
    let r = reqwest::Client::new()
        .post(format!("{}{CMS}?fieldValidation=Strict", sb.url()))
        .json(&json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "strict-json"}, "data": {"k": "v"}, "extra": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let (code, _) = get_json(&sb, &format!("{CMS}/strict-json")).await;
    assert_eq!(code, 404);

    // An invalid directive is refused for protobuf as for JSON, before
    // the body is read.
    let (code, _, body) = send(
        &sb,
        reqwest::Method::POST,
        &format!("{CMS}?fieldValidation=Sloppy"),
        PB,
        Some("application/json"),
        configmap("sloppy"),
    )
    .await;
    assert_eq!(code, 400, "{}", String::from_utf8_lossy(&body));
    assert!(String::from_utf8_lossy(&body).contains("Invalid field validation directive"));
    let (code, _) = get_json(&sb, &format!("{CMS}/sloppy")).await;
    assert_eq!(code, 404);
}
