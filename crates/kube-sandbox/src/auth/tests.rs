use super::escalation::{atomic_rules, compact_rule, covers};
use super::*;

fn res<'a>(
    verb: &'a str,
    group: &'a str,
    resource: &'a str,
    sub: &'a str,
    name: &'a str,
) -> Request<'a> {
    Request::Resource {
        verb,
        group,
        resource,
        subresource: sub,
        namespace: "team-a",
        name,
    }
}

#[test]
fn rules_match_as_upstream_rule_allows() {
    let rule = json!({"apiGroups": [""], "resources": ["configmaps", "pods/log"], "verbs": ["get", "list"]});
    assert!(rule_allows(&rule, &res("get", "", "configmaps", "", "x")));
    assert!(rule_allows(&rule, &res("list", "", "configmaps", "", "")));
    assert!(
        !rule_allows(&rule, &res("watch", "", "configmaps", "", "")),
        "verb"
    );
    assert!(
        !rule_allows(&rule, &res("get", "apps", "configmaps", "", "x")),
        "group"
    );
    assert!(
        !rule_allows(&rule, &res("get", "", "secrets", "", "x")),
        "resource"
    );
    assert!(
        rule_allows(&rule, &res("get", "", "pods", "log", "p")),
        "resource/subresource"
    );
    assert!(
        !rule_allows(&rule, &res("get", "", "pods", "", "p")),
        "the subresource is not the resource"
    );
    assert!(
        !rule_allows(&rule, &res("get", "", "configmaps", "status", "x")),
        "nor the reverse"
    );

    let star = json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]});
    assert!(rule_allows(
        &star,
        &res("delete", "apps", "deployments", "scale", "d")
    ));
    let any_status = json!({"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["update"]});
    assert!(rule_allows(
        &any_status,
        &res("update", "apps", "deployments", "status", "d")
    ));
    assert!(!rule_allows(
        &any_status,
        &res("update", "apps", "deployments", "", "d")
    ));

    let named = json!({"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"], "verbs": ["get", "list"]});
    assert!(rule_allows(&named, &res("get", "", "configmaps", "", "a")));
    assert!(!rule_allows(&named, &res("get", "", "configmaps", "", "b")));
    assert!(
        !rule_allows(&named, &res("list", "", "configmaps", "", "")),
        "a list names nothing"
    );

    let urls = json!({"nonResourceURLs": ["/api", "/apis/*"], "verbs": ["get"]});
    let path = |p| Request::NonResource {
        verb: "get",
        path: p,
    };
    assert!(rule_allows(&urls, &path("/api")));
    assert!(
        !rule_allows(&urls, &path("/api/v1")),
        "no prefix without a star"
    );
    assert!(rule_allows(&urls, &path("/apis/apps/v1")));
    assert!(!rule_allows(
        &urls,
        &Request::NonResource {
            verb: "post",
            path: "/api"
        }
    ));
    assert!(
        !rule_allows(&urls, &res("get", "", "api", "", "")),
        "URL rules grant no resource"
    );
    assert!(
        !rule_allows(&json!({}), &path("/api")),
        "an empty rule grants nothing"
    );
}

#[test]
fn subjects_match_users_groups_and_service_accounts() {
    let sa = UserInfo {
        name: "system:serviceaccount:team-a:sync".into(),
        groups: vec!["system:serviceaccounts".into(), AUTHENTICATED.into()],
    };
    let subject = |v: Value| v;
    assert!(subject_matches(
        &subject(json!({"kind": "ServiceAccount", "name": "sync"})),
        &sa,
        "team-a"
    ));
    assert!(!subject_matches(
        &subject(json!({"kind": "ServiceAccount", "name": "sync"})),
        &sa,
        "team-b"
    ));
    assert!(
        !subject_matches(
            &subject(json!({"kind": "ServiceAccount", "name": "sync"})),
            &sa,
            ""
        ),
        "a ClusterRoleBinding's ServiceAccount subject needs its namespace"
    );
    assert!(subject_matches(
        &subject(json!({"kind": "ServiceAccount", "name": "sync", "namespace": "team-a"})),
        &sa,
        ""
    ));
    assert!(subject_matches(
        &subject(json!({"kind": "Group", "name": AUTHENTICATED})),
        &sa,
        ""
    ));
    assert!(subject_matches(
        &subject(json!({"kind": "User", "name": sa.name.clone()})),
        &sa,
        ""
    ));
    assert!(!subject_matches(
        &subject(json!({"kind": "User", "name": "sync"})),
        &sa,
        ""
    ));
    assert!(!subject_matches(
        &subject(json!({"kind": "Robot", "name": sa.name.clone()})),
        &sa,
        ""
    ));
}

