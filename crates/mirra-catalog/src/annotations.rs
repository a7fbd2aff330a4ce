//! Parsing of the `consul.hashicorp.com/` annotations on a Service.
//!
//! Values are read with the same rules as consul-k8s (Go's `strconv`
//! functions), so that a Service that worked with consul-k8s means the same
//! thing here. A bad value never fails the Service: it yields a [`Warning`]
//! (the controller turns it into an Event on the Service) and the documented
//! fallback. This module must NOT look at anything but the annotation map;
//! checks that need the Service's ports live in the mapping.

use std::collections::BTreeMap;

/// The common prefix of every annotation read here.
pub const ANNOTATION_PREFIX: &str = "consul.hashicorp.com/";
/// Overrides `-k8s-default-sync` for one Service.
pub const ANNOTATION_SERVICE_SYNC: &str = "consul.hashicorp.com/service-sync";
/// The whole Consul service name (no prefix, no suffix).
pub const ANNOTATION_SERVICE_NAME: &str = "consul.hashicorp.com/service-name";
/// The port to register: a number or the name of one of the Service's ports.
pub const ANNOTATION_SERVICE_PORT: &str = "consul.hashicorp.com/service-port";
/// Extra tags, comma separated, `\,` escapes a comma.
pub const ANNOTATION_SERVICE_TAGS: &str = "consul.hashicorp.com/service-tags";
/// Prefix of annotations that become service meta: `service-meta-<key>`.
pub const ANNOTATION_SERVICE_META_PREFIX: &str = "consul.hashicorp.com/service-meta-";
/// The passing weight of load balancer and external IP instances.
pub const ANNOTATION_SERVICE_WEIGHT: &str = "consul.hashicorp.com/service-weight";

/// The longest service name accepted from the `service-name` annotation, in
/// characters. Consul itself has no limit, but names longer than this cannot
/// be looked up by any client in practice and are almost certainly a mistake.
pub const MAX_SERVICE_NAME_CHARS: usize = 255;

/// Consul refuses meta keys longer than this (`metaKeyMaxLength`).
pub const MAX_META_KEY_BYTES: usize = 128;
/// Consul refuses meta values longer than this (`metaValueMaxLength`).
pub const MAX_META_VALUE_BYTES: usize = 512;
/// Consul refuses a service with more meta pairs than this
/// (`metaMaxKeyPairs`).
pub const MAX_META_PAIRS: usize = 64;
/// Consul reserves meta keys with this prefix for itself.
pub const RESERVED_META_PREFIX: &str = "consul-";

/// The largest weight Consul keeps; a larger one is silently replaced by the
/// default weights (`ValidateWeights` limits DNS weights to 65535).
pub const MAX_WEIGHT: u32 = 65535;

/// A bad annotation value: what the controller reports as a warning Event on
/// the Service. The Service is still synced with the documented fallback.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Warning {
    /// The full annotation key, e.g. `consul.hashicorp.com/service-port`.
    pub annotation: String,
    /// The value as found on the Service.
    pub value: String,
    /// What is wrong and what mirra did instead.
    pub message: String,
}

impl Warning {
    pub(crate) fn new(annotation: &str, value: &str, message: impl Into<String>) -> Self {
        Self {
            annotation: annotation.to_owned(),
            value: value.to_owned(),
            message: message.into(),
        }
    }
}

/// The `service-port` annotation after parsing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PortOverride {
    /// A port number (1 to 65535).
    Number(u16),
    /// The name of one of the Service's ports.
    Name(String),
}

/// The annotations of one Service after parsing, with the warnings found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParsedAnnotations {
    /// `service-sync`, when present and valid.
    pub sync: Option<bool>,
    /// `service-name`, trimmed, when present and valid.
    pub name: Option<String>,
    /// `service-name` is present but empty, only blanks, or longer than
    /// [`MAX_SERVICE_NAME_CHARS`]: the Service registers nothing (as in
    /// consul-k8s, where Consul refuses such a name), rather than under a
    /// name nobody asked for.
    pub name_invalid: bool,
    /// `service-port`, when present and valid.
    pub port: Option<PortOverride>,
    /// `service-tags`, in order, to be appended after the k8s tag.
    pub tags: Vec<String>,
    /// `service-meta-<key>` pairs with keys Consul accepts.
    pub meta: BTreeMap<String, String>,
    /// `service-weight`, when present and valid (2 to [`MAX_WEIGHT`]).
    pub weight: Option<u32>,
    /// Every bad value found, in annotation-key order.
    pub warnings: Vec<Warning>,
}

