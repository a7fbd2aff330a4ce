#![allow(clippy::unwrap_used)]
use super::*;
use proptest::prelude::*;
use serde_json::json;

fn err(group: &str, kind: &str, body: Value) -> String {
    find(group, kind, &body).unwrap_or_else(|| panic!("no error for {body}"))
}

fn deployment(spec: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "d"}, "spec": spec})
}

fn pod_template(pod_spec: Value) -> Value {
    deployment(json!({"selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": pod_spec}}))
}

#[test]
fn null_elements_become_their_zero_values_and_null_fields_stay() {
    let res = |plural: &str| {
        crate::registry::builtins()
            .into_iter()
            .find(|r| r.plural == plural)
            .unwrap()
    };
    let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"a": null}}, "data": {"k": null, "j": "x"},
        "binaryData": {"b": null}, "immutable": null});
    zero_null_elements(&res("configmaps"), &mut cm);
    assert_eq!(
        cm,
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {"a": ""}}, "data": {"k": "", "j": "x"},
            "binaryData": {"b": ""}, "immutable": null})
    );
    let mut pod = json!({"spec": {"containers": [{"name": "c", "args": [null, "x"],
        "ports": [null], "resources": {"limits": {"cpu": null}}}], "tolerations": null}});
    zero_null_elements(&res("pods"), &mut pod);
    assert_eq!(
        pod,
        json!({"spec": {"containers": [{"name": "c", "args": ["", "x"],
            "ports": [{}], "resources": {"limits": {"cpu": "0"}}}], "tolerations": null}})
    );
}

#[test]
fn a_top_level_field_of_the_wrong_type() {
    assert_eq!(
        err(
            "",
            "ConfigMap",
            json!({"metadata": {"name": "c"}, "data": {"a": 1}})
        ),
        "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
    );
    assert_eq!(
        err("", "ConfigMap", json!({"immutable": "yes"})),
        "json: cannot unmarshal string into Go struct field ConfigMap.immutable of type bool"
    );
    assert_eq!(
        err("", "ConfigMap", json!({"data": ["a"]})),
        "json: cannot unmarshal array into Go struct field ConfigMap.data of type map[string]string"
    );
}

#[test]
fn a_nested_struct_field_names_the_innermost_struct_and_the_whole_path() {
    assert_eq!(
        err(
            "apps",
            "Deployment",
            deployment(json!({"replicas": "three"}))
        ),
        "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
    );
    assert_eq!(
        err("apps", "Deployment", deployment(json!({"template": "x"}))),
        "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.template of type v1.PodTemplateSpec"
    );
    assert_eq!(
        err(
            "",
            "Pod",
            json!({"spec": {"hostNetwork": "yes", "containers": []}})
        ),
        "json: cannot unmarshal string into Go struct field PodSpec.spec.hostNetwork of type bool"
    );
    assert_eq!(
        err(
            "",
            "Pod",
            json!({"spec": {"terminationGracePeriodSeconds": "30"}})
        ),
        "json: cannot unmarshal string into Go struct field PodSpec.spec.terminationGracePeriodSeconds of type int64"
    );
}

#[test]
fn inside_lists_of_structs_the_path_has_no_indexes() {
    let body = pod_template(json!({"containers": [
        {"name": "a", "image": "i"},
        {"name": "b", "image": "i", "ports": [{"containerPort": 80}, {"containerPort": "81"}]},
    ]}));
    assert_eq!(
        err("apps", "Deployment", body),
        "json: cannot unmarshal string into Go struct field ContainerPort.spec.template.spec.containers.ports.containerPort of type int32"
    );
    assert_eq!(
        err("", "Service", json!({"spec": {"ports": {}}})),
        "json: cannot unmarshal object into Go struct field ServiceSpec.spec.ports of type []v1.ServicePort"
    );
    assert_eq!(
        err(
            "rbac.authorization.k8s.io",
            "Role",
            json!({"rules": [{"verbs": "get"}]})
        ),
        "json: cannot unmarshal string into Go struct field PolicyRule.rules.verbs of type []string"
    );
}

#[test]
fn inside_maps_the_path_stops_at_the_map() {
    let body = pod_template(json!({"containers": []}));
    let mut body = body;
    body["spec"]["template"]["metadata"]["labels"]["x"] = json!(true);
    assert_eq!(
        err("apps", "Deployment", body),
        "json: cannot unmarshal bool into Go struct field ObjectMeta.spec.template.metadata.labels of type string"
    );
    assert_eq!(
        err("", "Secret", json!({"data": {"a": 5}})),
        "json: cannot unmarshal number into Go struct field Secret.data of type []uint8"
    );
    assert_eq!(
        err("", "Secret", json!({"data": {"a": "not base64!"}})),
        "illegal base64 data at input byte 3"
    );
    // Go skips line breaks, and counts them in the offset.
    assert_eq!(
        find(
            "",
            "ConfigMap",
            &json!({"binaryData": {"a": "YWJj\nZGVm\r\n"}})
        ),
        None
    );
    assert_eq!(
        err("", "ConfigMap", json!({"binaryData": {"a": "YW\nJj!A=="}})),
        "illegal base64 data at input byte 5"
    );
}

