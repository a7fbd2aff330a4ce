//! The Consul -> Kubernetes direction (`-to-k8s`): every Consul service
//! not tagged with the k8s tag becomes an ExternalName Service in
//! `-k8s-write-namespace`, as consul-k8s does (`mirra_catalog::to_k8s`
//! decides what; this module watches and writes).
//!
//! ```text
//! Consul: ONE blocking query on /v1/catalog/services ─┐
//! Kubernetes: a watch of the write namespace's Services ┼─► debounce ─► plan_k8s ─► apply / delete
//! ```
//!
//! The loop folds events and plans; the writes run on a writer task
//! (`mirra_runtime::writer`) that reports each pass's end back, so events
//! keep being taken in while a pass is written, and the next plan waits
//! for that report.
//!
//! Writes are server-side applies as field manager `mirra` (creating or
//! bringing a labelled Service back to shape) and deletes, both with the
//! cached resourceVersion (and a delete with the uid) as precondition,
//! sent only when the plan is not empty: an idle
//! catalog costs no Kubernetes writes, and a restart in step costs none.
//! Each write goes through the [`WriteFence`] it is given (the Lease must
//! be held with the write timeout left), and a fenced write fails the pass,
//! which is retried with backoff.
//!
//! What this module must NOT do: touch a Service without the `consul=true`
//! label (the planner never plans one), or delete anything before both the
//! first Consul answer and the Services' initial list are in.

use std::collections::BTreeMap;
use std::pin::pin;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use kube::runtime::watcher;
use mirra_catalog::SyncSettings;
use mirra_catalog::to_k8s::{K8sOp, desired_k8s_services, plan_k8s};
use mirra_consul::{ServiceTags, WatchOptions};
use mirra_runtime::queue::backoff_delay;
use mirra_runtime::watch::{WatchHints, WatchRetry, retrying};
use mirra_runtime::{Cache, FenceError, ReadyFlag, WriteFence};
use tokio_util::sync::CancellationToken;

/// Quiet time after the latest change before planning: a burst of Consul
/// registrations (a deploy elsewhere) becomes one plan. Short, because the
/// plan is cheap and users wait for the Service.
const DEBOUNCE: Duration = Duration::from_millis(100);

/// Wait before retrying after a failed write; doubled per failure up to
/// [`RETRY_MAX`], so a down API server is not hammered.
const RETRY_BASE: Duration = Duration::from_millis(500);
/// Longest wait between retries.
const RETRY_MAX: Duration = Duration::from_secs(30);

/// The field manager of mirra's applies.
const FIELD_MANAGER: &str = "mirra";

/// Why one pass of writes stopped.
#[derive(Debug, thiserror::Error)]
enum PassError {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error(transparent)]
    Fenced(#[from] FenceError),
}

