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
use kube_sandbox::Sandbox;
use prost::Message;
use reqwest::Method;
use serde_json::json;

use crate::common::{
    Answer, CMS, JSON, create_crd, get_json, post_json, request, send, start, widget_crd,
};

const PB: &str = "application/vnd.kubernetes.protobuf";
/// What kubectl accepts: protobuf, else JSON.
const PB_OR_JSON: &str = "application/vnd.kubernetes.protobuf, application/json";
const DEPLOYMENT: &str = "/apis/apps/v1/namespaces/default/deployments/web";

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

/// A request with a protobuf body, accepting `accept` (anything when
/// `None`).
async fn send_pb(
    sb: &Sandbox,
    method: Method,
    path: &str,
    accept: Option<&str>,
    body: Vec<u8>,
) -> Answer {
    let mut headers = vec![("content-type", PB)];
    headers.extend(accept.map(|a| ("accept", a)));
    request(sb, method, path, &headers, body).await
}

/// A GET accepting `accept`.
async fn get_as(sb: &Sandbox, path: &str, accept: &str) -> Answer {
    request(sb, Method::GET, path, &[("accept", accept)], vec![]).await
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
    let sb = start().await;
    // A watch opened before the create sees it as a protobuf frame.
    let watch = reqwest::Client::new()
        .get(format!("{}{CMS}?watch=true", sb.url()))
        .header("accept", PB_OR_JSON)
        .send()
        .await
        .unwrap();
    assert_eq!(
        watch.headers()["content-type"],
        "application/vnd.kubernetes.protobuf;stream=watch"
    );

    let a = send_pb(
        &sb,
        Method::POST,
        CMS,
        Some(PB_OR_JSON),
        configmap("settings"),
    )
    .await;
    assert_eq!(a.code, 201, "{}", a.text);
    assert_eq!(a.content_type, PB);
    let (api_version, kind, raw) = open(&a.bytes);
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
    let a = get_as(&sb, CMS, PB).await;
    assert_eq!((a.code, a.content_type.as_str()), (200, PB));
    let (_, kind, raw) = open(&a.bytes);
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
    let a = send_pb(&sb, Method::POST, CMS, Some(PB), configmap("settings")).await;
    assert_eq!((a.code, a.content_type.as_str()), (409, PB));
    let (_, kind, raw) = open(&a.bytes);
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
    let sb = start().await;
    let manifest = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "50%", "maxUnavailable": 0}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27",
                    "env": [{"name": "K", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}],
                    "resources": {"limits": {"cpu": "500m"}}}],
                    "volumes": [{"name": "scratch", "emptyDir": {}}]}}}});
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    assert_eq!(post_json(&sb, deployments, &manifest).await.0, 201);
    let a = get_as(&sb, DEPLOYMENT, PB).await;
    assert_eq!((a.code, a.content_type.as_str()), (200, PB));
    let (_, kind, raw) = open(&a.bytes);
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
    let body = envelope("apps/v1", "Deployment", d2.encode_to_vec());
    let a = send_pb(&sb, Method::PUT, DEPLOYMENT, None, body).await;
    assert_eq!(a.code, 200, "{}", a.text);
    let (_, v) = get_json(&sb, DEPLOYMENT).await;
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
    let sb = start().await;
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
        let a = send_pb(&sb, Method::POST, CMS, None, body.to_vec()).await;
        assert_eq!(a.code, 400);
        assert_eq!(a.body["reason"], "BadRequest");
        assert_eq!(a.body["message"], *message);
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
    let a = send_pb(
        &sb,
        Method::POST,
        CMS,
        None,
        envelope("v1", "ConfigMap", raw),
    )
    .await;
    assert_eq!(a.code, 400);
    assert_eq!(
        a.body["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: unexpected EOF"
    );
    // A kind the server does not have.
    let widget = envelope("v1", "Widget", Vec::new());
    let a = send_pb(&sb, Method::POST, CMS, None, widget).await;
    assert_eq!(a.code, 400);
    assert_eq!(
        a.body["message"],
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
    let body = envelope("v1", "Secret", secret.encode_to_vec());
    let a = send_pb(&sb, Method::POST, CMS, None, body).await;
    let as_json = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}});
    let (json_status, json_out) = post_json(&sb, CMS, &as_json).await;
    assert_eq!(a.code, json_status);
    assert_eq!(a.body, json_out);
    assert_eq!(a.code, 400, "{}", a.body);

    // Custom resources have no protobuf form: 415 for a body, JSON for an
    // answer when JSON is also accepted, 406 when it is not.
    create_crd(&sb, &widget_crd()).await;
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let after_crd = sb.revision().await;
    let widget = envelope("example.com/v1", "Widget", Vec::new());
    let a = send_pb(&sb, Method::POST, widgets, None, widget).await;
    assert_eq!(a.code, 415);
    assert_eq!(a.body["reason"], "UnsupportedMediaType");
    assert_eq!(
        a.body["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"
    );
    let a = get_as(&sb, widgets, PB_OR_JSON).await;
    assert_eq!((a.code, a.content_type.as_str()), (200, JSON));
    let a = get_as(&sb, widgets, PB).await;
    assert_eq!(a.code, 406);
    assert_eq!(
        a.body["message"],
        "only the following media types are accepted: application/json, application/yaml"
    );
    // Tables stay JSON whatever else is accepted.
    let table_or_pb = format!("application/json;as=Table;v=v1;g=meta.k8s.io, {PB}");
    let a = get_as(&sb, CMS, &table_or_pb).await;
    assert_eq!((a.code, a.content_type.as_str()), (200, JSON));
    assert_eq!(a.body["kind"], "Table");

    // Nothing was written but the CRD.
    assert_eq!(after_crd, before + 1);
    assert_eq!(sb.revision().await, after_crd);
    let (_, list) = get_json(&sb, CMS).await;
    assert_eq!(list["items"], json!([]));
}

