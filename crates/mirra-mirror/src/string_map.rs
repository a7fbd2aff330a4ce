//! [`StringMap`]: an object's labels or annotations as the caches keep
//! them, every key and value in one buffer.
//!
//! A controller caching 40,000 copies holds 80,000 of these maps, almost
//! all with one to four entries. A `BTreeMap<String, String>` spends a
//! node of eleven slots (about 550 bytes) plus two allocations per entry on
//! that; this map spends one buffer of the text and one of its bounds.
//! It is read often (marks, `holds`) and never changed in place: a change
//! of the object is a new map.
//!
//! What this module must NOT do: know what any key means (the marks do).

use std::collections::BTreeMap;
use std::fmt;

/// A read-only map from string to string, ordered by key as a
/// `BTreeMap<String, String>` is (byte order), so iterating it gives the
/// same sequence. Built with `collect` or `From`; a later duplicate key
/// replaces an earlier one, as repeated `BTreeMap::insert`s would.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct StringMap {
    /// Key 0, value 0, key 1, value 1, ... back to back.
    text: Box<str>,
    /// Where each key and each value ends in `text`: `2 * len` bounds.
    ends: Box<[usize]>,
}

impl StringMap {
    /// An empty map (no allocation).
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.ends.len() / 2
    }

    /// Whether the map has no entry.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn part(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        // Bounds are made by `from_sorted` on char boundaries of `text`.
        self.text.get(start..self.ends[i]).unwrap_or_default()
    }

    fn key_at(&self, entry: usize) -> &str {
        self.part(2 * entry)
    }

    fn value_at(&self, entry: usize) -> &str {
        self.part(2 * entry + 1)
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.key_at(mid).cmp(key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(self.value_at(mid)),
            }
        }
        None
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The entries in key order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        (0..self.len()).map(|i| (self.key_at(i), self.value_at(i)))
    }

    /// The keys in order.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        (0..self.len()).map(|i| self.key_at(i))
    }

    /// The entries as an ordinary map.
    pub fn to_btree(&self) -> BTreeMap<String, String> {
        self.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Packs entries already sorted by key, without duplicates.
    fn from_sorted<'a>(entries: impl Iterator<Item = (&'a str, &'a str)> + Clone) -> Self {
        let size: usize = entries.clone().map(|(k, v)| k.len() + v.len()).sum();
        let mut text = String::with_capacity(size);
        let mut ends = Vec::with_capacity(2 * entries.clone().count());
        for (k, v) in entries {
            text.push_str(k);
            ends.push(text.len());
            text.push_str(v);
            ends.push(text.len());
        }
        StringMap {
            text: text.into_boxed_str(),
            ends: ends.into_boxed_slice(),
        }
    }
}

impl<K: AsRef<str>, V: AsRef<str>> FromIterator<(K, V)> for StringMap {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut entries: Vec<(K, V)> = iter.into_iter().collect();
        // Stable: among equal keys the last one given stays last, and the
        // dedup below keeps it.
        entries.sort_by(|a, b| a.0.as_ref().cmp(b.0.as_ref()));
        let mut kept: Vec<(&str, &str)> = Vec::with_capacity(entries.len());
        for (k, v) in &entries {
            match kept.last_mut() {
                Some(last) if last.0 == k.as_ref() => last.1 = v.as_ref(),
                _ => kept.push((k.as_ref(), v.as_ref())),
            }
        }
        Self::from_sorted(kept.iter().copied())
    }
}

impl From<BTreeMap<String, String>> for StringMap {
    fn from(map: BTreeMap<String, String>) -> Self {
        Self::from_sorted(map.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }
}

impl From<&BTreeMap<String, String>> for StringMap {
    fn from(map: &BTreeMap<String, String>) -> Self {
        Self::from_sorted(map.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }
}

impl fmt::Debug for StringMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_empty_map_has_nothing() {
        let m = StringMap::new();
        assert!(m.is_empty());
        assert_eq!(m.len(), 0);
        assert_eq!(m.get(""), None);
        assert_eq!(m.iter().count(), 0);
    }

    #[test]
    fn empty_keys_and_values_are_entries_of_their_own() {
        let m: StringMap = [("", "x"), ("a", ""), ("b", "é")].into_iter().collect();
        assert_eq!(m.get(""), Some("x"));
        assert_eq!(m.get("a"), Some(""));
        assert_eq!(m.get("b"), Some("é"));
        assert_eq!(m.get("c"), None);
        assert_eq!(m.len(), 3);
    }

    #[test]
    fn a_later_duplicate_key_wins_as_in_a_btree_map() {
        let m: StringMap = [("k", "1"), ("j", "0"), ("k", "2")].into_iter().collect();
        assert_eq!(m.get("k"), Some("2"));
        assert_eq!(m.len(), 2);
    }

    proptest! {
        /// Built from any entries, the map answers and iterates exactly as
        /// a BTreeMap built by inserting them in the same order.
        #[test]
        fn answers_as_a_btree_map(
            entries in proptest::collection::vec(("[a-c/.é]{0,3}", "[a-z0-9é]{0,4}"), 0..12),
            probes in proptest::collection::vec("[a-c/.é]{0,3}", 0..8),
        ) {
            let mut expected = BTreeMap::new();
            for (k, v) in &entries {
                expected.insert(k.clone(), v.clone());
            }
            let m: StringMap = entries.iter().map(|(k, v)| (k, v)).collect();
            prop_assert_eq!(m.len(), expected.len());
            prop_assert_eq!(m.to_btree(), expected.clone());
            prop_assert_eq!(StringMap::from(&expected), m.clone());
            for (k, v) in &expected {
                prop_assert_eq!(m.get(k), Some(v.as_str()));
            }
            for p in &probes {
                prop_assert_eq!(m.get(p), expected.get(p).map(String::as_str));
            }
            let keys: Vec<&str> = m.keys().collect();
            let expected_keys: Vec<&str> = expected.keys().map(String::as_str).collect();
            prop_assert_eq!(keys, expected_keys);
        }
    }
}
