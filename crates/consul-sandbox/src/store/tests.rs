use super::*;
use crate::model::Weights;
use proptest::prelude::*;

fn node(name: &str, addr: &str) -> NodeRec {
    NodeRec {
        id: String::new(),
        name: name.into(),
        address: addr.into(),
        datacenter: "dc1".into(),
        tagged_addresses: None,
        meta: None,
        partition: None,
        create_index: 0,
        modify_index: 0,
    }
}

fn svc(node: &str, id: &str, name: &str, port: i64) -> ServiceRec {
    ServiceRec {
        node: node.into(),
        kind: String::new(),
        id: id.into(),
        name: name.into(),
        tags: None,
        address: String::new(),
        tagged_addresses: BTreeMap::new(),
        meta: None,
        port,
        ports: Vec::new(),
        weights: Weights::DEFAULT,
        enable_tag_override: false,
        ns: None,
        partition: None,
        create_index: 0,
        modify_index: 0,
    }
}

fn check(node: &str, id: &str, service_id: &str, status: &str) -> CheckRec {
    CheckRec {
        node: node.into(),
        check_id: id.into(),
        name: id.into(),
        status: status.into(),
        notes: String::new(),
        output: String::new(),
        service_id: service_id.into(),
        service_name: String::new(),
        service_tags: None,
        check_type: String::new(),
        definition: json!({}),
        ns: None,
        partition: None,
        create_index: 0,
        modify_index: 0,
    }
}

fn register(st: &mut Store, n: &str, s: ServiceRec) -> bool {
    let (r, changed) = st.apply(true, |tx| {
        tx.ensure_node(node(n, "10.0.0.1"));
        tx.ensure_service(s)
    });
    r.unwrap();
    changed
}

#[test]
fn identical_reregistration_counts_a_raft_apply_but_moves_no_index() {
    let mut st = Store::default();
    assert!(register(&mut st, "n1", svc("n1", "web-1", "web", 80)));
    let before = st.service("n1", "web-1").unwrap().clone();
    let idx_before = st.index_for(&WatchKey::Service(svc_key("default", "web")));
    assert!(!register(&mut st, "n1", svc("n1", "web-1", "web", 80)));
    assert_eq!(st.raft_applies(), 2);
    assert_eq!(st.raft_index(), 2);
    assert_eq!(st.service("n1", "web-1").unwrap(), &before);
    assert_eq!(
        st.index_for(&WatchKey::Service(svc_key("default", "web"))),
        idx_before
    );
    assert_eq!(st.index_for(&WatchKey::Node("n1".into())), 1);
    // A real change moves ModifyIndex to the new Raft index only.
    assert!(register(&mut st, "n1", svc("n1", "web-1", "web", 81)));
    let after = st.service("n1", "web-1").unwrap();
    assert_eq!((after.create_index, after.modify_index), (1, 3));
    assert_eq!(
        st.index_for(&WatchKey::Service(svc_key("default", "web"))),
        3
    );
}

#[test]
fn failed_write_rolls_back_everything() {
    let mut st = Store::default();
    register(&mut st, "n1", svc("n1", "a", "web", 80));
    let snapshot = st.clone();
    let (r, changed) = st.apply(true, |tx| {
        tx.ensure_node(node("n2", "10.0.0.2"));
        tx.ensure_service(svc("n2", "b", "db", 5432))?;
        tx.delete_node("n1");
        tx.ensure_service(svc("missing", "c", "x", 1))
    });
    assert_eq!(r, Err(StoreError::MissingNode));
    assert!(!changed);
    assert_eq!(
        st.raft_index(),
        snapshot.raft_index() + 1,
        "the apply still happened"
    );
    let mut expected = snapshot;
    expected.raft_index += 1;
    expected.raft_applies += 1;
    assert_eq!(st, expected);
}

#[test]
fn lookups_are_case_insensitive_and_keep_registered_case() {
    let mut st = Store::default();
    register(&mut st, "Node-A", svc("Node-A", "Web-1", "Web", 80));
    assert_eq!(st.node("node-a").unwrap().name, "Node-A");
    assert_eq!(st.service("NODE-A", "web-1").unwrap().id, "Web-1");
    let r = st.read_service_nodes(
        "default",
        "default",
        "web",
        &ListFilter::default(),
        &AllowAll,
    );
    assert_eq!(r.body.as_array().unwrap().len(), 1);
}

