//! The object store: every object of every kind, one cluster-wide revision
//! counter, the retained event history and the broadcast that feeds watches.
//!
//! All writes happen under one lock held by the caller ([`crate::Sandbox`]),
//! so a write, its revision and its watch event are one atomic step and
//! watchers see events in revision order. Objects are kept serialized (the
//! JSON bytes) because a list or a watch event is mostly copying bytes, and
//! because a serialized object is several times smaller than a parsed
//! `serde_json::Value`.
//!
//! The store knows Kubernetes semantics (preconditions, finalizers,
//! namespace lifecycle, generation, status subresources) but nothing of HTTP.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::convert;
use crate::kinds::{self, Allocators};
use crate::registry::{Registry, Resource, Special, resource_from_crd};
use crate::semantics::{self, FieldSelector, LabelSelector};
use crate::status::{ApiError, Cause, success_status};

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Created.
    Added,
    /// Changed.
    Modified,
    /// Removed.
    Deleted,
}

impl EventType {
    /// The watch event `type` string.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, as retained in history and sent to watchers.
#[derive(Debug)]
pub struct Event {
    /// The revision of this change.
    pub rv: u64,
    /// `configmaps` or `deployments.apps`.
    pub resource: Arc<str>,
    /// Namespace (empty for cluster-scoped).
    pub namespace: Arc<str>,
    /// What happened.
    pub kind: EventType,
    /// The object after the change (before it, for deletions, with the new
    /// revision), serialized.
    pub object: Bytes,
    /// The object's labels, for label-selector filtering without parsing.
    pub labels: Labels,
    /// For a modification: the object's labels and encoding before it, so
    /// a filtered watch sees the object enter (ADDED) or leave (DELETED)
    /// its selection, as the server's watch cache reports it.
    pub prev: Option<(Labels, Bytes)>,
    /// The protobuf watch frame of this event as it is (its kind, its
    /// object; `None` when the object has no protobuf form), encoded by
    /// the first that needs it (a protobuf watch sending the event, or the
    /// protobuf answer of the write that made it) and reused by the
    /// others: the frame ends with the object's own protobuf form.
    protobuf: std::sync::OnceLock<Option<crate::protobuf::Frame>>,
}

impl Event {
    /// The event's protobuf frame, encoded on first use.
    pub fn protobuf_frame(&self) -> Option<&crate::protobuf::Frame> {
        self.protobuf
            .get_or_init(|| crate::protobuf::Frame::of_json(self.kind.as_str(), &self.object))
            .as_ref()
    }
}

/// An object's labels, parsed once for selectors and packed into one
/// allocation (`key NUL value NUL ...`, sorted by key): a map would cost
/// more than a small object's whole JSON (a B-tree node reserves room for
/// eleven entries). NUL cannot occur in a valid label key or value, and
/// invalid labels are refused before an object is stored.
#[derive(Debug, Clone, Default)]
pub struct Labels(Option<Arc<str>>);

impl Labels {
    /// The labels of `metadata.labels` (non-string values are ignored, as
    /// they cannot match a selector).
    fn of(obj: &Value) -> Labels {
        let Some(map) = obj.pointer("/metadata/labels").and_then(Value::as_object) else {
            return Labels(None);
        };
        let mut pairs: Vec<(&str, &str)> = map
            .iter()
            .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)))
            .filter(|(k, v)| !k.contains('\0') && !v.contains('\0'))
            .collect();
        if pairs.is_empty() {
            return Labels(None);
        }
        pairs.sort_unstable();
        let mut packed = String::new();
        for (k, v) in pairs {
            packed.push_str(k);
            packed.push('\0');
            packed.push_str(v);
            packed.push('\0');
        }
        Labels(Some(Arc::from(packed)))
    }

    /// The value of label `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        let mut parts = self.0.as_deref()?.split('\0');
        while let (Some(k), Some(v)) = (parts.next(), parts.next()) {
            if k == key {
                return Some(v);
            }
        }
        None
    }
}

/// A stored object.
#[derive(Debug, Clone)]
pub struct Stored {
    /// Serialized object.
    pub json: Bytes,
    /// Its labels (parsed once, for selectors).
    pub labels: Labels,
    /// Its revision.
    pub rv: u64,
}

type Key = (Arc<str>, Arc<str>);
type Collection = BTreeMap<Key, Stored>;

/// Tuning of the store.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// Events kept for watches that resume from an older revision. Older
    /// revisions get `410 Gone`, like an etcd compaction.
    pub history_limit: usize,
    /// Capacity of the broadcast channel; a watcher that falls further
    /// behind is disconnected and must resume (as a slow client of a real
    /// server is).
    pub broadcast_capacity: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            // Roughly what five minutes of a busy test cluster produce; big
            // enough that resuming watches never see 410 unless a test asks
            // for it with `compact`.
            history_limit: 100_000,
            // 64k events: a watcher must fall this far behind before it is cut.
            broadcast_capacity: 65_536,
        }
    }
}

/// Options of a delete.
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    /// `preconditions.uid`.
    pub uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub resource_version: Option<String>,
    /// `dryRun=All`.
    pub dry_run: bool,
}

/// What a delete returns.
#[derive(Debug)]
pub enum Deleted {
    /// Gone at once: the `Status` most kinds answer, and the object as
    /// it was, which the kinds built with `ReturnDeletedObject` answer.
    Gone {
        /// The success `Status`.
        status: Value,
        /// The deleted object.
        object: Bytes,
    },
    /// Still there (finalizers, namespace termination); the object.
    Pending(Bytes),
}

/// Which patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    /// `application/merge-patch+json`.
    Merge,
    /// `application/json-patch+json`.
    Json,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply).
    Apply,
}

/// Common write options.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// `dryRun=All`: validate and answer, store nothing.
    pub dry_run: bool,
    /// `fieldManager`, or the default derived from the user agent.
    pub manager: String,
    /// `force` (apply only).
    pub force: bool,
    /// `/status` subresource.
    pub status: bool,
}

/// A page of a list.
#[derive(Debug)]
pub struct ListPage {
    /// The objects.
    pub items: Vec<Bytes>,
    /// The list's revision.
    pub rv: u64,
    /// Continue token when more remain.
    pub continue_token: Option<String>,
    /// How many remain after this page.
    pub remaining: usize,
}

/// Filters of a list or watch.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Restrict to one namespace.
    pub namespace: Option<String>,
    /// `labelSelector`.
    pub labels: Option<LabelSelector>,
    /// `fieldSelector`.
    pub fields: Option<FieldSelector>,
}

impl Filter {
    fn matches(&self, ns: &str, labels: &Labels, object: impl FnOnce() -> Option<Value>) -> bool {
        if let Some(want) = &self.namespace
            && want != ns
        {
            return false;
        }
        if let Some(sel) = &self.labels
            && !sel.matches_lookup(|k| labels.get(k))
        {
            return false;
        }
        if let Some(sel) = &self.fields {
            return match object() {
                Some(obj) => semantics::field_matches(sel, &obj),
                None => false,
            };
        }
        true
    }

    /// Whether an event's object passes the filter.
    fn matches_event(&self, e: &Event) -> bool {
        self.matches(&e.namespace, &e.labels, || {
            crate::json::parse(&e.object).ok()
        })
    }

