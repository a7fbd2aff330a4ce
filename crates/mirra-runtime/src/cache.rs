//! A synchronous object index fed by kube-runtime watcher events.
//!
//! ```text
//! watcher stream ──Event──► Cache::apply ──► Vec<Change{old, new}> ──► keys
//!                              │
//!                              └─► map (namespace, name) -> object
//! ```
//!
//! The caller owns the stream; this type only folds events into a map and
//! reports, for each event, what an object was before and after. A
//! controller computes the keys an event touches from BOTH states: a
//! SyncConfig whose selector changed touches the namespaces the old
//! selector matched and those the new one matches.
//!
//! A relist (`Init`, `InitApply`..., `InitDone`, sent at start and after a
//! watch expired with 410 Gone) is applied object by object, so the map
//! stays complete (if partly stale) throughout; at `InitDone` every object
//! that was not listed again is removed and reported as a deletion, because
//! it was deleted while the watch was down.
//!
//! Unchanged objects produce no change: an event whose object has the same
//! `resourceVersion` as the cached one (common on relists) is not reported,
//! so a relist of an idle cluster makes no work.
//!
//! It must NOT: do I/O, hold locks, spawn tasks, or interpret objects
//! beyond their identity and resourceVersion.
//!
//! Any Kubernetes object can be cached as it comes; a controller that needs
//! less than the whole object caches its own compact form instead (see
//! [`Cached`]), converted once per event rather than once per read.

use std::collections::{BTreeMap, BTreeSet};

use kube::Resource;
use kube::runtime::watcher::Event;

/// Identity of a cached object: namespace (None for cluster-scoped) and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// Namespace, or `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// `metadata.name`.
    pub name: String,
}

impl ObjectKey {
    /// The key of `obj`, or `None` if it has no name (malformed input).
    pub fn of<K: Cached>(obj: &K) -> Option<Self> {
        obj.cache_key()
    }
}

/// What the cache reads of an object: its identity and its version.
/// Every Kubernetes object is one; a compact form a controller keeps
/// instead of the whole object implements it itself.
pub trait Cached: Clone {
    /// The object's key, `None` when it has no name (malformed input).
    fn cache_key(&self) -> Option<ObjectKey>;
    /// `metadata.resourceVersion`, if the object has one.
    fn cache_version(&self) -> Option<&str>;
}

impl<K: Resource + Clone> Cached for K {
    fn cache_key(&self) -> Option<ObjectKey> {
        let meta = self.meta();
        let name = meta.name.clone().filter(|n| !n.is_empty())?;
        Some(ObjectKey {
            namespace: meta.namespace.clone(),
            name,
        })
    }

    fn cache_version(&self) -> Option<&str> {
        self.meta().resource_version.as_deref()
    }
}

/// An [`ObjectKey`] by its parts, borrowed: look-ups by `(namespace,
/// name)` need no owned key (two allocations each; a SyncConfig edit looks
/// up a copy per selected namespace).
trait KeyParts {
    fn parts(&self) -> (Option<&str>, &str);
}

impl KeyParts for ObjectKey {
    fn parts(&self) -> (Option<&str>, &str) {
        (self.namespace.as_deref(), &self.name)
    }
}

impl KeyParts for (Option<&str>, &str) {
    fn parts(&self) -> (Option<&str>, &str) {
        *self
    }
}

impl<'a> std::borrow::Borrow<dyn KeyParts + 'a> for ObjectKey {
    fn borrow(&self) -> &(dyn KeyParts + 'a) {
        self
    }
}

// The order must be `ObjectKey`'s derived one (namespace, then name), as
// `Borrow` requires: `Option<String>` and `Option<&str>` order alike.
impl PartialEq for dyn KeyParts + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}

impl Eq for dyn KeyParts + '_ {}

