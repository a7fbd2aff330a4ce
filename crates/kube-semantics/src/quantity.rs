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

/// An exact decimal: `digits` (most significant first, no leading zeros,
/// empty for zero) times 10^`exp`. Stands in for Go's `inf.Dec`; only the
/// operations quantities need, and none of them expands the exponent.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Dec {
    neg: bool,
    digits: Vec<u8>,
    exp: i64,
}

impl Dec {
    fn zero() -> Self {
        Dec {
            neg: false,
            digits: Vec::new(),
            exp: 0,
        }
    }

    fn new(neg: bool, digits: Vec<u8>, exp: i64) -> Self {
        let lead = digits.iter().take_while(|d| **d == 0).count();
        let digits = digits[lead..].to_vec();
        if digits.is_empty() {
            return Dec::zero();
        }
        Dec { neg, digits, exp }
    }

    fn from_i64(v: i64, scale: i32) -> Self {
        Dec::new(
            v < 0,
            u128_digits(u128::from(v.unsigned_abs())),
            i64::from(scale),
        )
    }

    fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    fn signum(&self) -> i32 {
        if self.is_zero() {
            0
        } else if self.neg {
            -1
        } else {
            1
        }
    }

    /// The digits without trailing zeros, and the exponent that keeps the value.
    fn trimmed(&self) -> (&[u8], i64) {
        let tz = self.digits.iter().rev().take_while(|d| **d == 0).count();
        (
            &self.digits[..self.digits.len() - tz],
            self.exp.saturating_add(tz as i64),
        )
    }

    fn cmp_abs(&self, other: &Dec) -> Ordering {
        match (self.is_zero(), other.is_zero()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            (false, false) => {}
        }
        let (a, ae) = self.trimmed();
        let (b, be) = other.trimmed();
        // Position just past the most significant digit decides first; with
        // trailing zeros gone, equal positions compare digit by digit.
        let am = ae.saturating_add(a.len() as i64);
        let bm = be.saturating_add(b.len() as i64);
        am.cmp(&bm).then_with(|| a.cmp(b))
    }

    fn cmp_value(&self, other: &Dec) -> Ordering {
        let (sa, sb) = (self.signum(), other.signum());
        if sa != sb {
            return sa.cmp(&sb);
        }
        match sa {
            0 => Ordering::Equal,
            1 => self.cmp_abs(other),
            _ => other.cmp_abs(self),
        }
    }

    fn negated(mut self, neg: bool) -> Dec {
        self.neg = neg && !self.is_zero();
        self
    }

    /// Rounds away from zero to a multiple of 10^`min_exp`; `true` when no
    /// precision was lost (inf's `RoundUp` rounder, apimachinery's `AsScale`).
    fn round_away(&self, min_exp: i64) -> (Dec, bool) {
        if self.is_zero() || self.exp >= min_exp {
            return (self.clone(), true);
        }
        let drop = min_exp.saturating_sub(self.exp);
        let len = self.digits.len() as i64;
        if drop >= len {
            return (
                Dec {
                    neg: self.neg,
                    digits: vec![1],
                    exp: min_exp,
                },
                false,
            );
        }
        let keep = (len - drop) as usize;
        let exact = self.digits[keep..].iter().all(|d| *d == 0);
        let mut kept = self.digits[..keep].to_vec();
        if !exact {
            increment(&mut kept);
        }
        (Dec::new(self.neg, kept, min_exp), exact)
    }

    fn mul_small(&mut self, m: u64) {
        let mut carry: u128 = 0;
        for d in self.digits.iter_mut().rev() {
            let v = u128::from(*d) * u128::from(m) + carry;
            *d = (v % 10) as u8;
            carry = v / 10;
        }
        let mut head = Vec::new();
        while carry > 0 {
            head.push((carry % 10) as u8);
            carry /= 10;
        }
        head.reverse();
        head.extend_from_slice(&self.digits);
        *self = Dec::new(self.neg, head, self.exp);
    }

    /// The value as an integer when it is one and has at most 38 digits.
    fn to_i128(&self) -> Option<i128> {
        if self.is_zero() {
            return Some(0);
        }
        let (digits, exp) = self.trimmed();
        if exp < 0 || exp.saturating_add(digits.len() as i64) > 38 {
            return None;
        }
        let mut v: i128 = 0;
        for d in digits {
            v = v.checked_mul(10)?.checked_add(i128::from(*d))?;
        }
        for _ in 0..exp {
            v = v.checked_mul(10)?;
        }
        Some(if self.neg { -v } else { v })
    }

    /// `ceil(|self| * 10^-scale)` with the sign, saturated to int64: Go's
    /// `ScaledValue` for values that fit.
    fn scaled_i64(&self, scale: i64) -> i64 {
        let shifted = Dec {
            exp: self.exp.saturating_sub(scale),
            ..self.clone()
        };
        let (rounded, _) = shifted.round_away(0);
        match rounded.to_i128() {
            Some(v) => v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64,
            None if rounded.neg => i64::MIN,
            None => i64::MAX,
        }
    }
}

fn u128_digits(mut v: u128) -> Vec<u8> {
    let mut out = Vec::new();
    while v > 0 {
        out.push((v % 10) as u8);
        v /= 10;
    }
    out.reverse();
    out
}

