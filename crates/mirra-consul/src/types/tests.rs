use super::*;
use proptest::prelude::*;
use serde_json::json;

/// A named port of a multi-port instance.
fn port(name: &str, port: u16, default: bool) -> ServicePort {
    ServicePort {
        name: name.into(),
        port,
        default,
    }
}

#[test]
fn node_services_from_documented_sample_with_nulls_and_unknown_fields() {
    let body = json!({
        "Node": {
            "ID": "40e4a748-2192-161a-0510-9bf59fe950b5",
            "Node": "t2-node",
            "Address": "10.1.10.12",
            "Datacenter": "dc1",
            "TaggedAddresses": {"lan": "10.1.10.12"},
            "Meta": {"instance_type": "t2.medium"},
            "SomethingNew": {"x": 1}
        },
        "Services": [
            {"ID": "consul", "Service": "consul", "Tags": null, "Meta": {}, "Port": 8300},
            {
                "ID": "redis", "Service": "redis",
                "TaggedAddresses": {"lan": {"address": "10.1.10.12", "port": 8000}},
                "Tags": ["v1"], "Meta": {"redis_version": "4.0"}, "Port": 8000,
                "Namespace": "default", "Proxy": {"Upstreams": null}
            }
        ]
    });
    let ns: NodeServices = serde_json::from_value(body).unwrap();
    let node = ns.node.unwrap();
    assert_eq!(node.node, "t2-node");
    assert_eq!(node.meta["instance_type"], "t2.medium");
    assert_eq!(ns.services.len(), 2);
    assert!(ns.services[0].tags.is_empty());
    assert_eq!(ns.services[1].tagged_addresses["lan"].port, 8000);
    assert_eq!(ns.services[1].namespace, "default");
}

