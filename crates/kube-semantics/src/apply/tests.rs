//! Tests of server-side apply and managedFields bookkeeping.

use super::*;
use proptest::prelude::*;
use serde_json::json;

const T0: &str = "2024-01-01T00:00:00Z";
const T1: &str = "2024-01-01T00:01:00Z";
const T2: &str = "2024-01-01T00:02:00Z";

fn cm(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}, "data": data})
}

fn entry<'a>(obj: &'a Value, manager: &str) -> &'a Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == manager)
        .unwrap_or_else(|| panic!("no entry for {manager} in {obj}"))
}

fn owned(obj: &Value, manager: &str) -> FieldSet {
    managed_fields(obj)
        .into_iter()
        .filter(|e| e.manager == manager)
        .flat_map(|e| e.fields)
        .collect()
}

fn p(path: &[&str]) -> FieldPath {
    path.iter().map(|s| field(s)).collect()
}

#[test]
fn create_by_apply_records_the_server_format() {
    let cfg = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "ns", "labels": {"app": "web"}},
        "data": {"key": "v"}
    });
    let out = apply(None, &cfg, "mirra", false, T0).unwrap();
    assert_eq!(
        out["metadata"]["managedFields"],
        json!([{
            "manager": "mirra",
            "operation": "Apply",
            "apiVersion": "v1",
            "time": T0,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:key": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}
        }])
    );
    assert_eq!(out["data"], json!({"key": "v"}));
    assert_eq!(out["metadata"]["labels"], json!({"app": "web"}));
}

#[test]
fn reapplying_the_same_config_changes_nothing() {
    let cfg = cm(json!({"a": "1"}));
    let once = apply(None, &cfg, "m", false, T0).unwrap();
    let twice = apply(Some(&once), &cfg, "m", false, T1).unwrap();
    assert_eq!(twice, once);
    assert_eq!(
        entry(&twice, "m")["time"],
        T0,
        "a no-op apply keeps the entry's time"
    );
}

#[test]
fn conflict_with_an_updater_is_reported_like_the_server() {
    let created = record_update(
        None,
        &cm(json!({"key": "old"})),
        "kubectl-client-side-apply",
        T0,
        None,
    );
    let err = apply(
        Some(&created),
        &cm(json!({"key": "new"})),
        "mirra",
        false,
        T1,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using v1: .data.key"
    );
    let ApplyError::Conflict(c) = err else {
        panic!("expected a conflict")
    };
    assert_eq!(c[0].manager, "kubectl-client-side-apply");
    assert_eq!(c[0].field, ".data.key");
}

#[test]
fn several_conflicts_are_grouped_by_manager() {
    let a = apply(None, &cm(json!({"x": "1", "y": "1"})), "alpha", false, T0).unwrap();
    let b = apply(Some(&a), &cm(json!({"z": "1"})), "beta", false, T0).unwrap();
    let err = apply(
        Some(&b),
        &cm(json!({"x": "2", "y": "2", "z": "2"})),
        "gamma",
        false,
        T1,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 3 conflicts: conflicts with \"alpha\":\n- .data.x\n- .data.y\nconflicts with \"beta\":\n- .data.z"
    );
}

#[test]
fn managers_print_like_the_server() {
    let c = |op, sub: Option<&str>| FieldConflict {
        manager: "lb".into(),
        field: ".status".into(),
        operation: op,
        api_version: "v1".into(),
        subresource: sub.map(str::to_string),
    };
    assert_eq!(c(Operation::Apply, None).manager_display(), "\"lb\"");
    assert_eq!(
        c(Operation::Update, None).manager_display(),
        "\"lb\" using v1"
    );
    assert_eq!(
        c(Operation::Update, Some("status")).manager_display(),
        "\"lb\" with subresource \"status\" using v1"
    );
    assert_eq!(
        conflict_message(&[c(Operation::Apply, Some("status"))]),
        "Apply failed with 1 conflict: conflict with \"lb\" with subresource \"status\": .status"
    );
}