/// Adds one to a big-endian decimal digit string.
fn increment(digits: &mut Vec<u8>) {
    for d in digits.iter_mut().rev() {
        if *d == 9 {
            *d = 0;
        } else {
            *d += 1;
            return;
        }
    }
    digits.insert(0, 1);
}

/// Divides a big-endian decimal digit string by a small divisor.
fn divmod_small(digits: &[u8], divisor: u32) -> (Vec<u8>, u32) {
    let mut out = Vec::with_capacity(digits.len());
    let mut rem: u64 = 0;
    for d in digits {
        let cur = rem * 10 + u64::from(*d);
        out.push((cur / u64::from(divisor)) as u8);
        rem = cur % u64::from(divisor);
    }
    let lead = out.iter().take_while(|d| **d == 0).count();
    (out[lead..].to_vec(), rem as u32)
}

fn digits_to_string(digits: &[u8]) -> String {
    digits.iter().map(|d| char::from(b'0' + d)).collect()
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

/// Base-10 canonical form: trailing zeros moved into the exponent, then the
/// exponent lowered to a multiple of 3 (`AsCanonicalBytes`), then the suffix.
fn decimal_canonical(d: &Dec, format: Format) -> String {
    let (digits, exp) = d.trimmed();
    let pad = exp.rem_euclid(3);
    let exp = exp - pad;
    let mut out = String::new();
    if d.neg {
        out.push('-');
    }
    out.push_str(&digits_to_string(digits));
    for _ in 0..pad {
        out.push('0');
    }
    match format {
        Format::DecimalExponent => {
            if exp != 0 {
                out.push('e');
                out.push_str(&exp.to_string());
            }
        }
        _ => out.push_str(decimal_suffix(exp)),
    }
    out
}

/// The decimal SI suffix for 10^`exp`; none outside `n`..`E`, as Go's
/// failed table lookup prints nothing.
fn decimal_suffix(exp: i64) -> &'static str {
    match exp {
        -9 => "n",
        -6 => "u",
        -3 => "m",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => "",
    }
}

/// Base-1024 canonical form of an integer (`AsCanonicalBase1024Bytes`).
fn binary_canonical(d: &Dec) -> Option<String> {
    let (digits, exp) = d.trimmed();
    if exp < 0 || exp.saturating_add(digits.len() as i64) > 40 {
        return None;
    }
    let mut mag = digits.to_vec();
    mag.extend(std::iter::repeat_n(0u8, exp as usize));
    let mut times = 0;
    let base = [1, 0, 2, 4];
    while mag.len() > 4 || (mag.len() == 4 && mag.as_slice() >= base.as_slice()) {
        let (q, r) = divmod_small(&mag, 1024);
        if r != 0 {
            break;
        }
        mag = q;
        times += 1;
    }
    let suffix = match times {
        1 => "Ki",
        2 => "Mi",
        3 => "Gi",
        4 => "Ti",
        5 => "Pi",
        6 => "Ei",
        _ => "",
    };
    let mut out = String::new();
    if d.neg {
        out.push('-');
    }
    out.push_str(&digits_to_string(&mag));
    out.push_str(suffix);
    Some(out)
}

/// The pieces apimachinery's `parseQuantityString` scanner returns.
struct Scanned<'a> {
    positive: bool,
    value: &'a [u8],
    num: &'a [u8],
    denom: &'a [u8],
    suffix: &'a [u8],
}

