#![allow(clippy::unwrap_used)]
use super::*;
use proptest::prelude::*;
use serde_json::json;

fn widget_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
                    "replicas": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 10, "default": 1},
                    "color": {"type": "string", "enum": ["red", "blue"]},
                    "ratio": {"type": "number", "exclusiveMaximum": true, "maximum": 1},
                    "when": {"type": "string", "format": "date-time"},
                    "port": {"x-kubernetes-int-or-string": true},
                    "tags": {"type": "array", "maxItems": 2, "minItems": 1, "items": {"type": "string"}},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "nested": {
                        "type": "object",
                        "default": {},
                        "properties": {"mode": {"type": "string", "default": "fast"}}
                    },
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                             "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}}},
                    "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                                 "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}}},
                    "maybe": {"type": "string", "nullable": true},
                    "items": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}}}}
                }
            },
            "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
        }
    })
}

fn messages(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

#[test]
fn prune_removes_what_the_schema_does_not_declare() {
    let mut obj = json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "labels": {"a": "b"}, "colour": "red"},
        "spec": {
            "name": "ab", "zzz": 1, "foo": {"deep": true},
            "labels": {"any": "key"},
            "free": {"anything": [1, 2], "known": {"a": "x", "b": "y"}},
            "template": {"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": "p", "bogus": 1},
                         "spec": {"x": "1", "y": "2"}, "other": 3},
            "items": [{"id": 1, "extra": 2}]
        },
        "status": {"ready": true, "noise": 1},
        "top": 1
    });
    let pruned = prune(&widget_schema(), &mut obj);
    assert_eq!(
        pruned,
        [
            "metadata.colour",
            "spec.foo",
            "spec.free.known.b",
            "spec.items[0].extra",
            "spec.template.other",
            "spec.template.spec.y",
            "spec.zzz",
            "status.noise",
            "top",
            "spec.template.metadata.bogus",
        ]
    );
    assert_eq!(
        obj,
        json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "labels": {"a": "b"}},
            "spec": {
                "name": "ab",
                "labels": {"any": "key"},
                "free": {"anything": [1, 2], "known": {"a": "x"}},
                "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                             "spec": {"x": "1"}},
                "items": [{"id": 1}]
            },
            "status": {"ready": true}
        })
    );
}

#[test]
fn a_preserving_root_keeps_everything_undeclared() {
    let schema = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    let mut obj =
        json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "n"}, "spec": {"x": 1}});
    assert!(prune(&schema, &mut obj).is_empty());
    assert_eq!(obj["spec"]["x"], 1);
}

#[test]
fn defaults_fill_missing_and_non_nullable_null_fields() {
    let schema = widget_schema();
    let mut obj = json!({"spec": {"name": "ab"}});
    default(&schema, &mut obj);
    assert_eq!(obj["spec"]["replicas"], 1);
    // The defaulted object is defaulted inside too.
    assert_eq!(obj["spec"]["nested"], json!({"mode": "fast"}));

    let mut obj = json!({"spec": {"name": "ab", "replicas": null, "nested": {"mode": null}}});
    default(&schema, &mut obj);
    assert_eq!(obj["spec"]["replicas"], 1);
    assert_eq!(obj["spec"]["nested"]["mode"], "fast");

    // A set value is kept.
    let mut obj = json!({"spec": {"name": "ab", "replicas": 7}});
    default(&schema, &mut obj);
    assert_eq!(obj["spec"]["replicas"], 7);

    // A nullable field's null stays null.
    let nullable = json!({"type": "object", "properties": {
        "x": {"type": "string", "nullable": true, "default": "d"}}});
    let mut obj = json!({"x": null});
    default(&nullable, &mut obj);
    assert_eq!(obj, json!({"x": null}));
}

#[test]
fn non_nullable_nulls_without_default_are_dropped() {
    let schema = widget_schema();
    let mut obj = json!({"spec": {"name": "ab", "color": null, "maybe": null, "replicas": null}});
    drop_non_nullable_nulls(&schema, &mut obj);
    // `color` has no default and is not nullable: gone. `maybe` is
    // nullable, `replicas` has a default: both stay for defaulting.
    assert_eq!(
        obj,
        json!({"spec": {"name": "ab", "maybe": null, "replicas": null}})
    );
}

