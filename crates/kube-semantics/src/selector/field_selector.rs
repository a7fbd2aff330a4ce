//! Field selectors: parsing (with escapes) and matching against an object's
//! selectable fields.
//!
//! This module must NOT parse label selectors (see `parser`).

use super::*;

/// A field selector operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldOperator {
    /// `field=value` or `field==value`.
    Equals,
    /// `field!=value`.
    NotEquals,
}

/// One term of a field selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldRequirement {
    /// The dotted field path, e.g. `metadata.name`.
    pub field: String,
    /// The comparison.
    pub operator: FieldOperator,
    /// The unescaped value.
    pub value: String,
}

/// A parsed field selector: the AND of its terms. The empty selector
/// matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    pub(super) requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// The terms, in apimachinery's order (sorted by their text).
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// Whether the selector matches everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The value a term must equal for `field`, if some `=` term pins it
    /// (lets the caller use an index, e.g. for `metadata.name`).
    pub fn exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && r.operator == FieldOperator::Equals)
            .map(|r| r.value.as_str())
    }

    /// Whether `object` satisfies every term. A field is read by its dotted
    /// path; a missing field reads as the empty string (as the API server's
    /// field sets do), booleans and numbers as their text.
    pub fn matches(&self, object: &Value) -> bool {
        self.requirements.iter().all(|r| {
            let have = field_value(object, &r.field);
            let equal = have.as_deref().unwrap_or("") == r.value;
            match r.operator {
                FieldOperator::Equals => equal,
                FieldOperator::NotEquals => !equal,
            }
        })
    }

    /// Checks every term's field against the fields the kind supports.
    ///
    /// `builtin` picks the wording: built-in kinds answer
    /// `field label not supported: X`; custom resources answer
    /// `"X" is not a known field selector: only "a", "b"`.
    ///
    /// # Errors
    /// [`SelectorError::UnsupportedField`] for the first unsupported field.
    pub fn check_fields(&self, allowed: &[&str], builtin: bool) -> Result<(), SelectorError> {
        for r in &self.requirements {
            if !allowed.contains(&r.field.as_str()) {
                let msg = if builtin {
                    format!("field label not supported: {}", r.field)
                } else {
                    let only: Vec<String> =
                        allowed.iter().map(|a| crate::gofmt::quote(a)).collect();
                    format!(
                        "{} is not a known field selector: only {}",
                        crate::gofmt::quote(&r.field),
                        only.join(", ")
                    )
                };
                return Err(SelectorError::UnsupportedField(msg));
            }
        }
        Ok(())
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let op = match r.operator {
                FieldOperator::Equals => "=",
                FieldOperator::NotEquals => "!=",
            };
            write!(f, "{}{op}{}", r.field, escape_field_value(&r.value))?;
        }
        Ok(())
    }
}

/// Escapes a literal for use as a field selector value (`\` `,` `=`).
pub fn escape_field_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The text of the field at a dotted path, or `None` when absent or not a
/// scalar.
pub(super) fn field_value(object: &Value, path: &str) -> Option<String> {
    let mut cur = object;
    for part in path.split('.') {
        cur = cur.as_object()?.get(part)?;
    }
    match cur {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Splits on commas that are not escaped with a backslash.
pub(super) fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in s.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// Splits a term at its first operator (`!=`, `==`, `=` tried in that order
/// at each position).
pub(super) fn split_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for (op, kind) in [
            ("!=", FieldOperator::NotEquals),
            ("==", FieldOperator::Equals),
            ("=", FieldOperator::Equals),
        ] {
            if let Some(rhs) = rest.strip_prefix(op) {
                return Some((&term[..i], kind, rhs));
            }
        }
    }
    None
}

pub(super) fn unescape_field_value(s: &str) -> Result<String, String> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            match c {
                '\\' | ',' | '=' => out.push(c),
                other => {
                    return Err(format!(
                        "invalid field selector: invalid escape sequence: \\{other}"
                    ));
                }
            }
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            // Go prints the rune with %v: its code point number.
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                ));
            }
            other => out.push(other),
        }
    }
    if in_slash {
        return Err("invalid field selector: invalid escape sequence: \\".to_string());
    }
    Ok(out)
}

/// Parses a `fieldSelector` query parameter (`=`, `==`, `!=` on any dotted
/// field path, comma-separated; values may escape `\,` `\=` `\\`). The empty
/// string matches everything.
///
/// # Errors
/// [`SelectorError::Field`] with the API server's message.
pub fn parse_field_selector(s: &str) -> Result<FieldSelector, SelectorError> {
    let mut parts = split_terms(s);
    parts.sort_unstable();
    let mut requirements = Vec::new();
    for part in parts {
        if part.is_empty() {
            continue;
        }
        let Some((lhs, op, rhs)) = split_term(part) else {
            return Err(SelectorError::Field(format!(
                "invalid selector: '{s}'; can't understand '{part}'"
            )));
        };
        let value = unescape_field_value(rhs).map_err(SelectorError::Field)?;
        requirements.push(FieldRequirement {
            field: lhs.to_string(),
            operator: op,
            value,
        });
    }
    Ok(FieldSelector { requirements })
}
