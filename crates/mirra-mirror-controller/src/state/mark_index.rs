//! The copies of a kind by the namespace their
//! [`mirra_mirror::FOR_NAMESPACE_ANNOTATION`] names, and how many copies
//! each owner has in each namespace.
//!
//! Cluster-scoped copies have no namespace for the cache to group them by:
//! without this index, planning one namespace would read every copy of the
//! kind to find its own, about n² reads per full pass over n namespaces.
//! The owner counts serve an edit of one SyncConfig: the namespaces holding
//! its copies, and whether a namespace holds copies of it beyond those its
//! items name, are then found without reading every copy. The index is kept
//! in step with the cache on every watch event, so a plan reads only the
//! copies it needs.

use std::collections::{BTreeMap, BTreeSet};

use kube::runtime::watcher::Event;
use mirra_runtime::{Cache, Change, ObjectKey};

use super::{CachedCopy, for_namespace};

/// Cached copies by the namespace their mark names, and the owner counts.
/// Holds exactly the objects of the cache whose mark is set and not empty,
/// and counts exactly the cached copies with an owner mark and a home.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct MarkIndex {
    /// Mark to the keys carrying it.
    by_mark: BTreeMap<String, BTreeSet<ObjectKey>>,
    /// Key to its mark: what to remove when the mark changes or the object
    /// goes, without reading the old object.
    mark_of: BTreeMap<ObjectKey, String>,
    /// Owner mark (`namespace/name` of a SyncConfig) to the copies it has
    /// in each home namespace (a namespaced copy's own, a cluster-scoped
    /// copy's mark). Counts only: the old object of every change is at
    /// hand when a count moves, and keys per copy would cost memory.
    owners: BTreeMap<String, BTreeMap<String, u32>>,
}

impl MarkIndex {
    /// The index of everything `cache` holds now: what the index kept in
    /// step must equal, and how tests seed a filled cache.
    #[cfg(test)]
    pub fn of(cache: &Cache<CachedCopy>) -> Self {
        let mut index = Self::default();
        for (key, obj) in cache.iter() {
            index.set(key, Some(obj));
            index.count(owner_home(key, Some(obj)), true);
        }
        index
    }

    /// Makes the entry of `key` match `obj`, the object the cache holds
    /// under that key now (`None`: it holds none).
    fn set(&mut self, key: &ObjectKey, obj: Option<&CachedCopy>) {
        let mark = obj.and_then(for_namespace);
        if self.mark_of.get(key) == mark.as_ref() {
            return;
        }
        if let Some(old) = self.mark_of.remove(key)
            && let Some(keys) = self.by_mark.get_mut(&old)
        {
            keys.remove(key);
            if keys.is_empty() {
                self.by_mark.remove(&old);
            }
        }
        if let Some(mark) = mark {
            self.by_mark
                .entry(mark.clone())
                .or_default()
                .insert(key.clone());
            self.mark_of.insert(key.clone(), mark);
        }
    }

    /// Counts a copy (owner, home) in (`add`) or out.
    fn count(&mut self, owned: Option<(&str, String)>, add: bool) {
        let Some((owner, home)) = owned else { return };
        if add {
            *self
                .owners
                .entry(owner.to_string())
                .or_default()
                .entry(home)
                .or_default() += 1;
            return;
        }
        let Some(homes) = self.owners.get_mut(owner) else {
            return;
        };
        if let Some(n) = homes.get_mut(&home) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                homes.remove(&home);
            }
        }
        if homes.is_empty() {
            self.owners.remove(owner);
        }
    }

    /// The keys of the copies marked for `namespace`, in key order.
    pub fn marked_for<'a>(&'a self, namespace: &str) -> impl Iterator<Item = &'a ObjectKey> + 'a {
        self.by_mark.get(namespace).into_iter().flatten()
    }

    /// The namespaces where `owner` (a SyncConfig as its owner mark reads)
    /// has copies, in order.
    pub fn homes_of<'a>(&'a self, owner: &str) -> impl Iterator<Item = &'a String> + 'a {
        self.owners.get(owner).into_iter().flat_map(BTreeMap::keys)
    }

    /// How many copies `owner` has in namespace `home`.
    pub fn owned_in(&self, owner: &str, home: &str) -> u32 {
        self.owners
            .get(owner)
            .and_then(|homes| homes.get(home))
            .copied()
            .unwrap_or(0)
    }
}

/// A copy's owner mark and home namespace, when it has both.
fn owner_home<'a>(key: &ObjectKey, obj: Option<&'a CachedCopy>) -> Option<(&'a str, String)> {
    let obj = obj?;
    let owner = obj
        .observed
        .annotations
        .get(mirra_mirror::OWNER_ANNOTATION)?;
    let home = key.namespace.clone().or_else(|| for_namespace(obj))?;
    Some((owner, home))
}

