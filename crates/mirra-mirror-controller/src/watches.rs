//! The watches that feed the caches, and the manager that starts a watch
//! when a kind first appears in a SyncConfig and stops it when no SyncConfig
//! uses it any more (and no copy of it is left to prune).
//!
//! Every watch is a kube-runtime `watcher` with bookmarks behind
//! `mirra_runtime::watch::retrying`: a dropped connection resumes from the
//! last resourceVersion, a 410 Gone relists, and the relist reaches the
//! cache as an `Init` .. `InitDone` sequence that reports only what really
//! changed. A refused watch backs off up to `--watch-retry-max-ms` and logs
//! what is missing and where the fix is (the CRD, the ClusterRole).
//!
//! What this module must NOT do: plan or write. A watch only folds events
//! into the state and adds the touched namespaces to the queue.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PartialObjectMeta};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use mirra_mirror::{MANAGED_BY_LABEL, MANAGED_BY_VALUE};
use mirra_runtime::TaskGuard;
use mirra_runtime::watch::{WatchFailure, WatchHints, WatchRetry, retrying};

use crate::config_object::ConfigObject;
use crate::engine::Shared;
use crate::settings::Settings;
use crate::state::{
    DeleteWatchId, KindId, NamespaceKeys, Resolution, SourceId, State, Unavailable,
};

/// The SyncConfig resource.
pub fn syncconfig_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(
            mirra_mirror::resource::GROUP,
            mirra_mirror::resource::VERSION,
            mirra_mirror::resource::KIND,
        ),
        "syncconfigs",
    )
}

/// What the planner reads of a copy's managedFields: whether mirra's own
/// apply wrote its marks. Only that proof is kept (one small entry): the
/// rest is dropped for the memory reason `mirra_runtime::trim` gives.
/// Judged on the typed entries: converting them to JSON and the proof
/// back cost more than the rest of a watch event's handling.
fn keep_ownership_proof(meta: &mut kube::api::ObjectMeta) {
    let proven = meta.managed_fields.as_deref().is_some_and(|entries| {
        entries.iter().any(|e| {
            mirra_mirror::marks::entry_proves_marks(
                e.manager.as_deref(),
                e.operation.as_deref(),
                e.fields_type.as_deref(),
                e.fields_v1.as_ref().map(|f| &f.0),
            )
        })
    });
    meta.managed_fields = proven.then(|| vec![mirra_mirror::marks::ownership_proof_entry()]);
}

/// Starts the Namespace watch.
pub fn spawn_namespaces(shared: &Arc<Shared>) -> tokio::task::JoinHandle<()> {
    let api: Api<Namespace> = Api::all(shared.client.clone());
    let stream = watcher::watcher(api, watcher::Config::default())
        .modify(|ns: &mut Namespace| mirra_runtime::trim::strip_managed_fields(&mut ns.metadata));
    let stream = retrying(stream, watch_retry(&shared.settings));
    drive_fixed(shared, &NAMESPACE_HINTS, stream, |shared, event| {
        let NamespaceKeys { mut keys, created } = shared.with_state(|s| s.apply_namespace(event));
        keys.retain(|k| !created.contains(k));
        shared.enqueue(keys);
        shared.enqueue_created(created);
    })
}

/// Starts the SyncConfig watches (one per honoured namespace, or one for
/// all).
pub fn spawn_configs(shared: &Arc<Shared>) -> Vec<tokio::task::JoinHandle<()>> {
    let ar = syncconfig_resource();
    let scopes = shared.settings.config_watch_namespaces();
    // Register every cache before any event arrives, so that readiness
    // waits for all of them.
    shared.with_state(|s| {
        for scope in &scopes {
            s.register_config_cache(scope.as_deref().unwrap_or("*"));
        }
    });
    scopes
        .into_iter()
        .map(|scope| {
            let api: Api<ConfigObject> = match &scope {
                Some(ns) => Api::namespaced_with(shared.client.clone(), ns, &ar),
                None => Api::all_with(shared.client.clone(), &ar),
            };
            let name = scope.unwrap_or_else(|| "*".into());
            // ConfigObject takes each object as raw text before decoding
            // it (and drops managedFields), so one SyncConfig nested too
            // deep for the decoder fails neither the list nor the watch.
            let stream = retrying(
                watcher::watcher(api, watcher::Config::default()),
                watch_retry(&shared.settings),
            );
            drive_fixed(shared, &SYNCCONFIG_HINTS, stream, move |shared, event| {
                report_undecodable(shared, &event);
                forget_previewed_status(shared, &event);
                let (keys, kinds_changed) =
                    shared.with_state(|s| s.apply_config(&name, event, Instant::now()));
                if kinds_changed {
                    shared.kinds_changed.notify_one();
                }
                shared.enqueue_edited(keys);
            })
        })
        .collect()
}

