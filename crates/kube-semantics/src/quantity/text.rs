//! Quantity text: scanning and interpreting a string as `ParseQuantity` does,
//! with its error texts, and printing the canonical decimal and binary forms.
//!
//! This module must NOT walk objects (see `canonicalize`).

use super::*;

/// Base-10 canonical form: trailing zeros moved into the exponent, then the
/// exponent lowered to a multiple of 3 (`AsCanonicalBytes`), then the suffix.
pub(super) fn decimal_canonical(d: &Dec, format: Format) -> String {
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
pub(super) fn decimal_suffix(exp: i64) -> &'static str {
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
pub(super) fn binary_canonical(d: &Dec) -> Option<String> {
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
pub(super) struct Scanned<'a> {
    pub(super) positive: bool,
    pub(super) value: &'a [u8],
    pub(super) num: &'a [u8],
    pub(super) denom: &'a [u8],
    pub(super) suffix: &'a [u8],
}

/// Apimachinery's hand-written scanner: sign, digits (leading zeros
/// dropped), optional `.digits`, then suffix letters, optional sign, digits.
pub(super) fn scan(s: &[u8]) -> Result<Scanned<'_>, QuantityError> {
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
    pos = skip(s, pos, |c| c == b'0');
    if pos >= end {
        return Ok(Scanned {
            positive,
            value: b"0",
            num: b"0",
            denom: b"",
            suffix: b"",
        });
    }
    // A string that ends inside the number has no suffix.
    let number_only = |num, denom| Scanned {
        positive,
        value: s,
        num,
        denom,
        suffix: b"",
    };
    let num_start = pos;
    pos = skip(s, pos, |c| c.is_ascii_digit());
    if pos >= end {
        return Ok(number_only(&s[num_start..], b""));
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
        pos = skip(s, pos, |c| c.is_ascii_digit());
        if pos >= end {
            return Ok(number_only(num, &s[denom_start..]));
        }
        denom = &s[denom_start..pos];
    }
    let value = &s[..pos];
    let suffix_start = pos;
    pos = skip(s, pos, |c| SUFFIX_CHARS.contains(&c));
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

/// The position of the first byte from `from` on that `keep` refuses
/// (`s.len()` when it takes them all).
fn skip(s: &[u8], from: usize, keep: impl Fn(u8) -> bool) -> usize {
    from + s[from..].iter().take_while(|&&c| keep(c)).count()
}

/// Base, exponent and format of a suffix (apimachinery's `interpret`).
pub(super) fn interpret(suffix: &[u8]) -> Option<(u8, i32, Format)> {
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
pub(super) fn parse_go_int64(s: &[u8]) -> Option<i64> {
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
pub(super) fn is_go_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{85}' | '\u{a0}'
    ) || (c as u32 > 0xff && c.is_whitespace())
}
