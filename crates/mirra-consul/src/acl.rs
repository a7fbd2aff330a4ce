//! Bodies of the auth-method login (`/v1/acl/login`, `/v1/acl/logout`) and
//! of Consul Enterprise namespaces (`/v1/namespace`), written from Consul's
//! HTTP API documentation.
//!
//! This module must NOT let a secret escape: the bearer token and the
//! login's SecretID are [`Token`]s (redacted `Debug`, no `Display`), and the
//! wire structs that hold them in the clear are private and short-lived.
//! It does no I/O.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::Token;
use crate::types::{is_default, nullable};

/// A login: the auth method, the bearer token it validates (for a
/// `kubernetes` method, a ServiceAccount JWT) and metadata Consul stores on
/// the token it creates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoginRequest {
    /// `AuthMethod`.
    pub auth_method: String,
    /// `BearerToken`.
    pub bearer_token: Token,
    /// `Meta`.
    pub meta: BTreeMap<String, String>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct LoginWire<'a> {
    auth_method: &'a str,
    bearer_token: &'a str,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    meta: &'a BTreeMap<String, String>,
}

impl LoginRequest {
    /// The JSON body. The only place the bearer token is put in the clear.
    pub(crate) fn to_body(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(&LoginWire {
            auth_method: &self.auth_method,
            bearer_token: self.bearer_token.expose(),
            meta: &self.meta,
        })
    }
}

/// The token a login created (the fields of Consul's ACL token that a
/// caller of login needs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoginToken {
    /// `AccessorID`: names the token in logs and in Consul's audit; not a
    /// secret.
    pub accessor_id: String,
    /// `SecretID`: the token itself.
    pub secret_id: Token,
    /// `AuthMethod` that created it.
    pub auth_method: String,
    /// `Local`: a token valid in its datacenter only.
    pub local: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct LoginTokenWire {
    #[serde(rename = "AccessorID")]
    accessor_id: String,
    #[serde(rename = "SecretID")]
    secret_id: String,
    #[serde(default, deserialize_with = "nullable")]
    auth_method: String,
    #[serde(default, deserialize_with = "nullable")]
    local: bool,
}

/// Why a login answer was refused. Carries no text of the answer: serde's
/// messages quote values, and this answer holds a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the login answer is not an ACL token with a non-empty AccessorID and SecretID \
     (line {line}, column {column})"
)]
pub struct LoginDecodeError {
    /// Where the JSON stopped making sense (0 when it parsed).
    pub line: usize,
    /// See `line`.
    pub column: usize,
}

impl LoginToken {
    /// Decodes Consul's answer to a login.
    pub fn from_body(body: &[u8]) -> Result<Self, LoginDecodeError> {
        let wire: LoginTokenWire = serde_json::from_slice(body).map_err(|e| LoginDecodeError {
            line: e.line(),
            column: e.column(),
        })?;
        let secret_id = Token::new(wire.secret_id);
        if wire.accessor_id.trim().is_empty() || secret_id.expose().is_empty() {
            return Err(LoginDecodeError { line: 0, column: 0 });
        }
        Ok(Self {
            accessor_id: wire.accessor_id,
            secret_id,
            auth_method: wire.auth_method,
            local: wire.local,
        })
    }
}

/// A link from a namespace to a policy or role of the `default` namespace,
/// by ID or by name (Consul resolves a name to its ID when it stores it).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct AclLink {
    /// `ID`.
    #[serde(rename = "ID")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub id: String,
    /// `Name`.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub name: String,
}

impl AclLink {
    /// A link by name.
    pub fn by_name(name: impl Into<String>) -> Self {
        Self {
            id: String::new(),
            name: name.into(),
        }
    }
}

/// A namespace's ACL defaults: policies and roles applied to every token
/// in the namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct NamespaceAcls {
    /// `PolicyDefaults`.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub policy_defaults: Vec<AclLink>,
    /// `RoleDefaults`.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub role_defaults: Vec<AclLink>,
}

/// A Consul Enterprise namespace, as written to and read from
/// `/v1/namespace`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct Namespace {
    /// `Name`: a DNS label.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// `Description`.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub description: String,
    /// `ACLs`.
    #[serde(rename = "ACLs")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Option::is_none")]
    pub acls: Option<NamespaceAcls>,
    /// `Meta`.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub meta: BTreeMap<String, String>,
    /// `Partition` (answers only; requests address the partition with the
    /// client's `partition` parameter).
    #[serde(deserialize_with = "nullable", skip_serializing)]
    pub partition: String,
    /// `CreateIndex` (answers only).
    #[serde(deserialize_with = "nullable", skip_serializing)]
    pub create_index: u64,
    /// `ModifyIndex` (answers only).
    #[serde(deserialize_with = "nullable", skip_serializing)]
    pub modify_index: u64,
}

