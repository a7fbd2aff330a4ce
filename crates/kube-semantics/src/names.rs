//! Name validation and `generateName`, with the API server's messages.
//!
//! Every object name, label key and label value the API server accepts goes
//! through one of these checks; the returned strings are the exact texts the
//! server puts in its 422 `Invalid` and 400 `BadRequest` answers (including
//! apimachinery's double space in `'my-name',  or '123-abc'`). Each check
//! returns the list of problems (empty = valid), like apimachinery's
//! `IsDNS1123Label` family.
//!
//! Which kind uses which rule is a policy of the caller; [`NameRule::for_kind`]
//! is a default table for the kinds mirra meets. This module must NOT
//! generate randomness (the caller passes the random suffix) and must NOT
//! check anything but syntax (uniqueness, immutability are the store's job).
//!
//! The mirror planner keeps its own checks (`mirra-mirror::names`) rather
//! than calling these: this crate is the test bed's model of the server,
//! and a controller that validated with the same model could not have a
//! misread rule caught by tests against `kube-sandbox`.

use crate::field::FieldError;

/// Longest DNS-1123 label: RFC 1123 limits a DNS label to 63 octets.
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// Longest DNS-1123 subdomain: RFC 1123 limits a full host name to 253 octets.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// Longest DNS-1035 label (Service names): same 63-octet DNS label limit.
pub const DNS1035_LABEL_MAX_LENGTH: usize = 63;
/// Longest name part of a qualified name (label and annotation keys):
/// apimachinery's limit, chosen to match a DNS label.
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;
/// Longest label value: apimachinery's limit, the same as a DNS label.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;

/// Length of the random suffix `generateName` appends (apimachinery's
/// `SimpleNameGenerator`: 5 characters give 27^5 ~ 14 million names).
pub const GENERATED_SUFFIX_LENGTH: usize = 5;
/// Longest prefix kept by `generateName`: 63 (a DNS label) minus the
/// 5-character suffix, so generated names stay valid labels.
pub const MAX_GENERATED_PREFIX_LENGTH: usize = DNS1123_LABEL_MAX_LENGTH - GENERATED_SUFFIX_LENGTH;
/// The alphabet of the random suffix: apimachinery's `utilrand` alphabet,
/// lowercase consonants and digits without look-alikes (no vowels, so no
/// accidental words; no 0/1/3 that read as o/l/e).
pub const GENERATED_SUFFIX_ALPHABET: &str = "bcdfghjklmnpqrstvwxz2456789";

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// apimachinery's `MaxLenError`.
fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// apimachinery's `RegexError`, including its `',  or '` spacing.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let mut out = String::from(msg);
    if examples.is_empty() {
        out.push_str(" (regex used for validation is '");
    } else {
        out.push_str(" (e.g. ");
        for (i, ex) in examples.iter().enumerate() {
            if i > 0 {
                out.push_str(" or ");
            }
            out.push('\'');
            out.push_str(ex);
            out.push_str("', ");
        }
        out.push_str("regex used for validation is '");
    }
    out.push_str(fmt);
    out.push_str("')");
    out
}

/// Matches `[a-z0-9]([-a-z0-9]*[a-z0-9])?` on the whole string.
fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => alnum(f) && alnum(l) && b.iter().all(|&c| alnum(c) || c == b'-'),
        _ => false,
    }
}

/// Matches the DNS-1123 subdomain regex on the whole string.
fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns1123_label)
}

/// Matches `[a-z]([-a-z0-9]*[a-z0-9])?` on the whole string.
fn matches_dns1035_label(s: &str) -> bool {
    matches_dns1123_label(s) && s.as_bytes().first().is_some_and(u8::is_ascii_lowercase)
}

