//! The create-only review resources: `authentication.k8s.io/v1`
//! TokenReview and SelfSubjectReview, `authorization.k8s.io/v1`
//! SubjectAccessReview, LocalSubjectAccessReview, SelfSubjectAccessReview
//! and SelfSubjectRulesReview.
//!
//! They are answered as a v1.33 server whose only token authenticator is
//! the ServiceAccount one answers them: every request to the sandbox is
//! the anonymous user (`system:anonymous`, group
//! `system:unauthenticated`), a TokenReview authenticates the tokens the
//! sandbox issued (`crate::sa_token`) and nothing else, and the
//! authorizer is AlwaysAllow (every access allowed, with an empty reason;
//! every rule `*`). The registries' own
//! checks (`tokenreview/storage.go`, `selfsubjectreview/rest.go`,
//! `authorization/*/rest.go` and the authorization validation) come
//! first, with their status codes and texts.
//!
//! With `Config::auth` the caller is the authenticated user and the
//! decisions are the RBAC authorizer's (`crate::auth`): a SelfSubjectReview
//! answers the caller's name and groups, an access review `allowed` with
//! upstream's reason (`RBAC: allowed by ClusterRoleBinding "x" of
//! ClusterRole "y" to Group "z"`) or `allowed: false`, a rules review the
//! caller's rules in the namespace.
//!
//! What this module must NOT do: store anything, count as a write, or
//! decide who the caller is from the request itself.

use axum::body::Body;
use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode, header};
use serde_json::{Value, json};

use crate::http::{
    Query, check_fields, content_type, dry_run, field_manager, field_validation, parse_body,
    value_response, with_warnings,
};
use crate::registry::Resource;
use crate::route::ObjectRoute;
use crate::status::{ApiError, Cause};
use crate::store::Store;

/// The user every request is: the anonymous authenticator's.
pub const ANONYMOUS_USER: &str = "system:anonymous";
/// The anonymous user's only group.
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";

/// Answers a request to a review resource: a POST to its collection is a
/// review (201 with the answered object), any other method 405, any other
/// path 404.
pub async fn serve(
    shared: &crate::state::Shared,
    method: &Method,
    headers: &HeaderMap,
    q: &Query,
    o: &ObjectRoute,
    body: Bytes,
) -> Result<http::Response<Body>, ApiError> {
    let res = &o.res;
    // Only the collection path exists, and a namespaced review only under
    // its namespace.
    if o.name.is_some() || o.subresource.is_some() || (res.namespaced && o.namespace.is_none()) {
        return Err(ApiError::no_route());
    }
    if method != Method::POST {
        return Err(ApiError::method_not_served());
    }
    dry_run(q)?;
    let validation = field_validation(q)?;
    let ct = content_type(headers);
    // kubectl's typed clients send reviews as protobuf.
    let mut v = if ct.contains("protobuf") && !body.is_empty() {
        crate::protobuf::decode(&body, &res.api_version(), &res.kind)?
    } else {
        parse_body(&body, ct)?
    };
    let warnings = check_fields(res, &mut v, validation, true)?.unwrap_or_default();
    let ns = o.namespace.as_deref().unwrap_or_default();
    Store::check_identity(res, ns, &v)?;
    let manager = field_manager(q, headers);
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let store = shared.store.lock().await;
    let secs = shared.token_now();
    let authn = |token: &str, auds: &[String]| {
        crate::sa_token::review(&store, &shared.signer, token, auds, secs)
    };
    let access = match &shared.config.auth {
        Some(auth) => {
            let header = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok());
            let mut caller = crate::auth::authenticate(auth, &store, &shared.signer, header, secs)?;
            if let Some(acting_as) = crate::auth::impersonate(&store, &caller, headers)? {
                caller = acting_as;
            }
            Some(Access {
                caller,
                store: &store,
            })
        }
        None => None,
    };
    let out = review(res, ns, v, &manager, &now, &authn, access.as_ref())?;
    Ok(with_warnings(
        value_response(StatusCode::CREATED, &out),
        &warnings,
    ))
}

