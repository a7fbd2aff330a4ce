//! The resources and subresources the registries answer without storing
//! an object of their own, through kube-rs's typed APIs over real HTTP:
//! the create-only reviews (as a server with no authentication and the
//! AlwaysAllow authorizer answers them), `componentstatuses`, a pod's
//! `binding`, `eviction`, `log`, `exec`, `portforward`, `proxy`,
//! `ephemeralcontainers` and `resize`, and a CSR's `approval`; their
//! discovery entries; and that bad input gets the server's status and
//! changes nothing.

// Test fixtures: a failure to set up is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::authentication::v1::{SelfSubjectReview, TokenReview};
use k8s_openapi::api::authorization::v1::{
    LocalSubjectAccessReview, SelfSubjectAccessReview, SelfSubjectRulesReview, SubjectAccessReview,
};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{ComponentStatus, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, EvictParams, LogParams, Patch, PatchParams, PostParams};
use kube::{Client, Config};
use kube_sandbox::Sandbox;
use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{JSON, api_status, get_json, raw, request, start, typed};

const NS: &str = "default";

async fn sandbox() -> (Sandbox, Client) {
    let sb = start().await;
    let mut config = Config::new(sb.url().parse().unwrap());
    // A 429 is an answer under test here, not something to wait out.
    config.default_retry = false;
    let client = Client::try_from(config).unwrap();
    (sb, client)
}

/// A POST of the JSON text `body`; status code and JSON answer.
async fn post(sb: &Sandbox, path: &str, body: &str) -> (u16, Value) {
    raw(sb, Method::POST, path, JSON, body.into()).await
}

#[tokio::test]
async fn reviews_answer_as_the_anonymous_user_with_everything_allowed_and_no_token_but_issued_ones()
{
    let (sb, client) = sandbox().await;
    let start = sb.revision().await;
    let pp = PostParams::default();

    let tr: TokenReview = typed(json!({"spec": {"token": "any-token"}}));
    let out = Api::<TokenReview>::all(client.clone())
        .create(&pp, &tr)
        .await
        .unwrap();
    // Only the tokens the sandbox issued authenticate
    // (`service_account_tokens.rs`); any other is refused as the bearer
    // token authenticator refuses it.
    let status = out.status.unwrap();
    assert_eq!(status.authenticated, None);
    assert_eq!(status.error.as_deref(), Some("invalid bearer token"));
    assert_eq!(out.spec.token.as_deref(), Some("any-token"));

    let ssr = Api::<SelfSubjectReview>::all(client.clone())
        .create(&pp, &typed(json!({})))
        .await
        .unwrap();
    let info = ssr.status.unwrap().user_info.unwrap();
    assert_eq!(info.username.as_deref(), Some("system:anonymous"));

    let sar: SubjectAccessReview = typed(json!({"spec": {
        "user": "jane", "resourceAttributes": {"namespace": NS, "verb": "delete", "resource": "secrets"}
    }}));
    let out = Api::<SubjectAccessReview>::all(client.clone())
        .create(&pp, &sar)
        .await
        .unwrap();
    let st = out.status.unwrap();
    assert!(st.allowed);
    assert_eq!((st.denied, st.reason.as_deref()), (None, None));

    let lsar: LocalSubjectAccessReview = typed(json!({"spec": {
        "user": "jane", "resourceAttributes": {"namespace": NS, "verb": "get", "resource": "pods"}
    }}));
    let out = Api::<LocalSubjectAccessReview>::namespaced(client.clone(), NS)
        .create(&pp, &lsar)
        .await
        .unwrap();
    assert!(out.status.unwrap().allowed);
    assert_eq!(out.metadata.namespace.as_deref(), Some(NS));

    let ssar: SelfSubjectAccessReview =
        typed(json!({"spec": {"nonResourceAttributes": {"path": "/healthz", "verb": "get"}}}));
    let out = Api::<SelfSubjectAccessReview>::all(client.clone())
        .create(&pp, &ssar)
        .await
        .unwrap();
    assert!(out.status.unwrap().allowed);

    let ssrr: SelfSubjectRulesReview = typed(json!({"spec": {"namespace": NS}}));
    let out = Api::<SelfSubjectRulesReview>::all(client.clone())
        .create(&pp, &ssrr)
        .await
        .unwrap();
    let st = out.status.unwrap();
    assert_eq!(st.resource_rules[0].verbs, ["*"]);
    assert_eq!(st.resource_rules[0].resources, Some(vec!["*".to_string()]));
    assert_eq!(
        st.non_resource_rules[0].non_resource_urls,
        Some(vec!["*".to_string()])
    );
    assert!(!st.incomplete);

    // Nothing was stored: the revision did not move.
    assert_eq!(sb.revision().await, start);
}