#[test]
fn force_takes_ownership() {
    let created = record_update(
        None,
        &cm(json!({"key": "old", "other": "o"})),
        "kubectl",
        T0,
        None,
    );
    let out = apply(
        Some(&created),
        &cm(json!({"key": "new"})),
        "mirra",
        true,
        T1,
    )
    .unwrap();
    assert_eq!(out["data"], json!({"key": "new", "other": "o"}));
    assert!(owned(&out, "mirra").contains(&p(&["data", "key"])));
    let kubectl = owned(&out, "kubectl");
    assert!(!kubectl.contains(&p(&["data", "key"])));
    assert!(kubectl.contains(&p(&["data", "other"])));
}

#[test]
fn same_value_is_shared_without_conflict() {
    let created = record_update(None, &cm(json!({"key": "v"})), "kubectl", T0, None);
    let out = apply(Some(&created), &cm(json!({"key": "v"})), "mirra", false, T1).unwrap();
    assert!(owned(&out, "mirra").contains(&p(&["data", "key"])));
    assert!(owned(&out, "kubectl").contains(&p(&["data", "key"])));
    // Dropping it from mirra's config keeps it: kubectl still owns it.
    let out = apply(Some(&out), &cm(json!({})), "mirra", false, T2).unwrap();
    assert_eq!(out["data"], json!({"key": "v"}));
    // mirra now owns only that `data` exists (its config says `data: {}`).
    assert_eq!(owned(&out, "mirra"), [p(&["data"])].into_iter().collect());
}

#[test]
fn omitted_fields_are_removed_only_when_nobody_else_owns_them() {
    let a = apply(
        None,
        &cm(json!({"mine": "1", "shared": "s"})),
        "mirra",
        false,
        T0,
    )
    .unwrap();
    let b = apply(
        Some(&a),
        &cm(json!({"shared": "s", "theirs": "t"})),
        "other",
        false,
        T1,
    )
    .unwrap();
    let c = apply(Some(&b), &cm(json!({})), "mirra", false, T2).unwrap();
    assert_eq!(c["data"], json!({"shared": "s", "theirs": "t"}));
    // Both configs still say `data: {}`: the map stays, empty.
    let d = apply(Some(&c), &cm(json!({})), "other", false, T2).unwrap();
    assert_eq!(d["data"], json!({}));
    // A map emptied by pruning and claimed by nobody goes too.
    let bare = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}});
    let e = apply(Some(&b), &bare, "mirra", false, T2).unwrap();
    let f = apply(Some(&e), &bare, "other", false, T2).unwrap();
    assert!(f.get("data").is_none(), "{f}");
}

#[test]
fn identity_fields_are_never_owned() {
    let cfg = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "ns", "uid": "u", "resourceVersion": "5",
                     "generation": 2, "creationTimestamp": T0}
    });
    let out = apply(None, &cfg, "m", false, T0).unwrap();
    assert!(out["metadata"].get("managedFields").is_none(), "{out}");
    let out = record_update(None, &cfg, "m", T0, None);
    assert!(out["metadata"].get("managedFields").is_none(), "{out}");
}

fn deployment(containers: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"template": {"spec": {"containers": containers}}}
    })
}

#[test]
fn associative_lists_merge_by_key_and_encode_items() {
    let a = apply(
        None,
        &deployment(json!([{"name": "web", "image": "web:1", "ports": [{"containerPort": 80}]}])),
        "mirra",
        false,
        T0,
    )
    .unwrap();
    let fields = &entry(&a, "mirra")["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"];
    assert_eq!(
        fields,
        &json!({"k:{\"name\":\"web\"}": {
            ".": {}, "f:image": {}, "f:name": {},
            "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}
        }})
    );
    // Another manager adds a sidecar; the first manager's re-apply keeps it.
    let b = apply(
        Some(&a),
        &deployment(json!([{"name": "side", "image": "side:1"}])),
        "other",
        false,
        T1,
    )
    .unwrap();
    let c = apply(
        Some(&b),
        &deployment(json!([{"name": "web", "image": "web:2", "ports": [{"containerPort": 80}]}])),
        "mirra",
        false,
        T2,
    )
    .unwrap();
    let names: Vec<&str> = c["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["web", "side"]);
    assert_eq!(
        c["spec"]["template"]["spec"]["containers"][0]["image"],
        "web:2"
    );
    // Dropping the web container removes it; the sidecar stays.
    let d = apply(Some(&c), &deployment(json!([])), "mirra", false, T2).unwrap();
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"],
        json!([{"name": "side", "image": "side:1"}])
    );
}