/// Runs one of the fixed watches (Namespaces, SyncConfigs) until shutdown:
/// every event marks it answered and goes to `on_event`; every failure is
/// logged with what to fix (`hints`).
fn drive_fixed<K, S>(
    shared: &Arc<Shared>,
    hints: &'static WatchHints,
    stream: S,
    mut on_event: impl FnMut(&Shared, watcher::Event<K>) + Send + 'static,
) -> tokio::task::JoinHandle<()>
where
    K: Send + 'static,
    S: futures::Stream<Item = Result<watcher::Event<K>, WatchFailure>> + Send + 'static,
{
    let shared = shared.clone();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(item) = next_or_cancel(&shared, &mut stream).await {
            match item {
                Ok(event) => {
                    watch_answered(&shared, hints.resource);
                    on_event(&shared, event);
                }
                Err(e) => watch_error(&shared, hints, &e),
            }
        }
    })
}

async fn next_or_cancel<S: futures::Stream + Unpin>(
    shared: &Shared,
    stream: &mut S,
) -> Option<S::Item> {
    tokio::select! {
        _ = shared.shutdown.cancelled() => None,
        item = stream.next() => item,
    }
}

/// A SyncConfig the decoder could not read is logged and counted here; the
/// planner reports it on its status (Invalid) and in an Event like any
/// invalid spec.
fn report_undecodable(shared: &Shared, event: &watcher::Event<ConfigObject>) {
    let object = match event {
        watcher::Event::Apply(o) | watcher::Event::InitApply(o) => o,
        _ => return,
    };
    if let Err(reason) = &object.body {
        shared.metrics.error("syncconfig-undecodable");
        tracing::warn!(
            namespace = object.metadata.namespace.as_deref().unwrap_or_default(),
            name = object.metadata.name.as_deref().unwrap_or_default(),
            reason = %reason,
            "SyncConfig cannot be decoded; its copies are kept until it is fixed"
        );
    }
}

/// In a dry run, a deleted SyncConfig's status would not be written.
fn forget_previewed_status(shared: &Shared, event: &watcher::Event<ConfigObject>) {
    if let (Some(preview), watcher::Event::Delete(o)) = (&shared.settings.preview, event) {
        preview.replace(
            &crate::engine::status_scope(
                o.metadata.namespace.as_deref().unwrap_or_default(),
                o.metadata.name.as_deref().unwrap_or_default(),
            ),
            Vec::new(),
        );
    }
}

/// Where the fixes are for the two watches every mirror needs.
const SYNCCONFIG_HINTS: WatchHints = WatchHints {
    resource: "syncconfigs.sync.appuio.ch",
    install: Some(
        "install the SyncConfig CustomResourceDefinition (kubectl apply -f \
         deploy/crd/syncconfig.yaml, or kubectl apply -k deploy/)",
    ),
    rbac: "grant get, list and watch on syncconfigs.sync.appuio.ch to mirra's ServiceAccount \
           (the ClusterRole in deploy/mirror/rbac.yaml)",
};
const NAMESPACE_HINTS: WatchHints = WatchHints {
    resource: "namespaces",
    install: None,
    rbac: "grant list and watch on namespaces to mirra's ServiceAccount (the ClusterRole in \
           deploy/mirror/rbac.yaml)",
};