#[tokio::test]
async fn invalid_reviews_are_refused_as_the_registries_refuse_them() {
    let (sb, client) = sandbox().await;
    let start = sb.revision().await;
    let pp = PostParams::default();

    let e = api_status(
        Api::<SubjectAccessReview>::all(client.clone())
            .create(&pp, &typed(json!({"spec": {"user": "jane"}})))
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        e.message,
        "SubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified"
    );

    let lsar: LocalSubjectAccessReview = typed(json!({"spec": {
        "user": "jane", "resourceAttributes": {"namespace": "elsewhere", "verb": "get", "resource": "pods"}
    }}));
    let e = api_status(
        Api::<LocalSubjectAccessReview>::namespaced(client.clone(), NS)
            .create(&pp, &lsar)
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 422);
    assert!(
        e.message.ends_with(
            "spec.resourceAttributes.namespace: Invalid value: \"elsewhere\": must match metadata.namespace"
        ),
        "{}",
        e.message
    );

    let e = api_status(
        Api::<TokenReview>::all(client.clone())
            .create(&pp, &typed(json!({"spec": {}})))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (e.code, e.message.as_str()),
        (400, "token is required for TokenReview in authentication")
    );
    let e = api_status(
        Api::<SelfSubjectRulesReview>::all(client.clone())
            .create(&pp, &typed(json!({"spec": {}})))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (e.code, e.message.as_str()),
        (400, "no namespace on request")
    );

    // Malformed bodies, wrong kinds, and the methods a create-only
    // resource does not have.
    let path = "/apis/authentication.k8s.io/v1/tokenreviews";
    let (code, body) = post(&sb, path, "{not json").await;
    assert_eq!(code, 400, "{body}");
    let (code, body) = post(
        &sb,
        path,
        r#"{"apiVersion":"v1","kind":"ConfigMap","spec":{"token":"x"}}"#,
    )
    .await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(
        body["message"],
        "the API version in the data (v1) does not match the expected API version (authentication.k8s.io/v1)"
    );
    let (code, body) = post(&sb, path, r#"{"spec":{"token":7}}"#).await;
    assert_eq!(code, 400, "{body}");
    let (code, body) = get_json(&sb, path).await;
    assert_eq!(
        (code, body["reason"].as_str()),
        (405, Some("MethodNotAllowed"))
    );
    let (code, _) = get_json(&sb, &format!("{path}/x")).await;
    assert_eq!(code, 404);
    let (code, _) = post(
        &sb,
        "/apis/authorization.k8s.io/v1/localsubjectaccessreviews",
        "{}",
    )
    .await;
    assert_eq!(code, 404);
    assert_eq!(sb.revision().await, start);
}

#[tokio::test]
async fn componentstatuses_report_the_missing_control_plane() {
    let (sb, client) = sandbox().await;
    let api = Api::<ComponentStatus>::all(client.clone());
    let list = api.list(&Default::default()).await.unwrap();
    let health: Vec<(String, String)> = list
        .items
        .iter()
        .map(|c| {
            let cond = &c.conditions.as_ref().unwrap()[0];
            (c.metadata.name.clone().unwrap(), cond.status.clone())
        })
        .collect();
    assert_eq!(
        health,
        [
            ("scheduler".to_string(), "False".to_string()),
            ("controller-manager".to_string(), "False".to_string()),
            ("etcd-0".to_string(), "True".to_string()),
        ]
    );
    let sched = api.get("scheduler").await.unwrap();
    let cond = &sched.conditions.unwrap()[0];
    assert_eq!(cond.type_, "Healthy");
    assert_eq!(
        cond.message.as_deref(),
        Some(
            "Get \"https://127.0.0.1:10259/healthz\": dial tcp 127.0.0.1:10259: connect: connection refused"
        )
    );
    let listed = request(&sb, Method::GET, "/api/v1/componentstatuses", &[], vec![]).await;
    assert_eq!(
        listed.warnings[0],
        "299 - \"v1 ComponentStatus is deprecated in v1.19+\""
    );
    let (code, body) = get_json(&sb, "/api/v1/componentstatuses/nope").await;
    assert_eq!(
        (code, body["message"].as_str()),
        (500, Some("Component not found: nope"))
    );
    let (code, _) = post(&sb, "/api/v1/componentstatuses", "{}").await;
    assert_eq!(code, 405);
    let (code, body) = get_json(&sb, "/api/v1/componentstatuses?watch=true").await;
    assert_eq!(code, 405, "{body}");
}

#[tokio::test]
async fn discovery_lists_the_reviews_and_every_subresource_with_its_verbs() {
    let (sb, _client) = sandbox().await;
    let (_, core) = get_json(&sb, "/api/v1").await;
    let find = |doc: &Value, name: &str| {
        doc["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} not in {doc}"))
    };
    assert_eq!(find(&core, "pods/binding")["verbs"], json!(["create"]));
    let eviction = find(&core, "pods/eviction");
    assert_eq!(
        (eviction["group"].as_str(), eviction["kind"].as_str()),
        (Some("policy"), Some("Eviction"))
    );
    assert_eq!(find(&core, "pods/log")["verbs"], json!(["get"]));
    assert_eq!(find(&core, "pods/exec")["verbs"], json!(["create", "get"]));
    assert_eq!(
        find(&core, "pods/ephemeralcontainers")["verbs"],
        json!(["get", "patch", "update"])
    );
    assert_eq!(
        find(&core, "componentstatuses")["verbs"],
        json!(["get", "list"])
    );
    assert_eq!(
        find(&core, "componentstatuses")["shortNames"],
        json!(["cs"])
    );
    let (_, authn) = get_json(&sb, "/apis/authentication.k8s.io/v1").await;
    assert_eq!(find(&authn, "tokenreviews")["verbs"], json!(["create"]));
    let (_, authz) = get_json(&sb, "/apis/authorization.k8s.io/v1").await;
    assert_eq!(
        find(&authz, "localsubjectaccessreviews")["namespaced"],
        true
    );
    let (_, certs) = get_json(&sb, "/apis/certificates.k8s.io/v1").await;
    assert_eq!(
        find(&certs, "certificatesigningrequests/approval")["verbs"],
        json!(["get", "patch", "update"])
    );

    let aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let agg = request(&sb, Method::GET, "/api", &[("accept", aggregated)], vec![])
        .await
        .body;
    let pods = agg["items"][0]["versions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "pods")
        .unwrap()
        .clone();
    let subs: Vec<&str> = pods["subresources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["subresource"].as_str().unwrap())
        .collect();
    assert_eq!(
        subs,
        [
            "attach",
            "binding",
            "ephemeralcontainers",
            "eviction",
            "exec",
            "log",
            "portforward",
            "proxy",
            "resize",
            "status"
        ]
    );

    let (_, openapi) = get_json(&sb, "/openapi/v3/apis/authorization.k8s.io/v1").await;
    let path = &openapi["paths"]["/apis/authorization.k8s.io/v1/namespaces/{namespace}/localsubjectaccessreviews"];
    assert_eq!(path["post"]["x-kubernetes-action"], "post");
    assert!(path.get("get").is_none(), "{path}");
    assert!(
        openapi["components"]["schemas"]
            .get("io.k8s.api.authorization.v1.SubjectAccessReview")
            .is_some()
    );
}

fn pod(name: &str, containers: &[&str]) -> Pod {
    let cs: Vec<Value> = containers
        .iter()
        .map(|c| json!({"name": c, "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}))
        .collect();
    typed(json!({"metadata": {"name": name, "labels": {"app": "web"}}, "spec": {"containers": cs}}))
}

#[tokio::test]
async fn a_binding_assigns_a_node_once() {
    let (sb, client) = sandbox().await;
    let pods = Api::<Pod>::namespaced(client.clone(), NS);
    let pp = PostParams::default();
    pods.create(&pp, &pod("p", &["app"])).await.unwrap();
    let binding = |target: &str| {
        json!({
            "apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": "p", "annotations": {"scheduled-by": "test"}},
            "target": {"apiVersion": "v1", "kind": "Node", "name": target}
        })
    };
    let out: Value = pods
        .create_subresource("binding", "p", &pp, &binding("node-1"))
        .await
        .unwrap();
    assert_eq!(out["status"], "Success");
    assert_eq!(out["code"], 201);
    let bound = pods.get("p").await.unwrap();
    assert_eq!(
        bound.spec.as_ref().unwrap().node_name.as_deref(),
        Some("node-1")
    );
    assert_eq!(bound.metadata.annotations.unwrap()["scheduled-by"], "test");
    let conds = bound.status.unwrap().conditions.unwrap();
    let scheduled = conds.iter().find(|c| c.type_ == "PodScheduled").unwrap();
    assert_eq!(scheduled.status, "True");

    let rv = sb.revision().await;
    let e = api_status(
        pods.create_subresource::<Value, Value>("binding", "p", &pp, &binding("node-2"))
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 409);
    assert_eq!(
        e.message,
        "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to node \"node-1\""
    );
    // A binding naming another pod, or no target, changes nothing.
    let mismatched = json!({
        "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "q"}, "target": {"name": "n"}
    });
    let e = api_status(
        pods.create_subresource::<Value, Value>("binding", "p", &pp, &mismatched)
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (e.code, e.message.as_str()),
        (400, "name in URL does not match name in Binding object")
    );
    let (code, _) = post(&sb, "/api/v1/namespaces/default/pods/p/binding", "[1,2").await;
    assert_eq!(code, 400);
    let (code, _) = post(
        &sb,
        "/api/v1/namespaces/default/pods/p/binding",
        r#"{"kind":"Pod","metadata":{"name":"p"}}"#,
    )
    .await;
    assert_eq!(code, 400);
    let (code, _) = get_json(&sb, "/api/v1/namespaces/default/pods/p/binding").await;
    assert_eq!(code, 405);
    assert_eq!(sb.revision().await, rv);
    let e = api_status(
        pods.create_subresource::<Value, Value>("binding", "nope", &pp, &binding("n"))
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 400);
}

async fn running(pods: &Api<Pod>, name: &str, ready: bool) {
    let mut p = pods.get_status(name).await.unwrap();
    let status = p.status.get_or_insert_with(Default::default);
    status.phase = Some("Running".into());
    status.conditions = Some(vec![typed(
        json!({"type": "Ready", "status": if ready { "True" } else { "False" }}),
    )]);
    pods.replace_status(name, &PostParams::default(), &p)
        .await
        .unwrap();
}

#[tokio::test]
async fn evictions_honour_disruption_budgets() {
    let (sb, client) = sandbox().await;
    let pods = Api::<Pod>::namespaced(client.clone(), NS);
    let pdbs = Api::<PodDisruptionBudget>::namespaced(client.clone(), NS);
    let pp = PostParams::default();

    // A pending pod disrupts nothing: it goes without a budget check.
    pods.create(&pp, &pod("pending", &["app"])).await.unwrap();
    pods.evict("pending", &EvictParams::default())
        .await
        .unwrap();
    assert!(pods.get_opt("pending").await.unwrap().is_none());

    pods.create(&pp, &pod("web", &["app"])).await.unwrap();
    running(&pods, "web", true).await;
    let budget: PodDisruptionBudget = typed(json!({
        "metadata": {"name": "web"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}
    }));
    pdbs.create(&pp, &budget).await.unwrap();
    let set_status = |allowed: i32| {
        let pdbs = pdbs.clone();
        async move {
            let mut b = pdbs.get_status("web").await.unwrap();
            b.status = Some(typed(json!({
                "observedGeneration": 1, "disruptionsAllowed": allowed,
                "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1
            })));
            pdbs.replace_status("web", &PostParams::default(), &b)
                .await
                .unwrap();
        }
    };
    set_status(0).await;
    let rv = sb.revision().await;
    let e = api_status(
        pods.evict("web", &EvictParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (429, "TooManyRequests"));
    assert_eq!(
        e.message,
        "Too many requests: Cannot evict pod as it would violate the pod's disruption budget."
    );
    assert_eq!(sb.revision().await, rv, "a refused eviction writes nothing");
    let (_, body) = post(
        &sb,
        "/api/v1/namespaces/default/pods/web/eviction",
        r#"{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web"}}"#,
    )
    .await;
    assert_eq!(
        body["details"]["causes"],
        json!([{"reason": "DisruptionBudget", "message": "The disruption budget web needs 1 healthy pods and has 1 currently"}])
    );

    set_status(1).await;
    pods.evict("web", &EvictParams::default()).await.unwrap();
    assert!(pods.get_opt("web").await.unwrap().is_none());
    let after = pdbs.get_status("web").await.unwrap().status.unwrap();
    assert_eq!(after.disruptions_allowed, 0);
    assert!(after.disrupted_pods.unwrap().contains_key("web"));

    // Mismatched names and missing pods.
    let (code, body) = post(
        &sb,
        "/api/v1/namespaces/default/pods/web/eviction",
        r#"{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"other"}}"#,
    )
    .await;
    assert_eq!(
        (code, body["message"].as_str()),
        (
            400,
            Some("name in URL does not match name in Eviction object")
        )
    );
    let e = api_status(
        pods.evict("gone", &EvictParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 404);

    // Two budgets over one pod: the registry answers its failure Status
    // as the create's result (HTTP 201, the Status saying 500), and the
    // pod stays.
    let mut twice = pod("twice", &["app"]);
    twice.metadata.labels = Some([("app".to_string(), "twice".to_string())].into());
    pods.create(&pp, &twice).await.unwrap();
    running(&pods, "twice", true).await;
    for name in ["b1", "b2"] {
        let b: PodDisruptionBudget = typed(json!({
            "metadata": {"name": name},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "twice"}}}
        }));
        pdbs.create(&pp, &b).await.unwrap();
    }
    let (code, body) = post(
        &sb,
        "/api/v1/namespaces/default/pods/twice/eviction",
        r#"{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"twice"}}"#,
    )
    .await;
    assert_eq!((code, body["code"].as_i64()), (201, Some(500)), "{body}");
    assert_eq!(
        body["message"],
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    );
    assert!(pods.get_opt("twice").await.unwrap().is_some());
}

#[tokio::test]
async fn streaming_subresources_answer_as_for_a_pod_without_a_node() {
    let (sb, client) = sandbox().await;
    let pods = Api::<Pod>::namespaced(client.clone(), NS);
    pods.create(&PostParams::default(), &pod("one", &["app"]))
        .await
        .unwrap();
    pods.create(&PostParams::default(), &pod("two", &["a", "b"]))
        .await
        .unwrap();
    // An unscheduled pod has no log location: an empty log.
    assert_eq!(pods.logs("one", &LogParams::default()).await.unwrap(), "");
    let e = api_status(
        pods.logs(
            "one",
            &LogParams {
                container: Some("nope".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(
        (e.code, e.message.as_str()),
        (400, "container nope is not valid for pod one")
    );
    let e = api_status(pods.logs("two", &LogParams::default()).await.unwrap_err());
    assert_eq!(
        e.message,
        "a container name must be specified for pod two, choose one of: [a b]"
    );
    let e = api_status(
        pods.logs("missing", &LogParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 404);
    let e = api_status(
        pods.logs(
            "one",
            &LogParams {
                tail_lines: Some(-1),
                ..Default::default()
            },
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(e.code, 422);

    for sub in ["exec?command=ls", "attach", "portforward"] {
        let (code, body) = raw(
            &sb,
            Method::POST,
            &format!("/api/v1/namespaces/default/pods/one/{sub}"),
            "",
            vec![],
        )
        .await;
        assert_eq!(
            (code, body["message"].as_str()),
            (400, Some("pod one does not have a host assigned")),
            "{sub}"
        );
    }
    let (code, body) = get_json(&sb, "/api/v1/namespaces/default/pods/one/proxy/x/y").await;
    assert_eq!(
        (code, body["message"].as_str()),
        (400, Some("address not allowed"))
    );

    // Bound to a node that does not exist: the node lookup fails.
    let binding = json!({
        "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "one"}, "target": {"name": "ghost"}
    });
    pods.create_subresource::<Value, Value>("binding", "one", &PostParams::default(), &binding)
        .await
        .unwrap();
    let e = api_status(pods.logs("one", &LogParams::default()).await.unwrap_err());
    assert_eq!(
        (e.code, e.message.as_str()),
        (404, "nodes \"ghost\" not found")
    );
}

#[tokio::test]
async fn ephemeral_containers_and_resize_change_only_their_part() {
    let (_sb, client) = sandbox().await;
    let pods = Api::<Pod>::namespaced(client.clone(), NS);
    pods.create(&PostParams::default(), &pod("p", &["app"]))
        .await
        .unwrap();
    let pp = PatchParams::default();
    let out = pods
        .patch_subresource(
            "ephemeralcontainers",
            "p",
            &pp,
            &Patch::Strategic(json!({"spec": {
                "containers": [{"name": "app", "image": "changed"}],
                "ephemeralContainers": [{"name": "debug", "image": "busybox"}]
            }})),
        )
        .await
        .unwrap();
    let spec = out.spec.unwrap();
    assert_eq!(spec.ephemeral_containers.unwrap()[0].name, "debug");
    assert_eq!(spec.containers[0].image.as_deref(), Some("nginx"));
    let e = api_status(
        pods.patch_subresource(
            "ephemeralcontainers",
            "p",
            &pp,
            &Patch::Merge(json!({"spec": {"ephemeralContainers": []}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(e.code, 422);

    let out = pods
        .patch_subresource(
            "resize",
            "p",
            &pp,
            &Patch::Strategic(json!({"spec": {"containers": [
                {"name": "app", "image": "changed", "resources": {"requests": {"cpu": "200m"}}}
            ]}})),
        )
        .await
        .unwrap();
    let c = &out.spec.unwrap().containers[0];
    assert_eq!(c.image.as_deref(), Some("nginx"));
    assert_eq!(
        c.resources.as_ref().unwrap().requests.as_ref().unwrap()["cpu"].0,
        "200m"
    );
    let e = api_status(
        pods.patch_subresource(
            "resize",
            "p",
            &pp,
            &Patch::Strategic(json!({"spec": {"containers": [
                {"name": "app", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}
            ]}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(e.code, 422);
    assert!(
        e.message.contains("Pod QOS Class may not change"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn an_approval_changes_only_the_conditions() {
    let (_sb, client) = sandbox().await;
    let csrs = Api::<CertificateSigningRequest>::all(client.clone());
    let pem = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlISk1ISUNBUUF3RURFT01Bd0dBMVVFQXd3RmJXbHljbUV3V1RBVEJnY3Foa2pPUFFJQkJnZ3Foa2pPUFFNQgpCd05DQUFSVE5WQUJBNUJqdWxhL3ZNYnVHUlpWTXc4Wk1QbHNyelVSanNKRDFvclJnTzYyZHhLSXZnUHY4NzhWCkNsR3MrQ3VtMFdoZW1Dem14Nlk4cmlEaktYWmlvQUF3Q2dZSUtvWkl6ajBFQXdJRFJ3QXdSQUlnR2E5S1dRaHMKV3dzZWI0RWJHSFR3SkFKb2N0SHVyY3N2dHRKbWxkWlJWU2dDSUYvYkc4NWt6T09tVHFxR1dXZTd3emI1R0ppZAppcldTMXJBbDRMcDc5cUFtCi0tLS0tRU5EIENFUlRJRklDQVRFIFJFUVVFU1QtLS0tLQo=";
    csrs.create(
        &PostParams::default(),
        &typed(json!({"metadata": {"name": "c"}, "spec": {
            "request": pem, "signerName": "example.com/s", "usages": ["digital signature"]
        }})),
    )
    .await
    .unwrap();
    let mut csr = csrs.get_subresource("approval", "c").await.unwrap();
    csr.status.get_or_insert_with(Default::default).conditions = Some(vec![typed(
        json!({"type": "Approved", "status": "True", "reason": "Test", "message": "ok"}),
    )]);
    csr.spec.signer_name = "example.com/other".into();
    let out = csrs
        .replace_subresource("approval", "c", &PostParams::default(), &csr)
        .await
        .unwrap();
    assert_eq!(out.spec.signer_name, "example.com/s");
    let cond = &out.status.unwrap().conditions.unwrap()[0];
    assert_eq!(cond.type_, "Approved");
    assert!(cond.last_update_time.is_some());
    let e = api_status(
        csrs.patch_subresource(
            "approval",
            "c",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"conditions": [{"type": "Denied", "status": "True"}]}}),
            ),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(e.code, 422);
    assert!(
        e.message
            .contains("updates may not remove a condition of type \"Approved\""),
        "{}",
        e.message
    );
}
