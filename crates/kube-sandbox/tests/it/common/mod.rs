//! Helpers shared by the integration tests: a sandbox and a kube-rs client
//! of it, namespaces and CRDs to work in, raw HTTP requests and their
//! answers, the `Status` of a refused kube-rs call, and JSON comparisons.
//! None of them asserts what a test is about; the few that set up state
//! panic when the setup fails, as `unwrap` would.

// Test fixtures: a failure to set up is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Debug;

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use kube::{Client, Resource};
use kube_sandbox::Sandbox;
use reqwest::Method;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

pub const JSON: &str = "application/json";
pub const MERGE: &str = "application/merge-patch+json";
/// The ConfigMaps of the `default` namespace.
pub const CMS: &str = "/api/v1/namespaces/default/configmaps";
/// The Deployments of the `default` namespace.
pub const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";
/// Where CustomResourceDefinitions are created.
pub const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// A sandbox with the default configuration.
pub async fn start() -> Sandbox {
    Sandbox::start(kube_sandbox::Config::default())
        .await
        .unwrap()
}

/// A kube-rs client of the sandbox, without credentials.
pub fn client(sb: &Sandbox) -> Client {
    Client::try_from(kube::Config::new(sb.url().parse().unwrap())).unwrap()
}

/// A sandbox with the default configuration and a client of it.
pub async fn sandbox() -> (Sandbox, Client) {
    let sb = start().await;
    let client = client(&sb);
    (sb, client)
}

/// Creates the namespace `name`.
pub async fn create_namespace(client: &Client, name: &str) {
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &typed(json!({"metadata": {"name": name}})),
        )
        .await
        .unwrap();
}

/// Creates an object with nothing but its name (a ConfigMap, a
/// ServiceAccount).
pub async fn create_named<K>(api: &Api<K>, name: &str) -> K
where
    K: Clone + DeserializeOwned + serde::Serialize + Debug,
{
    api.create(
        &PostParams::default(),
        &typed(json!({"metadata": {"name": name}})),
    )
    .await
    .unwrap()
}

/// The JSON as the typed object it describes.
pub fn typed<T: DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).unwrap()
}

/// The `Status` of a refused kube-rs call.
pub fn api_status(err: kube::Error) -> kube::core::Status {
    match err {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// An object's resourceVersion as the number it is.
pub fn rv_of<K: Resource>(o: &K) -> u64 {
    o.meta()
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap()
}

/// Whether `have` has every field of `want` with the same value (lists
/// item by item): the real server may add defaults, never change what was
/// sent.
pub fn contains(have: &Value, want: &Value) -> bool {
    match (have, want) {
        (Value::Object(h), Value::Object(w)) => w
            .iter()
            .all(|(k, v)| h.get(k).is_some_and(|hv| contains(hv, v))),
        (Value::Array(h), Value::Array(w)) => {
            h.len() == w.len() && h.iter().zip(w).all(|(a, b)| contains(a, b))
        }
        (h, w) => h == w,
    }
}

/// The events of a watch, as kube-rs decodes them.
pub type Events<K> = BoxStream<'static, kube::Result<WatchEvent<K>>>;

/// A watch of `api` from revision `rv`.
pub async fn watch<K>(api: &Api<K>, params: &WatchParams, rv: &str) -> Events<K>
where
    K: Clone + DeserializeOwned + Debug + Send + 'static,
{
    api.watch(params, rv).await.unwrap().boxed()
}

/// The next event of a watch that must still be open.
pub async fn next_event<K>(stream: &mut Events<K>) -> WatchEvent<K> {
    stream
        .next()
        .await
        .expect("the watch is still open")
        .unwrap()
}

/// The type of a watch event about an object (`ADDED`, `MODIFIED` or
/// `DELETED`) with the object; any other event (a bookmark, an error) as
/// the error.
pub fn object_event<K>(event: WatchEvent<K>) -> Result<(&'static str, K), WatchEvent<K>> {
    match event {
        WatchEvent::Added(o) => Ok(("ADDED", o)),
        WatchEvent::Modified(o) => Ok(("MODIFIED", o)),
        WatchEvent::Deleted(o) => Ok(("DELETED", o)),
        other => Err(other),
    }
}

/// The `Status` of a watch's error event; panics on any other event.
pub fn watch_error<K: Debug>(event: WatchEvent<K>) -> kube::core::Status {
    match event {
        WatchEvent::Error(s) => *s,
        other => panic!("expected an error event, got {other:?}"),
    }
}

/// The minimal CRD of the namespaced kind `Widget` in `example.com/v1`,
/// whose schema keeps whatever fields it is given.
pub fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    })
}

