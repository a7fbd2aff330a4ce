//! The mirror controller: SyncConfigs (`sync.appuio.ch/v1alpha1`) copied
//! into the namespaces they select, incrementally and keyed by target
//! namespace.
//!
//! ```text
//! watches (Namespaces, SyncConfigs in the honoured namespaces,
//!          mirra's copies per kind in use, deleteItems objects)
//!   ─► caches ─► keys (target namespaces) ─► WorkQueue (dedup, debounce, backoff)
//!   ─► mirra_mirror::plan_namespace (pure) ─► server-side apply / delete with uid
//!   ─► outcomes ─► SyncConfig status (only when it changes) and aggregated Events
//! ```
//!
//! Event to keys: a Namespace event touches that namespace; a SyncConfig
//! change touches the namespaces its old or new spec selects (plus those
//! holding its copies); a change to one of mirra's copies or to an object a
//! deleteItem names touches its namespace. A periodic verification pass
//! re-plans every namespace from the caches: it costs CPU only, and requests
//! only where something drifted.
//!
//! Decisions worth knowing:
//!
//! - Every decision is made from the watch caches: there is never a GET in
//!   the hot path, and nothing is planned (so nothing is deleted) before
//!   every cache the plan depends on has its initial list.
//! - A kind is resolved through discovery once, when a SyncConfig first
//!   names it, and its copies are watched with the label selector
//!   `app.kubernetes.io/managed-by=mirra`. The watch stops when no
//!   SyncConfig names the kind and no copy of it is left.
//! - Start-up sweep: once, mirra lists every namespaced kind the server
//!   serves for objects with its label (metadata only, one object at most,
//!   from the API server's watch cache) and watches the kinds that hold
//!   copies no SyncConfig names. So copies of a kind whose last SyncConfig
//!   was deleted while mirra was down are pruned (or kept, when they carry
//!   the pruning opt-out) after the restart. `--no-startup-sweep` turns it
//!   off; kinds mirra may not list are skipped.
//! - Scope: copies owned by a SyncConfig outside `--watch-namespace` belong
//!   to someone else (another mirra deployment): never pruned, overwritten
//!   or deleted; an item naming such an object fails with the owner's name.
//! - A pending own apply (answered, not yet echoed by the watch) stands for
//!   the copy in the plans made meanwhile, as long as the cache shows
//!   nothing newer: a verification pass in between sends nothing again.
//! - deleteItems with a fixed name are watched by field selector
//!   `metadata.name=NAME` (metadata only). Names containing
//!   `${PROJECT_NAME}` differ per namespace, so their kind is watched
//!   cluster-wide, metadata only: that costs the kind's watch traffic, but
//!   no live read per cycle.
//! - A kind whose list or watch is refused (403 from RBAC, or 404) is
//!   "unavailable": its items fail with a message naming the kind and the
//!   verb, nothing of that kind is applied or pruned (its cache is unknown),
//!   readiness does not wait for it, and the watch retries with backoff
//!   (up to 30 s), so a permission granted later is picked up without a
//!   restart. A watch refused after an allowed list is restarted by the
//!   verification pass (a granted watch brings no event to notice it by).
//! - Every delete mirra sends stays "in flight" until a watch shows the
//!   object gone, replaced or terminating; until then the planner sees it
//!   as terminating, so a re-plan in between deletes nothing twice and
//!   creates nothing that races the deletion.
//! - forceRecreate: on a 422 the object is deleted with its uid as
//!   precondition; the copy watch then shows it gone (or terminating, and
//!   later gone) and the next plan creates it.
//! - A permanent write failure (403, 404, 422) is retried on its own long
//!   backoff (30 s doubling to 5 min): RBAC changes cause no event mirra
//!   sees, and the Degraded condition should clear soon after the fix.
//! - Limits per SyncConfig (`--max-copies-per-syncconfig`,
//!   `--max-bytes-per-syncconfig`): a SyncConfig over one is held as it
//!   is. Its writes are taken out of every plan (nothing created, updated,
//!   pruned or deleted; conflicts still decided with it), its Ready
//!   condition says `LimitExceeded` with the figures, and a Warning Event
//!   is raised. Crossing back under the limit re-plans its namespaces.
//! - Strings of 1 KiB or more in a copy are cached as a digest (the
//!   planner compares with it), so a large item copied into many
//!   namespaces is not held once per namespace.
//! - Events are core/v1 Events named `<syncconfig>.<reason>`, created once
//!   and then bumped (`count`) on repeat; one whose patch answers 404
//!   (expired or deleted) is created again, counting from 1. After a
//!   restart the count restarts from the existing Event's creation (mirra
//!   does not read it back).
//!
//! What this crate must NOT do: plan (that is `mirra_mirror`), serve health
//! or metrics endpoints (the binary does), or write to a namespace listed in
//! `--never-write-namespace`.

mod config_object;
mod engine;
pub mod settings;
mod state;
mod watches;
mod write;

pub use engine::run;
pub use settings::{RunArgs, Settings, SettingsError, WatchScope};

/// Re-exported for the SyncConfig CRD and types.
pub use mirra_mirror;
/// Re-exported so that callers (the binary, benchmarks) use the same
/// versions of the types [`run`] takes.
pub use mirra_runtime;
/// Re-exported for the registry [`mirra_runtime::Metrics`] registers in.
pub use prometheus_client;
/// Re-exported for [`tokio_util::sync::CancellationToken`].
pub use tokio_util;

/// Why the controller stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    /// The queue settings are inconsistent (debounce and delays). Not
    /// retryable: fix the settings.
    #[error("invalid queue settings: {0}")]
    Queue(#[from] mirra_runtime::QueueError),
    /// A task of the controller panicked: a bug. Restarting the process
    /// recovers from the caches' initial lists.
    #[error("a controller task panicked: {0}")]
    TaskPanicked(String),
}
