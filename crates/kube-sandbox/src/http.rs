//! The HTTP face of the sandbox: parses a request, counts it, applies
//! injected faults, calls the store and writes the answer (JSON, a Table,
//! or a stream of watch events).
//!
//! Everything protocol-shaped lives here (query parameters, content types,
//! status codes); the store never sees HTTP.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use crate::discovery;
use crate::faults::Outcome;
use crate::fields::{self, FieldValidation};
use crate::registry::{Resource, Special};
use crate::route::{ObjectRoute, Route, route};
use crate::semantics;
use crate::state::Shared;
use crate::status::ApiError;
use crate::store::{
    DeleteOptions, Deleted, Event, Filter, PatchKind, Store, WriteOptions, parse_rv,
};

/// The largest request body the real API server accepts (3 MiB).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// Query parameters, first value wins.
#[derive(Debug, Default)]
pub(crate) struct Query(BTreeMap<String, String>);

impl Query {
    fn parse(q: Option<&str>) -> Self {
        let mut m = BTreeMap::new();
        for (k, v) in form_urlencoded::parse(q.unwrap_or_default().as_bytes()) {
            m.entry(k.into_owned()).or_insert_with(|| v.into_owned());
        }
        Query(m)
    }
    pub(crate) fn get(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str)
    }
    pub(crate) fn flag(&self, k: &str) -> bool {
        matches!(self.get(k), Some("true" | "1"))
    }
}

/// A JSON body, ended with a newline as the real server's JSON encoder
/// ends every body it writes.
pub(crate) fn json_response(code: StatusCode, body: Bytes) -> http::Response<Body> {
    let body = if body.ends_with(b"\n") {
        body
    } else {
        let mut b = BytesMut::with_capacity(body.len() + 1);
        b.put_slice(&body);
        b.put_u8(b'\n');
        b.freeze()
    };
    let mut r = http::Response::new(Body::from(body));
    *r.status_mut() = code;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

pub(crate) fn value_response(code: StatusCode, v: &Value) -> http::Response<Body> {
    json_response(code, Bytes::from(serde_json::to_vec(v).unwrap_or_default()))
}

/// A `Status` response for an error.
pub fn error_response(e: &ApiError) -> http::Response<Body> {
    let code = StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = value_response(code, &e.to_status());
    if let Some(s) = e.retry_after
        && let Ok(v) = HeaderValue::from_str(&s.to_string())
    {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

fn verb_of(method: &Method, o: &ObjectRoute, q: &Query) -> &'static str {
    match (method.as_str(), o.name.is_some()) {
        ("GET", true) => "get",
        ("GET", false) if q.flag("watch") => "watch",
        ("GET", false) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        _ => "unknown",
    }
}

/// The default field manager, as the real server derives it from the user
/// agent (`kubectl/v1.32 (linux/amd64)` -> `kubectl`).
fn default_manager(headers: &HeaderMap) -> String {
    headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .and_then(|ua| ua.split('/').next())
        .filter(|s| !s.is_empty())
        .unwrap_or("unknown")
        .to_string()
}

pub(crate) fn wants_table(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| {
            a.split(',')
                .next()
                .is_some_and(|first| first.contains("as=Table"))
        })
}

/// Whether an `Accept` header takes JSON at all.
fn accepts_json(accept: Option<&str>) -> bool {
    accept.is_none_or(|a| {
        a.split(',').any(|e| {
            matches!(
                e.split(';').next().unwrap_or_default().trim(),
                "application/json" | "application/yaml" | "*/*" | "application/*" | ""
            )
        })
    })
}

/// Goes with a write's JSON answer that is the object of the write's own
/// event (the same bytes): its protobuf form is then the one the event's
/// watch frame holds, encoded once for the answer and every watch.
#[derive(Clone)]
struct AnswerOf(Arc<Event>);

/// A write's JSON answer, carrying its event when the answer is that
/// event's object and the client asked for protobuf.
fn write_answer(
    store: &Store,
    code: StatusCode,
    out: Bytes,
    protobuf: bool,
) -> http::Response<Body> {
    let event = if protobuf { store.event_of(&out) } else { None };
    let mut r = json_response(code, out);
    if let Some(e) = event {
        r.extensions_mut().insert(AnswerOf(e));
    }
    r
}

fn protobuf_body(mut parts: http::response::Parts, pb: Bytes) -> http::Response<Body> {
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(crate::protobuf::MEDIA_TYPE),
    );
    parts.headers.remove(header::CONTENT_LENGTH);
    http::Response::from_parts(parts, Body::from(pb))
}

/// A JSON answer (an object, a list, a `Status`) re-encoded as protobuf
/// for a client that asked for it; answers with no protobuf form (a
/// Table, anything not JSON) are left as they are.
async fn as_protobuf(r: http::Response<Body>) -> http::Response<Body> {
    let is_json = r
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == b"application/json");
    if !is_json {
        return r;
    }
    let (mut parts, body) = r.into_parts();
    if let Some(AnswerOf(event)) = parts.extensions.remove::<AnswerOf>()
        && let Some(frame) = event.protobuf_frame()
    {
        return protobuf_body(parts, frame.object());
    }
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return error_response(&ApiError::internal("the answer could not be read"));
    };
    match crate::protobuf::encode_json_bytes(&bytes) {
        Some(pb) => protobuf_body(parts, Bytes::from(pb)),
        None => http::Response::from_parts(parts, Body::from(bytes)),
    }
}

