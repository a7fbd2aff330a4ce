use super::*;
use proptest::prelude::*;
use serde_json::json;

fn texts(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

fn lr(limits: Value) -> Vec<String> {
    texts(&validate_limit_range(&json!({"spec": {"limits": limits}})))
}

fn go_int(value: i64, scale: i32, s: &str, format: &str) -> String {
    format!(
        "resource.Quantity{{i:resource.int64Amount{{value:{value}, scale:{scale}}}, \
         d:resource.infDecAmount{{Dec:(*inf.Dec)(nil)}}, s:\"{s}\", Format:\"{format}\"}}"
    )
}

#[test]
fn limit_range_valid_spec_has_no_errors() {
    let errs = lr(json!([
        {"type": "Container",
         "max": {"cpu": "2", "memory": "1Gi"},
         "min": {"cpu": "100m", "memory": "4Mi"},
         "default": {"cpu": "1", "memory": "512Mi"},
         "defaultRequest": {"cpu": "500m", "memory": "256Mi"},
         "maxLimitRequestRatio": {"cpu": "10"}},
        {"type": "Pod", "max": {"cpu": "4"}},
        {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}},
        {"type": "example.com/Custom", "max": {"example.com/thing": "1"}}
    ]));
    assert!(errs.is_empty(), "{errs:?}");
    assert!(validate_limit_range(&json!({})).is_empty());
    assert!(validate_limit_range(&json!({"spec": {"limits": "x"}})).is_empty());
}

