//! The subresources that update one part of an object (`ephemeralcontainers`,
//! `resize`, CSR `approval`): GET answers the object, PUT and PATCH change
//! only the part the subresource owns, with upstream's checks of the change.
//!
//! This module must NOT change any field outside the part its subresource
//! owns.

use super::*;

/// The subresources that update a part of the object: GET answers the
/// object, PUT and PATCH change only the part the subresource owns.
#[allow(clippy::too_many_arguments)]
pub(super) async fn partial(
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

pub(super) fn cause(reason: &str, field: String, message: String) -> Cause {
    Cause {
        reason: reason.into(),
        field,
        message,
    }
}

pub(super) fn list<'a>(v: &'a Value, pointer: &str) -> &'a [Value] {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// `dropNonEphemeralContainerUpdates` and the ephemeral-container update
/// validation: only `spec.ephemeralContainers` is taken; existing ones
/// may be neither removed nor changed, new ones need a unique name and an
/// image and may not set what an ephemeral container cannot have.
pub(super) fn ephemeral_update(current: &Value, wanted: &Value) -> (Value, Vec<Cause>) {
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
pub(super) fn resize_update(current: &Value, wanted: &Value) -> (Value, Vec<Cause>) {
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
pub(super) fn approval_update(current: &Value, wanted: &Value, now: &str) -> (Value, Vec<Cause>) {
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
