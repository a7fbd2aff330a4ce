//! The server-side semantics of the Kubernetes API, as pure functions.
//!
//! `kube-sandbox` (the in-process API server used by mirra's tests,
//! benchmarks and `mirra dev`) stores objects as generic JSON and calls this
//! crate for everything the real API server decides about them:
//!
//! ```text
//! GET ?labelSelector=&fieldSelector=  -> selector   (parse, match, 400 texts)
//! POST / PUT (names, generateName)    -> names      (DNS rules, 422 texts)
//! PATCH merge / json / strategic      -> patch
//! PATCH apply (server-side apply)     -> apply      (managedFields, conflicts)
//! every write                         -> apply::record_update (managedFields)
//! decoding a built-in kind            -> quantity (canonical form, 400 texts)
//!                                        defaults (SetDefaults_* of v1.33)
//! a create or update                  -> validation, quantity_validation
//!                                        (422 causes as field_error)
//! GET as=Table (kubectl get)          -> printers (columns and cells)
//! autoscaling/v1 HorizontalPodAutoscaler -> hpa_conversion (to and from v2)
//! ```
//!
//! Error texts are the API server's own, byte for byte where clients can
//! see them, because kubectl, client libraries and tests match on them.
//!
//! This crate must NOT do I/O, read a clock, hold state or know HTTP: time
//! comes in as an RFC 3339 string, and errors come out as values that say
//! which HTTP status the server would answer. Nothing in it panics on any
//! input (property tests feed it random JSON and text). The functions
//! recurse over JSON values, so their depth is bounded by the parser that
//! built them (kube-sandbox decodes at most 250 levels).

pub mod apply;
pub mod defaults;
pub mod field;
pub mod field_error;
pub mod fieldpath;
mod gofmt;
pub mod hpa_conversion;
pub mod names;
pub mod patch;
pub mod printers;
pub mod quantity;
pub mod quantity_validation;
pub mod schema;
pub mod selector;
pub mod structural;
pub mod validation;

pub use apply::{
    ApplyError, FieldConflict, ManagedFieldsEntry, ManagedFieldsOptions, Operation, ResetFields,
    apply, apply_with, conflict_message, managed_fields, record_update, record_update_with,
};
pub use field_error::FieldError;
pub use names::{NameRule, generate_name};
pub use patch::{PatchError, json_patch, merge_patch, strategic_merge_patch};
pub use schema::{KeyField, ListMatcher, ListRule, ListSchema, ListType};
pub use selector::{
    FieldSelector, LabelSelector, SelectorError, parse_field_selector, parse_label_selector,
};
