//! Building responses: plain text, JSON, API errors and the headers Consul
//! adds to reads.
//!
//! This module must NOT decide what a request gets: handlers pass it the
//! status, body and index to render.

use super::*;

pub(super) type Resp = Response<Full<Bytes>>;

pub(super) fn text(status: u16, body: impl Into<String>) -> Resp {
    let mut r = Response::new(Full::new(Bytes::from(body.into())));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

pub(super) fn json_resp(status: u16, body: &Value, pretty: bool) -> Resp {
    let bytes = if pretty {
        let mut b = serde_json::to_vec_pretty(body).unwrap_or_default();
        b.push(b'\n');
        b
    } else {
        serde_json::to_vec(body).unwrap_or_default()
    };
    let mut r = Response::new(Full::new(Bytes::from(bytes)));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

pub(super) fn error_resp(e: &ApiError) -> Resp {
    let mut r = text(e.status(), e.to_string());
    if let ApiError::MethodNotAllowed { allow, .. } = e
        && let Ok(v) = HeaderValue::from_str(allow)
    {
        r.headers_mut().insert(header::ALLOW, v);
    }
    r
}

pub(super) fn fault_error(a: FaultAction) -> ApiError {
    match a {
        FaultAction::NoLeader => ApiError::NoLeader,
        FaultAction::Error { status, body } => ApiError::Injected { status, body },
        // Latency never ends a request.
        FaultAction::Latency(_) => ApiError::Injected {
            status: 500,
            body: String::new(),
        },
    }
}

pub(super) fn set_header(r: &mut Resp, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        r.headers_mut().insert(name, v);
    }
}

/// The headers Consul adds to every read: the index (never 0, since a 0
/// would make clients busy-loop), leadership and staleness.
pub(super) fn read_headers(r: &mut Resp, index: u64, filtered: bool, consistency: &str) {
    set_header(r, "X-Consul-Index", &index.max(1).to_string());
    set_header(r, "X-Consul-KnownLeader", "true");
    set_header(r, "X-Consul-LastContact", "0");
    set_header(r, "X-Consul-Effective-Consistency", consistency);
    if filtered {
        set_header(r, "X-Consul-Results-Filtered-By-ACLs", "true");
    }
}

pub(super) fn read_response(r: ReadResult, q: &Query) -> Resp {
    let resp = json_resp(200, &r.body, q.has("pretty"));
    with_read_headers(resp, r.index, r.filtered, q)
}

fn with_read_headers(mut resp: Resp, index: u64, filtered: bool, q: &Query) -> Resp {
    read_headers(
        &mut resp,
        index,
        filtered,
        consistency(q).unwrap_or("leader"),
    );
    resp
}

/// [`read_response`] for a body serialized by the store (`JsonRead`).
pub(super) fn json_read_response(r: JsonRead, q: &Query) -> Resp {
    let mut resp = Response::new(Full::new(Bytes::from(r.body)));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    with_read_headers(resp, r.index, r.filtered, q)
}
