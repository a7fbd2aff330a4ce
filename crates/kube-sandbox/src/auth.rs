//! Who a request is and whether it may do what it asks: bearer-token
//! authentication and the RBAC authorizer, as a kube-apiserver started
//! with `--token-auth-file` and `--authorization-mode=RBAC` answers.
//!
//! Off unless [`AuthConfig`] is given (every request is then anonymous and
//! allowed, as before). On:
//!
//! - Authentication: `Authorization: Bearer <token>` is a static token
//!   (its user and groups, plus `system:authenticated`) or a ServiceAccount
//!   token this sandbox issued (`system:serviceaccount:<ns>:<name>`, groups
//!   `system:serviceaccounts`, `system:serviceaccounts:<ns>`,
//!   `system:authenticated`); any other token is 401 `Unauthorized`; no
//!   token is the anonymous user (`system:anonymous`, group
//!   `system:unauthenticated`).
//! - Authorization: upstream's RBAC rule resolution
//!   (`plugin/pkg/auth/authorizer/rbac`, `pkg/registry/rbac/validation`):
//!   every ClusterRoleBinding, then the RoleBindings of the request's
//!   namespace, their subjects matched against the user (User, Group,
//!   ServiceAccount), their roles' rules against the request (verbs, API
//!   groups, resources with `*/subresource`, resource names, non-resource
//!   URLs with a trailing `*`). A ClusterRole with an `aggregationRule` has
//!   the rules of the ClusterRoles its selectors match (the aggregation
//!   controller's result, computed when asked). A refusal is the server's
//!   403 with its wording.
//! - The bootstrap policy the server creates at start, as far as a client
//!   of the sandbox meets it: `cluster-admin` (bound to `system:masters`),
//!   `system:discovery`, `system:basic-user` and
//!   `system:public-info-viewer`, with their bindings.
//!
//! - Impersonation ([`impersonate`]): the `Impersonate-*` headers, each
//!   authorized with the `impersonate` verb, make the request act as
//!   another user.
//!
//! - Escalation prevention ([`check_escalation`]): a Role or ClusterRole
//!   written only by someone holding what it grants (or allowed to
//!   `escalate`), a binding only by someone holding what its role grants
//!   (or allowed to `bind` it); `system:masters` may write any.
//!
//! The review resources answer with the same caller and decisions
//! (`crate::review`).
//!
//! What this module must NOT do: store anything, or take the store lock
//! itself (the caller passes the store it holds).

use serde_json::{Value, json};

use crate::status::ApiError;
use crate::store::Store;

/// The user of a request without a token.
pub const ANONYMOUS: &str = "system:anonymous";
/// The anonymous user's group.
pub const UNAUTHENTICATED: &str = "system:unauthenticated";
/// Every authenticated user's group.
pub const AUTHENTICATED: &str = "system:authenticated";
/// The group the bootstrap policy makes cluster admins.
pub const MASTERS: &str = "system:masters";

/// One line of a token file: the token and who it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticToken {
    /// The bearer token.
    pub token: String,
    /// The user name.
    pub user: String,
    /// The groups (`system:authenticated` is added).
    pub groups: Vec<String>,
}

impl StaticToken {
    /// Parses `TOKEN=USER[,GROUP...]` (the command line's form).
    pub fn parse(s: &str) -> Result<StaticToken, String> {
        let (token, rest) = s
            .split_once('=')
            .ok_or_else(|| format!("{s:?}: expected TOKEN=USER[,GROUP...]"))?;
        let mut parts = rest.split(',');
        let user = parts.next().unwrap_or_default();
        if token.is_empty() || user.is_empty() {
            return Err(format!("{s:?}: the token and the user must not be empty"));
        }
        Ok(StaticToken {
            token: token.to_string(),
            user: user.to_string(),
            groups: parts
                .filter(|g| !g.is_empty())
                .map(str::to_string)
                .collect(),
        })
    }
}

