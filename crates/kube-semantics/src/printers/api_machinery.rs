//! Cells of flowcontrol.apiserver.k8s.io, internal.apiserver.k8s.io
//! StorageVersion, storagemigration.k8s.io, resource.k8s.io (dynamic resource
//! allocation) and apiregistration.k8s.io APIService.
//!
//! This module must NOT declare columns (see `columns`).

use super::*;

pub(super) fn flow_schema(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let distinguisher = present(o, &["spec", "distinguisherMethod"])
        .map(|d| st(d, &["type"]))
        .unwrap_or("<none>");
    let missing = arr(o, &["status", "conditions"])
        .iter()
        .find(|c| st(c, &["type"]) == "Dangling")
        .map(|c| st(c, &["status"]))
        .unwrap_or("?");
    vec![
        name(o).into(),
        st(o, &["spec", "priorityLevelConfiguration", "name"]).into(),
        // flowcontrol/v1 defaults an unset (zero) precedence to 1000.
        match int(o, &["spec", "matchingPrecedence"]) {
            0 => 1000,
            p => p,
        }
        .into(),
        distinguisher.into(),
        created(o, now),
        missing.into(),
    ]
}

/// Unset numbers print as their flowcontrol/v1 defaults: 30 shares when
/// the field is absent; 64 queues, hand size 8 and 50 requests a queue
/// when absent or zero.
pub(super) fn priority_level_configuration(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let none = || Value::from("<none>");
    let (mut shares, mut queues, mut hand, mut limit) = (none(), none(), none(), none());
    if let Some(limited) = present(o, &["spec", "limited"]) {
        shares = oint(limited, &["nominalConcurrencyShares"])
            .unwrap_or(30)
            .into();
        if let Some(q) = present(limited, &["limitResponse", "queuing"]) {
            let or_default = |field: &str, default: i64| match int(q, &[field]) {
                0 => default,
                n => n,
            };
            queues = or_default("queues", 64).into();
            hand = or_default("handSize", 8).into();
            limit = or_default("queueLengthLimit", 50).into();
        }
    }
    vec![
        name(o).into(),
        st(o, &["spec", "type"]).into(),
        shares,
        queues,
        hand,
        limit,
        created(o, now),
    ]
}

pub(super) fn storage_version(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let versions = arr(o, &["status", "storageVersions"]);
    let list: Vec<String> = versions
        .iter()
        .take(3)
        .map(|v| {
            format!(
                "{}={}",
                st(v, &["apiServerID"]),
                st(v, &["encodingVersion"])
            )
        })
        .collect();
    vec![
        name(o).into(),
        ost(o, &["status", "commonEncodingVersion"])
            .unwrap_or("<unset>")
            .into(),
        list_with_more(&list, versions.len(), 3).into(),
        created(o, now),
    ]
}

pub(super) fn storage_version_migration(o: &Value, _now: DateTime<Utc>) -> Vec<Value> {
    let r = get(o, &["spec", "resource"]).unwrap_or(&Value::Null);
    let gvr = format!(
        "{}.{}.{}",
        st(r, &["resource"]),
        st(r, &["version"]),
        st(r, &["group"])
    );
    vec![name(o).into(), gvr.into()]
}

pub(super) fn name_age(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![name(o).into(), created(o, now)]
}

pub(super) fn resource_claim(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let mut states = Vec::new();
    if deleting(o) {
        states.push("deleted");
    }
    if present(o, &["status", "allocation"]).is_none() {
        if !deleting(o) {
            states.push("pending");
        }
    } else {
        states.push("allocated");
        if !arr(o, &["status", "reservedFor"]).is_empty() {
            states.push("reserved");
        }
    }
    vec![name(o).into(), states.join(",").into(), created(o, now)]
}

pub(super) fn resource_slice(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        st(o, &["spec", "nodeName"]).into(),
        st(o, &["spec", "driver"]).into(),
        st(o, &["spec", "pool", "name"]).into(),
        created(o, now),
    ]
}

pub(super) fn api_service(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let service = present(o, &["spec", "service"])
        .map(|s| format!("{}/{}", st(s, &["namespace"]), st(s, &["name"])))
        .unwrap_or_else(|| "Local".to_string());
    let available = arr(o, &["status", "conditions"])
        .iter()
        .find(|c| st(c, &["type"]) == "Available")
        .map(|c| match (st(c, &["status"]), st(c, &["reason"])) {
            ("True", _) | (_, "") => st(c, &["status"]).to_string(),
            (status, reason) => format!("{status} ({reason})"),
        })
        .unwrap_or_else(|| "Unknown".to_string());
    vec![
        name(o).into(),
        service.into(),
        available.into(),
        created(o, now),
    ]
}
