//! Kubernetes `resource.Quantity`: parsing, canonical form and comparison.
//!
//! Every resource amount in the API (`cpu: 500m`, `memory: 1Gi`, quota
//! counts, volume sizes) is a Quantity. The API server parses what the
//! client sent, and what it stores and answers is the quantity's `String()`:
//! `0.5` comes back as `500m`, `1024Mi` as `1Gi`, `1.5Ki` as `1536`. Clients
//! diff what they sent against what they read back, so this module follows
//! apimachinery's `ParseQuantity` and `CanonicalizeBytes` rule for rule,
//! including its quirks:
//!
//! - a string the parser deems already canonical is kept verbatim (so `+5`,
//!   `05`, `1.` and `1E3` come back exactly as sent), because apimachinery
//!   caches the input string on its fast path;
//! - values are rounded up (away from zero) to a multiple of 1n, binary
//!   amounts are capped at 2^63-1;
//! - a binary (`Ki`..`Ei`) amount below 1024 in magnitude, or one that is not
//!   a whole number, is printed with decimal suffixes;
//! - a decimal amount of 1000E or more is printed without any suffix
//!   (`1000E` -> `1`): apimachinery looks up a suffix for 10^21, finds none
//!   and prints none. This is the server's behaviour, so it is ours.
//!
//! The fields of `core/v1` of type `ResourceList` (container resources,
//! LimitRange limits, ResourceQuota hard/used, node capacity, PVC requests)
//! are additionally rounded up to milli precision by the server's defaulting
//! (`SetDefaults_ResourceList`); [`Quantity::round_up`] and
//! [`canonicalize_resource_list_at`] do that step.
//!
//! This module must NOT know which fields of which kinds hold quantities
//! (the caller passes path patterns) and must NOT validate resource names
//! or ranges (that is [`crate::quantity_validation`]). Nothing here panics
//! or allocates in proportion to an exponent: `1e999999999` stays a short
//! digit string with a large exponent.
//!
//! Known differences from the Go code, for inputs no client sends:
//! exponents are added in 64-bit arithmetic where Go wraps 32-bit ones
//! (inputs with exponents near ±2^31), and integer accessors saturate where
//! Go's overflow behaviour varies by internal representation.

use std::cmp::Ordering;
use std::fmt;

use serde_json::Value;

use crate::gofmt;

mod canonicalize;
mod decimal;
mod text;

pub use canonicalize::*;
use decimal::*;
pub use text::*;

/// The regular expression apimachinery quotes in its format error (its
/// `splitREString`).
pub const SPLIT_RE: &str = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$";

/// Characters that may start a suffix (apimachinery's scanner set).
const SUFFIX_CHARS: &[u8] = b"eEinumkKMGTP";

/// `math.MaxInt64 / 1000`: the largest value whose milli value fits int64
/// (apimachinery's `MaxMilliValue`).
pub const MAX_MILLI_VALUE: i64 = i64::MAX / 1000;

/// Why a string is not a quantity; the texts are apimachinery's errors,
/// which the API server embeds in its 400 answer when decoding fails.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// The text is not a number followed by a suffix (`ErrFormatWrong`).
    #[error(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    FormatWrong,
    /// The number has no digits where the exact parser needs some
    /// (`ErrNumeric`, e.g. `.e-20`).
    #[error("unable to parse numeric part of quantity")]
    Numeric,
    /// The suffix is none of the known ones (`ErrSuffix`, e.g. `1i`, `1e`).
    #[error("unable to parse quantity's suffix")]
    Suffix,
}

/// How a quantity is printed; remembered from the suffix it was parsed with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `12e6`: printed with an `e` exponent (multiple of 3).
    DecimalExponent,
    /// `12Mi`: powers of 1024.
    BinarySI,
    /// `12M`: powers of 1000 (`n u m "" k M G T P E`).
    DecimalSI,
}

impl Format {
    /// The Go constant's string value (`"DecimalSI"` etc.).
    pub fn as_str(self) -> &'static str {
        match self {
            Format::DecimalExponent => "DecimalExponent",
            Format::BinarySI => "BinarySI",
            Format::DecimalSI => "DecimalSI",
        }
    }
}

/// Apimachinery keeps a quantity either as a scaled int64 (`int64Amount`)
/// or as an `inf.Dec`; which one shows in messages that print the struct,
/// and decides whether rounding keeps the cached string.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Amount {
    Int { value: i64, scale: i32 },
    Dec(Dec),
}

impl Amount {
    fn to_dec(&self) -> Dec {
        match self {
            Amount::Int { value, scale } => Dec::from_i64(*value, *scale),
            Amount::Dec(d) => d.clone(),
        }
    }
}

/// A parsed quantity: exact value, print format and (as apimachinery) the
/// original text when the parser judged it canonical already.
///
/// Equality and ordering compare the numeric value only (Go's `Cmp`):
/// `1Ki == 1024`.
#[derive(Clone, Debug)]
pub struct Quantity {
    amount: Amount,
    format: Format,
    cached: Option<String>,
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        match (&self.amount, &other.amount) {
            (
                Amount::Int {
                    value: a,
                    scale: sa,
                },
                Amount::Int {
                    value: b,
                    scale: sb,
                },
            ) if sa == sb => a.cmp(b),
            _ => self.amount.to_dec().cmp_value(&other.amount.to_dec()),
        }
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical())
    }
}

impl Quantity {
    /// Zero, as an unset `resource.Quantity{}` compares and prints (`"0"`).
    pub fn zero() -> Self {
        Quantity {
            amount: Amount::Int { value: 0, scale: 0 },
            format: Format::DecimalSI,
            cached: None,
        }
    }

