//! The writers: server-side apply as field manager `mirra` (and the empty
//! apply that releases an adopted object), deletes with a uid
//! precondition, and the classification of their failures. Every request
//! goes through the controller's [`WriteFence`]: sent only while the
//! leader-election Lease is held with the write timeout left, and
//! cancelled when that timeout ends.
//!
//! What this module must NOT do: read from the server (no GET, ever: every
//! decision was made from the caches), decide what to write, or send a
//! request around the fence.

use std::time::Duration;

use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, Preconditions};
use mirra_mirror::FIELD_MANAGER;
use mirra_runtime::{FenceError, WriteFence};
use serde_json::Value;

/// How one failed write is handled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteFailure {
    /// Worth retrying soon with the namespace's backoff (409, 5xx,
    /// transport errors).
    Transient(String),
    /// The server asked to slow down (429), for this long when it said so
    /// (`Retry-After`, which the API server also puts in the Status as
    /// `details.retryAfterSeconds`). kube's client already retries a 429
    /// several times honouring `Retry-After`; this is what is left when it
    /// gives up.
    Throttled(String, Option<Duration>),
    /// Retrying will not help until something changes (403, 404, 400, 422
    /// without forceRecreate): reported on the item.
    Permanent(String),
    /// 422 Invalid (an immutable field changed).
    Invalid(String),
    /// Not sent because the Lease could lapse first, or cancelled at the
    /// write timeout: requeued with backoff (a replica that lost the Lease
    /// stops its controller anyway).
    Fenced(String),
}

impl WriteFailure {
    /// The message for logs and status.
    pub fn message(&self) -> &str {
        match self {
            WriteFailure::Transient(m)
            | WriteFailure::Throttled(m, _)
            | WriteFailure::Permanent(m)
            | WriteFailure::Invalid(m)
            | WriteFailure::Fenced(m) => m,
        }
    }

    /// The same failure with its message rewritten (values redacted).
    pub fn map_message(self, f: impl FnOnce(&str) -> String) -> WriteFailure {
        match self {
            WriteFailure::Transient(m) => WriteFailure::Transient(f(&m)),
            WriteFailure::Throttled(m, d) => WriteFailure::Throttled(f(&m), d),
            WriteFailure::Permanent(m) => WriteFailure::Permanent(f(&m)),
            WriteFailure::Invalid(m) => WriteFailure::Invalid(f(&m)),
            WriteFailure::Fenced(m) => WriteFailure::Fenced(f(&m)),
        }
    }

    /// A short class for the error metric.
    pub fn class(&self) -> &'static str {
        match self {
            WriteFailure::Transient(_) => "transient",
            WriteFailure::Throttled(..) => "throttled",
            WriteFailure::Permanent(_) => "permanent",
            WriteFailure::Invalid(_) => "invalid",
            WriteFailure::Fenced(_) => "fenced",
        }
    }
}

impl From<FenceError> for WriteFailure {
    fn from(e: FenceError) -> Self {
        WriteFailure::Fenced(e.to_string())
    }
}

/// Classifies the result of a fenced request.
pub fn fenced<T>(r: Result<Result<T, kube::Error>, FenceError>) -> Result<T, WriteFailure> {
    match r {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(classify(&e)),
        Err(f) => Err(f.into()),
    }
}

/// Classifies a client error.
fn classify(e: &kube::Error) -> WriteFailure {
    match e {
        kube::Error::Api(s) => {
            let msg = format!("{} ({}): {}", s.reason, s.code, s.message);
            match s.code {
                409 => WriteFailure::Transient(msg),
                429 => WriteFailure::Throttled(
                    msg,
                    s.details
                        .as_ref()
                        .map(|d| d.retry_after_seconds)
                        .filter(|n| *n > 0)
                        .map(|n| Duration::from_secs(u64::from(n).min(MAX_RETRY_AFTER_SECS))),
                ),
                422 => WriteFailure::Invalid(msg),
                // The API server answers a server-side apply whose body does
                // not fit the kind's schema (an unknown field, duplicate
                // list keys) with 500 and this message: retrying the same
                // body cannot help, and the item must say why.
                500 if s.message.contains(TYPED_PATCH_ERROR) => WriteFailure::Permanent(msg),
                c if c >= 500 => WriteFailure::Transient(msg),
                _ => WriteFailure::Permanent(msg),
            }
        }
        other => WriteFailure::Transient(other.to_string()),
    }
}

