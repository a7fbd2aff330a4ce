//! Optional ACL enforcement: tokens mapped to simple prefix policies.
//!
//! Consul resolves the token of each request (header `X-Consul-Token`,
//! `Authorization: Bearer`, or the legacy `?token=`), denies writes the
//! token's policy does not grant with 403 and a `Permission denied: ...`
//! text naming the token's AccessorID (never its secret), and silently
//! filters reads. This module models a subset: `service` and `node` rules
//! matched by longest prefix (an exact rule is a prefix rule on the full
//! name), `read` or `write` (write implies read) or `deny`, and management
//! tokens that may do anything. An unknown secret answers 403 `ACL not
//! found`; no token means the anonymous token, which has no rules unless
//! configured.
//!
//! This module must NOT touch the store or HTTP; it only answers "may this
//! token do that?" and renders the denial text.

use std::collections::BTreeMap;

use crate::store::ReadFilter;

/// The well-known AccessorID of Consul's anonymous token.
pub const ANONYMOUS_ACCESSOR_ID: &str = "00000000-0000-0000-0000-000000000002";

/// ACL mode configuration. When [`crate::Config::acl`] is `None`, ACLs are
/// off and everything is allowed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AclConfig {
    /// Known tokens.
    pub tokens: Vec<AclToken>,
    /// Rules of the anonymous token, used when a request carries no token.
    pub anonymous_rules: Vec<AclRule>,
}

/// A token: public AccessorID, secret, and what it may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclToken {
    /// Public identifier, shown in denial messages.
    pub accessor_id: String,
    /// The secret clients send.
    pub secret_id: String,
    /// What the token grants.
    pub policy: AclPolicy,
}

/// What a token grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AclPolicy {
    /// Everything (Consul's `global-management`).
    Management,
    /// Only what the rules grant; anything unmatched is denied.
    Rules(Vec<AclRule>),
}

/// One rule: `<resource>_prefix "<prefix>" { policy = "<access>" }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclRule {
    /// The resource kind.
    pub resource: AclResource,
    /// The name prefix the rule covers (`""` covers every name).
    pub prefix: String,
    /// The access granted.
    pub access: AclAccess,
}

impl AclRule {
    /// Convenience constructor.
    pub fn new(resource: AclResource, prefix: impl Into<String>, access: AclAccess) -> Self {
        AclRule {
            resource,
            prefix: prefix.into(),
            access,
        }
    }
}

/// Resource kinds the sandbox enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AclResource {
    /// Services (by service name).
    Service,
    /// Nodes (by node name).
    Node,
}

impl AclResource {
    fn as_str(self) -> &'static str {
        match self {
            AclResource::Service => "service",
            AclResource::Node => "node",
        }
    }
}

/// Access levels, ordered: deny < read < write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AclAccess {
    /// Explicitly denied.
    Deny,
    /// May read.
    Read,
    /// May read and write.
    Write,
}

impl AclAccess {
    fn as_str(self) -> &'static str {
        match self {
            AclAccess::Deny => "deny",
            AclAccess::Read => "read",
            AclAccess::Write => "write",
        }
    }
}

/// Why a request was refused. Not retryable with the same token: the user
/// must grant the policy or send another token. Both render as 403.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AclError {
    /// The token secret is unknown.
    #[error("ACL not found")]
    NotFound,
    /// The token lacks a permission.
    #[error("{0}")]
    Denied(String),
}

/// A resolved token for one request.
#[derive(Debug, Clone)]
pub(crate) enum Authz {
    /// ACLs are off.
    Disabled,
    /// Management token.
    Management,
    /// A token (or the anonymous token) with prefix rules.
    Rules {
        accessor_id: String,
        rules: Vec<AclRule>,
    },
}

/// Resolved tokens, indexed by secret for O(log n) lookups per request.
#[derive(Debug, Clone, Default)]
pub(crate) struct AclTable {
    enabled: bool,
    by_secret: BTreeMap<String, AclToken>,
    anonymous: Vec<AclRule>,
}

impl AclTable {
    /// Builds the table; `None` disables ACLs.
    pub fn new(config: Option<&AclConfig>) -> Self {
        match config {
            None => AclTable::default(),
            Some(c) => AclTable {
                enabled: true,
                by_secret: c
                    .tokens
                    .iter()
                    .map(|t| (t.secret_id.clone(), t.clone()))
                    .collect(),
                anonymous: c.anonymous_rules.clone(),
            },
        }
    }

    /// Whether ACLs are enforced.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Resolves the secret a request carried (`None` or empty: anonymous).
    pub fn resolve(&self, secret: Option<&str>) -> Result<Authz, AclError> {
        if !self.enabled {
            return Ok(Authz::Disabled);
        }
        match secret.filter(|s| !s.is_empty()) {
            None => Ok(Authz::Rules {
                accessor_id: ANONYMOUS_ACCESSOR_ID.to_string(),
                rules: self.anonymous.clone(),
            }),
            Some(s) => match self.by_secret.get(s) {
                None => Err(AclError::NotFound),
                Some(t) => Ok(match &t.policy {
                    AclPolicy::Management => Authz::Management,
                    AclPolicy::Rules(r) => Authz::Rules {
                        accessor_id: t.accessor_id.clone(),
                        rules: r.clone(),
                    },
                }),
            },
        }
    }
}