    /// What a watcher with this filter is sent for `e`, if anything. A
    /// modification that moves the object into the selection is an ADDED,
    /// one that moves it out a DELETED of the object as it was (at the
    /// event's revision), as the server's watch cache sends them; a
    /// watcher that only ever saw an object must learn that it left.
    pub fn deliver(&self, e: &Event) -> Option<(EventType, Bytes)> {
        let now = self.matches_event(e);
        let before = match (&e.kind, &e.prev) {
            (EventType::Modified, Some((labels, json))) => {
                self.matches(&e.namespace, labels, || crate::json::parse(json).ok())
            }
            _ => now,
        };
        match (now, before) {
            (true, true) => Some((e.kind, e.object.clone())),
            (true, false) => Some((EventType::Added, e.object.clone())),
            (false, true) => {
                let json = e.prev.as_ref().map(|(_, j)| j.clone())?;
                Some((EventType::Deleted, with_revision(&json, e.rv)))
            }
            (false, false) => None,
        }
    }
}

/// The start of a watch: events to send first, then the live receiver.
pub struct WatchStart {
    /// Events (replayed history or synthetic ADDED) to send first.
    pub initial: Vec<Arc<Event>>,
    /// Live events after `rv`.
    pub rx: broadcast::Receiver<Arc<Event>>,
    /// The revision the initial events bring the watcher to.
    pub rv: u64,
}

/// The store.
pub struct Store {
    config: StoreConfig,
    registry: Registry,
    objects: HashMap<Arc<str>, Collection>,
    rv: u64,
    history: VecDeque<Arc<Event>>,
    /// Highest revision whose events are no longer retained.
    compacted: u64,
    tx: broadcast::Sender<Arc<Event>>,
    alloc: Allocators,
    /// One shared copy of every namespace and resource name in keys and
    /// events: thousands of objects per namespace would otherwise each
    /// carry their own.
    interned: HashSet<Arc<str>>,
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

fn has_finalizers(obj: &Value) -> bool {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty())
}

fn metadata_mut(obj: &mut Value) -> &mut serde_json::Map<String, Value> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    match obj.get_mut("metadata") {
        Some(Value::Object(m)) => m,
        _ => unreachable!("metadata was made an object above"),
    }
}

/// Everything in an object but metadata and status: what `generation`
/// tracks.
fn spec_part(obj: &Value) -> Value {
    match obj {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| k.as_str() != "metadata" && k.as_str() != "status")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The object without the fields every write changes, to detect no-ops.
fn comparable(obj: &Value) -> Value {
    let mut o = obj.clone();
    if let Some(Value::Object(m)) = o.get_mut("metadata") {
        m.remove("resourceVersion");
        m.remove("managedFields");
    }
    o
}

fn encode_continue(rv: u64, after: &Key) -> String {
    use base64::Engine;
    let token = json!({"rv": rv, "ns": &*after.0, "name": &*after.1});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token.to_string())
}

fn decode_continue(token: &str) -> Result<(u64, Key), ApiError> {
    use base64::Engine;
    let bad = || ApiError::bad_request(format!("continue key is not valid: {token:?}"));
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    let rv = v.get("rv").and_then(Value::as_u64).ok_or_else(bad)?;
    let ns = v.get("ns").and_then(Value::as_str).ok_or_else(bad)?;
    let name = v.get("name").and_then(Value::as_str).ok_or_else(bad)?;
    Ok((rv, (Arc::from(ns), Arc::from(name))))
}

/// Optimistic concurrency: a non-empty `metadata.resourceVersion` in the
/// incoming object must equal the stored one, else 409 Conflict.
pub(crate) fn check_resource_version(
    res: &Resource,
    name: &str,
    incoming: &Value,
    stored: &Value,
) -> Result<(), ApiError> {
    match meta_str(incoming, "resourceVersion").filter(|s| !s.is_empty()) {
        Some(want) if Some(want) != meta_str(stored, "resourceVersion") => Err(ApiError::conflict(
            &res.group,
            &res.plural,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )),
        _ => Ok(()),
    }
}

/// Parses a `resourceVersion` query or metadata value.
pub fn parse_rv(s: &str) -> Result<u64, ApiError> {
    s.parse::<u64>().map_err(|_| {
        ApiError::bad_request(format!(
            "invalid resource version {s:?}: must be a decimal number"
        ))
    })
}

impl Store {
    /// A store with the built-in kinds and nothing in it.
    fn empty(config: StoreConfig) -> Self {
        let (tx, _) = broadcast::channel(config.broadcast_capacity.max(1));
        Store {
            config,
            registry: Registry::with_builtins(),
            objects: HashMap::new(),
            rv: 0,
            history: VecDeque::new(),
            compacted: 0,
            tx,
            alloc: Allocators::default(),
            interned: HashSet::new(),
        }
    }

    /// Every stored object and the revision counter, for a restart
    /// ([`Store::restore`]). Watch history is not part of it.
    pub fn snapshot(&self) -> Value {
        let crds = crate::status::qualified("apiextensions.k8s.io", "customresourcedefinitions");
        let mut resources: Vec<&Arc<str>> = self.objects.keys().collect();
        // CRDs first, so a restore serves their resources before it meets
        // their objects; then a stable order.
        resources.sort_by_key(|r| (&***r != crds.as_str(), r.to_string()));
        let mut objects = Vec::new();
        for resource in resources {
            for ((namespace, _), stored) in &self.objects[resource] {
                if let Ok(object) = crate::json::parse(&stored.json) {
                    objects.push(json!({
                        "resource": &**resource,
                        "namespace": &**namespace,
                        "object": object,
                    }));
                }
            }
        }
        json!({"revision": self.rv, "objects": objects})
    }

    /// A store holding what [`Store::snapshot`] saved: every object as it
    /// was (resourceVersions, uids and all), the resources of its CRDs
    /// served, the Services' addresses and ports taken. The history starts
    /// empty, so a watch resumed from before the restart gets 410 and its
    /// client lists again, as after an etcd compaction.
    pub fn restore(config: StoreConfig, snapshot: &Value) -> Result<Self, String> {
        let mut store = Store::empty(config);
        let revision = snapshot
            .get("revision")
            .and_then(Value::as_u64)
            .ok_or("the state has no numeric \"revision\"")?;
        let objects = snapshot
            .get("objects")
            .and_then(Value::as_array)
            .ok_or("the state has no \"objects\" list")?;
        let crds = crate::status::qualified("apiextensions.k8s.io", "customresourcedefinitions");
        let services = crate::status::qualified("", "services");
        let mut top = revision;
        for (i, entry) in objects.iter().enumerate() {
            let field = |k: &str| entry.get(k).and_then(Value::as_str);
            let (Some(resource), Some(namespace), Some(object)) =
                (field("resource"), field("namespace"), entry.get("object"))
            else {
                return Err(format!(
                    "object {i}: needs \"resource\", \"namespace\" and \"object\""
                ));
            };
            let name = meta_str(object, "name")
                .filter(|n| !n.is_empty())
                .ok_or_else(|| format!("object {i} ({resource}) has no name"))?;
            let rv = meta_str(object, "resourceVersion")
                .ok_or_else(|| format!("object {i} ({resource} {name}) has no resourceVersion"))
                .and_then(|v| parse_rv(v).map_err(|e| format!("object {i}: {}", e.message)))?;
            top = top.max(rv);
            if resource == crds {
                let res = resource_from_crd(object)
                    .map_err(|e| format!("object {i} (CRD {name}): {e}"))?;
                store.registry.insert(res);
            }
            if resource == services {
                store.alloc.reserve(object);
            }
            let json = Bytes::from(serde_json::to_vec(object).unwrap_or_default());
            let key: Key = (store.intern(namespace), Arc::from(name));
            let resource = store.intern(resource);
            store.objects.entry(resource).or_default().insert(
                key,
                Stored {
                    json,
                    labels: Labels::of(object),
                    rv,
                },
            );
        }
        store.rv = top;
        store.compacted = top;
        Ok(store)
    }