#[test]
fn validation_messages_are_the_servers() {
    let schema = widget_schema();
    let obj = json!({"spec": {"replicas": "string", "color": "pink"}});
    assert_eq!(
        messages(&validate(&schema, &obj)),
        [
            "spec.name: Required value",
            "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
            "spec.color: Unsupported value: \"pink\": supported values: \"red\", \"blue\"",
        ]
    );
    let errs = validate(&schema, &obj);
    assert_eq!(errs[0].reason, "FieldValueRequired");
    assert_eq!(errs[1].reason, "FieldValueTypeInvalid");
    assert_eq!(errs[2].reason, "FieldValueNotSupported");

    let obj = json!({"spec": {"name": "A", "replicas": 0, "ratio": 1, "tags": [],
        "when": "yesterday", "port": true, "labels": {"a": 1}}});
    assert_eq!(
        messages(&validate(&schema, &obj)),
        [
            "spec.name: Invalid value: \"A\": spec.name in body should be at least 2 chars long",
            "spec.name: Invalid value: \"A\": spec.name in body should match '^[a-z]+$'",
            "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
            "spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1",
            "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items",
            "spec.when: Invalid value: \"yesterday\": spec.when in body must be of type date-time: \"yesterday\"",
            "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"",
            "spec.labels.a: Invalid value: \"integer\": spec.labels.a in body must be of type string: \"integer\"",
        ]
    );

    let obj = json!({"spec": {"name": "abcdefg", "replicas": 11, "tags": ["a", "b", "c"],
        "port": "http", "when": "2024-01-02T03:04:05Z", "maybe": null, "items": [{"id": 1.5}, null]}});
    assert_eq!(
        messages(&validate(&schema, &obj)),
        [
            "spec.name: Too long: may not be more than 5 bytes",
            "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10",
            "spec.tags: Too many: 3: must have at most 2 items",
            "spec.items[0].id: Invalid value: \"number\": spec.items[0].id in body must be of type integer: \"number\"",
            "spec.items[1]: Invalid value: \"null\": spec.items[1] in body must be of type object: \"null\"",
        ]
    );
}

#[test]
fn valid_objects_have_no_errors() {
    let schema = widget_schema();
    let obj = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"name": "ab", "replicas": 3.0, "color": "red", "ratio": 0.5, "port": 80,
                 "tags": ["x"], "labels": {"a": "b"}, "when": "2024-01-02T03:04:05.5+02:00"}});
    assert!(validate(&schema, &obj).is_empty());
}

#[test]
fn int32_overflow_and_formats() {
    let schema = json!({"type": "object", "properties": {
        "n": {"type": "integer", "format": "int32"},
        "b": {"type": "string", "format": "byte"},
        "u": {"type": "string", "format": "uuid"},
        "ip": {"type": "string", "format": "ipv4"},
        "d": {"type": "string", "format": "date"}}});
    let errs = validate(
        &schema,
        &json!({"n": 3_000_000_000_i64, "b": "not base64!", "u": "nope", "ip": "1.2.3", "d": "2024-13-01"}),
    );
    assert_eq!(
        messages(&errs),
        [
            ": Invalid value: \"\": Checked value must be of type integer with format int32 in n",
            "b: Invalid value: \"not base64!\": b in body must be of type byte: \"not base64!\"",
            "u: Invalid value: \"nope\": u in body must be of type uuid: \"nope\"",
            "ip: Invalid value: \"1.2.3\": ip in body must be of type ipv4: \"1.2.3\"",
            "d: Invalid value: \"2024-13-01\": d in body must be of type date: \"2024-13-01\"",
        ]
    );
    assert!(
        validate(
            &schema,
            &json!({"n": 5, "b": "aGk=", "u": "123e4567-e89b-12d3-a456-426614174000", "ip": "10.0.0.1", "d": "2024-02-29"})
        )
        .is_empty()
    );
}

#[test]
fn unchanged_parts_are_ratcheted_on_update() {
    let schema = widget_schema();
    // Stored before the schema said `color` is red or blue.
    let old = json!({"spec": {"name": "ab", "color": "pink", "items": [{"id": "x"}]}});
    let new = json!({"spec": {"name": "abc", "color": "pink", "items": [{"id": "x"}]}});
    assert!(validate_update(&schema, &new, Some(&old)).is_empty());
    assert_eq!(validate(&schema, &new).len(), 2);
    // A changed value is validated.
    let new = json!({"spec": {"name": "ab", "color": "green", "items": [{"id": "x"}]}});
    assert_eq!(
        messages(&validate_update(&schema, &new, Some(&old))),
        ["spec.color: Unsupported value: \"green\": supported values: \"red\", \"blue\""]
    );
    // Items of an atomic list are not correlated: a changed list is
    // validated item by item.
    let new = json!({"spec": {"name": "ab", "color": "pink", "items": [{"id": "x"}, {"id": 1}]}});
    assert_eq!(validate_update(&schema, &new, Some(&old)).len(), 1);
    // Items of a map list are correlated by key.
    let schema = json!({"type": "array", "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["k"],
        "items": {"type": "object", "properties": {"k": {"type": "string"}, "v": {"type": "integer"}}}});
    let old = json!([{"k": "a", "v": "bad"}]);
    let new = json!([{"k": "b", "v": 1}, {"k": "a", "v": "bad"}]);
    assert!(validate_update(&schema, &new, Some(&old)).is_empty());
    assert_eq!(validate(&schema, &new).len(), 1);
}