/// Apimachinery's hand-written scanner: sign, digits (leading zeros
/// dropped), optional `.digits`, then suffix letters, optional sign, digits.
fn scan(s: &[u8]) -> Result<Scanned<'_>, QuantityError> {
    let end = s.len();
    let mut positive = true;
    let mut pos = 0;
    match s.first() {
        Some(b'-') => {
            positive = false;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }
    while pos < end && s[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        return Ok(Scanned {
            positive,
            value: b"0",
            num: b"0",
            denom: b"",
            suffix: b"",
        });
    }
    let num_start = pos;
    while pos < end && s[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos >= end {
        return Ok(Scanned {
            positive,
            value: s,
            num: &s[num_start..],
            denom: b"",
            suffix: b"",
        });
    }
    let num: &[u8] = if pos == num_start {
        b"0"
    } else {
        &s[num_start..pos]
    };
    let mut denom: &[u8] = b"";
    if s[pos] == b'.' {
        pos += 1;
        let denom_start = pos;
        while pos < end && s[pos].is_ascii_digit() {
            pos += 1;
        }
        if pos >= end {
            return Ok(Scanned {
                positive,
                value: s,
                num,
                denom: &s[denom_start..],
                suffix: b"",
            });
        }
        denom = &s[denom_start..pos];
    }
    let value = &s[..pos];
    let suffix_start = pos;
    while pos < end && SUFFIX_CHARS.contains(&s[pos]) {
        pos += 1;
    }
    if pos < end {
        if s[pos] == b'-' || s[pos] == b'+' {
            pos += 1;
        }
        if s[pos..].iter().any(|c| !c.is_ascii_digit()) {
            return Err(QuantityError::FormatWrong);
        }
    }
    Ok(Scanned {
        positive,
        value,
        num,
        denom,
        suffix: &s[suffix_start..],
    })
}

/// Base, exponent and format of a suffix (apimachinery's `interpret`).
fn interpret(suffix: &[u8]) -> Option<(u8, i32, Format)> {
    let dec = |e| Some((10, e, Format::DecimalSI));
    let bin = |e| Some((2, e, Format::BinarySI));
    match suffix {
        b"" => dec(0),
        b"n" => dec(-9),
        b"u" => dec(-6),
        b"m" => dec(-3),
        b"k" => dec(3),
        b"M" => dec(6),
        b"G" => dec(9),
        b"T" => dec(12),
        b"P" => dec(15),
        b"E" => dec(18),
        b"Ki" => bin(10),
        b"Mi" => bin(20),
        b"Gi" => bin(30),
        b"Ti" => bin(40),
        b"Pi" => bin(50),
        b"Ei" => bin(60),
        [b'e' | b'E', rest @ ..] if !rest.is_empty() => {
            // strconv.ParseInt(rest, 10, 64), then Go's int32() truncation.
            let e = parse_go_int64(rest)?;
            Some((10, e as i32, Format::DecimalExponent))
        }
        _ => None,
    }
}

/// Go's `strconv.ParseInt(s, 10, 64)`: optional sign, at least one digit,
/// no overflow.
fn parse_go_int64(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: i128 = 0;
    for d in digits {
        v = v * 10 + i128::from(d - b'0');
        if v > i128::from(i64::MAX) + 1 {
            return None;
        }
    }
    let v = if neg { -v } else { v };
    i64::try_from(v).ok()
}

/// Parses a quantity exactly as apimachinery's `ParseQuantity` does (no
/// surrounding whitespace allowed; see [`parse_json`] for the JSON form).
pub fn parse(s: &str) -> Result<Quantity, QuantityError> {
    if s.is_empty() {
        return Err(QuantityError::FormatWrong);
    }
    if s == "0" {
        return Ok(Quantity {
            amount: Amount::Int { value: 0, scale: 0 },
            format: Format::DecimalSI,
            cached: Some("0".to_string()),
        });
    }
    let sc = scan(s.as_bytes())?;
    let (base, exponent, format) = interpret(sc.suffix).ok_or(QuantityError::Suffix)?;

    // The int64 fast path, taken when the digits surely fit; it is also
    // where apimachinery keeps the input text when it looks canonical.
    let digit_count = (sc.num.len() + sc.denom.len()) as i64;
    let mut scale = 0i32;
    let mut mantissa = 1i64;
    let precision = match format {
        Format::DecimalExponent | Format::DecimalSI => {
            scale = exponent;
            18 - digit_count
        }
        Format::BinarySI => {
            if exponent >= 0 && sc.denom.is_empty() {
                mantissa = 1i64 << exponent.clamp(0, 62);
                15 - sc.num.len() as i64 - i64::from(exponent) * 3 / 10 - 1
            } else {
                -1
            }
        }
    };
    if precision >= 0 {
        scale = scale.wrapping_sub(sc.denom.len() as i32);
        if scale >= -9 {
            let shifted: Vec<u8> = sc.num.iter().chain(sc.denom).copied().collect();
            let value = parse_go_int64(&shifted).ok_or(QuantityError::Numeric)?;
            if let Some(mut result) = value.checked_mul(mantissa) {
                if !sc.positive {
                    result = -result;
                }
                let keep_text = match format {
                    Format::BinarySI => exponent % 10 == 0 && value & 0x07 != 0,
                    _ => {
                        scale % 3 == 0
                            && !shifted.ends_with(b"000")
                            && shifted.first() != Some(&b'0')
                    }
                };
                return Ok(Quantity {
                    amount: Amount::Int {
                        value: result,
                        scale,
                    },
                    format,
                    cached: keep_text.then(|| s.to_string()),
                });
            }
        }
    }

    // The exact path (inf.Dec): the whole number text, then the suffix.
    let mut neg = false;
    let mut digits = Vec::new();
    let mut frac = 0i64;
    let mut after_dot = false;
    for c in sc.value {
        match c {
            b'-' => neg = true,
            b'.' => after_dot = true,
            b'0'..=b'9' => {
                digits.push(c - b'0');
                if after_dot {
                    frac += 1;
                }
            }
            _ => {}
        }
    }
    if digits.is_empty() {
        return Err(QuantityError::Numeric);
    }
    let mut amount = Dec::new(false, digits, -frac);
    if base == 10 {
        amount.exp = amount.exp.saturating_add(i64::from(exponent));
    } else if !amount.is_zero() {
        amount.mul_small(1u64 << exponent.clamp(0, 63));
    }
    if !amount.is_zero() {
        // Non-zero amounts round up to 1n: asking for a sliver of a resource
        // should get some of it, not none.
        amount = amount.round_away(-9).0;
    }
    let max = Dec::from_i64(i64::MAX, 0);
    let mut format = format;
    if format == Format::BinarySI && amount.cmp_abs(&max) == Ordering::Greater {
        amount = max;
    }
    if format == Format::BinarySI
        && !amount.is_zero()
        && amount.cmp_abs(&Dec::from_i64(1, 0)) == Ordering::Less
    {
        format = Format::DecimalSI;
    }
    Ok(Quantity {
        amount: Amount::Dec(amount.negated(neg)),
        format,
        cached: None,
    })
}

/// Parses a quantity as it appears in a JSON document, as Quantity's
/// `UnmarshalJSON` does: a string (surrounding whitespace trimmed), a bare
/// number, or `null` (zero). Anything else fails with the format error.
///
/// Go sees the raw JSON text and this function sees a parsed value, so two
/// rare cases differ: a string written with JSON escapes (Go parses the
/// escapes literally and fails; here they are already decoded), and a
/// number written with an exponent or more digits than an `f64` holds
/// (here it is re-rendered from its `f64` value: `1e3` reads as `1000.0`,
/// so it prints as `1k` where the server prints `1e3`).
pub fn parse_json(v: &Value) -> Result<Quantity, QuantityError> {
    match v {
        Value::Null => Ok(Quantity::zero()),
        Value::String(s) => parse(s.trim_matches(is_go_space)),
        Value::Number(n) => parse(&n.to_string()),
        _ => Err(QuantityError::FormatWrong),
    }
}

/// Go's `unicode.IsSpace`, which `strings.TrimSpace` uses.
fn is_go_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{85}' | '\u{a0}'
    ) || (c as u32 > 0xff && c.is_whitespace())
}