/// A create or update body as JSON: protobuf decoded for a built-in
/// kind, refused with the server's 415 for a custom resource.
fn body_value(res: &Resource, body: &[u8], ct: &str) -> Result<Value, ApiError> {
    if crate::protobuf::is_protobuf(ct) && !body.is_empty() {
        if !res.builtin {
            return Err(ApiError::unsupported_body_format(&[
                "application/json",
                "application/yaml",
            ]));
        }
        return crate::protobuf::decode(body, &res.api_version(), &res.kind);
    }
    parse_body(body, ct)
}

/// Handles one request.
pub async fn handle(shared: Arc<Shared>, req: http::Request<Body>) -> http::Response<Body> {
    let (parts, body) = req.into_parts();
    let q = Query::parse(parts.uri.query());
    let path = parts.uri.path().to_string();
    let routed = {
        let store = shared.store.lock().await;
        route(&path, store.registry())
    };
    let routed = match routed {
        Ok(r) => r,
        Err(e) => {
            shared.count(
                &format!("{} {}", parts.method.as_str().to_lowercase(), path),
                None,
            );
            return error_response(&e);
        }
    };
    // Requests about the sandbox itself are neither counted nor faulted:
    // they are the test's instruments, not traffic.
    match &routed {
        Route::Stats => return value_response(StatusCode::OK, &shared.stats_json()),
        Route::Faults(action) => {
            return crate::faults::handle(&shared, &parts.method, action.as_deref(), body).await;
        }
        _ => {}
    }
    let object_name = match &routed {
        Route::Object(o) => o.name.clone(),
        _ => None,
    };
    let (key, namespace) = match &routed {
        Route::Object(o) => {
            let verb = verb_of(&parts.method, o, &q);
            let mut key = format!("{verb} {}", o.res.qualified());
            if let Some(sub) = &o.subresource {
                key.push('/');
                key.push_str(sub);
            }
            (key, o.namespace.clone())
        }
        _ => (format!("get {path}"), None),
    };
    shared.count(&key, namespace.as_deref());
    // The decision is taken under the faults lock, the injected latency
    // slept without it: one slow request must not stall every other.
    let outcome =
        shared
            .faults
            .lock()
            .await
            .decide(&key, namespace.as_deref(), object_name.as_deref());
    match outcome {
        Outcome::Pass { delay } => {
            if let Some(d) = delay {
                tokio::time::sleep(d).await;
            }
        }
        Outcome::Fail { delay, error } => {
            if let Some(d) = delay {
                tokio::time::sleep(d).await;
            }
            return error_response(&error);
        }
    }
    let body = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(_) => return error_response(&ApiError::too_large(MAX_BODY_BYTES)),
    };
    let host = parts
        .headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1")
        .to_string();
    let aggregated = parts
        .headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(discovery::wants_aggregated);
    match routed {
        Route::Version => value_response(StatusCode::OK, &discovery::version()),
        Route::Health => {
            let mut r = http::Response::new(Body::from("ok"));
            r.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
            r
        }
        Route::CoreVersions | Route::Groups if aggregated => {
            let store = shared.store.lock().await;
            let doc =
                discovery::aggregated(store.registry(), matches!(routed, Route::CoreVersions));
            let mut r = value_response(StatusCode::OK, &doc);
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(discovery::AGGREGATED_CONTENT_TYPE),
            );
            r.headers_mut()
                .insert(header::VARY, HeaderValue::from_static("Accept"));
            r
        }
        Route::CoreVersions => value_response(StatusCode::OK, &discovery::core_versions(&host)),
        Route::Groups => {
            let store = shared.store.lock().await;
            value_response(StatusCode::OK, &discovery::group_list(store.registry()))
        }
        Route::Group(g) => {
            let store = shared.store.lock().await;
            match discovery::group(store.registry(), &g) {
                Some(v) => value_response(StatusCode::OK, &v),
                None => error_response(&ApiError::no_route()),
            }
        }
        Route::ResourceList(g, v) => {
            let store = shared.store.lock().await;
            if store.registry().serves(&g, &v) {
                value_response(
                    StatusCode::OK,
                    &discovery::resource_list(store.registry(), &g, &v),
                )
            } else {
                error_response(&ApiError::no_route())
            }
        }
        Route::OpenApiV2 => error_response(&ApiError::no_route()),
        Route::OpenApiV3 => {
            let store = shared.store.lock().await;
            value_response(
                StatusCode::OK,
                &discovery::openapi_v3_root(store.registry()),
            )
        }
        Route::OpenApiV3Doc(g, v) => {
            let store = shared.store.lock().await;
            match discovery::openapi_v3_doc(store.registry(), &g, &v) {
                Some(doc) => value_response(StatusCode::OK, &doc),
                None => error_response(&ApiError::no_route()),
            }
        }
        Route::Stats | Route::Faults(_) => error_response(&ApiError::no_route()),
        Route::Object(o) => {
            let accept = parts
                .headers
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok());
            let preference = crate::protobuf::prefers_protobuf(accept);
            // Custom resources have no protobuf form: JSON when the client
            // also takes it, 406 when it takes protobuf only.
            if !o.res.builtin && preference == Some(true) && !accepts_json(accept) {
                return error_response(&ApiError::not_acceptable(&[
                    "application/json",
                    "application/yaml",
                ]));
            }
            let protobuf =
                o.res.builtin && preference == Some(true) && !wants_table(&parts.headers);
            let watching = parts.method == Method::GET && o.name.is_none() && q.flag("watch");
            let r = match object(shared, &parts.method, &parts.headers, &q, o, body, protobuf).await
            {
                Ok(r) => r,
                Err(e) => error_response(&e),
            };
            if protobuf && !watching {
                as_protobuf(r).await
            } else {
                r
            }
        }
    }
}

