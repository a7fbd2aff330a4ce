//! The subresources whose logic is the API server's own, beyond `status`
//! and `scale`: a pod's `binding`, `eviction`, `ephemeralcontainers` and
//! `resize`, a CertificateSigningRequest's `approval`, a ServiceAccount's
//! `token` (TokenRequest, in `crate::sa_token`), and a pod's
//! `log`, `exec`, `attach`, `portforward` and `proxy`, which a real server
//! forwards to the pod's kubelet and which the sandbox answers as a server
//! answers them when there is no kubelet to reach (most of all for a pod
//! no scheduler has bound to a node).
//!
//! Each follows its upstream registry: `pod/storage/storage.go`
//! (BindingREST, EphemeralContainersREST, ResizeREST), `eviction.go`
//! (PodDisruptionBudget checks that can be decided from the budgets'
//! status, which tests write as the disruption controller would),
//! `pod/strategy.go` (LogLocation, streamLocation, PortForwardLocation,
//! ResourceLocation) and `certificates/.../strategy.go` (approval).
//!
//! What this module must NOT do: reach a kubelet, run a controller (no
//! budget is recomputed; an eviction only decrements one), or change any
//! field a subresource does not own.

use std::sync::Arc;

use axum::body::Body;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::http::{
    Query, content_type, dry_run, json_response, parse_body, read_delete_options, value_response,
    wants_table, write_options,
};
use crate::registry::Resource;
use crate::route::ObjectRoute;
use crate::semantics;
use crate::state::Shared;
use crate::status::{ApiError, Cause};
use crate::store::{DeleteOptions, Store};

mod eviction;
mod partial;
mod streaming;

use eviction::*;
use partial::*;
use streaming::*;

/// One subresource as discovery lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sub {
    /// The subresource (`eviction`).
    pub name: &'static str,
    /// The group and version of the kind it answers, when not the
    /// resource's own (`policy`, `v1` for an Eviction).
    pub group_version: Option<(&'static str, &'static str)>,
    /// The kind it answers (`Eviction`, `Pod`, `PodExecOptions`).
    pub kind: &'static str,
    /// Its verbs, as discovery lists them.
    pub verbs: &'static [&'static str],
}

const GET_PATCH_UPDATE: &[&str] = &["get", "patch", "update"];
const CONNECT: &[&str] = &["create", "get"];

const POD_SUBRESOURCES: &[Sub] = &[
    Sub {
        name: "attach",
        group_version: None,
        kind: "PodAttachOptions",
        verbs: CONNECT,
    },
    Sub {
        name: "binding",
        group_version: None,
        kind: "Binding",
        verbs: &["create"],
    },
    Sub {
        name: "ephemeralcontainers",
        group_version: None,
        kind: "Pod",
        verbs: GET_PATCH_UPDATE,
    },
    Sub {
        name: "eviction",
        group_version: Some(("policy", "v1")),
        kind: "Eviction",
        verbs: &["create"],
    },
    Sub {
        name: "exec",
        group_version: None,
        kind: "PodExecOptions",
        verbs: CONNECT,
    },
    Sub {
        name: "log",
        group_version: None,
        kind: "Pod",
        verbs: &["get"],
    },
    Sub {
        name: "portforward",
        group_version: None,
        kind: "PodPortForwardOptions",
        verbs: CONNECT,
    },
    Sub {
        name: "proxy",
        group_version: None,
        kind: "PodProxyOptions",
        verbs: &["create", "delete", "get", "patch", "update"],
    },
    Sub {
        name: "resize",
        group_version: None,
        kind: "Pod",
        verbs: GET_PATCH_UPDATE,
    },
];

const SERVICE_ACCOUNT_SUBRESOURCES: &[Sub] = &[Sub {
    name: "token",
    group_version: Some(("authentication.k8s.io", "v1")),
    kind: "TokenRequest",
    verbs: &["create"],
}];

const CSR_SUBRESOURCES: &[Sub] = &[Sub {
    name: "approval",
    group_version: None,
    kind: "CertificateSigningRequest",
    verbs: GET_PATCH_UPDATE,
}];

/// The subresources of a resource this module serves (besides `status`
/// and `scale`, which discovery lists from the resource itself).
pub fn extra(res: &Resource) -> &'static [Sub] {
    if !res.builtin {
        return &[];
    }
    match (res.group.as_str(), res.plural.as_str()) {
        ("", "pods") => POD_SUBRESOURCES,
        ("", "serviceaccounts") => SERVICE_ACCOUNT_SUBRESOURCES,
        ("certificates.k8s.io", "certificatesigningrequests") => CSR_SUBRESOURCES,
        _ => &[],
    }
}

