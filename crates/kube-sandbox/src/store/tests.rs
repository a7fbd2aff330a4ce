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
