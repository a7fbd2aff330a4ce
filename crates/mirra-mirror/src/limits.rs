//! Per-SyncConfig limits on copies and bytes: how much one SyncConfig asks
//! mirra to write and keep, and whether that is over the operator's limits.
//!
//! A SyncConfig's footprint is what its syncItems cost across the
//! namespaces it writes into:
//!
//! - copies = number of syncItems x namespaces;
//! - bytes = sum over its syncItems of the item's size x namespaces, the
//!   size being the length of the item's JSON as written in the SyncConfig
//!   (server-owned metadata and `status` dropped, `${PROJECT_NAME}` not
//!   substituted, mirra's marks not added: a few dozen bytes either way).
//!
//! deleteItems create nothing and are not counted. All arithmetic saturates
//! at `u64::MAX`: a footprint too large to count is over every limit, never
//! wrapped back under one.
//!
//! What this module must NOT do: decide what happens to a SyncConfig over
//! a limit (the controller holds its writes back), or look at the cluster
//! (the caller counts the namespaces).

use std::fmt;
use std::io::Write;

use crate::compile::CompiledConfig;

/// The flag that sets [`Limits::max_copies`].
pub const MAX_COPIES_FLAG: &str = "--max-copies-per-syncconfig";
/// The flag that sets [`Limits::max_bytes`].
pub const MAX_BYTES_FLAG: &str = "--max-bytes-per-syncconfig";

/// The most one SyncConfig may cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Copies at most (items x namespaces).
    pub max_copies: u64,
    /// Bytes at most (sum of item sizes x namespaces).
    pub max_bytes: u64,
}

impl Limits {
    /// No limit at all (tests and offline tools).
    pub const UNLIMITED: Limits = Limits {
        max_copies: u64::MAX,
        max_bytes: u64::MAX,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::UNLIMITED
    }
}

/// What one SyncConfig costs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Number of syncItems and copyItems.
    pub items: u64,
    /// Sum of the sizes of the copies they make, in bytes.
    pub item_bytes: u64,
    /// Namespaces it writes into.
    pub namespaces: u64,
}

impl Footprint {
    /// The items and item bytes of `config` (no namespaces yet); zero for
    /// an invalid SyncConfig, which writes nothing.
    pub fn of(config: &CompiledConfig) -> Footprint {
        let Ok(spec) = &config.spec else {
            return Footprint::default();
        };
        // A copyItem counts as an item whether or not its source is known;
        // its bytes are those of the copy its source makes.
        let item_bytes = spec
            .templates()
            .map(|t| json_len(&t.body))
            .fold(0u64, u64::saturating_add);
        let items = spec.sync_items.len().saturating_add(spec.copy_items.len());
        Footprint {
            items: u64::try_from(items).unwrap_or(u64::MAX),
            item_bytes,
            namespaces: 0,
        }
    }

    /// Copies: items x namespaces.
    pub fn copies(&self) -> u64 {
        self.items.saturating_mul(self.namespaces)
    }

    /// Bytes of all copies: item bytes x namespaces.
    pub fn bytes(&self) -> u64 {
        self.item_bytes.saturating_mul(self.namespaces)
    }

    /// The first limit this footprint is over, copies before bytes.
    pub fn exceeded(&self, limits: &Limits) -> Option<LimitExceeded> {
        if self.copies() > limits.max_copies {
            return Some(LimitExceeded::Copies {
                copies: self.copies(),
                items: self.items,
                namespaces: self.namespaces,
                limit: limits.max_copies,
            });
        }
        if self.bytes() > limits.max_bytes {
            return Some(LimitExceeded::Bytes {
                bytes: self.bytes(),
                item_bytes: self.item_bytes,
                namespaces: self.namespaces,
                limit: limits.max_bytes,
            });
        }
        None
    }
}

/// A SyncConfig over a limit, with the figures for its status message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LimitExceeded {
    /// Too many copies.
    Copies {
        /// items x namespaces.
        copies: u64,
        /// syncItems.
        items: u64,
        /// Namespaces written into.
        namespaces: u64,
        /// The limit.
        limit: u64,
    },
    /// Too many bytes.
    Bytes {
        /// item bytes x namespaces.
        bytes: u64,
        /// Sum of the syncItems' sizes.
        item_bytes: u64,
        /// Namespaces written into.
        namespaces: u64,
        /// The limit.
        limit: u64,
    },
}

impl LimitExceeded {
    /// The flag that sets the limit exceeded.
    pub fn flag(&self) -> &'static str {
        match self {
            LimitExceeded::Copies { .. } => MAX_COPIES_FLAG,
            LimitExceeded::Bytes { .. } => MAX_BYTES_FLAG,
        }
    }
}

impl fmt::Display for LimitExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitExceeded::Copies {
                copies,
                items,
                namespaces,
                limit,
            } => write!(
                f,
                "{copies} copies ({items} item(s) x {namespaces} namespace(s)) exceed the limit \
                 of {limit} copies per SyncConfig ({MAX_COPIES_FLAG})"
            ),
            LimitExceeded::Bytes {
                bytes,
                item_bytes,
                namespaces,
                limit,
            } => write!(
                f,
                "{bytes} bytes of copies ({item_bytes} bytes of items x {namespaces} \
                 namespace(s)) exceed the limit of {limit} bytes per SyncConfig \
                 ({MAX_BYTES_FLAG})"
            ),
        }
    }
}