/// The anonymous user's info as the reviews report it.
fn anonymous() -> Value {
    json!({"username": ANONYMOUS_USER, "groups": [UNAUTHENTICATED_GROUP]})
}

/// How a TokenReview's token is judged: the token and the requested
/// audiences in, the review's `status` out.
pub type Authenticate<'a> = dyn Fn(&str, &[String]) -> Value + 'a;

/// What the reviews answer with when the sandbox authenticates and
/// authorizes (`Config::auth`): the caller, and the store the RBAC
/// authorizer reads.
pub struct Access<'a> {
    /// Who sent the review.
    pub caller: crate::auth::UserInfo,
    /// The store, locked by the caller.
    pub store: &'a Store,
}

/// An access review's attributes as the authorizer's request, from
/// `spec` (`namespace` overrides the attributes' own for a local review).
fn attributes(spec: &Value, namespace: Option<&str>) -> (Vec<String>, bool) {
    let s = |v: &Value, k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    if let Some(r) = spec.get("resourceAttributes").filter(|v| v.is_object()) {
        let ns = namespace.map_or_else(|| s(r, "namespace"), str::to_string);
        let parts = vec![
            s(r, "verb"),
            s(r, "group"),
            s(r, "resource"),
            s(r, "subresource"),
            ns,
            s(r, "name"),
        ];
        return (parts, true);
    }
    let n = spec
        .get("nonResourceAttributes")
        .cloned()
        .unwrap_or_default();
    (vec![s(&n, "verb"), s(&n, "path")], false)
}

/// The access review's status for `user`: the RBAC decision.
fn access_status(
    access: &Access<'_>,
    user: &crate::auth::UserInfo,
    spec: &Value,
    namespace: Option<&str>,
) -> Value {
    let (p, resource) = attributes(spec, namespace);
    let at = |i: usize| p.get(i).map(String::as_str).unwrap_or_default();
    let request = if resource {
        crate::auth::Request::Resource {
            verb: at(0),
            group: at(1),
            resource: at(2),
            subresource: at(3),
            namespace: at(4),
            name: at(5),
        }
    } else {
        crate::auth::Request::NonResource {
            verb: at(0),
            path: at(1),
        }
    };
    let d = crate::auth::decide(access.store, user, &request);
    let mut status = json!({"allowed": d.allowed});
    if !d.reason.is_empty() {
        status["reason"] = json!(d.reason);
    }
    status
}

