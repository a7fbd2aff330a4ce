//! Bearer-token authentication and the RBAC authorizer (`Config::auth`),
//! through kube-rs over real HTTP: the admin's static token, a
//! ServiceAccount's issued token, the anonymous user, Roles and
//! ClusterRoles with their bindings, aggregation, and the server's 401
//! and 403 answers.

// Test fixtures: a failure to set up is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use kube::api::{Api, ListParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::{Client, Config};
use kube_sandbox::Sandbox;
use kube_sandbox::auth::{AuthConfig, MASTERS, StaticToken};
use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{CMS, api_status, create_named, create_namespace, request, start};

const ADMIN: &str = "admin-token";
const RBAC: &str = "rbac.authorization.k8s.io";

/// The static token [`ADMIN`] of the user `admin`, a cluster admin.
fn admin_token() -> StaticToken {
    StaticToken {
        token: ADMIN.into(),
        user: "admin".into(),
        groups: vec![MASTERS.into()],
    }
}

async fn sandbox() -> (Sandbox, Client) {
    let sb = Sandbox::start(kube_sandbox::Config {
        auth: Some(AuthConfig {
            tokens: vec![
                admin_token(),
                StaticToken {
                    token: "dev-token".into(),
                    user: "dev".into(),
                    groups: vec!["developers".into()],
                },
            ],
        }),
        ..Default::default()
    })
    .await
    .unwrap();
    let admin = client(&sb, Some(ADMIN)).await;
    (sb, admin)
}

async fn client(sb: &Sandbox, token: Option<&str>) -> Client {
    let kc =
        kube::config::Kubeconfig::from_yaml(&kube_sandbox::kubeconfig_with_token(&sb.url(), token))
            .unwrap();
    let config = Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    Client::try_from(config).unwrap()
}

/// A GET of `path` with the bearer `token` (none when `None`) and
/// `headers`; status code and JSON answer.
async fn get_with(
    sb: &Sandbox,
    path: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
) -> (u16, Value) {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut all: Vec<(&str, &str)> = bearer
        .iter()
        .map(|b| ("authorization", b.as_str()))
        .collect();
    all.extend_from_slice(headers);
    let a = request(sb, Method::GET, path, &all, vec![]).await;
    (a.code, a.body)
}

fn rbac(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("rbac.authorization.k8s.io", "v1", kind),
        plural,
    )
}

async fn create(client: &Client, kind: &str, plural: &str, ns: Option<&str>, body: Value) {
    let ar = rbac(kind, plural);
    let api: Api<DynamicObject> = match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    };
    let mut body = body;
    body["apiVersion"] = json!("rbac.authorization.k8s.io/v1");
    body["kind"] = json!(kind);
    api.create(
        &PostParams::default(),
        &serde_json::from_value(body).unwrap(),
    )
    .await
    .unwrap();
}

/// Creates the Role `name` in `ns`, or the ClusterRole `name` when `ns` is
/// `None`, with `rules`.
async fn create_role(client: &Client, ns: Option<&str>, name: &str, rules: Value) {
    let (kind, plural) = match ns {
        Some(_) => ("Role", "roles"),
        None => ("ClusterRole", "clusterroles"),
    };
    let body = json!({"metadata": {"name": name}, "rules": rules});
    create(client, kind, plural, ns, body).await;
}

/// Creates the RoleBinding `name` in `ns`, or the ClusterRoleBinding
/// `name` when `ns` is `None`, of the `(kind, name)` role to `subject`.
async fn create_binding(
    client: &Client,
    ns: Option<&str>,
    name: &str,
    (role_kind, role): (&str, &str),
    subject: Value,
) {
    let (kind, plural) = match ns {
        Some(_) => ("RoleBinding", "rolebindings"),
        None => ("ClusterRoleBinding", "clusterrolebindings"),
    };
    let body = json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": RBAC, "kind": role_kind, "name": role},
        "subjects": [subject],
    });
    create(client, kind, plural, ns, body).await;
}

/// The rules granting `verbs` on ConfigMaps.
fn configmap_rules(verbs: &[&str]) -> Value {
    json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": verbs}])
}

/// The RBAC subject of the group `name`.
fn group(name: &str) -> Value {
    json!({"apiGroup": RBAC, "kind": "Group", "name": name})
}

/// The code, reason and message of a refused call.
fn refusal(e: kube::Error) -> (u16, String, String) {
    let s = api_status(e);
    (s.code, s.reason, s.message)
}

