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

mod authz;
mod options;
mod watch;

use authz::{authorize_request, check_create_on_apply, check_rbac_write, is_rbac_write};

pub(crate) use options::*;
use watch::*;

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
/// kind, refused with the server's 415 for a custom resource. Then its
/// unknown fields dropped as `fieldValidation` says, with the warnings to
/// send; a protobuf body has none to drop, and the server's protobuf
/// decoder has no strict mode (it falls back to the lenient one), so
/// `fieldValidation` does not apply to it.
fn body_value(
    res: &Resource,
    body: &[u8],
    ct: &str,
    q: &Query,
) -> Result<(Value, Vec<String>), ApiError> {
    let validation = field_validation(q)?;
    if crate::protobuf::is_protobuf(ct) && !body.is_empty() {
        if !res.builtin {
            return Err(ApiError::unsupported_body_format(&[
                "application/json",
                "application/yaml",
            ]));
        }
        return Ok((
            crate::protobuf::decode(body, &res.api_version(), &res.kind)?,
            Vec::new(),
        ));
    }
    let mut v = parse_body(body, ct)?;
    let warnings = check_fields(res, &mut v, validation, true)?.unwrap_or_default();
    Ok((v, warnings))
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
    if let Some(auth) = &shared.config.auth
        && let Err(e) = authorize_request(&shared, auth, &parts, &routed, &q, &path).await
    {
        shared.count_refused(&key);
        return error_response(&e);
    }
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
            let r = match object(
                shared.clone(),
                &parts.method,
                &parts.headers,
                &q,
                o,
                body,
                protobuf,
            )
            .await
            {
                Ok(r) => r,
                Err(e) => {
                    // Refused by an authorization check of the handler
                    // (create on apply, RBAC escalation): counted as the
                    // filter's refusals are.
                    if e.code == 403 && shared.config.auth.is_some() {
                        shared.count_refused(&key);
                    }
                    error_response(&e)
                }
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
    let ct = content_type(headers);
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
            let opts = WriteOptions {
                protobuf,
                ..write_options(q, headers, false)?
            };
            let (v, warnings) = body_value(&res, &body, ct, q)?;
            let mut store = shared.store.lock().await;
            check_rbac_write(&shared, &store, headers, &res, &ns, &v)?;
            let out = store.create(&res, &ns, v, &opts)?;
            let r = write_answer(&store, StatusCode::CREATED, out, protobuf);
            drop(store);
            Ok(with_warnings(r, &warnings))
        }
        ("PUT", Some(name)) => {
            let opts = WriteOptions {
                protobuf,
                ..write_options(q, headers, status_sub)?
            };
            let (v, warnings) = body_value(&res, &body, ct, q)?;
            let mut store = shared.store.lock().await;
            check_rbac_write(&shared, &store, headers, &res, &ns, &v)?;
            let out = store.update(&res, &ns, name, v, &opts)?;
            let r = write_answer(&store, StatusCode::OK, out, protobuf);
            drop(store);
            Ok(with_warnings(r, &warnings))
        }
        ("PATCH", Some(name)) => {
            let opts = WriteOptions {
                protobuf,
                ..write_options(q, headers, status_sub)?
            };
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
            if kind == PatchKind::Apply && !existed {
                check_create_on_apply(&shared, &store, headers, &res, &ns, name)?;
            }
            if matches!(kind, PatchKind::Merge | PatchKind::Json)
                && res.builtin
                && let Ok(old) = store.get_value(&res, &ns, name)
                && let Some(e) = crate::decode_error::patch_error(&res, &old, kind, &body)
            {
                return Err(e);
            }
            if is_rbac_write(&shared, &res) {
                // What the patch would store, judged before it is stored.
                let dry = WriteOptions {
                    dry_run: true,
                    ..opts.clone()
                };
                let would = store.patch(&res, &ns, name, kind, &body, &dry)?;
                let would: Value = crate::json::parse(&would)
                    .map_err(|e| ApiError::internal(format!("patched object: {e}")))?;
                check_rbac_write(&shared, &store, headers, &res, &ns, &would)?;
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
    let ct = content_type(headers);
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
        "PUT" if crate::protobuf::is_protobuf(ct) && !body.is_empty() => {
            crate::protobuf::decode(&body, "autoscaling/v1", "Scale")?
        }
        "PUT" => parse_body(&body, ct)?,
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
        read_delete_options(&mut opts, &v);
    }
    Ok(opts)
}

#[cfg(test)]
mod tests;
