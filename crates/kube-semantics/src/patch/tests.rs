use super::*;
use proptest::prelude::*;
use serde_json::json;

#[test]
fn merge_patch_follows_rfc7386_examples() {
    // The examples table of RFC 7386 section 3.
    let cases = [
        (json!({"a":"b"}), json!({"a":"c"}), json!({"a":"c"})),
        (json!({"a":"b"}), json!({"b":"c"}), json!({"a":"b","b":"c"})),
        (json!({"a":"b"}), json!({"a":null}), json!({})),
        (
            json!({"a":"b","b":"c"}),
            json!({"a":null}),
            json!({"b":"c"}),
        ),
        (json!({"a":["b"]}), json!({"a":"c"}), json!({"a":"c"})),
        (json!({"a":"c"}), json!({"a":["b"]}), json!({"a":["b"]})),
        (
            json!({"a":{"b":"c"}}),
            json!({"a":{"b":"d","c":null}}),
            json!({"a":{"b":"d"}}),
        ),
        (json!({"a":[{"b":"c"}]}), json!({"a":[1]}), json!({"a":[1]})),
        (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
        (json!({"a":"b"}), json!(["c"]), json!(["c"])),
        (json!({"a":"foo"}), json!(null), json!(null)),
        (json!({"a":"foo"}), json!("bar"), json!("bar")),
        (json!({"e":null}), json!({"a":1}), json!({"e":null,"a":1})),
        (json!([1, 2]), json!({"a":"b","c":null}), json!({"a":"b"})),
        (
            json!({}),
            json!({"a":{"bb":{"ccc":null}}}),
            json!({"a":{"bb":{}}}),
        ),
    ];
    for (target, patch, want) in cases {
        assert_eq!(merge_patch(&target, &patch), want, "{target} + {patch}");
    }
}

#[test]
fn json_patch_operations() {
    let doc = json!({"data": {"a": "1", "x/y": "2", "t~": "3"}, "list": [1, 2, 3]});
    let p = json!([
        {"op": "add", "path": "/data/b", "value": "new"},
        {"op": "remove", "path": "/data/x~1y"},
        {"op": "replace", "path": "/data/t~0", "value": "r"},
        {"op": "move", "from": "/data/a", "path": "/data/moved"},
        {"op": "copy", "from": "/list/0", "path": "/list/-"},
        {"op": "add", "path": "/list/0", "value": 0},
        {"op": "remove", "path": "/list/-1"},
        {"op": "test", "path": "/data/b", "value": "new"}
    ]);
    let out = json_patch(&doc, &p).unwrap();
    assert_eq!(
        out,
        json!({"data": {"t~": "r", "b": "new", "moved": "1"}, "list": [0, 1, 2, 3]})
    );
}

#[test]
fn json_patch_errors_use_library_wording_and_leave_input_alone() {
    let doc = json!({"data": {"a": "1"}, "list": [1]});
    let err = |p: Value| json_patch(&doc, &p).unwrap_err();
    assert_eq!(
        err(json!([{"op": "test", "path": "/data/a", "value": "2"}])),
        PatchError::NotApplicable("testing value /data/a failed: test failed".into())
    );
    assert_eq!(
        err(json!([{"op": "add", "path": "/nope/x", "value": 1}])).to_string(),
        "add operation does not apply: doc is missing path: \"/nope/x\": missing value"
    );
    assert_eq!(
        err(json!([{"op": "remove", "path": "/data/zz"}])).to_string(),
        "error in remove for path: '/data/zz': Unable to remove nonexistent key: zz: missing value"
    );
    assert_eq!(
        err(json!([{"op": "add", "path": "/list/5", "value": 1}])).to_string(),
        "error in add for path: '/list/5': Unable to access invalid index: 5: invalid index referenced"
    );
    assert_eq!(
        err(json!([{"op": "add", "path": "/list/x", "value": 1}])).to_string(),
        "error in add for path: '/list/x': strconv.Atoi: parsing \"x\": invalid syntax"
    );
    assert_eq!(
        err(json!([{"op": "replace", "path": "/list/3", "value": 1}])).to_string(),
        "replace operation does not apply: doc is missing key: /list/3: missing value"
    );
    assert_eq!(
        err(json!([{"op": "bogus"}])).to_string(),
        "Unexpected kind: bogus"
    );
    assert_eq!(
        err(json!([{"path": "/a"}])).to_string(),
        "Unexpected kind: unknown"
    );
    assert_eq!(
        err(json!([{"op": "add", "value": 1}])).to_string(),
        "add operation failed to decode path: missing value"
    );
    let e = err(json!({"op": "add"}));
    assert_eq!(
        e.to_string(),
        "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
    );
    assert_eq!(e.status_code(), 400);
    let e = err(json!([{"op": "test", "path": "/data/a", "value": "x"}]));
    assert_eq!(e.status_code(), 422);
    assert_eq!(e.status_message(), JSON_PATCH_NOT_APPLIED_MESSAGE);
    let many = Value::Array(vec![
        json!({"op": "test", "path": "/data/a", "value": "1"});
        MAX_JSON_PATCH_OPERATIONS + 1
    ]);
    assert_eq!(err(many).status_code(), 413);
}

#[test]
fn json_patch_v4_quirks() {
    let doc = json!({"data": {}});
    // replace of a missing object key adds it (evanphx v4 behaviour).
    assert_eq!(
        json_patch(
            &doc,
            &json!([{"op": "replace", "path": "/data/k", "value": "v"}])
        )
        .unwrap(),
        json!({"data": {"k": "v"}})
    );
    // test against a missing key with null value passes.
    assert!(
        json_patch(
            &doc,
            &json!([{"op": "test", "path": "/data/k", "value": null}])
        )
        .is_ok()
    );
    // The first segment is ignored, as in the library.
    assert_eq!(
        json_patch(&doc, &json!([{"op": "add", "path": "x/k", "value": 1}])).unwrap(),
        json!({"data": {}, "k": 1})
    );
    assert!(json_patch(&doc, &json!(null)).is_ok());
}

#[test]
fn strategic_merge_by_keys() {
    let pod = json!({
        "kind": "Pod",
        "metadata": {"name": "p", "finalizers": ["a"], "labels": {"x": "1", "y": "2"}},
        "spec": {
            "containers": [
                {"name": "app", "image": "app:1", "ports": [{"containerPort": 80}], "env": [{"name": "A", "value": "1"}]},
                {"name": "side", "image": "side:1"}
            ],
            "tolerations": [{"key": "k"}]
        }
    });
    let patch = json!({
        "metadata": {"finalizers": ["b", "a"], "labels": {"y": null}},
        "spec": {
            "containers": [
                {"name": "app", "image": "app:2", "ports": [{"containerPort": 443}], "env": [{"name": "B", "value": "2"}]},
                {"name": "side", "$patch": "delete"},
                {"name": "new", "image": "new:1"}
            ],
            "tolerations": [{"key": "other"}]
        }
    });
    let out = strategic_merge_patch(&pod, &patch).unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["a", "b"]));
    assert_eq!(out["metadata"]["labels"], json!({"x": "1"}));
    let cs = out["spec"]["containers"].as_array().unwrap();
    assert_eq!(cs.len(), 2);
    assert_eq!(cs[0]["image"], "app:2");
    assert_eq!(
        cs[0]["ports"],
        json!([{"containerPort": 80}, {"containerPort": 443}])
    );
    assert_eq!(
        cs[0]["env"],
        json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])
    );
    assert_eq!(cs[1], json!({"name": "new", "image": "new:1"}));
    // Lists without a merge key are replaced.
    assert_eq!(out["spec"]["tolerations"], json!([{"key": "other"}]));
}