fn filter_from(
    q: &Query,
    res: &crate::registry::Resource,
    ns: Option<&str>,
) -> Result<Filter, ApiError> {
    let fields = q
        .get("fieldSelector")
        .filter(|s| !s.is_empty())
        .map(semantics::parse_fields)
        .transpose()?;
    if let Some(sel) = &fields {
        semantics::check_fields(sel, res)?;
    }
    Ok(Filter {
        namespace: ns.map(str::to_string),
        labels: q
            .get("labelSelector")
            .filter(|s| !s.is_empty())
            .map(semantics::parse_labels)
            .transpose()?,
        fields,
    })
}

pub(crate) fn parse_body(body: &[u8], content_type: &str) -> Result<Value, ApiError> {
    if body.is_empty() {
        return Err(ApiError::bad_request("the body of the request was empty"));
    }
    // A body declared as YAML is decoded as YAML and its errors reported
    // as the real server's YAML decoder words them.
    if content_type.split(';').next().map(str::trim) == Some("application/yaml") {
        return match serde_yaml::from_slice::<Value>(body) {
            Ok(v) if v.is_object() => Ok(v),
            Ok(_) => Err(ApiError::bad_request(
                "couldn't get version/kind; json parse error: the body is not a YAML mapping",
            )),
            Err(e) => Err(ApiError::bad_request(format!(
                "error converting YAML to JSON: {e}"
            ))),
        };
    }
    match crate::json::parse(body) {
        Ok(v) => Ok(v),
        // kubectl and other clients may send YAML when asked to.
        Err(json_err) => serde_yaml::from_slice::<Value>(body)
            .ok()
            .filter(Value::is_object)
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "couldn't get version/kind; json parse error: {json_err}"
                ))
            }),
    }
}

pub(crate) fn dry_run(q: &Query) -> Result<bool, ApiError> {
    match q.get("dryRun") {
        None | Some("") => Ok(false),
        Some("All") => Ok(true),
        Some(other) => Err(ApiError::bad_request(format!(
            "Invalid dry run value: {other:?}: supported values: \"All\""
        ))),
    }
}

pub(crate) fn field_validation(q: &Query) -> Result<FieldValidation, ApiError> {
    FieldValidation::parse(q.get("fieldValidation")).ok_or_else(|| {
        ApiError::bad_request(format!(
            "Invalid field validation directive: {:?}: must be one of Ignore, Warn, Strict",
            q.get("fieldValidation").unwrap_or_default()
        ))
    })
}

/// Drops the unknown fields of a body (a whole object, or a patch of the
/// object's shape) as `fieldValidation` says; returns the `Warning` headers
/// to send, `None` when the body had no unknown field (and is unchanged).
/// A patch of a custom resource is left as it is (the store prunes the
/// patched object by the CRD's schema); only its warnings or refusal come
/// from here.
pub(crate) fn check_fields(
    res: &Resource,
    body: &mut Value,
    validation: FieldValidation,
    whole_object: bool,
) -> Result<Option<Vec<String>>, ApiError> {
    let unknown = if res.custom && !whole_object {
        fields::unknown_in_custom_patch(res, body)
    } else {
        match fields::drop_unknown(res, body) {
            Ok(unknown) => unknown,
            // A whole object of the wrong types is refused by the decoder; a
            // patch is judged once applied (decode_error::patch_error).
            Err(message) if whole_object => return Err(ApiError::bad_request(message)),
            Err(_) => Vec::new(),
        }
    };
    if unknown.is_empty() {
        return Ok(None);
    }
    match validation {
        FieldValidation::Strict => {
            let message = fields::strict_message(&unknown);
            // A create or update is refused by the decoder, which says what
            // it was decoding.
            Err(ApiError::bad_request(if whole_object {
                format!(
                    "{kind} in version {version:?} cannot be handled as a {kind}: {message}",
                    kind = res.kind,
                    version = res.version
                )
            } else {
                message
            }))
        }
        FieldValidation::Warn => Ok(Some(unknown.iter().map(|f| fields::warning(f)).collect())),
        FieldValidation::Ignore => Ok(Some(Vec::new())),
    }
}

pub(crate) fn with_warnings(
    mut r: http::Response<Body>,
    warnings: &[String],
) -> http::Response<Body> {
    for w in warnings {
        if let Ok(v) = HeaderValue::from_str(w) {
            r.headers_mut().append(header::WARNING, v);
        }
    }
    r
}

pub(crate) fn write_options(
    q: &Query,
    headers: &HeaderMap,
    status: bool,
) -> Result<WriteOptions, ApiError> {
    field_validation(q)?;
    Ok(WriteOptions {
        dry_run: dry_run(q)?,
        manager: q
            .get("fieldManager")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .unwrap_or_else(|| default_manager(headers)),
        force: q.flag("force"),
        status,
    })
}