    /// A store with the built-in kinds and the namespaces every cluster has.
    pub fn new(config: StoreConfig) -> Self {
        let mut store = Store::empty(config);
        let ns = store.registry.get("", "v1", "namespaces");
        if let Some(ns) = ns {
            for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
                let body =
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
                // Creating the well-known namespaces cannot fail on an empty
                // store; if it did, the sandbox would simply start without
                // them and tests would say so.
                let _ = store.create(
                    &ns,
                    "",
                    body,
                    &WriteOptions {
                        manager: "kube-apiserver".into(),
                        ..Default::default()
                    },
                );
            }
        }
        store.create_kubernetes_service();
        store
    }

    /// `default/kubernetes`, the Service every cluster has from the start
    /// (the API server keeps it; 10.96.0.1 is the first address of the
    /// service range, which the allocator never hands out).
    fn create_kubernetes_service(&mut self) {
        let Some(svc) = self.registry.get("", "v1", "services") else {
            return;
        };
        let body = json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": "kubernetes",
                "labels": {"component": "apiserver", "provider": "kubernetes"},
            },
            "spec": {
                "clusterIP": "10.96.0.1",
                "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}],
                "sessionAffinity": "None",
                "type": "ClusterIP",
            },
        });
        // Cannot fail on a fresh store; if it did, the sandbox would start
        // without it and tests that look for it would say so.
        let _ = self.create(
            &svc,
            "default",
            body,
            &WriteOptions {
                manager: "kube-apiserver".into(),
                ..Default::default()
            },
        );
    }

    /// The kinds served now.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The current revision.
    pub fn revision(&self) -> u64 {
        self.rv
    }

    /// Drops all retained history: every watch or continue token from an
    /// older revision now gets `410 Gone`.
    pub fn compact(&mut self) {
        self.history.clear();
        self.compacted = self.rv;
    }

    /// Number of stored objects and the bytes of their serialized form.
    pub fn size(&self) -> (usize, usize) {
        let mut count = 0;
        let mut bytes = 0;
        for c in self.objects.values() {
            count += c.len();
            bytes += c.values().map(|s| s.json.len()).sum::<usize>();
        }
        (count, bytes)
    }

    /// The storage resource of a converted view (`None` for a resource
    /// stored at its own version).
    fn storage_for(&self, res: &Resource) -> Result<Option<Arc<Resource>>, ApiError> {
        let Some(version) = &res.stored_as else {
            return Ok(None);
        };
        self.registry
            .get(&res.group, version, &res.plural)
            .map(Some)
            .ok_or_else(|| {
                ApiError::with_code(500).with_message(format!(
                    "no storage version {version} for {}",
                    res.qualified()
                ))
            })
    }

    /// The resource whose stored form answers for `res`: its storage
    /// version for a converted view, `res` itself otherwise. Server-side
    /// printing reads through it.
    pub fn storage_of(&self, res: &Arc<Resource>) -> Arc<Resource> {
        self.storage_for(res)
            .ok()
            .flatten()
            .unwrap_or_else(|| res.clone())
    }

    fn collection(&self, res: &Resource) -> Option<&Collection> {
        self.objects.get(res.qualified().as_str())
    }

    fn lookup(&self, res: &Resource, ns: &str, name: &str) -> Option<&Stored> {
        self.collection(res)?.get(&(Arc::from(ns), Arc::from(name)))
    }

    fn parse(stored: &Stored) -> Result<Value, ApiError> {
        crate::json::parse(&stored.json).map_err(|e| {
            ApiError::with_code(500).with_message(format!("stored object is corrupt: {e}"))
        })
    }

    /// The shared copy of `s`.
    fn intern(&mut self, s: &str) -> Arc<str> {
        if let Some(shared) = self.interned.get(s) {
            return shared.clone();
        }
        let shared: Arc<str> = Arc::from(s);
        self.interned.insert(shared.clone());
        shared
    }

    /// Commits a new version (or a deletion) and emits its event.
    fn commit(
        &mut self,
        res: &Resource,
        ns: &str,
        name: &str,
        kind: EventType,
        mut obj: Value,
    ) -> Bytes {
        self.rv += 1;
        let rv = self.rv;
        metadata_mut(&mut obj).insert("resourceVersion".into(), json!(rv.to_string()));
        let mut buf = serde_json::to_vec(&obj).unwrap_or_default();
        // `to_vec` grows its buffer by doubling; `Bytes` keeps whatever
        // capacity it is given, so trim it or a stored object costs up to
        // twice its size.
        buf.shrink_to_fit();
        let json = Bytes::from(buf);
        let labels = Labels::of(&obj);
        let resource = self.intern(&res.qualified());
        let key: Key = (self.intern(ns), Arc::from(name));
        let coll = self.objects.entry(resource.clone()).or_default();
        let prev = match kind {
            EventType::Modified => coll.get(&key).map(|s| (s.labels.clone(), s.json.clone())),
            _ => None,
        };
        if kind == EventType::Deleted {
            coll.remove(&key);
        } else {
            coll.insert(
                key.clone(),
                Stored {
                    json: json.clone(),
                    labels: labels.clone(),
                    rv,
                },
            );
        }
        let event = Arc::new(Event {
            rv,
            resource,
            namespace: key.0,
            kind,
            object: json.clone(),
            labels,
            prev,
            protobuf: std::sync::OnceLock::new(),
        });
        self.history.push_back(event.clone());
        while self.history.len() > self.config.history_limit {
            if let Some(old) = self.history.pop_front() {
                self.compacted = old.rv;
            }
        }
        // No receivers is fine: nobody is watching.
        let _ = self.tx.send(event);
        json
    }

    /// The recent event whose object is `object` itself (the same bytes,
    /// not an equal copy): a write answers its own event's object, and
    /// its protobuf answer is then a slice of that event's frame. Only the
    /// last few events are looked at; an answer found in none of them is
    /// encoded on its own.
    pub fn event_of(&self, object: &Bytes) -> Option<Arc<Event>> {
        // A write commits its own event last, or nearly: a namespace's
        // deletion commits those of its objects after its own.
        const RECENT: usize = 8;
        self.history
            .iter()
            .rev()
            .take(RECENT)
            .find(|e| e.object.as_ptr() == object.as_ptr() && e.object.len() == object.len())
            .cloned()
    }

    /// Checks that a namespaced write may go into `ns`.
    fn check_namespace(&self, res: &Resource, ns: &str, name: &str) -> Result<(), ApiError> {
        if !res.namespaced {
            return Ok(());
        }
        let Some(nsres) = self.registry.get("", "v1", "namespaces") else {
            return Ok(());
        };
        match self.lookup(&nsres, "", ns) {
            None => Err(ApiError::not_found("", "namespaces", ns)),
            Some(stored) => {
                let obj = Self::parse(stored)?;
                if obj.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating") {
                    let mut e = ApiError::forbidden(
                        &res.group,
                        &res.plural,
                        name,
                        &format!(
                            "unable to create new content in namespace {ns} because it is being terminated"
                        ),
                    );
                    e.causes = vec![Cause {
                        reason: "NamespaceTerminating".into(),
                        field: "metadata.namespace".into(),
                        message: format!("namespace {ns} is being terminated"),
                    }];
                    Err(e)
                } else {
                    Ok(())
                }
            }
        }
    }

    pub(crate) fn check_identity(res: &Resource, ns: &str, body: &Value) -> Result<(), ApiError> {
        if !body.is_object() {
            return Err(ApiError::bad_request(
                "the body of the request must be a JSON object",
            ));
        }
        if let Some(av) = body.get("apiVersion")
            && av.as_str() != Some(res.api_version().as_str())
        {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({}) does not match the expected API version ({})",
                av.as_str().unwrap_or_default(),
                res.api_version()
            )));
        }
        if let Some(kind) = body.get("kind")
            && kind.as_str() != Some(res.kind.as_str())
        {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({}) does not match the expected kind ({})",
                kind.as_str().unwrap_or_default(),
                res.kind
            )));
        }
        if let Some(body_ns) = meta_str(body, "namespace")
            && res.namespaced
            && !body_ns.is_empty()
            && body_ns != ns
        {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        Ok(())
    }

    fn invalid(res: &Resource, name: &str, causes: Vec<Cause>) -> ApiError {
        ApiError::invalid(&res.group, &res.kind, &res.plural, name, causes)
    }

    /// A custom resource as apiextensions-apiserver stores it: pruned to
    /// its CRD's structural schema (silently: the warnings or the `Strict`
    /// refusal were the HTTP layer's, from the body), `null`s the schema
    /// does not allow dropped, defaulted, then validated (422 with the
    /// schema's causes; an update does not revalidate what it leaves
    /// unchanged, as ratcheting does). Nothing happens for built-in kinds
    /// or a CRD without a schema.
    fn apply_schema(
        res: &Resource,
        name: &str,
        obj: &mut Value,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        use kube_semantics::structural;
        let Some(schema) = res.schema.as_deref().filter(|_| !res.builtin) else {
            return Ok(());
        };
        structural::prune(schema, obj);
        structural::drop_non_nullable_nulls(schema, obj);
        structural::default(schema, obj);
        let errors = structural::validate_update(schema, obj, old);
        if errors.is_empty() {
            return Ok(());
        }
        let causes = errors
            .into_iter()
            .map(|e| Cause {
                reason: e.reason.to_string(),
                field: e.field,
                message: e.message,
            })
            .collect();
        Err(Self::invalid(res, name, causes))
    }

    /// Creates an object.
    pub fn create(
        &mut self,
        res: &Arc<Resource>,
        ns: &str,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        if let Some(storage) = self.storage_for(res)? {
            Self::check_identity(res, ns, &body)?;
            let body = convert::to_storage(res, body)?;
            let out = self.create_inner(&storage, ns, body, opts, None)?;
            return Ok(convert::bytes_to_view(res, out));
        }
        self.create_inner(res, ns, body, opts, None)
    }

    /// Creates an object; `managed` is the ownership record of an apply
    /// that creates, `None` to record the creator as an Update manager.
    fn create_inner(
        &mut self,
        res: &Arc<Resource>,
        ns: &str,
        mut body: Value,
        opts: &WriteOptions,
        managed: Option<Value>,
    ) -> Result<Bytes, ApiError> {
        Self::check_identity(res, ns, &body)?;
        body["apiVersion"] = json!(res.api_version());
        body["kind"] = json!(res.kind);
        kinds::decode(res, &mut body)?;
        let meta = metadata_mut(&mut body);
        let mut name = meta
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if name.is_empty() {
            match meta.get("generateName").and_then(Value::as_str) {
                Some(prefix) if !prefix.is_empty() => {
                    name = generate_name(prefix);
                    meta.insert("name".into(), json!(name));
                }
                _ => {
                    return Err(Self::invalid(
                        res,
                        "",
                        vec![Cause {
                            reason: "FieldValueRequired".into(),
                            field: "metadata.name".into(),
                            message: "Required value: name or generateName is required".into(),
                        }],
                    ));
                }
            }
        }
        kinds::validate_name(res.name_rule, &name)
            .map_err(|c| Self::invalid(res, &name, vec![c]))?;
        if res.namespaced {
            meta.insert("namespace".into(), json!(ns));
        } else {
            meta.remove("namespace");
        }
        for f in [
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
        ] {
            meta.remove(f);
        }
        meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
        meta.insert("creationTimestamp".into(), json!(now()));
        if res.tracks_generation {
            meta.insert("generation".into(), json!(1));
        } else {
            meta.remove("generation");
        }
        meta.remove("managedFields");
        self.check_namespace(res, ns, &name)?;
        if self
            .lookup(res, if res.namespaced { ns } else { "" }, &name)
            .is_some()
        {
            return Err(ApiError::already_exists(&res.group, &res.plural, &name));
        }
        // Status is the subresource's, so a create resets it, as the real
        // server's strategies do, except for the two kinds whose create
        // sets it: namespaces (phase) and nodes. A built-in kind's status
        // becomes the zero value of its status struct, which keeps the
        // fields Go always writes (a StatefulSet's `replicas: 0`).
        if res.status_subresource && !matches!(res.special, Special::Namespace | Special::Node) {
            let status = kinds::initial_status(res, &body, &now());
            if let Value::Object(m) = &mut body {
                match status {
                    Some(status) => m.insert("status".into(), status),
                    None => m.remove("status"),
                };
            }
        }
        kinds::prepare_create(res, &mut body).map_err(|c| Self::invalid(res, &name, c))?;
        let crd = if res.special == Special::Crd {
            let crd = resource_from_crd(&body).map_err(|e| {
                Self::invalid(
                    res,
                    &name,
                    vec![Cause {
                        reason: "FieldValueInvalid".into(),
                        field: e.field().into(),
                        message: e.to_string(),
                    }],
                )
            })?;
            body["status"] = crd_status(&body);
            Some(crd)
        } else {
            None
        };
        Self::apply_schema(res, &name, &mut body, None)?;
        let causes = kinds::validate(res, &body, None);
        if !causes.is_empty() {
            return Err(Self::invalid(res, &name, causes));
        }
        if opts.dry_run {
            let mut probe = Allocators::default();
            kinds::on_create(res, &mut body, &mut probe)
                .map_err(|c| Self::invalid(res, &name, c))?;
            return Ok(Bytes::from(serde_json::to_vec(&body).unwrap_or_default()));
        }
        kinds::on_create(res, &mut body, &mut self.alloc)
            .map_err(|c| Self::invalid(res, &name, c))?;
        let body = match managed {
            Some(m) => {
                metadata_mut(&mut body).insert("managedFields".into(), m);
                body
            }
            None => semantics::record_update(None, &body, &opts.manager, &now(), None),
        };
        if let Some(crd) = crd {
            self.registry.insert(crd);
        }
        check_depth(&body)?;
        let scope_ns = if res.namespaced { ns } else { "" };
        Ok(self.commit(res, scope_ns, &name, EventType::Added, body))
    }

    /// Reads one object.
    pub fn get(&self, res: &Resource, ns: &str, name: &str) -> Result<Bytes, ApiError> {
        self.lookup(res, ns, name)
            .map(|s| convert::bytes_to_view(res, s.json.clone()))
            .ok_or_else(|| ApiError::not_found(&res.group, &res.plural, name))
    }

    /// Reads one object, parsed.
    pub fn get_value(&self, res: &Resource, ns: &str, name: &str) -> Result<Value, ApiError> {
        let stored = self
            .lookup(res, ns, name)
            .ok_or_else(|| ApiError::not_found(&res.group, &res.plural, name))?;
        Self::parse(stored).map(|v| convert::to_view(res, v))
    }

    /// Lists objects, optionally a page at a time.
    pub fn list(
        &self,
        res: &Resource,
        filter: &Filter,
        limit: Option<usize>,
        cont: Option<&str>,
    ) -> Result<ListPage, ApiError> {
        let (list_rv, after) = match cont {
            Some(token) if !token.is_empty() => {
                let (rv, after) = decode_continue(token)?;
                if rv < self.compacted {
                    return Err(ApiError::expired(
                        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
                    ));
                }
                (rv, Some(after))
            }
            _ => (self.rv, None),
        };
        let mut items = Vec::new();
        let mut last: Option<Key> = None;
        let mut remaining = 0;
        let limit = limit.filter(|l| *l > 0);
        if let Some(coll) = self.collection(res) {
            let range: Box<dyn Iterator<Item = (&Key, &Stored)>> = match &after {
                Some(k) => Box::new(coll.range((
                    std::ops::Bound::Excluded(k.clone()),
                    std::ops::Bound::Unbounded,
                ))),
                None => Box::new(coll.iter()),
            };
            for (key, stored) in range {
                if !filter.matches(&key.0, &stored.labels, || {
                    crate::json::parse(&stored.json).ok()
                }) {
                    continue;
                }
                if limit.is_some_and(|l| items.len() >= l) {
                    remaining += 1;
                    continue;
                }
                items.push(convert::bytes_to_view(res, stored.json.clone()));
                last = Some(key.clone());
            }
        }
        let continue_token = match (remaining, last) {
            (r, Some(last)) if r > 0 => Some(encode_continue(list_rv, &last)),
            _ => None,
        };
        Ok(ListPage {
            items,
            rv: list_rv,
            continue_token,
            remaining,
        })
    }

    /// Replaces an object (PUT), or its status.
    pub fn update(
        &mut self,
        res: &Arc<Resource>,
        ns: &str,
        name: &str,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        Self::check_identity(res, ns, &body)?;
        if let Some(body_name) = meta_str(&body, "name")
            && body_name != name
        {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        if let Some(storage) = self.storage_for(res)? {
            let body = convert::to_storage(res, body)?;
            let out = self.update(&storage, ns, name, body, opts)?;
            return Ok(convert::bytes_to_view(res, out));
        }
        let old = self.get_value(res, ns, name)?;
        check_resource_version(res, name, &body, &old)?;
        self.replace(res, ns, name, old, body, opts, None)
    }

    /// Applies a patch, or server-side apply (which may create).
    pub fn patch(
        &mut self,
        res: &Arc<Resource>,
        ns: &str,
        name: &str,
        kind: PatchKind,
        patch: &[u8],
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        if kind == PatchKind::Strategic && !res.strategic_merge {
            return Err(ApiError::unsupported_media_type(
                "application/strategic-merge-patch+json",
            ));
        }
        // A view patches (and applies to) the object as it serves it, and
        // stores the result converted back.
        let storage = self.storage_for(res)?;
        let served = storage.clone().unwrap_or_else(|| res.clone());
        let existing = self.lookup(res, ns, name).map(Self::parse).transpose()?;
        let existing_view = match &storage {
            Some(_) => existing.clone().map(|v| convert::to_view(res, v)),
            None => None,
        };
        let out = self.patch_at(
            res,
            &served,
            ns,
            name,
            kind,
            patch,
            opts,
            existing,
            existing_view,
        )?;
        Ok(convert::bytes_to_view(res, out))
    }

    /// The patch of [`Store::patch`]: `res` is the resource the request
    /// names, `storage` the one its objects are stored under (the same
    /// unless `res` is a view); `existing` is the stored object and
    /// `existing_view` its converted form for a view.
    #[allow(clippy::too_many_arguments)]
    fn patch_at(
        &mut self,
        res: &Arc<Resource>,
        storage: &Arc<Resource>,
        ns: &str,
        name: &str,
        kind: PatchKind,
        patch: &[u8],
        opts: &WriteOptions,
        existing: Option<Value>,
        existing_view: Option<Value>,
    ) -> Result<Bytes, ApiError> {
        let seen = existing_view.as_ref().or(existing.as_ref());
        if kind == PatchKind::Apply {
            if opts.manager.is_empty() {
                return Err(ApiError::bad_request(
                    "PATCH requests with apply-patch+yaml require fieldManager",
                ));
            }
            let applied = semantics::parse_apply_body(patch)?;
            Self::check_identity(res, ns, &applied)?;
            if let Some(n) = meta_str(&applied, "name")
                && n != name
            {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({n}) does not match the name on the URL ({name})"
                )));
            }
            // A resourceVersion in the apply configuration is a
            // precondition, as for any other write.
            if let Some(current) = seen {
                check_resource_version(res, name, &applied, current)?;
            }
            let mut applied = applied;
            if opts.status {
                // An apply to /status only touches status.
                if let Value::Object(m) = &mut applied {
                    m.retain(|k, _| {
                        matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "status")
                    });
                }
            } else if res.status_subresource
                // An apply that creates a Node keeps its status, as a create does.
                && !(seen.is_none() && res.special == Special::Node)
                && let Value::Object(m) = &mut applied
            {
                m.remove("status");
            }
            let Some(seen) = seen else {
                // Apply creates; the apply's ownership record is kept as is.
                let mut merged =
                    semantics::apply(None, &applied, &opts.manager, opts.force, &now())
                        .map_err(|e| semantics::apply_error(res, name, e))?;
                metadata_mut(&mut merged).insert("name".into(), json!(name));
                let managed = merged.pointer("/metadata/managedFields").cloned();
                let merged = convert::to_storage(res, merged)?;
                return self.create_inner(storage, ns, merged, opts, managed);
            };
            let mut merged =
                semantics::apply(Some(seen), &applied, &opts.manager, opts.force, &now())
                    .map_err(|e| semantics::apply_error(res, name, e))?;
            if opts.status {
                // Keep everything but status (and ownership) from the old object.
                let status = merged.get("status").cloned();
                let managed = merged.pointer("/metadata/managedFields").cloned();
                merged = seen.clone();
                match status {
                    Some(s) => merged["status"] = s,
                    None => {
                        if let Value::Object(m) = &mut merged {
                            m.remove("status");
                        }
                    }
                }
                if let Some(m) = managed {
                    metadata_mut(&mut merged).insert("managedFields".into(), m);
                }
            }
            let merged = convert::to_storage(res, merged)?;
            let Some(old) = existing else {
                return Err(ApiError::not_found(&res.group, &res.plural, name));
            };
            return self.replace(
                storage,
                ns,
                name,
                old,
                merged,
                &WriteOptions {
                    status: false,
                    ..opts.clone()
                },
                Some(()),
            );
        }
        let Some(seen) = seen else {
            return Err(ApiError::not_found(&res.group, &res.plural, name));
        };
        let patched = match kind {
            PatchKind::Merge => semantics::merge_patch(seen, patch)?,
            PatchKind::Json => semantics::json_patch(seen, patch)?,
            PatchKind::Strategic => semantics::strategic_patch(seen, patch)?,
            PatchKind::Apply => unreachable!("handled above"),
        };
        // A patch that sets resourceVersion is a precondition.
        check_resource_version(res, name, &patched, seen)?;
        if meta_str(&patched, "name") != Some(name) {
            return Err(ApiError::bad_request(
                "metadata.name may not be changed by a patch",
            ));
        }
        let patched = convert::to_storage(res, patched)?;
        let Some(old) = existing else {
            return Err(ApiError::not_found(&res.group, &res.plural, name));
        };
        self.replace(storage, ns, name, old, patched, opts, None)
    }

    /// The common tail of update and patch: subresource handling, identity
    /// carried over, kind rules, generation, finalizer-driven removal.
    #[allow(clippy::too_many_arguments)]
    fn replace(
        &mut self,
        res: &Arc<Resource>,
        ns: &str,
        name: &str,
        old: Value,
        mut new: Value,
        opts: &WriteOptions,
        applied: Option<()>,
    ) -> Result<Bytes, ApiError> {
        if !new.is_object() {
            return Err(ApiError::bad_request(
                "the body of the request must be a JSON object",
            ));
        }
        new["apiVersion"] = json!(res.api_version());
        new["kind"] = json!(res.kind);
        kinds::decode(res, &mut new)?;
        if opts.status {
            // Only status changes through /status.
            let status = new.get("status").cloned();
            new = old.clone();
            match status {
                Some(s) => new["status"] = s,
                None => {
                    if let Value::Object(m) = &mut new {
                        m.remove("status");
                    }
                }
            }
        } else if res.status_subresource {
            match old.get("status") {
                Some(s) => new["status"] = s.clone(),
                None => {
                    if let Value::Object(m) = &mut new {
                        m.remove("status");
                    }
                }
            }
        }
        // Identity and server-owned metadata come from the stored object.
        let old_meta = old.get("metadata").cloned().unwrap_or(json!({}));
        {
            let meta = metadata_mut(&mut new);
            for f in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
                "namespace",
                "name",
            ] {
                match old_meta.get(f) {
                    Some(v) => {
                        meta.insert(f.into(), v.clone());
                    }
                    None => {
                        meta.remove(f);
                    }
                }
            }
            meta.insert(
                "resourceVersion".into(),
                old_meta
                    .get("resourceVersion")
                    .cloned()
                    .unwrap_or(json!("")),
            );
            if applied.is_none() {
                meta.remove("managedFields");
            }
        }
        kinds::on_update(res, &old, &mut new).map_err(|c| Self::invalid(res, name, c))?;
        // A status write is validated against the whole schema too.
        Self::apply_schema(res, name, &mut new, Some(&old))?;
        if !opts.status {
            kinds::prepare_update(res, &old, &mut new);
            let causes = kinds::validate(res, &new, Some(&old));
            if !causes.is_empty() {
                return Err(Self::invalid(res, name, causes));
            }
        }
        if res.special == Special::Crd {
            let crd = resource_from_crd(&new).map_err(|e| {
                Self::invalid(
                    res,
                    name,
                    vec![Cause {
                        reason: "FieldValueInvalid".into(),
                        field: e.field().into(),
                        message: e.to_string(),
                    }],
                )
            })?;
            if !opts.dry_run {
                let served = self.registry.insert(crd);
                self.reread_with_schema(&served);
            }
        }
        if applied.is_none() {
            new = semantics::record_update(
                Some(&old),
                &new,
                &opts.manager,
                &now(),
                opts.status.then_some("status"),
            );
        }
        if res.tracks_generation && spec_part(&old) != spec_part(&new) {
            let g = old
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0)
                + 1;
            metadata_mut(&mut new).insert("generation".into(), json!(g));
        }
        if comparable(&old) == comparable(&new) {
            // A no-op write keeps the revision, as the real server does.
            return self.get(res, if res.namespaced { ns } else { "" }, name);
        }
        check_depth(&new)?;
        if opts.dry_run {
            return Ok(Bytes::from(serde_json::to_vec(&new).unwrap_or_default()));
        }
        let scope = if res.namespaced { ns } else { "" };
        let deleting = old.pointer("/metadata/deletionTimestamp").is_some();
        if deleting && !has_finalizers(&new) && !self.blocks_removal(res, &new) {
            return Ok(self.remove(res, scope, name, new));
        }
        let out = self.commit(res, scope, name, EventType::Modified, new);
        Ok(out)
    }

    /// A namespace is removed only when empty and its spec finalizers are
    /// gone; other objects only by their metadata finalizers.
    fn blocks_removal(&self, res: &Resource, obj: &Value) -> bool {
        if res.special != Special::Namespace {
            return false;
        }
        let ns = meta_str(obj, "name").unwrap_or_default();
        self.namespace_has_content(ns)
    }

    fn namespace_has_content(&self, ns: &str) -> bool {
        self.objects.values().any(|c| {
            c.range((Arc::from(ns), Arc::from(""))..)
                .next()
                .is_some_and(|((n, _), _)| &**n == ns)
        })
    }

    /// Removes an object for good and runs what follows: a Service's
    /// allocations return, a CRD's resources go, a terminating namespace
    /// that became empty goes.
    fn remove(&mut self, res: &Arc<Resource>, ns: &str, name: &str, obj: Value) -> Bytes {
        if res.special == Special::Service {
            self.alloc.release(&obj);
        }
        let out = self.commit(res, ns, name, EventType::Deleted, obj.clone());
        if res.special == Special::Crd
            && let Ok(crd) = resource_from_crd(&obj)
        {
            self.drop_resource(&crd);
        }
        if res.namespaced {
            self.maybe_finish_namespace(ns);
        }
        out
    }

    /// The stored objects of a custom resource as they read back after its
    /// CRD changed. The real server prunes and defaults whatever it reads
    /// from storage, so a default the schema gained shows on objects
    /// stored before it (with their resourceVersion, and no watch event);
    /// rewriting them here once is the same to every reader.
    fn reread_with_schema(&mut self, res: &Resource) {
        use kube_semantics::structural;
        let Some(schema) = res.schema.clone() else {
            return;
        };
        let Some(coll) = self.objects.get_mut(res.qualified().as_str()) else {
            return;
        };
        for stored in coll.values_mut() {
            let Ok(mut obj) = crate::json::parse(&stored.json) else {
                continue;
            };
            let before = obj.clone();
            structural::prune(&schema, &mut obj);
            structural::drop_non_nullable_nulls(&schema, &mut obj);
            structural::default(&schema, &mut obj);
            if obj != before {
                stored.json = Bytes::from(serde_json::to_vec(&obj).unwrap_or_default());
            }
        }
    }

    fn drop_resource(&mut self, crd: &Resource) {
        let Some(served) = self.registry.get(&crd.group, &crd.version, &crd.plural) else {
            return;
        };
        let keys: Vec<Key> = self
            .collection(&served)
            .map(|c| c.keys().cloned().collect())
            .unwrap_or_default();
        for (ns, name) in keys {
            if let Ok(obj) = self.get_value(&served, &ns, &name) {
                self.commit(&served, &ns, &name, EventType::Deleted, obj);
            }
        }
        self.objects.remove(served.qualified().as_str());
        self.registry.remove(&crd.group, &crd.version, &crd.plural);
    }

    fn maybe_finish_namespace(&mut self, ns: &str) {
        let Some(nsres) = self.registry.get("", "v1", "namespaces") else {
            return;
        };
        let Ok(obj) = self.get_value(&nsres, "", ns) else {
            return;
        };
        if obj.pointer("/metadata/deletionTimestamp").is_none() || self.namespace_has_content(ns) {
            return;
        }
        // The namespace controller removes the `kubernetes` finalizer once
        // the namespace is empty; other metadata finalizers still hold it.
        let mut obj = obj;
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("finalizers".into(), json!([]));
        }
        if has_finalizers(&obj) {
            self.commit(&nsres, "", ns, EventType::Modified, obj);
        } else {
            self.remove(&nsres, "", ns, obj);
        }
    }

    /// Deletes an object.
    pub fn delete(
        &mut self,
        res: &Arc<Resource>,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        if let Some(storage) = self.storage_for(res)? {
            return Ok(match self.delete(&storage, ns, name, opts)? {
                Deleted::Gone { status, object } => Deleted::Gone {
                    status,
                    object: convert::bytes_to_view(res, object),
                },
                Deleted::Pending(b) => Deleted::Pending(convert::bytes_to_view(res, b)),
            });
        }
        let old = self.get_value(res, ns, name)?;
        if let Some(uid) = &opts.uid {
            let actual = meta_str(&old, "uid").unwrap_or_default();
            if uid != actual {
                return Err(ApiError::conflict(
                    &res.group,
                    &res.plural,
                    name,
                    &format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}"
                    ),
                ));
            }
        }
        if let Some(rv) = &opts.resource_version {
            let actual = meta_str(&old, "resourceVersion").unwrap_or_default();
            if rv != actual {
                return Err(ApiError::conflict(
                    &res.group,
                    &res.plural,
                    name,
                    &format!(
                        "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {actual}"
                    ),
                ));
            }
        }
        let uid = meta_str(&old, "uid").unwrap_or_default().to_string();
        if res.special == Special::Crd && old.pointer("/metadata/deletionTimestamp").is_none() {
            return Ok(self.delete_crd(res, name, old, opts.dry_run));
        }
        let is_namespace = res.special == Special::Namespace;
        if has_finalizers(&old) || is_namespace {
            if old.pointer("/metadata/deletionTimestamp").is_some() {
                return Ok(Deleted::Pending(self.get(res, ns, name)?));
            }
            let mut obj = old;
            let meta = metadata_mut(&mut obj);
            meta.insert("deletionTimestamp".into(), json!(now()));
            meta.insert("deletionGracePeriodSeconds".into(), json!(0));
            if is_namespace {
                obj["status"] = json!({"phase": "Terminating"});
            }
            if opts.dry_run {
                // The real server runs the graceful-deletion update without
                // persisting it, so the answer shows the deletionTimestamp
                // the object would get.
                return Ok(Deleted::Pending(Bytes::from(
                    serde_json::to_vec(&obj).unwrap_or_default(),
                )));
            }
            let out = self.commit(res, ns, name, EventType::Modified, obj);
            if is_namespace {
                self.terminate_namespace(name);
                // The namespace may already be gone.
                return Ok(match self.get(res, "", name) {
                    Ok(b) => Deleted::Pending(b),
                    Err(_) => Deleted::Pending(out),
                });
            }
            return Ok(Deleted::Pending(out));
        }
        let status = success_status(&res.group, &res.plural, name, &uid);
        if opts.dry_run {
            let object = self.get(res, ns, name)?;
            return Ok(Deleted::Gone { status, object });
        }
        let object = self.remove(res, ns, name, old);
        Ok(Deleted::Gone { status, object })
    }

    /// A CRD's delete, as apiextensions answers it: the definition is
    /// marked (deletionTimestamp, the `customresourcecleanup` finalizer, a
    /// `Terminating` condition) and answered; the finalizing controller
    /// then removes its custom resources and the definition, which here
    /// happens at once, after the answer is built.
    fn delete_crd(
        &mut self,
        res: &Arc<Resource>,
        name: &str,
        old: Value,
        dry_run: bool,
    ) -> Deleted {
        const CLEANUP: &str = "customresourcecleanup.apiextensions.k8s.io";
        let mut obj = old;
        let stamp = now();
        let meta = metadata_mut(&mut obj);
        meta.insert("deletionTimestamp".into(), json!(stamp));
        meta.insert("deletionGracePeriodSeconds".into(), json!(0));
        let finalizers = meta.entry("finalizers").or_insert_with(|| json!([]));
        if let Some(list) = finalizers.as_array_mut()
            && !list.iter().any(|f| f == CLEANUP)
        {
            list.push(json!(CLEANUP));
        }
        let condition = json!({
            "type": "Terminating",
            "status": "True",
            "lastTransitionTime": stamp,
            "reason": "InstanceDeletionPending",
            "message": "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        });
        if !obj.get("status").is_some_and(Value::is_object) {
            obj["status"] = json!({});
        }
        let conditions = obj["status"]
            .as_object_mut()
            .map(|st| st.entry("conditions").or_insert_with(|| json!([])));
        if let Some(Value::Array(list)) = conditions {
            list.retain(|c| c.get("type").and_then(Value::as_str) != Some("Terminating"));
            list.push(condition);
        }
        if dry_run {
            return Deleted::Pending(Bytes::from(serde_json::to_vec(&obj).unwrap_or_default()));
        }
        let answer = self.commit(res, "", name, EventType::Modified, obj.clone());
        self.remove(res, "", name, obj);
        Deleted::Pending(answer)
    }

    /// Deletes everything inside a terminating namespace.
    fn terminate_namespace(&mut self, ns: &str) {
        let resources: Vec<Arc<Resource>> = self
            .registry
            .all()
            // A converted view shares its storage version's objects.
            .filter(|r| r.namespaced && r.stored_as.is_none())
            .cloned()
            .collect();
        for res in resources {
            let keys: Vec<Key> = self
                .collection(&res)
                .map(|c| c.keys().filter(|(n, _)| &**n == ns).cloned().collect())
                .unwrap_or_default();
            for (_, name) in keys {
                let _ = self.delete(&res, ns, &name, &DeleteOptions::default());
            }
        }
        self.maybe_finish_namespace(ns);
    }

    /// Deletes every object matching a filter; returns the deleted objects.
    pub fn delete_collection(
        &mut self,
        res: &Arc<Resource>,
        filter: &Filter,
        opts: &DeleteOptions,
    ) -> Result<Vec<Bytes>, ApiError> {
        let keys: Vec<Key> = self
            .collection(res)
            .map(|c| {
                c.iter()
                    .filter(|(k, s)| {
                        filter.matches(&k.0, &s.labels, || crate::json::parse(&s.json).ok())
                    })
                    .map(|(k, _)| k.clone())
                    .collect()
            })
            .unwrap_or_default();
        let mut out = Vec::new();
        for (ns, name) in keys {
            let before = self.get(res, &ns, &name)?;
            match self.delete(
                res,
                &ns,
                &name,
                &DeleteOptions {
                    uid: None,
                    resource_version: None,
                    dry_run: opts.dry_run,
                },
            )? {
                Deleted::Pending(b) => out.push(b),
                Deleted::Gone { .. } => out.push(before),
            }
        }
        Ok(out)
    }

    /// Starts a watch from a revision (`None`: from now, with the current
    /// objects as ADDED events first).
    pub fn watch(
        &self,
        res: &Resource,
        filter: &Filter,
        from: Option<u64>,
    ) -> Result<WatchStart, ApiError> {
        let rx = self.tx.subscribe();
        let resource = res.qualified();
        match from {
            None => {
                let mut initial = Vec::new();
                if let Some(coll) = self.collection(res) {
                    let resource: Arc<str> = Arc::from(resource.as_str());
                    for (key, stored) in coll {
                        if !filter.matches(&key.0, &stored.labels, || {
                            crate::json::parse(&stored.json).ok()
                        }) {
                            continue;
                        }
                        initial.push(Arc::new(Event {
                            rv: stored.rv,
                            resource: resource.clone(),
                            namespace: key.0.clone(),
                            kind: EventType::Added,
                            object: stored.json.clone(),
                            labels: stored.labels.clone(),
                            prev: None,
                            protobuf: std::sync::OnceLock::new(),
                        }));
                    }
                }
                Ok(WatchStart {
                    initial,
                    rx,
                    rv: self.rv,
                })
            }
            Some(rv) => {
                if rv < self.compacted {
                    return Err(ApiError::expired(format!(
                        "too old resource version: {rv} ({})",
                        self.compacted + 1
                    )));
                }
                let initial = self
                    .history
                    .iter()
                    .filter(|e| {
                        e.rv > rv && *e.resource == *resource && filter.deliver(e).is_some()
                    })
                    .cloned()
                    .collect();
                Ok(WatchStart {
                    initial,
                    rx,
                    rv: self.rv.max(rv),
                })
            }
        }
    }
}

/// An encoded object with its `resourceVersion` set to `rv`.
/// The deepest object the store keeps: the depth [`crate::json::parse`]
/// reads back. The real API server's decoder accepts 10,000 levels;
/// deeper objects are refused here rather than stored unreadable (an
/// object built by a patch or an apply can be deeper than any body sent).
pub(crate) const MAX_STORED_DEPTH: usize = crate::json::MAX_DEPTH;

/// Nesting depth of a value (a scalar is 0, `{}` and `[]` are 1), counted
/// without recursion.
pub(crate) fn depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((v, d)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Array(a) => Box::new(a.iter()),
            Value::Object(m) => Box::new(m.values()),
            _ => continue,
        };
        deepest = deepest.max(d + 1);
        stack.extend(children.map(|c| (c, d + 1)));
    }
    deepest
}