    /// An integer quantity in the given format (Go's `NewQuantity`).
    pub fn from_i64(value: i64, format: Format) -> Self {
        Quantity {
            amount: Amount::Int { value, scale: 0 },
            format,
            cached: None,
        }
    }

    /// The format the quantity prints with.
    pub fn format(&self) -> Format {
        self.format
    }

    /// True when the value is zero.
    pub fn is_zero(&self) -> bool {
        self.sign() == 0
    }

    /// True when the value is below zero.
    pub fn is_negative(&self) -> bool {
        self.sign() < 0
    }

    /// -1, 0 or 1 (Go's `Sign`).
    pub fn sign(&self) -> i32 {
        match &self.amount {
            Amount::Int { value, .. } => value.signum() as i32,
            Amount::Dec(d) => d.signum(),
        }
    }

    /// The value rounded away from zero to an integer (Go's `Value`),
    /// saturated at the int64 bounds.
    pub fn value(&self) -> i64 {
        self.amount.to_dec().scaled_i64(0)
    }

    /// The value times 1000, rounded away from zero (Go's `MilliValue`),
    /// saturated at the int64 bounds.
    pub fn milli_value(&self) -> i64 {
        self.amount.to_dec().scaled_i64(-3)
    }

    /// What the API server prints for this quantity (Go's `String()`): the
    /// original text if the parser kept it, else the canonical form.
    pub fn canonical(&self) -> String {
        match &self.cached {
            Some(s) => s.clone(),
            None => self.compute_canonical(),
        }
    }

    /// Rounds the value away from zero to a multiple of 10^`scale` (Go's
    /// `RoundUp`); `false` when precision was lost. As in Go, a scaled-int
    /// quantity already that coarse keeps its original text.
    pub fn round_up(&mut self, scale: i32) -> bool {
        match &self.amount {
            Amount::Int { value, scale: s } => {
                if *s >= scale {
                    return true;
                }
                self.cached = None;
                let (rounded, exact) = Dec::from_i64(*value, *s).round_away(i64::from(scale));
                let shifted = Dec {
                    exp: rounded.exp - i64::from(scale),
                    ..rounded.clone()
                };
                self.amount = match shifted.to_i128().and_then(|v| i64::try_from(v).ok()) {
                    Some(v) => Amount::Int { value: v, scale },
                    None => Amount::Dec(rounded),
                };
                exact
            }
            Amount::Dec(d) => {
                self.cached = None;
                let (rounded, exact) = d.round_away(i64::from(scale));
                self.amount = Amount::Dec(rounded);
                exact
            }
        }
    }

    /// Moves the value to the exact-decimal representation, as Go's `AsDec`
    /// does to the receiver of a `Cmp` against a decimal quantity (visible
    /// only in messages that print the Go struct).
    pub(crate) fn make_dec_form(&mut self) {
        if let Amount::Int { .. } = self.amount {
            self.amount = Amount::Dec(self.amount.to_dec());
        }
    }

    /// Keeps the canonical text as the quantity's text, as Go's `String()`
    /// caches it in the quantity it is called on.
    pub(crate) fn cache_string(&mut self) {
        if self.cached.is_none() {
            self.cached = Some(self.compute_canonical());
        }
    }

    /// True when held as an exact decimal rather than a scaled int64.
    pub(crate) fn is_dec_form(&self) -> bool {
        matches!(self.amount, Amount::Dec(_))
    }

    /// The quantity as Go's `%#v` prints a `resource.Quantity` value, which
    /// is what validation messages show when they pass a quantity (not its
    /// string) as the bad value. The `inf.Dec` pointer of a decimal-held
    /// quantity is a memory address in Go; it cannot be reproduced, and is
    /// printed as `0xc000000000`.
    pub fn go_syntax(&self) -> String {
        let (i_value, i_scale, dec) = match &self.amount {
            Amount::Int { value, scale } => (*value, *scale, "(*inf.Dec)(nil)"),
            Amount::Dec(_) => (0, 0, "(*inf.Dec)(0xc000000000)"),
        };
        format!(
            "resource.Quantity{{i:resource.int64Amount{{value:{i_value}, scale:{i_scale}}}, \
             d:resource.infDecAmount{{Dec:{dec}}}, s:{}, Format:\"{}\"}}",
            gofmt::quote(self.cached.as_deref().unwrap_or_default()),
            self.format.as_str()
        )
    }

    /// Apimachinery's `CanonicalizeBytes`.
    fn compute_canonical(&self) -> String {
        let d = self.amount.to_dec();
        if d.is_zero() {
            return "0".to_string();
        }
        let mut format = self.format;
        let mut rounded = None;
        if format == Format::BinarySI {
            if d.cmp_abs(&Dec::from_i64(1024, 0)) == Ordering::Less {
                format = Format::DecimalSI;
            } else {
                let (r, exact) = d.round_away(0);
                if exact {
                    rounded = Some(r);
                } else {
                    format = Format::DecimalSI;
                }
            }
        }
        match (format, rounded) {
            (Format::BinarySI, Some(r)) => binary_canonical(&r).unwrap_or_else(|| {
                // Unreachable for parsed quantities (binary ones are capped at
                // 2^63-1); print decimally rather than expand a huge exponent.
                decimal_canonical(&r, Format::DecimalSI)
            }),
            (f, _) => decimal_canonical(&d, f),
        }
    }
}

#[cfg(test)]
mod tests;