/// A SubjectAccessReview's subject.
fn subject_of(spec: &Value) -> crate::auth::UserInfo {
    crate::auth::UserInfo {
        name: spec
            .get("user")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        groups: spec
            .get("groups")
            .and_then(Value::as_array)
            .map(|g| {
                g.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// Answers one review (the body already decoded and of the right kind).
/// `ns` is the URL's namespace (LocalSubjectAccessReview only). With
/// `access` the caller and the RBAC authorizer answer; without, the
/// anonymous user and AlwaysAllow.
pub fn review(
    res: &Resource,
    ns: &str,
    mut obj: Value,
    manager: &str,
    now: &str,
    authn: &Authenticate<'_>,
    access: Option<&Access<'_>>,
) -> Result<Value, ApiError> {
    if !obj.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request must be a JSON object",
        ));
    }
    obj["apiVersion"] = json!(res.api_version());
    obj["kind"] = json!(res.kind);
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    // The create handler sets a namespaced object's namespace from the
    // URL and clears a cluster-scoped one's.
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if res.namespaced {
            meta.insert("namespace".into(), json!(ns));
        } else {
            meta.remove("namespace");
        }
    }
    let invalid =
        |causes: Vec<Cause>| ApiError::invalid(&res.group, &res.kind, &res.plural, "", causes);
    let status = match res.kind.as_str() {
        "TokenReview" => {
            let token = obj
                .pointer("/spec/token")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if token.is_empty() {
                return Err(ApiError::bad_request(
                    "token is required for TokenReview in authentication",
                ));
            }
            let auds: Vec<String> = obj
                .pointer("/spec/audiences")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            authn(token, &auds)
        }
        "SelfSubjectReview" => match access {
            Some(a) => json!({"userInfo": {"username": a.caller.name, "groups": a.caller.groups}}),
            None => json!({"userInfo": anonymous()}),
        },
        "SubjectAccessReview" => {
            let causes = validate_access_review(&obj, true, false);
            if !causes.is_empty() {
                return Err(invalid(causes));
            }
            match access {
                Some(a) => access_status(a, &subject_of(&obj["spec"]), &obj["spec"], None),
                None => json!({"allowed": true}),
            }
        }
        "LocalSubjectAccessReview" => {
            let causes = validate_access_review(&obj, true, true);
            if !causes.is_empty() {
                return Err(invalid(causes));
            }
            match access {
                Some(a) => access_status(a, &subject_of(&obj["spec"]), &obj["spec"], Some(ns)),
                None => json!({"allowed": true}),
            }
        }
        "SelfSubjectAccessReview" => {
            let causes = validate_access_review(&obj, false, false);
            if !causes.is_empty() {
                return Err(invalid(causes));
            }
            match access {
                Some(a) => access_status(a, &a.caller, &obj["spec"], None),
                None => json!({"allowed": true}),
            }
        }
        "SelfSubjectRulesReview" => {
            let namespace = obj
                .pointer("/spec/namespace")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if namespace.is_empty() {
                return Err(ApiError::bad_request("no namespace on request"));
            }
            let status = match access {
                Some(a) => rules_status(a, namespace),
                None => json!({
                    "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                    "incomplete": false
                }),
            };
            // The registry answers a new object: the request's spec and
            // metadata are not echoed.
            return Ok(json!({
                "kind": res.kind,
                "apiVersion": res.api_version(),
                "metadata": {"creationTimestamp": null},
                "spec": {},
                "status": status,
            }));
        }
        _ => return Err(ApiError::no_route()),
    };
    // The field manager records the request before the registry answers
    // it, so the answer carries the creator's managedFields.
    let mut obj = crate::semantics::record_update(None, &obj, manager, now, None);
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.entry("creationTimestamp").or_insert(Value::Null);
    }
    obj["status"] = status;
    Ok(obj)
}

/// A SelfSubjectRulesReview's status: the caller's rules in `namespace`,
/// split as the API lists them.
fn rules_status(access: &Access<'_>, namespace: &str) -> Value {
    let (rules, errors) = crate::auth::rules_for(access.store, &access.caller, namespace);
    let list = |r: &Value, k: &str| r.get(k).cloned().unwrap_or_else(|| json!([]));
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    for r in &rules {
        if r.get("resources")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
        {
            let mut rule = json!({"verbs": list(r, "verbs")});
            for k in ["apiGroups", "resources", "resourceNames"] {
                if r.get(k)
                    .and_then(Value::as_array)
                    .is_some_and(|a| !a.is_empty())
                {
                    rule[k] = list(r, k);
                }
            }
            resource_rules.push(rule);
        }
        if r.get("nonResourceURLs")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
        {
            non_resource_rules.push(
                json!({"verbs": list(r, "verbs"), "nonResourceURLs": list(r, "nonResourceURLs")}),
            );
        }
    }
    let mut status = json!({
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": false,
    });
    if !errors.is_empty() {
        status["evaluationError"] = json!(errors);
    }
    status
}

fn cause(reason: &str, field: &str, message: String) -> Cause {
    Cause {
        reason: reason.into(),
        field: field.into(),
        message,
    }
}

