//! The sync settings that change what a Service becomes in Consul.
//!
//! One field per consul-k8s `sync-catalog` flag that affects the mapping, with
//! [`Default`] equal to the defaults of the consul-k8s binary (not of its Helm
//! chart; see [`SyncSettings::helm_chart_defaults`]). This module only holds
//! and validates data: it must NOT parse command lines or read the
//! environment; the binary does that and hands a value in.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

/// The longest Consul node name accepted, in bytes.
///
/// consul-k8s enforces 63 because the node name becomes a DNS label
/// (`<node>.node.consul`), and DNS labels are at most 63 bytes.
pub const MAX_NODE_NAME_BYTES: usize = 63;

/// Which node address a NodePort instance is registered at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum NodePortSyncType {
    /// Only the node's `ExternalIP`; endpoints on nodes without one are not
    /// registered. The consul-k8s binary default.
    #[default]
    ExternalOnly,
    /// Only the node's `InternalIP`.
    InternalOnly,
    /// The node's `ExternalIP`, else its `InternalIP`. The Helm chart default.
    ExternalFirst,
}

impl NodePortSyncType {
    /// The flag value, as consul-k8s spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ExternalOnly => "ExternalOnly",
            Self::InternalOnly => "InternalOnly",
            Self::ExternalFirst => "ExternalFirst",
        }
    }
}

impl fmt::Display for NodePortSyncType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for NodePortSyncType {
    type Err = SettingsError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "ExternalOnly" => Ok(Self::ExternalOnly),
            "InternalOnly" => Ok(Self::InternalOnly),
            "ExternalFirst" => Ok(Self::ExternalFirst),
            other => Err(SettingsError::UnknownNodePortSyncType(other.to_owned())),
        }
    }
}

/// How ports are written into a registration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PortLayout {
    /// One `Port` per instance, as every consul-k8s release before late 2025
    /// wrote it. Every Consul version understands it; the default.
    #[default]
    Single,
    /// A `Ports` list (name, port, default flag) with `Port` 0, as newer
    /// consul-k8s releases write it for Consul versions that know the field.
    Multi,
}

impl PortLayout {
    /// The flag value (`-port-layout`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Single => "single",
            Self::Multi => "multi",
        }
    }
}

impl fmt::Display for PortLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PortLayout {
    type Err = SettingsError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "single" => Ok(Self::Single),
            "multi" => Ok(Self::Multi),
            other => Err(SettingsError::UnknownPortLayout(other.to_owned())),
        }
    }
}

/// Everything that decides what a Kubernetes Service becomes in Consul (and,
/// for the reverse direction, what a Consul service becomes in Kubernetes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncSettings {
    /// `-to-consul`: sync Kubernetes Services into Consul.
    pub to_consul: bool,
    /// `-to-k8s`: sync Consul services into Kubernetes ExternalName Services.
    pub to_k8s: bool,
    /// `-k8s-default-sync`: sync every Service unless annotated
    /// `service-sync: false`; when false, only Services annotated true.
    pub k8s_default_sync: bool,
    /// `-consul-service-prefix`: prepended to every Consul service name that
    /// is not set by the `service-name` annotation.
    pub consul_service_prefix: String,
    /// `-k8s-service-prefix`: prepended to the names of Kubernetes Services
    /// created from Consul services.
    pub k8s_service_prefix: String,
    /// `-allow-k8s-namespace` (repeatable). `*` allows every namespace; an
    /// EMPTY set syncs nothing.
    pub allow_k8s_namespaces: BTreeSet<String>,
    /// `-deny-k8s-namespace` (repeatable). Wins over the allow set.
    pub deny_k8s_namespaces: BTreeSet<String>,
    /// `-add-k8s-namespace-suffix`: Consul name `<name>-<namespace>`.
    pub add_k8s_namespace_suffix: bool,
    /// `-consul-k8s-tag`: the first tag of every instance, and half of the
    /// ownership mark.
    pub consul_k8s_tag: String,
    /// `-consul-node-name`: the synthetic node every instance lives on.
    pub consul_node_name: String,
    /// Address of the synthetic node. consul-k8s uses `127.0.0.1`, or `::1`
    /// when it runs dual-stack.
    pub consul_node_address: String,
    /// `-sync-clusterip-services`: sync ClusterIP Services at all.
    pub sync_clusterip_services: bool,
    /// `-sync-lb-services-endpoints`: register LoadBalancer Services by their
    /// endpoints (like ClusterIP) instead of their load balancer addresses.
    pub sync_lb_services_endpoints: bool,
    /// `-node-port-sync-type`.
    pub node_port_sync_type: NodePortSyncType,
    /// `-enable-ingress`: collapse instances of a Service exposed by an
    /// Ingress `/` path to the Ingress host.
    pub enable_ingress: bool,
    /// `-loadBalancer-ips`: with ingress sync, use the Ingress load balancer
    /// IP instead of the rule host.
    pub sync_ingress_lb_ips: bool,
    /// `-port-layout`: single `Port` or multi-port `Ports` layout.
    pub port_layout: PortLayout,
    /// `-k8s-write-namespace`: where Services created from Consul live.
    pub k8s_write_namespace: String,
    /// `-consul-domain`: the DNS domain in ExternalName targets.
    pub consul_domain: String,
    /// `-enable-namespaces` and its companions: the Consul Enterprise
    /// namespace each registration goes into.
    pub consul_namespaces: ConsulNamespaces,
}

