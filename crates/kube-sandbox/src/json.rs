//! JSON decoding as deep as the sandbox stores.
//!
//! serde_json refuses documents nested deeper than 128 levels; the API
//! server's decoder accepts 10,000. The sandbox reads JSON up to
//! [`MAX_DEPTH`] levels: deep enough for the objects clients meet in
//! practice and for tests of clients whose own decoders stop at 128, and
//! shallow enough that the semantics, which recurse over the JSON, stay
//! far from the stack's end. The depth is measured on the bytes, without
//! recursion, before the decoder runs.
//!
//! What this module must NOT do: decode anything deeper than
//! [`MAX_DEPTH`] (the decoder's recursion limit is off).

use serde::Deserialize;
use serde_json::Value;

/// The deepest JSON the sandbox decodes and stores.
pub const MAX_DEPTH: usize = 250;

/// The nesting depth of a JSON text (`1` is `{}` or `[]`), counted on the
/// bytes; brackets inside strings do not count. Malformed text gets some
/// number; the decoder reports what is wrong with it.
pub fn depth_of(bytes: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Decodes a JSON value nested at most [`MAX_DEPTH`] levels.
pub fn parse(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    let depth = depth_of(bytes);
    if depth > MAX_DEPTH {
        return Err(serde::de::Error::custom(format!(
            "the document is nested {depth} levels deep; kube-sandbox decodes up to {MAX_DEPTH} \
             (a real API server: 10,000)"
        )));
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    de.disable_recursion_limit();
    let value = Value::deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(n: usize) -> String {
        format!("{}1{}", "[".repeat(n), "]".repeat(n))
    }

    #[test]
    fn depth_is_counted_outside_strings() {
        assert_eq!(depth_of(b"1"), 0);
        assert_eq!(depth_of(br#"{"a":[{}]}"#), 3);
        assert_eq!(depth_of(br#"{"a":"[[[[\"[[[["}"#), 1);
        assert_eq!(depth_of(br#"["\\",[]]"#), 2);
    }

    #[test]
    fn documents_up_to_the_limit_decode_and_deeper_ones_are_refused() {
        assert!(parse(nested(200).as_bytes()).is_ok());
        assert!(parse(nested(MAX_DEPTH).as_bytes()).is_ok());
        let err = parse(nested(MAX_DEPTH + 1).as_bytes()).unwrap_err();
        assert!(err.to_string().contains("nested 251 levels"), "{err}");
        // Far deeper than any stack would take: refused before decoding.
        assert!(parse(nested(1_000_000).as_bytes()).is_err());
    }

    #[test]
    fn malformed_text_is_an_error() {
        for bad in ["", "{", "[1,]", "{} x", "\"unterminated"] {
            assert!(parse(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    proptest::proptest! {
        #[test]
        fn agrees_with_serde_json_within_its_limit(text in "[\\[\\]{}\",:a0-9 ]{0,64}") {
            let ours = parse(text.as_bytes()).ok();
            let theirs = serde_json::from_str::<Value>(&text).ok();
            proptest::prop_assert_eq!(ours, theirs);
        }
    }
}
