//! Label and field selectors: parsing (with the API server's error texts)
//! and matching.
//!
//! ```text
//! ?labelSelector=app=web,tier in (a,b),!legacy   -> parse_label_selector -> LabelSelector::matches
//! ?fieldSelector=metadata.name=x,status.phase!=Y -> parse_field_selector -> FieldSelector::matches
//! ```
//!
//! The label parser reproduces apimachinery's lexer and recursive-descent
//! parser token for token, because clients see its error messages in 400
//! BadRequest answers (for example
//! `unable to parse requirement: <nil>: Invalid value: "app:x": name part must consist of ...`).
//! The field parser reproduces `fields.ParseSelector`, including `\,` `\=`
//! `\\` escapes in values.
//!
//! This module must NOT know which fields a kind supports (the caller passes
//! that list to [`FieldSelector::check_fields`]) and must NOT read objects
//! beyond the labels or fields it is asked to match.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use crate::field::FieldError;
use crate::names;

mod field_selector;
mod lexer;
mod parser;

pub use field_selector::*;
use lexer::*;
pub use parser::*;

/// A selector the API server would refuse. Every variant is a client error
/// (HTTP 400 BadRequest, not retryable): the user must fix the selector. The
/// `Display` text is the message the API server puts in its Status.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// The `labelSelector` does not parse or has an invalid key or value.
    #[error("{0}")]
    Label(String),
    /// The `fieldSelector` does not parse (unknown operator, bad escape).
    #[error("{0}")]
    Field(String),
    /// The `fieldSelector` names a field the kind does not support.
    #[error("{0}")]
    UnsupportedField(String),
}

/// A label selector operator, as the query-string syntax spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operator {
    /// `key in (a,b)`.
    In,
    /// `key notin (a,b)`.
    NotIn,
    /// `key=value`.
    Equals,
    /// `key==value`.
    DoubleEquals,
    /// `key!=value`.
    NotEquals,
    /// `key`.
    Exists,
    /// `!key`.
    DoesNotExist,
    /// `key>5` (integers).
    GreaterThan,
    /// `key<5` (integers).
    LessThan,
}

/// One requirement of a label selector; all must hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    key: String,
    operator: Operator,
    /// Sorted and de-duplicated, as apimachinery stores them.
    values: Vec<String>,
}

impl Requirement {
    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values, sorted.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    fn has_value(&self, v: &str) -> bool {
        self.values.iter().any(|x| x == v)
    }

    /// Whether the requirement holds for a label lookup.
    fn matches_with<'a>(&self, get: &impl Fn(&str) -> Option<&'a str>) -> bool {
        let found = get(&self.key);
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                found.is_some_and(|v| self.has_value(v))
            }
            Operator::NotIn | Operator::NotEquals => found.is_none_or(|v| !self.has_value(v)),
            Operator::Exists => found.is_some(),
            Operator::DoesNotExist => found.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let Some(Ok(have)) = found.map(str::parse::<i64>) else {
                    return false;
                };
                let Some(Ok(want)) = self.values.first().map(|v| v.parse::<i64>()) else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    have > want
                } else {
                    have < want
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.operator {
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
        };
        f.write_str(op)?;
        let set = matches!(self.operator, Operator::In | Operator::NotIn);
        if set {
            f.write_str("(")?;
        }
        f.write_str(&self.values.join(","))?;
        if set {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// A parsed label selector: the AND of its requirements. The empty selector
/// matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether the selector matches everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let get = |k: &str| labels.get(k).map(String::as_str);
        self.requirements.iter().all(|r| r.matches_with(&get))
    }

    /// Whether the labels seen through `get` (label key to value) satisfy
    /// every requirement; for callers that keep labels in their own layout.
    pub fn matches_lookup<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| r.matches_with(&get))
    }

    /// Whether a JSON labels object (`metadata.labels`; `None` or a non-object
    /// means no labels) satisfies every requirement, without copying it.
    /// Non-string values count as absent.
    pub fn matches_json(&self, labels: Option<&Value>) -> bool {
        let map = labels.and_then(Value::as_object);
        let get = |k: &str| map.and_then(|m| m.get(k)).and_then(Value::as_str);
        self.requirements.iter().all(|r| r.matches_with(&get))
    }

    /// Whether an object's `metadata.labels` satisfy every requirement.
    pub fn matches_object(&self, object: &Value) -> bool {
        self.matches_json(object.get("metadata").and_then(|m| m.get("labels")))
    }
}

impl fmt::Display for LabelSelector {
    /// The canonical form apimachinery prints (`a=b,c in (x,y)`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