/// Whether this module answers `sub` of `res`.
pub fn serves(res: &Resource, sub: &str) -> bool {
    extra(res).iter().any(|s| s.name == sub)
}

fn verb(method: &Method) -> &'static str {
    match method.as_str() {
        "GET" | "HEAD" => "get",
        "POST" => "create",
        "PUT" => "update",
        "PATCH" => "patch",
        "DELETE" => "delete",
        // The proxy forwards OPTIONS as it forwards everything else.
        "OPTIONS" => "get",
        _ => "unknown",
    }
}

/// Answers a request to one of the subresources [`serves`] names.
pub async fn serve(
    shared: Arc<Shared>,
    method: &Method,
    headers: &HeaderMap,
    q: &Query,
    o: &ObjectRoute,
    body: Bytes,
) -> Result<http::Response<Body>, ApiError> {
    let res = o.res.clone();
    let sub_name = o.subresource.as_deref().unwrap_or_default();
    let Some(sub) = extra(&res).iter().find(|s| s.name == sub_name) else {
        return Err(ApiError::no_route());
    };
    let Some(name) = o.name.as_deref() else {
        return Err(ApiError::no_route());
    };
    if res.namespaced && o.namespace.is_none() {
        return Err(ApiError::no_route());
    }
    if !sub.verbs.contains(&verb(method)) {
        return Err(ApiError::method_not_served());
    }
    let ns = o.namespace.as_deref().unwrap_or_default();
    let ct = content_type(headers);
    match sub.name {
        "token" => {
            dry_run(q)?;
            // The server fills a TokenRequest's status and never reads the
            // one sent: client-go sends it zero-valued (an empty token and a
            // zero expirationTimestamp, `null` in JSON, a zero Timestamp in
            // protobuf), which the typed check below would refuse.
            let req = decode::<k8s_openapi::api::authentication::v1::TokenRequest>(
                &body,
                ct,
                &["authentication.k8s.io/v1"],
                "authentication.k8s.io/v1",
                "TokenRequest",
                ns,
                &["status"],
            )?;
            let store = shared.store.lock().await;
            let out = crate::sa_token::request(
                &store,
                &shared.signer,
                ns,
                name,
                req,
                shared.token_now(),
            )?;
            Ok(value_response(StatusCode::CREATED, &out))
        }
        "binding" => {
            let opts = write_options(q, headers, false)?;
            let b = decode::<k8s_openapi::api::core::v1::Binding>(
                &body,
                ct,
                &["v1"],
                "v1",
                "Binding",
                ns,
                &[],
            )?;
            let mut store = shared.store.lock().await;
            bind(&mut store, &res, ns, name, &b, &opts)?;
            Ok(success())
        }
        "eviction" => {
            let e = decode::<k8s_openapi::api::policy::v1::Eviction>(
                &body,
                ct,
                &["policy/v1", "policy/v1beta1"],
                "policy/v1",
                "Eviction",
                ns,
                &[],
            )?;
            let mut del = DeleteOptions {
                dry_run: dry_run(q)?,
                ..Default::default()
            };
            if let Some(d) = e.get("deleteOptions") {
                read_delete_options(&mut del, d);
            }
            let manager = write_options(q, headers, true)?.manager;
            let mut store = shared.store.lock().await;
            match evict(&mut store, &res, ns, name, &e, del, &manager)? {
                Evicted::Deleted => Ok(success()),
                Evicted::Refused(status) => Ok(value_response(StatusCode::CREATED, &status)),
            }
        }
        "log" => {
            check_log_options(q, name)?;
            let store = shared.store.lock().await;
            let pod = store.get_value(&res, ns, name)?;
            pick_container(&pod, name, q.get("container"))?;
            match node_of(&pod) {
                // A pod without a node has no log location: the server
                // answers an empty stream.
                None => {
                    let mut r = http::Response::new(Body::empty());
                    r.headers_mut()
                        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
                    Ok(r)
                }
                Some(node) => Err(kubelet_unreachable(&store, node)),
            }
        }
        "exec" | "attach" => {
            let store = shared.store.lock().await;
            let pod = store.get_value(&res, ns, name)?;
            pick_container(&pod, name, q.get("container"))?;
            match node_of(&pod) {
                None => Err(no_host(name)),
                Some(node) => Err(kubelet_unreachable(&store, node)),
            }
        }
        "portforward" => {
            let store = shared.store.lock().await;
            let pod = store.get_value(&res, ns, name)?;
            match node_of(&pod) {
                None => Err(no_host(name)),
                Some(node) => Err(kubelet_unreachable(&store, node)),
            }
        }
        "proxy" => {
            // `[scheme:]name[:port]`.
            let parts: Vec<&str> = name.split(':').collect();
            let (pod_name, port) = match parts.as_slice() {
                [n] => (*n, None),
                [n, p] => (*n, Some(*p)),
                [_, n, p] => (*n, Some(*p)),
                _ => {
                    return Err(ApiError::bad_request(format!(
                        "invalid pod request {name:?}"
                    )));
                }
            };
            let store = shared.store.lock().await;
            let pod = store.get_value(&res, ns, pod_name)?;
            let ip = pod
                .pointer("/status/podIP")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let global = ip
                .parse::<std::net::IpAddr>()
                .is_ok_and(|a| !a.is_loopback() && !a.is_unspecified() && !a.is_multicast());
            if !global {
                return Err(ApiError::bad_request("address not allowed"));
            }
            let port = port.map(str::to_string).or_else(|| {
                pod.pointer("/spec/containers")
                    .and_then(Value::as_array)
                    .and_then(|cs| {
                        cs.iter()
                            .find_map(|c| c.pointer("/ports/0/containerPort").cloned())
                    })
                    .map(|p| p.to_string())
            });
            let target = match port {
                Some(p) => format!("{ip}:{p}"),
                None => format!("{ip}:80"),
            };
            Err(ApiError::unknown(
                503,
                format!(
                    "error trying to reach service: dial tcp {target}: connect: connection refused"
                ),
            ))
        }
        "ephemeralcontainers" | "resize" | "approval" => {
            partial(
                shared, method, headers, q, &res, ns, name, ct, &body, sub.name,
            )
            .await
        }
        _ => Err(ApiError::no_route()),
    }
}

