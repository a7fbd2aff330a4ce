//! Who a request is and whether RBAC lets it: the user of a bearer token
//! or of an impersonation, a request's authorization, the escalation check
//! on role and binding writes, and `create` on an apply that creates.
//!
//! This module must NOT decide RBAC itself (`crate::auth` does); it maps
//! HTTP requests onto its questions.

use super::*;

/// Whether a write of `res` is subject to RBAC's escalation check.
pub(super) fn is_rbac_write(shared: &Shared, res: &crate::registry::Resource) -> bool {
    shared.config.auth.is_some() && res.group == "rbac.authorization.k8s.io"
}

/// RBAC's escalation prevention on a write of a role or binding (see
/// `crate::auth::check_escalation`), for the request's user.
pub(super) fn check_rbac_write(
    shared: &Shared,
    store: &crate::store::Store,
    headers: &HeaderMap,
    res: &crate::registry::Resource,
    ns: &str,
    obj: &Value,
) -> Result<(), ApiError> {
    let Some(auth) = shared
        .config
        .auth
        .as_ref()
        .filter(|_| is_rbac_write(shared, res))
    else {
        return Ok(());
    };
    let user = request_user(shared, auth, store, headers)?;
    crate::auth::check_escalation(store, &user, &res.plural, ns, obj)
}

/// The user a request acts as: its bearer token's, or the one it
/// impersonates (allowed to).
pub(super) fn request_user(
    shared: &Shared,
    auth: &crate::auth::AuthConfig,
    store: &crate::store::Store,
    headers: &HeaderMap,
) -> Result<crate::auth::UserInfo, ApiError> {
    let header = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let user = crate::auth::authenticate(auth, store, &shared.signer, header, shared.token_now())?;
    Ok(crate::auth::impersonate(store, &user, headers)?.unwrap_or(user))
}

/// An apply that would create its object is also a create: the real
/// server authorizes the `create` verb then (the patch handler's create
/// validation), on top of the `patch` the request itself was allowed, and
/// refuses with a Forbidden whose message is the authorizer's reason
/// alone (`services "x" is forbidden: `, then RBAC's reason, often empty).
pub(super) fn check_create_on_apply(
    shared: &Shared,
    store: &crate::store::Store,
    headers: &HeaderMap,
    res: &crate::registry::Resource,
    ns: &str,
    name: &str,
) -> Result<(), ApiError> {
    let Some(auth) = &shared.config.auth else {
        return Ok(());
    };
    let user = request_user(shared, auth, store, headers)?;
    let decision = crate::auth::decide(
        store,
        &user,
        &crate::auth::Request::Resource {
            verb: "create",
            group: &res.group,
            resource: &res.plural,
            subresource: "",
            namespace: ns,
            name,
        },
    );
    if decision.allowed {
        return Ok(());
    }
    Err(ApiError::forbidden(
        &res.group,
        &res.plural,
        name,
        &decision.reason,
    ))
}

/// Authenticates the request and asks the RBAC authorizer (see
/// `crate::auth`): a refusal is the server's 401 or 403.
pub(super) async fn authorize_request(
    shared: &Shared,
    auth: &crate::auth::AuthConfig,
    parts: &http::request::Parts,
    routed: &Route,
    q: &Query,
    path: &str,
) -> Result<(), ApiError> {
    let store = shared.store.lock().await;
    let user = request_user(shared, auth, &store, &parts.headers)?;
    let method = parts.method.as_str().to_ascii_lowercase();
    let request = match routed {
        Route::Object(o) => crate::auth::Request::Resource {
            verb: verb_of(&parts.method, o, q),
            group: &o.res.group,
            resource: &o.res.plural,
            subresource: o.subresource.as_deref().unwrap_or_default(),
            namespace: o.namespace.as_deref().unwrap_or_default(),
            name: o.name.as_deref().unwrap_or_default(),
        },
        _ => crate::auth::Request::NonResource {
            verb: &method,
            path,
        },
    };
    crate::auth::authorize(&store, &user, &request)
}