/// Refuses an object the store could not read back (see
/// [`MAX_STORED_DEPTH`]); managedFields count, as they are stored too.
fn check_depth(object: &Value) -> Result<(), ApiError> {
    let d = depth(object);
    if d > MAX_STORED_DEPTH {
        return Err(ApiError::bad_request(format!(
            "the object is nested {d} levels deep; kube-sandbox stores objects up to \
             {MAX_STORED_DEPTH} levels (a real API server accepts 10,000)"
        )));
    }
    Ok(())
}

fn with_revision(json: &Bytes, rv: u64) -> Bytes {
    match crate::json::parse(json) {
        Ok(mut v) => {
            metadata_mut(&mut v).insert("resourceVersion".into(), json!(rv.to_string()));
            serde_json::to_vec(&v)
                .map(Bytes::from)
                .unwrap_or_else(|_| json.clone())
        }
        Err(_) => json.clone(),
    }
}

fn crd_status(crd: &Value) -> Value {
    let names = crd.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let t = now();
    json!({
        "acceptedNames": names,
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": t},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": t},
        ],
        "storedVersions": crd.pointer("/spec/versions").and_then(Value::as_array).map(|v| {
            v.iter().filter(|x| x.get("storage").and_then(Value::as_bool) == Some(true)).filter_map(|x| x.get("name").cloned()).collect::<Vec<_>>()
        }).unwrap_or_default(),
    })
}

