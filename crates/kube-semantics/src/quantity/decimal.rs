//! The exact decimal arithmetic a quantity needs (digits and an exponent, no
//! floating point), as `inf.Dec` gives it to the API server.
//!
//! This module must NOT parse or print quantity text (see `text`).

use super::*;

/// An exact decimal: `digits` (most significant first, no leading zeros,
/// empty for zero) times 10^`exp`. Stands in for Go's `inf.Dec`; only the
/// operations quantities need, and none of them expands the exponent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Dec {
    pub(super) neg: bool,
    pub(super) digits: Vec<u8>,
    pub(super) exp: i64,
}

impl Dec {
    pub(super) fn zero() -> Self {
        Dec {
            neg: false,
            digits: Vec::new(),
            exp: 0,
        }
    }

    pub(super) fn new(neg: bool, digits: Vec<u8>, exp: i64) -> Self {
        let lead = digits.iter().take_while(|d| **d == 0).count();
        let digits = digits[lead..].to_vec();
        if digits.is_empty() {
            return Dec::zero();
        }
        Dec { neg, digits, exp }
    }

    pub(super) fn from_i64(v: i64, scale: i32) -> Self {
        Dec::new(
            v < 0,
            u128_digits(u128::from(v.unsigned_abs())),
            i64::from(scale),
        )
    }

    pub(super) fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    pub(super) fn signum(&self) -> i32 {
        if self.is_zero() {
            0
        } else if self.neg {
            -1
        } else {
            1
        }
    }

    /// The digits without trailing zeros, and the exponent that keeps the value.
    pub(super) fn trimmed(&self) -> (&[u8], i64) {
        let tz = self.digits.iter().rev().take_while(|d| **d == 0).count();
        (
            &self.digits[..self.digits.len() - tz],
            self.exp.saturating_add(tz as i64),
        )
    }

    pub(super) fn cmp_abs(&self, other: &Dec) -> Ordering {
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

    pub(super) fn cmp_value(&self, other: &Dec) -> Ordering {
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

    pub(super) fn negated(mut self, neg: bool) -> Dec {
        self.neg = neg && !self.is_zero();
        self
    }

    /// Rounds away from zero to a multiple of 10^`min_exp`; `true` when no
    /// precision was lost (inf's `RoundUp` rounder, apimachinery's `AsScale`).
    pub(super) fn round_away(&self, min_exp: i64) -> (Dec, bool) {
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

    pub(super) fn mul_small(&mut self, m: u64) {
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
    pub(super) fn to_i128(&self) -> Option<i128> {
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
    pub(super) fn scaled_i64(&self, scale: i64) -> i64 {
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

pub(super) fn u128_digits(mut v: u128) -> Vec<u8> {
    let mut out = Vec::new();
    while v > 0 {
        out.push((v % 10) as u8);
        v /= 10;
    }
    out.reverse();
    out
}

/// Adds one to a big-endian decimal digit string.
pub(super) fn increment(digits: &mut Vec<u8>) {
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
pub(super) fn divmod_small(digits: &[u8], divisor: u32) -> (Vec<u8>, u32) {
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

pub(super) fn digits_to_string(digits: &[u8]) -> String {
    digits.iter().map(|d| char::from(b'0' + d)).collect()
}