/// Logs a failed attempt (what is missing and how to fix it, and when the
/// next attempt is) and counts it; the stream retries by itself. Readiness
/// stays false until the watch has listed.
fn watch_error(shared: &Shared, hints: &WatchHints, f: &WatchFailure) {
    shared.metrics.error("watch");
    if let Some(preview) = &shared.settings.preview {
        preview.unreadable(
            hints.resource,
            Some(mirra_runtime::watch::explain(hints, f)),
        );
    }
    tracing::warn!(
        watch = hints.resource,
        cause = f.cause().as_str(),
        attempt = f.attempt,
        retry_in_ms = f.retry_in_ms(),
        "{}; retrying",
        mirra_runtime::watch::explain(hints, f)
    );
}

/// A watch that answered again: in a dry run, its earlier failure no
/// longer makes the preview incomplete.
fn watch_answered(shared: &Shared, what: &str) {
    if let Some(preview) = &shared.settings.preview {
        preview.unreadable(what, None);
    }
}

/// The copy and deleteItem watches name their resource at run time, so
/// their line is built here rather than from static hints.
fn dynamic_watch_error(shared: &Shared, what: &str, f: &WatchFailure) {
    shared.metrics.error("watch");
    if let Some(preview) = &shared.settings.preview {
        preview.unreadable(what, Some(f.error.to_string()));
    }
    tracing::warn!(
        watch = what,
        cause = f.cause().as_str(),
        attempt = f.attempt,
        retry_in_ms = f.retry_in_ms(),
        error = %f.error,
        "watch failed, retrying"
    );
}

/// The retry bounds of every watch, from the settings (tests shorten them
/// so that a granted permission is picked up quickly).
fn watch_retry(settings: &Settings) -> WatchRetry {
    WatchRetry {
        base: settings.watch_retry_base,
        cap: settings.watch_retry_cap,
    }
}

/// The resource as RBAC names it: `plural` or `plural.group`.
fn rbac_resource(ar: &ApiResource) -> String {
    if ar.group.is_empty() {
        ar.plural.clone()
    } else {
        format!("{}.{}", ar.plural, ar.group)
    }
}

/// A refusal to list or watch `ar`: 403 (RBAC: the kind is outside mirra's
/// ClusterRole, or, for a watch made as `user`, a tenant's ServiceAccount,
/// outside that account's rights) or 404 (no longer served). Other errors
/// (5xx, transport, 410) are passing: the watcher retries them and the
/// cache simply waits.
fn refusal(ar: &ApiResource, e: &watcher::Error, user: Option<&str>) -> Option<Unavailable> {
    let (verb, status, on_watch) = match e {
        watcher::Error::InitialListFailed(kube::Error::Api(s)) => ("list", s.as_ref(), false),
        watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => ("watch", s.as_ref(), true),
        watcher::Error::WatchError(s) => ("watch", s.as_ref(), true),
        _ => return None,
    };
    let what = format!("{} ({} {})", rbac_resource(ar), ar.api_version, ar.kind);
    let reason = match (status.code, user) {
        (403, Some(user)) => format!(
            "{user} may not {verb} {what}: {}; grant the ServiceAccount get, list and watch \
             there; retried until then",
            status.message
        ),
        (403, None) => format!(
            "mirra may not {verb} {what}: {}; grant list and watch (and patch, delete to copy) \
             on {} in mirra's ClusterRole; retried until then",
            status.message,
            rbac_resource(ar)
        ),
        (404, _) => format!(
            "the API server answers 404 to {verb} {what}: {}; retried until it serves it",
            status.message
        ),
        _ => return None,
    };
    Some(Unavailable { reason, on_watch })
}

