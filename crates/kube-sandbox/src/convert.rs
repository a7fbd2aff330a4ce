//! Converted views: a resource served at a second version whose objects
//! are stored at another (`autoscaling/v1` HorizontalPodAutoscalers are
//! stored at `autoscaling/v2`).
//!
//! The store keeps one collection per resource, at its storage version;
//! a request through a view has its body converted to the storage version
//! before the store's decoding, defaulting and validation run, and every
//! object it answers (gets, lists, watch events, write responses)
//! converted back. Server-side printing works on the stored form, as the
//! real server prints its internal form whatever the version asked for.
//!
//! This module must NOT decide anything about a kind beyond its shape: the
//! mapping itself is `kube_semantics::hpa_conversion`.

use bytes::Bytes;
use serde_json::Value;

use crate::registry::Resource;
use crate::status::ApiError;

fn is_hpa_v1(res: &Resource) -> bool {
    res.stored_as.is_some()
        && res.group == "autoscaling"
        && res.version == "v1"
        && res.kind == "HorizontalPodAutoscaler"
}

/// The object as `res` serves it (unchanged unless `res` is a view).
pub fn to_view(res: &Resource, stored: Value) -> Value {
    if is_hpa_v1(res) {
        kube_semantics::hpa_conversion::to_v1(&stored)
    } else {
        stored
    }
}

/// [`to_view`] of an encoded object.
pub fn bytes_to_view(res: &Resource, stored: Bytes) -> Bytes {
    if res.stored_as.is_none() {
        return stored;
    }
    match crate::json::parse(&stored) {
        Ok(v) => match serde_json::to_vec(&to_view(res, v)) {
            Ok(b) => Bytes::from(b),
            Err(_) => stored,
        },
        Err(_) => stored,
    }
}

/// The storage form of a body written through `res` (unchanged unless
/// `res` is a view). A body the conversion cannot read is a 400.
pub fn to_storage(res: &Resource, body: Value) -> Result<Value, ApiError> {
    if !is_hpa_v1(res) {
        return Ok(body);
    }
    kube_semantics::hpa_conversion::to_v2(&body).map_err(|e| {
        // The server's decoder fails the request on a malformed
        // annotation; the text around the JSON error is this sandbox's.
        ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {kind}: {e}",
            kind = res.kind,
            version = res.version,
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hpa_v1() -> Resource {
        crate::registry::builtins()
            .into_iter()
            .find(|r| r.plural == "horizontalpodautoscalers" && r.version == "v1")
            .unwrap()
    }

    #[test]
    fn only_views_are_converted() {
        let v2 = crate::registry::builtins()
            .into_iter()
            .find(|r| r.plural == "horizontalpodautoscalers" && r.version == "v2")
            .unwrap();
        let body = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler"});
        assert_eq!(to_view(&v2, body.clone()), body);
        assert_eq!(to_storage(&v2, body.clone()).unwrap(), body);
        let v1 = hpa_v1();
        assert_eq!(v1.stored_as.as_deref(), Some("v2"));
        assert_eq!(to_view(&v1, body)["apiVersion"], "autoscaling/v1");
    }

    #[test]
    fn a_malformed_round_trip_annotation_is_a_400() {
        let body = json!({
            "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "a", "annotations": {
                "autoscaling.alpha.kubernetes.io/metrics": "[{"}},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d"}, "maxReplicas": 2}
        });
        let e = to_storage(&hpa_v1(), body).unwrap_err();
        assert_eq!(e.code, 400);
        assert!(
            e.message.starts_with("HorizontalPodAutoscaler in version \"v1\" cannot be handled as a HorizontalPodAutoscaler: annotation autoscaling.alpha.kubernetes.io/metrics: "),
            "{}",
            e.message
        );
    }

    #[test]
    fn undecodable_stored_bytes_are_passed_through() {
        let b = Bytes::from_static(b"not json");
        assert_eq!(bytes_to_view(&hpa_v1(), b.clone()), b);
    }
}
