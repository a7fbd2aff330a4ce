//! The copies of a kind by the namespace their
//! [`mirra_mirror::FOR_NAMESPACE_ANNOTATION`] names.
//!
//! Cluster-scoped copies have no namespace for the cache to group them by:
//! without this index, planning one namespace would read every copy of the
//! kind to find its own, about n² reads per full pass over n namespaces.
//! The index is kept in step with the cache on every watch event, so a plan
//! reads only the copies marked for its namespace.

use std::collections::{BTreeMap, BTreeSet};

use kube::runtime::watcher::Event;
use mirra_runtime::{Cache, Change, ObjectKey};

use super::{CachedCopy, for_namespace};

/// Cached copies by the namespace their mark names. Holds exactly the
/// objects of the cache whose mark is set and not empty.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct MarkIndex {
    /// Mark to the keys carrying it.
    by_mark: BTreeMap<String, BTreeSet<ObjectKey>>,
    /// Key to its mark: what to remove when the mark changes or the object
    /// goes, without reading the old object.
    mark_of: BTreeMap<ObjectKey, String>,
}

impl MarkIndex {
    /// The index of everything `cache` holds now: what the index kept in
    /// step must equal, and how tests seed a filled cache.
    #[cfg(test)]
    pub fn of(cache: &Cache<CachedCopy>) -> Self {
        let mut index = Self::default();
        for (key, obj) in cache.iter() {
            index.set(key, Some(obj));
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

    /// The keys of the copies marked for `namespace`, in key order.
    pub fn marked_for<'a>(&'a self, namespace: &str) -> impl Iterator<Item = &'a ObjectKey> + 'a {
        self.by_mark.get(namespace).into_iter().flatten()
    }
}

/// Folds a watch event into `cache` and keeps `index` in step with it.
///
/// Every key the event names, and every key it changed, is read back from
/// the cache after the fold rather than taken from the returned changes:
/// the cache stores an object whose resourceVersion it already holds
/// without reporting a change, and the index must still follow what the
/// cache holds.
pub fn apply_indexed(
    cache: &mut Cache<CachedCopy>,
    index: &mut MarkIndex,
    event: Event<CachedCopy>,
) -> Vec<Change<CachedCopy>> {
    let named = match &event {
        Event::InitApply(obj) | Event::Apply(obj) | Event::Delete(obj) => ObjectKey::of(obj),
        Event::Init | Event::InitDone => None,
    };
    let changes = cache.apply(event);
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

    fn object(namespace: Option<&str>, name: &str, mark: Option<&str>, version: u8) -> CachedCopy {
        let mut meta = json!({"name": name, "resourceVersion": version.to_string()});
        if let Some(ns) = namespace {
            meta["namespace"] = json!(ns);
        }
        if let Some(mark) = mark {
            meta["annotations"] = json!({mirra_mirror::FOR_NAMESPACE_ANNOTATION: mark});
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

    /// One watch event over a small set of names, namespaces, marks and
    /// versions, so that sequences revisit the same objects: a mark
    /// changed, removed, set on a version the cache already holds,
    /// relists that drop objects.
    fn event() -> impl Strategy<Value = Event<CachedCopy>> {
        let obj = (0..2usize, 0..3usize, 0..MARKS.len(), 0..3u8).prop_map(|(ns, name, mark, v)| {
            let namespace = [None, Some("x")][ns];
            object(namespace, ["p", "q", "r"][name], MARKS[mark], v)
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