/// Unknown fields in a patch of a built-in kind or a custom resource (by
/// its schema). A merge or strategic
/// patch has the object's shape, so its unknown fields are dropped (or
/// refused) like a body's; a server-side apply fails on any, whatever
/// `fieldValidation` says. JSON patches are not looked into.
fn check_patch_fields(
    res: &Resource,
    ns: &str,
    name: &str,
    kind: PatchKind,
    body: Bytes,
    q: &Query,
) -> Result<(Bytes, Vec<String>), ApiError> {
    let validation = field_validation(q)?;
    match kind {
        PatchKind::Merge | PatchKind::Strategic => {
            // A body that is not JSON is refused by the store, as before.
            let Ok(mut v) = crate::json::parse(&body) else {
                return Ok((body, Vec::new()));
            };
            match check_fields(res, &mut v, validation, false)? {
                // Nothing dropped: the patch goes on as it came.
                None => Ok((body, Vec::new())),
                Some(warnings) => {
                    let body = Bytes::from(serde_json::to_vec(&v).unwrap_or_default());
                    Ok((body, warnings))
                }
            }
        }
        PatchKind::Apply => {
            let Ok(mut v) = semantics::parse_apply_body(&body) else {
                return Ok((body, Vec::new()));
            };
            let unknown = fields::drop_unknown(res, &mut v).unwrap_or_default();
            if unknown.is_empty() {
                Ok((body, Vec::new()))
            } else {
                Err(ApiError::internal(fields::apply_message(
                    res, ns, name, &unknown,
                )))
            }
        }
        PatchKind::Json => Ok((body, Vec::new())),
    }
}