#[tokio::test]
async fn a_service_account_may_do_what_its_role_grants_and_nothing_else() {
    let (sb, admin) = sandbox().await;
    create_namespace(&admin, "team-a").await;
    create_namespace(&admin, "team-b").await;
    let sas = Api::<ServiceAccount>::namespaced(admin.clone(), "team-a");
    create_named(&sas, "sync").await;
    let token = sas
        .create_token_request(
            "sync",
            &PostParams::default(),
            &serde_json::from_value(json!({"spec": {}})).unwrap(),
        )
        .await
        .unwrap()
        .status
        .unwrap()
        .token;
    let sa = client(&sb, Some(&token)).await;
    let cms = |c: &Client, ns: &str| Api::<ConfigMap>::namespaced(c.clone(), ns);

    // Nothing granted yet.
    let (code, reason, message) = refusal(
        cms(&sa, "team-a")
            .list(&ListParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!((code, reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        message,
        "configmaps is forbidden: User \"system:serviceaccount:team-a:sync\" cannot list \
         resource \"configmaps\" in API group \"\" in the namespace \"team-a\""
    );

    let writer = configmap_rules(&["get", "list", "create"]);
    create_role(&admin, Some("team-a"), "cm-writer", writer).await;
    create_binding(
        &admin,
        Some("team-a"),
        "sync",
        ("Role", "cm-writer"),
        json!({"kind": "ServiceAccount", "name": "sync"}),
    )
    .await;
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap();
    cms(&sa, "team-a")
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    assert_eq!(
        cms(&sa, "team-a")
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    // Not a granted verb; not its namespace.
    let (code, _, message) = refusal(
        cms(&sa, "team-a")
            .delete("x", &Default::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 403);
    assert!(message.starts_with("configmaps \"x\" is forbidden: User \"system:serviceaccount:team-a:sync\" cannot delete resource \"configmaps\""), "{message}");
    let (code, _, message) = refusal(
        cms(&sa, "team-b")
            .create(&PostParams::default(), &cm)
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 403);
    assert!(
        message.ends_with("in the namespace \"team-b\""),
        "{message}"
    );
    // A binding to a role that does not exist says so in the refusal.
    create_binding(
        &admin,
        Some("team-b"),
        "dangling",
        ("Role", "gone"),
        json!({"kind": "ServiceAccount", "name": "sync", "namespace": "team-a"}),
    )
    .await;
    let (_, _, message) = refusal(
        cms(&sa, "team-b")
            .list(&ListParams::default())
            .await
            .unwrap_err(),
    );
    assert!(
        message.ends_with(": RBAC: role.rbac.authorization.k8s.io \"gone\" not found"),
        "{message}"
    );
}

#[tokio::test]
async fn cluster_roles_bind_groups_and_aggregate() {
    let (sb, admin) = sandbox().await;
    let dev = client(&sb, Some("dev-token")).await;
    let cms = Api::<ConfigMap>::all(dev.clone());
    let (code, _, message) = refusal(cms.list(&ListParams::default()).await.unwrap_err());
    assert_eq!(code, 403);
    assert!(message.ends_with("at the cluster scope"), "{message}");

    // An aggregated ClusterRole: its rules are those of the ClusterRoles
    // its selector matches, added after it.
    create(&admin, "ClusterRole", "clusterroles", None, json!({
        "metadata": {"name": "view-all"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"example.com/aggregate-to-view": "true"}}]},
        "rules": [],
    }))
    .await;
    let view_all = ("ClusterRole", "view-all");
    create_binding(
        &admin,
        None,
        "developers-view",
        view_all,
        group("developers"),
    )
    .await;
    assert!(
        cms.list(&ListParams::default()).await.is_err(),
        "nothing aggregated yet"
    );
    let aggregated = json!({
        "metadata": {"name": "cm-view", "labels": {"example.com/aggregate-to-view": "true"}},
        "rules": configmap_rules(&["list"]),
    });
    create(&admin, "ClusterRole", "clusterroles", None, aggregated).await;
    cms.list(&ListParams::default()).await.unwrap();
}

#[tokio::test]
async fn tokens_nobody_issued_are_401_and_no_token_is_anonymous() {
    let (sb, admin) = sandbox().await;
    // The admin token is cluster-admin.
    Api::<ConfigMap>::all(admin.clone())
        .list(&ListParams::default())
        .await
        .unwrap();
    let get = |path: &'static str, token: Option<&'static str>| get_with(&sb, path, token, &[]);
    let (code, body) = get("/api/v1/configmaps", Some("forged")).await;
    assert_eq!(code, 401);
    assert_eq!(
        body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
    );
    // Anonymous: the version is public, discovery is not.
    assert_eq!(get("/version", None).await.0, 200);
    let (code, body) = get("/api", None).await;
    assert_eq!(code, 403);
    assert_eq!(
        body["message"],
        "forbidden: User \"system:anonymous\" cannot get path \"/api\""
    );
    // An authenticated user discovers.
    assert_eq!(get("/api", Some("dev-token")).await.0, 200);
    assert_eq!(get("/apis", Some("dev-token")).await.0, 200);
}

#[tokio::test]
async fn without_auth_everyone_may_do_everything_as_before() {
    let sb = start().await;
    let anyone = client(&sb, None).await;
    Api::<ConfigMap>::all(anyone)
        .list(&ListParams::default())
        .await
        .unwrap();
    let anyone = client(&sb, Some("whatever")).await;
    Api::<ConfigMap>::all(anyone)
        .list(&ListParams::default())
        .await
        .unwrap();
}

#[tokio::test]
async fn over_https_a_client_trusting_the_ca_authenticates_and_others_cannot_connect() {
    let tls = kube_sandbox::tls::ServerTls::generate().unwrap();
    let ca = tls.ca_pem().to_string();
    let sb = Sandbox::start(kube_sandbox::Config {
        auth: Some(AuthConfig {
            tokens: vec![admin_token()],
        }),
        tls: Some(tls),
        ..Default::default()
    })
    .await
    .unwrap();
    assert!(sb.url().starts_with("https://127.0.0.1:"));
    assert!(sb.kubeconfig().contains("certificate-authority-data: "));
    let kc = kube::config::Kubeconfig::from_yaml(&kube_sandbox::kubeconfig_for(
        &sb.url(),
        Some(ADMIN),
        Some(&ca),
    ))
    .unwrap();
    let admin = Client::try_from(
        Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .unwrap(),
    )
    .unwrap();
    // A client that connects and never starts its handshake holds back
    // no other: the list below is answered while that connection is
    // still open (its handshake would time out, and close it, only after
    // 10 s; a listener handshaking in line would answer only then).
    let stalled = tokio::net::TcpStream::connect(sb.url().trim_start_matches("https://"))
        .await
        .unwrap();
    Api::<ConfigMap>::all(admin)
        .list(&ListParams::default())
        .await
        .unwrap();
    let mut buf = [0u8; 1];
    match stalled.try_read(&mut buf) {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("the stalled connection was closed or answered first: {other:?}"),
    }
    // A client that does not trust the CA never gets an answer.
    let untrusting = reqwest::Client::new();
    assert!(
        untrusting
            .get(format!("{}/version", sb.url()))
            .send()
            .await
            .is_err()
    );
}

/// The review resources answer with the caller and the RBAC decisions.
#[tokio::test]
async fn reviews_answer_for_the_caller_with_the_rbac_decisions() {
    let (sb, admin) = sandbox().await;
    let dev = client(&sb, Some("dev-token")).await;
    let post = |c: &Client, plural: &str, kind: &str, group: &str, spec: Value| {
        let ar =
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), plural);
        let api: Api<DynamicObject> = Api::all_with(c.clone(), &ar);
        let body: DynamicObject = serde_json::from_value(json!({
            "apiVersion": format!("{group}/v1"), "kind": kind, "spec": spec,
        }))
        .unwrap();
        async move {
            let out = api.create(&PostParams::default(), &body).await.unwrap();
            out.data["status"].clone()
        }
    };
    let whoami = post(
        &dev,
        "selfsubjectreviews",
        "SelfSubjectReview",
        "authentication.k8s.io",
        json!({}),
    )
    .await;
    assert_eq!(
        whoami["userInfo"],
        json!({"username": "dev", "groups": ["developers", "system:authenticated"]})
    );
    let list_cms = json!({"resourceAttributes": {"namespace": "default", "verb": "list", "resource": "configmaps"}});
    let ssar = |c: &Client| {
        post(
            c,
            "selfsubjectaccessreviews",
            "SelfSubjectAccessReview",
            "authorization.k8s.io",
            list_cms.clone(),
        )
    };
    assert_eq!(ssar(&dev).await, json!({"allowed": false}));
    assert_eq!(
        ssar(&admin).await,
        json!({"allowed": true, "reason": "RBAC: allowed by ClusterRoleBinding \"cluster-admin\" of ClusterRole \"cluster-admin\" to Group \"system:masters\""})
    );

    let default = Some("default");
    create_role(&admin, default, "cm-reader", configmap_rules(&["list"])).await;
    let reader = ("Role", "cm-reader");
    create_binding(&admin, default, "developers", reader, group("developers")).await;
    assert_eq!(
        ssar(&dev).await,
        json!({"allowed": true, "reason": "RBAC: allowed by RoleBinding \"developers/default\" of Role \"cm-reader\" to Group \"developers\""})
    );
    // The admin asks about another user.
    let mut spec = list_cms.clone();
    spec["user"] = json!("someone");
    spec["groups"] = json!(["developers"]);
    let sar = post(
        &admin,
        "subjectaccessreviews",
        "SubjectAccessReview",
        "authorization.k8s.io",
        spec,
    )
    .await;
    assert_eq!(sar["allowed"], true);
    let rules = post(
        &dev,
        "selfsubjectrulesreviews",
        "SelfSubjectRulesReview",
        "authorization.k8s.io",
        json!({"namespace": "default"}),
    )
    .await;
    let resource_rules = rules["resourceRules"].as_array().unwrap();
    assert!(
        resource_rules
            .contains(&json!({"verbs": ["list"], "apiGroups": [""], "resources": ["configmaps"]})),
        "{rules}"
    );
    assert!(
        rules["nonResourceRules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["nonResourceURLs"]
                .as_array()
                .unwrap()
                .contains(&json!("/api"))),
        "discovery, from system:discovery: {rules}"
    );
}