#[test]
fn strategic_service_ports_merge_by_port() {
    let svc = json!({"kind": "Service", "spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}});
    let out = strategic_merge_patch(
        &svc,
        &json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}]}}),
    )
    .unwrap();
    assert_eq!(
        out["spec"]["ports"],
        json!([{"port": 80, "targetPort": 9090}, {"port": 443}])
    );
    // The same list on another kind is atomic.
    let other = json!({"kind": "EndpointSlice", "spec": {"ports": [{"port": 80}, {"port": 443}]}});
    let out = strategic_merge_patch(&other, &json!({"spec": {"ports": [{"port": 80}]}})).unwrap();
    assert_eq!(out["spec"]["ports"], json!([{"port": 80}]));
}

#[test]
fn strategic_directives() {
    let obj = json!({"kind": "Pod", "metadata": {"finalizers": ["a", "b", "c"]}, "spec": {
        "containers": [{"name": "a"}, {"name": "b"}],
        "nodeSelector": {"x": "1", "y": "2"},
        "strategy": {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}
    }});
    let patch = json!({
        "metadata": {"$deleteFromPrimitiveList/finalizers": ["b"]},
        "spec": {
            "containers": [{"name": "c"}, {"$patch": "replace"}],
            "nodeSelector": {"$patch": "replace", "z": "3"},
            "strategy": {"$retainKeys": ["type"], "type": "RollingUpdate"},
            "$setElementOrder/containers": [{"name": "c"}]
        }
    });
    let out = strategic_merge_patch(&obj, &patch).unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["a", "c"]));
    assert_eq!(out["spec"]["containers"], json!([{"name": "c"}]));
    assert_eq!(out["spec"]["nodeSelector"], json!({"z": "3"}));
    assert_eq!(out["spec"]["strategy"], json!({"type": "RollingUpdate"}));
    let out = strategic_merge_patch(
        &obj,
        &json!({"spec": {"nodeSelector": {"$patch": "delete"}}}),
    )
    .unwrap();
    assert!(out["spec"].get("nodeSelector").is_none());
    let out = strategic_merge_patch(
        &obj,
        &json!({"$setElementOrder/x": [], "spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}}),
    )
    .unwrap();
    assert_eq!(
        out["spec"]["containers"],
        json!([{"name": "b"}, {"name": "a"}])
    );
}

#[test]
fn strategic_errors() {
    let obj = json!({"kind": "Pod", "spec": {"containers": [{"name": "a"}]}});
    let e = strategic_merge_patch(&obj, &json!({"spec": {"containers": [{"image": "x"}]}}))
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("does not contain declared merge key: name"),
        "{e}"
    );
    assert!(strategic_merge_patch(&obj, &json!({"$patch": "bogus"})).is_err());
    assert!(strategic_merge_patch(&obj, &json!({"$patch": "delete"})).is_err());
    assert!(strategic_merge_patch(&obj, &json!([1])).is_err());
    assert!(strategic_merge_patch(&obj, &json!({"spec": {"containers": [1]}})).is_err());
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        "[a-c$/~0-9-]{0,4}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 40, 5, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("$patch".to_string()),
                    Just("name".to_string()),
                    Just("containers".to_string()),
                    Just("finalizers".to_string()),
                    Just("$retainKeys".to_string()),
                    Just("$setElementOrder/containers".to_string()),
                    Just("$deleteFromPrimitiveList/finalizers".to_string()),
                    "[a-c]{1,2}",
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn no_patch_function_panics(target in arb_json(), patch in arb_json()) {
        let _ = merge_patch(&target, &patch);
        let _ = json_patch(&target, &patch);
        let _ = strategic_merge_patch(&target, &patch);
    }

    #[test]
    fn json_patch_ops_on_random_paths_never_panic(
        target in arb_json(),
        op in prop_oneof![Just("add"), Just("remove"), Just("replace"), Just("move"), Just("copy"), Just("test")],
        path in "(/[a-c0-9~-]{0,3}){0,3}",
        from in "(/[a-c0-9~-]{0,3}){0,3}",
        value in arb_json(),
    ) {
        let p = json!([{"op": op, "path": path, "from": from, "value": value}]);
        if let Err(e) = json_patch(&target, &p) {
            prop_assert!(matches!(e, PatchError::NotApplicable(_)));
        }
    }

    #[test]
    fn merge_patch_is_idempotent(target in arb_json(), patch in arb_json()) {
        let once = merge_patch(&target, &patch);
        prop_assert_eq!(merge_patch(&once, &patch), once);
    }

    #[test]
    fn json_patch_add_then_test_succeeds(key in "[a-z]{1,5}", value in arb_json()) {
        let doc = json!({"data": {}});
        let ptr = format!("/data/{key}");
        let out = json_patch(&doc, &json!([{"op": "add", "path": ptr, "value": value.clone()}])).unwrap();
        let test = json!([{"op": "test", "path": ptr, "value": value}]);
        prop_assert!(json_patch(&out, &test).is_ok());
    }

    #[test]
    fn strategic_patch_without_lists_equals_merge_patch(
        target in proptest::collection::btree_map("[a-c]", "[x-z]{0,2}", 0..4),
        patch in proptest::collection::btree_map("[a-c]", proptest::option::of("[x-z]{0,2}"), 0..4),
    ) {
        let t = json!({"metadata": {"labels": target}});
        let p = json!({"metadata": {"labels": patch}});
        prop_assert_eq!(strategic_merge_patch(&t, &p).unwrap(), merge_patch(&t, &p));
    }
}