impl Authz {
    /// The access the token has on `resource` `name`: the longest matching
    /// prefix rule wins; no match means deny.
    fn access(&self, resource: AclResource, name: &str) -> AclAccess {
        match self {
            Authz::Disabled | Authz::Management => AclAccess::Write,
            Authz::Rules { rules, .. } => rules
                .iter()
                .filter(|r| r.resource == resource && name.starts_with(&r.prefix))
                .max_by_key(|r| r.prefix.len())
                .map_or(AclAccess::Deny, |r| r.access),
        }
    }

    /// Whether ACLs are enforced for this request.
    pub fn enforced(&self) -> bool {
        !matches!(self, Authz::Disabled)
    }

    /// Checks `access` on `resource` `name`, rendering Consul's denial.
    pub fn require(
        &self,
        resource: AclResource,
        name: &str,
        access: AclAccess,
    ) -> Result<(), AclError> {
        if self.access(resource, name) >= access {
            return Ok(());
        }
        let who = match self {
            Authz::Rules { accessor_id, .. } if accessor_id == ANONYMOUS_ACCESSOR_ID => {
                "anonymous token".to_string()
            }
            Authz::Rules { accessor_id, .. } => format!("token with AccessorID '{accessor_id}'"),
            Authz::Disabled | Authz::Management => "token".to_string(),
        };
        let mut msg = format!(
            "Permission denied: {who} lacks permission '{}:{}' on {}",
            resource.as_str(),
            access.as_str(),
            crate::store::go_quote(name)
        );
        if matches!(self, Authz::Rules { accessor_id, .. } if accessor_id == ANONYMOUS_ACCESSOR_ID)
        {
            msg.push_str(
                ". The anonymous token is used implicitly when a request does not specify a token.",
            );
        }
        Err(AclError::Denied(msg))
    }
}

impl ReadFilter for Authz {
    fn service_read(&self, name: &str) -> bool {
        self.access(AclResource::Service, name) >= AclAccess::Read
    }
    fn node_read(&self, name: &str) -> bool {
        self.access(AclResource::Node, name) >= AclAccess::Read
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> AclTable {
        AclTable::new(Some(&AclConfig {
            tokens: vec![
                AclToken {
                    accessor_id: "acc-1".into(),
                    secret_id: "s3cr3t".into(),
                    policy: AclPolicy::Rules(vec![
                        AclRule::new(AclResource::Service, "", AclAccess::Read),
                        AclRule::new(AclResource::Service, "web", AclAccess::Write),
                        AclRule::new(AclResource::Service, "web-private", AclAccess::Deny),
                        AclRule::new(AclResource::Node, "k8s-", AclAccess::Write),
                    ]),
                },
                AclToken {
                    accessor_id: "root".into(),
                    secret_id: "root-secret".into(),
                    policy: AclPolicy::Management,
                },
            ],
            anonymous_rules: vec![],
        }))
    }

    #[test]
    fn longest_prefix_wins_and_write_implies_read() {
        let a = table().resolve(Some("s3cr3t")).unwrap();
        assert!(
            a.require(AclResource::Service, "web-1", AclAccess::Write)
                .is_ok()
        );
        assert!(
            a.require(AclResource::Service, "web-private-1", AclAccess::Read)
                .is_err()
        );
        assert!(
            a.require(AclResource::Service, "db", AclAccess::Read)
                .is_ok()
        );
        assert!(
            a.require(AclResource::Service, "db", AclAccess::Write)
                .is_err()
        );
        assert!(
            a.require(AclResource::Node, "k8s-sync", AclAccess::Read)
                .is_ok()
        );
        assert!(
            a.require(AclResource::Node, "other", AclAccess::Read)
                .is_err()
        );
    }

    #[test]
    fn denial_names_the_accessor_never_the_secret() {
        let a = table().resolve(Some("s3cr3t")).unwrap();
        let e = a
            .require(AclResource::Service, "db", AclAccess::Write)
            .unwrap_err();
        let msg = e.to_string();
        assert_eq!(
            msg,
            "Permission denied: token with AccessorID 'acc-1' lacks permission 'service:write' on \"db\""
        );
        assert!(!msg.contains("s3cr3t"));
    }

    #[test]
    fn anonymous_and_unknown_tokens() {
        let t = table();
        let anon = t.resolve(None).unwrap();
        let msg = anon
            .require(AclResource::Node, "n", AclAccess::Write)
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with("Permission denied: anonymous token lacks permission 'node:write'")
        );
        assert!(msg.ends_with("does not specify a token."));
        assert!(
            t.resolve(Some(""))
                .unwrap()
                .require(AclResource::Node, "n", AclAccess::Read)
                .is_err()
        );
        assert_eq!(t.resolve(Some("wrong")).unwrap_err(), AclError::NotFound);
        let root = t.resolve(Some("root-secret")).unwrap();
        assert!(
            root.require(AclResource::Node, "anything", AclAccess::Write)
                .is_ok()
        );
    }

    #[test]
    fn disabled_allows_everything() {
        let a = AclTable::new(None).resolve(Some("whatever")).unwrap();
        assert!(!a.enforced());
        assert!(
            a.require(AclResource::Service, "x", AclAccess::Write)
                .is_ok()
        );
    }
}