/// A fresh random bearer token (32 hex digits), for the admin a sandbox
/// with RBAC writes into its kubeconfig.
pub fn random_token() -> Result<String, String> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| "no random numbers from the system".to_string())?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Authentication and authorization settings; `None` in the sandbox's
/// config leaves every request anonymous and allowed.
#[derive(Debug, Clone, Default)]
pub struct AuthConfig {
    /// Static bearer tokens.
    pub tokens: Vec<StaticToken>,
}

/// Who a request is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    /// The user name.
    pub name: String,
    /// Its groups.
    pub groups: Vec<String>,
}

impl UserInfo {
    fn anonymous() -> UserInfo {
        UserInfo {
            name: ANONYMOUS.into(),
            groups: vec![UNAUTHENTICATED.into()],
        }
    }
}

/// The `Authorization` header's user: `Ok(None)` is "no token"
/// (anonymous), `Err` a 401.
pub fn authenticate(
    config: &AuthConfig,
    store: &Store,
    signer: &crate::sa_token::Signer,
    authorization: Option<&str>,
    now: i64,
) -> Result<UserInfo, ApiError> {
    let Some(header) = authorization else {
        return Ok(UserInfo::anonymous());
    };
    let token = header
        .strip_prefix("Bearer ")
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(unauthorized)?;
    if let Some(t) = config.tokens.iter().find(|t| t.token == token) {
        let mut groups = t.groups.clone();
        groups.push(AUTHENTICATED.into());
        return Ok(UserInfo {
            name: t.user.clone(),
            groups,
        });
    }
    let review = crate::sa_token::review(store, signer, token, &[], now);
    if review["authenticated"] != true {
        return Err(unauthorized());
    }
    let user = &review["user"];
    let name = user["username"].as_str().unwrap_or_default().to_string();
    let groups = user["groups"]
        .as_array()
        .map(|g| {
            g.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    Ok(UserInfo { name, groups })
}

fn unauthorized() -> ApiError {
    ApiError::unauthorized()
}

/// The user a request acts as through the impersonation headers
/// (`Impersonate-User`, `-Group`, `-Uid`, `-Extra-<key>`), each of which
/// `requestor` must be allowed to `impersonate` (users, groups,
/// serviceaccounts, and `uids` and `userextras/<key>` in
/// `authentication.k8s.io`); `Ok(None)` without such headers. As upstream's
/// filter: a ServiceAccount's user name brings its groups when no group is
/// given, and a named user without groups gets `system:authenticated`.
pub fn impersonate(
    store: &Store,
    requestor: &UserInfo,
    headers: &http::HeaderMap,
) -> Result<Option<UserInfo>, ApiError> {
    let values = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(str::to_string)
            .collect()
    };
    let user = values("impersonate-user")
        .into_iter()
        .next()
        .filter(|u| !u.is_empty());
    let groups = values("impersonate-group");
    let uid = values("impersonate-uid").into_iter().next();
    let extras: Vec<(String, String)> = headers
        .iter()
        .filter_map(|(name, v)| {
            let key = name.as_str().strip_prefix("impersonate-extra-")?;
            Some((key.to_string(), v.to_str().ok()?.to_string()))
        })
        .collect();
    let Some(user) = user else {
        if groups.is_empty() && uid.is_none() && extras.is_empty() {
            return Ok(None);
        }
        return Err(ApiError::internal(
            "requested impersonation of groups, a uid or extras without impersonating a user",
        ));
    };
    let check = |group: &str, resource: &str, sub: &str, namespace: &str, name: &str| {
        authorize(
            store,
            requestor,
            &Request::Resource {
                verb: "impersonate",
                group,
                resource,
                subresource: sub,
                namespace,
                name,
            },
        )
    };
    let mut out_groups = Vec::new();
    let service_account = user
        .strip_prefix("system:serviceaccount:")
        .and_then(|rest| rest.split_once(':'))
        .filter(|(ns, name)| !ns.is_empty() && !name.is_empty() && !name.contains(':'));
    match service_account {
        Some((ns, name)) => {
            check("", "serviceaccounts", "", ns, name)?;
            if groups.is_empty() {
                out_groups = vec![
                    "system:serviceaccounts".to_string(),
                    format!("system:serviceaccounts:{ns}"),
                ];
            }
        }
        None => check("", "users", "", "", &user)?,
    }
    for g in &groups {
        check("", "groups", "", "", g)?;
        out_groups.push(g.clone());
    }
    if let Some(uid) = &uid {
        check("authentication.k8s.io", "uids", "", "", uid)?;
    }
    for (key, value) in &extras {
        check("authentication.k8s.io", "userextras", key, "", value)?;
    }
    if groups.is_empty()
        && user != ANONYMOUS
        && !out_groups
            .iter()
            .any(|g| g == AUTHENTICATED || g == UNAUTHENTICATED)
    {
        out_groups.push(AUTHENTICATED.into());
    }
    Ok(Some(UserInfo {
        name: user,
        groups: out_groups,
    }))
}

/// What a request asks to do, as the authorizer sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request<'a> {
    /// A request about a resource.
    Resource {
        /// `get`, `list`, `watch`, `create`, ...
        verb: &'a str,
        /// The API group (empty: core).
        group: &'a str,
        /// The resource's plural.
        resource: &'a str,
        /// The subresource (empty: none).
        subresource: &'a str,
        /// The namespace (empty: cluster scope or all namespaces).
        namespace: &'a str,
        /// The object's name (empty: a collection).
        name: &'a str,
    },
    /// Any other path (`/api`, `/version`, `/openapi/v3`).
    NonResource {
        /// `get`, `post`, ...
        verb: &'a str,
        /// The path.
        path: &'a str,
    },
}

