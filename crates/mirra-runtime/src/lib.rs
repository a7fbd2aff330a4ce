//! Shared engine pieces of the mirra controllers.
//!
//! Both controllers (mirror: keys are target namespaces; catalog: keys are
//! Services) run the same pipeline, and this crate holds the generic parts
//! of it:
//!
//! ```text
//! watch streams ─► cache::Cache ─► keys ─► queue::WorkQueue ─► plan ─► writers
//!                  (old/new diffs)          (dedup, debounce,          │
//!                                            backoff, batches)         ▼
//!                                        ratelimit (kube client layer), metrics
//! leader::LeaderElector publishes who leads and until when; campaign runs a
//! controller only while leading; fence::WriteFence is checked by every
//! writer right before it sends; health serves /healthz, /readyz, /metrics
//! and, in a dry run, /preview (what preview keeps instead of sending);
//! task::TaskGuard stops a spawned watch when its owner drops it;
//! events::EventRecorder records warning Events, counted per object and
//! reason; trim drops
//! the metadata (managedFields, kubectl's last-applied copy) no cache keeps;
//! watch::retrying backs a refused watch off and watch::explain says what
//! to fix; writer runs an event loop's writes on a task of their own and
//! reports back, so the loop never awaits a write.
//! ```
//!
//! This crate must NOT know about SyncConfigs, Services or Consul, nor plan
//! anything: the planners are pure functions in their own crates, and the
//! wiring of streams to queues lives in each controller crate. Each module is usable
//! and testable on its own; only `leader` and `ratelimit::rate_limited_client`
//! talk to a server.

pub mod cache;
pub mod campaign;
pub mod events;
pub mod fence;
pub mod health;
pub mod impersonate;
pub mod leader;
pub mod metrics;
pub mod preview;
pub mod queue;
pub mod ratelimit;
pub mod task;
pub mod trim;
pub mod watch;
pub mod writer;

pub use cache::{Cache, Cached, Change, ObjectKey, map_event};
pub use campaign::run_while_leading;
pub use fence::{FenceError, WriteFence};
pub use health::{HealthError, Readiness, ReadyCondition, ReadyFlag, serve_health};
pub use leader::{LeaderConfig, LeaderElector, LeaderError, LeaseDeadline, default_identity};
pub use metrics::{LeaderMetrics, Metrics};
pub use preview::{PlannedWrite, Preview};
pub use queue::{Outcome, QueueConfig, QueueError, WorkQueue};
pub use ratelimit::{RateLimitConfig, RateLimitError, RateLimitLayer};
pub use task::TaskGuard;