/// Keeps the write namespace's ExternalName Services in step with Consul
/// until `shutdown`, every write through `fence`. Sets `ready` once both
/// sides have been read once.
/// In a dry run (`preview`), each pass's writes are reported there
/// instead of sent.
pub async fn run_to_k8s(
    kube: kube::Client,
    consul: mirra_consul::Client,
    sync: SyncSettings,
    fence: WriteFence,
    preview: Option<mirra_runtime::Preview>,
    ready: ReadyFlag,
    shutdown: CancellationToken,
) {
    let fence = if preview.is_some() {
        fence.dry_run()
    } else {
        fence
    };
    let namespace = sync.k8s_write_namespace.clone();
    let api: Api<Service> = Api::namespaced(kube, &namespace);
    // With backoff: a failing list or watch is retried after a growing
    // pause instead of at once, so an API server that errors is not
    // hammered in a tight loop.
    let mut services = pin!(retrying(
        watcher(api.clone(), watcher::Config::default()),
        WatchRetry::default()
    ));
    let hints = WatchHints {
        resource: "services",
        install: None,
        rbac: "grant list and watch on services in the -k8s-write-namespace to the sync's \
               ServiceAccount (the mirra-catalog ClusterRole in deploy/catalog/rbac.yaml)",
    };
    let mut catalog = pin!(consul.watch_services(WatchOptions::default()));
    let mut cache: Cache<Service> = Cache::new();
    let mut consul_services: Option<ServiceTags> = None;
    let mut dirty = false;
    let mut failures: u32 = 0;
    let mut due = tokio::time::Instant::now();
    let mut writer = mirra_runtime::writer::spawn(ExternalNameWriter {
        fence,
        api: api.clone(),
    });
    // A pass handed to the writer and not reported yet: the next plan
    // waits for it (it would plan from caches that do not show it yet).
    let mut writing = false;
    loop {
        let wake = if dirty && !writing {
            due
        } else {
            tokio::time::Instant::now() + Duration::from_secs(3600)
        };
        tokio::select! {
            _ = shutdown.cancelled() => break,
            event = services.next() => match event {
                Some(Ok(e)) => {
                    if !cache.apply(e).is_empty() && !dirty {
                        dirty = true;
                        due = tokio::time::Instant::now() + DEBOUNCE;
                    }
                }
                Some(Err(f)) => tracing::warn!(
                    namespace = %namespace,
                    cause = f.cause().as_str(),
                    attempt = f.attempt,
                    retry_in_ms = f.retry_in_ms(),
                    "{} (the Services of the write namespace); retrying",
                    mirra_runtime::watch::explain(&hints, &f)
                ),
                None => break,
            },
            answer = catalog.next() => match answer {
                Some(Ok(v)) => {
                    if consul_services.as_ref() != Some(&v.value) {
                        consul_services = Some(v.value);
                        if !dirty {
                            dirty = true;
                            due = tokio::time::Instant::now() + DEBOUNCE;
                        }
                    }
                }
                Some(Err(e)) => tracing::warn!(class = e.class(), error = %e, "reading Consul services"),
                None => break,
            },
            report = writer.reports.recv() => {
                writing = false;
                match report {
                    Some(Ok(())) => {
                        failures = 0;
                        // Changes seen meanwhile are planned a debounce
                        // after the pass, not at once: the echoes of its
                        // last writes are on their way, and a plan without
                        // them would send those writes again.
                        if dirty {
                            due = due.max(tokio::time::Instant::now() + DEBOUNCE);
                        }
                    }
                    Some(Err(e)) => {
                        failures = failures.saturating_add(1);
                        // The first retry already waits twice the base;
                        // no jitter: one writer, nothing to spread out.
                        let delay = backoff_delay(RETRY_BASE, RETRY_MAX, failures.saturating_add(1), 1.0);
                        tracing::warn!(error = %e, retry_in = ?delay, "writing ExternalName Services");
                        dirty = true;
                        due = tokio::time::Instant::now() + delay;
                    }
                    // The writer task ended: only when it panicked.
                    None => break,
                }
            }
            _ = tokio::time::sleep_until(wake) => {
                let Some(consul_now) = consul_services.as_ref().filter(|_| cache.initial_list_done())
                else {
                    // Not both sides read yet: look again after another
                    // window (the next answer or event sets dirty anyway).
                    due = tokio::time::Instant::now() + DEBOUNCE;
                    continue;
                };
                ready.set_ready();
                dirty = false;
                let ops = plan_once(preview.as_ref(), &cache, consul_now, &sync);
                if !ops.is_empty() {
                    writing = writer.jobs.send(ops).is_ok();
                }
            }
        }
    }
    // A pass being written is finished, not cut off halfway.
    let _ = writer.finish().await;
}

/// Plans once from the caches: the writes to send, each with the
/// preconditions it carries. In a dry run they are reported to `preview`
/// instead, and none is returned.
fn plan_once(
    preview: Option<&mirra_runtime::Preview>,
    cache: &Cache<Service>,
    consul_services: &ServiceTags,
    sync: &SyncSettings,
) -> Vec<Write> {
    let desired = desired_k8s_services(consul_services, sync);
    for w in &desired.warnings {
        tracing::warn!(consul_service = %w.consul_service, "{}", w.message);
    }
    let existing: BTreeMap<String, Service> = cache
        .in_namespace(&sync.k8s_write_namespace)
        .filter_map(|s| Some((s.metadata.name.clone()?, s.clone())))
        .collect();
    let plan = plan_k8s(&desired.services, &existing, sync);
    for name in &plan.conflicts {
        tracing::warn!(service = %name, "a Service without the consul=true label has this name; left alone");
    }
    if let Some(preview) = preview {
        let writes = plan
            .ops
            .iter()
            .map(|op| planned_write(op, &existing, sync))
            .collect();
        preview.replace(PREVIEW_SCOPE, writes);
        return Vec::new();
    }
    plan.ops
        .into_iter()
        .map(|op| match op {
            K8sOp::Create(mut svc) | K8sOp::Update(mut svc) => {
                let name = svc.metadata.name.clone().unwrap_or_default();
                // An update carries the version it was planned from: one
                // delayed past a newer edit gets 409, and the next pass
                // plans from the newer version. A create names none.
                svc.metadata.resource_version = existing
                    .get(&name)
                    .and_then(|s| s.metadata.resource_version.clone());
                Write::Apply {
                    name,
                    svc: Box::new(svc),
                }
            }
            K8sOp::Delete { name, .. } => {
                let observed = existing.get(&name).map(|s| &s.metadata);
                let preconditions = Preconditions {
                    uid: observed.and_then(|m| m.uid.clone()),
                    resource_version: observed.and_then(|m| m.resource_version.clone()),
                };
                Write::Delete {
                    name,
                    preconditions,
                }
            }
        })
        .collect()
}