/// Creates a CRD over HTTP; panics unless the sandbox answers 201.
pub async fn create_crd(sb: &Sandbox, crd: &Value) {
    let (code, answer) = post_json(sb, CRDS, crd).await;
    assert_eq!(code, 201, "creating the CRD: {answer}");
}

/// What the sandbox answered a raw HTTP request.
pub struct Answer {
    pub code: u16,
    /// The answer's `Content-Type`, empty when it had none.
    pub content_type: String,
    /// Every `Warning` header, in order.
    pub warnings: Vec<String>,
    pub bytes: Vec<u8>,
    /// The body as text (invalid UTF-8 replaced).
    pub text: String,
    /// The body as JSON: `null` when empty, a string of the text when it is
    /// not JSON.
    pub body: Value,
}

/// A request to the sandbox with `headers` and `body`, sent by a client of
/// its own.
pub async fn request(
    sb: &Sandbox,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Answer {
    let req = reqwest::Client::new().request(method, format!("{}{path}", sb.url()));
    answer(req, headers, body).await
}

/// Sends `req` with `headers` and `body` (none when empty); what the
/// sandbox answered.
pub async fn answer(
    mut req: reqwest::RequestBuilder,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Answer {
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    if !body.is_empty() {
        req = req.body(body);
    }
    let r = req.send().await.unwrap();
    let code = r.status().as_u16();
    let content_type = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let warnings = r
        .headers()
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect();
    let bytes = r.bytes().await.unwrap().to_vec();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(text.clone()))
    };
    Answer {
        code,
        content_type,
        warnings,
        bytes,
        text,
        body,
    }
}

/// The headers of a request whose body is of `content_type` (none when it
/// is empty).
fn content_type_header(content_type: &str) -> Vec<(&str, &str)> {
    if content_type.is_empty() {
        vec![]
    } else {
        vec![("content-type", content_type)]
    }
}

/// A request with a body of `content_type` (none when empty); status code
/// and JSON answer.
pub async fn raw(
    sb: &Sandbox,
    method: Method,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, Value) {
    let a = request(sb, method, path, &content_type_header(content_type), body).await;
    (a.code, a.body)
}

/// A request with a JSON body (or none) sent as `content_type`.
pub async fn send(
    sb: &Sandbox,
    method: Method,
    path: &str,
    content_type: &str,
    body: Option<&Value>,
) -> Answer {
    let bytes = body.map(|b| serde_json::to_vec(b).unwrap());
    request(
        sb,
        method,
        path,
        &content_type_header(content_type),
        bytes.unwrap_or_default(),
    )
    .await
}

/// A request with a JSON body sent as `content_type`; status code and JSON
/// answer.
pub async fn send_json(
    sb: &Sandbox,
    method: Method,
    path: &str,
    content_type: &str,
    body: &Value,
) -> (u16, Value) {
    let a = send(sb, method, path, content_type, Some(body)).await;
    (a.code, a.body)
}

/// A POST of a JSON body as `application/json`; status code and JSON answer.
pub async fn post_json(sb: &Sandbox, path: &str, body: &Value) -> (u16, Value) {
    send_json(sb, Method::POST, path, JSON, body).await
}

/// A GET; status code and JSON answer.
pub async fn get_json(sb: &Sandbox, path: &str) -> (u16, Value) {
    let a = request(sb, Method::GET, path, &[], vec![]).await;
    (a.code, a.body)
}