/// Runs one dynamic watch (copies, a deleteItem, a source) until shutdown:
/// every event marks `what` answered and goes to `on_event`; every failure
/// is logged as `what` and, when it is a refusal (403, 404; worded for
/// `user` when the watch is made as a tenant's account), recorded by
/// `on_refusal`, whose namespaces are planned again.
fn drive<K, S>(
    shared: &Arc<Shared>,
    what: String,
    ar: &ApiResource,
    user: Option<String>,
    stream: S,
    mut on_event: impl FnMut(&Shared, watcher::Event<K>) + Send + 'static,
    on_refusal: impl Fn(&mut State, Unavailable) -> BTreeSet<String> + Send + 'static,
) -> TaskGuard
where
    K: Send + 'static,
    S: futures::Stream<Item = Result<watcher::Event<K>, WatchFailure>> + Send + 'static,
{
    let shared = shared.clone();
    let ar = ar.clone();
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(item) = next_or_cancel(&shared, &mut stream).await {
            match item {
                Ok(event) => {
                    watch_answered(&shared, &what);
                    on_event(&shared, event);
                }
                Err(f) => {
                    dynamic_watch_error(&shared, &what, &f);
                    if let Some(u) = refusal(&ar, &f.error, user.as_deref()) {
                        let keys = shared.with_state(|s| on_refusal(s, u));
                        shared.enqueue(keys);
                    }
                }
            }
        }
    });
    mirra_runtime::task::guard(&task)
}

fn spawn_copies_watch(shared: &Arc<Shared>, kind: KindId, ar: &ApiResource) -> TaskGuard {
    let api: Api<DynamicObject> = Api::all_with(shared.client.clone(), ar);
    let config =
        watcher::Config::default().labels(&format!("{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}"));
    let stream = watcher::watcher(api, config).modify(|o: &mut DynamicObject| {
        keep_ownership_proof(&mut o.metadata);
        // A copy of a large item would otherwise be held whole once per
        // namespace; the planner compares against the digest as well.
        mirra_mirror::digest_large_strings(&mut o.data);
    });
    let stream = retrying(stream, watch_retry(&shared.settings));
    let (on_event_kind, owned_ar) = (kind.clone(), ar.clone());
    drive(
        shared,
        kind.1.clone(),
        ar,
        None,
        stream,
        move |shared, event| {
            // Converted here, outside the state lock, once per event:
            // plans then share the cached form.
            let Some(event) = crate::state::cached_event(event, &owned_ar) else {
                tracing::warn!(kind = %on_event_kind.1, "skipping a watched copy without a name");
                return;
            };
            let (keys, emptied) = shared.with_state(|s| s.copies_event(&on_event_kind, event));
            if emptied {
                shared.kinds_changed.notify_one();
            }
            shared.enqueue(keys);
        },
        move |s, u| s.set_copies_unavailable(&kind, Some(u)),
    )
}

fn spawn_delete_watch(shared: &Arc<Shared>, id: DeleteWatchId, ar: &ApiResource) -> TaskGuard {
    // A metadata-only watch: deleteItems need identity, uid and deletion
    // state, never the content.
    let api: Api<PartialObjectMeta<DynamicObject>> = Api::all_with(shared.client.clone(), ar);
    let mut config = watcher::Config::default();
    if let Some(name) = &id.1 {
        config = config.fields(&format!("metadata.name={name}"));
    }
    let stream = watcher::watcher(api, config).modify(|o| keep_ownership_proof(&mut o.metadata));
    let stream = retrying(stream, watch_retry(&shared.settings));
    let on_event_id = id.clone();
    drive(
        shared,
        format!("deleteItems ({})", ar.kind),
        ar,
        None,
        stream,
        move |shared, event| {
            let keys = shared.with_state(|s| {
                let mut keys = s.set_delete_unavailable(&on_event_id, None);
                keys.extend(s.apply_delete_watch(&on_event_id, event));
                keys
            });
            shared.enqueue(keys);
        },
        move |s, u| s.set_delete_unavailable(&id, Some(u)),
    )
}