/// How the API server's 500 for an apply body that does not fit the schema
/// begins.
const TYPED_PATCH_ERROR: &str = "failed to create typed patch object";

/// What an apply answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The resourceVersion the write produced (empty if the server sent
    /// none), so that the watch's echo of this very write can be
    /// recognised.
    pub version: String,
    /// Whether the object existed before this apply (the server answered
    /// 200, not 201 Created) or its managedFields name a manager other
    /// than mirra's apply: for an object the caches did not hold, mirra
    /// adopted it. The status code is what says so when mirra's forced
    /// apply took over every field the object's creator had set (the
    /// creator's managedFields entry is then gone).
    pub others_had_a_hand: bool,
    /// Whether the server created the object (201).
    pub created: bool,
    /// The object's uid.
    pub uid: String,
}

/// The API of `ar` in `namespace`, or cluster-wide when `namespace` is
/// empty (an object of a cluster-scoped kind).
fn api_for(client: &kube::Client, ar: &ApiResource, namespace: &str) -> Api<DynamicObject> {
    if namespace.is_empty() {
        Api::all_with(client.clone(), ar)
    } else {
        Api::namespaced_with(client.clone(), namespace, ar)
    }
}

/// Server-side applies `body` (forced: the SyncConfig is the source of
/// truth for the fields it sets; fields others set are untouched). With
/// `planned_from`, the resourceVersion of the object the write was
/// planned from, the apply is conditional on it: a write delayed in flight
/// or sent by a paused ex-leader cannot land over a newer version (the
/// server answers 409 and the namespace is planned again).
pub async fn apply(
    fence: &WriteFence,
    client: &kube::Client,
    ar: &ApiResource,
    namespace: &str,
    name: &str,
    body: &Value,
    planned_from: Option<&str>,
) -> Result<Applied, WriteFailure> {
    let api = api_for(client, ar, namespace);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let conditional;
    let body = match planned_from.filter(|v| !v.is_empty()) {
        Some(version) => {
            let mut b = body.clone();
            if let Some(meta) = b.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.insert("resourceVersion".into(), Value::String(version.to_string()));
            }
            conditional = b;
            &conditional
        }
        None => body,
    };
    let (answer, created) = fenced(
        fence
            .send(patch_telling_created(client, &api, name, &params, body))
            .await,
    )?;
    Ok(applied(answer, created))
}

/// What an apply's answer tells.
fn applied(answer: ApplyAnswer, created: bool) -> Applied {
    let meta = answer.metadata;
    Applied {
        created,
        others_had_a_hand: !created
            || meta.managed_fields.iter().flatten().any(|e| {
                !mirra_mirror::marks::is_mirra_apply_entry(
                    e.manager.as_deref(),
                    e.operation.as_deref(),
                )
            }),
        uid: meta.uid.unwrap_or_default(),
        version: meta.resource_version.unwrap_or_default(),
    }
}

/// The part of an apply's answer mirra reads. The answer is the whole
/// object, its managedFields field trees included; parsing only these
/// fields skips building all of it for every write (a SyncConfig edit
/// writes one copy per selected namespace).
#[derive(Debug, serde::Deserialize)]
struct ApplyAnswer {
    metadata: AnswerMeta,
}

#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnswerMeta {
    uid: Option<String>,
    resource_version: Option<String>,
    /// `None` when absent or `null`.
    #[serde(default)]
    managed_fields: Option<Vec<ManagerEntry>>,
}

/// One managedFields entry, without its field tree.
#[derive(Debug, serde::Deserialize)]
struct ManagerEntry {
    manager: Option<String>,
    operation: Option<String>,
}

