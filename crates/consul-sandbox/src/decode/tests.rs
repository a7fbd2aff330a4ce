use super::*;
use proptest::prelude::*;

#[test]
fn field_names_match_case_insensitively_and_unknown_fields_are_ignored() {
    let body = br#"{"node":"n1","ADDRESS":"10.0.0.1","Unknown":[1,2],
        "service":{"service":"web","PORT":80,"tags":["a"],"weights":{"passing":3,"warning":1}}}"#;
    let r = register(body).unwrap();
    assert_eq!(r.node, "n1");
    assert_eq!(r.address, "10.0.0.1");
    let s = r.service.unwrap();
    assert_eq!(s.service, "web");
    assert_eq!(s.port, 80);
    assert_eq!(s.tags, Some(vec!["a".to_string()]));
    assert_eq!(
        s.weights,
        Some(Weights {
            passing: 3,
            warning: 1
        })
    );
}

#[test]
fn ports_decode_case_insensitively_in_order() {
    let r = register(
        br#"{"Node":"n","Service":{"Service":"web","Port":0,"ports":[
            {"name":"http","PORT":8080,"Default":true},
            null,
            {"Name":"grpc","Port":9090,"Default":null,"Extra":1}]}}"#,
    )
    .unwrap();
    let s = r.service.unwrap();
    assert_eq!(
        s.ports,
        vec![
            ServicePort {
                name: "http".into(),
                port: 8080,
                default: true
            },
            ServicePort {
                name: "grpc".into(),
                port: 9090,
                default: false
            },
        ]
    );
    let r = register(br#"{"Node":"n","Service":{"Service":"web","Ports":null}}"#).unwrap();
    assert!(r.service.unwrap().ports.is_empty());
}

#[test]
fn malformed_ports_name_the_go_field_path() {
    for (body, want) in [
        (
            r#"{"Service":{"Service":"web","Ports":{"Name":"http"}}}"#,
            "json: cannot unmarshal object into Go struct field \
             RegisterRequest.Service.Ports of type []struct",
        ),
        (
            r#"{"Service":{"Service":"web","Ports":["http"]}}"#,
            "json: cannot unmarshal string into Go struct field \
             RegisterRequest.Service.Ports of type struct",
        ),
        (
            r#"{"Service":{"Service":"web","Ports":[{"Name":"http","Port":"8080"}]}}"#,
            "json: cannot unmarshal string into Go struct field \
             RegisterRequest.Service.Ports.Port of type int",
        ),
        (
            r#"{"Service":{"Service":"web","Ports":[{"Name":1,"Port":8080}]}}"#,
            "json: cannot unmarshal number 1 into Go struct field \
             RegisterRequest.Service.Ports.Name of type string",
        ),
        (
            r#"{"Service":{"Service":"web","Ports":[{"Name":"a","Default":"yes"}]}}"#,
            "json: cannot unmarshal string into Go struct field \
             RegisterRequest.Service.Ports.Default of type bool",
        ),
    ] {
        assert_eq!(register(body.as_bytes()).unwrap_err().to_string(), want);
    }
    let e = txn(br#"[{"Service":{"Verb":"set","Node":"n","Service":{"Service":"web","Ports":[{"Port":1.5}]}}}]"#)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "json: cannot unmarshal number 1.5 into Go struct field \
         TxnOp.Service.Service.Ports.Port of type int"
    );
}

