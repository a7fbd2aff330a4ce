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
    Query, dry_run, json_response, parse_body, value_response, wants_table, write_options,
};
use crate::registry::Resource;
use crate::route::ObjectRoute;
use crate::semantics;
use crate::state::Shared;
use crate::status::{ApiError, Cause};
use crate::store::{DeleteOptions, Store};

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
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    match sub.name {
        "token" => {
            dry_run(q)?;
            // The server fills a TokenRequest's status and never reads the
            // one sent: client-go sends it zero-valued (an empty token and a
            // zero expirationTimestamp, `null` in JSON, a zero Timestamp in
            // protobuf), which the typed check below would refuse.
            let req = decode::<k8s_openapi::api::authentication::v1::TokenRequest>(
                &body,
                &ct,
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
                &ct,
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
                &ct,
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
                del.uid = d
                    .pointer("/preconditions/uid")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                del.resource_version = d
                    .pointer("/preconditions/resourceVersion")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                if d.get("dryRun")
                    .and_then(Value::as_array)
                    .is_some_and(|a| a.iter().any(|x| x == "All"))
                {
                    del.dry_run = true;
                }
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
                shared, method, headers, q, &res, ns, name, &ct, &body, sub.name,
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

enum Evicted {
    Deleted,
    /// A failure the registry answers as an object (several budgets).
    Refused(Value),
}

/// Whether a pod's Ready condition is True (`IsPodReady`).
fn ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

/// A `metav1.LabelSelector` object against labels; `None` when the
/// selector does not convert (the budget is then skipped, as upstream
/// skips it). An absent selector selects nothing; an empty one everything.
fn selects(selector: Option<&Value>, labels: Option<&Value>) -> Option<bool> {
    let Some(sel) = selector.filter(|s| !s.is_null()) else {
        return Some(false);
    };
    let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    if let Some(m) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in m {
            if label(k) != v.as_str() {
                return Some(false);
            }
        }
    }
    for e in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let key = e.get("key").and_then(Value::as_str)?;
        let values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let have = label(key);
        let ok = match e.get("operator").and_then(Value::as_str)? {
            "In" => have.is_some_and(|h| values.contains(&h)),
            "NotIn" => !have.is_some_and(|h| values.contains(&h)),
            "Exists" => have.is_some(),
            "DoesNotExist" => have.is_none(),
            _ => return None,
        };
        if !ok {
            return Some(false);
        }
    }
    Some(true)
}

/// `EvictionREST.Create`, for what the budgets' status decides.
fn evict(
    store: &mut Store,
    res: &Arc<Resource>,
    ns: &str,
    name: &str,
    e: &Value,
    mut del: DeleteOptions,
    manager: &str,
) -> Result<Evicted, ApiError> {
    let e_name = e
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if e_name != name {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    let pod = store.get_value(res, ns, name)?;
    let rv = pod
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .map(str::to_string);
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let deleting = pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null());
    // A terminal, pending or deleting pod disrupts nothing more: it is
    // deleted without looking at budgets, guarded by its revision.
    if matches!(phase, "Succeeded" | "Failed" | "Pending") || deleting {
        if del.resource_version.is_none() {
            del.resource_version = rv;
        }
        store.delete(res, ns, name, &del)?;
        return Ok(Evicted::Deleted);
    }
    let pdb_res = store
        .registry()
        .get("policy", "v1", "poddisruptionbudgets")
        .ok_or_else(ApiError::no_route)?;
    let filter = crate::store::Filter {
        namespace: Some(ns.to_string()),
        labels: None,
        fields: None,
    };
    let budgets: Vec<Value> = store
        .list(&pdb_res, &filter, None, None)?
        .items
        .iter()
        .filter_map(|b| crate::json::parse(b).ok())
        .filter(|b| {
            selects(b.pointer("/spec/selector"), pod.pointer("/metadata/labels")) == Some(true)
        })
        .collect();
    if budgets.len() > 1 {
        return Ok(Evicted::Refused(json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            "code": 500
        })));
    }
    if let Some(pdb) = budgets.into_iter().next() {
        let pdb_name = pdb
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let int = |p: &str| pdb.pointer(p).and_then(Value::as_i64).unwrap_or(0);
        let unhealthy_may_go = !ready(&pod)
            && (pdb
                .pointer("/spec/unhealthyPodEvictionPolicy")
                .and_then(Value::as_str)
                == Some("AlwaysAllow")
                || (int("/status/currentHealthy") >= int("/status/desiredHealthy")
                    && int("/status/desiredHealthy") > 0));
        if unhealthy_may_go {
            if del.resource_version.is_none() {
                del.resource_version = rv;
            }
        } else {
            decrement(
                store,
                &pdb_res,
                ns,
                name,
                pdb,
                &pdb_name,
                del.dry_run,
                manager,
            )?;
        }
    }
    store.delete(res, ns, name, &del)?;
    Ok(Evicted::Deleted)
}