/// `Status: Success` with the create's code, as a subresource create
/// that answers no object writes it.
fn success() -> http::Response<Body> {
    value_response(
        StatusCode::CREATED,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
    )
}

/// Decodes the body of a subresource create into its own kind: the
/// identity checks of the create handler, then the typed decode.
/// `ignored` names top-level fields the server overwrites without reading
/// them; they are dropped before the checks.
fn decode<T: DeserializeOwned>(
    body: &[u8],
    ct: &str,
    api_versions: &[&str],
    version: &str,
    kind: &str,
    ns: &str,
    ignored: &[&str],
) -> Result<Value, ApiError> {
    // kubectl's typed clients (`kubectl drain`) send these as protobuf.
    let mut v = if ct.contains("protobuf") && !body.is_empty() {
        crate::protobuf::decode(body, api_versions.first().copied().unwrap_or(version), kind)?
    } else {
        parse_body(body, ct)?
    };
    let Some(fields) = v.as_object_mut() else {
        return Err(ApiError::bad_request(
            "the body of the request must be a JSON object",
        ));
    };
    for f in ignored {
        fields.remove(*f);
    }
    if let Some(av) = v.get("apiVersion")
        && !av.as_str().is_some_and(|a| api_versions.contains(&a))
    {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({}) does not match the expected API version ({version})",
            av.as_str().unwrap_or_default()
        )));
    }
    if let Some(k) = v.get("kind")
        && k.as_str() != Some(kind)
    {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({}) does not match the expected kind ({kind})",
            k.as_str().unwrap_or_default()
        )));
    }
    if let Err(e) = T::deserialize(&v) {
        let short = version.rsplit('/').next().unwrap_or(version);
        return Err(ApiError::bad_request(format!(
            "{kind} in version {short:?} cannot be handled as a {kind}: {e}"
        )));
    }
    if let Some(body_ns) = v.pointer("/metadata/namespace").and_then(Value::as_str)
        && !body_ns.is_empty()
        && body_ns != ns
    {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(v)
}