/// `prefix` plus five random lowercase alphanumerics, as the server does
/// for `generateName`.
fn generate_name(prefix: &str) -> String {
    use rand::Rng;
    // The real server's alphabet leaves out vowels and look-alikes so
    // generated names never spell words.
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    let suffix: String = (0..5)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect();
    format!("{prefix}{suffix}")
}

impl ApiError {
    /// Replaces the message.
    pub fn with_message(mut self, message: String) -> Self {
        self.message = message;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Packed labels answer every lookup as the map they came from.
        #[test]
        fn packed_labels_answer_like_the_map(
            map in proptest::collection::btree_map("[a-z./-]{0,8}", "[a-zA-Z0-9._-]{0,8}", 0..6),
            probe in "[a-z./-]{0,8}",
        ) {
            let labels = Labels::of(&json!({"metadata": {"labels": map}}));
            for (k, v) in &map {
                prop_assert_eq!(labels.get(k), Some(v.as_str()));
            }
            prop_assert_eq!(labels.get(&probe), map.get(&probe).map(String::as_str));
        }
    }

    #[test]
    fn labels_without_strings_are_empty() {
        for obj in [
            json!({}),
            json!({"metadata": {"labels": null}}),
            json!({"metadata": {"labels": {"a": 1}}}),
        ] {
            assert_eq!(Labels::of(&obj).get("a"), None);
        }
        let labels = Labels::of(&json!({"metadata": {"labels": {"a": "", "b": "x"}}}));
        assert_eq!(labels.get("a"), Some(""));
        assert_eq!(labels.get("b"), Some("x"));
        assert_eq!(labels.get(""), None);
    }

    #[test]
    fn depth_counts_containers_and_the_limit_is_what_the_store_reads_back() {
        assert_eq!(depth(&json!(1)), 0);
        assert_eq!(depth(&json!({})), 1);
        assert_eq!(depth(&json!({"a": [1, {"b": []}]})), 4);
        let nested = |n: usize| {
            let mut v = json!(1);
            for _ in 0..n {
                v = json!([v]);
            }
            v
        };
        for n in [MAX_STORED_DEPTH - 1, MAX_STORED_DEPTH, MAX_STORED_DEPTH + 1] {
            let v = nested(n);
            assert_eq!(depth(&v), n);
            let text = serde_json::to_vec(&v).unwrap();
            let reads_back = crate::json::parse(&text).is_ok();
            assert_eq!(reads_back, check_depth(&v).is_ok(), "depth {n}");
        }
    }
}