/// `checkAndDecrement`: the budget must be observed at its generation,
/// allow a disruption and not track too many; then one disruption is
/// used up and the pod recorded as disrupted, through the budget's status.
#[allow(clippy::too_many_arguments)]
fn decrement(
    store: &mut Store,
    pdb_res: &Arc<Resource>,
    ns: &str,
    pod: &str,
    mut pdb: Value,
    pdb_name: &str,
    dry_run: bool,
    manager: &str,
) -> Result<(), ApiError> {
    let int = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_i64).unwrap_or(0);
    let budget_cause = |message: String| Cause {
        reason: "DisruptionBudget".into(),
        field: String::new(),
        message,
    };
    const VIOLATES: &str = "Cannot evict pod as it would violate the pod's disruption budget.";
    if int(&pdb, "/status/observedGeneration") < int(&pdb, "/metadata/generation") {
        return Err(ApiError::too_many_requests_because(
            VIOLATES,
            10,
            vec![budget_cause(format!(
                "The disruption budget {pdb_name} is still being processed by the server."
            ))],
        ));
    }
    let allowed = int(&pdb, "/status/disruptionsAllowed");
    if allowed < 0 {
        return Err(ApiError::forbidden(
            "policy",
            "poddisruptionbudget",
            pdb_name,
            "pdb disruptions allowed is negative",
        ));
    }
    if pdb
        .pointer("/status/disruptedPods")
        .and_then(Value::as_object)
        .is_some_and(|m| m.len() > 2000)
    {
        return Err(ApiError::forbidden(
            "policy",
            "poddisruptionbudget",
            pdb_name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        return Err(ApiError::too_many_requests_because(
            VIOLATES,
            0,
            vec![budget_cause(format!(
                "The disruption budget {pdb_name} needs {} healthy pods and has {} currently",
                int(&pdb, "/status/desiredHealthy"),
                int(&pdb, "/status/currentHealthy")
            ))],
        ));
    }
    if dry_run {
        return Ok(());
    }
    let now = now();
    pdb["status"]["disruptionsAllowed"] = json!(allowed - 1);
    if !pdb
        .pointer("/status/disruptedPods")
        .is_some_and(Value::is_object)
    {
        pdb["status"]["disruptedPods"] = json!({});
    }
    pdb["status"]["disruptedPods"][pod] = json!(now);
    if allowed - 1 == 0 {
        // The DisruptionAllowed condition follows the count to zero.
        let observed = int(&pdb, "/status/observedGeneration");
        if !pdb
            .pointer("/status/conditions")
            .is_some_and(Value::is_array)
        {
            pdb["status"]["conditions"] = json!([]);
        }
        if let Some(conds) = pdb["status"]["conditions"].as_array_mut() {
            let mut cond = json!({
                "type": "DisruptionAllowed", "status": "False", "observedGeneration": observed,
                "lastTransitionTime": now, "reason": "InsufficientPods", "message": ""
            });
            match conds.iter_mut().find(|c| c["type"] == "DisruptionAllowed") {
                Some(old) => {
                    if old["status"] == "False"
                        && let Some(t) = old.get("lastTransitionTime")
                    {
                        cond["lastTransitionTime"] = t.clone();
                    }
                    *old = cond;
                }
                None => conds.push(cond),
            }
        }
    }
    let opts = crate::store::WriteOptions {
        dry_run: false,
        manager: manager.to_string(),
        force: false,
        status: true,
    };
    store.update(pdb_res, ns, pdb_name, pdb, &opts)?;
    Ok(())
}

/// `ValidatePodLogOptions`, for the numeric options.
fn check_log_options(q: &Query, name: &str) -> Result<(), ApiError> {
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
fn container_names(pod: &Value) -> Vec<String> {
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
fn pick_container(pod: &Value, name: &str, wanted: Option<&str>) -> Result<(), ApiError> {
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

fn node_of(pod: &Value) -> Option<&str> {
    pod.pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
}

fn no_host(name: &str) -> ApiError {
    ApiError::bad_request(format!("pod {name} does not have a host assigned"))
}

/// What a bound pod's streaming request ends in when there is no kubelet:
/// the node must exist and have an address, and then nothing answers on
/// its kubelet port.
fn kubelet_unreachable(store: &Store, node: &str) -> ApiError {
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

/// The subresources that update a part of the object: GET answers the
/// object, PUT and PATCH change only the part the subresource owns.
#[allow(clippy::too_many_arguments)]
async fn partial(
    shared: Arc<Shared>,
    method: &Method,
    headers: &HeaderMap,
    q: &Query,
    res: &Arc<Resource>,
    ns: &str,
    name: &str,
    ct: &str,
    body: &Bytes,
    sub: &str,
) -> Result<http::Response<Body>, ApiError> {
    let mut store = shared.store.lock().await;
    let current = store.get_value(res, ns, name)?;
    let wanted = match method.as_str() {
        "GET" if wants_table(headers) => {
            return Ok(value_response(
                StatusCode::OK,
                &crate::table::table(res, std::slice::from_ref(&current), store.revision(), None),
            ));
        }
        "GET" => return Ok(value_response(StatusCode::OK, &current)),
        "PUT" => {
            if ct.contains("protobuf") && !body.is_empty() {
                return Err(ApiError::unsupported_media_type(ct));
            }
            let v = parse_body(body, ct)?;
            Store::check_identity(res, ns, &v)?;
            if let Some(n) = v.pointer("/metadata/name").and_then(Value::as_str)
                && n != name
            {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({n}) does not match the name on the URL ({name})"
                )));
            }
            v
        }
        "PATCH" => {
            if body.is_empty() {
                return Err(ApiError::bad_request("the body of the request was empty"));
            }
            match ct.split(';').next().unwrap_or_default().trim() {
                "application/merge-patch+json" => semantics::merge_patch(&current, body)?,
                "application/json-patch+json" => semantics::json_patch(&current, body)?,
                "application/strategic-merge-patch+json" => {
                    semantics::strategic_patch(&current, body)?
                }
                other => return Err(ApiError::unsupported_media_type(other)),
            }
        }
        _ => return Err(ApiError::method_not_served()),
    };
    if !wanted.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request must be a JSON object",
        ));
    }
    crate::store::check_resource_version(res, name, &wanted, &current)?;
    let now = now();
    let (new, causes) = match sub {
        "ephemeralcontainers" => ephemeral_update(&current, &wanted),
        "resize" => resize_update(&current, &wanted),
        _ => approval_update(&current, &wanted, &now),
    };
    if !causes.is_empty() {
        return Err(ApiError::invalid(
            &res.group,
            &res.kind,
            &res.plural,
            name,
            causes,
        ));
    }
    let opts = write_options(q, headers, sub == "approval")?;
    let out = store.update(res, ns, name, new, &opts)?;
    Ok(json_response(StatusCode::OK, out))
}