/// Length of a value's JSON, counted without building the text (an item
/// may be megabytes).
fn json_len(value: &serde_json::Value) -> u64 {
    struct Count(u64);
    impl Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self
                .0
                .saturating_add(u64::try_from(buf.len()).unwrap_or(u64::MAX));
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a Value to a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn config(items: Vec<serde_json::Value>) -> CompiledConfig {
        CompiledConfig::from_json(&json!({
            "apiVersion": "sync.appuio.ch/v1alpha1", "kind": "SyncConfig",
            "metadata": {"name": "c", "namespace": "ops"},
            "spec": {"namespaceSelector": {"matchNames": [".*"]}, "syncItems": items},
        }))
    }

    #[test]
    fn items_and_bytes_are_counted_from_the_spec() {
        let item = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x"}, "data": {"k": "v".repeat(1000)}});
        let mut other = item.clone();
        other["metadata"]["name"] = json!("y");
        let f = Footprint::of(&config(vec![item.clone(), other]));
        assert_eq!(f.items, 2);
        // Not less than the data alone, not much more than the item's text.
        let text = serde_json::to_string(&item).unwrap().len() as u64;
        assert!(f.item_bytes >= 2000 && f.item_bytes <= 2 * text, "{f:?}");
        assert_eq!(f.namespaces, 0);
        assert_eq!(f.copies(), 0);
        let invalid = CompiledConfig::from_json(&json!({"metadata": {"name": "c"}}));
        assert_eq!(Footprint::of(&invalid), Footprint::default());
    }

    #[test]
    fn a_900_kib_item_in_30_namespaces_is_under_128_mib_and_messages_name_the_flag() {
        let limits = Limits {
            max_copies: 20_000,
            max_bytes: 128 << 20,
        };
        let f = Footprint {
            items: 1,
            item_bytes: 900 << 10,
            namespaces: 30,
        };
        assert_eq!(f.exceeded(&limits), None);
        // One ConfigMap into 5,000 namespaces: fine.
        let wide = Footprint {
            items: 1,
            item_bytes: 500,
            namespaces: 5_000,
        };
        assert_eq!(wide.exceeded(&limits), None);
        // 2,000 items into 1,000 namespaces: over on copies first.
        let huge = Footprint {
            items: 2_000,
            item_bytes: 2_000 * 1_000,
            namespaces: 1_000,
        };
        let e = huge.exceeded(&limits).unwrap();
        assert_eq!(e.flag(), MAX_COPIES_FLAG);
        assert_eq!(
            e.to_string(),
            "2000000 copies (2000 item(s) x 1000 namespace(s)) exceed the limit of 20000 \
             copies per SyncConfig (--max-copies-per-syncconfig)"
        );
        let big = Footprint {
            items: 2,
            item_bytes: 2 << 20,
            namespaces: 100,
        };
        let e = big.exceeded(&limits).unwrap();
        assert_eq!(e.flag(), MAX_BYTES_FLAG);
        assert!(e.to_string().contains("209715200 bytes"), "{e}");
        assert!(e.to_string().contains("134217728 bytes"), "{e}");
        // Exactly at the limit is allowed.
        let at = Footprint {
            items: 4,
            item_bytes: 1,
            namespaces: 5_000,
        };
        assert_eq!(at.exceeded(&limits), None);
        let over = Footprint {
            namespaces: 5_001,
            ..at
        };
        assert!(over.exceeded(&limits).is_some());
    }

    proptest::proptest! {
        #[test]
        fn arithmetic_saturates_and_is_monotone(
            items in proptest::prelude::any::<u64>(),
            item_bytes in proptest::prelude::any::<u64>(),
            namespaces in proptest::prelude::any::<u64>(),
            max_copies in 1u64..,
            max_bytes in 1u64..,
        ) {
            let f = Footprint { items, item_bytes, namespaces };
            let limits = Limits { max_copies, max_bytes };
            // Never wraps: the product is exact or u64::MAX.
            let exact = u128::from(items) * u128::from(namespaces);
            proptest::prop_assert_eq!(u128::from(f.copies()), exact.min(u128::from(u64::MAX)));
            let exact = u128::from(item_bytes) * u128::from(namespaces);
            proptest::prop_assert_eq!(u128::from(f.bytes()), exact.min(u128::from(u64::MAX)));
            // Over iff some exact product is over its limit.
            let over = u128::from(items) * u128::from(namespaces) > u128::from(max_copies)
                || u128::from(item_bytes) * u128::from(namespaces) > u128::from(max_bytes);
            proptest::prop_assert_eq!(f.exceeded(&limits).is_some(), over);
            // One more namespace never brings it back under.
            if over && namespaces < u64::MAX {
                let more = Footprint { namespaces: namespaces + 1, ..f };
                proptest::prop_assert!(more.exceeded(&limits).is_some());
            }
            proptest::prop_assert!(f.exceeded(&Limits::UNLIMITED).is_none());
        }
    }
}
