//! The error types of this crate, one enum per layer.
//!
//! - [`ValidationError`]: one problem in a SyncConfig's spec, with the field
//!   path it was found at. A spec collects all of them; together they form the
//!   message of the `Invalid` condition.
//! - [`RenderError`]: why the offline `render` could not produce its output.
//!
//! The planner itself has no error type: a problem with one item is an
//! [`crate::plan::OutcomeState::Failed`] outcome for that item, and every other
//! item keeps syncing.
//!
//! What this module must NOT do: decide retries. None of these errors is
//! retryable by waiting; each one needs the user to change their input.

use thiserror::Error;

/// One problem in a SyncConfig spec. Not retryable: the user must fix the
/// SyncConfig (the `path` names the field). While any is present the
/// SyncConfig is `Invalid`, writes nothing and prunes nothing.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ValidationError {
    /// The SyncConfig (or part of it) does not have the expected shape, e.g. a
    /// string where a list is expected. Fix the field's type.
    #[error("{path}: {message}")]
    Malformed {
        /// Where the problem is, e.g. `spec.namespaceSelector.matchNames`.
        path: String,
        /// What is wrong, as reported by the parser.
        message: String,
    },
    /// A required field is absent or empty. Add it.
    #[error("{path}: {message}")]
    Missing {
        /// The field that is missing.
        path: String,
        /// What is required.
        message: String,
    },
    /// A name pattern is not a valid regular expression. Fix the pattern.
    #[error("{path}: invalid regular expression {pattern:?}: {message}")]
    Pattern {
        /// Where the pattern is, e.g. `spec.namespaceSelector.matchNames[2]`.
        path: String,
        /// The pattern as written.
        pattern: String,
        /// The regular expression parser's explanation.
        message: String,
    },
    /// A label selector is not valid (unknown operator, bad key or value,
    /// values where none are allowed or none where some are required).
    #[error("{path}: {message}")]
    Selector {
        /// Where the problem is.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A name (after templating with a sample namespace) is not a valid
    /// Kubernetes object name. Fix the name.
    #[error("{path}: invalid name {name:?}: {message}")]
    Name {
        /// Where the name is.
        path: String,
        /// The name as written.
        name: String,
        /// Which rule it breaks.
        message: String,
    },
    /// Two entries of the spec contradict each other (the same object twice in
    /// syncItems, or in both syncItems and deleteItems). Remove one of them.
    #[error("{path}: {message}")]
    Contradiction {
        /// Where the second entry is.
        path: String,
        /// Which other entry it contradicts.
        message: String,
    },
}

impl ValidationError {
    /// The field path the problem was found at.
    pub fn path(&self) -> &str {
        match self {
            ValidationError::Malformed { path, .. }
            | ValidationError::Missing { path, .. }
            | ValidationError::Pattern { path, .. }
            | ValidationError::Selector { path, .. }
            | ValidationError::Name { path, .. }
            | ValidationError::Contradiction { path, .. } => path,
        }
    }
}

/// Why the offline render failed. Not retryable: the input files must change.
#[derive(Debug, Error)]
pub enum RenderError {
    /// A SyncConfig is invalid; the message lists every problem. Fix the
    /// SyncConfig, as the controller would refuse it too.
    #[error("SyncConfig {config} is invalid: {}", join_errors(.errors))]
    InvalidConfig {
        /// `namespace/name` of the SyncConfig.
        config: String,
        /// Every problem found.
        errors: Vec<ValidationError>,
    },
    /// An item could not be rendered for one namespace (for example its name
    /// is invalid once `${PROJECT_NAME}` is replaced).
    #[error("SyncConfig {config}, namespace {namespace}: {reason}")]
    ItemFailed {
        /// `namespace/name` of the SyncConfig.
        config: String,
        /// The target namespace.
        namespace: String,
        /// What went wrong.
        reason: String,
    },
    /// The output could not be serialized as YAML (a bug, not an input
    /// problem; please report it).
    #[error("cannot serialize the rendered objects: {0}")]
    Yaml(#[from] serde_yaml::Error),
}

/// Joins validation errors into one line, as used in the `Invalid` condition.
pub fn join_errors(errors: &[ValidationError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}