/// `api.patch` of an apply, also saying whether the server created the
/// object (201) rather than changed an existing one (200), which kube's
/// `Api::patch` does not tell. Error answers become `kube::Error::Api` as
/// there.
async fn patch_telling_created(
    client: &kube::Client,
    api: &Api<DynamicObject>,
    name: &str,
    params: &PatchParams,
    body: &Value,
) -> Result<(ApplyAnswer, bool), kube::Error> {
    let request = kube::core::Request::new(api.resource_url())
        .patch(name, params, &Patch::Apply(body))
        .map_err(kube::Error::BuildRequest)?;
    let response = client.send(request.map(kube::client::Body::from)).await?;
    let status = response.status().as_u16();
    let bytes = response.into_body().collect_bytes().await?;
    if !(200..300).contains(&status) {
        let failure = serde_json::from_slice::<kube::core::Status>(&bytes).unwrap_or_else(|_| {
            kube::core::Status::failure(
                String::from_utf8_lossy(&bytes).trim(),
                "Failed to parse error data",
            )
            .with_code(status)
        });
        return Err(kube::Error::Api(failure.boxed()));
    }
    let object = serde_json::from_slice(&bytes).map_err(kube::Error::SerdeError)?;
    Ok((object, status == 201))
}

/// Lets an adopted object go: a server-side apply of its identity alone,
/// so mirra owns no field of it any more (fields only mirra set, its marks
/// among them, are removed; everything others set stays). Conditional on
/// `planned_from`, as [`apply`] is. A 404 counts as success.
pub async fn release(
    fence: &WriteFence,
    client: &kube::Client,
    ar: &ApiResource,
    namespace: &str,
    name: &str,
    planned_from: Option<&str>,
) -> Result<(), WriteFailure> {
    let api = api_for(client, ar, namespace);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let mut body = serde_json::json!({
        "apiVersion": ar.api_version,
        "kind": ar.kind,
        "metadata": {"name": name, "namespace": namespace},
    });
    if namespace.is_empty()
        && let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.remove("namespace");
    }
    if let Some(version) = planned_from.filter(|v| !v.is_empty()) {
        body["metadata"]["resourceVersion"] = Value::String(version.to_string());
    }
    match fence
        .send(api.patch(name, &params, &Patch::Apply(&body)))
        .await
    {
        Ok(Err(kube::Error::Api(s))) if s.code == 404 => Ok(()),
        other => fenced(other).map(|_| ()),
    }
}