/// Meta keys mirra writes itself; an annotation may not replace them because
/// `external-source` is half of the ownership mark and the others describe
/// where the instance came from.
pub const PROTECTED_META_KEYS: [&str; 6] = [
    crate::model::META_EXTERNAL_SOURCE,
    crate::model::META_K8S_NAMESPACE,
    crate::model::META_K8S_REF_KIND,
    crate::model::META_K8S_REF_NAME,
    crate::model::META_K8S_NODE_NAME,
    crate::model::META_K8S_TOPOLOGY_ZONE,
];

/// Parses the annotations that matter for the mapping. Unknown keys, including
/// other `consul.hashicorp.com/` annotations, are ignored.
pub fn parse_annotations(annotations: &BTreeMap<String, String>) -> ParsedAnnotations {
    let mut out = ParsedAnnotations::default();
    for (key, value) in annotations {
        if !key.starts_with(ANNOTATION_PREFIX) {
            continue;
        }
        match key.as_str() {
            ANNOTATION_SERVICE_SYNC => match parse_go_bool(value) {
                Some(b) => out.sync = Some(b),
                None => out.warnings.push(Warning::new(
                    key,
                    value,
                    "not a boolean (expected one of 1, t, T, TRUE, true, True, 0, f, F, FALSE, false, False); using -k8s-default-sync",
                )),
            },
            ANNOTATION_SERVICE_NAME => {
                let trimmed = value.trim();
                let chars = trimmed.chars().count();
                if chars == 0 {
                    out.name_invalid = true;
                    out.warnings.push(Warning::new(
                        key,
                        value,
                        "empty service name; the Service is not synced",
                    ));
                } else if chars > MAX_SERVICE_NAME_CHARS {
                    out.name_invalid = true;
                    out.warnings.push(Warning::new(
                        key,
                        value,
                        format!(
                            "service name longer than {MAX_SERVICE_NAME_CHARS} characters; the Service is not synced"
                        ),
                    ));
                } else {
                    out.name = Some(trimmed.to_owned());
                }
            }
            ANNOTATION_SERVICE_PORT => match parse_go_int_base0(value) {
                Some(n) => match u16::try_from(n) {
                    Ok(p) if p > 0 => out.port = Some(PortOverride::Number(p)),
                    _ => out.warnings.push(Warning::new(
                        key,
                        value,
                        "port number out of range 1-65535; using the default port",
                    )),
                },
                None => out.port = Some(PortOverride::Name(value.clone())),
            },
            ANNOTATION_SERVICE_TAGS => {
                let raw = parse_tags(value);
                let before = raw.len();
                out.tags = raw.into_iter().filter(|t| !t.is_empty()).collect();
                if out.tags.len() != before {
                    out.warnings.push(Warning::new(
                        key,
                        value,
                        "empty tags were dropped",
                    ));
                }
            }
            ANNOTATION_SERVICE_WEIGHT => {
                if value.is_empty() {
                    // consul-k8s ignores an empty weight without a word; so do
                    // we, as it cannot be a typo of a number.
                    continue;
                }
                match parse_go_atoi(value) {
                    Some(w) if w > 1 && w <= i64::from(MAX_WEIGHT) => {
                        out.weight = u32::try_from(w).ok();
                    }
                    Some(w) if w > i64::from(MAX_WEIGHT) => out.warnings.push(Warning::new(
                        key,
                        value,
                        format!(
                            "weight above {MAX_WEIGHT}, which Consul would ignore; using the default weights"
                        ),
                    )),
                    Some(_) => out.warnings.push(Warning::new(
                        key,
                        value,
                        "weight must be an integer greater than 1; using the default weights",
                    )),
                    None => out.warnings.push(Warning::new(
                        key,
                        value,
                        "not an integer; using the default weights",
                    )),
                }
            }
            _ => {
                if let Some(meta_key) = key.strip_prefix(ANNOTATION_SERVICE_META_PREFIX) {
                    match check_meta_pair(meta_key, value) {
                        Ok(()) => {
                            out.meta.insert(meta_key.to_owned(), value.clone());
                        }
                        Err(why) => out.warnings.push(Warning::new(key, value, why)),
                    }
                }
            }
        }
    }
    out
}

