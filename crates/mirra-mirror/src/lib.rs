//! mirra's mirror controller, minus the I/O: the `SyncConfig` resource
//! (espejo-compatible), namespace selection, `${PROJECT_NAME}` templating,
//! validation, and the PURE planner that turns cached state into writes.
//!
//! ```text
//! SyncConfig ──compile──> CompiledConfig ─┐
//! Namespace  ──────────> NamespaceView  ──┼─ plan_namespace ─> ops + outcomes
//! cached copies ───────> ObservedLookup ──┘                      │
//!                              outcomes of all namespaces ─ summarize ─> status
//! ```
//!
//! The controller (elsewhere) keys its work by target namespace: for each key
//! it calls [`plan_namespace`] with everything its caches hold, sends the
//! [`Op`]s (server-side apply as [`FIELD_MANAGER`], deletes with a uid
//! precondition), and folds the [`ItemOutcome`]s into each SyncConfig's
//! status with [`summarize`] and [`desired_status`]. [`render`] runs the same
//! planner offline.
//!
//! What this crate must NOT do: I/O of any kind, read the clock, hold global
//! state, or depend on a Kubernetes client. Everything here is a function of
//! its arguments, so the controller, `mirra render`, dry runs and property
//! tests all see the same decisions.

pub mod compile;
pub mod desired;
pub mod error;
pub mod limits;
pub mod marks;
pub mod names;
pub mod plan;
pub mod refs;
pub mod render;
pub mod resource;
pub mod selector;
pub mod status;
pub mod string_map;
pub mod template;
#[cfg(test)]
mod test_json;

pub use compile::{
    CompiledConfig, CompiledSpec, CopySource, CopyTemplate, DeleteTemplate, SourceState,
    SyncTemplate,
};
pub use desired::{
    DesiredCopy, body_id, desired_copy, digest_large_strings, is_subset, redact_secret_values,
};
pub use error::{RenderError, ValidationError};
pub use limits::{Footprint, LimitExceeded, Limits};
pub use marks::{
    ADOPTED_ANNOTATION, FIELD_MANAGER, FOR_NAMESPACE_ANNOTATION, HASH_ANNOTATION, MANAGED_BY_LABEL,
    MANAGED_BY_VALUE, OWNER_ANNOTATION, PRUNE_ANNOTATION, SERVICE_ACCOUNT_ANNOTATION,
};
pub use plan::{
    DeleteCause, ItemOutcome, ItemRef, NamespacePlan, ObservedLookup, ObservedObject, ObservedSet,
    Op, OutcomeState, merge_outcomes, namespaces_for_config_change, plan_namespace,
    plan_namespace_full, plan_namespace_narrow, plan_namespace_scoped, take_turns,
    with_adopted_mark,
};
pub use refs::{ConfigRef, Name, NameInterner, ObjectKey, ObjectRef};
pub use render::render;
pub use resource::{
    CopyItem, DeleteItem, LabelSelector, LabelSelectorRequirement, NamespaceSelector, SyncConfig,
    SyncConfigCondition, SyncConfigSpec, SyncConfigStatus, crd, crd_yaml,
};
pub use selector::NamespaceView;
pub use status::{StatusSummary, desired_status, status_changed, summarize, summarize_each};
pub use string_map::StringMap;