fn cause(reason: &str, field: String, message: String) -> Cause {
    Cause {
        reason: reason.into(),
        field,
        message,
    }
}

fn list<'a>(v: &'a Value, pointer: &str) -> &'a [Value] {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// `dropNonEphemeralContainerUpdates` and the ephemeral-container update
/// validation: only `spec.ephemeralContainers` is taken; existing ones
/// may be neither removed nor changed, new ones need a unique name and an
/// image and may not set what an ephemeral container cannot have.
fn ephemeral_update(current: &Value, wanted: &Value) -> (Value, Vec<Cause>) {
    let mut new = current.clone();
    let wanted_ecs = list(wanted, "/spec/ephemeralContainers").to_vec();
    new["spec"]["ephemeralContainers"] = json!(wanted_ecs);
    if wanted_ecs.is_empty()
        && let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut)
    {
        spec.remove("ephemeralContainers");
    }
    let mut causes = Vec::new();
    let path = "spec.ephemeralContainers";
    let old_ecs = list(current, "/spec/ephemeralContainers");
    let ec_name = |c: &Value| {
        c.get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    for old in old_ecs {
        let n = ec_name(old);
        match wanted_ecs.iter().find(|c| ec_name(c) == n) {
            None => causes.push(cause(
                "FieldValueForbidden",
                path.into(),
                format!("Forbidden: existing ephemeral containers {n:?} may not be removed\n"),
            )),
            Some(c) if c != old => causes.push(cause(
                "FieldValueForbidden",
                format!("{path}[{n}]"),
                format!("Forbidden: existing ephemeral containers {n:?} may not be changed\n"),
            )),
            Some(_) => {}
        }
    }
    let mut seen: Vec<String> = ["initContainers", "containers"]
        .iter()
        .flat_map(|k| list(current, &format!("/spec/{k}")).iter().map(ec_name))
        .collect();
    for (i, c) in wanted_ecs.iter().enumerate() {
        let n = ec_name(c);
        let at = format!("{path}[{i}]");
        if n.is_empty() {
            causes.push(cause(
                "FieldValueRequired",
                format!("{at}.name"),
                "Required value".into(),
            ));
        } else if seen.contains(&n) {
            causes.push(cause(
                "FieldValueDuplicate",
                format!("{at}.name"),
                format!("Duplicate value: {n:?}"),
            ));
        }
        seen.push(n.clone());
        if old_ecs.iter().any(|o| ec_name(o) == n) {
            continue;
        }
        if c.get("image")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .is_empty()
        {
            causes.push(cause(
                "FieldValueRequired",
                format!("{at}.image"),
                "Required value".into(),
            ));
        }
        for f in [
            "ports",
            "resources",
            "resizePolicy",
            "lifecycle",
            "livenessProbe",
            "readinessProbe",
            "startupProbe",
            "restartPolicy",
        ] {
            let set = c.get(f).is_some_and(|v| match v {
                Value::Null => false,
                Value::Array(a) => !a.is_empty(),
                Value::Object(m) => !m.is_empty(),
                _ => true,
            });
            if set {
                causes.push(cause(
                    "FieldValueForbidden",
                    format!("{at}.{f}"),
                    "Forbidden: cannot be set for an Ephemeral Container".into(),
                ));
            }
        }
    }
    (new, causes)
}