/// `%#v`-style rendering of an attributes struct for `field.Invalid`
/// (`authorization.NonResourceAttributes{Path:"/x", Verb:"get"}`), or
/// `"null"` for an absent one, as apimachinery prints a nil pointer.
fn render_non_resource(v: Option<&Value>) -> String {
    let Some(v) = v else {
        return "\"null\"".into();
    };
    let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default();
    format!(
        "authorization.NonResourceAttributes{{Path:{:?}, Verb:{:?}}}",
        s("path"),
        s("verb")
    )
}

/// The authorization validation of the three access reviews
/// (`ValidateSubjectAccessReview`, `ValidateLocalSubjectAccessReview`,
/// `ValidateSelfSubjectAccessReview`): exactly one of the attribute kinds,
/// a user or group for the non-self reviews, well-formed selector
/// attributes, empty metadata, and for the local review a namespace that
/// matches and no non-resource attributes.
fn validate_access_review(obj: &Value, needs_subject: bool, local: bool) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let ra = spec.get("resourceAttributes").filter(|v| v.is_object());
    let nra = spec.get("nonResourceAttributes").filter(|v| v.is_object());
    if ra.is_some() && nra.is_some() {
        out.push(cause(
            "FieldValueInvalid",
            "spec.nonResourceAttributes",
            format!(
                "Invalid value: {}: cannot be specified in combination with resourceAttributes",
                render_non_resource(nra)
            ),
        ));
    }
    if ra.is_none() && nra.is_none() {
        out.push(cause(
            "FieldValueInvalid",
            "spec.resourceAttributes",
            format!(
                "Invalid value: {}: exactly one of nonResourceAttributes or resourceAttributes must be specified",
                render_non_resource(nra)
            ),
        ));
    }
    if needs_subject {
        let user = spec.get("user").and_then(Value::as_str).unwrap_or_default();
        let groups = spec
            .get("groups")
            .and_then(Value::as_array)
            .is_some_and(|g| !g.is_empty());
        if user.is_empty() && !groups {
            out.push(cause(
                "FieldValueInvalid",
                "spec.user",
                "Invalid value: \"\": at least one of user or group must be specified".into(),
            ));
        }
    }
    if let Some(ra) = ra {
        for (key, what) in [
            ("fieldSelector", "fieldSelector"),
            ("labelSelector", "labelSelector"),
        ] {
            let Some(sel) = ra.get(key).filter(|v| v.is_object()) else {
                continue;
            };
            let path = format!("spec.resourceAttributes.{what}");
            let raw = sel
                .get("rawSelector")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let reqs = sel
                .get("requirements")
                .and_then(Value::as_array)
                .is_some_and(|r| !r.is_empty());
            if !raw.is_empty() && reqs {
                out.push(cause(
                    "FieldValueInvalid",
                    &format!("{path}.rawSelector"),
                    format!(
                        "Invalid value: {raw:?}: may not specified at the same time as requirements"
                    ),
                ));
            }
            if raw.is_empty() && !reqs {
                out.push(cause(
                    "FieldValueRequired",
                    &format!("{path}.requirements"),
                    format!("Required value: when {path} is specified, requirements or rawSelector is required"),
                ));
            }
        }
    }
    let meta = obj.get("metadata").and_then(Value::as_object);
    let set: Vec<&String> = meta
        .map(|m| {
            m.iter()
                .filter(|(k, v)| {
                    !matches!(k.as_str(), "managedFields" | "namespace") && !is_zero(v)
                })
                .map(|(k, _)| k)
                .collect()
        })
        .unwrap_or_default();
    if !set.is_empty()
        && let Some(meta) = meta
    {
        out.push(cause(
            "FieldValueInvalid",
            "metadata",
            format!(
                "Invalid value: {}: must be empty",
                go_object_meta(meta, local)
            ),
        ));
    }
    if local {
        let ns = obj
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if let Some(ra) = ra {
            let ra_ns = ra
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if ra_ns != ns {
                out.push(cause(
                    "FieldValueInvalid",
                    "spec.resourceAttributes.namespace",
                    format!("Invalid value: {ra_ns:?}: must match metadata.namespace"),
                ));
            }
        }
        if nra.is_some() {
            out.push(cause(
                "FieldValueInvalid",
                "spec.nonResourceAttributes",
                format!(
                    "Invalid value: {}: disallowed on this kind of request",
                    render_non_resource(nra)
                ),
            ));
        }
    }
    out
}