#[test]
fn an_item_another_manager_changed_survives_with_its_key() {
    let a = apply(
        None,
        &deployment(json!([{"name": "web", "image": "web:1", "args": ["x"]}])),
        "mirra",
        false,
        T0,
    )
    .unwrap();
    let mut edited = a.clone();
    edited["spec"]["template"]["spec"]["containers"][0]["image"] = json!("web:hotfix");
    let b = record_update(Some(&a), &edited, "kubectl-edit", T1, None);
    let c = apply(Some(&b), &deployment(json!([])), "mirra", false, T2).unwrap();
    assert_eq!(
        c["spec"]["template"]["spec"]["containers"],
        json!([{"name": "web", "image": "web:hotfix"}])
    );
}

#[test]
fn sets_are_owned_by_value() {
    let cfg = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "finalizers": ["a.io/x"]}});
    let a = apply(None, &cfg, "m", false, T0).unwrap();
    assert_eq!(
        entry(&a, "m")["fieldsV1"],
        json!({"f:metadata": {"f:finalizers": {"v:\"a.io/x\"": {}}}})
    );
    let mut other = a.clone();
    other["metadata"]["finalizers"] = json!(["a.io/x", "b.io/y"]);
    let b = record_update(Some(&a), &other, "ctl", T1, None);
    let c = apply(
        Some(&b),
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
        "m",
        false,
        T2,
    )
    .unwrap();
    assert_eq!(c["metadata"]["finalizers"], json!(["b.io/y"]));
}

#[test]
fn service_ports_key_on_port_and_protocol() {
    let svc = |ports: Value| json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": ports}});
    let a = apply(
        None,
        &svc(json!([{"port": 80, "targetPort": 8080}])),
        "m",
        false,
        T0,
    )
    .unwrap();
    let err = apply(
        Some(&a),
        &svc(json!([{"port": 80, "targetPort": 9090}])),
        "n",
        false,
        T1,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"m\": .spec.ports[port=80,protocol=\"TCP\"].targetPort"
    );
}

#[test]
fn atomic_lists_are_owned_whole() {
    let pod = |tol: Value| json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"tolerations": tol}});
    let a = apply(None, &pod(json!([{"key": "a"}])), "m", false, T0).unwrap();
    assert_eq!(
        entry(&a, "m")["fieldsV1"],
        json!({"f:spec": {"f:tolerations": {}}})
    );
    let err = apply(Some(&a), &pod(json!([{"key": "b"}])), "n", false, T1).unwrap_err();
    assert!(matches!(err, ApplyError::Conflict(_)));
    let b = apply(Some(&a), &pod(json!([{"key": "b"}])), "n", true, T1).unwrap();
    assert_eq!(b["spec"]["tolerations"], json!([{"key": "b"}]));
    assert!(
        managed_fields(&b).iter().all(|e| e.manager != "m"),
        "m owned nothing else"
    );
}

#[test]
fn status_is_left_alone_by_a_main_resource_apply_with_reset() {
    let live = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"type": "ClusterIP"},
                      "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}});
    let live = record_update(None, &live, "creator", T0, None);
    let cfg = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"type": "ClusterIP"},
                     "status": {"loadBalancer": {}}});
    let opts = ManagedFieldsOptions::main_resource_with_status();
    let out = apply_with(Some(&live), &cfg, "m", false, T1, &opts).unwrap();
    assert_eq!(out["status"], live["status"]);
    assert!(
        owned(&out, "m")
            .iter()
            .all(|p| p.first() != Some(&field("status")))
    );
    // Through the status subresource only status is taken, and recorded so.
    let status_cfg = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"type": "NodePort"},
                            "status": {"loadBalancer": {"ingress": [{"ip": "5.6.7.8"}]}}});
    let out = apply_with(
        Some(&out),
        &status_cfg,
        "lb",
        true,
        T2,
        &ManagedFieldsOptions::status_subresource(),
    )
    .unwrap();
    assert_eq!(out["spec"]["type"], "ClusterIP");
    assert_eq!(out["status"]["loadBalancer"]["ingress"][0]["ip"], "5.6.7.8");
    assert_eq!(entry(&out, "lb")["subresource"], "status");
}

