//! Access reviews for tenant accounts: one SelfSubjectAccessReview per
//! (account, namespace, resource), made as the account (see
//! `crate::state::access` for why and when).
//!
//! This module must NOT write: a review is a read of the account's rights.

use super::*;

use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
use kube::api::{Api, PostParams};

use crate::state::{Access, AccessKey};

/// Asks whether the account of `key` may get its resource in its
/// namespace. `None` when the server gave no answer (asked again at the
/// next plan of that namespace).
pub(super) async fn review(shared: &Shared, key: AccessKey) -> (AccessKey, Option<Access>) {
    let (user, namespace, group, resource) = &key;
    let client = match shared.client_as(Some(user)) {
        Ok(c) => c,
        Err(e) => {
            let denied = Access::Denied(e);
            return (key, Some(denied));
        }
    };
    let body: Result<SelfSubjectAccessReview, _> = serde_json::from_value(serde_json::json!({
        "spec": {"resourceAttributes": {
            "namespace": namespace, "verb": "get", "group": group, "resource": resource,
        }},
    }));
    let Ok(body) = body else {
        return (key, None);
    };
    let answer = Api::<SelfSubjectAccessReview>::all(client)
        .create(&PostParams::default(), &body)
        .await;
    let what = if group.is_empty() {
        resource.clone()
    } else {
        format!("{resource}.{group}")
    };
    let access = match answer {
        Ok(r) if r.status.as_ref().is_some_and(|s| s.allowed) => Access::Allowed,
        Ok(_) => Access::Denied(format!(
            "{user} may not get {what} in namespace {namespace}: this SyncConfig's copies \
             there are neither planned nor written (grant the ServiceAccount get, list, watch, \
             create, patch and delete there; picked up at the next verification pass)"
        )),
        // The review itself refused: mirra may not act as the account
        // (no RoleBinding of deploy/mirror-tenants' ClusterRole in its
        // namespace). Nothing can be done for it until that changes.
        Err(kube::Error::Api(s)) if s.code == 403 => Access::Denied(format!(
            "mirra may not act as {user}: {}; bind the ClusterRole of deploy/mirror-tenants \
             to mirra's ServiceAccount in the SyncConfig's namespace (picked up at the next \
             verification pass)",
            s.message
        )),
        Err(e) => {
            shared.metrics.error("access-review");
            tracing::warn!(%user, %namespace, resource = %what, error = %e,
                "access review failed; asked again at the next plan");
            return (key, None);
        }
    };
    (key, Some(access))
}
