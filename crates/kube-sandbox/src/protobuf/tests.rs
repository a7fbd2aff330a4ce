use super::*;

fn field(n: u64, b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    put_bytes(&mut out, n as u32, b);
    out
}

fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let tm = [field(1, api_version.as_bytes()), field(2, kind.as_bytes())].concat();
    [MAGIC.to_vec(), field(1, &tm), field(2, raw)].concat()
}

proptest::proptest! {
    /// Random bytes after the magic never panic the decoder; they
    /// decode or are a 400.
    #[test]
    fn arbitrary_bytes_never_panic(tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
        let body = [MAGIC.to_vec(), tail.clone()].concat();
        if let Err(e) = decode(&body, "v1", "ConfigMap") {
            proptest::prop_assert_eq!(e.code, 400);
        }
        // The same bytes as a Pod's own message.
        let body = envelope("v1", "Pod", &tail);
        if let Err(e) = decode(&body, "v1", "Pod") {
            proptest::prop_assert_eq!(e.code, 400);
            proptest::prop_assert!(e.message.starts_with("Pod in version \"v1\" cannot be handled as a Pod: "), "{}", e.message);
        }
    }

    /// Whatever JSON object of a kind is encoded decodes to the same
    /// JSON (for the fields the kind has).
    #[test]
    fn configmaps_round_trip(
        name in "[a-z][a-z0-9-]{0,20}",
        data in proptest::collection::btree_map("[a-zA-Z0-9._-]{1,10}", ".{0,20}", 0..5),
        binary in proptest::collection::btree_map("[a-z]{1,5}", proptest::collection::vec(proptest::prelude::any::<u8>(), 1..10), 0..3),
        immutable in proptest::prelude::any::<bool>(),
    ) {
        let binary: Map<String, Value> = binary.into_iter().map(|(k, v)| (k, json!(base64::engine::general_purpose::STANDARD.encode(v)))).collect();
        let mut v = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"a": "b"}, "resourceVersion": "7",
                "creationTimestamp": "2024-05-06T07:08:09Z"},
            "data": data, "immutable": immutable});
        if !binary.is_empty() {
            v["binaryData"] = Value::Object(binary);
        }
        if v["data"].as_object().is_some_and(Map::is_empty) {
            v.as_object_mut().unwrap().remove("data");
        }
        let bytes = encode(&v).unwrap();
        let back = decode(&bytes, "v1", "ConfigMap").unwrap();
        proptest::prop_assert_eq!(back, v);
    }
}

#[test]
fn a_deployment_round_trips_with_the_json_conventions() {
    let v = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "generation": 3,
            "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "apps/v1",
                "time": "2024-01-02T03:04:05Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:replicas": {}}}}]},
        "spec": {"replicas": 0,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "env": [{"name": "K", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}],
                    "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}}}],
                    "volumes": [{"name": "scratch", "emptyDir": {}}],
                    "terminationGracePeriodSeconds": 30}}},
    });
    let bytes = encode(&v).unwrap();
    assert!(bytes.starts_with(MAGIC));
    let back = decode(&bytes, "apps/v1", "Deployment").unwrap();
    assert_eq!(back, v);
}

#[test]
fn durations_read_as_go_writes_them() {
    for (s, n) in [
        ("0s", 0),
        ("1.5s", 1_500_000_000),
        ("1m30s", 90_000_000_000),
        ("2h0m0s", 7_200_000_000_000),
        ("100ms", 100_000_000),
    ] {
        assert_eq!(parse_duration(s), Some(n), "{s}");
        assert_eq!(duration_string(n), s);
    }
}

#[test]
fn bad_bodies_are_the_servers_400s() {
    let e = decode(b"nope", "v1", "ConfigMap").unwrap_err();
    assert_eq!(e.code, 400);
    assert_eq!(
        e.message,
        "the object provided is unrecognized (must be of type ConfigMap): provided data does not appear to be a protobuf message, expected prefix [107 56 115 0] (6e6f7065)"
    );
    let e = decode(b"k8s\0\x0a\xff", "v1", "ConfigMap").unwrap_err();
    assert_eq!(
        e.message,
        "the object provided is unrecognized (must be of type ConfigMap): unexpected EOF (6b3873000aff)"
    );
    let e = decode(&envelope("v1", "Widget", b""), "v1", "ConfigMap").unwrap_err();
    assert_eq!(
        e.message,
        "Widget in version \"v1\" cannot be handled as a ConfigMap: no kind \"Widget\" is registered for version \"v1\" in scheme \"pkg/api/legacyscheme/scheme.go:30\""
    );
    // metadata (field 1) as a varint.
    let e = decode(&envelope("v1", "ConfigMap", &[8, 1]), "v1", "ConfigMap").unwrap_err();
    assert_eq!(
        e.message,
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: proto: wrong wireType = 0 for field metadata of ConfigMap"
    );
}

#[test]
fn a_token_request_decodes() {
    let bound = [field(1, b"Pod"), field(2, b"v1"), field(3, b"web-0")].concat();
    // Field 4 (expirationSeconds) as a varint: 1200.
    let spec = [
        field(1, b"vault"),
        field(3, &bound),
        vec![4 << 3, 0xB0, 0x09],
    ]
    .concat();
    let raw = [field(1, b""), field(2, &spec)].concat();
    let body = envelope("authentication.k8s.io/v1", "TokenRequest", &raw);
    let v = decode(&body, "authentication.k8s.io/v1", "TokenRequest").unwrap();
    assert_eq!(
        v["spec"],
        json!({"audiences": ["vault"], "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "web-0"}, "expirationSeconds": 1200})
    );
}

#[test]
fn an_eviction_with_a_negative_grace_period_decodes() {
    let opts = [
        vec![8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1],
        field(5, b"All"),
    ]
    .concat();
    let meta = [
        field(1, b"web"),
        field(12, &[field(1, b"k"), field(2, b"v")].concat()),
    ]
    .concat();
    let raw = [field(1, &meta), field(2, &opts)].concat();
    let v = decode(
        &envelope("policy/v1", "Eviction", &raw),
        "policy/v1",
        "Eviction",
    )
    .unwrap();
    assert_eq!(
        v,
        json!({"apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": "web", "annotations": {"k": "v"}},
                "deleteOptions": {"gracePeriodSeconds": -1, "dryRun": ["All"]}})
    );
}

#[test]
fn accept_headers_choose_in_order() {
    assert_eq!(prefers_protobuf(None), Some(false));
    assert_eq!(
        prefers_protobuf(Some(
            "application/vnd.kubernetes.protobuf, application/json"
        )),
        Some(true)
    );
    assert_eq!(
        prefers_protobuf(Some(
            "application/json, application/vnd.kubernetes.protobuf"
        )),
        Some(false)
    );
    assert_eq!(prefers_protobuf(Some("*/*")), Some(false));
    assert_eq!(prefers_protobuf(Some("text/plain")), None);
}
