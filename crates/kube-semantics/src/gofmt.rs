//! Go-compatible text formatting for error messages.
//!
//! The API server's messages are produced by Go's `fmt` package; clients
//! and tests compare them byte for byte, so the few formatting rules that
//! show up in those messages (`%q` quoting, field-error bodies, aggregated
//! error lists, the JSON decoder's type names) are reproduced here. This
//! module must NOT grow into a general Go formatting library: only what a
//! message in this crate needs.

use std::fmt::Write as _;

use serde_json::Value;

/// Quotes `s` the way Go's `strconv.Quote` (and so `%q`) does: printable
/// characters stay as they are, `"` and `\` are escaped, control characters
/// use the short escapes or `\x`/`\u`/`\U` forms.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if is_printable(c) => out.push(c),
            c if (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// Go's `unicode.IsPrint`, close enough for messages: no control characters
/// and no whitespace other than the plain space.
fn is_printable(c: char) -> bool {
    !c.is_control() && (c == ' ' || !c.is_whitespace())
}

/// Joins error strings the way apimachinery's `utilerrors.NewAggregate`
/// prints them: one error alone, several as `[a, b]`. Duplicate messages are
/// printed once, as the aggregate does.
pub(crate) fn aggregate(errors: &[String]) -> String {
    let mut seen: Vec<&str> = Vec::with_capacity(errors.len());
    for e in errors {
        if !seen.contains(&e.as_str()) {
            seen.push(e);
        }
    }
    match seen.as_slice() {
        [] => String::new(),
        [one] => (*one).to_string(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// The name Go's JSON decoder gives a JSON value's type in its errors
/// (`cannot unmarshal array into Go value of type ...`).
pub(crate) fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn quote_matches_go_for_common_cases() {
        assert_eq!(quote("abc"), "\"abc\"");
        assert_eq!(quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(quote("a\nb\tc"), "\"a\\nb\\tc\"");
        assert_eq!(quote("\u{1}"), "\"\\x01\"");
        assert_eq!(quote("\u{7f}"), "\"\\x7f\"");
        assert_eq!(quote("\u{85}"), "\"\\u0085\"");
        assert_eq!(quote("héllo"), "\"héllo\"");
        assert_eq!(quote(""), "\"\"");
    }

    #[test]
    fn aggregate_prints_one_or_a_bracketed_list() {
        assert_eq!(aggregate(&[]), "");
        assert_eq!(aggregate(&["a".into()]), "a");
        assert_eq!(aggregate(&["a".into(), "b".into()]), "[a, b]");
        assert_eq!(aggregate(&["a".into(), "a".into()]), "a");
    }

    proptest! {
        #[test]
        fn quote_is_wrapped_and_has_no_raw_newlines(s in any::<String>()) {
            let q = quote(&s);
            prop_assert!(q.starts_with('"') && q.ends_with('"') && q.len() >= 2);
            prop_assert!(!q.contains('\n'));
        }
    }
}
