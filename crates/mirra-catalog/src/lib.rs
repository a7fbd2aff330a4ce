//! mirra-catalog: the pure half of mirra's Consul catalog sync.
//!
//! It answers three questions, from data only:
//!
//! 1. What should a Kubernetes Service be in Consul? ([`desired_for_service`],
//!    with the annotation rules in [`annotations`] and the flags in
//!    [`SyncSettings`]), registration for registration the same as
//!    consul-k8s `sync-catalog` writes, so that switching costs no writes.
//! 2. Which of the instances on mirra's Consul node are mirra's, and which of
//!    them already are as desired? ([`is_owned`], [`observed`]).
//! 3. What is the smallest set of catalog operations to close the gap, and
//!    which Services does an event touch? ([`plan()`], [`KeyIndex`], [`keys`]).
//!
//! It also plans the reverse direction (Consul services to ExternalName
//! Services, [`to_k8s`]).
//!
//! ```text
//!  caches (Service, EndpointSlice, Node, Ingress)      Consul node-services
//!            │                                                │
//!            ▼                                                ▼
//!   desired_for_service ──► KeyIndex ──► desired ──► plan ◄── observed
//!                                                      │
//!                                                      ▼
//!                                               Vec<CatalogOp> ──► controller (/v1/txn)
//! ```
//!
//! # Where mirra deliberately differs from consul-k8s
//!
//! Everything else is reproduced exactly (names, IDs, tags, meta, ports,
//! weights, checks), so that instances written by consul-k8s compare equal.
//! The differences only show for inputs consul-k8s handles badly:
//!
//! - An endpoint without a `ready` condition is passing (Kubernetes' rule);
//!   consul-k8s marks it critical. The EndpointSlice controller always sets
//!   the condition, so adoption is unaffected in practice.
//! - Terminating endpoints are not registered (consul-k8s registers them as
//!   critical).
//! - A bad annotation value is ignored as a whole, with a warning: a
//!   `service-port` naming no port of the Service (consul-k8s falls back to
//!   the first Service port, not the target port), a port number outside
//!   1-65535, an empty or over-long `service-name`, whitespace-only tags.
//! - Meta annotations Consul would refuse (bad key, reserved `consul-`
//!   prefix, over-long, more than 64 pairs) are dropped with a warning
//!   instead of making every registration of the Service fail; meta keys
//!   mirra sets itself (`external-source`, `external-k8s-*`) cannot be
//!   overridden, so the ownership mark cannot be removed by an annotation.
//! - Empty addresses (endpoint, external IP, node address) are skipped.
//! - Ties are broken deterministically instead of by map or event order:
//!   slices in name order (first occurrence of an address wins), Ingresses
//!   in name order (last matching rule wins), and two Services wanting the
//!   same service ID: the smallest namespace/name wins ([`KeyIndex`]).
//!
//! Every registration is written with the synthetic node ([`SyncNode`]);
//! the controller should not overwrite an existing node (consul-k8s sets
//! `SkipNodeUpdate`).
//!
//! This crate must NOT do I/O, read a clock, hold global state or depend on
//! the Consul client crate: it has its own registration types and the
//! controller converts them.

pub mod annotations;
pub mod compact;
pub mod keys;
pub mod mapping;
pub mod model;
pub mod observed;
pub mod plan;
pub mod settings;
pub mod to_k8s;

pub use annotations::{PortOverride, Warning};
pub use compact::{CompactCheck, CompactInstance, CompactView, ObservedView};
pub use keys::{NodeEndpointIndex, keys_for_node_change, node_addresses_changed};
pub use mapping::{
    NoNodes, NodeLookup, ServiceInput, ServiceOutcome, SkipReason, SliceInput, desired_for_input,
    desired_for_service, keys_for_ingress,
};
pub use model::{
    CheckStatus, ReadinessCheck, Registration, ServiceKey, ServicePort, SyncNode, Weights,
    service_id,
};
pub use observed::{
    ObservedCheck, ObservedError, ObservedInstance, is_owned, matches, parse_node_services,
};
pub use plan::{
    CatalogOp, ClaimIndex, Conflict, KeyIndex, Plan, plan, plan_detailed, plan_for_key,
    simulate_apply,
};
pub use settings::{
    ConsulNamespaces, DEFAULT_CONSUL_NAMESPACE, NodePortSyncType, PortLayout, SettingsError,
    SyncSettings, same_consul_namespace,
};