/// The server's printed form of `s` (`parse(s)?.canonical()`).
pub fn canonicalize(s: &str) -> Result<String, QuantityError> {
    Ok(parse(s)?.canonical())
}

/// One step of a path pattern for [`canonicalize_at`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seg {
    /// The member with this name of an object.
    Key(String),
    /// Every member of an object (the values of a map such as a ResourceList).
    AnyKey,
    /// Every element of an array.
    AnyIndex,
}

/// A quantity that does not parse, with where it was found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {error}")]
pub struct QuantityFieldError {
    /// The field path, e.g. `spec.limits[0].max.cpu`.
    pub path: String,
    /// Why it does not parse; its text is the API server's.
    pub error: QuantityError,
}

/// Rewrites every quantity found at `pattern` to the text the API server
/// would store (its `String()`); fails, changing nothing, on the first value
/// that does not parse. Paths that do not exist are skipped. A `null` map
/// value (pattern ending in [`Seg::AnyKey`]) becomes `"0"`, as decoding a
/// `null` into a map of quantities gives zero; a `null` field is left alone
/// (a nil `*Quantity`).
pub fn canonicalize_at(obj: &mut Value, pattern: &[Seg]) -> Result<(), QuantityFieldError> {
    rewrite(obj, pattern, false)
}

/// [`canonicalize_at`] for fields of type `ResourceList` in `core/v1` (and
/// the pod templates embedding them): the server's defaulting also rounds
/// those up to milli precision (`SetDefaults_ResourceList`), so `1n` is
/// stored as `1m`.
pub fn canonicalize_resource_list_at(
    obj: &mut Value,
    pattern: &[Seg],
) -> Result<(), QuantityFieldError> {
    rewrite(obj, pattern, true)
}

fn rewrite(obj: &mut Value, pattern: &[Seg], milli: bool) -> Result<(), QuantityFieldError> {
    let mut found = Vec::new();
    collect(obj, pattern, String::new(), false, milli, &mut found)?;
    let mut replacements = found.into_iter();
    apply(obj, pattern, &mut replacements);
    Ok(())
}