async fn object(
    shared: Arc<Shared>,
    method: &Method,
    headers: &HeaderMap,
    q: &Query,
    o: ObjectRoute,
    body: Bytes,
    protobuf: bool,
) -> Result<http::Response<Body>, ApiError> {
    let res = o.res.clone();
    // Kinds and subresources the registries answer without storing
    // (reviews, component health, the pods' own subresources).
    match res.special {
        Special::Review => {
            return crate::review::serve(&shared, method, headers, q, &o, body).await;
        }
        Special::ComponentStatus => {
            return crate::component_status::serve(shared, method, headers, q, &o).await;
        }
        _ => {}
    }
    if let Some(sub) = o.subresource.as_deref()
        && crate::subresources::serves(&res, sub)
    {
        return crate::subresources::serve(shared, method, headers, q, &o, body).await;
    }
    let status_sub = match o.subresource.as_deref() {
        None => false,
        Some("status") if res.status_subresource => true,
        Some("scale") if res.scale_subresource => {
            return scale(shared, method, headers, q, &o, body).await;
        }
        Some("finalize") if res.plural == "namespaces" && res.group.is_empty() => false,
        Some(_) => return Err(ApiError::no_route()),
    };
    if res.namespaced && o.namespace.is_none() && o.name.is_some() {
        return Err(ApiError::no_route());
    }
    let ns = o.namespace.clone().unwrap_or_default();
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    match (method.as_str(), o.name.as_deref()) {
        ("GET", Some(name)) => {
            let store = shared.store.lock().await;
            if wants_table(headers) {
                // Printed from the stored form, whatever version is asked.
                let obj = store.get(&store.storage_of(&res), &ns, name)?;
                let v: Value = crate::json::parse(&obj).unwrap_or(Value::Null);
                return Ok(value_response(
                    StatusCode::OK,
                    &crate::table::table(&res, &[v], store.revision(), None),
                ));
            }
            let obj = store.get(&res, &ns, name)?;
            Ok(json_response(StatusCode::OK, obj))
        }
        ("GET", None) if q.flag("watch") => watch(shared, headers, q, o, protobuf).await,
        ("GET", None) => {
            let filter = filter_from(q, &o.res, o.namespace.as_deref())?;
            let limit = q.get("limit").filter(|s| !s.is_empty()).map(|l| {
                l.parse::<usize>()
                    .map_err(|_| ApiError::bad_request(format!("invalid limit {l:?}")))
            });
            let limit = limit.transpose()?;
            if let Some(rv) = q.get("resourceVersion").filter(|s| !s.is_empty()) {
                parse_rv(rv)?;
            }
            let store = shared.store.lock().await;
            let table = wants_table(headers);
            let read_as = if table {
                store.storage_of(&res)
            } else {
                res.clone()
            };
            let page = store.list(&read_as, &filter, limit, q.get("continue"))?;
            if table {
                let items: Vec<Value> = page
                    .items
                    .iter()
                    .filter_map(|b| crate::json::parse(b).ok())
                    .collect();
                let t = crate::table::table(&res, &items, page.rv, page.continue_token.as_deref());
                return Ok(value_response(StatusCode::OK, &t));
            }
            let mut out = BytesMut::with_capacity(
                128 + page.items.iter().map(Bytes::len).sum::<usize>() + page.items.len(),
            );
            let mut meta = json!({"resourceVersion": page.rv.to_string()});
            if let Some(c) = &page.continue_token {
                meta["continue"] = json!(c);
                meta["remainingItemCount"] = json!(page.remaining);
            }
            out.put_slice(
                format!(
                    "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{},\"items\":[",
                    json!(res.list_kind),
                    json!(res.api_version()),
                    meta
                )
                .as_bytes(),
            );
            for (i, item) in page.items.iter().enumerate() {
                if i > 0 {
                    out.put_u8(b',');
                }
                out.put_slice(item);
            }
            out.put_slice(b"]}");
            Ok(json_response(StatusCode::OK, out.freeze()))
        }
        ("POST", None) => {
            if res.namespaced && o.namespace.is_none() {
                return Err(ApiError::method_not_allowed("create", &res.plural));
            }
            let opts = write_options(q, headers, false)?;
            let mut v = body_value(&res, &body, ct)?;
            let warnings =
                check_fields(&res, &mut v, field_validation(q)?, true)?.unwrap_or_default();
            let mut store = shared.store.lock().await;
            let out = store.create(&res, &ns, v, &opts)?;
            let r = write_answer(&store, StatusCode::CREATED, out, protobuf);
            drop(store);
            Ok(with_warnings(r, &warnings))
        }
        ("PUT", Some(name)) => {
            let opts = write_options(q, headers, status_sub)?;
            let mut v = body_value(&res, &body, ct)?;
            let warnings =
                check_fields(&res, &mut v, field_validation(q)?, true)?.unwrap_or_default();
            let mut store = shared.store.lock().await;
            let out = store.update(&res, &ns, name, v, &opts)?;
            let r = write_answer(&store, StatusCode::OK, out, protobuf);
            drop(store);
            Ok(with_warnings(r, &warnings))
        }
        ("PATCH", Some(name)) => {
            let opts = write_options(q, headers, status_sub)?;
            let ct = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default();
            let kind = match ct.split(';').next().unwrap_or_default().trim() {
                "application/merge-patch+json" => PatchKind::Merge,
                "application/json-patch+json" => PatchKind::Json,
                "application/strategic-merge-patch+json" => PatchKind::Strategic,
                "application/apply-patch+yaml"
                | "application/apply-patch+json"
                | "application/apply-patch+cbor" => PatchKind::Apply,
                other => return Err(ApiError::unsupported_media_type(other)),
            };
            if body.is_empty() {
                return Err(ApiError::bad_request("the body of the request was empty"));
            }
            let (body, warnings) = check_patch_fields(&res, &ns, name, kind, body, q)?;
            let mut store = shared.store.lock().await;
            let existed = store.get(&res, &ns, name).is_ok();
            if matches!(kind, PatchKind::Merge | PatchKind::Json)
                && res.builtin
                && let Ok(old) = store.get_value(&res, &ns, name)
                && let Some(e) = crate::decode_error::patch_error(&res, &old, kind, &body)
            {
                return Err(e);
            }
            let out = store.patch(&res, &ns, name, kind, &body, &opts)?;
            let code = if existed {
                StatusCode::OK
            } else {
                StatusCode::CREATED
            };
            let r = write_answer(&store, code, out, protobuf);
            drop(store);
            Ok(with_warnings(r, &warnings))
        }
        ("DELETE", Some(name)) => {
            let opts = delete_options(q, &body, ct)?;
            let mut store = shared.store.lock().await;
            let out = store.delete(&res, &ns, name, &opts)?;
            // Kinds whose registry returns the deleted object answer it
            // even when it is gone at once; the others answer a Status.
            Ok(match out {
                Deleted::Gone { status, .. } if !res.returns_deleted => {
                    value_response(StatusCode::OK, &status)
                }
                Deleted::Gone { object, .. } => {
                    write_answer(&store, StatusCode::OK, object, protobuf)
                }
                Deleted::Pending(obj) => write_answer(&store, StatusCode::OK, obj, protobuf),
            })
        }
        ("DELETE", None) => {
            // The real server serves only list and watch on the
            // all-namespaces path of a namespaced resource; a bulk delete
            // must name its namespace.
            if (res.namespaced && o.namespace.is_none()) || !res.deletes_collections() {
                return Err(ApiError::method_not_allowed(
                    "deletecollection",
                    &res.plural,
                ));
            }
            let opts = delete_options(q, &body, ct)?;
            let filter = filter_from(q, &o.res, o.namespace.as_deref())?;
            let items = shared
                .store
                .lock()
                .await
                .delete_collection(&res, &filter, &opts)?;
            let mut out = BytesMut::new();
            out.put_slice(
                format!(
                    "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{{}},\"items\":[",
                    json!(res.list_kind),
                    json!(res.api_version())
                )
                .as_bytes(),
            );
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.put_u8(b',');
                }
                out.put_slice(item);
            }
            out.put_slice(b"]}");
            Ok(json_response(StatusCode::OK, out.freeze()))
        }
        _ => Err(ApiError::method_not_allowed(method.as_str(), &res.plural)),
    }
}

/// `/scale` of a workload: an `autoscaling/v1` Scale read from and
/// written to the object's `spec.replicas`.
async fn scale(
    shared: Arc<Shared>,
    method: &Method,
    headers: &HeaderMap,
    q: &Query,
    o: &ObjectRoute,
    body: Bytes,
) -> Result<http::Response<Body>, ApiError> {
    let res = &o.res;
    let Some(name) = o.name.as_deref() else {
        return Err(ApiError::no_route());
    };
    let ns = o.namespace.clone().unwrap_or_default();
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let mut store = shared.store.lock().await;
    let current = store.get_value(res, &ns, name)?;
    let current_scale = crate::kinds::scale_of(res, &current);
    let wanted = match method.as_str() {
        "GET" if wants_table(headers) => {
            return Ok(value_response(
                StatusCode::OK,
                &crate::table::scale_table(&current_scale, store.revision()),
            ));
        }
        "GET" => return Ok(value_response(StatusCode::OK, &current_scale)),
        "PUT" if crate::protobuf::is_protobuf(&ct) && !body.is_empty() => {
            crate::protobuf::decode(&body, "autoscaling/v1", "Scale")?
        }
        "PUT" => parse_body(&body, &ct)?,
        "PATCH" => match ct.split(';').next().unwrap_or_default().trim() {
            "application/merge-patch+json" => semantics::merge_patch(&current_scale, &body)?,
            "application/json-patch+json" => semantics::json_patch(&current_scale, &body)?,
            "application/strategic-merge-patch+json" => {
                semantics::strategic_patch(&current_scale, &body)?
            }
            other => return Err(ApiError::unsupported_media_type(other)),
        },
        _ => return Err(ApiError::method_not_allowed(method.as_str(), &res.plural)),
    };
    let replicas = crate::kinds::scale_replicas(res, name, &wanted)?;
    crate::store::check_resource_version(res, name, &wanted, &current)?;
    let opts = write_options(q, headers, false)?;
    let mut updated = current;
    updated["spec"]["replicas"] = json!(replicas);
    let out = store.update(res, &ns, name, updated, &opts)?;
    let v: Value = crate::json::parse(&out).unwrap_or(Value::Null);
    Ok(value_response(
        StatusCode::OK,
        &crate::kinds::scale_of(res, &v),
    ))
}

