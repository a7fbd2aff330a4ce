//! ACL enforcement: tokens from the configuration and from the ACL tables
//! (`/v1/acl/policy`, `/role`, `/token`), resolved to rules per request.
//!
//! Consul resolves the token of each request, denies what the token's
//! policies do not grant with 403 and a `Permission denied: ...` text
//! naming the token's AccessorID (never its secret), and silently filters
//! reads. Modelled here: `service`/`service_prefix` and `node`/`node_prefix`
//! rules with `read`, `write` (implies read) or `deny`; an exact rule beats
//! every prefix rule, the longest prefix beats shorter ones, and between
//! policies saying different things about one name `deny` wins, then the
//! higher access. What no rule decides falls to the default policy
//! (`deny` or `allow`). Tokens linked to `global-management` may do
//! anything; the top-level `acl` rule grants the ACL endpoints. An unknown
//! secret answers 403 `ACL not found`; no token means the anonymous token.
//! With Enterprise features on ([`crate::Config::enterprise`]), rules
//! inside `namespace`/`partition` blocks apply within the namespaces they
//! name, top-level rules within the token's own partition (its `default`
//! namespace), and `operator` plus the blocks' `policy` govern namespace
//! and partition management. With them off, scoped rules are kept and
//! ignored, as Consul CE does.
//!
//! Every ACL object (policy, role, token, auth method, binding rule) lives
//! in one admin partition, as in Consul Enterprise: the one `?partition=`
//! names when it is written (`default` without it). Names are unique
//! within a partition, links and logins resolve names within it, and a
//! token of a non-default partition acts only there: its policies' rules,
//! the top-level ones included, are read as if inside a `partition`
//! block naming its partition, and `operator` (which Consul does not
//! allow in a partition) grants nothing.
//!
//! This module must NOT touch the catalog store or HTTP; it only answers
//! "may this token do that?", keeps the ACL tables, and renders denials.

use std::collections::BTreeMap;
use std::sync::RwLock;

use crate::acl_rules::{Grant, ParsedRules, ScopePolicy, scope_applies_in};

use crate::store::ReadFilter;

mod authorize;

use authorize::merge;

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

/// What a rule-less request may do when ACLs are on: Consul's
/// `acl.default_policy`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AclDefaultPolicy {
    /// Anything no rule grants is denied (the sandbox's default with ACLs on).
    #[default]
    Deny,
    /// Anything no rule denies is allowed.
    Allow,
}

impl AclDefaultPolicy {
    /// The name Consul uses (`X-Consul-Default-ACL-Policy`).
    pub fn as_str(self) -> &'static str {
        match self {
            AclDefaultPolicy::Deny => "deny",
            AclDefaultPolicy::Allow => "allow",
        }
    }
}

/// The ID of Consul's built-in `global-management` policy.
pub(crate) const GLOBAL_MANAGEMENT_ID: &str = "00000000-0000-0000-0000-000000000001";

/// A resolved token for one request.
#[derive(Debug, Clone)]
pub(crate) enum Authz {
    /// ACLs are off.
    Disabled,
    /// Management token.
    Management { accessor_id: String },
    /// A token (or the anonymous token) with rules.
    Rules {
        accessor_id: String,
        grants: Vec<Grant>,
        acl: Option<AclAccess>,
        operator: Option<AclAccess>,
        scope_policies: Vec<ScopePolicy>,
        partition_acls: Vec<ScopePolicy>,
        default_allow: bool,
    },
}

/// A policy stored through `/v1/acl/policy`.
#[derive(Debug, Clone)]
pub(crate) struct PolicyRec {
    pub id: String,
    /// The admin partition it lives in (`default` without Enterprise).
    pub partition: String,
    pub name: String,
    pub description: String,
    pub rules: String,
    pub parsed: ParsedRules,
    pub datacenters: Vec<String>,
    pub create_index: u64,
    pub modify_index: u64,
}

/// A role stored through `/v1/acl/role`: a named set of policy links.
#[derive(Debug, Clone)]
pub(crate) struct RoleRec {
    pub id: String,
    /// The admin partition it lives in (`default` without Enterprise).
    pub partition: String,
    pub name: String,
    pub description: String,
    pub policies: Vec<String>,
    pub create_index: u64,
    pub modify_index: u64,
}

/// A token stored through `/v1/acl/token` (or made at start-up).
#[derive(Debug, Clone)]
pub(crate) struct TokenRec {
    pub accessor_id: String,
    /// The admin partition it lives in (`default` without Enterprise).
    pub partition: String,
    pub secret_id: String,
    pub description: String,
    pub policies: Vec<String>,
    pub roles: Vec<String>,
    pub local: bool,
    /// The auth method that made it through `/v1/acl/login` ("" otherwise).
    pub auth_method: String,
    /// Service identities (bound by login).
    pub service_identities: Vec<String>,
    /// Node identities (bound by login): node name and datacenter.
    pub node_identities: Vec<(String, String)>,
    pub create_time: String,
    pub create_index: u64,
    pub modify_index: u64,
}