/// Deletes an object only if it is still the one observed (`uid`). A 404
/// counts as success: the object is gone, which is what was wanted.
pub async fn delete(
    fence: &WriteFence,
    client: &kube::Client,
    ar: &ApiResource,
    namespace: &str,
    name: &str,
    uid: &str,
) -> Result<(), WriteFailure> {
    let api = api_for(client, ar, namespace);
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(uid.to_string()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match fence.send(api.delete(name, &params)).await {
        Ok(Err(kube::Error::Api(s))) if s.code == 404 => Ok(()),
        other => fenced(other).map(|_| ()),
    }
}

/// Delay after a 429 when the server gave no usable hint. 1 s is what
/// kube-apiserver's priority-and-fairness answers with by default.
pub const THROTTLE_DELAY: Duration = Duration::from_secs(1);

/// Upper bound on a server's `Retry-After`: a misbehaving proxy asking for
/// hours must not park a namespace that long. 60 s is far above what
/// kube-apiserver asks for.
const MAX_RETRY_AFTER_SECS: u64 = 60;

#[cfg(test)]
mod tests {
    use super::*;

    fn api_error(code: u16, retry_after: Option<u32>) -> kube::Error {
        let mut status = kube::core::Status::failure("slow down", "TooManyRequests");
        status.code = code;
        status.details = retry_after.map(|n| kube::core::response::StatusDetails {
            name: String::new(),
            group: String::new(),
            kind: String::new(),
            uid: String::new(),
            causes: Vec::new(),
            retry_after_seconds: n,
        });
        kube::Error::Api(Box::new(status))
    }

    #[test]
    fn throttling_honours_the_servers_retry_after_within_a_bound() {
        let delay = |e: &kube::Error| match classify(e) {
            WriteFailure::Throttled(_, d) => d,
            other => panic!("not throttled: {other:?}"),
        };
        assert_eq!(
            delay(&api_error(429, Some(3))),
            Some(Duration::from_secs(3))
        );
        assert_eq!(delay(&api_error(429, None)), None);
        assert_eq!(delay(&api_error(429, Some(0))), None);
        assert_eq!(
            delay(&api_error(429, Some(7200))),
            Some(Duration::from_secs(MAX_RETRY_AFTER_SECS))
        );
    }

    #[test]
    fn an_apply_body_outside_the_schema_is_permanent_other_500s_are_not() {
        let mut status = kube::core::Status::failure(
            "failed to create typed patch object (t/c; /v1, Kind=ConfigMap): .spec: field \
             not declared in schema",
            "InternalError",
        );
        status.code = 500;
        let failure = classify(&kube::Error::Api(Box::new(status)));
        assert_eq!(failure.class(), "permanent");
        assert!(
            failure
                .message()
                .contains(".spec: field not declared in schema")
        );
        let mut other = kube::core::Status::failure("etcd timeout", "InternalError");
        other.code = 500;
        assert_eq!(
            classify(&kube::Error::Api(Box::new(other))).class(),
            "transient"
        );
    }

    fn answer(json: &str) -> ApplyAnswer {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn an_apply_answer_tells_its_version_uid_and_other_managers() {
        let object = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a",
            "namespace":"n","uid":"u-1","resourceVersion":"42","managedFields":[
            {"manager":"mirra","operation":"Apply","apiVersion":"v1","fieldsType":"FieldsV1",
             "fieldsV1":{"f:data":{"f:k":{}}}}]},"data":{"k":"v"}}"#;
        let mine = applied(answer(object), true);
        assert_eq!(
            mine,
            Applied {
                version: "42".into(),
                others_had_a_hand: false,
                created: true,
                uid: "u-1".into(),
            }
        );
        // The same answer with 200: the object existed before the apply.
        assert!(applied(answer(object), false).others_had_a_hand);
        let shared = object.replace(
            r#"{"manager":"mirra""#,
            r#"{"manager":"kubectl","operation":"Update"},{"manager":"mirra""#,
        );
        assert!(applied(answer(&shared), true).others_had_a_hand);
        // mirra's name with another operation is somebody else's hand.
        let borrowed = object.replace(r#""operation":"Apply""#, r#""operation":"Update""#);
        assert!(applied(answer(&borrowed), true).others_had_a_hand);
    }

    #[test]
    fn an_apply_answer_without_managed_fields_is_read() {
        let none = applied(answer(r#"{"kind":"ConfigMap","metadata":{}}"#), true);
        assert_eq!((none.version.as_str(), none.uid.as_str()), ("", ""));
        assert!(!none.others_had_a_hand);
        let null = applied(
            answer(r#"{"metadata":{"managedFields":null,"resourceVersion":"7"}}"#),
            true,
        );
        assert_eq!(null.version, "7");
        assert!(!null.others_had_a_hand);
    }

    #[test]
    fn a_malformed_apply_answer_is_an_error_not_a_panic() {
        for bad in [
            "",
            "[]",
            r#"{"kind":"ConfigMap"}"#,
            r#"{"metadata":[]}"#,
            r#"{"metadata":{"managedFields":{}}}"#,
            r#"{"metadata":{"uid":5}}"#,
        ] {
            assert!(serde_json::from_str::<ApplyAnswer>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn failures_are_classified_by_code() {
        assert_eq!(classify(&api_error(409, None)).class(), "transient");
        assert_eq!(classify(&api_error(500, None)).class(), "transient");
        assert_eq!(classify(&api_error(403, None)).class(), "permanent");
        assert_eq!(classify(&api_error(404, None)).class(), "permanent");
        assert_eq!(classify(&api_error(422, None)).class(), "invalid");
    }
}