#[test]
fn record_update_moves_changed_fields() {
    let v1 = record_update(None, &cm(json!({"a": "1", "b": "1"})), "creator", T0, None);
    assert_eq!(
        entry(&v1, "creator")["fieldsV1"],
        json!({"f:data": {"f:a": {}, "f:b": {}}})
    );
    let v2 = record_update(
        Some(&v1),
        &cm(json!({"a": "2", "b": "1", "c": "1"})),
        "editor",
        T1,
        None,
    );
    assert_eq!(
        owned(&v2, "creator"),
        [p(&["data", "b"])].into_iter().collect()
    );
    assert_eq!(
        owned(&v2, "editor"),
        [p(&["data", "a"]), p(&["data", "c"])].into_iter().collect()
    );
    assert_eq!(entry(&v2, "editor")["time"], T1);
    assert_eq!(entry(&v2, "creator")["time"], T0);
    // Removing a field removes it from its owner; an owner left with nothing
    // disappears.
    let v3 = record_update(
        Some(&v2),
        &cm(json!({"a": "2", "c": "1"})),
        "editor",
        T2,
        None,
    );
    assert!(managed_fields(&v3).iter().all(|e| e.manager != "creator"));
    // A no-op update changes nothing.
    let v4 = record_update(Some(&v3), &v3, "someone", T2, None);
    assert_eq!(v4, v3);
}

#[test]
fn record_update_honours_client_managed_fields() {
    let v1 = record_update(None, &cm(json!({"a": "1"})), "creator", T0, None);
    let mut cleared = v1.clone();
    cleared["metadata"]["managedFields"] = json!([{}]);
    let v2 = record_update(Some(&v1), &cleared, "x", T1, None);
    assert!(v2["metadata"].get("managedFields").is_none());
    // An empty list is ignored: clients that do not know the field keep it.
    let mut emptied = v1.clone();
    emptied["metadata"]["managedFields"] = json!([]);
    let v3 = record_update(Some(&v1), &emptied, "x", T1, None);
    assert_eq!(
        v3["metadata"]["managedFields"],
        v1["metadata"]["managedFields"]
    );
    // Different entries replace the stored ones.
    let mut rewritten = v1.clone();
    rewritten["metadata"]["managedFields"][0]["manager"] = json!("renamed");
    let v4 = record_update(Some(&v1), &rewritten, "x", T1, None);
    assert_eq!(managed_fields(&v4)[0].manager, "renamed");
}

#[test]
fn update_managers_are_capped() {
    let mut obj = record_update(
        None,
        &cm(json!({"k0": "v"})),
        "m0",
        "2024-01-01T00:00:00Z",
        None,
    );
    for i in 1..15 {
        let mut next = obj.clone();
        next["data"][format!("k{i}")] = json!("v");
        obj = record_update(
            Some(&obj),
            &next,
            &format!("m{i}"),
            &format!("2024-01-01T00:00:{i:02}Z"),
            None,
        );
    }
    let entries = managed_fields(&obj);
    assert_eq!(entries.len(), MAX_UPDATE_MANAGERS);
    let ancient: Vec<_> = entries
        .iter()
        .filter(|e| e.manager == ANCIENT_CHANGES_MANAGER)
        .collect();
    assert_eq!(ancient.len(), 1);
    // Nothing is lost: every field is still owned by someone.
    let all: FieldSet = entries
        .iter()
        .flat_map(|e| e.fields.iter().cloned())
        .collect();
    assert_eq!(all.len(), 15);
}

#[test]
fn first_apply_on_an_unmanaged_object_protects_existing_fields() {
    let live = cm(json!({"keep": "1"}));
    let out = apply(Some(&live), &cm(json!({"new": "2"})), "m", false, T1).unwrap();
    assert_eq!(out["data"], json!({"keep": "1", "new": "2"}));
    assert!(owned(&out, BEFORE_FIRST_APPLY_MANAGER).contains(&p(&["data", "keep"])));
    let err = apply(Some(&live), &cm(json!({"keep": "x"})), "m", false, T1).unwrap_err();
    assert!(
        err.to_string().contains("\"before-first-apply\" using v1"),
        "{err}"
    );
}