/// An auth method stored through `/v1/acl/auth-method`.
#[derive(Debug, Clone)]
pub(crate) struct AuthMethodRec {
    pub name: String,
    /// The admin partition it lives in (`default` without Enterprise).
    pub partition: String,
    pub kind: String,
    pub display_name: String,
    pub description: String,
    pub max_token_ttl: String,
    pub token_locality: String,
    /// The type-specific configuration, as sent.
    pub config: serde_json::Map<String, serde_json::Value>,
    pub create_index: u64,
    pub modify_index: u64,
}

/// A binding rule stored through `/v1/acl/binding-rule`.
#[derive(Debug, Clone)]
pub(crate) struct BindingRuleRec {
    pub id: String,
    /// The admin partition it lives in (`default` without Enterprise).
    pub partition: String,
    pub description: String,
    pub auth_method: String,
    pub selector: String,
    pub bind_type: String,
    pub bind_name: String,
    pub create_index: u64,
    pub modify_index: u64,
}

/// The ACL tables written through the HTTP API.
#[derive(Debug, Clone, Default)]
pub(crate) struct AclState {
    /// By (partition, name).
    pub auth_methods: BTreeMap<(String, String), AuthMethodRec>,
    /// By ID.
    pub binding_rules: BTreeMap<String, BindingRuleRec>,
    pub policies: BTreeMap<String, PolicyRec>,
    pub roles: BTreeMap<String, RoleRec>,
    /// By AccessorID.
    pub tokens: BTreeMap<String, TokenRec>,
    /// SecretID -> AccessorID.
    pub by_secret: BTreeMap<String, String>,
}

/// Tokens from the configuration plus the ACL tables, resolved per request.
#[derive(Debug, Default)]
pub(crate) struct AclTable {
    enabled: bool,
    default_policy: AclDefaultPolicy,
    by_secret: BTreeMap<String, AclToken>,
    anonymous: Vec<AclRule>,
    /// Enterprise features on: scoped rules are enforced.
    enterprise: bool,
    state: RwLock<AclState>,
}

impl AclTable {
    /// Builds the table; ACLs are on when any of the three is given.
    pub fn new(
        config: Option<&AclConfig>,
        default_policy: Option<AclDefaultPolicy>,
        initial_management: Option<&str>,
    ) -> Self {
        let enabled = config.is_some() || default_policy.is_some() || initial_management.is_some();
        if !enabled {
            return AclTable::default();
        }
        let mut state = AclState::default();
        state.policies.insert(
            GLOBAL_MANAGEMENT_ID.to_string(),
            PolicyRec {
                id: GLOBAL_MANAGEMENT_ID.to_string(),
                name: "global-management".into(),
                partition: crate::model::DEFAULT_TENANCY.into(),
                description: "Builtin Policy that grants unlimited access".into(),
                rules: String::new(),
                parsed: ParsedRules::default(),
                datacenters: Vec::new(),
                create_index: 1,
                modify_index: 1,
            },
        );
        if let Some(secret) = initial_management.filter(|s| !s.is_empty()) {
            let accessor = uuid::Uuid::new_v4().to_string();
            state.by_secret.insert(secret.to_string(), accessor.clone());
            state.tokens.insert(
                accessor.clone(),
                TokenRec {
                    accessor_id: accessor,
                    secret_id: secret.to_string(),
                    partition: crate::model::DEFAULT_TENANCY.into(),
                    description: "Initial Management Token".into(),
                    policies: vec![GLOBAL_MANAGEMENT_ID.to_string()],
                    roles: Vec::new(),
                    local: false,
                    auth_method: String::new(),
                    service_identities: Vec::new(),
                    node_identities: Vec::new(),
                    create_time: now_rfc3339(),
                    create_index: 1,
                    modify_index: 1,
                },
            );
        }
        AclTable {
            enabled: true,
            default_policy: default_policy.unwrap_or_default(),
            by_secret: config
                .map(|c| {
                    c.tokens
                        .iter()
                        .map(|t| (t.secret_id.clone(), t.clone()))
                        .collect()
                })
                .unwrap_or_default(),
            anonymous: config
                .map(|c| c.anonymous_rules.clone())
                .unwrap_or_default(),
            enterprise: false,
            state: RwLock::new(state),
        }
    }

    /// Switches the enforcement of `namespace`/`partition` blocks.
    pub fn set_enterprise(&mut self, on: bool) {
        self.enterprise = on;
    }

    /// Whether ACLs are enforced.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The default policy (meaningful only when enabled).
    pub fn default_policy(&self) -> AclDefaultPolicy {
        self.default_policy
    }