/// `dropNonResizeUpdates` and the resize validation: only the resources
/// and resize policies of existing containers (and init containers) are
/// taken, only cpu and memory may change, and the QoS class must stay.
fn resize_update(current: &Value, wanted: &Value) -> (Value, Vec<Cause>) {
    let mut new = current.clone();
    let mut causes = Vec::new();
    for k in ["containers", "initContainers"] {
        let wanted_cs = list(wanted, &format!("/spec/{k}")).to_vec();
        let Some(cs) = new
            .pointer_mut(&format!("/spec/{k}"))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for (i, c) in cs.iter_mut().enumerate() {
            let Some(w) = wanted_cs.iter().find(|w| w.get("name") == c.get("name")) else {
                continue;
            };
            for f in ["resources", "resizePolicy"] {
                match w.get(f) {
                    Some(v) => c[f] = v.clone(),
                    None => {
                        if let Some(m) = c.as_object_mut() {
                            m.remove(f);
                        }
                    }
                }
            }
            let old = list(current, &format!("/spec/{k}"))
                .get(i)
                .cloned()
                .unwrap_or(Value::Null);
            for part in ["requests", "limits"] {
                let before = old.pointer(&format!("/resources/{part}")).cloned();
                let after = c.pointer(&format!("/resources/{part}")).cloned();
                let names = |v: &Option<Value>| -> Vec<(String, Value)> {
                    v.as_ref()
                        .and_then(Value::as_object)
                        .map(|m| {
                            m.iter()
                                .filter(|(k, _)| !matches!(k.as_str(), "cpu" | "memory"))
                                .map(|(k, v)| (k.clone(), v.clone()))
                                .collect()
                        })
                        .unwrap_or_default()
                };
                if names(&before) != names(&after) {
                    causes.push(cause(
                        "FieldValueForbidden",
                        format!("spec.{k}[{i}].resources.{part}"),
                        "Forbidden: only cpu and memory resources are mutable".into(),
                    ));
                }
            }
        }
    }
    let old_qos = current
        .pointer("/status/qosClass")
        .and_then(Value::as_str)
        .unwrap_or_else(|| kube_semantics::defaults::pod_qos(current));
    let new_qos = kube_semantics::defaults::pod_qos(&new);
    if old_qos != new_qos {
        causes.push(cause(
            "FieldValueForbidden",
            "spec".into(),
            "Forbidden: Pod QOS Class may not change as a result of resizing".into(),
        ));
    }
    (new, causes)
}

