//! The API server's validation of resource quantities: LimitRange,
//! ResourceQuota and container resource requirements.
//!
//! These follow `pkg/apis/core/validation` (`ValidateLimitRange`,
//! `ValidateResourceQuota`, `ValidateContainerResourceRequirements`) and the
//! name tables of `pkg/apis/core/helper`, and return the causes of the 422
//! `Invalid` answer in the server's words. Quantities are read as the server
//! sees them after decoding and defaulting: parsed, then rounded up to
//! milli precision (every map here is a `ResourceList`).
//!
//! Where Go prints a quantity struct itself (`Invalid value:
//! resource.Quantity{i:...}`) the text is reproduced from the quantity's
//! internal form, except the memory address of a decimal-held value.
//! Go iterates maps in random order; here map members are visited in the
//! document's order and LimitRange's per-resource checks in sorted order.
//!
//! This module must NOT validate object metadata (names, labels: see
//! [`crate::names`]), must NOT check fields other than those named here,
//! and does not report quantities that fail to parse: decoding fails
//! before validation runs, and [`crate::quantity::canonicalize_at`] reports
//! those. It must NOT panic on any JSON.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::field_error::FieldError;
use crate::gofmt;
use crate::names::is_qualified_name;
use crate::quantity::{Format, MAX_MILLI_VALUE, Quantity, parse, parse_json};

mod limit_range;
mod quota;
mod resource_names;

pub use limit_range::*;
pub use quota::*;
pub use resource_names::*;

/// What the hugepages rule of [`validate_resource_requirements`] needs to
/// know of a container's limits, or of its requests.
#[derive(Default)]
struct Seen {
    huge_pages: bool,
    cpu_or_memory: bool,
}

impl Seen {
    /// Notes the resource `name`, and refuses a hugepages quantity that is
    /// not a whole number of pages.
    fn note(&mut self, name: &str, q: &Quantity, fld: &str, errs: &mut Vec<FieldError>) {
        if is_huge_page_resource_name(name) {
            self.huge_pages = true;
            if !huge_page_value_divisible(name, q) {
                errs.push(FieldError::invalid(
                    fld,
                    &q.canonical(),
                    &format!("{q} is not positive integer multiple of {name}"),
                ));
            }
        }
        if name == "cpu" || name == "memory" {
            self.cpu_or_memory = true;
        }
    }
}

/// `ValidateContainerResourceRequirements` for the `resources` object of a
/// container at `path` (e.g. `spec.containers[0].resources`): resource
/// names, non-negative (and whole, for counts) values, requests not above
/// limits (equal for hugepages and extended resources), whole hugepages,
/// and hugepages only with cpu or memory.
///
/// Not covered: `claims` (checking them needs the pod's resource claims),
/// and the option to keep indivisible hugepages values an existing pod
/// already has (creation rules are applied).
pub fn validate_resource_requirements(path: &str, resources: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let lim_path = format!("{path}.limits");
    let req_path = format!("{path}.requests");
    let mut lim_seen = Seen::default();
    let mut req_seen = Seen::default();
    let limits = members(Some(resources), "limits");
    let mut decoded_limits: HashMap<&str, Option<Quantity>> = HashMap::new();

    for (name, v) in limits.into_iter().flatten() {
        let fld = format!("{lim_path}[{name}]");
        errs.extend(validate_container_resource_name(name, &fld));
        let q = decoded(v);
        decoded_limits.insert(name, q.clone());
        let Some(q) = q else { continue };
        errs.extend(validate_quantity_value(name, &q, &fld));
        lim_seen.note(name, &q, &fld, &mut errs);
    }
    for (name, v) in members(Some(resources), "requests").into_iter().flatten() {
        let fld = format!("{req_path}[{name}]");
        errs.extend(validate_container_resource_name(name, &fld));
        let Some(q) = decoded(v) else { continue };
        errs.extend(validate_quantity_value(name, &q, &fld));
        match decoded_limits.get(name.as_str()) {
            Some(Some(limit)) => {
                if q != *limit && !is_overcommit_allowed(name) {
                    errs.push(FieldError::invalid(
                        &req_path,
                        &q.canonical(),
                        &format!("must be equal to {name} limit of {limit}"),
                    ));
                } else if q > *limit {
                    errs.push(FieldError::invalid(
                        &req_path,
                        &q.canonical(),
                        &format!("must be less than or equal to {name} limit of {limit}"),
                    ));
                }
            }
            Some(None) => {}
            None => {
                if !is_overcommit_allowed(name) {
                    errs.push(FieldError::required(
                        &lim_path,
                        "Limit must be set for non overcommitable resources",
                    ));
                }
            }
        }
        req_seen.note(name, &q, &fld, &mut errs);
    }
    if !lim_seen.cpu_or_memory
        && !req_seen.cpu_or_memory
        && (req_seen.huge_pages || lim_seen.huge_pages)
    {
        errs.push(FieldError::forbidden(
            path,
            "HugePages require cpu or memory",
        ));
    }
    errs
}

#[cfg(test)]
mod tests;
