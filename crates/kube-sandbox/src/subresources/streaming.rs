//! The subresources a real server forwards to the pod's kubelet (`log`,
//! `exec`, `attach`, `portforward`, `proxy`): their option and container
//! checks, and the errors a server gives when no kubelet can be reached.
//!
//! This module must NOT open a connection to anything: the sandbox has no
//! kubelet, so these answers are errors or an empty log.

use super::*;

/// `ValidatePodLogOptions`, for the numeric options.
pub(super) fn check_log_options(q: &Query, name: &str) -> Result<(), ApiError> {
    let mut causes = Vec::new();
    let num = |k: &str| -> Result<Option<i64>, ApiError> {
        match q.get(k).filter(|s| !s.is_empty()) {
            None => Ok(None),
            Some(s) => s.parse::<i64>().map(Some).map_err(|_| {
                ApiError::bad_request(format!("strconv.ParseInt: parsing {s:?}: invalid syntax"))
            }),
        }
    };
    if let Some(t) = num("tailLines")?
        && t < 0
    {
        causes.push(("tailLines", t, "must be greater than or equal to 0"));
    }
    if let Some(l) = num("limitBytes")?
        && l < 1
    {
        causes.push(("limitBytes", l, "must be greater than 0"));
    }
    let since = num("sinceSeconds")?;
    if let Some(s) = since
        && s < 1
    {
        causes.push(("sinceSeconds", s, "must be greater than 0"));
    }
    let mut out: Vec<Cause> = causes
        .into_iter()
        .map(|(f, v, why)| Cause {
            reason: "FieldValueInvalid".into(),
            field: f.into(),
            message: format!("Invalid value: {v}: {why}"),
        })
        .collect();
    if since.is_some() && q.get("sinceTime").is_some_and(|s| !s.is_empty()) {
        out.push(Cause {
            reason: "FieldValueForbidden".into(),
            field: String::new(),
            message: "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"
                .into(),
        });
    }
    if out.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid("", "PodLogOptions", "pods", name, out))
}

/// Every container name of a pod, in `VisitContainers` order.
pub(super) fn container_names(pod: &Value) -> Vec<String> {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|k| {
            pod.pointer(&format!("/spec/{k}"))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_string))
        .collect()
}

/// `validateContainer`: a named container must exist; an unnamed one is
/// the pod's only container.
pub(super) fn pick_container(
    pod: &Value,
    name: &str,
    wanted: Option<&str>,
) -> Result<(), ApiError> {
    match wanted.filter(|c| !c.is_empty()) {
        Some(c) => {
            if container_names(pod).iter().any(|n| n == c) {
                Ok(())
            } else {
                Err(ApiError::bad_request(format!(
                    "container {c} is not valid for pod {name}"
                )))
            }
        }
        None => {
            let regular = pod
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            match regular {
                1 => Ok(()),
                0 => Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {name}"
                ))),
                _ => Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {name}, choose one of: [{}]",
                    container_names(pod).join(" ")
                ))),
            }
        }
    }
}

pub(super) fn node_of(pod: &Value) -> Option<&str> {
    pod.pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
}

pub(super) fn no_host(name: &str) -> ApiError {
    ApiError::bad_request(format!("pod {name} does not have a host assigned"))
}

/// What a bound pod's streaming request ends in when there is no kubelet:
/// the node must exist and have an address, and then nothing answers on
/// its kubelet port.
pub(super) fn kubelet_unreachable(store: &Store, node: &str) -> ApiError {
    let Some(nodes) = store.registry().get("", "v1", "nodes") else {
        return ApiError::no_route();
    };
    let n = match store.get_value(&nodes, "", node) {
        Ok(n) => n,
        Err(e) => return e,
    };
    let addresses = n
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let address = [
        "Hostname",
        "InternalDNS",
        "InternalIP",
        "ExternalDNS",
        "ExternalIP",
    ]
    .iter()
    .find_map(|t| {
        addresses
            .iter()
            .find(|a| a["type"] == *t)
            .and_then(|a| a.get("address").and_then(Value::as_str))
    });
    let Some(address) = address else {
        return ApiError::unknown(500, "no preferred addresses found; known addresses: []");
    };
    let port = n
        .pointer("/status/daemonEndpoints/kubeletEndpoint/Port")
        .and_then(Value::as_i64)
        .filter(|p| *p > 0)
        .unwrap_or(10250);
    ApiError::unknown(
        500,
        format!("dial tcp {address}:{port}: connect: connection refused"),
    )
}