#[test]
fn deleting_last_instance_sets_the_extinction_index() {
    let mut st = Store::default();
    register(&mut st, "n1", svc("n1", "a", "web", 80));
    let (r, _) = st.apply(true, |tx| {
        tx.delete_service("n1", "a");
        Ok::<_, StoreError>(())
    });
    r.unwrap();
    assert_eq!(
        st.index_for(&WatchKey::Service(svc_key("default", "web"))),
        2
    );
    // A never-registered name reports the extinction index too.
    assert_eq!(
        st.index_for(&WatchKey::Service(svc_key("default", "other"))),
        2
    );
}

#[test]
fn node_changes_move_the_indexes_of_its_services() {
    let mut st = Store::default();
    register(&mut st, "n1", svc("n1", "a", "web", 80));
    let (r, changed) = st.apply(true, |tx| {
        tx.ensure_node(node("n1", "10.9.9.9"));
        Ok::<_, StoreError>(())
    });
    r.unwrap();
    assert!(changed);
    assert_eq!(
        st.index_for(&WatchKey::Service(svc_key("default", "web"))),
        2
    );
    assert_eq!(st.index_for(&WatchKey::Node("n1".into())), 2);
    assert_eq!(
        st.index_for(&WatchKey::Services {
            node_meta: false,
            ns: None
        }),
        1
    );
}

#[test]
fn checks_need_their_node_and_service_and_copy_the_service_name() {
    let mut st = Store::default();
    register(&mut st, "n1", svc("n1", "a", "web", 80));
    let (r, _) = st.apply(true, |tx| tx.ensure_check(check("n2", "c", "", "passing")));
    assert_eq!(r, Err(StoreError::MissingNode));
    let (r, _) = st.apply(true, |tx| {
        tx.ensure_check(check("n1", "c", "zz", "passing"))
    });
    assert_eq!(r, Err(StoreError::MissingService));
    let (r, _) = st.apply(true, |tx| tx.ensure_check(check("n1", "c", "a", "")));
    r.unwrap();
    let c = st.check("n1", "c").unwrap();
    assert_eq!(c.service_name, "web");
    assert_eq!(c.status, "critical");
    assert_eq!(
        st.index_for(&WatchKey::Service(svc_key("default", "web"))),
        4
    );
}

#[test]
fn deleting_a_service_deletes_its_checks_but_not_node_checks() {
    let mut st = Store::default();
    register(&mut st, "n1", svc("n1", "a", "web", 80));
    let (r, _) = st.apply(true, |tx| {
        tx.ensure_check(check("n1", "svc-check", "a", "passing"))?;
        tx.ensure_check(check("n1", "node-check", "", "passing"))
    });
    r.unwrap();
    let (r, _) = st.apply(true, |tx| {
        tx.delete_service("n1", "A");
        Ok::<_, StoreError>(())
    });
    r.unwrap();
    assert!(st.check("n1", "svc-check").is_none());
    assert!(st.check("n1", "node-check").is_some());
}

#[test]
fn health_passing_filter_drops_instances_with_any_failing_check() {
    let mut st = Store::default();
    register(&mut st, "n1", svc("n1", "a", "web", 80));
    register(&mut st, "n2", svc("n2", "b", "web", 80));
    let (r, _) = st.apply(true, |tx| {
        tx.ensure_check(check("n1", "c1", "a", "passing"))?;
        tx.ensure_check(check("n2", "serf", "", "critical"))
    });
    r.unwrap();
    let all = st.read_health_service(
        "default",
        "default",
        "web",
        &ListFilter::default(),
        &AllowAll,
    );
    assert_eq!(all.body.as_array().unwrap().len(), 2);
    let f = ListFilter {
        passing: true,
        ..ListFilter::default()
    };
    let passing = st.read_health_service("default", "default", "web", &f, &AllowAll);
    let arr = passing.body.as_array().unwrap();
    assert_eq!(arr.len(), 1);
    assert_eq!(arr[0]["Node"]["Node"], "n1");
}