/// The Consul Enterprise namespace of the registrations, as consul-k8s
/// derives it from `-enable-namespaces`, `-consul-destination-namespace`,
/// `-enable-k8s-namespace-mirroring` and `-k8s-namespace-mirroring-prefix`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ConsulNamespaces {
    /// No namespace is named anywhere: requests and registrations are
    /// exactly those of a Consul without namespaces.
    #[default]
    Disabled,
    /// Every registration goes into this namespace.
    Destination(String),
    /// Each registration goes into `<prefix><Kubernetes namespace>`.
    Mirrored {
        /// Prepended to the Kubernetes namespace's name.
        prefix: String,
    },
}

/// The namespace every Consul Enterprise partition has from its start, and
/// the only one mirra never creates.
pub const DEFAULT_CONSUL_NAMESPACE: &str = "default";

impl ConsulNamespaces {
    /// From the flags, with consul-k8s's precedence: nothing without
    /// `-enable-namespaces`, mirroring before the destination.
    pub fn from_flags(enabled: bool, destination: &str, mirroring: bool, prefix: &str) -> Self {
        match (enabled, mirroring) {
            (false, _) => Self::Disabled,
            (true, true) => Self::Mirrored {
                prefix: prefix.to_owned(),
            },
            (true, false) => Self::Destination(destination.to_owned()),
        }
    }

    /// Whether registrations name a namespace at all.
    pub fn enabled(&self) -> bool {
        !matches!(self, Self::Disabled)
    }

    /// The Consul namespace of a Service in Kubernetes namespace `k8s_ns`;
    /// `None` when namespaces are disabled. An empty destination is
    /// Consul's `default` (an empty `Namespace` means it on the wire), so
    /// that both spellings compare equal.
    pub fn for_k8s_namespace(&self, k8s_ns: &str) -> Option<String> {
        let name = match self {
            Self::Disabled => return None,
            Self::Destination(d) => d.clone(),
            Self::Mirrored { prefix } => format!("{prefix}{k8s_ns}"),
        };
        Some(if name.is_empty() {
            DEFAULT_CONSUL_NAMESPACE.to_owned()
        } else {
            name
        })
    }
}

/// Whether two namespace names are the same Consul namespace: Consul
/// compares them without regard to ASCII case, and an instance read
/// without a namespace (a Consul without namespaces) is in `default`.
pub fn same_consul_namespace(a: Option<&str>, b: Option<&str>) -> bool {
    let norm = |n: Option<&str>| match n {
        None | Some("") => DEFAULT_CONSUL_NAMESPACE.to_owned(),
        Some(n) => n.to_ascii_lowercase(),
    };
    norm(a) == norm(b)
}

