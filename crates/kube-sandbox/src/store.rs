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

mod delete;
mod read;
mod snapshot;
mod write;

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
    /// The client takes its answer in protobuf: the write's event gets its
    /// frame at commit, from the object in hand, instead of from a parse of
    /// the stored JSON when the answer is encoded.
    pub protobuf: bool,
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

    /// Every stored object of `group`/`plural`, in namespace `ns` (or in
    /// all), parsed: the authorizer reads the RBAC objects this way.
    pub fn objects_of(&self, group: &str, plural: &str, ns: Option<&str>) -> Vec<Value> {
        let qualified = crate::status::qualified(group, plural);
        let Some(coll) = self.objects.get(qualified.as_str()) else {
            return Vec::new();
        };
        coll.iter()
            .filter(|((o_ns, _), _)| ns.is_none_or(|n| **o_ns == *n))
            .filter_map(|(_, stored)| Self::parse(stored).ok())
            .collect()
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
        protobuf: bool,
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
        let frame = std::sync::OnceLock::new();
        if protobuf {
            let _ = frame.set(crate::protobuf::Frame::of_value(kind.as_str(), &obj));
        }
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
            protobuf: frame,
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
        let causes = errors.into_iter().map(Cause::from).collect();
        Err(Self::invalid(res, name, causes))
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

impl ApiError {
    /// Replaces the message.
    pub fn with_message(mut self, message: String) -> Self {
        self.message = message;
        self
    }
}

#[cfg(test)]
mod tests;