#[test]
fn tag_and_node_meta_filters() {
    let mut st = Store::default();
    let mut a = svc("n1", "a", "web", 80);
    a.tags = Some(vec!["Primary".into(), "v1".into()]);
    register(&mut st, "n1", a);
    register(&mut st, "n2", svc("n2", "b", "web", 80));
    let (r, _) = st.apply(true, |tx| {
        let mut n = node("n2", "10.0.0.2");
        n.meta = Some(BTreeMap::from([("env".to_string(), "prod".to_string())]));
        tx.ensure_node(n);
        Ok::<_, StoreError>(())
    });
    r.unwrap();
    let by_tag = ListFilter {
        tags: Some(vec!["primary".into()]),
        ..Default::default()
    };
    let r = st.read_service_nodes("default", "default", "web", &by_tag, &AllowAll);
    assert_eq!(r.body.as_array().unwrap().len(), 1);
    let by_meta = ListFilter {
        node_meta: vec![("env".into(), "prod".into())],
        ..Default::default()
    };
    let r = st.read_service_nodes("default", "default", "web", &by_meta, &AllowAll);
    assert_eq!(r.body[0]["Node"], "n2");
    let r = st.read_services("default", &NsSel::default_ns(), &by_meta, &AllowAll);
    assert_eq!(r.body, json!({"web": []}));
    let r = st.read_services(
        "default",
        &NsSel::default_ns(),
        &ListFilter::default(),
        &AllowAll,
    );
    assert_eq!(r.body, json!({"web": ["Primary", "v1"]}));
}

#[test]
fn node_services_of_unknown_or_empty_node_render_nulls() {
    let mut st = Store::default();
    let r = st.read_node_services("default", &NsSel::default_ns(), "nope", &AllowAll);
    assert_eq!(r.body, json!({"Node": null, "Services": null}));
    let (res, _) = st.apply(true, |tx| {
        tx.ensure_node(node("n1", "a"));
        Ok::<_, StoreError>(())
    });
    res.unwrap();
    let r = st.read_node_services("default", &NsSel::default_ns(), "n1", &AllowAll);
    assert_eq!(r.body["Services"], Value::Null);
    assert_eq!(r.body["Node"]["Node"], "n1");
    assert_eq!(
        st.read_node("default", &NsSel::default_ns(), "nope", &AllowAll)
            .body,
        Value::Null
    );
}

#[test]
fn change_sets_name_exactly_the_moved_keys() {
    let mut st = Store::default();
    register(&mut st, "n1", svc("n1", "a", "Web", 80));
    let c = st.take_changes();
    assert_eq!(c.service_names, BTreeSet::from(["default/web".to_string()]));
    assert_eq!(c.nodes, BTreeSet::from(["n1".to_string()]));
    assert!(c.nodes_table && c.services_table);
    assert!(st.take_changes().is_empty(), "taken once");
    // An identical write and a failed write change nothing.
    register(&mut st, "n1", svc("n1", "a", "Web", 80));
    let (r, _) = st.apply(true, |tx| tx.ensure_service(svc("ghost", "x", "x", 1)));
    assert!(r.is_err());
    assert!(st.take_changes().is_empty());
    assert!(st.has_own_index(&WatchKey::Service(svc_key("default", "WEB"))));
    assert!(!st.has_own_index(&WatchKey::Service(svc_key("default", "db"))));
    assert!(!st.has_own_index(&WatchKey::Services {
        node_meta: true,
        ns: None
    }));
    assert_eq!(
        WatchKey::Node(node_key("default", "N1")).folded(),
        WatchKey::Node("n1".into()),
        "node keys are folded once, when built"
    );
}

