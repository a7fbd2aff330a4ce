//! Names of things: a SyncConfig ([`ConfigRef`]) and a target object
//! ([`ObjectRef`], identified by [`ObjectKey`]).
//!
//! An object's identity is its API group, kind, namespace and name; the
//! version is not part of it, because `apps/v1` and `apps/v1beta1` name the
//! same stored object. What this module must NOT do: validate; these are
//! plain values.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// A name or other short string of a reference, shared rather than copied:
/// the planner hands out the same SyncConfig, namespace and kind names in
/// every outcome of every namespace, and the controller keeps those
/// outcomes (40,000 and more) between plans. Reads as a `str`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Name(Arc<str>);

impl Name {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether another holder shares this text.
    fn is_shared(&self) -> bool {
        Arc::strong_count(&self.0) > 1
    }
}

/// Hands out one shared [`Name`] per distinct text, so that what a caller
/// keeps for long (a namespace's outcomes, for every namespace) holds each
/// SyncConfig, kind and object name once instead of once per outcome.
/// Texts nobody else holds any more are let go as the set grows.
#[derive(Debug, Default)]
pub struct NameInterner {
    names: std::collections::HashSet<Name>,
    /// Size after the last sweep; the next sweep waits for the set to
    /// double, so sweeping costs O(1) per interned name over time.
    kept: usize,
}

impl NameInterner {
    /// Makes `name` the shared copy of its text.
    pub fn intern(&mut self, name: &mut Name) {
        match self.names.get(name.as_str()) {
            Some(held) => {
                if !Arc::ptr_eq(&held.0, &name.0) {
                    *name = held.clone();
                }
            }
            None => {
                self.names.insert(name.clone());
                if self.names.len() > 2 * self.kept + 1024 {
                    self.names.retain(Name::is_shared);
                    self.kept = self.names.len();
                }
            }
        }
    }

    /// Both names of a SyncConfig.
    pub fn intern_config(&mut self, config: &mut ConfigRef) {
        self.intern(&mut config.namespace);
        self.intern(&mut config.name);
    }

    /// Every name of an object reference.
    pub fn intern_object(&mut self, target: &mut ObjectRef) {
        self.intern(&mut target.api_version);
        self.intern(&mut target.kind);
        self.intern(&mut target.namespace);
        self.intern(&mut target.name);
    }

    /// Number of distinct texts held.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether no text is held.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

impl Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Name {
    fn from(s: &str) -> Self {
        Name(Arc::from(s))
    }
}

impl From<String> for Name {
    fn from(s: String) -> Self {
        Name(Arc::from(s))
    }
}

impl From<&String> for Name {
    fn from(s: &String) -> Self {
        Name(Arc::from(s.as_str()))
    }
}

impl From<Name> for String {
    fn from(n: Name) -> String {
        n.0.to_string()
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for Name {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<Name> for str {
    fn eq(&self, other: &Name) -> bool {
        self == &*other.0
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        *self == &*other.0
    }
}

impl PartialEq<Name> for String {
    fn eq(&self, other: &Name) -> bool {
        **self == *other.0
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

/// `namespace/name` of a SyncConfig.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ConfigRef {
    /// The SyncConfig's namespace.
    pub namespace: Name,
    /// The SyncConfig's name.
    pub name: Name,
}

impl ConfigRef {
    /// A reference from its parts.
    pub fn new(namespace: impl Into<Name>, name: impl Into<Name>) -> Self {
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
    pub api_version: Name,
    /// The kind.
    pub kind: Name,
    /// The namespace.
    pub namespace: Name,
    /// The name.
    pub name: Name,
}

impl ObjectRef {
    /// The object's identity (the version dropped).
    pub fn key(&self) -> ObjectKey {
        ObjectKey {
            group: group_of(&self.api_version).to_string(),
            kind: self.kind.to_string(),
            namespace: self.namespace.to_string(),
            name: self.name.to_string(),
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
    fn interned_names_share_one_text_and_unheld_ones_are_let_go() {
        let mut interner = NameInterner::default();
        let mut a = Name::from("team-a");
        let mut b = Name::from(String::from("team-a"));
        interner.intern(&mut a);
        interner.intern(&mut b);
        assert!(Arc::ptr_eq(&a.0, &b.0));
        assert_eq!(a, "team-a");
        drop((a, b));
        // Enough new texts to trigger a sweep: the dropped one goes, the
        // held ones stay.
        let mut held = Vec::new();
        for i in 0..1100 {
            let mut n = Name::from(format!("n{i}"));
            interner.intern(&mut n);
            held.push(n);
        }
        assert!(interner.len() <= held.len());
        assert!(!interner.names.contains("team-a"));
        let mut again = Name::from("n7");
        interner.intern(&mut again);
        assert!(Arc::ptr_eq(&again.0, &held[7].0));
    }

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