#[test]
fn enums_of_other_types_are_printed_as_json() {
    let schema = json!({"type": "integer", "enum": [1, 2]});
    assert_eq!(
        messages(&validate(&schema, &json!(3))),
        [": Unsupported value: 3: supported values: \"1\", \"2\""]
    );
    assert!(validate(&schema, &json!(2.0)).is_empty());
}

#[test]
fn go_number_printing() {
    assert_eq!(go_float(1.0), "1");
    assert_eq!(go_float(1.5), "1.5");
    assert_eq!(go_float(1e21), "1e+21");
    assert_eq!(go_float(0.00001), "1e-05");
    assert_eq!(go_float(0.0001), "0.0001");
    assert_eq!(
        render(&json!({"b": [1, "x"], "a": null})),
        "map[string]interface {}{\"a\":interface {}(nil), \"b\":[]interface {}{1, \"x\"}}"
    );
}

#[test]
fn composition_keywords() {
    let schema = json!({"anyOf": [{"type": "integer"}, {"type": "string"}]});
    assert!(validate(&schema, &json!(1)).is_empty());
    let errs = validate(&schema, &json!(true));
    assert!(
        errs[0]
            .message
            .ends_with("must validate at least one schema (anyOf)")
    );
    let schema = json!({"not": {"type": "string"}});
    assert_eq!(validate(&schema, &json!("a")).len(), 1);
    assert!(validate(&schema, &json!(1)).is_empty());
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|i| json!(i)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "[a-z]{0,4}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 40, 5, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-c]{1,2}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn arb_schema() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(
            json!({"type": "string", "minLength": 1, "maxLength": 3, "pattern": "^[a-b]*$", "format": "date-time"})
        ),
        Just(
            json!({"type": "integer", "minimum": -5, "maximum": 5, "format": "int32", "multipleOf": 2})
        ),
        Just(json!({"type": "number", "exclusiveMinimum": true, "minimum": 0, "default": 1.5})),
        Just(json!({"type": "boolean", "nullable": true, "enum": [true, null]})),
        Just(json!({"x-kubernetes-int-or-string": true, "default": "x"})),
        Just(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})),
        Just(json!({"type": "string", "pattern": "(unclosed"})),
        Just(json!({})),
        Just(json!(7)),
    ];
    leaf.prop_recursive(4, 40, 4, |inner| {
        prop_oneof![
            (inner.clone(), 0u8..3).prop_map(|(i, n)| json!({"type": "array", "items": i, "maxItems": n, "uniqueItems": true})),
            proptest::collection::btree_map("[a-c]{1,2}", inner.clone(), 0..4).prop_map(|m| {
                let required: Vec<&String> = m.keys().take(1).collect();
                json!({"type": "object", "properties": m, "required": required, "default": {}})
            }),
            inner.clone().prop_map(|i| json!({"type": "object", "additionalProperties": i, "maxProperties": 2})),
            inner.clone().prop_map(|i| json!({"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": i}})),
            (inner.clone(), inner).prop_map(|(a, b)| json!({"anyOf": [a.clone(), b.clone()], "oneOf": [a, b.clone()], "not": b})),
        ]
    })
}

proptest! {
    #[test]
    fn never_panics_and_prune_is_idempotent(schema in arb_schema(), obj in arb_json()) {
        let mut o = obj.clone();
        let _ = prune(&schema, &mut o);
        let once = o.clone();
        prop_assert!(prune(&schema, &mut o).is_empty());
        prop_assert_eq!(&o, &once);
        drop_non_nullable_nulls(&schema, &mut o);
        default(&schema, &mut o);
        let _ = validate(&schema, &o);
        let _ = validate(&schema, &obj);
    }

    #[test]
    fn pruned_objects_lose_exactly_the_reported_paths(schema in arb_schema(), obj in arb_json()) {
        // Reported paths are unique: each field is pruned once.
        let mut o = obj;
        let paths = prune(&schema, &mut o);
        let mut sorted = paths.clone();
        sorted.sort();
        sorted.dedup();
        prop_assert_eq!(sorted.len(), paths.len());
    }
}