fn join_key(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Read-only pass: the new text of every matched value, in visit order.
fn collect(
    v: &Value,
    pattern: &[Seg],
    path: String,
    in_map: bool,
    milli: bool,
    out: &mut Vec<Option<String>>,
) -> Result<(), QuantityFieldError> {
    let Some((seg, rest)) = pattern.split_first() else {
        if v.is_null() && !in_map {
            out.push(None);
            return Ok(());
        }
        let mut q = parse_json(v).map_err(|error| QuantityFieldError {
            path: path.clone(),
            error,
        })?;
        if milli {
            q.round_up(-3);
        }
        out.push(Some(q.canonical()));
        return Ok(());
    };
    match (seg, v) {
        (Seg::Key(k), Value::Object(m)) => {
            if let Some(child) = m.get(k) {
                collect(child, rest, join_key(&path, k), false, milli, out)?;
            }
        }
        (Seg::AnyKey, Value::Object(m)) => {
            for (k, child) in m {
                collect(child, rest, join_key(&path, k), true, milli, out)?;
            }
        }
        (Seg::AnyIndex, Value::Array(items)) => {
            for (i, child) in items.iter().enumerate() {
                collect(child, rest, format!("{path}[{i}]"), false, milli, out)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Write pass: same traversal as [`collect`], consuming its results.
fn apply(v: &mut Value, pattern: &[Seg], repl: &mut impl Iterator<Item = Option<String>>) {
    let Some((seg, rest)) = pattern.split_first() else {
        if let Some(Some(text)) = repl.next() {
            *v = Value::String(text);
        }
        return;
    };
    match (seg, v) {
        (Seg::Key(k), Value::Object(m)) => {
            if let Some(child) = m.get_mut(k) {
                apply(child, rest, repl);
            }
        }
        (Seg::AnyKey, Value::Object(m)) => {
            for (_, child) in m.iter_mut() {
                apply(child, rest, repl);
            }
        }
        (Seg::AnyIndex, Value::Array(items)) => {
            for child in items.iter_mut() {
                apply(child, rest, repl);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn canon(s: &str) -> String {
        match canonicalize(s) {
            Ok(c) => c,
            Err(e) => panic!("{s}: {e}"),
        }
    }

    fn q(s: &str) -> Quantity {
        match parse(s) {
            Ok(q) => q,
            Err(e) => panic!("{s}: {e}"),
        }
    }

    #[test]
    fn error_texts_are_apimachinerys() {
        assert_eq!(
            QuantityError::FormatWrong.to_string(),
            format!("quantities must match the regular expression '{SPLIT_RE}'")
        );
        assert_eq!(
            QuantityError::Numeric.to_string(),
            "unable to parse numeric part of quantity"
        );
        assert_eq!(
            QuantityError::Suffix.to_string(),
            "unable to parse quantity's suffix"
        );
    }

    // quantity_test.go TestQuantityParseEmit, positive and negated.
    #[test]
    fn parse_emit_table() {
        let table = [
            ("1Ki", "1Ki"),
            ("1Mi", "1Mi"),
            ("1Gi", "1Gi"),
            ("1024Mi", "1Gi"),
            ("1000M", "1G"),
            (".001Ki", "1024m"),
            (".000001Ki", "1024u"),
            (".000000001Ki", "1024n"),
            (".000000000001Ki", "2n"),
        ];
        for (input, want) in table {
            assert_eq!(canon(input), want, "{input}");
            assert_eq!(canon(&format!("-{input}")), format!("-{want}"), "-{input}");
        }
    }

    // quantity_test.go TestQuantityString: canonical strings are kept on
    // parse, and the alternates print canonically.
    #[test]
    fn string_table_canonical_and_alternates() {
        let table = [
            ("1Gi", "1024Mi"),
            ("300Mi", "307200Ki"),
            ("6Ki", ""),
            ("1001Gi", "1025024Mi"),
            ("1Ti", "1024Gi"),
            ("5", "5000m"),
            ("500m", "0.5"),
            ("1G", "1000M"),
            ("1G", "0.001T"),
            ("1m", "1000u"),
            ("80m", ""),
            ("1080m", "1.08"),
            ("1080m", "1080000000n"),
            ("300M", ""),
            ("1T", ""),
            ("1234567M", ""),
            ("1234567m", ""),
            ("3k", ""),
            ("1025", ""),
            ("0", ""),
            ("1e9", ".001e12"),
            ("1e-3", "0.001e0"),
            ("1e-9", "1000e-12"),
            ("80e-3", ""),
            ("300e6", ""),
            ("1e12", ""),
            ("1e3", ""),
            ("3e3", ""),
            ("0", "00"),
            ("1n", ""),
            ("80n", ""),
            ("1080n", ""),
            ("1u", ""),
            ("80u", ""),
            ("1080u", ""),
        ];
        for (canonical, alternate) in table {
            let p = q(canonical);
            assert_eq!(
                p.cached.as_deref(),
                Some(canonical),
                "kept text of {canonical}"
            );
            assert_eq!(p.canonical(), canonical);
            if !alternate.is_empty() {
                let a = q(alternate);
                assert_eq!(a.cached, None, "{alternate} must not be kept");
                assert_eq!(a.canonical(), canonical, "{alternate}");
            }
        }
    }

    #[test]
    fn brief_examples() {
        assert_eq!(canon("0.5"), "500m");
        assert_eq!(canon("1000m"), "1");
        assert_eq!(canon("1024Mi"), "1Gi");
        assert_eq!(canon("0.5Gi"), "512Mi");
        assert_eq!(canon("1.5Ki"), "1536");
        assert_eq!(canon("100Mi"), "100Mi");
        assert_eq!(canon("1.5"), "1500m");
        assert_eq!(canon("1.5Gi"), "1536Mi");
        assert_eq!(canon("-0"), "0");
        assert_eq!(canon("-0.0"), "0");
        // `1e3` is a decimal-exponent quantity already canonical: kept.
        assert_eq!(canon("1e3"), "1e3");
        assert_eq!(canon("1000e0"), "1e3");
        assert_eq!(canon("0.1m"), "100u");
        assert_eq!(canon("0.0000000001"), "1n");
    }

    // quantity_test.go TestQuantityParse: value and format of each input,
    // checked through the canonical text and comparison.
    #[test]
    fn parse_table_values_and_formats() {
        use Format::*;
        let table: &[(&str, &str, Format)] = &[
            ("0", "0", DecimalSI),
            ("0n", "0", DecimalSI),
            ("0Ki", "0", BinarySI),
            ("0Ti", "0", BinarySI),
            ("1", "1", DecimalSI),
            ("8Ki", "8192", DecimalSI),
            ("7Mi", "7340032", DecimalSI),
            ("3Ei", "3458764513820540928", DecimalSI),
            ("100Ti", "109951162777600", DecimalSI),
            ("5n", "5n", DecimalSI),
            ("50k", "50k", DecimalSI),
            ("40T", "40T", DecimalSI),
            ("12E", "12E", DecimalSI),
            ("1E-3", "1m", DecimalExponent),
            ("1e14", "100T", DecimalExponent),
            ("100.035k", "100035", DecimalSI),
            ("0.0005k", "500m", DecimalSI),
            ("0.5e-2", "5m", DecimalExponent),
            ("10.035M", "10035k", DecimalSI),
            ("1.3E+6", "1300k", DecimalExponent),
            ("1.7E18", "1700P", DecimalExponent),
            ("6.987654321G", "6987654321", DecimalSI),
            ("1.01E", "1010P", DecimalSI),
            ("3.001n", "4n", DecimalSI),
            ("1.1E-9", "2n", DecimalExponent),
            ("0.0000000005", "1n", DecimalSI),
            ("0.5e-9", "1n", DecimalExponent),
            ("0.9n", "1n", DecimalSI),
            ("0.00000012345", "124n", DecimalSI),
            ("0.00000012354", "124n", DecimalSI),
            ("9Ei", "9223372036854775807", DecimalSI),
            ("9223372036854775807Ki", "9223372036854775807", DecimalSI),
            ("100.035Ki", "102435840m", DecimalSI),
            ("0.5Mi", "524288", DecimalSI),
            ("0.05Gi", "53687091200m", DecimalSI),
            ("0.025Ti", "27487790694400m", DecimalSI),
            ("0.000000000001Ki", "2n", DecimalSI),
            (".001", "1m", DecimalSI),
            (".0001k", "100m", DecimalSI),
            ("1.", "1", DecimalSI),
            ("1.G", "1G", DecimalSI),
        ];
        for (input, value, format) in table {
            let got = q(input);
            let want = q(value);
            assert_eq!(got.cmp(&want), Ordering::Equal, "{input} vs {value}");
            if *value != "0"
                && !input.ends_with("Ki")
                && !input.ends_with("Mi")
                && !input.ends_with("Gi")
                && !input.ends_with("Ti")
                && !input.ends_with("Ei")
            {
                assert_eq!(got.format(), *format, "{input}");
            }
            let neg = q(&format!("-{input}"));
            let plus = q(&format!("+{input}"));
            assert_eq!(plus.cmp(&got), Ordering::Equal, "+{input}");
            if !got.is_zero() {
                assert!(neg.is_negative(), "-{input}");
                assert_eq!(
                    neg.compute_canonical(),
                    format!("-{}", got.compute_canonical())
                );
            }
        }
        // Binary formats as the table states them.
        assert_eq!(q("1Ki").format(), BinarySI);
        assert_eq!(q("9Ei").format(), BinarySI);
        assert_eq!(q("100.035Ki").format(), BinarySI);
        assert_eq!(q("0.000000000001Ki").format(), DecimalSI);
    }

    #[test]
    fn parse_rejects_upstream_invalid_inputs() {
        for s in [
            "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", " 1",
            "1 ", "",
        ] {
            assert!(parse(s).is_err(), "{s:?} parsed");
        }
        assert_eq!(parse("").err(), Some(QuantityError::FormatWrong));
        assert_eq!(parse("aoeu").err(), Some(QuantityError::FormatWrong));
        assert_eq!(parse("1.1.M").err(), Some(QuantityError::FormatWrong));
        assert_eq!(parse("0.1am").err(), Some(QuantityError::FormatWrong));
        assert_eq!(parse("1i").err(), Some(QuantityError::Suffix));
        assert_eq!(parse("0.1mi").err(), Some(QuantityError::Suffix));
        assert_eq!(parse("-3.01e-").err(), Some(QuantityError::Suffix));
        assert_eq!(parse("1e").err(), Some(QuantityError::Suffix));
        assert_eq!(parse("1ki").err(), Some(QuantityError::Suffix));
        assert_eq!(parse("1K").err(), Some(QuantityError::Suffix));
        assert_eq!(
            parse("1e99999999999999999999").err(),
            Some(QuantityError::Suffix)
        );
        assert_eq!(parse("-.e-20").err(), Some(QuantityError::Numeric));
        assert_eq!(parse("1é").err(), Some(QuantityError::FormatWrong));
        assert_eq!(parse("{}").err(), Some(QuantityError::FormatWrong));
    }

    #[test]
    fn degenerate_numbers_parse_like_go() {
        // Go's scanner accepts a lone sign or dot as zero.
        assert_eq!(canon("."), "0");
        assert_eq!(canon("-"), "0");
        assert_eq!(canon("+"), "0");
        assert_eq!(canon("-."), "0");
        assert_eq!(canon(".Ki"), "0");
        assert_eq!(canon("000"), "0");
    }

    #[test]
    fn text_kept_when_the_fast_path_deems_it_canonical() {
        assert_eq!(canon("+5"), "+5");
        assert_eq!(canon("05"), "05");
        assert_eq!(canon("1."), "1.");
        assert_eq!(canon("1E3"), "1E3");
        assert_eq!(canon("1e+3"), "1e+3");
        assert_eq!(canon("12Ki"), "12Ki");
        assert_eq!(canon("1.Ki"), "1.Ki");
        // Multiples of 8 in binary are recomputed.
        assert_eq!(canon("16Ki"), "16Ki");
        assert_eq!(canon("1024Ki"), "1Mi");
        assert_eq!(canon("2048Ki"), "2Mi");
        assert_eq!(canon("1000"), "1k");
        assert_eq!(canon("1500m"), "1500m");
        assert_eq!(canon("+0.5"), "500m");
    }

    #[test]
    fn big_and_small_values() {
        assert_eq!(canon("1000E"), "1");
        assert_eq!(canon("1e21"), "1e21");
        assert_eq!(canon("10e20"), "1e21");
        assert_eq!(canon("1e100"), "10e99");
        assert_eq!(canon("1e99"), "1e99");
        assert_eq!(canon("1e-10"), "1e-9");
        assert_eq!(canon("-1e-10"), "-1e-9");
        assert_eq!(canon("1e-2000000000"), "1e-9");
        assert_eq!(canon("1e2000000000"), "100e1999999998");
        assert_eq!(canon("1.0000000001e2000000000"), "100000000010e1999999989");
        assert_eq!(
            canon("123456789012345678901234567890"),
            "123456789012345678901234567890"
        );
        assert_eq!(canon("1234567890123456789.5"), "1234567890123456789500m");
        assert_eq!(canon("8Ei"), "9223372036854775807");
        assert_eq!(canon("-8Ei"), "-9223372036854775807");
        assert_eq!(canon("7Ei"), "7Ei");
        assert_eq!(canon("1Pi"), "1Pi");
        assert_eq!(canon("1023"), "1023");
        assert_eq!(canon("1.1Ki"), "1126400m");
    }

    #[test]
    fn round_up_matches_upstream_table() {
        // quantity_test.go TestQuantityRoundUp
        let table = [
            ("9.01", -3, "9010m", true),
            ("9.01", -2, "9010m", true),
            ("9.01", -1, "9100m", false),
            ("9.01", 0, "10", false),
            ("9.01", 1, "10", false),
            ("9.01", 2, "100", false),
            ("-9.01", -1, "-9100m", false),
            ("-9.01", 0, "-10", false),
        ];
        for (input, scale, want, exact) in table {
            let mut got = q(input);
            assert_eq!(got.round_up(scale), exact, "{input} {scale}");
            assert_eq!(got.canonical(), want, "{input} {scale}");
        }
        let mut tiny = q("1n");
        tiny.round_up(-3);
        assert_eq!(tiny.canonical(), "1m");
        let mut kept = q("+5");
        kept.round_up(-3);
        assert_eq!(kept.canonical(), "+5");
    }

    #[test]
    fn comparisons() {
        // quantity_test.go TestQuantityCmp
        assert_eq!(q("0").cmp(&q("0")), Ordering::Equal);
        assert_eq!(q("100m").cmp(&q("50m")), Ordering::Greater);
        assert_eq!(q("50m").cmp(&q("100m")), Ordering::Less);
        assert_eq!(q("10000T").cmp(&q("100Gi")), Ordering::Greater);
        assert_eq!(q("1Ki"), q("1024"));
        assert!(q("-1") < q("0"));
        assert!(q("-2") < q("-1"));
        assert!(q("1e100") > q("8Ei"));
        assert!(q("1n") > q("0"));
        assert_eq!(q("1.5Gi"), q("1536Mi"));
        assert!(q("-0").is_zero());
        assert!(!q("-0").is_negative());
        assert_eq!(q("-1m").sign(), -1);
    }

    #[test]
    fn value_and_milli_value() {
        assert_eq!(q("1.5").value(), 2);
        assert_eq!(q("-1.5").value(), -2);
        assert_eq!(q("1.5").milli_value(), 1500);
        assert_eq!(q("1n").milli_value(), 1);
        assert_eq!(q("1e100").value(), i64::MAX);
        assert_eq!(q("2Gi").value(), 2147483648);
    }

    #[test]
    fn json_values() {
        let p = |v: Value| parse_json(&v).map(|q| q.canonical());
        assert_eq!(p(json!(" 1")), Ok("1".into()));
        assert_eq!(p(json!("1 ")), Ok("1".into()));
        assert_eq!(p(json!(1)), Ok("1".into()));
        assert_eq!(p(json!(10)), Ok("10".into()));
        assert_eq!(p(json!(-1)), Ok("-1".into()));
        assert_eq!(p(json!(1.5)), Ok("1500m".into()));
        assert_eq!(p(json!(0.5)), Ok("500m".into()));
        assert_eq!(p(json!(1000)), Ok("1k".into()));
        // serde_json renders this f64 as `1e+21`, which the fast path keeps.
        assert_eq!(p(json!(1e21)), Ok("1e+21".into()));
        assert_eq!(p(json!(1.5e-7)), Ok("150e-9".into()));
        assert_eq!(p(json!(-0.0)), Ok("0".into()));
        assert_eq!(p(Value::Null), Ok("0".into()));
        assert_eq!(p(json!(true)), Err(QuantityError::FormatWrong));
        assert_eq!(p(json!({})), Err(QuantityError::FormatWrong));
        assert_eq!(p(json!([1])), Err(QuantityError::FormatWrong));
        assert_eq!(p(json!("")), Err(QuantityError::FormatWrong));
        assert_eq!(p(json!("1Gb")), Err(QuantityError::FormatWrong));
    }

    #[test]
    fn walker_rewrites_matches_and_reports_paths() {
        let mut obj = json!({"spec": {"limits": [
            {"type": "Container", "max": {"cpu": "0.5", "memory": "1024Mi"}},
            {"type": "Pod", "max": {"cpu": 2}}
        ]}});
        let pat = [
            Seg::Key("spec".into()),
            Seg::Key("limits".into()),
            Seg::AnyIndex,
            Seg::Key("max".into()),
            Seg::AnyKey,
        ];
        assert_eq!(canonicalize_at(&mut obj, &pat), Ok(()));
        assert_eq!(obj["spec"]["limits"][0]["max"]["cpu"], json!("500m"));
        assert_eq!(obj["spec"]["limits"][0]["max"]["memory"], json!("1Gi"));
        assert_eq!(obj["spec"]["limits"][1]["max"]["cpu"], json!("2"));

        let mut bad = json!({"spec": {"limits": [
            {"max": {"cpu": "1.5"}},
            {"max": {"cpu": "1x", "memory": "0.5"}}
        ]}});
        let before = bad.clone();
        let err = canonicalize_at(&mut bad, &pat).err();
        assert_eq!(
            err,
            Some(QuantityFieldError {
                path: "spec.limits[1].max.cpu".into(),
                error: QuantityError::FormatWrong,
            })
        );
        assert_eq!(bad, before, "nothing changes on failure");
        assert_eq!(
            err.map(|e| e.to_string()),
            Some(format!(
                "spec.limits[1].max.cpu: quantities must match the regular expression '{SPLIT_RE}'"
            ))
        );
    }

    #[test]
    fn walker_skips_missing_paths_and_handles_nulls() {
        let pat = [
            Seg::Key("spec".into()),
            Seg::Key("hard".into()),
            Seg::AnyKey,
        ];
        let mut none = json!({"metadata": {}});
        assert_eq!(canonicalize_at(&mut none, &pat), Ok(()));
        let mut wrong_shape = json!({"spec": {"hard": "x"}});
        assert_eq!(canonicalize_at(&mut wrong_shape, &pat), Ok(()));
        let mut nulls = json!({"spec": {"hard": {"pods": null}}, "size": null});
        assert_eq!(canonicalize_at(&mut nulls, &pat), Ok(()));
        assert_eq!(nulls["spec"]["hard"]["pods"], json!("0"));
        assert_eq!(
            canonicalize_at(&mut nulls, &[Seg::Key("size".into())]),
            Ok(())
        );
        assert_eq!(nulls["size"], Value::Null);
    }

    #[test]
    fn resource_list_walker_rounds_to_milli() {
        let mut obj = json!({"requests": {"cpu": "1n", "memory": "0.000000000001Ki", "x": "+5"}});
        let pat = [Seg::Key("requests".into()), Seg::AnyKey];
        assert_eq!(canonicalize_resource_list_at(&mut obj, &pat), Ok(()));
        assert_eq!(
            obj,
            json!({"requests": {"cpu": "1m", "memory": "1m", "x": "+5"}})
        );
    }

    #[test]
    fn go_syntax_rendering() {
        assert_eq!(
            q("2").go_syntax(),
            "resource.Quantity{i:resource.int64Amount{value:2, scale:0}, \
             d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"2\", Format:\"DecimalSI\"}"
        );
        assert_eq!(
            q("1.5").go_syntax(),
            "resource.Quantity{i:resource.int64Amount{value:15, scale:-1}, \
             d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"\", Format:\"DecimalSI\"}"
        );
    }

    proptest! {
        #[test]
        fn parse_never_panics(s in any::<String>()) {
            let _ = parse(&s).map(|q| q.canonical());
        }

        #[test]
        fn parse_never_panics_on_quantity_like_text(s in "[-+]?[0-9.]{0,25}[eEinumkKMGTP]{0,3}[-+]?[0-9]{0,12}") {
            let _ = parse(&s).map(|q| (q.canonical(), q.value(), q.milli_value()));
        }

        #[test]
        fn canonical_is_idempotent(s in "[-+]?[0-9]{0,22}(\\.[0-9]{0,14})?(|n|u|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|e[-+]?[0-9]{1,3})") {
            if let Ok(first) = canonicalize(&s) {
                let second = canonicalize(&first);
                prop_assert_eq!(second.as_deref(), Ok(first.as_str()), "input {}", s);
                // The canonical text has the same value.
                prop_assert_eq!(q(&first).cmp(&q(&s)), Ordering::Equal);
            }
        }

        #[test]
        fn comparison_agrees_with_integer_values(a in -1_000_000_000i64..1_000_000_000, b in -1_000_000_000i64..1_000_000_000, sa in 0usize..4, sb in 0usize..4) {
            let suffixes = ["", "k", "M", "Ki"];
            let mult = [1i128, 1000, 1_000_000, 1024];
            let qa = q(&format!("{a}{}", suffixes[sa]));
            let qb = q(&format!("{b}{}", suffixes[sb]));
            let va = i128::from(a) * mult[sa];
            let vb = i128::from(b) * mult[sb];
            prop_assert_eq!(qa.cmp(&qb), va.cmp(&vb));
            prop_assert_eq!(qa.is_negative(), va < 0);
            prop_assert_eq!(qa.is_zero(), va == 0);
        }

        #[test]
        fn milli_comparison_agrees(a in -1_000_000_000i64..1_000_000_000, b in -1_000_000_000i64..1_000_000_000) {
            let qa = q(&format!("{a}m"));
            let sign = if b < 0 { "-" } else { "" };
            let qb = q(&format!("{sign}{}.{:03}", b.unsigned_abs() / 1000, b.unsigned_abs() % 1000));
            prop_assert_eq!(qa.cmp(&qb), a.cmp(&b));
            prop_assert_eq!(qb.milli_value(), b);
        }

        #[test]
        fn walker_never_panics(v in arb_json()) {
            let mut v = v;
            let _ = canonicalize_at(&mut v, &[Seg::AnyKey, Seg::AnyKey]);
            let _ = canonicalize_at(&mut v, &[Seg::AnyIndex]);
        }
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| json!(f)),
            "[-+0-9.a-zA-Z ]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-z]{1,3}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }
}