/// An authorizer's answer: allowed (with the binding that allowed it, as
/// upstream words it) or not (with the resolution errors met, if any).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Whether some rule allows the request.
    pub allowed: bool,
    /// `RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "y" to
    /// Group "z"`, or the errors that may explain a refusal (roles not
    /// found), or empty.
    pub reason: String,
}

/// Decides `request` for `user` from the RBAC objects in `store`; the
/// refusal is the server's 403.
pub fn authorize(store: &Store, user: &UserInfo, request: &Request<'_>) -> Result<(), ApiError> {
    let d = decide(store, user, request);
    if d.allowed {
        return Ok(());
    }
    Err(forbidden(user, request, &d.reason))
}

/// The RBAC authorizer's decision on `request` for `user`.
pub fn decide(store: &Store, user: &UserInfo, request: &Request<'_>) -> Decision {
    let namespace = match request {
        Request::Resource { namespace, .. } => *namespace,
        Request::NonResource { .. } => "",
    };
    let mut errors = Vec::new();
    for b in bindings_for(store, user, namespace) {
        match rules_of(store, &b.role_ref, &b.namespace) {
            Ok(rules) => {
                if rules.iter().any(|r| rule_allows(r, request)) {
                    return Decision {
                        allowed: true,
                        reason: format!("RBAC: allowed by {}", b.describe()),
                    };
                }
            }
            Err(e) => errors.push(e),
        }
    }
    Decision {
        allowed: false,
        reason: rbac_errors(&errors),
    }
}

/// Every rule that applies to `user` in `namespace` (cluster-wide ones
/// included), and the errors met finding them: what a
/// SelfSubjectRulesReview lists.
pub fn rules_for(store: &Store, user: &UserInfo, namespace: &str) -> (Vec<Value>, String) {
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    for b in bindings_for(store, user, namespace) {
        match rules_of(store, &b.role_ref, &b.namespace) {
            Ok(r) => rules.extend(r),
            Err(e) => errors.push(e),
        }
    }
    (rules, rbac_errors(&errors))
}