fn delete_options(q: &Query, body: &[u8], ct: &str) -> Result<DeleteOptions, ApiError> {
    let mut opts = DeleteOptions {
        dry_run: dry_run(q)?,
        ..Default::default()
    };
    if !body.is_empty() {
        // Typed Go clients send their DeleteOptions as protobuf.
        let v: Value = if crate::protobuf::is_protobuf(ct) {
            crate::protobuf::decode(body, "meta.k8s.io/v1", "DeleteOptions")?
        } else {
            crate::json::parse(body)
                .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {e}")))?
        };
        if !v.is_object() {
            return Err(ApiError::bad_request(
                "invalid DeleteOptions: not an object",
            ));
        }
        opts.uid = v
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_string);
        opts.resource_version = v
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string);
        if v.get("dryRun")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|x| x == "All"))
        {
            opts.dry_run = true;
        }
    }
    Ok(opts)
}

fn event_line(kind: &str, object: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(object.len() + 32);
    b.put_slice(b"{\"type\":\"");
    b.put_slice(kind.as_bytes());
    b.put_slice(b"\",\"object\":");
    b.put_slice(object);
    b.put_slice(b"}\n");
    b.freeze()
}

/// One watch event in the stream's format: a JSON line, or a protobuf
/// frame.
fn event(protobuf: bool, kind: &str, object: &[u8]) -> Bytes {
    if protobuf {
        return crate::protobuf::Frame::of_json(kind, object)
            .map(|f| f.frame())
            .unwrap_or_default();
    }
    event_line(kind, object)
}

fn bookmark(res: &crate::registry::Resource, rv: u64, initial_end: bool, protobuf: bool) -> Bytes {
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    let obj = json!({"kind": res.kind, "apiVersion": res.api_version(), "metadata": meta});
    if protobuf {
        return crate::protobuf::watch_frame("BOOKMARK", &obj).unwrap_or_default();
    }
    event_line("BOOKMARK", &serde_json::to_vec(&obj).unwrap_or_default())
}

