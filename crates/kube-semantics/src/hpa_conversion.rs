//! HorizontalPodAutoscaler between `autoscaling/v1` and `autoscaling/v2`,
//! as the API server converts it.
//!
//! The server stores HPAs at `autoscaling/v2` and serves `autoscaling/v1`
//! too. v1 has room for one CPU utilisation target only, so everything
//! else travels in four annotations, which the server writes when it
//! answers in v1 and reads back (and drops) when a v1 object is written:
//!
//! ```text
//! v2 spec.metrics (all but the CPU utilisation) -> autoscaling.alpha.kubernetes.io/metrics
//! v2 spec.behavior                             -> autoscaling.alpha.kubernetes.io/behavior
//! v2 status.currentMetrics (all of them)       -> autoscaling.alpha.kubernetes.io/current-metrics
//! v2 status.conditions                         -> autoscaling.alpha.kubernetes.io/conditions
//! ```
//!
//! The metric annotations hold the v1 metric shapes (`targetAverageValue`,
//! `metricName`, ...), in the field order of the v1 Go types. The behavior
//! annotation holds the server's internal type marshalled without JSON
//! tags (`{"ScaleUp":{"StabilizationWindowSeconds":0,...}}`); where the
//! v1.33 source of that internal type could not be read here, its field
//! order (`StabilizationWindowSeconds`, `SelectPolicy`, `Policies`,
//! `Tolerance`) is taken from the feature's design document.
//!
//! A v1 object with no metric at all gets the CPU target of 80 %, as the
//! conversion does (v1 once defaulted that in the controller).
//!
//! This module must NOT default, validate or store anything: it maps one
//! shape to the other. Malformed metric annotations are the caller's 400;
//! a malformed behavior annotation is ignored, as upstream ignores it.

use serde_json::{Map, Value, json};

mod to_v1;
mod to_v2;

pub use to_v1::*;
pub use to_v2::*;

/// The annotation holding the v2 metrics v1 cannot express.
pub const METRICS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/metrics";
/// The annotation holding `status.currentMetrics`.
pub const CURRENT_METRICS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
/// The annotation holding `status.conditions`.
pub const CONDITIONS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/conditions";
/// The annotation holding `spec.behavior`.
pub const BEHAVIOR_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/behavior";

const ROUND_TRIP: [&str; 4] = [
    METRICS_ANNOTATION,
    BEHAVIOR_ANNOTATION,
    CURRENT_METRICS_ANNOTATION,
    CONDITIONS_ANNOTATION,
];

/// A v1 object whose round-trip annotations do not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("annotation {annotation}: {error}")]
pub struct ConversionError {
    /// Which annotation.
    pub annotation: &'static str,
    /// The JSON decoder's complaint.
    pub error: String,
}

type Obj = Map<String, Value>;

fn obj(v: Option<&Value>) -> Option<&Obj> {
    v.and_then(Value::as_object)
}

fn put(out: &mut Obj, key: &str, v: Option<&Value>) {
    if let Some(v) = v.filter(|v| !v.is_null()) {
        out.insert(key.into(), v.clone());
    }
}

/// A `resource.Quantity` that is not a pointer: its zero value is `"0"`.
fn quantity_or_zero(v: Option<&Value>) -> Value {
    v.filter(|v| !v.is_null())
        .cloned()
        .unwrap_or_else(|| json!("0"))
}

fn str_or_empty(v: Option<&Value>) -> Value {
    v.filter(|v| v.is_string())
        .cloned()
        .unwrap_or_else(|| json!(""))
}

#[cfg(test)]
mod tests;