/// `Impersonate-*` headers act as another user when the caller may
/// `impersonate` it, and are refused with the server's 403 otherwise.
#[tokio::test]
async fn impersonation_needs_the_impersonate_verb_and_then_acts_as_that_user() {
    let (sb, admin) = sandbox().await;
    let get = |token: &'static str, headers: &'static [(&'static str, &'static str)]| {
        get_with(&sb, CMS, Some(token), headers)
    };
    // dev may not impersonate anyone.
    let (code, body) = get("dev-token", &[("Impersonate-User", "alice")]).await;
    assert_eq!(code, 403);
    assert_eq!(
        body["message"],
        "users \"alice\" is forbidden: User \"dev\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
    );
    // The admin may; alice (authenticated, nothing more) may not list.
    let (code, body) = get(ADMIN, &[("Impersonate-User", "alice")]).await;
    assert_eq!(code, 403);
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("User \"alice\" cannot list"),
        "{body}"
    );
    // As a ServiceAccount, with its groups.
    let sas = group("system:serviceaccounts:default");
    create_binding(
        &admin,
        Some("default"),
        "sas-view",
        ("ClusterRole", "cm-list"),
        sas,
    )
    .await;
    create_role(&admin, None, "cm-list", configmap_rules(&["list"])).await;
    let (code, _) = get(
        ADMIN,
        &[("Impersonate-User", "system:serviceaccount:default:bot")],
    )
    .await;
    assert_eq!(code, 200, "the ServiceAccount's group is bound");
    // Groups given replace the automatic ones.
    let (code, _) = get(
        ADMIN,
        &[
            ("Impersonate-User", "system:serviceaccount:default:bot"),
            ("Impersonate-Group", "nobody"),
        ],
    )
    .await;
    assert_eq!(code, 403);
    // A group without a user is the server's 500.
    let (code, _) = get(ADMIN, &[("Impersonate-Group", "developers")]).await;
    assert_eq!(code, 500);
}

