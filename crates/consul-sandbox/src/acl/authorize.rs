//! Authorization checks on a resolved token ([`Authz`]): what access it
//! has on a service, node, namespace, partition or the ACL endpoints, and
//! the `Permission denied` texts for what it lacks.
//!
//! This module must NOT resolve secrets or keep the ACL tables: the parent
//! module turns a secret into an [`Authz`] before these checks run.

use super::*;

/// Two policies saying different things about one name: deny wins, then
/// the higher access (Consul's merge order).
pub(super) fn merge(a: AclAccess, b: AclAccess) -> AclAccess {
    if a == AclAccess::Deny || b == AclAccess::Deny {
        AclAccess::Deny
    } else {
        a.max(b)
    }
}

impl AclRule {
    pub(super) fn grant(&self) -> Grant {
        Grant {
            resource: self.resource,
            name: self.prefix.clone(),
            exact: false,
            access: self.access,
            scope: Vec::new(),
        }
    }
}

impl Authz {
    /// The access the token has on `resource` `name`: an exact rule wins
    /// over prefix rules, the longest matching prefix over shorter ones;
    /// with no match, the default policy decides.
    fn access(&self, resource: AclResource, partition: &str, ns: &str, name: &str) -> AclAccess {
        match self {
            Authz::Disabled | Authz::Management { .. } => AclAccess::Write,
            Authz::Rules {
                grants,
                default_allow,
                ..
            } => {
                let mut exact: Option<AclAccess> = None;
                let mut prefix: Option<(usize, AclAccess)> = None;
                let applies = |g: &&Grant| {
                    g.resource == resource && scope_applies_in(&g.scope, partition, ns)
                };
                for g in grants.iter().filter(applies) {
                    if g.exact {
                        if g.name == name {
                            exact = Some(exact.map_or(g.access, |a| merge(a, g.access)));
                        }
                    } else if name.starts_with(&g.name) {
                        prefix = Some(match prefix {
                            Some((len, a)) if len > g.name.len() => (len, a),
                            Some((len, a)) if len == g.name.len() => (len, merge(a, g.access)),
                            _ => (g.name.len(), g.access),
                        });
                    }
                }
                exact
                    .or(prefix.map(|(_, a)| a))
                    .unwrap_or(if *default_allow {
                        AclAccess::Write
                    } else {
                        AclAccess::Deny
                    })
            }
        }
    }

    /// Whether ACLs are enforced for this request.
    pub fn enforced(&self) -> bool {
        !matches!(self, Authz::Disabled)
    }

    fn who(&self) -> String {
        match self {
            Authz::Rules { accessor_id, .. } if accessor_id == ANONYMOUS_ACCESSOR_ID => {
                "anonymous token".to_string()
            }
            Authz::Rules { accessor_id, .. } | Authz::Management { accessor_id } => {
                format!("token with AccessorID '{accessor_id}'")
            }
            Authz::Disabled => "token".to_string(),
        }
    }

    fn anonymous_hint(&self, msg: &mut String) {
        if matches!(self, Authz::Rules { accessor_id, .. } if accessor_id == ANONYMOUS_ACCESSOR_ID)
        {
            msg.push_str(
                ". The anonymous token is used implicitly when a request does not specify a token.",
            );
        }
    }

    /// Checks `acl:read` or `acl:write` (the ACL endpoints).
    pub fn require_acl(&self, access: AclAccess) -> Result<(), AclError> {
        let have = match self {
            Authz::Disabled | Authz::Management { .. } => AclAccess::Write,
            Authz::Rules {
                acl, default_allow, ..
            } => acl.unwrap_or(if *default_allow {
                AclAccess::Write
            } else {
                AclAccess::Deny
            }),
        };
        if have >= access {
            return Ok(());
        }
        let mut msg = format!(
            "Permission denied: {} lacks permission 'acl:{}'",
            self.who(),
            access.as_str()
        );
        self.anonymous_hint(&mut msg);
        Err(AclError::Denied(msg))
    }

    /// Checks `access` on `resource` `name` in the default namespace.
    pub fn require(
        &self,
        resource: AclResource,
        name: &str,
        access: AclAccess,
    ) -> Result<(), AclError> {
        self.require_in(resource, crate::model::DEFAULT_TENANCY, name, access)
    }

    /// The access of the top-level `operator` rule (default policy if none).
    fn operator_access(&self) -> AclAccess {
        match self {
            Authz::Disabled | Authz::Management { .. } => AclAccess::Write,
            Authz::Rules {
                operator,
                default_allow,
                ..
            } => operator.unwrap_or(if *default_allow {
                AclAccess::Write
            } else {
                AclAccess::Deny
            }),
        }
    }