#[test]
fn limit_range_min_above_max_prints_the_quantity_struct() {
    assert_eq!(
        lr(json!([{"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}}])),
        vec![format!(
            "spec.limits[0].min[cpu]: Invalid value: {}: min value 2 is greater than max value 1",
            go_int(2, 0, "2", "DecimalSI")
        )]
    );
}

#[test]
fn limit_range_default_and_request_ordering() {
    let errs = lr(json!([{"type": "Container",
        "min": {"memory": "1Gi"},
        "max": {"memory": "2Gi"},
        "default": {"memory": "4Gi"},
        "defaultRequest": {"memory": "512Mi"}}]));
    assert_eq!(
        errs,
        vec![
            format!(
                "spec.limits[0].defaultRequest[memory]: Invalid value: {}: \
                 min value 1Gi is greater than default request value 512Mi",
                go_int(536870912, 0, "", "BinarySI")
            ),
            // The server shows the max, not the default, here.
            format!(
                "spec.limits[0].default[memory]: Invalid value: {}: \
                 default value 4Gi is greater than max value 2Gi",
                go_int(2147483648, 0, "2Gi", "BinarySI")
            ),
        ]
    );
    let errs = lr(json!([{"type": "Container",
        "max": {"cpu": "1"},
        "default": {"cpu": "500m"},
        "defaultRequest": {"cpu": "2"}}]));
    assert_eq!(
        errs,
        vec![
            format!(
                "spec.limits[0].defaultRequest[cpu]: Invalid value: {}: \
                 default request value 2 is greater than max value 1",
                go_int(2, 0, "2", "DecimalSI")
            ),
            format!(
                "spec.limits[0].defaultRequest[cpu]: Invalid value: {}: \
                 default request value 2 is greater than default limit value 500m",
                go_int(2, 0, "2", "DecimalSI")
            ),
        ]
    );
}

#[test]
fn limit_range_ratios() {
    assert_eq!(
        lr(json!([{"type": "Container", "maxLimitRequestRatio": {"cpu": "0.5"}}])),
        vec![format!(
            "spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: {}: ratio 500m is less than 1",
            go_int(5, -1, "", "DecimalSI")
        )]
    );
    assert_eq!(
        lr(json!([{"type": "Container",
            "min": {"cpu": "100m"}, "max": {"cpu": "200m"},
            "maxLimitRequestRatio": {"cpu": "3"}}])),
        vec![format!(
            "spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: {}: \
             ratio 3 is greater than max/min = 2.000000",
            go_int(3, 0, "3", "DecimalSI")
        )]
    );
    assert!(
        lr(json!([{"type": "Container",
            "min": {"cpu": "100m"}, "max": {"cpu": "300m"},
            "maxLimitRequestRatio": {"cpu": "3"}}]))
        .is_empty()
    );
}

#[test]
fn limit_range_types_and_names() {
    let errs = lr(json!([{"max": {"cpu": "1"}}]));
    assert_eq!(errs.len(), 2);
    assert_eq!(
        errs[0],
        "spec.limits[0].type: Invalid value: \"\": name part must be non-empty"
    );
    assert_eq!(
        lr(json!([{"type": "Foo"}])),
        vec![
            "spec.limits[0].type: Invalid value: \"Foo\": must be a standard limit type or fully qualified"
        ]
    );
    assert_eq!(
        lr(json!([{"type": "Container"}, {"type": "Container"}])),
        vec!["spec.limits[1].type: Duplicate value: \"Container\""]
    );
    assert_eq!(
        lr(json!([{"type": "Container", "max": {"foo": "1"}}])),
        vec![
            "spec.limits[0].max[foo]: Invalid value: \"foo\": must be a standard resource type or fully qualified",
            "spec.limits[0].max[foo]: Invalid value: \"foo\": must be a standard resource for containers",
        ]
    );
    assert_eq!(
        lr(json!([{"type": "Container", "max": {"example.com/a_b": "1"}}])),
        Vec::<String>::new()
    );
    assert_eq!(
        lr(json!([{"type": "Container", "max": {"requests.example.com": "1"}}])),
        vec![
            "spec.limits[0].max[requests.example.com]: Invalid value: \"requests.example.com\": \
             must be a standard resource type or fully qualified",
            "spec.limits[0].max[requests.example.com]: Invalid value: \"requests.example.com\": \
             must be a standard resource for containers",
        ]
    );
}

#[test]
fn limit_range_pod_and_pvc_rules() {
    assert_eq!(
        lr(json!([{"type": "Pod", "default": {"cpu": "1"}, "defaultRequest": {"cpu": "1"}}])),
        vec![
            "spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'",
            "spec.limits[0].defaultRequest: Forbidden: may not be specified when `type` is 'Pod'",
        ]
    );
    assert_eq!(
        lr(json!([{"type": "PersistentVolumeClaim", "max": {"cpu": "1"}}])),
        vec![
            "spec.limits[0].limits: Required value: either minimum or maximum storage value \
             is required, but neither was provided"
        ]
    );
    assert!(lr(json!([{"type": "PersistentVolumeClaim", "max": {"storage": "5Gi"}}])).is_empty());
}

#[test]
fn limit_range_hugepages_default_must_equal_request() {
    assert_eq!(
        lr(json!([{"type": "Container",
            "default": {"hugepages-2Mi": "2Mi"},
            "defaultRequest": {"hugepages-2Mi": "4Mi"}}])),
        vec![
            format!(
                "spec.limits[0].defaultRequest[hugepages-2Mi]: Invalid value: {}: \
                 default request value 4Mi is greater than default limit value 2Mi",
                go_int(4194304, 0, "4Mi", "BinarySI")
            ),
            format!(
                "spec.limits[0].defaultRequest[hugepages-2Mi]: Invalid value: {}: \
                 default value 2Mi must equal to defaultRequest value 4Mi in hugepages-2Mi",
                go_int(4194304, 0, "4Mi", "BinarySI")
            ),
        ]
    );
}

fn rq(obj: Value) -> Vec<String> {
    texts(&validate_resource_quota(&obj))
}

#[test]
fn resource_quota_hard_values() {
    assert!(
        rq(
            json!({"spec": {"hard": {"pods": "10", "cpu": "2", "requests.memory": "1Gi",
        "count/deployments.apps": "3", "example.com/gpu": "4", "hugepages-2Mi": "4Mi"}}})
        )
        .is_empty()
    );
    assert_eq!(
        rq(json!({"spec": {"hard": {"pods": "-1"}}})),
        vec!["spec.hard[pods]: Invalid value: \"-1\": must be greater than or equal to 0"]
    );
    assert_eq!(
        rq(json!({"spec": {"hard": {"pods": "1.5"}}})),
        vec![format!(
            "spec.hard[pods]: Invalid value: {}: must be an integer",
            go_int(15, -1, "", "DecimalSI")
        )]
    );
    assert_eq!(
        rq(json!({"spec": {"hard": {"foo": "1"}}})),
        vec![
            "spec.hard[foo]: Invalid value: \"foo\": must be a standard resource type or fully qualified",
            "spec.hard[foo]: Invalid value: \"foo\": must be a standard resource for quota",
        ]
    );
    assert_eq!(
        rq(json!({"status": {"used": {"services": "-2"}}})),
        vec!["status.used[services]: Invalid value: \"-2\": must be greater than or equal to 0"]
    );
}

#[test]
fn resource_quota_scopes() {
    assert_eq!(
        rq(json!({"spec": {"hard": {"pods": "1"}, "scopes": ["BestEffort", "NotBestEffort"]}})),
        vec![
            "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"BestEffort\", \"NotBestEffort\"}: conflicting scopes"
        ]
    );
    assert_eq!(
        rq(json!({"spec": {"hard": {"cpu": "1"}, "scopes": ["BestEffort"]}})),
        vec![
            "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"BestEffort\"}: unsupported scope applied to resource"
        ]
    );
    assert_eq!(
        rq(json!({"spec": {"hard": {"pods": "1"}, "scopes": ["Foo"]}})),
        vec!["spec.scopes: Invalid value: []core.ResourceQuotaScope{\"Foo\"}: unsupported scope"]
    );
    assert!(rq(json!({"spec": {"hard": {"cpu": "1"}, "scopes": ["NotTerminating"]}})).is_empty());
}

#[test]
fn resource_quota_scope_selector() {
    let sel = |exprs: Value| {
        rq(json!({"spec": {"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": exprs}}}))
    };
    assert!(
        sel(json!([{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]))
            .is_empty()
    );
    assert!(sel(json!([{"scopeName": "BestEffort", "operator": "Exists"}])).is_empty());
    assert_eq!(
        sel(json!([{"scopeName": "PriorityClass", "operator": "In"}])),
        vec![
            "spec.scopeSelector.matchExpressions.values: Required value: must be at least one \
             value when `operator` is 'In' or 'NotIn' for scope selector"
        ]
    );
    assert_eq!(
        sel(json!([{"scopeName": "Terminating", "operator": "In", "values": ["x"]}])),
        vec![
            "spec.scopeSelector.matchExpressions.operator: Invalid value: \"In\": must be 'Exists' \
             when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, \
             ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or \
             ResourceQuotaScopeCrossNamespacePodAffinity"
        ]
    );
    assert_eq!(
        sel(json!([{"scopeName": "PriorityClass", "operator": "Exists", "values": ["a"]}])),
        vec![
            "spec.scopeSelector.matchExpressions.values: Invalid value: []string{\"a\"}: must be \
             no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"
        ]
    );
    assert_eq!(
        sel(json!([{"scopeName": "PriorityClass", "operator": "Gt", "values": ["a"]}])),
        vec![
            "spec.scopeSelector.matchExpressions.operator: Invalid value: \"Gt\": not a valid selector operator"
        ]
    );
    assert_eq!(
        sel(json!([{"scopeName": "Nope", "operator": "Exists"}])),
        vec![
            "spec.scopeSelector.matchExpressions.scopeName: Invalid value: \"Nope\": unsupported scope"
        ]
    );
    assert_eq!(
        rq(
            json!({"spec": {"hard": {"cpu": "1"}, "scopeSelector": {"matchExpressions": [
            {"scopeName": "BestEffort", "operator": "Exists"}]}}})
        ),
        vec![
            "spec.scopeSelector.matchExpressions: Invalid value: core.ScopeSelector{MatchExpressions:\
             []core.ScopedResourceSelectorRequirement{core.ScopedResourceSelectorRequirement{\
             ScopeName:\"BestEffort\", Operator:\"Exists\", Values:[]string(nil)}}}: \
             unsupported scope applied to resource"
        ]
    );
    assert_eq!(
        sel(json!([{"scopeName": "BestEffort", "operator": "Exists"},
                   {"scopeName": "NotBestEffort", "operator": "Exists"}])),
        vec![
            "spec.scopeSelector.matchExpressions: Invalid value: []core.ResourceQuotaScope(nil): conflicting scopes"
        ]
    );
}

fn rr(resources: Value) -> Vec<String> {
    texts(&validate_resource_requirements(
        "spec.containers[0].resources",
        &resources,
    ))
}

#[test]
fn requests_may_not_exceed_limits() {
    assert!(rr(json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "1Gi"}})).is_empty());
    assert_eq!(
        rr(json!({"limits": {"cpu": "1"}, "requests": {"cpu": "2"}})),
        vec![
            "spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1"
        ]
    );
    assert_eq!(
        rr(
            json!({"limits": {"memory": "256Mi", "cpu": "250m"}, "requests": {"memory": "512Mi", "cpu": "500m"}})
        ),
        vec![
            "spec.containers[0].resources.requests: Invalid value: \"512Mi\": must be less than or equal to memory limit of 256Mi",
            "spec.containers[0].resources.requests: Invalid value: \"500m\": must be less than or equal to cpu limit of 250m",
        ]
    );
    // A null limit decodes as zero.
    assert_eq!(
        rr(json!({"limits": {"cpu": null}, "requests": {"cpu": "100m"}})),
        vec![
            "spec.containers[0].resources.requests: Invalid value: \"100m\": must be less than or equal to cpu limit of 0"
        ]
    );
    // Compared after decoding: 0.3 is 300m.
    assert_eq!(
        rr(json!({"limits": {"cpu": "50m"}, "requests": {"cpu": "0.3"}})),
        vec![
            "spec.containers[0].resources.requests: Invalid value: \"300m\": must be less than or equal to cpu limit of 50m"
        ]
    );
}

#[test]
fn negative_and_badly_named_resources() {
    assert_eq!(
        rr(json!({"requests": {"cpu": "-1"}})),
        vec![
            "spec.containers[0].resources.requests[cpu]: Invalid value: \"-1\": must be greater than or equal to 0"
        ]
    );
    assert_eq!(
        rr(json!({"limits": {"pods": "1"}})),
        vec![
            "spec.containers[0].resources.limits[pods]: Invalid value: \"pods\": must be a standard resource for containers"
        ]
    );
    assert_eq!(
        rr(json!({"limits": {"Bad Name": "1"}}))
            .first()
            .map(String::as_str),
        Some(
            "spec.containers[0].resources.limits[Bad Name]: Invalid value: \"Bad Name\": name part must \
             consist of alphanumeric characters, '-', '_' or '.', and must start and end with an \
             alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for \
             validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        )
    );
}

#[test]
fn extended_resources_are_whole_and_not_overcommitted() {
    assert!(
        rr(json!({"limits": {"example.com/gpu": "2"}, "requests": {"example.com/gpu": "2"}}))
            .is_empty()
    );
    assert_eq!(
        rr(json!({"requests": {"example.com/gpu": "1"}})),
        vec![
            "spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"
        ]
    );
    assert_eq!(
        rr(json!({"limits": {"example.com/gpu": "2"}, "requests": {"example.com/gpu": "1"}})),
        vec![
            "spec.containers[0].resources.requests: Invalid value: \"1\": must be equal to example.com/gpu limit of 2"
        ]
    );
    assert_eq!(
        rr(json!({"limits": {"example.com/gpu": "1.5"}, "requests": {"example.com/gpu": "1.5"}})),
        vec![
            format!(
                "spec.containers[0].resources.limits[example.com/gpu]: Invalid value: {}: must be an integer",
                go_int(15, -1, "", "DecimalSI")
            ),
            format!(
                "spec.containers[0].resources.requests[example.com/gpu]: Invalid value: {}: must be an integer",
                go_int(15, -1, "", "DecimalSI")
            ),
        ]
    );
    // Names in kubernetes.io/ are native: no further name rule.
    assert!(rr(json!({"limits": {"kubernetes.io/foo": "1"}})).is_empty());
}

#[test]
fn hugepages_rules() {
    assert!(rr(json!({"limits": {"hugepages-2Mi": "4Mi", "memory": "1Gi"}, "requests": {"hugepages-2Mi": "4Mi"}})).is_empty());
    assert_eq!(
        rr(
            json!({"limits": {"hugepages-2Mi": "3Mi", "memory": "1Gi"}, "requests": {"hugepages-2Mi": "3Mi"}})
        ),
        vec![
            "spec.containers[0].resources.limits[hugepages-2Mi]: Invalid value: \"3Mi\": 3Mi is not positive integer multiple of hugepages-2Mi",
            "spec.containers[0].resources.requests[hugepages-2Mi]: Invalid value: \"3Mi\": 3Mi is not positive integer multiple of hugepages-2Mi",
        ]
    );
    assert_eq!(
        rr(json!({"limits": {"hugepages-2Mi": "4Mi"}})),
        vec!["spec.containers[0].resources: Forbidden: HugePages require cpu or memory"]
    );
    assert_eq!(
        rr(
            json!({"limits": {"hugepages-2Mi": "4Mi", "cpu": "1"}, "requests": {"hugepages-2Mi": "2Mi"}})
        ),
        vec![
            "spec.containers[0].resources.requests: Invalid value: \"2Mi\": must be equal to hugepages-2Mi limit of 4Mi"
        ]
    );
}

#[test]
fn helpers_match_the_server_tables() {
    assert!(is_extended_resource_name("example.com/gpu"));
    assert!(!is_extended_resource_name("kubernetes.io/gpu"));
    assert!(!is_extended_resource_name("cpu"));
    assert!(is_overcommit_allowed("cpu"));
    assert!(!is_overcommit_allowed("hugepages-1Gi"));
    assert!(!is_overcommit_allowed("example.com/gpu"));
    assert!(is_standard_quota_resource_name("requests.hugepages-2Mi"));
    assert!(!is_standard_quota_resource_name("storage"));
    assert!(is_standard_resource_name("storage"));
    assert_eq!(go_float_f(2.0), "2.000000");
    assert_eq!(go_float_f(f64::NEG_INFINITY), "-Inf");
    assert_eq!(go_float_f(1.0 / 3.0), "0.333333");
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[-+0-9.a-zA-Z/]{0,8}".prop_map(Value::String),
        prop_oneof![
            Just("cpu"),
            Just("memory"),
            Just("pods"),
            Just("hugepages-2Mi"),
            Just("example.com/gpu"),
            Just("Container"),
            Just("Pod"),
            Just("PersistentVolumeClaim"),
            Just("BestEffort"),
            Just("Exists"),
            Just("In")
        ]
        .prop_map(|s| Value::String(s.to_string())),
    ];
    leaf.prop_recursive(5, 48, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("spec".to_string()),
                    Just("limits".to_string()),
                    Just("max".to_string()),
                    Just("min".to_string()),
                    Just("default".to_string()),
                    Just("defaultRequest".to_string()),
                    Just("maxLimitRequestRatio".to_string()),
                    Just("type".to_string()),
                    Just("hard".to_string()),
                    Just("scopes".to_string()),
                    Just("scopeSelector".to_string()),
                    Just("matchExpressions".to_string()),
                    Just("requests".to_string()),
                    Just("cpu".to_string()),
                    "[a-z]{1,3}",
                ],
                inner,
                0..5,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn validators_never_panic(v in arb_json()) {
        let _ = validate_limit_range(&v);
        let _ = validate_resource_quota(&v);
        let _ = validate_resource_requirements("r", &v);
        if let Some(spec) = v.get("spec") {
            let _ = validate_limit_range(&json!({"spec": spec}));
            let _ = validate_resource_requirements("r", spec);
        }
    }

    #[test]
    fn request_limit_check_agrees_with_comparison(a in 0i64..5000, b in 0i64..5000) {
        let errs = validate_resource_requirements(
            "r",
            &json!({"limits": {"cpu": format!("{a}m")}, "requests": {"cpu": format!("{b}m")}}),
        );
        prop_assert_eq!(errs.is_empty(), b <= a);
    }
}
