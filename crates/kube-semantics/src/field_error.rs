/// One field-level cause of a 422 Invalid, as `Status.details.causes` carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub reason: &'static str,
    pub field: String,
    pub message: String,
}