impl Namespace {
    /// A namespace whose tokens all get the named policies (consul-k8s
    /// links its cross-namespace policy this way).
    pub fn with_policy_defaults<I, S>(name: impl Into<String>, policies: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            name: name.into(),
            acls: Some(NamespaceAcls {
                policy_defaults: policies.into_iter().map(AclLink::by_name).collect(),
                role_defaults: Vec::new(),
            }),
            ..Self::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    const BEARER: &str = "eyJhbGciOiJSUzI1NiJ9.payload.signature";
    const SECRET: &str = "0f6c3b1a-7a0e-4c1e-9d1c-2b8f7e6d5c4b";

    #[test]
    fn login_body_has_consul_field_names_and_debug_hides_the_bearer() {
        let req = LoginRequest {
            auth_method: "k8s".into(),
            bearer_token: Token::new(BEARER),
            meta: [("pod".to_owned(), "apps/web-0".to_owned())].into(),
        };
        let body: Value = serde_json::from_slice(&req.to_body().unwrap()).unwrap();
        assert_eq!(
            body,
            json!({"AuthMethod": "k8s", "BearerToken": BEARER, "Meta": {"pod": "apps/web-0"}})
        );
        let no_meta = LoginRequest {
            meta: BTreeMap::new(),
            ..req.clone()
        };
        let body: Value = serde_json::from_slice(&no_meta.to_body().unwrap()).unwrap();
        assert_eq!(body, json!({"AuthMethod": "k8s", "BearerToken": BEARER}));
        assert!(!format!("{req:?}").contains(BEARER));
    }

    #[test]
    fn login_answer_keeps_the_ids_and_debug_hides_the_secret() {
        let body = json!({
            "AccessorID": "6a1f-acc", "SecretID": SECRET, "Description": "token created via login",
            "Policies": null, "ServiceIdentities": [{"ServiceName": "web"}],
            "Local": true, "AuthMethod": "k8s", "CreateTime": "2026-12-02T10:00:00Z",
            "Hash": "abc", "CreateIndex": 7, "ModifyIndex": 7, "NewField": {"x": 1}
        });
        let t = LoginToken::from_body(body.to_string().as_bytes()).unwrap();
        assert_eq!(t.accessor_id, "6a1f-acc");
        assert_eq!(t.secret_id.expose(), SECRET);
        assert_eq!(t.auth_method, "k8s");
        assert!(t.local);
        assert!(!format!("{t:?}").contains(SECRET));
    }

    #[test]
    fn malformed_login_answers_are_refused_without_echoing_them() {
        for bad in [
            "".to_owned(),
            "null".to_owned(),
            "true".to_owned(),
            json!({"AccessorID": "a"}).to_string(),
            json!({"SecretID": SECRET}).to_string(),
            json!({"AccessorID": "", "SecretID": SECRET}).to_string(),
            json!({"AccessorID": "a", "SecretID": "  "}).to_string(),
            json!({"AccessorID": 5, "SecretID": SECRET}).to_string(),
            format!(
                "{{\"AccessorID\": \"a\", \"SecretID\": \"{SECRET}\", \"Local\": \"{SECRET}\"}}"
            ),
        ] {
            let err = LoginToken::from_body(bad.as_bytes()).unwrap_err();
            let shown = format!("{err} {err:?}");
            assert!(!shown.contains(SECRET), "{bad}: {shown}");
        }
    }

    #[test]
    fn namespace_body_links_policies_by_name() {
        let ns = Namespace::with_policy_defaults("apps", ["cross-namespace-policy"]);
        assert_eq!(
            serde_json::to_value(&ns).unwrap(),
            json!({"Name": "apps", "ACLs": {"PolicyDefaults": [{"Name": "cross-namespace-policy"}]}})
        );
        let plain = Namespace {
            name: "plain".into(),
            description: "d".into(),
            partition: "ignored-in-requests".into(),
            create_index: 9,
            ..Namespace::default()
        };
        assert_eq!(
            serde_json::to_value(&plain).unwrap(),
            json!({"Name": "plain", "Description": "d"})
        );
    }

    #[test]
    fn namespace_answer_tolerates_nulls_and_new_fields() {
        let ns: Namespace = serde_json::from_value(json!({
            "Name": "apps", "Description": null, "Partition": "p1",
            "ACLs": {"PolicyDefaults": [{"ID": "77-id", "Name": "cross"}], "RoleDefaults": null},
            "Meta": null, "CreateIndex": 12, "ModifyIndex": 13, "DeletedAt": null
        }))
        .unwrap();
        assert_eq!(ns.name, "apps");
        assert_eq!(ns.partition, "p1");
        assert_eq!(ns.modify_index, 13);
        let acls = ns.acls.unwrap();
        assert_eq!(
            acls.policy_defaults,
            vec![AclLink {
                id: "77-id".into(),
                name: "cross".into()
            }]
        );
        assert!(acls.role_defaults.is_empty());
        let bare: Namespace = serde_json::from_value(json!({"Name": "x", "ACLs": null})).unwrap();
        assert_eq!(bare.acls, None);
    }

    proptest! {
        #[test]
        fn login_answer_decoding_never_panics(body in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = LoginToken::from_body(&body);
        }
    }
}