/// Watches one copyItem source (or a ServiceAccount a SyncConfig names):
/// its namespace, its name by field selector, the whole object (its
/// content is what the copies hold). A tenant's source is read as its
/// ServiceAccount, so the server decides what the tenant may copy.
fn spawn_source_watch(shared: &Arc<Shared>, id: SourceId, ar: &ApiResource) -> TaskGuard {
    let ((_, kind), namespace, name, user) = &id;
    let client = match shared.client_as(user.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            // Not a user any header can carry: the source is unreadable.
            let keys = shared.with_state(|s| {
                s.set_source_unavailable(
                    &id,
                    Some(Unavailable {
                        reason: e,
                        on_watch: false,
                    }),
                    Instant::now(),
                )
            });
            shared.enqueue(keys);
            return mirra_runtime::task::guard(&tokio::spawn(async {}));
        }
    };
    let api: Api<DynamicObject> = Api::namespaced_with(client, namespace, ar);
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let stream = retrying(watcher::watcher(api, config), watch_retry(&shared.settings));
    let what = format!("copyItems source ({kind} {namespace}/{name})");
    let on_event_id = id.clone();
    drive(
        shared,
        what,
        ar,
        user.clone(),
        stream,
        move |shared, event| {
            let keys = shared.with_state(|s| s.apply_source(&on_event_id, event, Instant::now()));
            shared.enqueue_edited(keys);
        },
        move |s, u| s.set_source_unavailable(&id, Some(u), Instant::now()),
    )
}

fn service_account_kind() -> KindId {
    ("v1".to_string(), "ServiceAccount".to_string())
}

/// Restarts, in place, every copy and deleteItem watch refused after its
/// list was allowed. Such a watcher only retries the watch, and a watch
/// granted later brings no event to notice it by; a new watcher lists
/// afresh, and its answer clears the refusal. The entries (and their
/// caches, which the relist corrects) stay, so a kind found by the
/// start-up sweep is not lost.
pub fn restart_refused_watches(shared: &Arc<Shared>) {
    shared.with_state(|s| {
        s.restart_refused_watches(
            |kind, ar| spawn_copies_watch(shared, kind.clone(), ar),
            |id, ar| spawn_delete_watch(shared, id.clone(), ar),
        );
        s.restart_refused_source_watches(|id, ar| spawn_source_watch(shared, id.clone(), ar));
    });
}

/// How long to wait before asking discovery again after a transient error.
/// 2 s: long enough not to hammer a struggling server, short enough that a
/// blip does not hold up readiness noticeably.
const DISCOVERY_RETRY: Duration = Duration::from_secs(2);

/// Resolves a kind through discovery (one request per kind, once), and
/// whether it is cluster-scoped.
async fn resolve(client: &kube::Client, kind: &KindId) -> Result<(Resolution, bool), kube::Error> {
    let (group, version) = match kind.0.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), kind.0.clone()),
    };
    let gvk = GroupVersionKind::gvk(&group, &version, &kind.1);
    match kube::discovery::pinned_kind(client, &gvk).await {
        // A cluster-scoped kind is served like a namespaced one: the
        // planner makes one object per selected namespace of it.
        Ok((ar, caps)) => Ok((
            Resolution::Served(ar),
            caps.scope == kube::discovery::Scope::Cluster,
        )),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok((
            Resolution::Failed(format!(
                "the API server does not serve kind {} in {}",
                kind.1, kind.0
            )),
            false,
        )),
        Err(kube::Error::Discovery(e)) => Ok((
            Resolution::Failed(format!(
                "the API server does not serve kind {} in {}: {e}",
                kind.1, kind.0
            )),
            false,
        )),
        Err(e) => Err(e),
    }
}