/// Folds a watch event into `cache` and keeps `index` in step with it.
///
/// Every key the event names, and every key it changed, is read back from
/// the cache after the fold rather than taken from the returned changes:
/// the cache stores an object whose resourceVersion it already holds
/// without reporting a change, and the index must still follow what the
/// cache holds. For the same reason the named key is counted out as the
/// cache held it before the fold, not as the change's old object says (a
/// delete of an object the cache never held reports one), and counted in
/// as it holds it after.
pub fn apply_indexed(
    cache: &mut Cache<CachedCopy>,
    index: &mut MarkIndex,
    event: Event<CachedCopy>,
) -> Vec<Change<CachedCopy>> {
    let named = match &event {
        Event::InitApply(obj) | Event::Apply(obj) | Event::Delete(obj) => ObjectKey::of(obj),
        Event::Init | Event::InitDone => None,
    };
    if let Some(key) = &named {
        index.count(owner_home(key, cache.get_key(key)), false);
    }
    let changes = cache.apply(event);
    if let Some(key) = &named {
        index.count(owner_home(key, cache.get_key(key)), true);
    }
    // Changes of other keys come from a relist's end: objects it no longer
    // lists, each the cache's own old object.
    for c in changes.iter().filter(|c| named.as_ref() != Some(&c.key)) {
        index.count(owner_home(&c.key, c.old.as_ref()), false);
        index.count(owner_home(&c.key, cache.get_key(&c.key)), true);
    }
    for key in named.iter().chain(changes.iter().map(|c| &c.key)) {
        index.set(key, cache.get_key(key));
    }
    changes
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const MARKS: [Option<&str>; 4] = [None, Some(""), Some("a"), Some("b")];
    const OWNERS: [Option<&str>; 3] = [None, Some("ops/one"), Some("ops/two")];

    fn object(namespace: Option<&str>, name: &str, mark: Option<&str>, version: u8) -> CachedCopy {
        owned(namespace, name, mark, None, version)
    }

    fn owned(
        namespace: Option<&str>,
        name: &str,
        mark: Option<&str>,
        owner: Option<&str>,
        version: u8,
    ) -> CachedCopy {
        let mut meta = json!({"name": name, "resourceVersion": version.to_string(),
            "annotations": {}});
        if let Some(ns) = namespace {
            meta["namespace"] = json!(ns);
        }
        if let Some(mark) = mark {
            meta["annotations"][mirra_mirror::FOR_NAMESPACE_ANNOTATION] = json!(mark);
        }
        if let Some(owner) = owner {
            meta["annotations"][mirra_mirror::OWNER_ANNOTATION] = json!(owner);
        }
        let obj: kube::api::DynamicObject =
            serde_json::from_value(json!({"apiVersion": "v1", "kind": "X", "metadata": meta}))
                .unwrap();
        let ar = kube::api::ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        CachedCopy::new(obj, &ar).unwrap()
    }

    /// What the index replaces: a scan of the whole cache.
    fn scan(cache: &Cache<CachedCopy>, namespace: &str) -> Vec<ObjectKey> {
        cache
            .iter()
            .filter(|(_, o)| for_namespace(o).as_deref() == Some(namespace))
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// What the owner counts replace: the homes of `owner`'s copies, and
    /// how many it has in each, by reading every copy.
    fn owner_scan(cache: &Cache<CachedCopy>, owner: &str) -> (Vec<String>, BTreeMap<String, u32>) {
        let mut counts: BTreeMap<String, u32> = BTreeMap::new();
        for (key, obj) in cache.iter() {
            if obj.observed.annotations.get(mirra_mirror::OWNER_ANNOTATION) != Some(owner) {
                continue;
            }
            let home = match &key.namespace {
                Some(ns) => Some(ns.clone()),
                None => for_namespace(obj),
            };
            if let Some(home) = home {
                *counts.entry(home).or_default() += 1;
            }
        }
        (counts.keys().cloned().collect(), counts)
    }

    /// One watch event over a small set of names, namespaces, marks and
    /// versions, so that sequences revisit the same objects: a mark
    /// changed, removed, set on a version the cache already holds,
    /// relists that drop objects.
    fn event() -> impl Strategy<Value = Event<CachedCopy>> {
        let obj = (
            0..3usize,
            0..3usize,
            0..MARKS.len(),
            0..OWNERS.len(),
            0..3u8,
        )
            .prop_map(|(ns, name, mark, owner, v)| {
                let namespace = [None, Some("x"), Some("y")][ns];
                owned(
                    namespace,
                    ["p", "q", "r"][name],
                    MARKS[mark],
                    OWNERS[owner],
                    v,
                )
            });
        prop_oneof![
            Just(Event::Init),
            Just(Event::InitDone),
            obj.clone().prop_map(Event::InitApply),
            obj.clone().prop_map(Event::Apply),
            obj.prop_map(Event::Delete),
        ]
    }

    proptest! {
        #[test]
        fn index_equals_scan(events in proptest::collection::vec(event(), 0..40)) {
            let mut cache = Cache::new();
            let mut index = MarkIndex::default();
            for e in events {
                apply_indexed(&mut cache, &mut index, e);
                for ns in ["a", "b", "", "x"] {
                    let indexed: Vec<ObjectKey> = index.marked_for(ns).cloned().collect();
                    prop_assert_eq!(indexed, scan(&cache, ns));
                }
                for owner in OWNERS.iter().flatten() {
                    let (homes, counts) = owner_scan(&cache, owner);
                    let indexed: Vec<String> = index.homes_of(owner).cloned().collect();
                    prop_assert_eq!(indexed, homes);
                    for (home, n) in counts {
                        prop_assert_eq!(index.owned_in(owner, &home), n);
                    }
                }
                // No stale entry either: the same as an index built afresh.
                prop_assert_eq!(&index, &MarkIndex::of(&cache));
            }
        }
    }

    #[test]
    fn mark_moved_then_deleted() {
        let mut cache = Cache::new();
        let mut index = MarkIndex::default();
        apply_indexed(
            &mut cache,
            &mut index,
            Event::Apply(object(None, "p", Some("a"), 1)),
        );
        assert_eq!(index.marked_for("a").count(), 1);
        apply_indexed(
            &mut cache,
            &mut index,
            Event::Apply(object(None, "p", Some("b"), 2)),
        );
        assert_eq!(index.marked_for("a").count(), 0);
        assert_eq!(index.marked_for("b").count(), 1);
        apply_indexed(
            &mut cache,
            &mut index,
            Event::Delete(object(None, "p", Some("b"), 2)),
        );
        assert_eq!(index, MarkIndex::default());
    }
}