/// Matches `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]` on the whole string.
fn matches_qualified_name(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => {
            f.is_ascii_alphanumeric()
                && l.is_ascii_alphanumeric()
                && b.iter()
                    .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// Problems with `value` as a DNS-1123 label (Namespace names); empty = valid.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(value) {
        if matches_dns1123_subdomain(value) {
            // A valid subdomain that is not a label can only differ by dots;
            // the length was reported above.
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// Problems with `value` as a DNS-1123 subdomain (most object names).
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// Problems with `value` as a DNS-1035 label (Service names: they become DNS
/// names and environment variables, so they must start with a letter).
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1035_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1035_LABEL_MAX_LENGTH));
    }
    if !matches_dns1035_label(value) {
        errs.push(regex_error(
            DNS1035_LABEL_ERR,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// Problems with `value` as a qualified name: a label or annotation key,
/// `[prefix/]name` with a DNS-1123 subdomain prefix.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    is_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(format!(
            "name part {}",
            max_len_error(QUALIFIED_NAME_MAX_LENGTH)
        ));
    }
    if !matches_qualified_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// Problems with `value` as a label value (may be empty).
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !matches_qualified_name(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// Problems with `value` as a path segment (the rule of RBAC object names:
/// anything that can sit in a URL path).
pub fn is_valid_path_segment_name(value: &str) -> Vec<String> {
    if value == "." || value == ".." {
        return vec![format!("may not be '{value}'")];
    }
    ["/", "%"]
        .iter()
        .filter(|bad| value.contains(*bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

/// How a kind's `metadata.name` is validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameRule {
    /// DNS-1123 subdomain: the default for most kinds.
    Subdomain,
    /// DNS-1123 label: Namespaces.
    Label,
    /// DNS-1035 label: Services.
    Dns1035Label,
    /// Path segment: RBAC Roles, ClusterRoles and their bindings.
    PathSegment,
}

impl NameRule {
    /// The rule the API server applies to `kind` (built-in kinds mirra
    /// meets; everything else, including custom resources, is a subdomain).
    pub fn for_kind(kind: &str) -> Self {
        match kind {
            "Namespace" => Self::Label,
            "Service" => Self::Dns1035Label,
            "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding" => Self::PathSegment,
            _ => Self::Subdomain,
        }
    }

    /// Problems with `name`. With `prefix` (a `generateName`), a trailing
    /// `-` is tolerated the way apimachinery does it (`maskTrailingDash`).
    pub fn check(self, name: &str, prefix: bool) -> Vec<String> {
        let masked;
        let name = if prefix && self != Self::PathSegment {
            masked = mask_trailing_dash(name);
            masked.as_str()
        } else {
            name
        };
        match self {
            Self::Subdomain => is_dns1123_subdomain(name),
            Self::Label => is_dns1123_label(name),
            Self::Dns1035Label => is_dns1035_label(name),
            Self::PathSegment => is_valid_path_segment_name(name),
        }
    }
}

/// apimachinery's `maskTrailingDash`: a prefix may end in `-` because the
/// random suffix follows. Reproduced exactly, including that it drops the
/// character before the dash too (`"ab-"` is checked as `"aa"`).
fn mask_trailing_dash(name: &str) -> String {
    if name.len() > 1 && name.ends_with('-') {
        let cut = name.len() - 2;
        if name.is_char_boundary(cut) {
            return format!("{}a", &name[..cut]);
        }
    }
    name.to_string()
}

/// Validates `metadata.name` / `metadata.generateName` of an object the way
/// `ValidateObjectMeta` does, returning field errors under `metadata.`.
///
/// `name` is the name the object will have (after `generateName` was
/// applied, if it was); pass `generate_name` to validate the prefix too.
pub fn validate_object_name(
    rule: NameRule,
    name: Option<&str>,
    generate_name: Option<&str>,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(prefix) = generate_name.filter(|g| !g.is_empty()) {
        for msg in rule.check(prefix, true) {
            errs.push(FieldError::invalid(
                Some("metadata.generateName"),
                prefix,
                msg,
            ));
        }
    }
    match name.filter(|n| !n.is_empty()) {
        None => errs.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        )),
        Some(n) => {
            for msg in rule.check(n, false) {
                errs.push(FieldError::invalid(Some("metadata.name"), n, msg));
            }
        }
    }
    errs
}

/// The name `generateName: prefix` produces with the random suffix
/// `random5` (normally [`GENERATED_SUFFIX_LENGTH`] characters of
/// [`GENERATED_SUFFIX_ALPHABET`], chosen by the caller): the prefix is cut to
/// [`MAX_GENERATED_PREFIX_LENGTH`] bytes so the result stays a valid label.
pub fn generate_name(prefix: &str, random5: &str) -> String {
    let mut cut = prefix.len().min(MAX_GENERATED_PREFIX_LENGTH);
    // Go slices bytes; a cut inside a multi-byte character would produce
    // invalid UTF-8, so step back to a boundary (such a prefix is invalid
    // anyway and will be rejected by the name check).
    while !prefix.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{random5}", &prefix[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

    #[test]
    fn subdomain_accepts_and_rejects_like_the_server() {
        for ok in [
            "a",
            "example.com",
            "a-b.c-d",
            "0",
            "a.b.c.d",
            "x".repeat(253).as_str(),
        ] {
            assert!(is_dns1123_subdomain(ok).is_empty(), "{ok}");
        }
        assert_eq!(
            is_dns1123_subdomain("Bad_Name"),
            vec![SUBDOMAIN_MSG.to_string()]
        );
        for bad in ["", "-a", "a-", "a..b", ".a", "a.", "A", "a_b", "a b", "é"] {
            assert_eq!(
                is_dns1123_subdomain(bad),
                vec![SUBDOMAIN_MSG.to_string()],
                "{bad:?}"
            );
        }
        assert_eq!(
            is_dns1123_subdomain(&"a".repeat(254)),
            vec!["must be no more than 253 characters".to_string()]
        );
    }

    #[test]
    fn label_reports_dots_separately() {
        assert!(is_dns1123_label("my-ns").is_empty());
        assert_eq!(
            is_dns1123_label("my.ns"),
            vec!["must not contain dots".to_string()]
        );
        assert_eq!(is_dns1123_label("My"), vec![LABEL_MSG.to_string()]);
        assert_eq!(
            is_dns1123_label(&"a".repeat(64)),
            vec!["must be no more than 63 characters".to_string()]
        );
    }

    #[test]
    fn dns1035_requires_a_leading_letter() {
        assert!(is_dns1035_label("web-1").is_empty());
        let e = is_dns1035_label("1web");
        assert_eq!(e.len(), 1);
        assert!(
            e[0].starts_with("a DNS-1035 label must consist of"),
            "{e:?}"
        );
        assert!(e[0].contains("(e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"));
    }

    #[test]
    fn qualified_name_messages() {
        assert!(is_qualified_name("app").is_empty());
        assert!(is_qualified_name("app.kubernetes.io/name").is_empty());
        assert_eq!(
            is_qualified_name("app:monolith"),
            vec!["name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".to_string()]
        );
        let e = is_qualified_name("app.kubernetes_io/name");
        assert_eq!(e.len(), 1);
        assert!(e[0].starts_with("prefix part a lowercase RFC 1123 subdomain"));
        assert_eq!(
            is_qualified_name("/a"),
            vec!["prefix part must be non-empty".to_string()]
        );
        let e = is_qualified_name("a/");
        assert_eq!(e[0], "name part must be non-empty");
        assert_eq!(e.len(), 2, "empty name also fails the regex: {e:?}");
        let e = is_qualified_name("a/b/c");
        assert_eq!(e.len(), 1);
        assert!(e[0].starts_with("a qualified name must consist of"));
        assert!(e[0].ends_with(
            "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ));
    }

    #[test]
    fn label_values() {
        assert!(is_valid_label_value("").is_empty());
        assert!(is_valid_label_value("My_Value-1.2").is_empty());
        assert_eq!(is_valid_label_value("a b").len(), 1);
        assert_eq!(
            is_valid_label_value(&format!("{}!", "a".repeat(63))).len(),
            2
        );
    }

    #[test]
    fn path_segments() {
        assert!(is_valid_path_segment_name("system:admin").is_empty());
        assert_eq!(
            is_valid_path_segment_name(".."),
            vec!["may not be '..'".to_string()]
        );
        assert_eq!(
            is_valid_path_segment_name("a/b%c"),
            vec![
                "may not contain '/'".to_string(),
                "may not contain '%'".to_string()
            ]
        );
    }

    #[test]
    fn object_name_errors_are_field_errors() {
        let errs = validate_object_name(NameRule::for_kind("ConfigMap"), Some("Bad_Name"), None);
        assert_eq!(errs.len(), 1);
        assert_eq!(
            errs[0].to_string(),
            format!("metadata.name: Invalid value: \"Bad_Name\": {SUBDOMAIN_MSG}")
        );
        let errs = validate_object_name(NameRule::Subdomain, None, None);
        assert_eq!(
            errs[0].to_string(),
            "metadata.name: Required value: name or generateName is required"
        );
        // A generateName prefix may end in '-'.
        assert!(
            validate_object_name(NameRule::Subdomain, Some("web-abcde"), Some("web-")).is_empty()
        );
        assert_eq!(
            validate_object_name(NameRule::Subdomain, Some("x"), Some("-")).len(),
            1
        );
    }

    #[test]
    fn kind_table() {
        assert_eq!(NameRule::for_kind("Namespace"), NameRule::Label);
        assert_eq!(NameRule::for_kind("Service"), NameRule::Dns1035Label);
        assert_eq!(NameRule::for_kind("ClusterRole"), NameRule::PathSegment);
        assert_eq!(NameRule::for_kind("SyncConfig"), NameRule::Subdomain);
    }

    #[test]
    fn generate_name_truncates_the_prefix() {
        assert_eq!(generate_name("web-", "x2b4z"), "web-x2b4z");
        let long = "a".repeat(80);
        let g = generate_name(&long, "bcdfg");
        assert_eq!(g.len(), 63);
        assert!(is_dns1123_label(&g).is_empty());
        // Multi-byte characters never split.
        let g = generate_name(&"é".repeat(40), "bcdfg");
        assert!(g.ends_with("bcdfg"));
    }

    proptest! {
        #[test]
        fn checks_never_panic(s in any::<String>()) {
            let _ = is_dns1123_label(&s);
            let _ = is_dns1123_subdomain(&s);
            let _ = is_dns1035_label(&s);
            let _ = is_qualified_name(&s);
            let _ = is_valid_label_value(&s);
            let _ = is_valid_path_segment_name(&s);
            for rule in [NameRule::Subdomain, NameRule::Label, NameRule::Dns1035Label, NameRule::PathSegment] {
                let _ = rule.check(&s, true);
                let _ = validate_object_name(rule, Some(&s), Some(&s));
            }
            let _ = generate_name(&s, "bcdfg");
        }

        #[test]
        fn generated_names_from_valid_prefixes_are_valid_subdomains(
            prefix in "[a-z][a-z0-9-]{0,80}",
            suffix in "[bcdfghjklmnpqrstvwxz2456789]{5}",
        ) {
            let name = generate_name(&prefix, &suffix);
            prop_assert!(name.len() <= DNS1123_LABEL_MAX_LENGTH);
            prop_assert!(is_dns1123_subdomain(&name).is_empty(), "{}", name);
        }

        #[test]
        fn label_is_subdomain_without_dots(s in "[a-z0-9.-]{0,70}") {
            if is_dns1123_label(&s).is_empty() {
                prop_assert!(is_dns1123_subdomain(&s).is_empty());
                prop_assert!(!s.contains('.'));
            }
        }
    }
}