/// Roles and bindings grant only what their writer holds, unless the
/// writer may `escalate` or `bind`.
#[tokio::test]
async fn nobody_grants_more_than_they_hold_without_escalate_or_bind() {
    let (sb, admin) = sandbox().await;
    create_namespace(&admin, "team-a").await;
    let team_a = Some("team-a");
    let rules = json!([
        {"apiGroups": [RBAC], "resources": ["roles", "rolebindings"], "verbs": ["create"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}
    ]);
    create_role(&admin, team_a, "rbac-admin", rules).await;
    let rbac_admin = ("Role", "rbac-admin");
    create_binding(
        &admin,
        team_a,
        "developers",
        rbac_admin,
        group("developers"),
    )
    .await;
    let dev = client(&sb, Some("dev-token")).await;
    let roles: Api<DynamicObject> =
        Api::namespaced_with(dev.clone(), "team-a", &rbac("Role", "roles"));
    let bindings: Api<DynamicObject> =
        Api::namespaced_with(dev.clone(), "team-a", &rbac("RoleBinding", "rolebindings"));
    let role = |name: &str, resource: &str| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": name},
            "rules": [{"apiGroups": [""], "resources": [resource], "verbs": ["get"]}],
        }))
        .unwrap()
    };
    // What dev holds, dev may grant.
    roles
        .create(&PostParams::default(), &role("cm-get", "configmaps"))
        .await
        .unwrap();
    let (code, _, message) = refusal(
        roles
            .create(&PostParams::default(), &role("secret-get", "secrets"))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 403);
    assert_eq!(
        message,
        "roles.rbac.authorization.k8s.io \"secret-get\" is forbidden: user \"dev\" (groups=[\"developers\" \"system:authenticated\"]) \
         is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}"
    );
    let binding = |name: &str, kind: &str, role: &str| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "eve"}],
        }))
        .unwrap()
    };
    bindings
        .create(&PostParams::default(), &binding("eve-cm", "Role", "cm-get"))
        .await
        .unwrap();
    let (code, _, message) = refusal(
        bindings
            .create(
                &PostParams::default(),
                &binding("eve-admin", "ClusterRole", "cluster-admin"),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 403);
    assert!(
        message.contains("is attempting to grant RBAC permissions not currently held"),
        "{message}"
    );

    // escalate and bind lift the checks.
    let escalate = json!([{"apiGroups": [RBAC], "resources": ["roles"], "verbs": ["escalate"]}]);
    create_role(&admin, team_a, "escalator", escalate).await;
    let bind = json!([{"apiGroups": [RBAC], "resources": ["clusterroles"], "verbs": ["bind"],
                       "resourceNames": ["cluster-admin"]}]);
    create_role(&admin, None, "bind-admin", bind).await;
    for (binding, role) in [
        ("developers-escalate", ("Role", "escalator")),
        ("developers-bind", ("ClusterRole", "bind-admin")),
    ] {
        create_binding(&admin, team_a, binding, role, group("developers")).await;
    }
    roles
        .create(&PostParams::default(), &role("secret-get", "secrets"))
        .await
        .unwrap();
    bindings
        .create(
            &PostParams::default(),
            &binding("eve-admin", "ClusterRole", "cluster-admin"),
        )
        .await
        .unwrap();
}

