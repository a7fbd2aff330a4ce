//! Random JSON for the property tests of this crate: scalars of every kind
//! (finite floats only: JSON has no other) and nested arrays and objects,
//! with the strings and keys each test needs.
//!
//! Test code only; it must NOT be used outside `#[cfg(test)]`.

use proptest::prelude::*;
use serde_json::Value;

/// Values up to four levels deep, strings drawn from `strings` and object
/// keys from `keys`.
pub(crate) fn json_tree(
    strings: impl Strategy<Value = String> + Clone + 'static,
    keys: impl Strategy<Value = String> + Clone + 'static,
) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        strings.prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(keys.clone(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