#[test]
fn malformed_apply_requests_are_invalid() {
    assert!(matches!(
        apply(None, &json!([1]), "m", false, T0),
        Err(ApplyError::Invalid(_))
    ));
    let with_mf = json!({"metadata": {"managedFields": [{"manager": "x"}]}});
    assert_eq!(
        apply(None, &with_mf, "m", false, T0)
            .unwrap_err()
            .to_string(),
        "metadata.managedFields must be nil"
    );
    let live = cm(json!({}));
    let mut other_version = cm(json!({}));
    other_version["apiVersion"] = json!("v2");
    assert_eq!(
        apply(Some(&live), &other_version, "m", false, T0)
            .unwrap_err()
            .to_string(),
        "Incorrect version specified in apply patch. Specified patch version: v2, expected: v1"
    );
    assert!(apply(None, &json!({"metadata": "x"}), "m", false, T0).is_err());
}

#[test]
fn garbage_managed_fields_are_tolerated() {
    let mut live = cm(json!({"a": "1"}));
    live["metadata"]["managedFields"] = json!([
        "junk", {"operation": "Nope"}, {"operation": "Apply", "fieldsV1": 5},
        {"manager": "ok", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}
    ]);
    assert_eq!(managed_fields(&live).len(), 1);
    let err = apply(Some(&live), &cm(json!({"a": "2"})), "m", false, T1).unwrap_err();
    assert!(err.to_string().contains("\"ok\" using v1"));
    let out = record_update(Some(&live), &cm(json!({"a": "2"})), "m", T1, None);
    assert_eq!(owned(&out, "m"), [p(&["data", "a"])].into_iter().collect());
}

// ---------------------------------------------------------------------------
// Properties

/// Pod-like configs that exercise maps, associative lists, sets and atomic
/// lists under one manager-friendly shape.
fn arb_config() -> impl Strategy<Value = Value> {
    let scalar = prop_oneof![
        "[a-c]{0,2}".prop_map(Value::from),
        (0i64..3).prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
    ];
    let small_map = proptest::collection::btree_map("[a-d]", scalar.clone(), 0..3)
        .prop_map(|m| Value::Object(m.into_iter().collect()));
    let container = (
        prop_oneof![Just("web"), Just("side"), Just("init")],
        proptest::option::of(scalar.clone()),
        proptest::option::of(proptest::collection::vec("[a-c]", 0..3)),
        proptest::option::of(small_map.clone()),
    )
        .prop_map(|(name, image, args, extra)| {
            let mut m = Map::new();
            m.insert("name".into(), json!(name));
            if let Some(i) = image {
                m.insert("image".into(), i);
            }
            if let Some(a) = args {
                m.insert("args".into(), json!(a));
            }
            if let Some(e) = extra {
                m.insert("extra".into(), e);
            }
            Value::Object(m)
        });
    (
        proptest::option::of(small_map.clone()),
        proptest::option::of(proptest::collection::vec(
            prop_oneof![Just("f1"), Just("f2"), Just("f3")],
            0..3,
        )),
        proptest::option::of(proptest::collection::vec(container, 0..3)),
        proptest::option::of(small_map.clone()),
        proptest::option::of(scalar),
        proptest::option::of(small_map),
    )
        .prop_map(
            |(labels, finalizers, containers, data, replicas, spec_extra)| {
                let mut meta = Map::new();
                meta.insert("name".into(), json!("obj"));
                if let Some(l) = labels {
                    meta.insert("labels".into(), l);
                }
                if let Some(f) = finalizers {
                    meta.insert("finalizers".into(), json!(f));
                }
                let mut spec = Map::new();
                if let Some(c) = containers {
                    spec.insert("containers".into(), Value::Array(c));
                }
                if let Some(r) = replicas {
                    spec.insert("replicas".into(), r);
                }
                if let Some(e) = spec_extra {
                    spec.insert("extra".into(), e);
                }
                let mut obj = Map::new();
                obj.insert("apiVersion".into(), json!("v1"));
                obj.insert("kind".into(), json!("Pod"));
                obj.insert("metadata".into(), Value::Object(meta));
                if !spec.is_empty() {
                    obj.insert("spec".into(), Value::Object(spec));
                }
                if let Some(d) = data {
                    obj.insert("data".into(), d);
                }
                Value::Object(obj)
            },
        )
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-2i64..3).prop_map(Value::from),
        "[a-c]{0,2}".prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 60, 5, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("metadata".to_string()),
                    Just("managedFields".to_string()),
                    Just("fieldsV1".to_string()),
                    Just("operation".to_string()),
                    Just("manager".to_string()),
                    Just("containers".to_string()),
                    Just("finalizers".to_string()),
                    Just("name".to_string()),
                    Just("status".to_string()),
                    Just("f:a".to_string()),
                    "[a-c]",
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn leaves_of(v: &Value) -> BTreeMap<FieldPath, Option<Value>> {
    let opts = ManagedFieldsOptions::default();
    let walker = Walker::new(&opts, kind_of(v));
    walker
        .leaves(&body_of(&strip_nulls(v)))
        .into_iter()
        .map(|(k, v)| (k, v.cloned()))
        .collect()
}