/// A Role in `work` granting `verb` on ConfigMaps, bound to user `dev`.
async fn grant_dev(admin: &Client, role: &str, verb: &str) {
    create_role(admin, Some("work"), role, configmap_rules(&[verb])).await;
    create_binding(
        admin,
        Some("work"),
        &format!("dev-{role}"),
        ("Role", role),
        json!({"apiGroup": RBAC, "kind": "User", "name": "dev"}),
    )
    .await;
}

/// A server-side apply that would create its object needs `create` as well
/// as `patch`, as upstream's patch handler authorizes it; one that updates
/// an existing object needs `patch` only.
#[tokio::test]
async fn an_apply_that_creates_needs_create_too() {
    use kube::api::{Patch, PatchParams};
    let (sb, admin) = sandbox().await;
    create_namespace(&admin, "work").await;
    grant_dev(&admin, "patcher", "patch").await;
    let dev = client(&sb, Some("dev-token")).await;
    let cms = Api::<ConfigMap>::namespaced(dev.clone(), "work");
    let apply = |name: &'static str| {
        let cms = cms.clone();
        async move {
            cms.patch(
                name,
                &PatchParams::apply("dev"),
                &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"name": name}, "data": {"k": "v"}})),
            )
            .await
        }
    };
    let (code, reason, message) = refusal(apply("new").await.unwrap_err());
    assert_eq!((code, reason.as_str()), (403, "Forbidden"));
    // The authorizer's reason alone, which RBAC leaves empty here.
    assert_eq!(message, "configmaps \"new\" is forbidden: ");
    let as_admin = Api::<ConfigMap>::namespaced(admin.clone(), "work");
    assert!(
        as_admin.get_opt("new").await.unwrap().is_none(),
        "nothing stored"
    );
    // An existing object: patch is enough.
    create_named(&as_admin, "old").await;
    apply("old").await.unwrap();
    // With create granted too, the apply creates.
    grant_dev(&admin, "creator", "create").await;
    apply("new").await.unwrap();
}