#[test]
fn trailing_bytes_after_the_first_value_are_ignored_like_go() {
    let r = register(br#"{"Node":"n1"} trailing garbage"#).unwrap();
    assert_eq!(r.node, "n1");
}

#[test]
fn empty_and_truncated_bodies_use_go_wording() {
    assert_eq!(register(b"").unwrap_err().to_string(), "EOF");
    assert_eq!(register(b"   ").unwrap_err().to_string(), "EOF");
    assert_eq!(
        register(br#"{"Node":"#).unwrap_err().to_string(),
        "unexpected EOF"
    );
    assert!(matches!(
        register(b"{nope}").unwrap_err(),
        DecodeError::Syntax(_)
    ));
}

#[test]
fn wrong_types_name_the_go_field_path() {
    let e = register(br#"{"Node":"n","Service":{"Service":"web","Port":"80"}}"#).unwrap_err();
    assert_eq!(
        e.to_string(),
        "json: cannot unmarshal string into Go struct field \
         RegisterRequest.Service.Port of type int"
    );
    let e = register(br#"{"Service":{"Port":80.5}}"#).unwrap_err();
    assert!(e.to_string().contains("number 80.5"), "{e}");
    let e = register(b"[]").unwrap_err();
    assert_eq!(
        e.to_string(),
        "json: cannot unmarshal array into Go value of type structs.RegisterRequest"
    );
    let e = txn(br#"{"Node":{}}"#).unwrap_err();
    assert!(e.to_string().contains("api.TxnOps"), "{e}");
}

#[test]
fn null_fields_keep_their_zero_value() {
    let r = register(br#"{"Node":null,"Service":null,"NodeMeta":null}"#).unwrap();
    assert_eq!(r, RegisterReq::default());
    assert_eq!(register(b"null").unwrap(), RegisterReq::default());
}

#[test]
fn nil_and_empty_maps_stay_distinct() {
    let r = register(br#"{"Node":"n","NodeMeta":{}}"#).unwrap();
    assert_eq!(r.node_meta, Some(BTreeMap::new()));
    let r = register(br#"{"Node":"n"}"#).unwrap();
    assert_eq!(r.node_meta, None);
}

#[test]
fn txn_ops_dispatch_on_the_first_present_member() {
    let ops = txn(br#"[
        {"Node":{"Verb":"set","Node":{"Node":"n1","Address":"a"}}},
        {"Service":{"Verb":"cas","Node":"n1","Service":{"Service":"web","ModifyIndex":7}}},
        {"Check":{"Verb":"delete","Check":{"Node":"n1","CheckID":"c"}}},
        {"KV":{"Verb":"set","Key":"k"}},
        {},
        null
    ]"#)
    .unwrap();
    assert_eq!(ops.len(), 6);
    assert!(matches!(&ops[0], TxnOpIn::Node { verb, node } if verb == "set" && node.node == "n1"));
    assert!(matches!(&ops[1], TxnOpIn::Service { service, .. } if service.modify_index == 7));
    assert!(matches!(&ops[2], TxnOpIn::Check { check, .. } if check.check_id == "c"));
    assert_eq!(ops[3], TxnOpIn::Kv);
    assert_eq!(ops[4], TxnOpIn::Empty);
    assert_eq!(ops[5], TxnOpIn::Empty);
}

#[test]
fn negative_modify_index_is_a_type_error() {
    let e = txn(br#"[{"Service":{"Verb":"cas","Service":{"ModifyIndex":-1}}}]"#).unwrap_err();
    assert!(e.to_string().contains("uint64"), "{e}");
}

#[test]
fn deeply_nested_input_is_an_error_not_a_crash() {
    let deep = "[".repeat(100_000);
    assert!(txn(deep.as_bytes()).is_err());
    let deep_obj = format!("{}{}", r#"{"Service":"#.repeat(10_000), "1");
    assert!(register(deep_obj.as_bytes()).is_err());
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| Value::Number(n.into())),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        "[a-zA-Z]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 6, |inner| {
        let keys = prop_oneof![
            Just("Node".to_string()),
            Just("service".to_string()),
            Just("Service".to_string()),
            Just("Check".to_string()),
            Just("Checks".to_string()),
            Just("Verb".to_string()),
            Just("Port".to_string()),
            Just("Tags".to_string()),
            Just("Weights".to_string()),
            Just("NodeMeta".to_string()),
            Just("TaggedAddresses".to_string()),
            Just("Ports".to_string()),
            Just("Default".to_string()),
            Just("ModifyIndex".to_string()),
            "[a-z]{1,4}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((keys, inner), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn decoders_never_panic_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = register(&bytes);
        let _ = deregister(&bytes);
        let _ = txn(&bytes);
    }

    #[test]
    fn decoders_never_panic_on_arbitrary_json(v in arb_json()) {
        let bytes = serde_json::to_vec(&v).unwrap();
        let _ = register(&bytes);
        let _ = deregister(&bytes);
        let _ = txn(&bytes);
        let wrapped = serde_json::to_vec(&Value::Array(vec![v])).unwrap();
        let _ = txn(&wrapped);
    }

    #[test]
    fn string_fields_round_trip(node in ".{0,20}", addr in ".{0,20}", port in any::<i64>()) {
        let body = serde_json::json!({"Node": node, "Address": addr, "Service": {"Service": "s", "Port": port}});
        let r = register(&serde_json::to_vec(&body).unwrap()).unwrap();
        prop_assert_eq!(r.node, node);
        prop_assert_eq!(r.address, addr);
        prop_assert_eq!(r.service.unwrap().port, port);
    }
}