    /// Checks `acl:<access>` within partition `part`: the top-level `acl`
    /// rule (the sandbox's tokens live in the default partition), or an
    /// `acl` rule inside a `partition` block naming `part`.
    pub fn require_acl_in(&self, part: &str, access: AclAccess) -> Result<(), AclError> {
        if let Authz::Rules { partition_acls, .. } = self
            && partition_acls
                .iter()
                .filter(|p| p.covers(true, "", part))
                .map(|p| p.access)
                .reduce(merge)
                .is_some_and(|a| a >= access)
        {
            return Ok(());
        }
        self.require_acl(access)
    }

    /// May the token create, change or delete namespace `name` of
    /// partition `part`? `operator:write`, or (Consul Enterprise 1.11+,
    /// where `operator` is not allowed inside a partition) a `namespace`
    /// or `namespace_prefix` block's `policy = "write"` covering it: the
    /// grant consul-k8s's server-acl-init gives sync-catalog and the
    /// injector for creating namespaces in a partition. Otherwise
    /// Consul's `operator:write` denial.
    pub fn require_namespace_write(&self, part: &str, name: &str) -> Result<(), AclError> {
        if let Authz::Rules { scope_policies, .. } = self
            && scope_policies
                .iter()
                .filter(|p| p.covers(false, part, name))
                .map(|p| p.access)
                .reduce(merge)
                .is_some_and(|a| a >= AclAccess::Write)
        {
            return Ok(());
        }
        self.require_operator(AclAccess::Write)
    }

    /// Checks `operator:<access>` (namespace and partition writes).
    pub fn require_operator(&self, access: AclAccess) -> Result<(), AclError> {
        if self.operator_access() >= access {
            return Ok(());
        }
        let mut msg = format!(
            "Permission denied: {} lacks permission 'operator:{}'",
            self.who(),
            access.as_str()
        );
        self.anonymous_hint(&mut msg);
        Err(AclError::Denied(msg))
    }

    /// May the token read namespace `name` of partition `part`
    /// (`partition` false) or partition `name`? `operator:read` reads them
    /// all; otherwise a block's own `policy` for it, or (namespaces) any
    /// rule granting read inside it.
    pub fn tenancy_read(&self, partition: bool, part: &str, name: &str) -> bool {
        if self.operator_access() >= AclAccess::Read {
            return true;
        }
        let Authz::Rules {
            grants,
            scope_policies,
            ..
        } = self
        else {
            return true;
        };
        let by_policy = scope_policies
            .iter()
            .filter(|p| p.covers(partition, part, name))
            .map(|p| p.access)
            .reduce(merge);
        if let Some(a) = by_policy {
            return a >= AclAccess::Read;
        }
        !partition
            && grants.iter().any(|g| {
                !g.scope.is_empty()
                    && g.access >= AclAccess::Read
                    && scope_applies_in(&g.scope, part, name)
            })
    }

    /// Renders a denial of reading a namespace or partition.
    pub fn tenancy_denied(&self, partition: bool, name: &str) -> AclError {
        let kind = if partition { "partition" } else { "namespace" };
        let mut msg = format!(
            "Permission denied: {} lacks permission '{kind}:read' on {}",
            self.who(),
            crate::store::go_quote(name)
        );
        self.anonymous_hint(&mut msg);
        AclError::Denied(msg)
    }

    /// Checks `access` on `resource` `name` in namespace `ns` of the
    /// default partition, rendering Consul's denial.
    pub fn require_in(
        &self,
        resource: AclResource,
        ns: &str,
        name: &str,
        access: AclAccess,
    ) -> Result<(), AclError> {
        self.require_part(resource, crate::model::DEFAULT_TENANCY, ns, name, access)
    }

    /// Checks `access` on `resource` `name` in namespace `ns` of
    /// `partition` (nodes: the partition's `default` namespace).
    pub fn require_part(
        &self,
        resource: AclResource,
        partition: &str,
        ns: &str,
        name: &str,
        access: AclAccess,
    ) -> Result<(), AclError> {
        if self.access(resource, partition, ns, name) >= access {
            return Ok(());
        }
        let mut msg = format!(
            "Permission denied: {} lacks permission '{}:{}' on {}",
            self.who(),
            resource.as_str(),
            access.as_str(),
            crate::store::go_quote(name)
        );
        self.anonymous_hint(&mut msg);
        Err(AclError::Denied(msg))
    }
}

impl ReadFilter for Authz {
    fn service_read(&self, partition: &str, ns: &str, name: &str) -> bool {
        self.access(AclResource::Service, partition, ns, name) >= AclAccess::Read
    }
    fn node_read(&self, partition: &str, name: &str) -> bool {
        self.access(
            AclResource::Node,
            partition,
            crate::model::DEFAULT_TENANCY,
            name,
        ) >= AclAccess::Read
    }
}
