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

/// A write whose client takes protobuf gets its event's frame at commit
/// (from the object the store holds parsed); other writes leave it to the
/// first that needs it. Both frames are the same bytes.
#[test]
fn a_protobuf_write_has_its_frame_at_commit() {
    let mut store = Store::new(StoreConfig::default());
    let Some(res) = store.registry().get("", "v1", "configmaps") else {
        panic!("configmaps are served");
    };
    let cm = |name: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name}, "data": {"k": "v"}})
    };
    let pb = WriteOptions {
        protobuf: true,
        ..WriteOptions::default()
    };
    store.create(&res, "default", cm("pb"), &pb).unwrap();
    let eager = store.history.back().cloned().unwrap();
    assert!(eager.protobuf.get().is_some(), "encoded at commit");

    store
        .create(&res, "default", cm("json"), &WriteOptions::default())
        .unwrap();
    let lazy = store.history.back().cloned().unwrap();
    assert!(lazy.protobuf.get().is_none(), "not encoded until asked");

    let fresh = |e: &Event| {
        crate::protobuf::Frame::of_json(e.kind.as_str(), &e.object)
            .unwrap()
            .frame()
    };
    assert_eq!(eager.protobuf_frame().unwrap().frame(), fresh(&eager));
    assert_eq!(lazy.protobuf_frame().unwrap().frame(), fresh(&lazy));
}