/// Keeps the set of copy and deleteItem watches equal to what the
/// SyncConfigs need. Runs until shutdown.
pub async fn manage_kinds(shared: Arc<Shared>) {
    loop {
        let (to_resolve, to_watch_deletes, to_watch_sources) =
            shared.with_state(State::align_watches);
        let mut retry = false;
        for kind in to_resolve {
            match resolve(&shared.client, &kind).await {
                Ok((resolution, cluster)) => {
                    let task = match &resolution {
                        Resolution::Served(ar) => {
                            Some(spawn_copies_watch(&shared, kind.clone(), ar))
                        }
                        _ => None,
                    };
                    if let Resolution::Failed(reason) = &resolution {
                        tracing::warn!(kind = %kind.1, api_version = %kind.0, %reason, "kind not usable");
                    }
                    // The items of this kind can now be planned (or
                    // reported as failed).
                    let keys =
                        shared.with_state(|s| s.kind_resolved(&kind, resolution, cluster, task));
                    shared.enqueue(keys);
                }
                Err(e) => {
                    tracing::warn!(kind = %kind.1, error = %e, "discovery failed, retrying");
                    shared.metrics.error("discovery");
                    shared.with_state(|s| s.forget_kind(&kind));
                    retry = true;
                }
            }
        }
        for id in to_watch_deletes {
            let resolution = shared.with_state(|s| s.kind_resolution(&id.0));
            let resolution = match resolution {
                Some(Resolution::Pending) | None => {
                    // The kind itself is resolved above in the same round;
                    // come back once it is.
                    retry = true;
                    continue;
                }
                Some(r) => r,
            };
            let cluster = shared.with_state(|s| s.is_cluster_kind(&id.0));
            let (resource, task) = match &resolution {
                // deleteItems of a cluster-scoped kind are refused by the
                // planner: nothing to watch for them.
                Resolution::Served(_) if cluster => (None, None),
                Resolution::Served(ar) => (
                    Some(ar.clone()),
                    Some(spawn_delete_watch(&shared, id.clone(), ar)),
                ),
                _ => (None, None),
            };
            shared.with_state(|s| s.add_delete_watch(id, resource, task));
        }
        for id in to_watch_sources {
            let resolution = if id.0 == service_account_kind() {
                // Named by serviceAccountName, not copied: no kind entry
                // resolves it, and the core resource is known.
                Some(Resolution::Served(ApiResource::erase::<
                    k8s_openapi::api::core::v1::ServiceAccount,
                >(&())))
            } else {
                shared.with_state(|s| s.kind_resolution(&id.0))
            };
            let cluster = shared.with_state(|s| s.is_cluster_kind(&id.0));
            let (resource, task) = match resolution {
                Some(Resolution::Pending) | None => {
                    retry = true;
                    continue;
                }
                Some(Resolution::Served(_)) if cluster => (
                    Err(format!(
                        "{} is cluster-scoped: copyItems copy namespaced objects only",
                        id.0.1
                    )),
                    None,
                ),
                Some(Resolution::Served(ar)) => {
                    let task = spawn_source_watch(&shared, id.clone(), &ar);
                    (Ok(ar), Some(task))
                }
                Some(Resolution::Failed(reason)) => (Err(reason), None),
            };
            let keys =
                shared.with_state(|s| s.add_source_watch(id, resource, task, Instant::now()));
            shared.enqueue(keys);
        }
        let wait = if retry { Some(DISCOVERY_RETRY) } else { None };
        tokio::select! {
            _ = shared.shutdown.cancelled() => return,
            _ = shared.kinds_changed.notified() => {}
            _ = async {
                match wait {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            } => {}
        }
    }
}

/// How often the sweep looks whether the SyncConfig and Namespace caches
/// hold their initial lists. 50 ms: start-up lists take tens of
/// milliseconds on a small cluster.
const SWEEP_WAIT: Duration = Duration::from_millis(50);

/// Once at start-up: finds the kinds holding mirra's copies that no
/// SyncConfig names, and watches them like any kind in use, so that their
/// copies are planned (pruned, or kept when they carry the opt-out) and the
/// watch ends once none is left. Without it, copies of a kind whose last
/// SyncConfig was deleted while mirra was down would stay forever: no
/// watch would cover the kind any more.
///
/// Cost: discovery (one request for the group list and one per group, at
/// its preferred version) and one label-selected, metadata-only list per
/// namespaced kind and per cluster-scoped kind `--allow-kind` allows, served from the API server's watch cache
/// (`resourceVersion=0`) and limited to one object. A kind mirra may not
/// list (403) or that fails otherwise is skipped with a debug log: its
/// copies, if any, are not mirra's to find.
pub async fn startup_sweep(shared: Arc<Shared>) {
    // The kinds SyncConfigs name are known only once their caches are
    // listed; those are watched anyway and need no sweep.
    while !shared.with_state(|s| s.configs_listed()) {
        tokio::select! {
            _ = shared.shutdown.cancelled() => return,
            _ = tokio::time::sleep(SWEEP_WAIT) => {}
        }
    }
    let client = &shared.client;
    let resources = tokio::select! {
        _ = shared.shutdown.cancelled() => return,
        r = served_kinds(client) => r,
    };
    let selector = format!("{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}");
    let params = kube::api::ListParams::default()
        .labels(&selector)
        .limit(1)
        .match_any();
    let mut listed = 0usize;
    let mut found = Vec::new();
    for (ar, cluster) in resources {
        let in_use = shared.with_state(|s| {
            s.kinds_in_use_by_group()
                .contains(&(ar.group.clone(), ar.kind.clone()))
        });
        // A cluster-scoped kind outside --allow-kind cannot hold copies
        // mirra would prune (its writes are refused), and none is allowed
        // by default: listing them all would cost every start a request
        // per cluster-scoped kind for nothing.
        let refused = cluster && shared.settings.refuses_kind(&ar.group, &ar.kind).is_some();
        if in_use || refused {
            continue;
        }
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
        let answer = tokio::select! {
            _ = shared.shutdown.cancelled() => return,
            a = api.list_metadata(&params) => a,
        };
        listed += 1;
        match answer {
            Ok(list) if !list.items.is_empty() => found.push((ar, cluster)),
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(resource = %rbac_resource(&ar), error = %e,
                    "start-up sweep skips a kind it cannot list")
            }
        }
    }
    let mut watched = Vec::new();
    for (ar, cluster) in found {
        let kind: KindId = (ar.api_version.clone(), ar.kind.clone());
        let added = shared.with_state(|s| s.add_swept_kind(&kind, &ar, cluster));
        if added {
            let task = spawn_copies_watch(&shared, kind.clone(), &ar);
            shared.with_state(|s| s.set_copies_task(&kind, task));
            watched.push(format!("{} {}", ar.api_version, ar.kind));
        }
    }
    // `watching` names the kinds holding copies no SyncConfig names: their
    // copies are planned (pruned, or kept with the opt-out) from now on.
    tracing::info!(kinds_listed = listed, watching = ?watched, "start-up sweep done");
}

