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
    /// One allocation: the number of entries `n` (u32, little endian),
    /// then `2n` end offsets into the text (u32 each: where key 0, value
    /// 0, key 1, ... end), then the text of every key and value back to
    /// back. Empty for an empty map.
    packed: Box<[u8]>,
}

const WORD: usize = std::mem::size_of::<u32>();

impl StringMap {
    /// An empty map (no allocation).
    pub fn new() -> Self {
        Self::default()
    }

    fn word(&self, i: usize) -> usize {
        let at = i * WORD;
        self.packed
            .get(at..at + WORD)
            .and_then(|b| <[u8; WORD]>::try_from(b).ok())
            .map_or(0, |b| u32::from_le_bytes(b) as usize)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.word(0)
    }

    /// Whether the map has no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn part(&self, i: usize) -> &[u8] {
        let text = (1 + 2 * self.len()) * WORD;
        let start = if i == 0 { 0 } else { self.word(i) };
        let end = self.word(i + 1);
        self.packed
            .get(text + start..text + end)
            .unwrap_or_default()
    }

    fn key_at(&self, entry: usize) -> &str {
        // Made from `&str`s cut at their own ends: always UTF-8.
        std::str::from_utf8(self.part(2 * entry)).unwrap_or_default()
    }

    fn value_at(&self, entry: usize) -> &str {
        std::str::from_utf8(self.part(2 * entry + 1)).unwrap_or_default()
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            // Byte order is `str` order.
            match self.part(2 * mid).cmp(key.as_bytes()) {
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

    /// Packs entries already sorted by key, without duplicates. Labels and
    /// annotations are bounded far below 4 GiB by the API server's request
    /// size; should the text not fit u32 offsets, the entries that do not
    /// fit are left out rather than wrapped around.
    fn from_sorted<'a>(entries: impl Iterator<Item = (&'a str, &'a str)> + Clone) -> Self {
        let mut fitting = 0usize;
        let mut size = 0usize;
        for (k, v) in entries.clone() {
            let grown = size + k.len() + v.len();
            if u32::try_from(grown).is_err() || u32::try_from(fitting + 1).is_err() {
                break;
            }
            size = grown;
            fitting += 1;
        }
        if fitting == 0 {
            return Self::default();
        }
        let mut packed = Vec::with_capacity((1 + 2 * fitting) * WORD + size);
        let word = |n: usize| u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes();
        packed.extend_from_slice(&word(fitting));
        let mut end = 0;
        for (k, v) in entries.clone().take(fitting) {
            end += k.len();
            packed.extend_from_slice(&word(end));
            end += v.len();
            packed.extend_from_slice(&word(end));
        }
        for (k, v) in entries.take(fitting) {
            packed.extend_from_slice(k.as_bytes());
            packed.extend_from_slice(v.as_bytes());
        }
        StringMap {
            packed: packed.into_boxed_slice(),
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