/// One planned write with its preconditions.
#[derive(Debug)]
enum Write {
    /// A server-side apply of the whole Service.
    Apply { name: String, svc: Box<Service> },
    /// A delete of what was observed (uid and resourceVersion).
    Delete {
        name: String,
        preconditions: Preconditions,
    },
}

/// Sends a pass's writes in order, each through the fence; the first that
/// fails ends the pass, and the next plan (re-computed) retries.
struct ExternalNameWriter {
    fence: WriteFence,
    api: Api<Service>,
}

impl mirra_runtime::writer::Writer for ExternalNameWriter {
    type Job = Vec<Write>;
    type Report = Result<(), PassError>;

    async fn run(
        &mut self,
        writes: Vec<Write>,
        reports: &mirra_runtime::writer::Reports<Self::Report>,
    ) {
        // The loop is gone only when the controller stops.
        let _ = reports.send(self.send(writes).await);
    }
}

impl ExternalNameWriter {
    async fn send(&self, writes: Vec<Write>) -> Result<(), PassError> {
        for write in writes {
            match write {
                Write::Apply { name, svc } => {
                    self.fence
                        .send(self.api.patch(
                            &name,
                            &PatchParams::apply(FIELD_MANAGER).force(),
                            &Patch::Apply(&*svc),
                        ))
                        .await??;
                    tracing::info!(service = %name, "ExternalName Service written");
                }
                Write::Delete {
                    name,
                    preconditions,
                } => {
                    let params = DeleteParams {
                        preconditions: Some(preconditions),
                        ..DeleteParams::default()
                    };
                    match self.fence.send(self.api.delete(&name, &params)).await? {
                        Ok(_) => tracing::info!(service = %name, "ExternalName Service deleted"),
                        // Already gone: what we wanted.
                        Err(kube::Error::Api(s)) if s.code == 404 => {}
                        Err(e) => return Err(e.into()),
                    }
                }
            }
        }
        Ok(())
    }
}

/// The preview scope of the ExternalName Services: every pass plans them
/// all.
const PREVIEW_SCOPE: &str = "externalname services";

/// A dry run's report of one planned ExternalName write.
fn planned_write(
    op: &K8sOp,
    existing: &BTreeMap<String, Service>,
    sync: &SyncSettings,
) -> mirra_runtime::PlannedWrite {
    let (operation, reason, name, diff) = match op {
        K8sOp::Create(svc) => (
            "apply",
            "missing",
            svc.metadata.name.clone().unwrap_or_default(),
            Vec::new(),
        ),
        K8sOp::Update(svc) => {
            let name = svc.metadata.name.clone().unwrap_or_default();
            let as_json = |s: Option<&Service>| {
                s.and_then(|s| serde_json::to_value(s).ok())
                    .unwrap_or_default()
            };
            let desired = as_json(Some(svc));
            let observed = as_json(existing.get(&name));
            let diff = ["spec", "metadata"]
                .iter()
                .flat_map(|part| {
                    mirra_runtime::preview::short_diff(
                        &prefixed(part, &desired),
                        &prefixed(part, &observed),
                        false,
                        4,
                    )
                })
                .collect();
            ("apply", "differs", name, diff)
        }
        K8sOp::Delete { name, .. } => ("delete", "not-in-consul", name.clone(), Vec::new()),
    };
    mirra_runtime::PlannedWrite {
        kind: "Service".into(),
        namespace: sync.k8s_write_namespace.clone(),
        name,
        operation,
        reason,
        diff,
    }
}

/// `{part: v[part]}`, so that a diff names the part. For `metadata` only
/// the labels and annotations a plan sets count.
fn prefixed(part: &str, v: &serde_json::Value) -> serde_json::Value {
    let mut inner = v.get(part).cloned().unwrap_or_default();
    if part == "metadata" {
        inner = serde_json::json!({
            "labels": inner.get("labels").cloned().unwrap_or_default(),
            "annotations": inner.get("annotations").cloned().unwrap_or_default(),
        });
    }
    serde_json::json!({ part: inner })
}
