//! Cells of RBAC bindings, certificates.k8s.io (CertificateSigningRequest,
//! ClusterTrustBundle) and coordination.k8s.io (Lease, LeaseCandidate).
//!
//! This module must NOT declare columns (see `columns`).

use super::*;

pub(super) fn role_binding(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let role = format!(
        "{}/{}",
        st(o, &["roleRef", "kind"]),
        st(o, &["roleRef", "name"])
    );
    let mut users = Vec::new();
    let mut groups = Vec::new();
    let mut service_accounts = Vec::new();
    for s in arr(o, &["subjects"]) {
        match st(s, &["kind"]) {
            "User" => users.push(st(s, &["name"]).to_string()),
            "Group" => groups.push(st(s, &["name"]).to_string()),
            "ServiceAccount" => {
                service_accounts.push(format!("{}/{}", st(s, &["namespace"]), st(s, &["name"])));
            }
            _ => {}
        }
    }
    vec![
        name(o).into(),
        role.into(),
        created(o, now),
        users.join(", ").into(),
        groups.join(", ").into(),
        service_accounts.join(", ").into(),
    ]
}

pub(super) fn certificate_signing_request(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let conditions = arr(o, &["status", "conditions"]);
    let has = |t: &str| conditions.iter().any(|c| st(c, &["type"]) == t);
    // Denied outranks Approved, whatever the order of the conditions.
    let mut condition = if has("Denied") {
        "Denied"
    } else if has("Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_string();
    if has("Failed") {
        condition.push_str(",Failed");
    }
    if !st(o, &["status", "certificate"]).is_empty() {
        condition.push_str(",Issued");
    }
    let requested = oint(o, &["spec", "expirationSeconds"])
        .map(|s| human_duration(s.saturating_mul(SECOND)))
        .unwrap_or_else(|| "<none>".to_string());
    vec![
        name(o).into(),
        created(o, now),
        or_none(st(o, &["spec", "signerName"])).into(),
        st(o, &["spec", "username"]).into(),
        requested.into(),
        condition.into(),
    ]
}

pub(super) fn cluster_trust_bundle(o: &Value, _now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        or_none(st(o, &["spec", "signerName"])).into(),
    ]
}

pub(super) fn lease(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        st(o, &["spec", "holderIdentity"]).into(),
        created(o, now),
    ]
}

pub(super) fn lease_candidate(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        st(o, &["spec", "leaseName"]).into(),
        st(o, &["spec", "binaryVersion"]).into(),
        st(o, &["spec", "emulationVersion"]).into(),
        created(o, now),
    ]
}