proptest! {

    #[test]
    fn apply_is_idempotent(cfg in arb_config(), live in proptest::option::of(arb_config())) {
        let base = live.map(|l| apply(None, &l, "other", false, T0).unwrap());
        // Force so the first apply always succeeds; the second must be a no-op.
        let once = apply(base.as_ref(), &cfg, "m", true, T1).unwrap();
        let twice = apply(Some(&once), &cfg, "m", false, T2);
        prop_assert_eq!(twice, Ok(once));
    }

    #[test]
    fn a_sole_manager_ends_with_exactly_its_last_config(a in arb_config(), b in arb_config()) {
        let first = apply(None, &a, "m", false, T0).unwrap();
        let second = apply(Some(&first), &b, "m", false, T1).unwrap();
        prop_assert_eq!(leaves_of(&second), leaves_of(&b));
        let owned_paths: FieldSet = leaves_of(&b).into_keys().collect();
        prop_assert_eq!(owned(&second, "m"), owned_paths);
    }

    #[test]
    fn other_managers_fields_survive_an_unforced_apply(a in arb_config(), b in arb_config()) {
        let first = apply(None, &a, "alpha", false, T0).unwrap();
        let alpha = owned(&first, "alpha");
        let before = leaves_of(&first);
        match apply(Some(&first), &b, "beta", false, T1) {
            Ok(second) => {
                let after = leaves_of(&second);
                let after_paths: FieldSet = after.keys().cloned().collect();
                for path in &alpha {
                    let was = before.get(path);
                    let filled = matches!(was, Some(Some(v)) if is_empty_container(v))
                        && any_under(&after_paths, path);
                    // An owned empty container may be filled by others; every
                    // other owned field keeps its exact value.
                    if !filled {
                        prop_assert_eq!(after.get(path), was, "{}", fieldpath::path_to_string(path));
                    }
                }
                prop_assert_eq!(owned(&second, "alpha"), alpha);
            }
            Err(ApplyError::Conflict(c)) => prop_assert!(!c.is_empty()),
            Err(other) => prop_assert!(false, "unexpected error {other}"),
        }
        // With force the apply always succeeds and beta owns its config.
        let forced = apply(Some(&first), &b, "beta", true, T1).unwrap();
        let beta_paths: FieldSet = leaves_of(&b).into_keys().collect();
        prop_assert_eq!(owned(&forced, "beta"), beta_paths);
    }

    #[test]
    fn record_update_gives_every_set_field_an_owner(a in arb_config(), b in arb_config()) {
        let created = record_update(None, &a, "c", T0, None);
        let updated = record_update(Some(&created), &b, "u", T1, None);
        let owned_all: FieldSet = managed_fields(&updated).into_iter().flat_map(|e| e.fields).collect();
        let present: FieldSet = leaves_of(&b).into_keys().collect();
        prop_assert_eq!(owned_all, present);
    }

    #[test]
    fn nothing_panics_on_random_json(live in arb_json(), applied in arb_json(), force in any::<bool>()) {
        let _ = apply(Some(&live), &applied, "m", force, T0);
        let _ = apply(None, &applied, "m", force, T0);
        let _ = apply_with(Some(&live), &applied, "m", force, T0, &ManagedFieldsOptions::status_subresource());
        let _ = record_update(Some(&live), &applied, "m", T0, Some("status"));
        let _ = record_update(None, &live, "m", T0, None);
        let _ = managed_fields(&live);
    }
}