#[test]
fn missing_node_reads_as_none() {
    let ns: NodeServices = serde_json::from_str(r#"{"Node":null,"Services":null}"#).unwrap();
    assert!(ns.node.is_none());
    assert!(ns.services.is_empty());
}

#[test]
fn register_body_uses_consul_field_names_and_omits_empties() {
    let req = RegisterRequest {
        node: "k8s-sync".into(),
        address: "127.0.0.1".into(),
        node_meta: [("external-source".to_owned(), "kubernetes".to_owned())].into(),
        service: Some(Service {
            id: "web-0123456789ab".into(),
            service: "web".into(),
            tags: vec!["k8s".into()],
            port: 8080,
            weights: Some(Weights {
                passing: 3,
                warning: 1,
            }),
            ..Service::default()
        }),
        check: Some(HealthCheck {
            check_id: "default/web-0123456789ab".into(),
            name: "Kubernetes Readiness Check".into(),
            r#type: "kubernetes-readiness".into(),
            status: "passing".into(),
            service_id: "web-0123456789ab".into(),
            ..HealthCheck::default()
        }),
        skip_node_update: true,
        ..RegisterRequest::default()
    };
    let v = serde_json::to_value(&req).unwrap();
    assert_eq!(
        v,
        json!({
            "Node": "k8s-sync",
            "Address": "127.0.0.1",
            "NodeMeta": {"external-source": "kubernetes"},
            "Service": {
                "ID": "web-0123456789ab", "Service": "web", "Tags": ["k8s"], "Port": 8080,
                "Weights": {"Passing": 3, "Warning": 1}
            },
            "Check": {
                "CheckID": "default/web-0123456789ab",
                "Name": "Kubernetes Readiness Check",
                "Status": "passing",
                "ServiceID": "web-0123456789ab",
                "Type": "kubernetes-readiness"
            },
            "SkipNodeUpdate": true
        })
    );
}

#[test]
fn deregister_constructors() {
    assert_eq!(
        serde_json::to_value(DeregisterRequest::service("n", "s1")).unwrap(),
        json!({"Node": "n", "ServiceID": "s1"})
    );
    assert_eq!(
        serde_json::to_value(DeregisterRequest::check("n", "c1")).unwrap(),
        json!({"Node": "n", "CheckID": "c1"})
    );
    assert_eq!(
        serde_json::to_value(DeregisterRequest::node("n")).unwrap(),
        json!({"Node": "n"})
    );
}

#[test]
fn catalog_service_instance_from_documented_sample() {
    let body = json!([{
        "ID": "40e4a748-2192-161a-0510-9bf59fe950b5",
        "Node": "t2.320", "Address": "192.168.10.10", "Datacenter": "dc1",
        "TaggedAddresses": {"lan": "192.168.10.10"},
        "NodeMeta": {"somekey": "somevalue"},
        "CreateIndex": 51, "ModifyIndex": 51,
        "ServiceAddress": "172.17.0.3", "ServiceEnableTagOverride": false,
        "ServiceID": "32a2a47f7992:nodea:5000", "ServiceName": "web",
        "ServicePort": 5000, "ServiceMeta": {"web_meta_value": "baz"},
        "ServiceTaggedAddresses": {"lan": {"address": "172.17.0.3", "port": 5000}},
        "ServiceTags": ["prod"],
        "ServiceProxy": {"DestinationServiceName": "", "Config": null, "Upstreams": null},
        "ServiceConnect": {"Native": false, "Proxy": null},
        "ServiceWeights": {"Passing": 1, "Warning": 1},
        "Namespace": "default"
    }]);
    let v: Vec<CatalogServiceInstance> = serde_json::from_value(body).unwrap();
    assert_eq!(v[0].service_id, "32a2a47f7992:nodea:5000");
    assert_eq!(v[0].service_port, 5000);
    assert_eq!(v[0].modify_index, 51);
    assert_eq!(v[0].service_tagged_addresses["lan"].address, "172.17.0.3");
}

#[test]
fn wrong_types_are_errors_not_panics() {
    assert!(serde_json::from_str::<NodeServices>(r#"{"Services": 3}"#).is_err());
    assert!(serde_json::from_str::<Service>(r#"{"Port": 70000}"#).is_err());
    assert!(serde_json::from_str::<Service>(r#"{"Port": -1}"#).is_err());
    assert!(serde_json::from_str::<Vec<ServiceEntry>>(r#"[{"Node": "x"}]"#).is_err());
}

#[test]
fn multi_port_service_serialises_ports_and_no_port() {
    let s = Service {
        id: "web-0123456789ab".into(),
        service: "web".into(),
        ports: vec![port("http", 8080, true), port("grpc", 9090, false)],
        ..Service::default()
    };
    assert_eq!(
        serde_json::to_value(&s).unwrap(),
        json!({
            "ID": "web-0123456789ab", "Service": "web",
            "Ports": [
                {"Name": "http", "Port": 8080, "Default": true},
                {"Name": "grpc", "Port": 9090}
            ]
        })
    );
}

#[test]
fn single_port_service_has_no_ports_member() {
    let s = Service {
        service: "web".into(),
        port: 80,
        ..Service::default()
    };
    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(v, json!({"Service": "web", "Port": 80}));
}

#[test]
fn ports_read_from_node_services_with_nulls_and_unknown_fields() {
    let body = json!({
        "Node": {"Node": "k8s-sync"},
        "Services": [
            {"ID": "a", "Service": "web", "Port": 0, "Ports": [
                {"Name": "http", "Port": 8080, "Default": true, "Protocol": "tcp"},
                {"Name": "grpc", "Port": 9090, "Default": null},
                {"Name": null, "Port": 9100}
            ]},
            {"ID": "b", "Service": "web", "Port": 80, "Ports": null},
            {"ID": "c", "Service": "web", "Port": 81}
        ]
    });
    let ns: NodeServices = serde_json::from_value(body).unwrap();
    assert_eq!(
        ns.services[0].ports,
        vec![
            port("http", 8080, true),
            port("grpc", 9090, false),
            port("", 9100, false),
        ]
    );
    assert_eq!(ns.services[0].port, 0);
    assert!(ns.services[1].ports.is_empty());
    assert!(ns.services[2].ports.is_empty());
}

#[test]
fn service_ports_of_the_flattened_shape() {
    let v: Vec<CatalogServiceInstance> = serde_json::from_value(json!([
        {"ServiceID": "a", "ServicePort": 0,
         "ServicePorts": [{"Name": "http", "Port": 8080, "Default": true}]},
        {"ServiceID": "b", "ServicePort": 80, "ServicePorts": null}
    ]))
    .unwrap();
    assert_eq!(v[0].service_ports, vec![port("http", 8080, true)]);
    assert!(v[1].service_ports.is_empty());
}

#[test]
fn malformed_ports_are_errors_not_panics() {
    for bad in [
        r#"{"Ports": {"Name": "http"}}"#,
        r#"{"Ports": "http:8080"}"#,
        r#"{"Ports": [8080]}"#,
        r#"{"Ports": [{"Name": "http", "Port": 70000}]}"#,
        r#"{"Ports": [{"Name": "http", "Port": -1}]}"#,
        r#"{"Ports": [{"Name": "http", "Port": "8080"}]}"#,
        r#"{"Ports": [{"Name": 7, "Port": 8080}]}"#,
        r#"{"Ports": [{"Name": "http", "Port": 8080, "Default": "yes"}]}"#,
        r#"{"Ports": [{"Name": "http", "Port": 80.5}]}"#,
    ] {
        assert!(serde_json::from_str::<Service>(bad).is_err(), "{bad}");
    }
}

fn arb_port() -> impl Strategy<Value = ServicePort> {
    ("[a-z0-9-]{0,8}", any::<u16>(), any::<bool>()).prop_map(|(name, port, default)| ServicePort {
        name,
        port,
        default,
    })
}

fn arb_service() -> impl Strategy<Value = Service> {
    (
        "[a-z0-9-]{0,12}",
        "[a-z0-9-]{1,12}",
        proptest::collection::vec("[a-z0-9=,]{0,6}", 0..4),
        proptest::collection::btree_map("[a-z-]{1,8}", "[ -~]{0,8}", 0..4),
        any::<u16>(),
        proptest::collection::vec(arb_port(), 0..4),
        any::<u64>(),
    )
        .prop_map(
            |(id, service, tags, meta, port, ports, modify_index)| Service {
                id,
                service,
                tags,
                meta,
                port,
                ports,
                modify_index,
                ..Service::default()
            },
        )
}

proptest! {
    #[test]
    fn service_round_trips(s in arb_service()) {
        let text = serde_json::to_string(&s).unwrap();
        let back: Service = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(back, s);
    }

    #[test]
    fn arbitrary_json_never_panics(text in ".{0,200}") {
        let _ = serde_json::from_str::<NodeServices>(&text);
        let _ = serde_json::from_str::<Vec<CatalogServiceInstance>>(&text);
        let _ = serde_json::from_str::<Vec<ServiceEntry>>(&text);
    }
}
