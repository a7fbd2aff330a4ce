//! kube-sandbox as the Kubernetes host of a Consul `kubernetes` auth
//! method: a namespace of ServiceAccounts whose tokens a login presents
//! and the auth method has reviewed. What the login tests of the Consul
//! sandbox and of mirra's Consul client share.

// Test fixtures: a failure to set up is the test's failure, as the crate
// doc says of every helper here.
#![allow(clippy::expect_used)]

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::api::{Api, PostParams};
use kube::{Client, Config};
use kube_sandbox::Sandbox;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Any PEM certificate, for an auth method's `CACert`: Consul requires
/// one, and the Consul sandbox reaches its Kubernetes host over plain HTTP
/// and never uses it.
pub const ANY_CA_PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIBfzCCASWgAwIBAgIUaKdHuwQ8Hh7562B+0QbP7uVGXXYwCgYIKoZIzj0EAwIw\nFTETMBEGA1UEAwwKa3ViZXJuZXRlczAeFw0yNjEyMDIxMTM2NDBaFw0zNjExMjkx\nMTM2NDBaMBUxEzARBgNVBAMMCmt1YmVybmV0ZXMwWTATBgcqhkjOPQIBBggqhkjO\nPQMBBwNCAARKH67+tQImsWrgQFfCDWiJrctOk5ucIBX6T7X/yYa9yPIaVH7DdHZw\nXd2kwclVssEhRRmhZMakgsyT6fzGxwsfo1MwUTAdBgNVHQ4EFgQUHEEOnVm3DT/C\nvYZVd5C1kkElAvQwHwYDVR0jBBgwFoAUHEEOnVm3DT/CvYZVd5C1kkElAvQwDwYD\nVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNIADBFAiEA6JXW/kPZjP1jZxIy23bn\nvSlOn+sZwrulPn/0DIwCosYCIEM+6beeaTslIiP7yIbKvwHz5so5C4DKa3rPUAla\nztm1\n-----END CERTIFICATE-----\n";

/// A started kube-sandbox with one namespace of ServiceAccounts.
pub struct KubeAuthHost {
    /// The sandbox, for its token clock.
    pub sandbox: Sandbox,
    client: Client,
    namespace: String,
}

impl KubeAuthHost {
    /// Starts kube-sandbox with the namespace `namespace` holding the
    /// ServiceAccounts `service_accounts`.
    pub async fn start(namespace: &str, service_accounts: &[&str]) -> KubeAuthHost {
        let sandbox = Sandbox::start(kube_sandbox::Config::default())
            .await
            .expect("kube-sandbox starts");
        let url = sandbox.url().parse().expect("the sandbox's URL");
        let client = Client::try_from(Config::new(url)).expect("a client");
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &named(namespace))
            .await
            .expect("the namespace is created");
        let accounts = Api::<ServiceAccount>::namespaced(client.clone(), namespace);
        for name in service_accounts {
            accounts
                .create(&PostParams::default(), &named(name))
                .await
                .expect("the ServiceAccount is created");
        }
        KubeAuthHost {
            sandbox,
            client,
            namespace: namespace.to_owned(),
        }
    }

    /// The API server's URL.
    pub fn url(&self) -> String {
        self.sandbox.url()
    }

    /// A token of ServiceAccount `name`, as kubelet would mount it: what a
    /// TokenRequest with `spec` (`{}` for the defaults, or `audiences`,
    /// `expirationSeconds`) issues.
    pub async fn token(&self, name: &str, spec: Value) -> String {
        let request = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                             "spec": spec});
        let issued: Value = Api::<ServiceAccount>::namespaced(self.client.clone(), &self.namespace)
            .create_subresource("token", name, &PostParams::default(), &request)
            .await
            .expect("a token is issued");
        issued["status"]["token"]
            .as_str()
            .expect("the issued token")
            .to_owned()
    }

    /// The `Config` of a `kubernetes` auth method with this host, which
    /// has logins reviewed with the token of ServiceAccount `reviewer`.
    pub async fn auth_method_config(&self, reviewer: &str) -> Value {
        json!({"Host": self.url(), "CACert": ANY_CA_PEM,
               "ServiceAccountJWT": self.token(reviewer, json!({})).await})
    }
}

/// An object with nothing but its name.
fn named<K: DeserializeOwned>(name: &str) -> K {
    serde_json::from_value(json!({"metadata": {"name": name}})).expect("an object")
}