impl PartialOrd for dyn KeyParts + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for dyn KeyParts + '_ {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.parts().cmp(&other.parts())
    }
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{ns}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// The same watcher event with its object turned into `f`'s form: how a
/// controller caching a compact form of a kind (see [`Cached`]) feeds the
/// watch of the whole kind into its [`Cache`].
pub fn map_event<A, B>(event: Event<A>, f: impl FnOnce(A) -> B) -> Event<B> {
    match event {
        Event::Apply(o) => Event::Apply(f(o)),
        Event::Delete(o) => Event::Delete(f(o)),
        Event::InitApply(o) => Event::InitApply(f(o)),
        Event::Init => Event::Init,
        Event::InitDone => Event::InitDone,
    }
}

/// What one event did to one object.
#[derive(Debug, Clone, PartialEq)]
pub struct Change<K> {
    /// Which object.
    pub key: ObjectKey,
    /// The cached object before the event (`None` when it is new).
    pub old: Option<K>,
    /// The object after the event (`None` when it was deleted).
    pub new: Option<K>,
}

impl<K> Change<K> {
    /// True when the object did not exist before.
    pub fn is_create(&self) -> bool {
        self.old.is_none()
    }

    /// True when the object no longer exists.
    pub fn is_delete(&self) -> bool {
        self.new.is_none()
    }
}

/// The map of objects of one kind, with the state of its initial list.
#[derive(Debug, Clone)]
pub struct Cache<K> {
    objects: BTreeMap<ObjectKey, K>,
    /// Keys listed so far in the current relist; `Some` between `Init` and
    /// `InitDone`.
    relisting: Option<BTreeSet<ObjectKey>>,
    initial_list_done: bool,
    skipped_malformed: u64,
}

impl<K> Default for Cache<K> {
    fn default() -> Self {
        Self {
            objects: BTreeMap::new(),
            relisting: None,
            initial_list_done: false,
            skipped_malformed: 0,
        }
    }
}

fn same_version<K: Cached>(a: &K, b: &K) -> bool {
    match (a.cache_version(), b.cache_version()) {
        (Some(x), Some(y)) => !x.is_empty() && x == y,
        _ => false,
    }
}

impl<K: Cached> Cache<K> {
    /// An empty cache that has not seen its initial list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Folds one watcher event into the map and returns what changed.
    pub fn apply(&mut self, event: Event<K>) -> Vec<Change<K>> {
        match event {
            Event::Init => {
                self.relisting = Some(BTreeSet::new());
                Vec::new()
            }
            Event::InitApply(obj) | Event::Apply(obj) => self.upsert(obj).into_iter().collect(),
            Event::Delete(obj) => self.remove(obj).into_iter().collect(),
            Event::InitDone => self.finish_relist(),
        }
    }

    fn key_of(&mut self, obj: &K) -> Option<ObjectKey> {
        let key = ObjectKey::of(obj);
        if key.is_none() {
            // A watch never sends these from a real server; count and skip
            // rather than index an object no key could address.
            self.skipped_malformed += 1;
            tracing::warn!("skipping watched object without a name");
        }
        key
    }

    fn upsert(&mut self, obj: K) -> Option<Change<K>> {
        let key = self.key_of(&obj)?;
        if let Some(seen) = &mut self.relisting {
            seen.insert(key.clone());
        }
        let old = self.objects.insert(key.clone(), obj.clone());
        if old.as_ref().is_some_and(|o| same_version(o, &obj)) {
            return None;
        }
        Some(Change {
            key,
            old,
            new: Some(obj),
        })
    }

    fn remove(&mut self, obj: K) -> Option<Change<K>> {
        let key = self.key_of(&obj)?;
        if let Some(seen) = &mut self.relisting {
            seen.remove(&key);
        }
        // The event carries the final state; if the cache never saw the
        // object (deleted right after creation, between relists), that
        // final state is still the best "old" to compute keys from.
        let old = self.objects.remove(&key).unwrap_or(obj);
        Some(Change {
            key,
            old: Some(old),
            new: None,
        })
    }