#[test]
fn node_and_namespace_keys_never_meet_across_partitions() {
    // A default-partition node whose name looks like another
    // partition's key stays a different node.
    assert_ne!(node_key("default", "Peu/n1"), node_key("eu", "n1"));
    assert_eq!(node_key("EU", "N1"), node_key("eu", "n1"));
    assert_eq!(node_key("DEFAULT", "N1"), "n1");
    assert_ne!(
        svc_key_in("default", "eu", "x"),
        svc_key_in("eu", "default", "x")
    );
    assert_eq!(ns_key("eu", "Team"), ns_key("EU", "team"));
    assert_eq!(
        ns_key("eu", "team"),
        fold(&ns_key("eu", "team")),
        "stable when folded again"
    );

    let mut st = Store::default();
    register(&mut st, "n1", svc("n1", "a", "web", 80));
    st.take_changes();
    let mut n = node("N1", "10.0.0.2");
    n.partition = Some("eu".into());
    let mut s = svc("n1", "a", "web", 81);
    s.partition = Some("eu".into());
    let (r, _) = st.apply(true, |tx| {
        tx.ensure_node(n);
        tx.ensure_service(s)
    });
    r.unwrap();
    let changes = st.take_changes();
    assert_eq!(changes.nodes, BTreeSet::from([node_key("eu", "n1")]));
    assert_eq!(st.counts(), (2, 2, 0));
    assert_eq!(st.node_in("eu", "n1").unwrap().address, "10.0.0.2");
    assert_eq!(st.node("n1").unwrap().address, "10.0.0.1");
    let (r, _) = st.apply(true, |tx| {
        tx.delete_node_in("eu", "n1");
        Ok::<_, StoreError>(())
    });
    r.unwrap();
    assert_eq!(st.counts(), (1, 1, 0));
    assert_eq!(st.service("n1", "a").unwrap().port, 80);
}