/// Go's error aggregate under `RBAC: `: one error as it is, several in
/// brackets; nothing without errors.
fn rbac_errors(errors: &[String]) -> String {
    match errors {
        [] => String::new(),
        [one] => format!("RBAC: {one}"),
        many => format!("RBAC: [{}]", many.join(", ")),
    }
}

/// A binding that applies to the user, through one of its subjects.
struct Bound {
    /// `ClusterRoleBinding` or `RoleBinding`.
    kind: &'static str,
    name: String,
    /// The binding's namespace (empty for a ClusterRoleBinding).
    namespace: String,
    role_ref: Value,
    subject: Value,
}

impl Bound {
    /// How upstream names the source of an allowed request.
    fn describe(&self) -> String {
        let name = if self.namespace.is_empty() {
            self.name.clone()
        } else {
            format!("{}/{}", self.name, self.namespace)
        };
        let s = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_string();
        let subject_kind = s(&self.subject, "kind");
        let mut subject_name = s(&self.subject, "name");
        if subject_kind == "ServiceAccount" {
            let ns = s(&self.subject, "namespace");
            let ns = if ns.is_empty() {
                self.namespace.clone()
            } else {
                ns
            };
            subject_name = format!("{subject_name}/{ns}");
        }
        format!(
            "{} {name:?} of {} {:?} to {subject_kind} {subject_name:?}",
            self.kind,
            s(&self.role_ref, "kind"),
            s(&self.role_ref, "name"),
        )
    }
}

/// The bindings that apply to `user`: every ClusterRoleBinding's, then
/// (for a namespaced request) the namespace's RoleBindings'.
fn bindings_for(store: &Store, user: &UserInfo, namespace: &str) -> Vec<Bound> {
    let mut out = Vec::new();
    let mut scopes = vec![("clusterrolebindings", "ClusterRoleBinding", None)];
    if !namespace.is_empty() {
        scopes.push(("rolebindings", "RoleBinding", Some(namespace)));
    }
    for (plural, kind, ns) in scopes {
        for b in store.objects_of("rbac.authorization.k8s.io", plural, ns) {
            let binding_ns = ns.unwrap_or_default();
            let subject = b["subjects"].as_array().and_then(|s| {
                s.iter()
                    .find(|s| subject_matches(s, user, binding_ns))
                    .cloned()
            });
            if let Some(subject) = subject {
                out.push(Bound {
                    kind,
                    name: b
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    namespace: binding_ns.to_string(),
                    role_ref: b["roleRef"].clone(),
                    subject,
                });
            }
        }
    }
    out
}

fn subject_matches(subject: &Value, user: &UserInfo, binding_ns: &str) -> bool {
    let name = subject["name"].as_str().unwrap_or_default();
    match subject["kind"].as_str().unwrap_or_default() {
        "User" => user.name == name,
        "Group" => user.groups.iter().any(|g| g == name),
        "ServiceAccount" => {
            let ns = subject["namespace"]
                .as_str()
                .filter(|n| !n.is_empty())
                .unwrap_or(binding_ns);
            !ns.is_empty() && user.name == format!("system:serviceaccount:{ns}:{name}")
        }
        _ => false,
    }
}