/// The resource with its status written by main writes: a registry that
/// sets spec and status in one storage update (a binding) goes around the
/// status split of the pod strategy.
fn whole(res: &Arc<Resource>) -> Arc<Resource> {
    let mut r = (**res).clone();
    r.status_subresource = false;
    Arc::new(r)
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// `BindingREST.Create`: the name must match, the target must be a Node
/// with a name, and the pod must exist, not be deleting, be unbound and
/// have no scheduling gates; then `spec.nodeName`, the binding's
/// annotations and the PodScheduled condition are written in one update.
fn bind(
    store: &mut Store,
    res: &Arc<Resource>,
    ns: &str,
    name: &str,
    b: &Value,
    opts: &crate::store::WriteOptions,
) -> Result<(), ApiError> {
    let meta_name = b
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if meta_name != name {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Binding object",
        ));
    }
    let target_kind = b
        .pointer("/target/kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let target = b
        .pointer("/target/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut errs = Vec::new();
    if !target_kind.is_empty() && target_kind != "Node" {
        errs.push(format!(
            "target.kind: Unsupported value: {target_kind:?}: supported values: \"Node\", \"<empty>\""
        ));
    }
    if target.is_empty() {
        errs.push("target.name: Required value".to_string());
    }
    if !errs.is_empty() {
        // The registry returns the validation as a plain aggregate error.
        let message = if errs.len() == 1 {
            errs.remove(0)
        } else {
            format!("[{}]", errs.join(", "))
        };
        return Err(ApiError::unknown(500, message));
    }
    let mut pod = store.get_value(res, ns, name)?;
    let conflict = |why: String| ApiError::conflict("", "pods/binding", name, &why);
    let precondition = |what: &str, want: &str, have: &str| {
        ApiError::conflict(
            "",
            "pods",
            name,
            &format!(
                "Precondition failed: {what} in precondition: {want}, {what} in object meta: {have}"
            ),
        )
    };
    let field = |v: &Value, p: &str| {
        v.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let (want_uid, have_uid) = (field(b, "/metadata/uid"), field(&pod, "/metadata/uid"));
    if !want_uid.is_empty() && want_uid != have_uid {
        return Err(precondition("UID", &want_uid, &have_uid));
    }
    let (want_rv, have_rv) = (
        field(b, "/metadata/resourceVersion"),
        field(&pod, "/metadata/resourceVersion"),
    );
    if !want_rv.is_empty() && want_rv != have_rv {
        return Err(precondition("ResourceVersion", &want_rv, &have_rv));
    }
    if pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
    {
        return Err(conflict(format!(
            "pod {name} is being deleted, cannot be assigned to a host"
        )));
    }
    let bound = field(&pod, "/spec/nodeName");
    if !bound.is_empty() {
        return Err(conflict(format!(
            "pod {name} is already assigned to node {bound:?}"
        )));
    }
    if pod
        .pointer("/spec/schedulingGates")
        .and_then(Value::as_array)
        .is_some_and(|g| !g.is_empty())
    {
        return Err(conflict(format!(
            "pod {name} has non-empty .spec.schedulingGates"
        )));
    }
    pod["spec"]["nodeName"] = json!(target);
    if let Some(annotations) = b
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        && !annotations.is_empty()
    {
        if !pod
            .pointer("/metadata/annotations")
            .is_some_and(Value::is_object)
        {
            pod["metadata"]["annotations"] = json!({});
        }
        for (k, v) in annotations {
            pod["metadata"]["annotations"][k] = v.clone();
        }
    }
    set_pod_condition(&mut pod, "PodScheduled", "True", &now());
    store.update(&whole(res), ns, name, pod, opts)?;
    Ok(())
}

/// `UpdatePodCondition`: the condition replaced or added, its transition
/// time kept while its status does not change.
fn set_pod_condition(pod: &mut Value, kind: &str, status: &str, now: &str) {
    if !pod.get("status").is_some_and(Value::is_object) {
        pod["status"] = json!({});
    }
    if !pod["status"].get("conditions").is_some_and(Value::is_array) {
        pod["status"]["conditions"] = json!([]);
    }
    let Some(conds) = pod["status"]["conditions"].as_array_mut() else {
        return;
    };
    let mut cond =
        json!({"type": kind, "status": status, "lastProbeTime": null, "lastTransitionTime": now});
    match conds.iter_mut().find(|c| c["type"] == kind) {
        Some(old) => {
            if old["status"] == status
                && let Some(t) = old.get("lastTransitionTime")
            {
                cond["lastTransitionTime"] = t.clone();
            }
            *old = cond;
        }
        None => conds.push(cond),
    }
}

#[cfg(test)]
mod tests;