/// The approval strategy: only `status.conditions` is taken, with the
/// update and transition times the server fills in; Approved, Denied and
/// Failed must be True, appear once, not be removed or changed, and
/// Approved and Denied exclude each other.
fn approval_update(current: &Value, wanted: &Value, now: &str) -> (Value, Vec<Cause>) {
    let mut conds = list(wanted, "/status/conditions").to_vec();
    let old = list(current, "/status/conditions");
    let mut causes = Vec::new();
    let path = "status.conditions";
    let ty = |c: &Value| {
        c.get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let mut seen: Vec<String> = Vec::new();
    for (i, c) in conds.iter_mut().enumerate() {
        let t = ty(c);
        let at = format!("{path}[{i}]");
        if t.is_empty() {
            causes.push(cause(
                "FieldValueRequired",
                format!("{at}.type"),
                "Required value".into(),
            ));
            continue;
        }
        let st = c
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if st.is_empty() {
            causes.push(cause(
                "FieldValueRequired",
                format!("{at}.status"),
                "Required value".into(),
            ));
        }
        if matches!(t.as_str(), "Approved" | "Denied" | "Failed") {
            if seen.contains(&t) {
                causes.push(cause(
                    "FieldValueDuplicate",
                    format!("{at}.type"),
                    format!("Duplicate value: {t:?}"),
                ));
            }
            if !st.is_empty() && st != "True" {
                causes.push(cause(
                    "FieldValueNotSupported",
                    format!("{at}.status"),
                    format!("Unsupported value: {st:?}: supported values: \"True\""),
                ));
            }
            if (t == "Approved" && seen.iter().any(|s| s == "Denied"))
                || (t == "Denied" && seen.iter().any(|s| s == "Approved"))
            {
                causes.push(cause(
                    "FieldValueInvalid",
                    format!("{at}.type"),
                    format!("Invalid value: {t:?}: Approved and Denied conditions are mutually exclusive"),
                ));
            }
        }
        seen.push(t.clone());
        let before = old.iter().find(|o| ty(o) == t);
        if let Some(m) = c.as_object_mut() {
            if m.get("lastUpdateTime").is_none_or(Value::is_null) {
                m.insert("lastUpdateTime".into(), json!(now));
            }
            if m.get("lastTransitionTime").is_none_or(Value::is_null) {
                let kept = before
                    .filter(|o| o.get("status").and_then(Value::as_str) == Some(st.as_str()))
                    .and_then(|o| o.get("lastTransitionTime").cloned());
                m.insert("lastTransitionTime".into(), kept.unwrap_or(json!(now)));
            }
        }
    }
    for o in old {
        let t = ty(o);
        if !matches!(t.as_str(), "Approved" | "Denied" | "Failed") {
            continue;
        }
        match conds.iter().position(|c| ty(c) == t) {
            None => causes.push(cause(
                "FieldValueForbidden",
                path.into(),
                format!("Forbidden: updates may not remove a condition of type {t:?}"),
            )),
            Some(i) if conds[i].get("status") != o.get("status") => causes.push(cause(
                "FieldValueForbidden",
                format!("{path}[{i}]"),
                format!("Forbidden: updates may not modify a condition of type {t:?}"),
            )),
            Some(_) => {}
        }
    }
    let mut new = current.clone();
    if !new.get("status").is_some_and(Value::is_object) {
        new["status"] = json!({});
    }
    new["status"]["conditions"] = json!(conds);
    (new, causes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_follow_label_selector_semantics() {
        let labels = json!({"app": "a", "tier": "web"});
        assert_eq!(selects(None, Some(&labels)), Some(false));
        assert_eq!(selects(Some(&json!({})), Some(&labels)), Some(true));
        assert_eq!(
            selects(Some(&json!({"matchLabels": {"app": "a"}})), Some(&labels)),
            Some(true)
        );
        assert_eq!(
            selects(Some(&json!({"matchLabels": {"app": "b"}})), Some(&labels)),
            Some(false)
        );
        let expr =
            json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}]});
        assert_eq!(selects(Some(&expr), Some(&labels)), Some(true));
        let bad = json!({"matchExpressions": [{"key": "tier", "operator": "Near"}]});
        assert_eq!(selects(Some(&bad), Some(&labels)), None);
    }

    #[test]
    fn containers_are_picked_as_the_server_picks_them() {
        let one = json!({"spec": {"containers": [{"name": "a"}]}});
        assert!(pick_container(&one, "p", None).is_ok());
        let e = pick_container(&one, "p", Some("b")).unwrap_err();
        assert_eq!(e.message, "container b is not valid for pod p");
        let two = json!({"spec": {"initContainers": [{"name": "i"}], "containers": [{"name": "a"}, {"name": "b"}]}});
        let e = pick_container(&two, "p", None).unwrap_err();
        assert_eq!(
            e.message,
            "a container name must be specified for pod p, choose one of: [i a b]"
        );
    }

    #[test]
    fn ephemeral_updates_take_only_ephemeral_containers() {
        let current = json!({"spec": {"containers": [{"name": "a", "image": "x"}]}});
        let wanted = json!({"spec": {"containers": [{"name": "changed"}], "ephemeralContainers": [{"name": "dbg", "image": "busybox"}]}});
        let (new, causes) = ephemeral_update(&current, &wanted);
        assert!(causes.is_empty(), "{causes:?}");
        assert_eq!(new["spec"]["containers"][0]["name"], "a");
        assert_eq!(new["spec"]["ephemeralContainers"][0]["name"], "dbg");
        let (_, causes) = ephemeral_update(&new, &current);
        assert_eq!(
            causes[0].message,
            "Forbidden: existing ephemeral containers \"dbg\" may not be removed\n"
        );
        let dup = json!({"spec": {"ephemeralContainers": [{"name": "a", "image": "x", "ports": [{"containerPort": 1}]}]}});
        let (_, causes) = ephemeral_update(&current, &dup);
        let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.ephemeralContainers[0].name",
                "spec.ephemeralContainers[0].ports"
            ]
        );
    }

    #[test]
    fn approvals_take_only_conditions_and_keep_decisions() {
        let current = json!({"spec": {"signerName": "s"}, "status": {}});
        let wanted = json!({"spec": {"signerName": "other"}, "status": {"certificate": "x", "conditions": [{"type": "Approved", "status": "True", "reason": "r"}]}});
        let (new, causes) = approval_update(&current, &wanted, "now");
        assert!(causes.is_empty(), "{causes:?}");
        assert_eq!(new["spec"]["signerName"], "s");
        assert!(new["status"].get("certificate").is_none());
        assert_eq!(new["status"]["conditions"][0]["lastUpdateTime"], "now");
        let (_, causes) = approval_update(&new, &json!({"status": {"conditions": []}}), "now");
        assert_eq!(
            causes[0].message,
            "Forbidden: updates may not remove a condition of type \"Approved\""
        );
        let both = json!({"status": {"conditions": [{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}]}});
        let (_, causes) = approval_update(&current, &both, "now");
        assert!(
            causes[0].message.contains("mutually exclusive"),
            "{causes:?}"
        );
    }

    #[test]
    fn resizes_take_only_resources_and_keep_the_qos_class() {
        let current = json!({"spec": {"containers": [{"name": "a", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}, "status": {"qosClass": "Burstable"}});
        let wanted = json!({"spec": {"containers": [{"name": "a", "image": "y", "resources": {"requests": {"cpu": "2"}}}]}});
        let (new, causes) = resize_update(&current, &wanted);
        assert!(causes.is_empty(), "{causes:?}");
        assert_eq!(new["spec"]["containers"][0]["image"], "x");
        assert_eq!(
            new["spec"]["containers"][0]["resources"]["requests"]["cpu"],
            "2"
        );
        let guaranteed = json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}]}});
        let (_, causes) = resize_update(&current, &guaranteed);
        assert_eq!(
            causes[0].message,
            "Forbidden: Pod QOS Class may not change as a result of resizing"
        );
    }
}
