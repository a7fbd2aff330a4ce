use super::*;
use crate::registry::Registry;

fn res(plural: &str) -> Resource {
    let r = Registry::with_builtins();
    let found = r
        .all()
        .find(|x| x.plural == plural && x.group.is_empty())
        .unwrap();
    (**found).clone()
}

#[test]
fn names_follow_the_kind_rule() {
    assert!(validate_name(NameRule::Label, "my-ns").is_ok());
    assert!(validate_name(NameRule::Label, "my.ns").is_err());
    assert!(validate_name(NameRule::Subdomain, "my.cm").is_ok());
    assert!(validate_name(NameRule::Subdomain, "My").is_err());
    assert!(validate_name(NameRule::Subdomain, "-a").is_err());
    assert!(validate_name(NameRule::Subdomain, "").is_err());
    assert!(validate_name(NameRule::Label, &"a".repeat(64)).is_err());
    assert!(validate_name(NameRule::PathSegment, "system:admin").is_ok());
    assert!(validate_name(NameRule::PathSegment, "a/b").is_err());
    let e = validate_name(NameRule::Subdomain, "Bad_Name").unwrap_err();
    assert_eq!(e.field, "metadata.name");
    assert!(
        e.message
            .starts_with("Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain")
    );
}

#[test]
fn services_are_defaulted_and_allocated() {
    let mut alloc = Allocators::default();
    let mut svc =
        json!({"metadata": {"name": "a"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}});
    on_create(&res("services"), &mut svc, &mut alloc).unwrap();
    assert_eq!(svc["spec"]["clusterIP"], "10.96.0.2");
    assert_eq!(svc["spec"]["ports"][0]["protocol"], "TCP");
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 80);
    assert_eq!(svc["spec"]["ports"][0]["nodePort"], 30000);
    let mut b = json!({"spec": {"ports": [{"port": 80}]}});
    on_create(&res("services"), &mut b, &mut alloc).unwrap();
    assert_eq!(b["spec"]["type"], "ClusterIP");
    assert_eq!(b["spec"]["clusterIP"], "10.96.0.3");
    assert!(b["spec"]["ports"][0].get("nodePort").is_none());
}

#[test]
fn cluster_ip_is_immutable_but_carried_over() {
    let mut alloc = Allocators::default();
    let mut svc = json!({"spec": {"ports": [{"port": 80}]}});
    on_create(&res("services"), &mut svc, &mut alloc).unwrap();
    let mut same = json!({"spec": {"ports": [{"port": 81}]}});
    on_update(&res("services"), &svc, &mut same).unwrap();
    assert_eq!(same["spec"]["clusterIP"], svc["spec"]["clusterIP"]);
    let mut changed = json!({"spec": {"clusterIP": "10.96.9.9", "ports": [{"port": 81}]}});
    let causes = on_update(&res("services"), &svc, &mut changed).unwrap_err();
    assert_eq!(causes[0].field, "spec.clusterIPs[0]");
}

#[test]
fn bad_services_are_invalid() {
    let mut alloc = Allocators::default();
    for bad in [
        json!({"spec": {"type": "Weird", "ports": [{"port": 1}]}}),
        json!({"spec": {"ports": [{"port": 0}]}}),
        json!({"spec": {"ports": [{"name": "a"}]}}),
        json!({"spec": {}}),
        json!({"spec": {"type": "ExternalName"}}),
        json!({"spec": {"ports": [{"port": 1}, {"port": 2}]}}),
        json!({"spec": {"clusterIP": "nope", "ports": [{"port": 1}]}}),
    ] {
        let mut b = bad.clone();
        assert!(
            on_create(&res("services"), &mut b, &mut alloc).is_err(),
            "{bad}"
        );
    }
}

/// (field, message) of each cause, for exact assertions.
fn pairs(causes: &[Cause]) -> Vec<(String, String)> {
    causes
        .iter()
        .map(|c| (c.field.clone(), c.message.clone()))
        .collect()
}

const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

