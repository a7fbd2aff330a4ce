//! Kubernetes naming rules that the planner checks before it writes: object
//! names, label keys and label values.
//!
//! The API server is the final judge; these checks exist so that an invalid
//! name is reported on the SyncConfig (with the field path) instead of as a
//! 422 from the server on every attempt. What this module must NOT do: reject
//! names the server would accept. Kinds not listed in [`strict_name_rule`] get
//! only the rules every Kubernetes object name obeys.
//!
//! `kube-semantics::names` checks the same syntax, and this module does not
//! use it on purpose. That crate is the test bed's model of the API server;
//! if the controller judged names with the server's own model, a misread
//! rule would be wrong identically on both sides and no test against
//! `kube-sandbox` could catch it (the reason `mirra-consul` and
//! `consul-sandbox` share no code either). The contracts differ too: this
//! module is permissive by default (an unknown kind gets only the
//! path-segment rule) and words its messages for a SyncConfig's status,
//! while `kube-semantics` reproduces the server's 422 texts byte for byte.

/// Longest object name the API server accepts for most kinds (a DNS-1123
/// subdomain), and the limit mirra applies to every kind.
pub const MAX_NAME_LEN: usize = 253;
/// Longest DNS-1123/1035 label (Service names, label names, label values).
pub const MAX_LABEL_LEN: usize = 63;

/// The rule an object name of a given kind must follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// Lowercase alphanumerics, `-` and `.`, starting and ending
    /// alphanumeric, at most 253 characters (ConfigMap, Secret, ...).
    Dns1123Subdomain,
    /// Lowercase alphanumerics and `-`, starting with a letter, ending
    /// alphanumeric, at most 63 characters (Service).
    Dns1035Label,
    /// What every object name obeys: not empty, not `.` or `..`, no `/` or
    /// `%`, at most 253 characters (e.g. RBAC names may contain `:`).
    PathSegment,
}

/// The naming rule for a kind. Only core kinds whose rule is certain are
/// listed; everything else gets the permissive [`NameRule::PathSegment`].
pub fn strict_name_rule(group: &str, kind: &str) -> NameRule {
    match (group, kind) {
        ("", "Service") => NameRule::Dns1035Label,
        ("", "ConfigMap" | "Secret" | "ServiceAccount" | "LimitRange" | "ResourceQuota")
        | ("networking.k8s.io", "NetworkPolicy") => NameRule::Dns1123Subdomain,
        _ => NameRule::PathSegment,
    }
}

/// Checks an object name against a rule; `Err` says which part is wrong.
pub fn check_name(name: &str, rule: NameRule) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    match rule {
        NameRule::PathSegment => {
            if name.len() > MAX_NAME_LEN {
                return Err(format!("must be at most {MAX_NAME_LEN} characters"));
            }
            if name == "." || name == ".." {
                return Err("must not be '.' or '..'".into());
            }
            if name.contains('/') || name.contains('%') {
                return Err("must not contain '/' or '%'".into());
            }
            Ok(())
        }
        NameRule::Dns1123Subdomain => check_dns1123_subdomain(name),
        NameRule::Dns1035Label => {
            if name.len() > MAX_LABEL_LEN {
                return Err(format!("must be at most {MAX_LABEL_LEN} characters"));
            }
            let ok_chars = name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
            let starts = name.bytes().next().is_some_and(|b| b.is_ascii_lowercase());
            let ends = name
                .bytes()
                .last()
                .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
            if ok_chars && starts && ends {
                Ok(())
            } else {
                Err(
                    "must consist of lower case alphanumerics or '-', start with a letter \
                     and end with an alphanumeric (DNS-1035 label)"
                        .into(),
                )
            }
        }
    }
}

/// A DNS-1123 subdomain: dot-separated DNS-1123 labels, at most 253 characters.
pub fn check_dns1123_subdomain(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!("must be at most {MAX_NAME_LEN} characters"));
    }
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let ok_chars = name.bytes().all(|b| alnum(b) || b == b'-' || b == b'.');
    let bytes = name.as_bytes();
    let ends_ok =
        bytes.first().is_some_and(|b| alnum(*b)) && bytes.last().is_some_and(|b| alnum(*b));
    // Each dot-separated part must itself start and end alphanumeric.
    let parts_ok = name.split('.').all(|part| {
        let p = part.as_bytes();
        p.first().is_some_and(|b| alnum(*b)) && p.last().is_some_and(|b| alnum(*b))
    });
    if ok_chars && ends_ok && parts_ok {
        Ok(())
    } else {
        Err(
            "must consist of lower case alphanumerics, '-' or '.', and start and end \
             with an alphanumeric (DNS-1123 subdomain)"
                .into(),
        )
    }
}