/// The rules of the role a binding refers to, or why they cannot be had
/// (the role does not exist).
fn rules_of(store: &Store, role_ref: &Value, binding_ns: &str) -> Result<Vec<Value>, String> {
    let name = role_ref["name"].as_str().unwrap_or_default();
    match role_ref["kind"].as_str().unwrap_or_default() {
        "Role" => store
            .objects_of("rbac.authorization.k8s.io", "roles", Some(binding_ns))
            .into_iter()
            .find(|r| r.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
            .map(|r| rules(&r))
            .ok_or_else(|| format!("role.rbac.authorization.k8s.io \"{name}\" not found")),
        "ClusterRole" => cluster_role_rules(store, name)
            .ok_or_else(|| format!("clusterrole.rbac.authorization.k8s.io \"{name}\" not found")),
        other => Err(format!("unsupported role reference kind: {other:?}")),
    }
}

fn rules(role: &Value) -> Vec<Value> {
    role["rules"].as_array().cloned().unwrap_or_default()
}

/// A ClusterRole's rules: its own, or with an `aggregationRule` those of
/// every ClusterRole whose labels one of its selectors matches.
fn cluster_role_rules(store: &Store, name: &str) -> Option<Vec<Value>> {
    let all = store.objects_of("rbac.authorization.k8s.io", "clusterroles", None);
    let role = all
        .iter()
        .find(|r| r.pointer("/metadata/name").and_then(Value::as_str) == Some(name))?;
    let Some(selectors) = role
        .pointer("/aggregationRule/clusterRoleSelectors")
        .and_then(Value::as_array)
    else {
        return Some(rules(role));
    };
    let mut out = Vec::new();
    for other in &all {
        let labels = other.pointer("/metadata/labels");
        if other.pointer("/metadata/name").and_then(Value::as_str) != Some(name)
            && selectors.iter().any(|s| selector_matches(s, labels))
        {
            out.extend(rules(other));
        }
    }
    Some(out)
}

/// A label selector (`matchLabels`, `matchExpressions`) against labels.
fn selector_matches(selector: &Value, labels: Option<&Value>) -> bool {
    let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    let labels_ok = selector["matchLabels"]
        .as_object()
        .is_none_or(|m| m.iter().all(|(k, v)| label(k) == v.as_str()));
    let exprs_ok = selector["matchExpressions"].as_array().is_none_or(|exprs| {
        exprs.iter().all(|e| {
            let key = e["key"].as_str().unwrap_or_default();
            let values: Vec<&str> = e["values"]
                .as_array()
                .map(|v| v.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            match e["operator"].as_str().unwrap_or_default() {
                "In" => label(key).is_some_and(|v| values.contains(&v)),
                "NotIn" => label(key).is_none_or(|v| !values.contains(&v)),
                "Exists" => label(key).is_some(),
                "DoesNotExist" => label(key).is_none(),
                _ => false,
            }
        })
    });
    // The aggregation controller converts each selector as
    // `LabelSelectorAsSelector` does: an empty one (`{}`) selects every
    // ClusterRole; only a selector that is not an object at all (null)
    // selects nothing.
    selector.is_object() && labels_ok && exprs_ok
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// A resource as RBAC rules and refusals name it: `pods`, or `pods/log`
/// for a subresource.
fn with_subresource(resource: &str, subresource: &str) -> String {
    if subresource.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}/{subresource}")
    }
}

/// Whether one PolicyRule allows `request` (upstream's `RuleAllows`).
pub fn rule_allows(rule: &Value, request: &Request<'_>) -> bool {
    let verbs = strings(&rule["verbs"]);
    let verb_ok = |verb: &str| verbs.iter().any(|v| *v == "*" || *v == verb);
    match request {
        Request::Resource {
            verb,
            group,
            resource,
            subresource,
            name,
            ..
        } => {
            let combined = with_subresource(resource, subresource);
            let groups = strings(&rule["apiGroups"]);
            let resources = strings(&rule["resources"]);
            let names = strings(&rule["resourceNames"]);
            verb_ok(verb)
                && groups.iter().any(|g| *g == "*" || g == group)
                && resources.iter().any(|r| {
                    *r == "*"
                        || *r == combined
                        || (!subresource.is_empty() && *r == format!("*/{subresource}"))
                })
                && (names.is_empty() || names.contains(name))
        }
        Request::NonResource { verb, path } => {
            verb_ok(verb)
                && strings(&rule["nonResourceURLs"]).iter().any(|u| {
                    *u == "*"
                        || u == path
                        || u.strip_suffix('*')
                            .is_some_and(|prefix| path.starts_with(prefix))
                })
        }
    }
}

/// The server's 403 for a refused request.
fn forbidden(user: &UserInfo, request: &Request<'_>, reason: &str) -> ApiError {
    let reason = if reason.is_empty() {
        String::new()
    } else {
        format!(": {reason}")
    };
    match request {
        Request::Resource {
            verb,
            group,
            resource,
            subresource,
            namespace,
            name,
        } => {
            let what = with_subresource(resource, subresource);
            let scope = if namespace.is_empty() {
                "at the cluster scope".to_string()
            } else {
                format!("in the namespace \"{namespace}\"")
            };
            let qualified = if group.is_empty() {
                resource.to_string()
            } else {
                format!("{resource}.{group}")
            };
            let subject = if name.is_empty() {
                qualified
            } else {
                format!("{qualified} \"{name}\"")
            };
            ApiError::forbidden(
                group,
                resource,
                name,
                &format!(
                    "User \"{}\" cannot {verb} resource \"{what}\" in API group \"{group}\" {scope}{reason}",
                    user.name
                ),
            )
            .with_message(format!(
                "{subject} is forbidden: User \"{}\" cannot {verb} resource \"{what}\" in API group \"{group}\" {scope}{reason}",
                user.name
            ))
        }
        Request::NonResource { verb, path } => ApiError::forbidden_path(format!(
            "forbidden: User \"{}\" cannot {verb} path \"{path}\"{reason}",
            user.name
        )),
    }
}

/// The RBAC objects a server's bootstrap policy creates that a client of
/// the sandbox meets: cluster admins, discovery, the self reviews and the
/// public info, for everyone as upstream binds them.
pub fn bootstrap_policy() -> Vec<(&'static str, Value)> {
    let bootstrapping = json!({"kubernetes.io/bootstrapping": "rbac-defaults"});
    let autoupdate = json!({"rbac.authorization.kubernetes.io/autoupdate": "true"});
    let role = |name: &str, rules: Value| {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name, "labels": bootstrapping, "annotations": autoupdate},
            "rules": rules,
        })
    };
    let binding = |name: &str, groups: &[&str]| {
        let subjects: Vec<Value> = groups
            .iter()
            .map(|g| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}))
            .collect();
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": bootstrapping, "annotations": autoupdate},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": subjects,
        })
    };
    vec![
        (
            "clusterroles",
            role(
                "cluster-admin",
                json!([
                    {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                    {"nonResourceURLs": ["*"], "verbs": ["*"]}
                ]),
            ),
        ),
        (
            "clusterroles",
            role(
                "system:discovery",
                json!([{"nonResourceURLs": [
                    "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
                    "/openapi", "/openapi/*", "/readyz", "/version", "/version/"
                ], "verbs": ["get"]}]),
            ),
        ),
        (
            "clusterroles",
            role(
                "system:basic-user",
                json!([
                    {"apiGroups": ["authorization.k8s.io"],
                     "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                     "verbs": ["create"]},
                    {"apiGroups": ["authentication.k8s.io"],
                     "resources": ["selfsubjectreviews"], "verbs": ["create"]}
                ]),
            ),
        ),
        (
            "clusterroles",
            role(
                "system:public-info-viewer",
                json!([{"nonResourceURLs": [
                    "/healthz", "/livez", "/readyz", "/version", "/version/"
                ], "verbs": ["get"]}]),
            ),
        ),
        ("clusterrolebindings", binding("cluster-admin", &[MASTERS])),
        (
            "clusterrolebindings",
            binding("system:discovery", &[AUTHENTICATED]),
        ),
        (
            "clusterrolebindings",
            binding("system:basic-user", &[AUTHENTICATED]),
        ),
        (
            "clusterrolebindings",
            binding(
                "system:public-info-viewer",
                &[AUTHENTICATED, UNAUTHENTICATED],
            ),
        ),
    ]
}

mod escalation;

pub use escalation::check_escalation;

#[cfg(test)]
mod tests;