#[test]
fn service_spec_rules_name_the_field() {
    let table: Vec<(Value, Vec<(&str, String)>)> = vec![
            (
                json!({"ports": [{"port": 80, "targetPort": 70000}]}),
                vec![(
                    "spec.ports[0].targetPort",
                    "Invalid value: 70000: must be between 1 and 65535, inclusive".into(),
                )],
            ),
            (
                json!({"ports": [{"port": 80, "targetPort": "Web--Port"}]}),
                vec![
                    (
                        "spec.ports[0].targetPort",
                        "Invalid value: \"Web--Port\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into(),
                    ),
                    (
                        "spec.ports[0].targetPort",
                        "Invalid value: \"Web--Port\": must not contain consecutive hyphens".into(),
                    ),
                ],
            ),
            (
                json!({"ports": [{"port": 80, "targetPort": "http"}], "selector": {"app": "bad value"}}),
                vec![(
                    "spec.selector",
                    format!("Invalid value: \"bad value\": {LABEL_VALUE_ERR}"),
                )],
            ),
            (json!({"ports": []}), vec![("spec.ports", "Required value".into())]),
            (
                json!({"ports": [{"name": "web", "port": 80}, {"name": "web", "port": 81}]}),
                vec![("spec.ports[1].name", "Duplicate value: \"web\"".into())],
            ),
            (
                json!({"ports": [{"name": "Web", "port": 80}]}),
                vec![(
                    "spec.ports[0].name",
                    "Invalid value: \"Web\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".into(),
                )],
            ),
            (
                json!({"ports": [{"name": "a"}]}),
                vec![
                    (
                        "spec.ports[0].port",
                        "Invalid value: 0: must be between 1 and 65535, inclusive".into(),
                    ),
                    (
                        "spec.ports[0].targetPort",
                        "Invalid value: 0: must be between 1 and 65535, inclusive".into(),
                    ),
                ],
            ),
            (
                json!({"ports": [{"port": 80, "protocol": "HTTP"}]}),
                vec![(
                    "spec.ports[0].protocol",
                    "Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"".into(),
                )],
            ),
            (
                json!({"ports": [{"port": 80, "nodePort": 30080}]}),
                vec![(
                    "spec.ports[0].nodePort",
                    "Forbidden: may not be used when `type` is 'ClusterIP'".into(),
                )],
            ),
            (
                json!({"type": "ExternalName", "externalName": "db_host."}),
                vec![("spec.externalName", format!("Invalid value: \"db_host\": {DNS1123_SUBDOMAIN_MSG}"))],
            ),
        ];
    for (spec, want) in table {
        let mut alloc = Allocators::default();
        let mut svc = json!({"metadata": {"name": "s"}, "spec": spec.clone()});
        let got = on_create(&res("services"), &mut svc, &mut alloc).unwrap_err();
        let want: Vec<(String, String)> =
            want.into_iter().map(|(f, m)| (f.to_string(), m)).collect();
        assert_eq!(pairs(&got), want, "{spec}");
    }
    // A headless Service needs no ports; a named target port is fine.
    let mut alloc = Allocators::default();
    let mut headless = json!({"spec": {"clusterIP": "None", "selector": {"app": "db"}}});
    on_create(&res("services"), &mut headless, &mut alloc).unwrap();
    let mut named = json!({"spec": {"ports": [{"port": 80, "targetPort": "http"}]}});
    on_create(&res("services"), &mut named, &mut alloc).unwrap();
    assert_eq!(named["spec"]["ports"][0]["targetPort"], "http");
}

#[test]
fn node_ports_must_be_in_range_and_free() {
    let mut alloc = Allocators::default();
    let node_port =
        |n: u64| json!({"spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": n}]}});
    let mut low = node_port(80);
    let causes = on_create(&res("services"), &mut low, &mut alloc).unwrap_err();
    assert_eq!(
            pairs(&causes),
            vec![(
                "spec.ports[0].nodePort".to_string(),
                "Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767".to_string()
            )]
        );
    let mut first = node_port(30080);
    on_create(&res("services"), &mut first, &mut alloc).unwrap();
    let mut second = node_port(30080);
    let causes = on_create(&res("services"), &mut second, &mut alloc).unwrap_err();
    assert_eq!(
        pairs(&causes),
        vec![(
            "spec.ports[0].nodePort".to_string(),
            "Invalid value: 30080: provided port is already allocated".to_string()
        )]
    );
    // The refusal freed nothing the first Service holds, and nothing leaked:
    // once the first is gone the port can be taken again.
    let mut third = node_port(30080);
    assert!(on_create(&res("services"), &mut third, &mut alloc).is_err());
    alloc.release(&first);
    let mut fourth = node_port(30080);
    on_create(&res("services"), &mut fourth, &mut alloc).unwrap();
    assert_eq!(fourth["spec"]["ports"][0]["nodePort"], 30080);
}

#[test]
fn immutable_configmaps_and_secret_type() {
    let old = json!({"immutable": true, "data": {"a": "1"}});
    let mut new = json!({"immutable": true, "data": {"a": "2"}});
    assert!(on_update(&res("configmaps"), &old, &mut new).is_err());
    let mut same =
        json!({"immutable": true, "data": {"a": "1"}, "metadata": {"labels": {"x": "y"}}});
    assert!(on_update(&res("configmaps"), &old, &mut same).is_ok());
    let old = json!({"type": "Opaque"});
    let mut new = json!({"type": "kubernetes.io/tls"});
    assert_eq!(
        on_update(&res("secrets"), &old, &mut new).unwrap_err()[0].field,
        "type"
    );
}

#[test]
fn namespaces_get_phase_and_name_label() {
    let mut alloc = Allocators::default();
    let mut ns = json!({"metadata": {"name": "team-a"}});
    on_create(&res("namespaces"), &mut ns, &mut alloc).unwrap();
    assert_eq!(ns["status"]["phase"], "Active");
    assert_eq!(
        ns["metadata"]["labels"]["kubernetes.io/metadata.name"],
        "team-a"
    );
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
}