/// Runs kubectl against the sandbox, off the async threads; (success,
/// stdout, stderr).
async fn kubectl(kubeconfig: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    let kubeconfig = kubeconfig.to_path_buf();
    let args: Vec<String> = args.iter().map(|a| (*a).to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let out = Command::new("kubectl")
            .args(&args)
            .env("KUBECONFIG", &kubeconfig)
            .env("KUBECACHEDIR", kubeconfig.with_extension("cache"))
            .output()
            .expect("kubectl on PATH (scripts/test installs it)");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_run_expose_and_set_image() {
    let sb = start().await;
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
        let (ok, stdout, stderr) = kubectl(&kc, &args).await;
        assert!(ok, "kubectl {}: {stdout}{stderr}", args.join(" "));
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
    let (ok, _, log) = kubectl(&kc, &["create", "namespace", "team-y", "-v=8"]).await;
    assert!(ok, "{log}");
    // The request's Content-Type and the answer's.
    assert_eq!(
        log.matches("Content-Type: application/vnd.kubernetes.protobuf")
            .count(),
        2,
        "{log}"
    );
    // And reads what it created back in protobuf.
    let get_cm1 = [
        "get",
        "configmap",
        "cm1",
        "-n",
        "team-z",
        "-o",
        "jsonpath={.data.color}",
    ];
    let (ok, out, err) = kubectl(&kc, &get_cm1).await;
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

    let sb = start().await;
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "builder"}});
    let (code, _) = post_json(&sb, "/api/v1/namespaces/default/serviceaccounts", &sa).await;
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
    let a = send_pb(&sb, Method::POST, path, Some(PB), body).await;
    assert_eq!(a.code, 201, "{}", a.text);
    assert_eq!(a.content_type, PB);
    let (api_version, kind, raw) = open(&a.bytes);
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
    let a = send(&sb, Method::POST, path, JSON, Some(&req)).await;
    assert_eq!(a.code, 201, "{}", a.text);
    assert_eq!(
        a.body["status"]["token"]
            .as_str()
            .unwrap()
            .split('.')
            .count(),
        3
    );
}

/// The server's protobuf decoder has no strict mode: `fieldValidation`
/// does not apply to a protobuf body. A field number the message does not
/// have is dropped silently even under `Strict`, with no warning, while
/// the same request in JSON with an unknown field is refused.
#[tokio::test]
async fn field_validation_does_not_apply_to_protobuf_bodies() {
    let sb = start().await;
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
    let strict = format!("{CMS}?fieldValidation=Strict");
    let body = envelope("v1", "ConfigMap", raw);
    let a = send_pb(&sb, Method::POST, &strict, Some(JSON), body).await;
    assert_eq!(a.code, 201);
    assert!(a.warnings.is_empty());
    assert_eq!(a.body["data"], json!({"k": "v"}));
    let (code, got) = get_json(&sb, &format!("{CMS}/strict-pb")).await;
    assert_eq!(code, 200);
    assert_eq!(got["data"], json!({"k": "v"}));

    // The same under Strict in JSON, with an unknown field: refused.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "strict-json"}, "data": {"k": "v"}, "extra": "x"});
    assert_eq!(post_json(&sb, &strict, &cm).await.0, 400);
    let (code, _) = get_json(&sb, &format!("{CMS}/strict-json")).await;
    assert_eq!(code, 404);

    // An invalid directive is refused for protobuf as for JSON, before
    // the body is read.
    let sloppy = format!("{CMS}?fieldValidation=Sloppy");
    let a = send_pb(&sb, Method::POST, &sloppy, Some(JSON), configmap("sloppy")).await;
    assert_eq!(a.code, 400, "{}", a.text);
    assert!(a.text.contains("Invalid field validation directive"));
    let (code, _) = get_json(&sb, &format!("{CMS}/sloppy")).await;
    assert_eq!(code, 404);
}