/// Whether a metadata value is Go's zero value (absent in the object).
fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        Value::Bool(b) => !b,
    }
}

/// `%#v` of a `metav1.ObjectMeta` as the "must be empty" error prints it
/// (its string fields, the local review's namespace cleared).
fn go_object_meta(meta: &serde_json::Map<String, Value>, local: bool) -> String {
    let s = |k: &str| meta.get(k).and_then(Value::as_str).unwrap_or_default();
    let map = |k: &str| match meta.get(k).and_then(Value::as_object) {
        Some(m) if !m.is_empty() => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let inner: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{:?}:{:?}", k, v.as_str().unwrap_or_default()))
                .collect();
            format!("map[string]string{{{}}}", inner.join(", "))
        }
        _ => "map[string]string(nil)".into(),
    };
    let list = |k: &str| {
        meta.get(k)
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
            .map(|a| {
                let inner: Vec<String> = a
                    .iter()
                    .map(|v| format!("{:?}", v.as_str().unwrap_or_default()))
                    .collect();
                format!("[]string{{{}}}", inner.join(", "))
            })
            .unwrap_or_else(|| "[]string(nil)".into())
    };
    let generation = meta.get("generation").and_then(Value::as_i64).unwrap_or(0);
    format!(
        "v1.ObjectMeta{{Name:{:?}, GenerateName:{:?}, Namespace:{:?}, SelfLink:{:?}, UID:{:?}, ResourceVersion:{:?}, Generation:{generation}, CreationTimestamp:time.Date(1, time.January, 1, 0, 0, 0, 0, time.UTC), DeletionTimestamp:<nil>, DeletionGracePeriodSeconds:(*int64)(nil), Labels:{}, Annotations:{}, OwnerReferences:[]v1.OwnerReference(nil), Finalizers:{}, ManagedFields:[]v1.ManagedFieldsEntry(nil)}}",
        s("name"),
        s("generateName"),
        if local { "" } else { s("namespace") },
        s("selfLink"),
        s("uid"),
        s("resourceVersion"),
        map("labels"),
        map("annotations"),
        list("finalizers"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    fn no_authn(_: &str, _: &[String]) -> Value {
        json!({"user": {}, "error": "invalid bearer token"})
    }

    fn res(group: &str, plural: &str) -> std::sync::Arc<Resource> {
        Registry::with_builtins().get(group, "v1", plural).unwrap()
    }

    #[test]
    fn a_token_review_passes_the_token_and_audiences_to_the_authenticator() {
        let r = res("authentication.k8s.io", "tokenreviews");
        let seen = std::cell::RefCell::new(None);
        let record = |t: &str, a: &[String]| {
            *seen.borrow_mut() = Some((t.to_string(), a.to_vec()));
            no_authn(t, a)
        };
        let body = json!({"spec": {"token": "abc", "audiences": ["x"]}});
        let out = review(&r, "", body, "m", "t", &record, None).unwrap();
        assert_eq!(
            seen.borrow().clone(),
            Some(("abc".into(), vec!["x".into()]))
        );
        assert_eq!(out["status"]["error"], "invalid bearer token");
        assert!(out["status"].get("authenticated").is_none());
        assert_eq!(out["metadata"]["creationTimestamp"], Value::Null);
        let e = review(&r, "", json!({"spec": {}}), "m", "t", &no_authn, None).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (400, "token is required for TokenReview in authentication")
        );
    }

    #[test]
    fn access_reviews_are_validated_then_allowed() {
        let r = res("authorization.k8s.io", "subjectaccessreviews");
        let e = review(
            &r,
            "",
            json!({"spec": {"user": "u"}}),
            "m",
            "t",
            &no_authn,
            None,
        )
        .unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "SubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified"
        );
        let e = review(
            &r,
            "",
            json!({"spec": {"nonResourceAttributes": {"path": "/x", "verb": "get"}}}),
            "m",
            "t",
            &no_authn,
            None,
        )
        .unwrap_err();
        assert!(
            e.message.contains(
                "spec.user: Invalid value: \"\": at least one of user or group must be specified"
            ),
            "{}",
            e.message
        );
        let ok = review(&r, "", json!({"spec": {"user": "u", "resourceAttributes": {"verb": "get", "resource": "pods"}}}), "m", "t", &no_authn, None).unwrap();
        assert_eq!(ok["status"], json!({"allowed": true}));
        assert_eq!(ok["spec"]["user"], "u");

        let l = res("authorization.k8s.io", "localsubjectaccessreviews");
        let e = review(
            &l,
            "a",
            json!({"spec": {"user": "u", "resourceAttributes": {"namespace": "b", "verb": "get"}}}),
            "m",
            "t",
            &no_authn,
            None,
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "LocalSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes.namespace: Invalid value: \"b\": must match metadata.namespace"
        );
        let ok = review(
            &l,
            "a",
            json!({"spec": {"user": "u", "resourceAttributes": {"namespace": "a", "verb": "get"}}}),
            "m",
            "t",
            &no_authn,
            None,
        )
        .unwrap();
        assert_eq!(ok["metadata"]["namespace"], "a");

        let s = res("authorization.k8s.io", "selfsubjectaccessreviews");
        let e = review(&s, "", json!({"metadata": {"name": "x"}, "spec": {"nonResourceAttributes": {"path": "/", "verb": "get"}}}), "m", "t", &no_authn, None).unwrap_err();
        assert!(
            e.message
                .contains("metadata: Invalid value: v1.ObjectMeta{Name:\"x\""),
            "{}",
            e.message
        );
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            "[a-z:/*]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(
                    prop_oneof![
                        Just("spec".to_string()),
                        Just("metadata".to_string()),
                        Just("resourceAttributes".to_string()),
                        Just("nonResourceAttributes".to_string()),
                        Just("fieldSelector".to_string()),
                        Just("user".to_string()),
                        Just("namespace".to_string()),
                        Just("token".to_string()),
                        "[a-z]{1,4}",
                    ],
                    inner,
                    0..4,
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn any_body_gets_an_answer_or_a_status(body in json_value()) {
            let reg = Registry::with_builtins();
            for plural in ["subjectaccessreviews", "localsubjectaccessreviews",
                "selfsubjectaccessreviews", "selfsubjectrulesreviews"] {
                let r = reg.get("authorization.k8s.io", "v1", plural).unwrap();
                if let Err(e) = review(&r, "ns", body.clone(), "m", "t", &no_authn, None) {
                    proptest::prop_assert!(matches!(e.code, 400 | 422), "{e:?}");
                }
            }
            for plural in ["tokenreviews", "selfsubjectreviews"] {
                let r = reg.get("authentication.k8s.io", "v1", plural).unwrap();
                if let Err(e) = review(&r, "", body.clone(), "m", "t", &no_authn, None) {
                    proptest::prop_assert_eq!(e.code, 400);
                }
            }
        }
    }

    #[test]
    fn a_rules_review_lists_everything_for_its_namespace() {
        let r = res("authorization.k8s.io", "selfsubjectrulesreviews");
        let e = review(&r, "", json!({"spec": {}}), "m", "t", &no_authn, None).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (400, "no namespace on request")
        );
        let out = review(
            &r,
            "",
            json!({"spec": {"namespace": "a"}}),
            "m",
            "t",
            &no_authn,
            None,
        )
        .unwrap();
        assert_eq!(out["spec"], json!({}));
        assert_eq!(out["status"]["resourceRules"][0]["verbs"], json!(["*"]));
        assert_eq!(out["status"]["incomplete"], false);
    }
}