impl Default for SyncSettings {
    /// The consul-k8s binary's defaults. Note that the binary's allow list is
    /// empty, so these settings sync nothing until a namespace is allowed.
    fn default() -> Self {
        Self {
            to_consul: true,
            to_k8s: true,
            k8s_default_sync: true,
            consul_service_prefix: String::new(),
            k8s_service_prefix: String::new(),
            allow_k8s_namespaces: BTreeSet::new(),
            deny_k8s_namespaces: BTreeSet::new(),
            add_k8s_namespace_suffix: false,
            consul_k8s_tag: "k8s".to_owned(),
            consul_node_name: "k8s-sync".to_owned(),
            consul_node_address: "127.0.0.1".to_owned(),
            sync_clusterip_services: true,
            sync_lb_services_endpoints: false,
            node_port_sync_type: NodePortSyncType::ExternalOnly,
            enable_ingress: false,
            sync_ingress_lb_ips: false,
            port_layout: PortLayout::Single,
            k8s_write_namespace: "default".to_owned(),
            consul_domain: "consul".to_owned(),
            consul_namespaces: ConsulNamespaces::Disabled,
        }
    }
}

impl SyncSettings {
    /// The values the consul-k8s Helm chart passes: allow `*`, deny
    /// `kube-system` and `kube-public`, namespace suffix on, NodePort
    /// `ExternalFirst`. Everything else as [`Default`].
    pub fn helm_chart_defaults() -> Self {
        Self {
            allow_k8s_namespaces: BTreeSet::from(["*".to_owned()]),
            deny_k8s_namespaces: BTreeSet::from([
                "kube-system".to_owned(),
                "kube-public".to_owned(),
            ]),
            add_k8s_namespace_suffix: true,
            node_port_sync_type: NodePortSyncType::ExternalFirst,
            ..Self::default()
        }
    }

    /// Checks the settings; the binary refuses to start on an error.
    pub fn validate(&self) -> Result<(), SettingsError> {
        validate_node_name(&self.consul_node_name)?;
        if self.consul_k8s_tag.is_empty() {
            // An empty tag would make the ownership mark meaningless.
            return Err(SettingsError::EmptyK8sTag);
        }
        if self.consul_node_address.is_empty() {
            return Err(SettingsError::EmptyNodeAddress);
        }
        if self.to_k8s {
            if self.consul_domain.is_empty() {
                return Err(SettingsError::EmptyConsulDomain);
            }
            if self.k8s_write_namespace.is_empty() {
                return Err(SettingsError::EmptyWriteNamespace);
            }
        }
        Ok(())
    }

    /// Whether Services in `namespace` may be synced: deny wins, `*` allows
    /// all, an empty allow set allows none.
    pub fn namespace_allowed(&self, namespace: &str) -> bool {
        if self.deny_k8s_namespaces.contains(namespace) {
            return false;
        }
        self.allow_k8s_namespaces.contains("*") || self.allow_k8s_namespaces.contains(namespace)
    }
}

/// Checks a Consul node name the way consul-k8s does: only ASCII letters,
/// digits and `-`, 1 to [`MAX_NODE_NAME_BYTES`] bytes.
pub fn validate_node_name(name: &str) -> Result<(), SettingsError> {
    if name.is_empty() || name.len() > MAX_NODE_NAME_BYTES {
        return Err(SettingsError::InvalidNodeName {
            name: name.to_owned(),
            reason: "must be 1 to 63 bytes long",
        });
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err(SettingsError::InvalidNodeName {
            name: name.to_owned(),
            reason: "may only contain letters, digits and '-'",
        });
    }
    Ok(())
}

