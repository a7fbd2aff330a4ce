//! mirra-catalog-controller: the catalog sync engine (`mirra sync-catalog`),
//! a drop-in for consul-k8s `sync-catalog` that writes only what changed.
//!
//! ```text
//!  kube watchers (Service, EndpointSlice, Node, [Ingress])     Consul: TWO blocking queries
//!        │                                                     │ node-services/<our node>
//!        ▼                                                     ▼ health/node/<our node>
//!   CatalogIndex (index.rs): caches, slice/node indexes, claims, observed + overlay
//!        │ ServiceKeys                         ▲ Report (committed, written, re-read)
//!        ▼                                     │ over a channel
//!   WorkQueue<ServiceKey> (dedup, debounce, backoff)
//!        │ batch of keys                       │
//!        ▼                                     │
//!   plan_round (round.rs) ──► Job::Write ──► TxnWriter task (writer/): /v1/txn chunks,
//!                            over a channel    node first, cas preconditions, read pause
//! ```
//!
//! - [`engine`]: [`run`], the event loop wiring the rest together; it
//!   never awaits a write.
//! - [`index`]: [`index::CatalogIndex`], everything the loop knows, folded
//!   from watch events, Consul answers and the writer's reports.
//! - [`round`]: planning a round from the index (claims, winners, the
//!   indexes each write is conditioned on).
//! - `writer`: the Consul writer, on its own task (packing, the node-first
//!   transaction, concurrency, rollbacks, 413 splits, re-reads after a
//!   failed `cas`, namespaces, the read pause, warning Events); `txn`:
//!   sending one transaction; `wire`: the wire form of plans; `events`:
//!   warning Events; `purge`: `-purge-k8s-services-from-node`.
//! - [`to_k8s`]: `-to-k8s`, Consul services written back as ExternalName
//!   Services.
//! - [`flags`]: the command line (consul-k8s flag names, both `-flag` and
//!   `--flag`), [`Settings`] and the Consul connection settings.
//! - [`metrics`]: the `/metrics` families of the catalog sync.
//! - `backoff`: the backoff of the writes as a whole while Consul is
//!   unavailable.
//! - [`repair`]: prompt repair of instances someone else changed in
//!   Consul, spaced out while another writer keeps changing them.
//!
//! This crate must NOT decide what a Service becomes in Consul (that is
//! `mirra-catalog`), speak Consul's HTTP API itself (that is `mirra-consul`),
//! serve health endpoints or parse the process environment for logging
//! (the binary owns both).

mod backoff;
pub mod engine;
mod events;
pub mod flags;
pub mod index;
pub mod metrics;
mod purge;
pub mod repair;
pub mod round;
pub mod to_k8s;
mod txn;
mod wire;
mod writer;

pub use backoff::{DEFAULT_WRITE_BACKOFF_BASE, DEFAULT_WRITE_BACKOFF_CAP};
pub use engine::{ControllerError, run};
pub use flags::{Settings, SettingsError, SyncCatalogArgs, normalize_flags};
pub use metrics::{CatalogMetrics, register_metrics};

// The types of [`run`]'s signature, so that callers (the binary, the
// benchmark) need no direct dependency on the crates they come from.
pub use mirra_catalog::{ConsulNamespaces, SyncSettings};
pub use mirra_runtime::{QueueConfig, Readiness, ReadyFlag};
pub use tokio_util::sync::CancellationToken;
