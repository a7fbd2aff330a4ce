//! Reading what a write request asks for: its body (JSON or YAML), `dryRun`,
//! `fieldValidation`, `fieldManager`, `force`, unknown or duplicate field
//! checks and the warnings they produce.
//!
//! This module must NOT call the store or write a response: it turns query
//! and body into checked values or an [`ApiError`].

use super::*;

/// The request's `Content-Type` (empty when missing or not text).
pub(crate) fn content_type(headers: &HeaderMap) -> &str {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
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

/// Takes the `preconditions` and `dryRun: ["All"]` of a `DeleteOptions`
/// object into `opts`: a DELETE's body and an Eviction's `deleteOptions`
/// both carry one. A body without `dryRun` keeps the query's answer.
pub(crate) fn read_delete_options(opts: &mut DeleteOptions, v: &Value) {
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

/// `fieldManager`, or the default the server derives from the user agent.
pub(crate) fn field_manager(q: &Query, headers: &HeaderMap) -> String {
    q.get("fieldManager")
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| default_manager(headers))
}

pub(crate) fn write_options(
    q: &Query,
    headers: &HeaderMap,
    status: bool,
) -> Result<WriteOptions, ApiError> {
    field_validation(q)?;
    Ok(WriteOptions {
        dry_run: dry_run(q)?,
        manager: field_manager(q, headers),
        force: q.flag("force"),
        status,
        protobuf: false,
    })
}

/// Unknown fields in a patch of a built-in kind or a custom resource (by
/// its schema). A merge or strategic
/// patch has the object's shape, so its unknown fields are dropped (or
/// refused) like a body's; a server-side apply fails on any, whatever
/// `fieldValidation` says. JSON patches are not looked into.
pub(super) fn check_patch_fields(
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