#[test]
fn go_quote_matches_go_formatting() {
    assert_eq!(go_quote("web"), "\"web\"");
    assert_eq!(go_quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
    assert_eq!(go_quote("\u{1}"), "\"\\x01\"");
    assert_eq!(go_quote("é"), "\"é\"");
}

/// A deliberately simple model of the catalog: node -> services.
#[derive(Debug, Clone, Default, PartialEq)]
struct Model {
    nodes: BTreeMap<String, BTreeMap<String, (String, i64)>>,
}

#[derive(Debug, Clone)]
enum Op {
    Register {
        node: String,
        id: String,
        name: String,
        port: i64,
    },
    DeleteService {
        node: String,
        id: String,
    },
    DeleteNode {
        node: String,
    },
    /// A multi-op write that fails at the end if `fail`.
    Batch {
        ops: Vec<(String, String, i64)>,
        fail: bool,
    },
}

fn arb_op() -> impl Strategy<Value = Op> {
    let node = prop::sample::select(vec!["n1", "n2", "n3"]).prop_map(String::from);
    let id = prop::sample::select(vec!["a", "b", "c"]).prop_map(String::from);
    let name = prop::sample::select(vec!["web", "db"]).prop_map(String::from);
    prop_oneof![
        (node.clone(), id.clone(), name, 1..4i64).prop_map(|(node, id, name, port)| {
            Op::Register {
                node,
                id,
                name,
                port,
            }
        }),
        (node.clone(), id.clone()).prop_map(|(node, id)| Op::DeleteService { node, id }),
        node.clone().prop_map(|node| Op::DeleteNode { node }),
        (
            prop::collection::vec((node, id, 1..4i64), 1..4),
            any::<bool>()
        )
            .prop_map(|(ops, fail)| Op::Batch { ops, fail }),
    ]
}

proptest! {
    #[test]
    fn store_matches_model_and_indexes_only_move_on_change(ops in prop::collection::vec(arb_op(), 1..40)) {
        let mut st = Store::default();
        let mut model = Model::default();
        for op in ops {
            let before = st.clone();
            let model_before = model.clone();
            let (ok, changed) = match &op {
                Op::Register { node: n, id, name, port } => {
                    model.nodes.entry(n.clone()).or_default().insert(id.clone(), (name.clone(), *port));
                    let (r, c) = st.apply(true, |tx| {
                        tx.ensure_node(node(n, "10.0.0.1"));
                        tx.ensure_service(svc(n, id, name, *port))
                    });
                    (r.is_ok(), c)
                }
                Op::DeleteService { node: n, id } => {
                    if let Some(s) = model.nodes.get_mut(n) { s.remove(id); }
                    let (r, c) = st.apply(true, |tx| { tx.delete_service(n, id); Ok::<_, StoreError>(()) });
                    (r.is_ok(), c)
                }
                Op::DeleteNode { node: n } => {
                    model.nodes.remove(n);
                    let (r, c) = st.apply(true, |tx| { tx.delete_node(n); Ok::<_, StoreError>(()) });
                    (r.is_ok(), c)
                }
                Op::Batch { ops, fail } => {
                    if !fail {
                        for (n, id, port) in ops {
                            model.nodes.entry(n.clone()).or_default().insert(id.clone(), ("batch".into(), *port));
                        }
                    }
                    let (r, c) = st.apply(true, |tx| {
                        for (n, id, port) in ops {
                            tx.ensure_node(node(n, "10.0.0.1"));
                            tx.ensure_service(svc(n, id, "batch", *port))?;
                        }
                        if *fail { Err(StoreError::MissingService) } else { Ok(()) }
                    });
                    (r.is_ok(), c)
                }
            };
            // One Raft apply per write, successful or not.
            prop_assert_eq!(st.raft_applies(), before.raft_applies() + 1);
            if !ok {
                let mut expected = before.clone();
                expected.raft_index += 1;
                expected.raft_applies += 1;
                prop_assert_eq!(&st, &expected);
            }
            // Indexes and records move only with a content change.
            if !changed {
                prop_assert_eq!(&st.idx, &before.idx);
                prop_assert_eq!(&st.services, &before.services);
                prop_assert_eq!(&st.nodes, &before.nodes);
            } else {
                prop_assert!(model != model_before || st.services != before.services || st.nodes != before.nodes);
            }
            // The store's services equal the model's, node by node.
            let mut seen = Model::default();
            for s in st.services.values() {
                seen.nodes.entry(s.node.clone()).or_default().insert(s.id.clone(), (s.name.clone(), s.port));
            }
            let expected_nodes: BTreeMap<_, _> = model.nodes.iter().filter(|(_, s)| !s.is_empty()).map(|(k, v)| (k.clone(), v.clone())).collect();
            prop_assert_eq!(seen.nodes, expected_nodes);
            // Secondary index consistency.
            for (lname, keys) in &st.by_name {
                prop_assert!(!keys.is_empty());
                for k in keys {
                    prop_assert_eq!(&st.services[k].key(), lname);
                }
            }
            prop_assert_eq!(st.by_name.values().map(|k| k.len()).sum::<usize>(), st.services.len());
            for (n, _) in st.services.keys() {
                prop_assert!(st.nodes.contains_key(n), "service on a missing node");
            }
            for ((n, _), s) in &st.services {
                prop_assert!(s.modify_index <= st.raft_index && s.create_index <= s.modify_index);
                prop_assert!(st.idx.per_node.per_key.get(n).copied().unwrap_or(0) >= s.modify_index);
            }
        }
    }
}

#[test]
fn whole_node_reads_serialized_directly_equal_their_value_form() {
    let same = |st: &Store, node: &str| {
        let ns = NsSel::default_ns();
        let v = st.read_node_services("default", &ns, node, &AllowAll);
        let j = st.read_node_services_json("default", &ns, node, &AllowAll);
        assert_eq!((j.index, j.filtered), (v.index, v.filtered));
        assert_eq!(
            String::from_utf8_lossy(&j.body),
            serde_json::to_string(&v.body).unwrap()
        );
        let v = st.read_health_node("default", &ns, node, &AllowAll);
        let j = st.read_health_node_json("default", &ns, node, &AllowAll);
        assert_eq!((j.index, j.filtered), (v.index, v.filtered));
        assert_eq!(
            String::from_utf8_lossy(&j.body),
            serde_json::to_string(&v.body).unwrap()
        );
    };
    let mut st = Store::default();
    same(&st, "nope");
    let (r, _) = st.apply(true, |tx| {
        tx.ensure_node(node("n1", "10.0.0.1"));
        Ok::<_, StoreError>(())
    });
    r.unwrap();
    same(&st, "n1");
    let mut tagged = svc("n1", "web-1", "web", 80);
    tagged.tags = Some(vec!["a\"b".into(), "ü".into()]);
    tagged.meta = Some(BTreeMap::from([("k".into(), "v\n".into())]));
    let (r, _) = st.apply(true, |tx| {
        tx.ensure_service(tagged)?;
        tx.ensure_service(svc("n1", "db-1", "db", 5432))?;
        tx.ensure_check(check("n1", "c1", "web-1", "passing"))?;
        tx.ensure_check(check("n1", "serf", "", "critical"))
    });
    r.unwrap();
    same(&st, "n1");
    same(&st, "N1");
}