    fn finish_relist(&mut self) -> Vec<Change<K>> {
        let Some(seen) = self.relisting.take() else {
            // InitDone without Init: nothing was being relisted, so nothing
            // can be known to be gone.
            self.initial_list_done = true;
            return Vec::new();
        };
        let gone: Vec<ObjectKey> = self
            .objects
            .keys()
            .filter(|k| !seen.contains(*k))
            .cloned()
            .collect();
        self.initial_list_done = true;
        gone.into_iter()
            .filter_map(|key| {
                let old = self.objects.remove(&key)?;
                Some(Change {
                    key,
                    old: Some(old),
                    new: None,
                })
            })
            .collect()
    }

    /// True once the first complete list arrived. Stays true during later
    /// relists: the map is then stale for a moment, but complete.
    pub fn initial_list_done(&self) -> bool {
        self.initial_list_done
    }

    /// True between `Init` and `InitDone`.
    pub fn is_relisting(&self) -> bool {
        self.relisting.is_some()
    }

    /// The cached object, if any.
    pub fn get(&self, namespace: Option<&str>, name: &str) -> Option<&K> {
        self.objects.get(&(namespace, name) as &dyn KeyParts)
    }

    /// The cached object by key.
    pub fn get_key(&self, key: &ObjectKey) -> Option<&K> {
        self.objects.get(key)
    }

    /// The cached object by key, to update what the caller keeps beside
    /// the object (never its identity or version: the next event replaces
    /// the entry whole).
    pub fn get_key_mut(&mut self, key: &ObjectKey) -> Option<&mut K> {
        self.objects.get_mut(key)
    }