async fn watch(
    shared: Arc<Shared>,
    headers: &HeaderMap,
    q: &Query,
    o: ObjectRoute,
    protobuf: bool,
) -> Result<http::Response<Body>, ApiError> {
    let filter = filter_from(q, &o.res, o.namespace.as_deref())?;
    let res = o.res.clone();
    let send_initial = q.flag("sendInitialEvents");
    let rv = match q
        .get("resourceVersion")
        .filter(|s| !s.is_empty() && *s != "0")
    {
        Some(s) if !send_initial => Some(parse_rv(s)?),
        _ => None,
    };
    let bookmarks = q.flag("allowWatchBookmarks");
    let timeout = q
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map(Duration::from_secs)
        // The real server caps watches at its --min-request-timeout range;
        // 30 minutes keeps forgotten watches from living forever.
        .unwrap_or(Duration::from_secs(1800));
    let table = wants_table(headers);
    let start = {
        let store = shared.store.lock().await;
        store.watch(&res, &filter, rv)
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(256);
    let mut closed = shared.watch_closer.subscribe();
    let bookmark_every = shared.config.bookmark_interval;
    shared.watch_opened();
    let guard_shared = shared.clone();
    match start {
        Err(e) if e.code == 410 => {
            // A too-old revision is reported inside the stream, as the
            // real server does, so clients re-list.
            let line = event(
                protobuf,
                "ERROR",
                &serde_json::to_vec(&e.to_status()).unwrap_or_default(),
            );
            let _ = tx.send(Ok(line)).await;
            shared.watch_closed();
        }
        Err(e) => {
            shared.watch_closed();
            return Err(e);
        }
        Ok(mut start) => {
            tokio::spawn(async move {
                let _guard = WatchGuard(guard_shared);
                let render = |kind: &str, obj: &Bytes| -> Bytes {
                    if table {
                        let v: Value = crate::json::parse(obj).unwrap_or(Value::Null);
                        let t = crate::table::table(&res, &[v], 0, None);
                        event_line(kind, &serde_json::to_vec(&t).unwrap_or_default())
                    } else {
                        // Events carry the stored form; a converted view
                        // answers its own.
                        event(
                            protobuf,
                            kind,
                            &crate::convert::bytes_to_view(&res, obj.clone()),
                        )
                    }
                };
                // Every protobuf watch of a stored-version resource sends an
                // unchanged event's same frame: it is encoded once (or was,
                // for the answer of the write that made the event).
                let send_form = |e: &Event, kind: &str, obj: &Bytes| -> Bytes {
                    if protobuf
                        && res.stored_as.is_none()
                        && kind == e.kind.as_str()
                        && obj.as_ptr() == e.object.as_ptr()
                        && obj.len() == e.object.len()
                    {
                        return e
                            .protobuf_frame()
                            .map(crate::protobuf::Frame::frame)
                            .unwrap_or_default();
                    }
                    render(kind, obj)
                };
                let mut last = start.rv;
                let mut max_sent = 0u64;
                for e in &start.initial {
                    max_sent = max_sent.max(e.rv);
                    let Some((kind, object)) = filter.deliver(e) else {
                        continue;
                    };
                    if tx
                        .send(Ok(send_form(e, kind.as_str(), &object)))
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
                if send_initial
                    && bookmarks
                    && tx
                        .send(Ok(bookmark(&res, last, true, protobuf)))
                        .await
                        .is_err()
                {
                    return;
                }
                let deadline = tokio::time::sleep(timeout);
                tokio::pin!(deadline);
                let mut ticker = tokio::time::interval(bookmark_every);
                ticker.reset();
                loop {
                    tokio::select! {
                        _ = &mut deadline => return,
                        _ = closed.changed() => return,
                        _ = ticker.tick(), if bookmarks => {
                            if tx.send(Ok(bookmark(&res, last, false, protobuf))).await.is_err() {
                                return;
                            }
                        }
                        ev = start.rx.recv() => match ev {
                            Ok(e) => {
                                last = last.max(e.rv);
                                // Events already replayed from history are skipped.
                                if e.rv <= max_sent || *e.resource != *res.qualified() {
                                    continue;
                                }
                                let Some((kind, object)) = filter.deliver(&e) else {
                                    continue;
                                };
                                if tx.send(Ok(send_form(&e, kind.as_str(), &object))).await.is_err() {
                                    return;
                                }
                            }
                            // A watcher that fell behind is cut off; it
                            // resumes from its last revision.
                            Err(RecvError::Lagged(_)) | Err(RecvError::Closed) => return,
                        }
                    }
                }
            });
        }
    }
    let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
    let mut r = http::Response::new(Body::from_stream(stream));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(if protobuf {
            crate::protobuf::WATCH_MEDIA_TYPE
        } else {
            "application/json"
        }),
    );
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    Ok(r)
}

struct WatchGuard(Arc<Shared>);

impl Drop for WatchGuard {
    fn drop(&mut self) {
        self.0.watch_closed();
    }
}

#[cfg(test)]
mod tests {
    //! A protobuf write's answer and its event's watch frame are encoded
    //! once and shared; these tests hold the shared bytes equal to a fresh
    //! encoding of the same JSON, frame by frame and answer by answer.

    use super::*;
    use crate::protobuf::{MEDIA_TYPE as PB, decode, encode};
    use crate::{Config, Sandbox};
    use k8s_pb::apimachinery::pkg::apis::meta::v1::WatchEvent;
    use k8s_pb::apimachinery::pkg::runtime::RawExtension;
    use prost::Message;

    const SVCS: &str = "/api/v1/namespaces/default/services";

    /// A write answered in protobuf: the status and the body.
    async fn write(sb: &Sandbox, method: Method, path: &str, ct: &str, body: Value) -> Bytes {
        let r = reqwest::Client::new()
            .request(method, format!("{}{path}", sb.url()))
            .header("content-type", ct)
            .header("accept", format!("{PB}, application/json"))
            .body(serde_json::to_vec(&body).unwrap())
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        assert_eq!(r.headers()["content-type"], PB);
        let b = r.bytes().await.unwrap();
        assert!(matches!(status, 200 | 201), "{status}");
        b
    }

    async fn open_watch(sb: &Sandbox, query: &str, protobuf: bool) -> reqwest::Response {
        let mut req = reqwest::Client::new().get(format!("{}{SVCS}?watch=true{query}", sb.url()));
        if protobuf {
            req = req.header("accept", format!("{PB}, application/json"));
        }
        req.send().await.unwrap()
    }

    /// The next `n` frames of a protobuf watch, each whole with its length.
    async fn frames(w: &mut reqwest::Response, n: usize) -> Vec<Vec<u8>> {
        let mut pending = Vec::new();
        let mut out = Vec::new();
        while out.len() < n {
            let chunk = tokio::time::timeout(Duration::from_secs(60), w.chunk())
                .await
                .expect("a frame")
                .unwrap()
                .expect("the stream goes on");
            pending.extend_from_slice(&chunk);
            while pending.len() >= 4 {
                let len = u32::from_be_bytes([pending[0], pending[1], pending[2], pending[3]]);
                let end = 4 + len as usize;
                if pending.len() < end {
                    break;
                }
                out.push(pending.drain(..end).collect());
            }
        }
        out
    }

    /// The next `n` events of a JSON watch: their type and object.
    async fn lines(w: &mut reqwest::Response, n: usize) -> Vec<(String, Value)> {
        let mut pending = Vec::new();
        let mut out = Vec::new();
        while out.len() < n {
            let chunk = tokio::time::timeout(Duration::from_secs(60), w.chunk())
                .await
                .expect("an event")
                .unwrap()
                .expect("the stream goes on");
            pending.extend_from_slice(&chunk);
            while let Some(at) = pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = pending.drain(..=at).collect();
                let mut e: Value = serde_json::from_slice(&line).unwrap();
                out.push((e["type"].as_str().unwrap().to_string(), e["object"].take()));
            }
        }
        out
    }

    /// A frame as a fresh, independent encoding makes it: the object
    /// encoded from its JSON, wrapped by prost's `WatchEvent`.
    fn fresh_frame(kind: &str, object: &Value) -> Vec<u8> {
        let event = WatchEvent {
            r#type: Some(kind.to_string()),
            object: Some(RawExtension {
                raw: Some(encode(object).unwrap()),
            }),
        };
        let body = event.encode_to_vec();
        [(body.len() as u32).to_be_bytes().to_vec(), body].concat()
    }

    fn name_and_rv(pb: &[u8]) -> (String, String) {
        let v = decode(pb, "v1", "Service").unwrap();
        let meta = &v["metadata"];
        (
            meta["name"].as_str().unwrap().to_string(),
            meta["resourceVersion"].as_str().unwrap().to_string(),
        )
    }

    fn raw_of(frame: &[u8]) -> Vec<u8> {
        WatchEvent::decode(&frame[4..])
            .unwrap()
            .object
            .unwrap()
            .raw
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn shared_answers_and_frames_equal_fresh_encodings() {
        let sb = Sandbox::start(Config::default()).await.unwrap();
        let before: Value = reqwest::get(format!("{}{SVCS}", sb.url()))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        // Every watch starts after the same revision, so all see the same
        // events in the same order.
        let from = format!(
            "&resourceVersion={}",
            before["metadata"]["resourceVersion"].as_str().unwrap()
        );
        let mut live_pb = open_watch(&sb, &from, true).await;
        let mut live_json = open_watch(&sb, &from, false).await;

        let mut answers = Vec::new();
        let svc = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "labels": {"v": "1"}},
            "spec": {"ports": [{"port": 80}]}});
        answers.push(write(&sb, Method::POST, SVCS, "application/json", svc).await);
        // An update: the answer is the new version, never the cached
        // bytes of the one before.
        let mut current: Value = reqwest::get(format!("{}{SVCS}/web", sb.url()))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        current["metadata"]["labels"]["v"] = json!("2");
        let path = format!("{SVCS}/web");
        answers.push(write(&sb, Method::PUT, &path, "application/json", current).await);
        let merge = "application/merge-patch+json";
        let patch = json!({"metadata": {"labels": {"v": "3"}, "finalizers": ["example.com/keep"]}});
        answers.push(write(&sb, Method::PATCH, &path, merge, patch).await);
        // A delete held by a finalizer answers the marked object.
        answers.push(write(&sb, Method::DELETE, &path, "application/json", json!({})).await);
        answers.push(
            write(
                &sb,
                Method::PATCH,
                &path,
                merge,
                json!({"metadata": {"finalizers": null}}),
            )
            .await,
        );
        // A Service's delete answers the deleted object.
        let api = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "api"}, "spec": {"ports": [{"port": 81}]}});
        answers.push(write(&sb, Method::POST, SVCS, "application/json", api).await);
        let api_path = format!("{SVCS}/api");
        answers.push(
            write(
                &sb,
                Method::DELETE,
                &api_path,
                "application/json",
                json!({}),
            )
            .await,
        );

        // The JSON watch says how many events the writes made, and what
        // each event's object is.
        let mut events = Vec::new();
        loop {
            let e = lines(&mut live_json, 1).await.remove(0);
            let done = e.0 == "DELETED" && e.1["metadata"]["name"] == "api";
            events.push(e);
            if done {
                break;
            }
        }
        let by_rv = |rv: &str| -> &Value {
            &events
                .iter()
                .find(|(_, o)| o["metadata"]["resourceVersion"] == rv)
                .unwrap()
                .1
        };

        // Every answer is the fresh encoding of its own version, and each
        // write's answer is a newer version than the one before.
        let mut last_rv = 0u64;
        for a in &answers {
            let (_, rv) = name_and_rv(a);
            let n: u64 = rv.parse().unwrap();
            assert!(n > last_rv, "an answer repeats an older version");
            last_rv = n;
            assert_eq!(a.as_ref(), encode(by_rv(&rv)).unwrap().as_slice());
        }
        for pair in answers.windows(2) {
            assert_ne!(pair[0], pair[1]);
        }

        // The live protobuf watch, and a watch replaying the same events
        // from history (frames the answers may have encoded first).
        let mut replay_pb = open_watch(&sb, &from, true).await;
        for w in [&mut live_pb, &mut replay_pb] {
            let got = frames(w, events.len()).await;
            for ((kind, object), frame) in events.iter().zip(&got) {
                assert_eq!(frame, &fresh_frame(kind, object), "{kind}");
            }
        }

        // The initial list of a watch from revision 0: synthetic ADDED
        // events of every Service there is.
        let list: Value = reqwest::get(format!("{}{SVCS}", sb.url()))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let items = list["items"].as_array().unwrap().clone();
        assert!(!items.is_empty());
        let mut initial = open_watch(&sb, "&resourceVersion=0", true).await;
        for frame in frames(&mut initial, items.len()).await {
            let (name, _) = name_and_rv(&raw_of(&frame));
            let item = items
                .iter()
                .find(|i| i["metadata"]["name"] == name.as_str())
                .unwrap();
            assert_eq!(frame, fresh_frame("ADDED", item));
        }
    }
}