/// A label key: an optional DNS-1123 subdomain prefix and `/`, then a name of
/// at most 63 characters of alphanumerics, `-`, `_` and `.`, starting and
/// ending alphanumeric.
pub fn check_label_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        check_dns1123_subdomain(prefix).map_err(|e| format!("prefix {prefix:?} {e}"))?;
    }
    if name.is_empty() {
        return Err("name part must not be empty".into());
    }
    check_label_value(name).map_err(|e| format!("name part {e}"))
}

/// A label value: empty, or at most 63 characters of alphanumerics, `-`, `_`
/// and `.`, starting and ending alphanumeric.
pub fn check_label_value(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Ok(());
    }
    if value.len() > MAX_LABEL_LEN {
        return Err(format!("must be at most {MAX_LABEL_LEN} characters"));
    }
    let ok_chars = value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
    let b = value.as_bytes();
    let ends_ok = b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric);
    if ok_chars && ends_ok {
        Ok(())
    } else {
        Err(
            "must consist of alphanumerics, '-', '_' or '.', and start and end with an \
             alphanumeric"
                .into(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn object_names_table() {
        let cases: &[(&str, NameRule, bool)] = &[
            ("app-config", NameRule::Dns1123Subdomain, true),
            ("a.b-c", NameRule::Dns1123Subdomain, true),
            ("App", NameRule::Dns1123Subdomain, false),
            ("-a", NameRule::Dns1123Subdomain, false),
            ("a.", NameRule::Dns1123Subdomain, false),
            ("a..b", NameRule::Dns1123Subdomain, false),
            ("a_b", NameRule::Dns1123Subdomain, false),
            ("", NameRule::Dns1123Subdomain, false),
            ("web", NameRule::Dns1035Label, true),
            ("1web", NameRule::Dns1035Label, false),
            ("web.x", NameRule::Dns1035Label, false),
            ("system:controller", NameRule::PathSegment, true),
            ("a/b", NameRule::PathSegment, false),
            ("a%b", NameRule::PathSegment, false),
            ("..", NameRule::PathSegment, false),
            ("", NameRule::PathSegment, false),
        ];
        for (name, rule, ok) in cases {
            assert_eq!(
                check_name(name, *rule).is_ok(),
                *ok,
                "{name:?} under {rule:?}"
            );
        }
        assert!(check_name(&"a".repeat(253), NameRule::Dns1123Subdomain).is_ok());
        assert!(check_name(&"a".repeat(254), NameRule::Dns1123Subdomain).is_err());
        assert!(check_name(&"a".repeat(254), NameRule::PathSegment).is_err());
        assert!(check_name(&"a".repeat(64), NameRule::Dns1035Label).is_err());
    }

    #[test]
    fn label_keys_and_values_table() {
        let keys: &[(&str, bool)] = &[
            ("team", true),
            ("app.kubernetes.io/name", true),
            ("example.com/Team_1", true),
            ("/team", false),
            ("example.com/", false),
            ("Example.com/team", false),
            ("-team", false),
            ("a/b/c", false),
        ];
        for (key, ok) in keys {
            assert_eq!(check_label_key(key).is_ok(), *ok, "{key:?}");
        }
        let values: &[(&str, bool)] = &[
            ("", true),
            ("prod", true),
            ("A_b.c-1", true),
            ("-x", false),
            ("a b", false),
        ];
        for (value, ok) in values {
            assert_eq!(check_label_value(value).is_ok(), *ok, "{value:?}");
        }
        assert!(check_label_value(&"a".repeat(64)).is_err());
    }

    #[test]
    fn kinds_map_to_rules() {
        assert_eq!(strict_name_rule("", "Service"), NameRule::Dns1035Label);
        assert_eq!(
            strict_name_rule("", "ConfigMap"),
            NameRule::Dns1123Subdomain
        );
        assert_eq!(
            strict_name_rule("rbac.authorization.k8s.io", "Role"),
            NameRule::PathSegment
        );
    }

    proptest! {
        #[test]
        fn name_checks_never_panic(name in any::<String>()) {
            for rule in [NameRule::Dns1123Subdomain, NameRule::Dns1035Label, NameRule::PathSegment] {
                let _ = check_name(&name, rule);
            }
            let _ = check_label_key(&name);
            let _ = check_label_value(&name);
        }

        #[test]
        fn generated_subdomains_are_accepted(name in "[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?){0,3}") {
            prop_assert!(check_dns1123_subdomain(&name).is_ok());
            prop_assert!(check_name(&name, NameRule::PathSegment).is_ok());
        }

        #[test]
        fn uppercase_is_never_a_subdomain(name in "[a-z]{0,5}[A-Z][a-z]{0,5}") {
            prop_assert!(check_dns1123_subdomain(&name).is_err());
        }
    }
}