/// Whether Consul would accept this meta pair, and whether mirra lets an
/// annotation set it. The error says why not.
fn check_meta_pair(key: &str, value: &str) -> Result<(), String> {
    if key.is_empty() {
        return Err("empty meta key; ignored".to_owned());
    }
    if key.len() > MAX_META_KEY_BYTES {
        return Err(format!(
            "meta key longer than {MAX_META_KEY_BYTES} bytes, which Consul refuses; ignored"
        ));
    }
    if !key
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(
            "meta key may only contain letters, digits, '-' and '_' (a Consul rule); ignored"
                .to_owned(),
        );
    }
    if key.starts_with(RESERVED_META_PREFIX) {
        return Err("meta keys starting with 'consul-' are reserved by Consul; ignored".to_owned());
    }
    if PROTECTED_META_KEYS.contains(&key) {
        return Err(format!(
            "meta key {key:?} is set by the sync itself; ignored"
        ));
    }
    if value.len() > MAX_META_VALUE_BYTES {
        return Err(format!(
            "meta value longer than {MAX_META_VALUE_BYTES} bytes, which Consul refuses; ignored"
        ));
    }
    Ok(())
}

/// Go's `strconv.ParseBool`: exactly `1 t T TRUE true True` or
/// `0 f F FALSE false False`; nothing else (no trimming).
pub fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Go's `strconv.Atoi`: an optional sign and decimal digits, fitting in i64.
pub fn parse_go_atoi(s: &str) -> Option<i64> {
    let (neg, digits) = split_sign(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    accumulate(digits, 10, neg)
}

/// Go's `strconv.ParseInt(s, 0, 64)`: an optional sign, then `0x`/`0X`
/// (hex), `0o`/`0O` or a bare leading `0` (octal), `0b`/`0B` (binary), or
/// decimal; underscores are allowed only with a base prefix, and only between
/// digits or right after the prefix.
pub fn parse_go_int_base0(s: &str) -> Option<i64> {
    let (neg, body) = split_sign(s);
    if body.is_empty() {
        return None;
    }
    let lower = body.to_ascii_lowercase();
    let (base, digits, prefixed) = if let Some(rest) = lower.strip_prefix("0x") {
        (16, rest.to_owned(), true)
    } else if let Some(rest) = lower.strip_prefix("0o") {
        (8, rest.to_owned(), true)
    } else if let Some(rest) = lower.strip_prefix("0b") {
        (2, rest.to_owned(), true)
    } else if lower.len() > 1 && lower.starts_with('0') {
        // A bare leading zero means octal; the zero itself counts as the
        // prefix for the underscore rule, as in Go.
        (8, lower.get(1..).unwrap_or_default().to_owned(), true)
    } else {
        (10, lower.clone(), false)
    };
    if digits.contains('_') && (!prefixed || !underscores_ok(&digits)) {
        return None;
    }
    let clean: String = digits.chars().filter(|&c| c != '_').collect();
    if clean.is_empty() {
        return None;
    }
    if !clean.chars().all(|c| c.is_digit(base)) {
        return None;
    }
    accumulate(&clean, base, neg)
}

/// Underscores must sit between two digits, or right after the base prefix
/// (so the first character may be `_`, but never the last, and never two in
/// a row).
fn underscores_ok(digits: &str) -> bool {
    let bytes = digits.as_bytes();
    if bytes.last() == Some(&b'_') {
        return false;
    }
    !bytes.windows(2).any(|w| w == b"__")
}

fn split_sign(s: &str) -> (bool, &str) {
    if let Some(rest) = s.strip_prefix('-') {
        (true, rest)
    } else if let Some(rest) = s.strip_prefix('+') {
        (false, rest)
    } else {
        (false, s)
    }
}

/// Folds validated digits into an i64, refusing overflow like Go does.
fn accumulate(digits: &str, base: u32, neg: bool) -> Option<i64> {
    let mut acc: i128 = 0;
    for c in digits.chars() {
        let d = i128::from(c.to_digit(base)?);
        acc = acc.checked_mul(i128::from(base))?.checked_add(d)?;
        if acc > i128::from(i64::MAX) + 1 {
            return None;
        }
    }
    let signed = if neg { -acc } else { acc };
    i64::try_from(signed).ok()
}

/// Splits a `service-tags` value: commas separate, `\,` is a literal comma,
/// each tag is trimmed. Like consul-k8s, a comma right after another comma
/// produces nothing; unlike it, callers drop tags that are empty after
/// trimming.
pub fn parse_tags(value: &str) -> Vec<String> {
    let mut tags = Vec::new();
    let mut current = String::new();
    for c in value.chars() {
        if c != ',' {
            current.push(c);
            continue;
        }
        if current.is_empty() {
            continue;
        }
        if current.ends_with('\\') {
            current.pop();
            current.push(',');
            continue;
        }
        tags.push(current.trim().to_owned());
        current.clear();
    }
    if !current.is_empty() {
        tags.push(current.trim().to_owned());
    }
    tags
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn ann(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn go_bool_accepts_exactly_the_go_spellings() {
        for t in ["1", "t", "T", "TRUE", "true", "True"] {
            assert_eq!(parse_go_bool(t), Some(true), "{t}");
        }
        for f in ["0", "f", "F", "FALSE", "false", "False"] {
            assert_eq!(parse_go_bool(f), Some(false), "{f}");
        }
        for bad in ["", "yes", "no", "tRUE", " true", "true ", "2", "on"] {
            assert_eq!(parse_go_bool(bad), None, "{bad}");
        }
    }

    #[test]
    fn go_int_base0_table() {
        let cases: &[(&str, Option<i64>)] = &[
            ("80", Some(80)),
            ("+80", Some(80)),
            ("-1", Some(-1)),
            ("0", Some(0)),
            ("0x50", Some(80)),
            ("0X50", Some(80)),
            ("0o120", Some(80)),
            ("0120", Some(80)),
            ("0b1010000", Some(80)),
            ("0x_50", Some(80)),
            ("1_000", None),
            ("0x5__0", None),
            ("0x50_", None),
            ("080", None),
            ("0x", None),
            ("", None),
            ("-", None),
            ("http", None),
            ("80 ", None),
            ("9223372036854775807", Some(i64::MAX)),
            ("-9223372036854775808", Some(i64::MIN)),
            ("9223372036854775808", None),
        ];
        for (input, want) in cases {
            assert_eq!(parse_go_int_base0(input), *want, "{input:?}");
        }
    }

    #[test]
    fn go_atoi_table() {
        let cases: &[(&str, Option<i64>)] = &[
            ("5", Some(5)),
            ("+5", Some(5)),
            ("-5", Some(-5)),
            ("0x5", None),
            ("1_0", None),
            (" 5", None),
            ("", None),
            ("99999999999999999999", None),
        ];
        for (input, want) in cases {
            assert_eq!(parse_go_atoi(input), *want, "{input:?}");
        }
    }

    #[test]
    fn tags_split_escape_trim() {
        assert_eq!(parse_tags("a,b"), vec!["a", "b"]);
        assert_eq!(parse_tags(" a , b "), vec!["a", "b"]);
        assert_eq!(
            parse_tags(r"tag\,with\,commas,tag2"),
            vec!["tag,with,commas", "tag2"]
        );
        assert_eq!(parse_tags("a,,b"), vec!["a", "b"]);
        assert_eq!(parse_tags(",a,"), vec!["a"]);
        assert_eq!(parse_tags(""), Vec::<String>::new());
        assert_eq!(parse_tags(r"a\"), vec![r"a\"]);
        // A blank between commas survives the splitter as "", which
        // parse_annotations then drops.
        assert_eq!(parse_tags("a, ,b"), vec!["a", "", "b"]);
    }

    #[test]
    fn tags_annotation_drops_empties_with_warning() {
        let p = parse_annotations(&ann(&[(ANNOTATION_SERVICE_TAGS, "a, ,b")]));
        assert_eq!(p.tags, vec!["a", "b"]);
        assert_eq!(p.warnings.len(), 1);
        let p = parse_annotations(&ann(&[(ANNOTATION_SERVICE_TAGS, "a,b")]));
        assert!(p.warnings.is_empty());
    }

    #[test]
    fn sync_annotation_good_and_bad() {
        assert_eq!(
            parse_annotations(&ann(&[(ANNOTATION_SERVICE_SYNC, "t")])).sync,
            Some(true)
        );
        assert_eq!(
            parse_annotations(&ann(&[(ANNOTATION_SERVICE_SYNC, "0")])).sync,
            Some(false)
        );
        let bad = parse_annotations(&ann(&[(ANNOTATION_SERVICE_SYNC, "yes")]));
        assert_eq!(bad.sync, None);
        assert_eq!(bad.warnings.len(), 1);
        assert_eq!(bad.warnings[0].annotation, ANNOTATION_SERVICE_SYNC);
        assert_eq!(bad.warnings[0].value, "yes");
    }

    #[test]
    fn name_annotation_trimmed_and_bounded() {
        let p = parse_annotations(&ann(&[(ANNOTATION_SERVICE_NAME, "  web  ")]));
        assert_eq!(p.name.as_deref(), Some("web"));
        assert!(!p.name_invalid);
        for bad in ["", "   ", "\t\n"] {
            let empty = parse_annotations(&ann(&[(ANNOTATION_SERVICE_NAME, bad)]));
            assert_eq!(empty.name, None, "{bad:?}");
            assert!(empty.name_invalid, "{bad:?}");
            assert_eq!(empty.warnings.len(), 1);
            assert_eq!(empty.warnings[0].annotation, ANNOTATION_SERVICE_NAME);
        }
        let ok255 = "x".repeat(255);
        let ok = parse_annotations(&ann(&[(ANNOTATION_SERVICE_NAME, &ok255)]));
        assert_eq!(ok.name, Some(ok255.clone()));
        assert!(!ok.name_invalid);
        // Characters, not bytes: 255 two-byte characters are a valid name.
        let wide = "é".repeat(255);
        assert!(!parse_annotations(&ann(&[(ANNOTATION_SERVICE_NAME, &wide)])).name_invalid);
        let long = parse_annotations(&ann(&[(ANNOTATION_SERVICE_NAME, &"x".repeat(256))]));
        assert_eq!(long.name, None);
        assert!(long.name_invalid);
        assert_eq!(long.warnings.len(), 1);
    }

    #[test]
    fn port_annotation_number_name_or_out_of_range() {
        let p = |v: &str| parse_annotations(&ann(&[(ANNOTATION_SERVICE_PORT, v)]));
        assert_eq!(p("8080").port, Some(PortOverride::Number(8080)));
        assert_eq!(p("0x1f90").port, Some(PortOverride::Number(8080)));
        assert_eq!(p("http").port, Some(PortOverride::Name("http".into())));
        for bad in ["0", "-1", "65536"] {
            let r = p(bad);
            assert_eq!(r.port, None, "{bad}");
            assert_eq!(r.warnings.len(), 1, "{bad}");
        }
    }

    #[test]
    fn weight_annotation_rules() {
        let p = |v: &str| parse_annotations(&ann(&[(ANNOTATION_SERVICE_WEIGHT, v)]));
        assert_eq!(p("2").weight, Some(2));
        assert_eq!(p("65535").weight, Some(65535));
        for bad in ["1", "0", "-3", "abc", "1.5", "65536"] {
            let r = p(bad);
            assert_eq!(r.weight, None, "{bad}");
            assert_eq!(r.warnings.len(), 1, "{bad}");
        }
        let empty = p("");
        assert_eq!(empty.weight, None);
        assert!(empty.warnings.is_empty());
    }

    #[test]
    fn meta_annotations_checked_like_consul() {
        let p = parse_annotations(&ann(&[
            ("consul.hashicorp.com/service-meta-team", "payments"),
            ("consul.hashicorp.com/service-meta-", "x"),
            ("consul.hashicorp.com/service-meta-a.b", "x"),
            ("consul.hashicorp.com/service-meta-consul-x", "x"),
            ("consul.hashicorp.com/service-meta-external-source", "evil"),
            ("consul.hashicorp.com/service-meta-big", &"v".repeat(513)),
            ("consul.hashicorp.com/connect-inject", "true"),
            ("other/annotation", "x"),
        ]));
        assert_eq!(
            p.meta,
            BTreeMap::from([("team".to_owned(), "payments".to_owned())])
        );
        assert_eq!(p.warnings.len(), 5);
    }
}
