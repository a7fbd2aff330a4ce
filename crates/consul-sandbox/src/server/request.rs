//! Reading one request: its body (with the size limit), token, consistency
//! mode, tenancy scope, list filters and allowed methods.
//!
//! This module must NOT lock the store or answer the request: it only turns
//! what the client sent into checked values or an [`ApiError`].

use super::*;

/// Reads the body, enforcing the size limit first from `Content-Length`
/// and then while reading (for chunked bodies).
pub(super) async fn body(shared: &Shared, req: Request<Incoming>) -> Result<Bytes, ApiError> {
    let max = shared.config.max_body_bytes;
    let too_large = || ApiError::TooLarge(format!("Request body too large, max size: {max} bytes"));
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    match Limited::new(req.into_body(), max).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Err(e) => Err(ApiError::BadRequest(format!("Request decode failed: {e}"))),
    }
}

/// The request's token, in Consul's order of precedence: `?token=`, then
/// `X-Consul-Token`, then `Authorization: Bearer` (each only when not
/// empty).
pub(super) fn token(req: &Request<Incoming>, q: &Query) -> Option<String> {
    if let Some(t) = q.get("token").filter(|t| !t.is_empty()) {
        return Some(t.to_string());
    }
    if let Some(t) = req
        .headers()
        .get("X-Consul-Token")
        .and_then(|v| v.to_str().ok())
        && !t.is_empty()
    {
        return Some(t.to_string());
    }
    let auth = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())?;
    let mut parts = auth.trim().splitn(2, ' ');
    match (parts.next(), parts.next()) {
        (Some(scheme), Some(value)) if scheme.eq_ignore_ascii_case("bearer") => {
            Some(value.trim().to_string()).filter(|v| !v.is_empty())
        }
        _ => None,
    }
}

/// The consistency mode a read asked for, as Consul reports it in
/// `X-Consul-Effective-Consistency`, or Consul's 400 for conflicting modes
/// (`agent/http.go`, `parseConsistency`).
pub(super) fn consistency(q: &Query) -> Result<&'static str, ApiError> {
    let stale = q.has("stale");
    let consistent = q.has("consistent");
    if stale && consistent {
        return Err(ApiError::BadRequest(
            "Cannot specify ?stale with ?consistent, conflicting semantics.".into(),
        ));
    }
    if consistent && q.has("cached") {
        return Err(ApiError::BadRequest(
            "Cannot specify ?cached with ?consistent, conflicting semantics.".into(),
        ));
    }
    Ok(if consistent {
        "consistent"
    } else if stale {
        "stale"
    } else {
        "leader"
    })
}

/// Checks `dc`, `ns`, `partition` and `filter`, and returns the namespace
/// and partition asked for. The sandbox is one datacenter. Without
/// Enterprise features `default` is accepted for `ns` and `partition` (as
/// Consul Enterprise does) and any other value answers like Consul CE;
/// with them, the values are checked where they are used. The `filter`
/// expression language is not implemented.
pub(super) fn check_scope(shared: &Shared, q: &Query) -> Result<Scope, ApiError> {
    if let Some(dc) = q.get("dc")
        && !dc.is_empty()
        && dc != shared.config.datacenter
    {
        return Err(ApiError::Rpc("No path to datacenter".into()));
    }
    for (param, feature) in [("ns", "Namespaces"), ("partition", "Partitions")] {
        if shared.config.enterprise {
            break;
        }
        if let Some(v) = q.get(param)
            && !v.is_empty()
            && !v.eq_ignore_ascii_case("default")
        {
            return Err(ApiError::BadRequest(format!(
                "Invalid query parameter: \"{param}\" - {feature} are a Consul Enterprise feature"
            )));
        }
    }
    if q.get("filter").is_some_and(|f| !f.is_empty()) {
        return Err(ApiError::BadRequest(
            "Invalid query parameter: \"filter\" - filter expressions are not supported by consul-sandbox"
                .into(),
        ));
    }
    if !shared.config.enterprise {
        return Ok(Scope::ce());
    }
    Ok(Scope {
        enterprise: true,
        ns: q.get("ns").unwrap_or_default().to_string(),
        partition: q.get("partition").unwrap_or_default().to_string(),
    })
}

/// The admin partition an ACL request addresses: `?partition=` (which must
/// exist, as for catalog data), else `default`. Without Enterprise
/// features a partition other than `default` is refused as Consul CE does.
pub(super) fn acl_partition(shared: &Shared, q: &Query) -> Result<String, ApiError> {
    let named = q.get("partition").unwrap_or_default();
    let default = crate::model::DEFAULT_TENANCY.to_string();
    if !shared.config.enterprise {
        if named.is_empty() || named.eq_ignore_ascii_case(&default) {
            return Ok(default);
        }
        return Err(ApiError::BadRequest(
            "Invalid query parameter: \"partition\" - Partitions are a Consul Enterprise feature"
                .into(),
        ));
    }
    let scope = Scope {
        enterprise: true,
        ns: String::new(),
        partition: named.to_string(),
    };
    Ok(scope
        .data_partition(&shared.read(), &[])?
        .unwrap_or(default))
}

/// The partition and namespaces a catalog or health read covers. `ns=*`
/// (every namespace of the partition) is accepted where `wildcard`; an
/// unknown namespace reads as empty, as Consul's state store finds nothing
/// there; an unknown partition is refused as on writes.
pub(super) fn read_ns(
    shared: &Shared,
    scope: &Scope,
    wildcard: bool,
) -> Result<(String, NsSel), ApiError> {
    let default = crate::model::DEFAULT_TENANCY.to_string();
    if !scope.enterprise {
        return Ok((default, NsSel::default_ns()));
    }
    let partition = scope
        .data_partition(&shared.read(), &[])?
        .unwrap_or(default);
    let ns = match scope.ns.as_str() {
        "" => NsSel::default_ns(),
        "*" if wildcard => NsSel::All,
        n if tenancy::valid_name(n) => NsSel::One(n.to_string()),
        n => return Err(tenancy::invalid_name(false, n)),
    };
    Ok((partition, ns))
}

/// `read_ns` for endpoints about one service name: the partition and one
/// namespace's name.
pub(super) fn read_one_ns(shared: &Shared, scope: &Scope) -> Result<(String, String), ApiError> {
    match read_ns(shared, scope, false)? {
        (p, NsSel::One(n)) => Ok((p, n)),
        (p, NsSel::All) => Ok((p, crate::model::DEFAULT_TENANCY.to_string())),
    }
}

pub(super) fn list_filter(q: &Query, with_passing: bool) -> Result<ListFilter, ApiError> {
    let passing = if with_passing && q.has("passing") {
        match q.get("passing").unwrap_or_default() {
            "" => true,
            v => parse_go_bool(v)
                .ok_or_else(|| ApiError::BadRequest("Invalid value for ?passing".into()))?,
        }
    } else {
        false
    };
    Ok(ListFilter {
        tags: if q.has("tag") {
            Some(q.all("tag"))
        } else {
            None
        },
        node_meta: q.node_meta(),
        passing,
    })
}

/// Go's `strconv.ParseBool`.
pub(super) fn parse_go_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

pub(super) fn ensure_method(route: &Route, method: &Method) -> Result<(), ApiError> {
    let allowed = route.allowed();
    if allowed.contains(&method.as_str()) {
        return Ok(());
    }
    Err(ApiError::MethodNotAllowed {
        method: method.to_string(),
        allow: match allowed {
            ["PUT"] => "OPTIONS,PUT",
            ["POST", "DELETE"] => "POST,DELETE",
            _ => "OPTIONS,GET",
        },
    })
}
