//! API errors as the Kubernetes API server reports them: a `Status` object
//! with the HTTP code, a machine-readable `reason` and, for validation
//! failures, field `causes`.
//!
//! Every failure the sandbox returns goes through [`ApiError`], so clients
//! (kubectl, kube-rs, the Python client) see the same reasons and codes they
//! would see from a real server. This module must not decide *when* an error
//! happens; it only knows how each one looks on the wire.

use serde_json::{Value, json};

/// One field-level cause inside a `Status`'s `details.causes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// The cause type, e.g. `FieldValueInvalid`, `FieldValueRequired`.
    pub reason: String,
    /// The field path, e.g. `metadata.name`.
    pub field: String,
    /// A human readable message.
    pub message: String,
}

impl From<kube_semantics::FieldError> for Cause {
    fn from(e: kube_semantics::FieldError) -> Self {
        Self {
            reason: e.reason.to_string(),
            field: e.field,
            message: e.message,
        }
    }
}

/// A failed API request, rendered as a `Status` object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// The `Status.reason` (`NotFound`, `AlreadyExists`, `Conflict`, ...).
    pub reason: &'static str,
    /// The message shown to users.
    pub message: String,
    /// `details.name`, when the error concerns one object.
    pub name: Option<String>,
    /// `details.group`.
    pub group: Option<String>,
    /// `details.kind` (the resource plural, as the real server puts it).
    pub kind: Option<String>,
    /// `details.causes`.
    pub causes: Vec<Cause>,
    /// `details.retryAfterSeconds` and the `Retry-After` header.
    pub retry_after: Option<u32>,
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            name: None,
            group: None,
            kind: None,
            causes: Vec::new(),
            retry_after: None,
        }
    }

    /// Adds the object identity to `details`.
    pub fn with_details(mut self, group: &str, resource: &str, name: &str) -> Self {
        self.group = (!group.is_empty()).then(|| group.to_string());
        self.kind = Some(resource.to_string());
        self.name = (!name.is_empty()).then(|| name.to_string());
        self
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 500 InternalError, as the API server answers an error it does not
    /// classify (a server-side apply naming unknown fields among others).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    /// 404 NotFound for an object: `configmaps "x" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(group, resource)),
        )
        .with_details(group, resource, name)
    }

    /// 404 NotFound for a URL that names nothing the server serves.
    pub fn no_route() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed(verb: &str, resource: &str) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!(
                "the server does not allow this method on the requested resource ({verb} {resource})"
            ),
        )
    }

    /// 409 AlreadyExists.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(group, resource)),
        )
        .with_details(group, resource, name)
    }

    /// 409 Conflict for an optimistic-concurrency failure.
    pub fn conflict(group: &str, resource: &str, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                qualified(group, resource)
            ),
        )
        .with_details(group, resource, name)
    }

    /// 409 Conflict for server-side apply field-manager conflicts.
    pub fn apply_conflict(
        group: &str,
        resource: &str,
        name: &str,
        message: String,
        causes: Vec<Cause>,
    ) -> Self {
        let mut e = Self::new(409, "Conflict", message).with_details(group, resource, name);
        e.causes = causes;
        e
    }

    /// 410 Gone, reason Expired: a resourceVersion or continue token older
    /// than the retained history.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 413 RequestEntityTooLarge.
    pub fn too_large(limit: usize) -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit}"),
        )
    }

    /// 415 UnsupportedMediaType.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml; got {content_type:?}"
            ),
        )
    }

    /// 415 for a body in a format the resource does not read, naming the
    /// ones it does (`application/json, application/yaml` for a custom
    /// resource, which has no protobuf form).
    pub fn unsupported_body_format(accepted: &[&str]) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    /// 406 for an `Accept` header that names no format the resource
    /// answers in.
    pub fn not_acceptable(accepted: &[&str]) -> Self {
        Self::new(
            406,
            "NotAcceptable",
            format!(
                "only the following media types are accepted: {}",
                accepted.join(", ")
            ),
        )
    }

    /// 422 Invalid with field causes:
    /// `ConfigMap "x" is invalid: metadata.name: Invalid value: ...`
    /// (`Deployment.apps "x" ...` for a kind of a named group).
    pub fn invalid(
        group: &str,
        kind: &str,
        resource: &str,
        name: &str,
        causes: Vec<Cause>,
    ) -> Self {
        // The aggregate prints each distinct text once, in order.
        let mut list: Vec<String> = Vec::new();
        for c in &causes {
            let text = format!("{}: {}", c.field, c.message);
            if !list.contains(&text) {
                list.push(text);
            }
        }
        let joined = if list.len() == 1 {
            list.join("")
        } else {
            format!("[{}]", list.join(", "))
        };
        // `schema.GroupKind.String()`: `Deployment.apps`, plain `ConfigMap`.
        let qualified_kind = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let mut e = Self::new(
            422,
            "Invalid",
            format!("{qualified_kind} \"{name}\" is invalid: {joined}"),
        )
        .with_details(group, resource, name);
        // The real server puts the kind (not the plural) into details.kind
        // for Invalid errors.
        e.kind = Some(kind.to_string());
        e.causes = causes;
        e
    }

    /// An error the registry returns without a status of its own: the
    /// server answers it with the code (500 unless a storage conflict) and
    /// no reason, the error's text as the message.
    pub fn unknown(code: u16, message: impl Into<String>) -> Self {
        Self::new(code, "", message)
    }

    /// 405 for a path the server serves with other methods only (the
    /// router's own answer, naming no resource).
    pub fn method_not_served() -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    }

    /// 405 for a verb the resource's storage does not implement
    /// (`watch is not supported on resources of kind "componentstatuses"`).
    pub fn method_not_supported(group: &str, resource: &str, action: &str) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!(
                "{action} is not supported on resources of kind {:?}",
                qualified(group, resource)
            ),
        )
        .with_details(group, resource, "")
    }

    /// 429 TooManyRequests with the registry's message (`Too many requests:
    /// ...`), a `Retry-After` only when positive.
    pub fn too_many_requests_because(message: &str, retry_after: u32, causes: Vec<Cause>) -> Self {
        let mut e = Self::new(
            429,
            "TooManyRequests",
            format!("Too many requests: {message}"),
        );
        e.retry_after = (retry_after > 0).then_some(retry_after);
        e.causes = causes;
        e
    }

    /// 403 Forbidden.
    pub fn forbidden(group: &str, resource: &str, name: &str, why: &str) -> Self {
        Self::new(
            403,
            "Forbidden",
            format!(
                "{} \"{name}\" is forbidden: {why}",
                qualified(group, resource)
            ),
        )
        .with_details(group, resource, name)
    }

    /// 401 Unauthorized: a bearer token no authenticator accepts.
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// 403 Forbidden for a non-resource path (no details to name).
    pub fn forbidden_path(message: String) -> Self {
        Self::new(403, "Forbidden", message)
    }

    /// 429 TooManyRequests with a `Retry-After`.
    pub fn too_many_requests(retry_after: u32) -> Self {
        let mut e = Self::new(
            429,
            "TooManyRequests",
            "The server has received too many requests and has asked us to try again later",
        );
        e.retry_after = Some(retry_after);
        e
    }

    /// An injected or internal error with an arbitrary code.
    pub fn with_code(code: u16) -> Self {
        let (reason, message) = match code {
            409 => ("Conflict", "injected conflict"),
            429 => (
                "TooManyRequests",
                "The server has received too many requests and has asked us to try again later",
            ),
            500 => ("InternalError", "Internal error occurred: injected fault"),
            503 => (
                "ServiceUnavailable",
                "The server is currently unable to handle the request",
            ),
            504 => (
                "Timeout",
                "The server was unable to return a response in the time allotted",
            ),
            _ => ("Unknown", "injected fault"),
        };
        Self::new(code, reason, message)
    }

    /// The `Status` object, its fields in the order the real server's
    /// encoder writes them (`kind, apiVersion, metadata, status, message,
    /// reason, details, code`: the Go struct's order).
    pub fn to_status(&self) -> Value {
        let mut details = serde_json::Map::new();
        if let Some(n) = &self.name {
            details.insert("name".into(), json!(n));
        }
        if let Some(g) = &self.group {
            details.insert("group".into(), json!(g));
        }
        if let Some(k) = &self.kind {
            details.insert("kind".into(), json!(k));
        }
        if !self.causes.is_empty() {
            let causes: Vec<Value> = self
                .causes
                .iter()
                .map(|c| {
                    // `field` is omitted when empty, as Go's encoder does.
                    let mut cause = json!({"reason": c.reason, "message": c.message});
                    if !c.field.is_empty() {
                        cause["field"] = json!(c.field);
                    }
                    cause
                })
                .collect();
            details.insert("causes".into(), Value::Array(causes));
        }
        if let Some(r) = self.retry_after {
            details.insert("retryAfterSeconds".into(), json!(r));
        }
        let mut status = serde_json::Map::new();
        status.insert("kind".into(), json!("Status"));
        status.insert("apiVersion".into(), json!("v1"));
        status.insert("metadata".into(), json!({}));
        status.insert("status".into(), json!("Failure"));
        status.insert("message".into(), json!(self.message));
        if !self.reason.is_empty() {
            status.insert("reason".into(), json!(self.reason));
        }
        if !details.is_empty() {
            status.insert("details".into(), Value::Object(details));
        }
        status.insert("code".into(), json!(self.code));
        Value::Object(status)
    }
}

