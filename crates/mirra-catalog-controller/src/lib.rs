//! mirra-catalog-controller: the catalog sync engine (`mirra sync-catalog`),
//! a drop-in for consul-k8s `sync-catalog` that writes only what changed.
//!
//! ```text
//!  kube watchers (Service, EndpointSlice, Node, [Ingress])     Consul
//!        │ Cache::apply -> changes -> ServiceKeys               │ TWO blocking queries:
//!        ▼                                                      │ node-services/<our node>
//!   WorkQueue<ServiceKey> (dedup, debounce, backoff)            │ health/node/<our node>
//!        │ batch of keys            desired_for_service ─► KeyIndex ─► plan ◄─ observed
//!        ▼                                                              │      (+ overlay of
//!   /v1/txn chunks of -txn-batch-size operations ◄───── CatalogOps ─────┘       our own writes)
//! ```
//!
//! - [`flags`]: the command line (consul-k8s flag names, both `-flag` and
//!   `--flag`), [`Settings`] and the Consul connection settings.
//! - [`metrics`]: the `/metrics` families of the catalog sync.
//! - [`engine`]: [`run`], the event loop.
//! - `backoff`: the Consul writer's own backoff while Consul is
//!   unavailable.
//!
//! This crate must NOT decide what a Service becomes in Consul (that is
//! `mirra-catalog`), speak Consul's HTTP API itself (that is `mirra-consul`),
//! serve health endpoints or parse the process environment for logging
//! (the binary owns both).

mod backoff;
pub mod engine;
pub mod flags;
pub mod metrics;
pub mod to_k8s;

pub use backoff::{DEFAULT_WRITE_BACKOFF_BASE, DEFAULT_WRITE_BACKOFF_CAP};
pub use engine::{ControllerError, run};
pub use flags::{Settings, SettingsError, SyncCatalogArgs, normalize_flags};
pub use metrics::{CatalogMetrics, register_metrics};

// The types of [`run`]'s signature, so that callers (the binary, the
// benchmark) need no direct dependency on the crates they come from.
pub use mirra_catalog::SyncSettings;
pub use mirra_runtime::{QueueConfig, Readiness, ReadyFlag};
pub use tokio_util::sync::CancellationToken;