    /// The ACL tables, for reading.
    pub fn state(&self) -> std::sync::RwLockReadGuard<'_, AclState> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The ACL tables, for writing.
    pub fn state_mut(&self) -> std::sync::RwLockWriteGuard<'_, AclState> {
        self.state.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Resolves the secret a request carried (`None` or empty: anonymous).
    pub fn resolve(&self, secret: Option<&str>) -> Result<Authz, AclError> {
        if !self.enabled {
            return Ok(Authz::Disabled);
        }
        let default_allow = self.default_policy == AclDefaultPolicy::Allow;
        let static_rules = |accessor_id: String, rules: &[AclRule]| Authz::Rules {
            accessor_id,
            grants: rules.iter().map(AclRule::grant).collect(),
            acl: None,
            operator: None,
            scope_policies: Vec::new(),
            partition_acls: Vec::new(),
            default_allow,
        };
        let Some(s) = secret.filter(|s| !s.is_empty()) else {
            return Ok(static_rules(
                ANONYMOUS_ACCESSOR_ID.to_string(),
                &self.anonymous,
            ));
        };
        if let Some(t) = self.by_secret.get(s) {
            return Ok(match &t.policy {
                AclPolicy::Management => Authz::Management {
                    accessor_id: t.accessor_id.clone(),
                },
                AclPolicy::Rules(r) => static_rules(t.accessor_id.clone(), r),
            });
        }
        let st = self.state();
        let token = st
            .by_secret
            .get(s)
            .and_then(|a| st.tokens.get(a))
            .ok_or(AclError::NotFound)?;
        Ok(st.authz_of(token, default_allow, self.enterprise))
    }

    /// The stored token behind a secret (`/v1/acl/token/self`).
    pub fn token_by_secret(&self, secret: &str) -> Option<TokenRec> {
        let st = self.state();
        st.by_secret
            .get(secret)
            .and_then(|a| st.tokens.get(a))
            .cloned()
    }
}

impl AclState {
    /// Every policy a token reaches, directly or through its roles
    /// (links to deleted policies or roles are skipped, as Consul does).
    fn policies_of<'a>(&'a self, token: &'a TokenRec) -> impl Iterator<Item = &'a PolicyRec> + 'a {
        let via_roles = token
            .roles
            .iter()
            .filter_map(|r| self.roles.get(r))
            .flat_map(|r| r.policies.iter());
        token
            .policies
            .iter()
            .chain(via_roles)
            .filter_map(|p| self.policies.get(p))
    }

    fn authz_of(&self, token: &TokenRec, default_allow: bool, enterprise: bool) -> Authz {
        if self
            .policies_of(token)
            .any(|p| p.id == GLOBAL_MANAGEMENT_ID)
        {
            return Authz::Management {
                accessor_id: token.accessor_id.clone(),
            };
        }
        let mut grants = Vec::new();
        let grant = |resource, name: &str, exact, access| Grant {
            resource,
            name: name.to_string(),
            exact,
            access,
            scope: Vec::new(),
        };
        // What Consul's service and node identity templates grant.
        for svc in &token.service_identities {
            grants.push(grant(AclResource::Service, svc, true, AclAccess::Write));
            let proxy = format!("{svc}-sidecar-proxy");
            grants.push(grant(AclResource::Service, &proxy, true, AclAccess::Write));
            grants.push(grant(AclResource::Service, "", false, AclAccess::Read));
            grants.push(grant(AclResource::Node, "", false, AclAccess::Read));
        }
        for (node, _) in &token.node_identities {
            grants.push(grant(AclResource::Node, node, true, AclAccess::Write));
            grants.push(grant(AclResource::Service, "", false, AclAccess::Read));
        }
        let mut acl: Option<AclAccess> = None;
        let mut operator: Option<AclAccess> = None;
        let mut scope_policies = Vec::new();
        let mut partition_acls = Vec::new();
        for p in self.policies_of(token) {
            // Consul CE knows no namespaces: scoped rules never apply.
            grants.extend(
                p.parsed
                    .grants
                    .iter()
                    .filter(|g| enterprise || g.scope.is_empty())
                    .cloned(),
            );
            if let Some(a) = p.parsed.acl {
                acl = Some(acl.map_or(a, |b| merge(a, b)));
            }
            if let Some(a) = p.parsed.operator {
                operator = Some(operator.map_or(a, |b| merge(a, b)));
            }
            if enterprise {
                scope_policies.extend(p.parsed.scope_policies.iter().cloned());
                partition_acls.extend(p.parsed.partition_acls.iter().cloned());
            }
        }
        if enterprise
            && !token
                .partition
                .eq_ignore_ascii_case(crate::model::DEFAULT_TENANCY)
        {
            // A token of partition P: every rule reads as if written
            // inside `partition "P" { ... }`.
            let within = |scope: &mut Vec<(String, String)>| {
                scope.insert(0, ("partition".to_string(), token.partition.clone()));
            };
            grants.iter_mut().for_each(|g| within(&mut g.scope));
            scope_policies.iter_mut().for_each(|p| within(&mut p.scope));
            partition_acls.iter_mut().for_each(|p| within(&mut p.scope));
            if let Some(access) = acl.take() {
                partition_acls.push(ScopePolicy {
                    scope: vec![("partition".to_string(), token.partition.clone())],
                    access,
                });
            }
            operator = None;
        }
        Authz::Rules {
            accessor_id: token.accessor_id.clone(),
            grants,
            acl,
            operator,
            scope_policies,
            partition_acls,
            default_allow,
        }
    }
}

/// RFC 3339 "now" in UTC, for `CreateTime`.
pub(crate) fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Civil date from days since the epoch (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests;