/// `configmaps` or `deployments.apps`: how the server names a resource in
/// messages.
pub fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

/// A successful deletion without an object to return.
pub fn success_status(group: &str, resource: &str, name: &str, uid: &str) -> Value {
    let mut details = json!({"name": name, "kind": resource, "uid": uid});
    if !group.is_empty() {
        details["group"] = json!(group);
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_matches_the_real_server() {
        let s = ApiError::not_found("", "configmaps", "x").to_status();
        assert_eq!(s["message"], "configmaps \"x\" not found");
        assert_eq!(s["reason"], "NotFound");
        assert_eq!(s["code"], 404);
        assert_eq!(s["details"]["kind"], "configmaps");
        let s = ApiError::not_found("apps", "deployments", "d").to_status();
        assert_eq!(s["message"], "deployments.apps \"d\" not found");
        assert_eq!(s["details"]["group"], "apps");
    }

    #[test]
    fn invalid_lists_causes() {
        let e = ApiError::invalid(
            "",
            "ConfigMap",
            "configmaps",
            "Bad",
            vec![Cause {
                reason: "FieldValueInvalid".into(),
                field: "metadata.name".into(),
                message: "Invalid value: \"Bad\": nope".into(),
            }],
        );
        let s = e.to_status();
        assert_eq!(
            s["message"],
            "ConfigMap \"Bad\" is invalid: metadata.name: Invalid value: \"Bad\": nope"
        );
        assert_eq!(s["details"]["causes"][0]["field"], "metadata.name");
        assert_eq!(s["details"]["kind"], "ConfigMap");
    }

    #[test]
    fn status_fields_are_in_the_servers_order() {
        let e = ApiError::invalid(
            "example.com",
            "Widget",
            "widgets",
            "w",
            vec![Cause {
                reason: "FieldValueRequired".into(),
                field: "spec.name".into(),
                message: "Required value".into(),
            }],
        );
        let text = serde_json::to_string(&e.to_status()).unwrap();
        assert_eq!(
            text,
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Widget.example.com \"w\" is invalid: spec.name: Required value","reason":"Invalid","details":{"name":"w","group":"example.com","kind":"Widget","causes":[{"reason":"FieldValueRequired","message":"Required value","field":"spec.name"}]},"code":422}"#
        );
        let text = serde_json::to_string(&ApiError::no_route().to_status()).unwrap();
        assert_eq!(
            text,
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","code":404}"#
        );
    }

    #[test]
    fn retry_after_is_in_details() {
        let s = ApiError::too_many_requests(3).to_status();
        assert_eq!(s["details"]["retryAfterSeconds"], 3);
        assert_eq!(s["code"], 429);
    }
}