#[test]
fn aggregation_selectors_match_as_label_selectors_convert() {
    let labels = json!({"rbac.example.com/aggregate-to-view": "true", "tier": "a"});
    let sel = |v: Value| selector_matches(&v, Some(&labels));
    assert!(sel(
        json!({"matchLabels": {"rbac.example.com/aggregate-to-view": "true"}})
    ));
    assert!(!sel(
        json!({"matchLabels": {"rbac.example.com/aggregate-to-view": "false"}})
    ));
    assert!(sel(
        json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]})
    ));
    assert!(!sel(
        json!({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}]})
    ));
    assert!(sel(
        json!({"matchExpressions": [{"key": "tier", "operator": "Exists"}]})
    ));
    assert!(!sel(
        json!({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]})
    ));
    assert!(!sel(
        json!({"matchExpressions": [{"key": "tier", "operator": "Near"}]})
    ));
    assert!(
        sel(json!({})),
        "an empty selector aggregates every ClusterRole"
    );
    assert!(sel(json!({"matchLabels": {}})));
    assert!(!sel(Value::Null), "a null selector aggregates nothing");
}

#[test]
fn static_tokens_parse_as_token_file_lines_and_bad_ones_say_why() {
    assert_eq!(
        StaticToken::parse("abc=alice,dev,ops"),
        Ok(StaticToken {
            token: "abc".into(),
            user: "alice".into(),
            groups: vec!["dev".into(), "ops".into()]
        })
    );
    assert_eq!(
        StaticToken::parse("abc=bob").map(|t| t.groups),
        Ok(Vec::new())
    );
    for bad in ["abc", "=alice", "abc=", "abc=,dev", ""] {
        let e = StaticToken::parse(bad).expect_err(bad);
        assert!(
            e.contains("TOKEN=USER") || e.contains("must not be empty"),
            "{bad}: {e}"
        );
    }
}

#[test]
fn refusals_are_worded_as_the_server_words_them() {
    let user = UserInfo::anonymous();
    let e = forbidden(&user, &res("list", "", "configmaps", "", ""), "");
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        "configmaps is forbidden: User \"system:anonymous\" cannot list resource \"configmaps\" \
         in API group \"\" in the namespace \"team-a\""
    );
    assert_eq!(e.to_status()["details"], json!({"kind": "configmaps"}));
    let e = forbidden(
        &user,
        &Request::Resource {
            verb: "get",
            group: "apps",
            resource: "deployments",
            subresource: "scale",
            namespace: "",
            name: "web",
        },
        &rbac_errors(&["clusterrole.rbac.authorization.k8s.io \"gone\" not found".into()]),
    );
    assert_eq!(
        e.message,
        "deployments.apps \"web\" is forbidden: User \"system:anonymous\" cannot get resource \
         \"deployments/scale\" in API group \"apps\" at the cluster scope: RBAC: \
         clusterrole.rbac.authorization.k8s.io \"gone\" not found"
    );
    assert_eq!(
        e.to_status()["details"],
        json!({"name": "web", "group": "apps", "kind": "deployments"})
    );
    let e = forbidden(
        &user,
        &Request::NonResource {
            verb: "get",
            path: "/api",
        },
        "",
    );
    assert_eq!(
        e.message,
        "forbidden: User \"system:anonymous\" cannot get path \"/api\""
    );
    assert_eq!(e.reason, "Forbidden");
}

#[test]
fn coverage_is_checked_rule_by_atomic_rule() {
    let wanted = vec![json!({
        "apiGroups": ["", "apps"], "resources": ["configmaps", "deployments/scale"],
        "resourceNames": ["a"], "verbs": ["get", "update"]
    })];
    let atoms = atomic_rules(&wanted);
    assert_eq!(atoms.len(), 8, "{atoms:?}");
    let held = json!({"apiGroups": ["*"], "resources": ["configmaps", "*/scale"], "verbs": ["get", "update"]});
    assert!(atoms.iter().all(|a| covers(&held, a)));
    let narrow = json!({"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["b"], "verbs": ["*"]});
    assert!(
        !atoms.iter().any(|a| covers(&narrow, a)),
        "another name covers nothing"
    );
    let urls = atomic_rules(&[json!({"nonResourceURLs": ["/metrics"], "verbs": ["get"]})]);
    assert!(covers(
        &json!({"nonResourceURLs": ["/*"], "verbs": ["get"]}),
        &urls[0]
    ));
    assert!(!covers(
        &json!({"nonResourceURLs": ["/healthz"], "verbs": ["get"]}),
        &urls[0]
    ));
    assert_eq!(
        compact_rule(&atoms[0]),
        "{APIGroups:[\"\"], Resources:[\"configmaps\"], ResourceNames:[\"a\"], Verbs:[\"get\"]}"
    );
    assert_eq!(
        compact_rule(&urls[0]),
        "{NonResourceURLs:[\"/metrics\"], Verbs:[\"get\"]}"
    );
}
