//! Names of things: a SyncConfig ([`ConfigRef`]) and a target object
//! ([`ObjectRef`], identified by [`ObjectKey`]).
//!
//! An object's identity is its API group, kind, namespace and name; the
//! version is not part of it, because `apps/v1` and `apps/v1beta1` name the
//! same stored object. What this module must NOT do: validate; these are
//! plain values.

use std::fmt;

/// `namespace/name` of a SyncConfig.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ConfigRef {
    /// The SyncConfig's namespace.
    pub namespace: String,
    /// The SyncConfig's name.
    pub name: String,
}

impl ConfigRef {
    /// A reference from its parts.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        ConfigRef {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// Parses the `namespace/name` form written into the owner annotation.
    /// Returns `None` for anything else (no slash, or an empty part), so a
    /// hand-edited annotation never names a config by accident.
    pub fn parse(s: &str) -> Option<ConfigRef> {
        let (namespace, name) = s.split_once('/')?;
        if namespace.is_empty() || name.is_empty() || name.contains('/') {
            return None;
        }
        Some(ConfigRef::new(namespace, name))
    }
}

impl fmt::Display for ConfigRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// The API group of an apiVersion: `""` for `v1`, `apps` for `apps/v1`.
pub fn group_of(api_version: &str) -> &str {
    match api_version.split_once('/') {
        Some((group, _)) => group,
        None => "",
    }
}

/// The identity of a namespaced object: group, kind, namespace, name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// The API group (`""` for the core group).
    pub group: String,
    /// The kind.
    pub kind: String,
    /// The namespace.
    pub namespace: String,
    /// The name.
    pub name: String,
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
        } else {
            write!(
                f,
                "{}.{} {}/{}",
                self.kind, self.group, self.namespace, self.name
            )
        }
    }
}

/// A namespaced object as mirra addresses it when writing: with the
/// apiVersion to use for the request.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectRef {
    /// apiVersion, e.g. `v1` or `apps/v1`.
    pub api_version: String,
    /// The kind.
    pub kind: String,
    /// The namespace.
    pub namespace: String,
    /// The name.
    pub name: String,
}

impl ObjectRef {
    /// The object's identity (the version dropped).
    pub fn key(&self) -> ObjectKey {
        ObjectKey {
            group: group_of(&self.api_version).to_string(),
            kind: self.kind.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {}/{}",
            self.api_version, self.kind, self.namespace, self.name
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn config_ref_parse_table() {
        let cases: &[(&str, Option<(&str, &str)>)] = &[
            ("ops/base", Some(("ops", "base"))),
            ("ops", None),
            ("/base", None),
            ("ops/", None),
            ("a/b/c", None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(
                ConfigRef::parse(text),
                want.map(|(ns, n)| ConfigRef::new(ns, n)),
                "{text:?}"
            );
        }
    }

    #[test]
    fn identity_ignores_the_version() {
        let a = ObjectRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: "n".into(),
            name: "d".into(),
        };
        let b = ObjectRef {
            api_version: "apps/v1beta1".into(),
            ..a.clone()
        };
        assert_eq!(a.key(), b.key());
        assert_eq!(group_of("v1"), "");
        assert_eq!(
            group_of("rbac.authorization.k8s.io/v1"),
            "rbac.authorization.k8s.io"
        );
    }

    proptest! {
        #[test]
        fn config_ref_round_trips(ns in "[a-z0-9-]{1,20}", name in "[a-z0-9.-]{1,20}") {
            let r = ConfigRef::new(ns, name);
            prop_assert_eq!(ConfigRef::parse(&r.to_string()), Some(r));
        }

        #[test]
        fn config_ref_parse_never_panics(s in any::<String>()) {
            let _ = ConfigRef::parse(&s);
        }
    }
}