#[test]
fn integers_out_of_range_and_fractions_carry_their_text() {
    assert_eq!(
        err(
            "apps",
            "Deployment",
            deployment(json!({"replicas": 1_099_511_627_776_i64}))
        ),
        "json: cannot unmarshal number 1099511627776 into Go struct field DeploymentSpec.spec.replicas of type int32"
    );
    assert_eq!(
        err("apps", "Deployment", deployment(json!({"replicas": 1.5}))),
        "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32"
    );
    assert_eq!(
        err(
            "",
            "Pod",
            json!({"spec": {"activeDeadlineSeconds": u64::MAX}})
        ),
        "json: cannot unmarshal number 18446744073709551615 into Go struct field PodSpec.spec.activeDeadlineSeconds of type int64"
    );
    // `-0` is an integer to Go's ParseInt.
    let minus_zero: Value = serde_json::from_str(r#"{"spec": {"replicas": -0}}"#).unwrap();
    assert_eq!(find("apps", "Deployment", &minus_zero), None);
    // A fitting integer of either width is fine.
    assert_eq!(
        find(
            "",
            "Pod",
            &json!({"spec": {"activeDeadlineSeconds": 1_099_511_627_776_i64}})
        ),
        None
    );
}

#[test]
fn named_go_types_print_with_their_package() {
    assert_eq!(
        err(
            "",
            "Service",
            json!({"spec": {"ports": [{"port": 80, "protocol": 6}]}})
        ),
        "json: cannot unmarshal number into Go struct field ServicePort.spec.ports.protocol of type v1.Protocol"
    );
    let caps = |add: Value| {
        pod_template(json!({"containers": [{"name": "a",
            "securityContext": {"capabilities": {"add": add}}}]}))
    };
    assert_eq!(
        err("apps", "Deployment", caps(json!("NET_ADMIN"))),
        "json: cannot unmarshal string into Go struct field Capabilities.spec.template.spec.containers.securityContext.capabilities.add of type []v1.Capability"
    );
    assert_eq!(
        err("apps", "Deployment", caps(json!([5]))),
        "json: cannot unmarshal number into Go struct field Capabilities.spec.template.spec.containers.securityContext.capabilities.add of type v1.Capability"
    );
    assert_eq!(
        err(
            "",
            "Pod",
            json!({"spec": {"containers": [{"name": "a", "resources": {"limits": "1"}}]}})
        ),
        "json: cannot unmarshal string into Go struct field ResourceRequirements.spec.containers.resources.limits of type v1.ResourceList"
    );
    assert_eq!(
        err(
            "",
            "Namespace",
            json!({"spec": {"finalizers": "kubernetes"}})
        ),
        "json: cannot unmarshal string into Go struct field NamespaceSpec.spec.finalizers of type []v1.FinalizerName"
    );
    assert_eq!(
        err("", "ConfigMap", json!({"metadata": {"uid": 7}})),
        "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.uid of type types.UID"
    );
}

#[test]
fn the_first_mismatch_in_document_order_is_reported() {
    let body = json!({"spec": {"replicas": "x", "minReadySeconds": "y"}});
    assert_eq!(
        err("apps", "Deployment", body.clone()),
        "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
    );
    // The patched object is decoded with its keys sorted.
    assert_eq!(
        find_in("apps", "v1", "Deployment", &body, true).unwrap(),
        "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.minReadySeconds of type int32"
    );
    let body = json!({"spec": {"minReadySeconds": "y", "replicas": "x"}});
    assert_eq!(
        err("apps", "Deployment", body),
        "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.minReadySeconds of type int32"
    );
    // A skipped value is not looked into.
    let body = json!({"spec": {"template": [{"spec": 1}], "replicas": "x"}});
    assert_eq!(
        err("apps", "Deployment", body),
        "json: cannot unmarshal array into Go struct field DeploymentSpec.spec.template of type v1.PodTemplateSpec"
    );
}

#[test]
fn types_with_their_own_decoder_end_the_decoding_and_win() {
    // A quantity that does not parse wins over an earlier mismatch.
    let body = json!({"spec": {"hard": {"cpu": true}}, "metadata": {"name": 5}});
    assert_eq!(
        err("", "ResourceQuota", body),
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
    let body =
        json!({"metadata": {"name": 5}, "spec": {"ports": [{"port": 80, "targetPort": true}]}});
    assert_eq!(
        err("", "Service", body),
        "json: cannot unmarshal bool into Go struct field ServicePort.spec.ports.targetPort of type int32"
    );
    assert_eq!(
        err(
            "",
            "Service",
            json!({"spec": {"ports": [{"port": 80, "targetPort": 1.5}]}})
        ),
        "json: cannot unmarshal number 1.5 into Go struct field ServicePort.spec.ports.targetPort of type int32"
    );
    assert_eq!(
        err(
            "",
            "ConfigMap",
            json!({"metadata": {"creationTimestamp": 5}})
        ),
        "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.creationTimestamp of type string"
    );
}

#[test]
fn values_the_decoder_accepts_are_no_error() {
    let ok = [
        (
            "",
            "Service",
            json!({"spec": {"ports": [{"port": 80, "targetPort": "http"},
                                                  {"port": 81, "targetPort": 8081}]}}),
        ),
        (
            "",
            "Pod",
            json!({"spec": {"containers": [{"name": "a",
            "resources": {"limits": {"cpu": 1, "memory": "1Gi"}}}]}}),
        ),
        (
            "",
            "ConfigMap",
            json!({"data": {"a": null}, "unknown": {"x": 1}, "binaryData": {"b": "AAAA"}}),
        ),
        (
            "apps",
            "Deployment",
            deployment(json!({"replicas": null, "template": null})),
        ),
        (
            "apps",
            "ControllerRevision",
            json!({"data": [1, "anything"], "revision": 3}),
        ),
        (
            "",
            "ConfigMap",
            json!({"metadata": {"managedFields": [{"fieldsV1": {"f:data": {}}}]}}),
        ),
    ];
    for (g, k, body) in ok {
        assert_eq!(find(g, k, &body), None, "{body}");
    }
    // Custom resources and non-objects are not judged here.
    assert_eq!(find("example.com", "Foo", &json!({"spec": 1})), None);
    assert_eq!(find("", "ConfigMap", &json!([1])), None);
    // A kind that is not a string fails earlier, with another message.
    assert_eq!(find("", "ConfigMap", &json!({"kind": 1, "data": 1})), None);
}

#[test]
fn the_whole_message_names_kind_and_version() {
    let res = crate::registry::builtins()
        .into_iter()
        .find(|r| r.plural == "deployments")
        .unwrap();
    assert_eq!(
        message(&res, &deployment(json!({"replicas": "three"}))).unwrap(),
        "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot \
         unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
    );
}

#[test]
fn the_special_definitions_are_the_schemas_own_names() {
    let defs = crate::builtin::schemas();
    for def in [QUANTITY, INT_OR_STRING, TIME, MICRO_TIME]
        .iter()
        .chain(ANYTHING)
    {
        assert!(defs.contains_key(*def), "{def} is not in the schemas");
    }
    assert_eq!(
        err(
            "coordination.k8s.io",
            "Lease",
            json!({"spec": {"renewTime": []}})
        ),
        "json: cannot unmarshal array into Go struct field LeaseSpec.spec.renewTime of type string"
    );
    let crd = json!({"spec": {"versions": [{"name": "v1", "subresources": {"status": true}}]}});
    assert_eq!(
        err("apiextensions.k8s.io", "CustomResourceDefinition", crd),
        "json: cannot unmarshal bool into Go struct field CustomResourceSubresources.spec.versions.subresources.status of type v1.CustomResourceSubresourceStatus"
    );
}

#[test]
fn every_named_type_is_a_field_of_its_definition() {
    let defs = crate::builtin::schemas();
    for (def, field, _) in NAMED {
        let props = defs.get(*def).and_then(|d| d.get("properties"));
        assert!(
            props.and_then(|p| p.get(*field)).is_some(),
            "{def}.{field} is not in the schemas"
        );
    }
}

#[test]
fn go_json_sorts_keys_and_escapes_html() {
    let mut out = String::new();
    go_json(
        &json!({"b": 1, "a": ["<&>", {"d": null, "c": true}]}),
        &mut out,
    );
    assert_eq!(
        out,
        r#"{"a":["\u003c\u0026\u003e",{"c":true,"d":null}],"b":1}"#
    );
    assert_eq!(go_quote(r#"{"a":"\n"}"#), r#""{\"a\":\"\\n\"}""#);
}

/// Field names the kinds use, so that random bodies reach deep fields.
const KEYS: &[&str] = &[
    "spec",
    "metadata",
    "status",
    "template",
    "containers",
    "ports",
    "replicas",
    "data",
    "labels",
    "resources",
    "limits",
    "hard",
    "rules",
    "selector",
    "matchLabels",
    "name",
    "targetPort",
    "port",
    "protocol",
    "creationTimestamp",
    "managedFields",
    "fieldsV1",
    "jobTemplate",
    "versions",
    "schema",
    "openAPIV3Schema",
    "properties",
    "items",
    "webhooks",
    "subjects",
    "capabilities",
    "securityContext",
    "add",
    "binaryData",
    "x",
];

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        (-1e12f64..1e12).prop_map(|f| json!(f)),
        "[a-zA-Z0-9+/=. -]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..6).prop_map(|kv| {
                Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            }),
        ]
    })
}

proptest! {
    #[test]
    fn never_panics_on_random_json_for_any_kind(body in any_json(), sorted in any::<bool>()) {
        let wrapped = json!({"spec": body, "metadata": body, "data": body});
        for b in crate::builtin::table() {
            for v in [&body, &wrapped] {
                let found = find_in(b.group, b.version, b.kind, v, sorted);
                // Whatever is refused for a type error, the typed form
                // refuses too (quantity strings it keeps as text).
                if let Some(e) = found.filter(|e| e.starts_with("json:")) {
                    prop_assert!((b.typed)(v).is_none(), "{}: {} refused: {}", b.kind, v, e);
                }
            }
        }
    }
}