    /// All objects in `namespace`, ordered by name.
    pub fn in_namespace<'a>(&'a self, namespace: &'a str) -> impl Iterator<Item = &'a K> + 'a {
        let start = ObjectKey {
            namespace: Some(namespace.to_owned()),
            name: String::new(),
        };
        self.objects
            .range(start..)
            .take_while(move |(k, _)| k.namespace.as_deref() == Some(namespace))
            .map(|(_, v)| v)
    }

    /// All objects, ordered by (namespace, name).
    pub fn iter(&self) -> impl Iterator<Item = (&ObjectKey, &K)> {
        self.objects.iter()
    }

    /// Number of cached objects.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// True when nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// Events skipped because their object had no name.
    pub fn skipped_malformed(&self) -> u64 {
        self.skipped_malformed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use kube::api::ObjectMeta;
    use proptest::prelude::*;

    fn cm(ns: &str, name: &str, rv: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                namespace: Some(ns.into()),
                name: Some(name.into()),
                resource_version: Some(rv.into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn rv(o: &Option<ConfigMap>) -> Option<&str> {
        o.as_ref()
            .and_then(|o| o.metadata.resource_version.as_deref())
    }

    #[test]
    fn initial_list_then_watch_events() {
        let mut c = Cache::new();
        assert!(!c.initial_list_done());
        assert!(c.apply(Event::Init).is_empty());
        assert!(c.is_relisting());
        let ch = c.apply(Event::InitApply(cm("a", "x", "1")));
        assert_eq!(ch.len(), 1);
        assert!(ch[0].is_create());
        c.apply(Event::InitApply(cm("a", "y", "2")));
        assert!(!c.initial_list_done(), "not done before InitDone");
        assert!(c.apply(Event::InitDone).is_empty());
        assert!(c.initial_list_done() && !c.is_relisting());
        assert_eq!(c.len(), 2);

        let ch = c.apply(Event::Apply(cm("a", "x", "3")));
        assert_eq!((rv(&ch[0].old), rv(&ch[0].new)), (Some("1"), Some("3")));
        assert_eq!(
            c.get(Some("a"), "x")
                .unwrap()
                .metadata
                .resource_version
                .as_deref(),
            Some("3")
        );

        let ch = c.apply(Event::Delete(cm("a", "y", "4")));
        assert!(ch[0].is_delete());
        assert_eq!(rv(&ch[0].old), Some("2"), "old is the cached state");
        assert!(c.get(Some("a"), "y").is_none());
    }

    #[test]
    fn same_resource_version_is_not_a_change() {
        let mut c = Cache::new();
        c.apply(Event::Apply(cm("a", "x", "1")));
        assert!(c.apply(Event::Apply(cm("a", "x", "1"))).is_empty());
        // Without a resourceVersion nothing can be assumed equal.
        let mut bare = cm("a", "z", "");
        bare.metadata.resource_version = None;
        c.apply(Event::Apply(bare.clone()));
        assert_eq!(c.apply(Event::Apply(bare)).len(), 1);
    }

    #[test]
    fn relist_reports_objects_deleted_while_the_watch_was_down() {
        let mut c = Cache::new();
        c.apply(Event::Init);
        for (n, v) in [("x", "1"), ("y", "2"), ("z", "3")] {
            c.apply(Event::InitApply(cm("a", n, v)));
        }
        c.apply(Event::InitDone);

        // Watch expires; relist: y changed, z gone, w new, x untouched.
        c.apply(Event::Init);
        assert!(c.initial_list_done(), "still complete during a relist");
        assert_eq!(c.len(), 3, "old contents served during the relist");
        assert!(c.apply(Event::InitApply(cm("a", "x", "1"))).is_empty());
        let y = c.apply(Event::InitApply(cm("a", "y", "5")));
        assert_eq!((rv(&y[0].old), rv(&y[0].new)), (Some("2"), Some("5")));
        let w = c.apply(Event::InitApply(cm("a", "w", "6")));
        assert!(w[0].is_create());
        let done = c.apply(Event::InitDone);
        assert_eq!(done.len(), 1);
        assert_eq!(
            done[0].key,
            ObjectKey {
                namespace: Some("a".into()),
                name: "z".into()
            }
        );
        assert_eq!(rv(&done[0].old), Some("3"));
        assert!(done[0].is_delete());
        let names: Vec<_> = c.iter().map(|(k, _)| k.name.as_str()).collect();
        assert_eq!(names, ["w", "x", "y"]);
    }

    #[test]
    fn delete_of_unknown_object_reports_event_state() {
        let mut c: Cache<ConfigMap> = Cache::new();
        let ch = c.apply(Event::Delete(cm("a", "ghost", "9")));
        assert_eq!(rv(&ch[0].old), Some("9"));
        assert!(c.is_empty());
    }

    #[test]
    fn map_event_keeps_the_variant_and_converts_the_object() {
        let name = |c: ConfigMap| c.metadata.name.unwrap_or_default();
        assert!(matches!(
            map_event(Event::Apply(cm("a", "x", "1")), name),
            Event::Apply(n) if n == "x"
        ));
        assert!(matches!(
            map_event(Event::InitApply(cm("a", "y", "1")), name),
            Event::InitApply(n) if n == "y"
        ));
        assert!(matches!(
            map_event(Event::Delete(cm("a", "z", "1")), name),
            Event::Delete(n) if n == "z"
        ));
        assert!(matches!(map_event(Event::Init, name), Event::Init));
        assert!(matches!(map_event(Event::InitDone, name), Event::InitDone));
    }

    #[test]
    fn malformed_objects_are_skipped_without_panic() {
        let mut c: Cache<ConfigMap> = Cache::new();
        let mut nameless = cm("a", "", "1");
        assert!(c.apply(Event::Apply(nameless.clone())).is_empty());
        nameless.metadata.name = None;
        assert!(c.apply(Event::InitApply(nameless.clone())).is_empty());
        assert!(c.apply(Event::Delete(nameless)).is_empty());
        assert_eq!(c.skipped_malformed(), 3);
        assert!(c.is_empty());
        // InitDone without Init.
        assert!(c.apply(Event::InitDone).is_empty());
        assert!(c.initial_list_done());
    }

    #[test]
    fn cluster_scoped_and_namespace_queries() {
        let mut ns: Cache<Namespace> = Cache::new();
        ns.apply(Event::Apply(Namespace {
            metadata: ObjectMeta {
                name: Some("team-a".into()),
                ..Default::default()
            },
            ..Default::default()
        }));
        assert!(ns.get(None, "team-a").is_some());
        assert_eq!(
            ObjectKey::of(ns.get(None, "team-a").unwrap())
                .unwrap()
                .to_string(),
            "team-a"
        );

        let mut c = Cache::new();
        for (n, name) in [("a", "1"), ("ab", "2"), ("a", "3"), ("b", "4")] {
            c.apply(Event::Apply(cm(n, name, "1")));
        }
        let in_a: Vec<_> = c
            .in_namespace("a")
            .map(|o| o.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(in_a, ["1", "3"]);
        assert_eq!(c.in_namespace("zz").count(), 0);
    }

    #[derive(Debug, Clone)]
    enum Ev {
        Apply(u8, u8),
        Delete(u8),
        Relist(Vec<(u8, u8)>),
    }

    fn ev() -> impl Strategy<Value = Ev> {
        prop_oneof![
            (0u8..6, 0u8..4).prop_map(|(n, v)| Ev::Apply(n, v)),
            (0u8..6).prop_map(Ev::Delete),
            proptest::collection::vec((0u8..6, 0u8..4), 0..6).prop_map(Ev::Relist),
        ]
    }

    proptest! {
        /// The borrowed look-up by parts finds exactly what a look-up by an
        /// owned key finds, cluster-scoped keys (no namespace) included:
        /// its order agrees with `ObjectKey`'s.
        #[test]
        fn lookup_by_parts_agrees_with_owned_keys(
            stored in proptest::collection::btree_set((proptest::option::of("[ab]{0,2}"), "[ab]{0,2}"), 0..12),
            probe in (proptest::option::of("[ab]{0,2}"), "[ab]{0,2}"),
        ) {
            let mut objects: BTreeMap<ObjectKey, ConfigMap> = BTreeMap::new();
            for (i, (namespace, name)) in stored.iter().enumerate() {
                let key = ObjectKey { namespace: namespace.clone(), name: name.clone() };
                objects.insert(key, cm("", "", &i.to_string()));
            }
            let cache = Cache { objects: objects.clone(), ..Cache::default() };
            let owned = ObjectKey { namespace: probe.0.clone(), name: probe.1.clone() };
            prop_assert_eq!(cache.get(probe.0.as_deref(), &probe.1), objects.get(&owned));
        }
    }

    proptest! {
        /// Replaying the reported changes onto a plain map reproduces the
        /// cache exactly, and after a relist the cache equals what was
        /// listed: no deletion is ever lost.
        #[test]
        fn changes_reconstruct_the_cache(events in proptest::collection::vec(ev(), 0..40)) {
            let mut cache = Cache::new();
            let mut replica: BTreeMap<ObjectKey, String> = BTreeMap::new();
            let feed = |cache: &mut Cache<ConfigMap>, e: Event<ConfigMap>, replica: &mut BTreeMap<ObjectKey, String>| {
                for ch in cache.apply(e) {
                    match &ch.new {
                        Some(o) => { replica.insert(ch.key.clone(), o.metadata.resource_version.clone().unwrap()); }
                        None => { replica.remove(&ch.key); }
                    }
                }
            };
            for e in events {
                match e {
                    Ev::Apply(n, v) => feed(&mut cache, Event::Apply(cm("ns", &n.to_string(), &v.to_string())), &mut replica),
                    Ev::Delete(n) => feed(&mut cache, Event::Delete(cm("ns", &n.to_string(), "0")), &mut replica),
                    Ev::Relist(items) => {
                        feed(&mut cache, Event::Init, &mut replica);
                        let mut listed = BTreeMap::new();
                        for (n, v) in items {
                            listed.insert(n, v);
                            feed(&mut cache, Event::InitApply(cm("ns", &n.to_string(), &v.to_string())), &mut replica);
                        }
                        feed(&mut cache, Event::InitDone, &mut replica);
                        let names: BTreeSet<String> = cache.iter().map(|(k, _)| k.name.clone()).collect();
                        let want: BTreeSet<String> = listed.keys().map(|n| n.to_string()).collect();
                        prop_assert_eq!(names, want);
                    }
                }
                let actual: BTreeMap<ObjectKey, String> = cache
                    .iter()
                    .map(|(k, o)| (k.clone(), o.metadata.resource_version.clone().unwrap()))
                    .collect();
                prop_assert_eq!(&actual, &replica);
            }
        }
    }
}