/// Every kind the server serves that can be listed and watched, at its group's preferred
/// version, and whether it is cluster-scoped. A group whose discovery
/// fails (an aggregated API that is down, typically) is skipped: it cannot
/// hold copies mirra could delete right now anyway.
async fn served_kinds(client: &kube::Client) -> Vec<(ApiResource, bool)> {
    let mut versions = vec![kube::core::GroupVersion::gv("", "v1")];
    match client.list_api_groups().await {
        Ok(groups) => {
            for g in groups.groups {
                let preferred = g
                    .preferred_version
                    .map(|v| v.version)
                    .or_else(|| g.versions.first().map(|v| v.version.clone()));
                if let Some(v) = preferred {
                    versions.push(kube::core::GroupVersion::gv(&g.name, &v));
                }
            }
        }
        Err(e) => tracing::warn!(error = %e, "start-up sweep: cannot list API groups"),
    }
    let mut out = Vec::new();
    for gv in versions {
        match kube::discovery::oneshot::pinned_group(client, &gv).await {
            Ok(group) => out.extend(
                group
                    .recommended_resources()
                    .into_iter()
                    // mirra watches the kinds it finds copies of; a kind
                    // that cannot be watched (componentstatuses) cannot
                    // hold them.
                    .filter(|(_, caps)| {
                        caps.supports_operation(kube::discovery::verbs::LIST)
                            && caps.supports_operation(kube::discovery::verbs::WATCH)
                    })
                    .map(|(ar, caps)| (ar, caps.scope == kube::discovery::Scope::Cluster)),
            ),
            Err(e) => tracing::debug!(group = %gv.group, version = %gv.version, error = %e,
                "start-up sweep skips a group whose discovery failed"),
        }
    }
    out
}

#[cfg(test)]
mod tests;