/// Why a [`SyncSettings`] value was refused. None of these is retryable: the
/// operator has to fix the flag named in the message and restart.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    /// `-consul-node-name` is not a valid node name. Fix the flag.
    #[error("invalid -consul-node-name {name:?}: {reason}")]
    InvalidNodeName {
        /// The refused name.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// `-node-port-sync-type` is not one of the three known values. Fix the flag.
    #[error(
        "invalid -node-port-sync-type {0:?}: expected ExternalOnly, InternalOnly or ExternalFirst"
    )]
    UnknownNodePortSyncType(String),
    /// `-port-layout` is neither `single` nor `multi`. Fix the flag.
    #[error("invalid -port-layout {0:?}: expected single or multi")]
    UnknownPortLayout(String),
    /// `-consul-k8s-tag` is empty; mirra could not recognise its own
    /// instances. Set a tag (the default is `k8s`).
    #[error("-consul-k8s-tag must not be empty")]
    EmptyK8sTag,
    /// The synthetic node address is empty. Set one (default `127.0.0.1`).
    #[error("the Consul node address must not be empty")]
    EmptyNodeAddress,
    /// `-consul-domain` is empty while syncing to Kubernetes. Set it
    /// (default `consul`).
    #[error("-consul-domain must not be empty when -to-k8s is on")]
    EmptyConsulDomain,
    /// `-k8s-write-namespace` is empty while syncing to Kubernetes. Set it.
    #[error("-k8s-write-namespace must not be empty when -to-k8s is on")]
    EmptyWriteNamespace,
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn consul_namespace_follows_consul_k8s_precedence() {
        // Off: nothing, whatever the other flags say.
        let off = ConsulNamespaces::from_flags(false, "team", true, "k8s-");
        assert_eq!(off, ConsulNamespaces::Disabled);
        assert_eq!(off.for_k8s_namespace("apps"), None);
        assert!(!off.enabled());
        // Destination.
        let dest = ConsulNamespaces::from_flags(true, "team", false, "k8s-");
        assert_eq!(dest.for_k8s_namespace("apps").as_deref(), Some("team"));
        assert_eq!(dest.for_k8s_namespace("other").as_deref(), Some("team"));
        // An empty destination is `default`.
        let empty = ConsulNamespaces::from_flags(true, "", false, "");
        assert_eq!(empty.for_k8s_namespace("apps").as_deref(), Some("default"));
        // Mirroring wins over the destination; the prefix is prepended.
        let mirror = ConsulNamespaces::from_flags(true, "team", true, "k8s-");
        assert_eq!(
            mirror.for_k8s_namespace("apps").as_deref(),
            Some("k8s-apps")
        );
        let bare = ConsulNamespaces::from_flags(true, "team", true, "");
        assert_eq!(bare.for_k8s_namespace("apps").as_deref(), Some("apps"));
        assert_eq!(
            bare.for_k8s_namespace("default").as_deref(),
            Some("default")
        );
    }

    #[test]
    fn namespace_names_compare_as_consul_does() {
        assert!(same_consul_namespace(None, Some("default")));
        assert!(same_consul_namespace(Some(""), None));
        assert!(same_consul_namespace(Some("Team"), Some("team")));
        assert!(!same_consul_namespace(Some("team"), None));
        assert!(!same_consul_namespace(Some("a"), Some("b")));
    }

    proptest! {
        /// Mirroring is injective on Kubernetes namespaces (two namespaces
        /// never share a Consul namespace) and keeps the prefix.
        #[test]
        fn mirroring_is_prefix_plus_name(
            prefix in "[a-z0-9-]{0,10}",
            a in "[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?",
            b in "[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?",
        ) {
            let m = ConsulNamespaces::from_flags(true, "ignored", true, &prefix);
            let na = m.for_k8s_namespace(&a).unwrap();
            prop_assert_eq!(&na, &format!("{prefix}{a}"));
            prop_assert_eq!(na == m.for_k8s_namespace(&b).unwrap(), a == b);
        }

        /// A destination maps every Kubernetes namespace to itself, and
        /// the comparison is reflexive and symmetric.
        #[test]
        fn destination_is_constant(dest in "[a-zA-Z0-9-]{1,20}", a in "[a-z0-9-]{1,20}") {
            let d = ConsulNamespaces::from_flags(true, &dest, false, "p-");
            let got = d.for_k8s_namespace(&a).unwrap();
            prop_assert_eq!(&got, &dest);
            prop_assert!(same_consul_namespace(Some(&got), Some(&dest.to_ascii_uppercase())));
            prop_assert_eq!(
                same_consul_namespace(Some(&a), Some(&got)),
                same_consul_namespace(Some(&got), Some(&a))
            );
        }
    }

    #[test]
    fn defaults_match_the_consul_k8s_binary() {
        let s = SyncSettings::default();
        assert!(s.k8s_default_sync);
        assert_eq!(s.consul_k8s_tag, "k8s");
        assert_eq!(s.consul_node_name, "k8s-sync");
        assert_eq!(s.consul_node_address, "127.0.0.1");
        assert!(s.sync_clusterip_services);
        assert!(!s.sync_lb_services_endpoints);
        assert!(!s.add_k8s_namespace_suffix);
        assert_eq!(s.node_port_sync_type, NodePortSyncType::ExternalOnly);
        assert_eq!(s.port_layout, PortLayout::Single);
        assert_eq!(s.consul_domain, "consul");
        assert_eq!(s.k8s_write_namespace, "default");
        assert!(s.allow_k8s_namespaces.is_empty());
        assert!(s.validate().is_ok());
    }

    #[test]
    fn empty_allow_list_syncs_nothing() {
        let s = SyncSettings::default();
        assert!(!s.namespace_allowed("default"));
    }

    #[test]
    fn star_allows_all_but_deny_wins() {
        let s = SyncSettings::helm_chart_defaults();
        assert!(s.namespace_allowed("default"));
        assert!(s.namespace_allowed("anything"));
        assert!(!s.namespace_allowed("kube-system"));
        assert!(!s.namespace_allowed("kube-public"));
    }

    #[test]
    fn explicit_allow_list() {
        let s = SyncSettings {
            allow_k8s_namespaces: BTreeSet::from(["a".to_owned(), "b".to_owned()]),
            deny_k8s_namespaces: BTreeSet::from(["b".to_owned()]),
            ..SyncSettings::default()
        };
        assert!(s.namespace_allowed("a"));
        assert!(!s.namespace_allowed("b"), "deny wins over allow");
        assert!(!s.namespace_allowed("c"));
    }

    #[test]
    fn node_name_validation() {
        assert!(validate_node_name("k8s-sync").is_ok());
        assert!(validate_node_name("A-1").is_ok());
        assert!(validate_node_name(&"a".repeat(63)).is_ok());
        for bad in ["", "k8s_sync", "k8s.sync", "nöde", "a b", &"a".repeat(64)] {
            assert!(
                matches!(
                    validate_node_name(bad),
                    Err(SettingsError::InvalidNodeName { .. })
                ),
                "{bad:?} must be refused"
            );
        }
    }

    #[test]
    fn validate_refuses_bad_settings() {
        let bad_node = SyncSettings {
            consul_node_name: "bad name".into(),
            ..SyncSettings::default()
        };
        assert!(matches!(
            bad_node.validate(),
            Err(SettingsError::InvalidNodeName { .. })
        ));
        let no_tag = SyncSettings {
            consul_k8s_tag: String::new(),
            ..SyncSettings::default()
        };
        assert_eq!(no_tag.validate(), Err(SettingsError::EmptyK8sTag));
        let no_domain = SyncSettings {
            consul_domain: String::new(),
            ..SyncSettings::default()
        };
        assert_eq!(no_domain.validate(), Err(SettingsError::EmptyConsulDomain));
        let no_domain_no_k8s = SyncSettings {
            consul_domain: String::new(),
            to_k8s: false,
            ..SyncSettings::default()
        };
        assert!(no_domain_no_k8s.validate().is_ok());
    }

    #[test]
    fn node_port_sync_type_round_trips() {
        for t in [
            NodePortSyncType::ExternalOnly,
            NodePortSyncType::InternalOnly,
            NodePortSyncType::ExternalFirst,
        ] {
            assert_eq!(t.as_str().parse::<NodePortSyncType>(), Ok(t));
        }
        assert!(matches!(
            "externalonly".parse::<NodePortSyncType>(),
            Err(SettingsError::UnknownNodePortSyncType(_))
        ));
    }

    #[test]
    fn port_layout_round_trips_and_refuses_other_spellings() {
        for l in [PortLayout::Single, PortLayout::Multi] {
            assert_eq!(l.as_str().parse::<PortLayout>(), Ok(l));
            assert_eq!(l.to_string(), l.as_str());
        }
        for bad in ["", "Single", "MULTI", "multiple", " single"] {
            assert_eq!(
                bad.parse::<PortLayout>(),
                Err(SettingsError::UnknownPortLayout(bad.to_owned())),
                "{bad:?}"
            );
        }
    }
}
