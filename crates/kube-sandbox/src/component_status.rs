//! `componentstatuses` (core v1, deprecated since v1.19): the health of
//! the control plane's components, list and get only.
//!
//! A real server probes the scheduler and the controller-manager on their
//! health ports on 127.0.0.1 and its storage; the sandbox has neither
//! component, so it reports them as a server with nothing listening on
//! those ports does (Unhealthy, the probe's connection error as the
//! condition message) and its own storage as `etcd-0`, healthy. Every
//! answer carries the deprecation warning the real server sends.
//!
//! What this module must NOT do: probe anything over the network (the
//! answers are fixed; the ports might be in use by something else on the
//! test machine), or store the statuses.

use std::sync::Arc;

use axum::body::Body;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use serde_json::{Value, json};

use crate::http::{Query, value_response, wants_table};
use crate::route::ObjectRoute;
use crate::state::Shared;
use crate::status::ApiError;

/// The `Warning` header of every componentstatuses answer.
pub const DEPRECATION_WARNING: &str = "299 - \"v1 ComponentStatus is deprecated in v1.19+\"";

/// The components, in the order the sandbox lists them (the real server
/// lists them in the order its concurrent probes finish).
fn statuses() -> Vec<Value> {
    let unreachable = |name: &str, port: u16| {
        component(
            name,
            "False",
            &format!(
                "Get \"https://127.0.0.1:{port}/healthz\": dial tcp 127.0.0.1:{port}: connect: connection refused"
            ),
        )
    };
    vec![
        unreachable("scheduler", 10259),
        unreachable("controller-manager", 10257),
        component("etcd-0", "True", "ok"),
    ]
}

fn component(name: &str, status: &str, message: &str) -> Value {
    json!({
        "kind": "ComponentStatus",
        "apiVersion": "v1",
        "metadata": {"name": name, "creationTimestamp": null},
        "conditions": [{"type": "Healthy", "status": status, "message": message}],
    })
}

/// Answers a request to `componentstatuses`.
pub async fn serve(
    shared: Arc<Shared>,
    method: &Method,
    headers: &HeaderMap,
    q: &Query,
    o: &ObjectRoute,
) -> Result<http::Response<Body>, ApiError> {
    let res = &o.res;
    if o.subresource.is_some() {
        return Err(ApiError::no_route());
    }
    if method != Method::GET {
        return Err(ApiError::method_not_served());
    }
    if o.name.is_none() && q.flag("watch") {
        return Err(ApiError::method_not_supported(
            &res.group,
            &res.plural,
            "watch",
        ));
    }
    let rv = shared.store.lock().await.revision();
    let all = statuses();
    let answer = match o.name.as_deref() {
        Some(name) => {
            let Some(found) = all.into_iter().find(|s| s["metadata"]["name"] == name) else {
                // The registry's plain error: a 500 without a reason.
                return Err(ApiError::unknown(
                    500,
                    format!("Component not found: {name}"),
                ));
            };
            if wants_table(headers) {
                crate::table::table(res, std::slice::from_ref(&found), rv, None)
            } else {
                found
            }
        }
        None => {
            // The registry ignores label and field selectors.
            if wants_table(headers) {
                crate::table::table(res, &all, rv, None)
            } else {
                json!({
                    "kind": "ComponentStatusList",
                    "apiVersion": "v1",
                    "metadata": {},
                    "items": all,
                })
            }
        }
    };
    let mut r = value_response(StatusCode::OK, &answer);
    r.headers_mut().append(
        header::WARNING,
        HeaderValue::from_static(DEPRECATION_WARNING),
    );
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_missing_components_are_unhealthy_and_storage_is_healthy() {
        let all = statuses();
        let names: Vec<&str> = all
            .iter()
            .map(|s| s["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["scheduler", "controller-manager", "etcd-0"]);
        assert_eq!(all[0]["conditions"][0]["status"], "False");
        assert!(
            all[1]["conditions"][0]["message"]
                .as_str()
                .unwrap()
                .contains("127.0.0.1:10257: connect: connection refused")
        );
        assert_eq!(all[2]["conditions"][0]["status"], "True");
        let cells =
            kube_semantics::printers::cells("", "ComponentStatus", &all[0], chrono::Utc::now());
        assert_eq!(cells[1], "Unhealthy");
    }
}
