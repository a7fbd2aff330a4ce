//! The HTTPS listener (Consul's `ports.https` with `tls.defaults`): real
//! TLS handshakes from reqwest, blocking queries over TLS, a client that
//! does not trust the server, `verify_incoming` with and without a client
//! certificate, and bad certificate or key files refused with an error
//! naming the file.
//!
//! Certificates are made per test with rcgen: one CA, a server
//! certificate for `127.0.0.1` and `server.dc1.consul` (the names Consul's
//! `consul tls cert create -server` puts in), a client certificate, and a
//! second CA that signs nothing the server trusts.

// Fixture helpers outside #[test] functions unwrap too: a failed fixture
// must stop the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::PathBuf;

use common::SOON;
use consul_sandbox::{Config, Sandbox, TlsConfig, TlsError};
use mirra_testkit::wait_for;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use serde_json::json;

struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

fn ca(name: &str) -> Ca {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    Ca {
        pem: cert.pem(),
        issuer: Issuer::new(params, key),
    }
}

/// (certificate PEM, key PEM) of a leaf signed by `ca`.
fn leaf(ca: &Ca, names: &[&str], usage: ExtendedKeyUsagePurpose) -> (String, String) {
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let mut params = CertificateParams::new(names.clone()).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, names[0].clone());
    params.use_authority_key_identifier_extension = true;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![usage];
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca.issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// The PEM files of one test.
struct Pki {
    dir: tempfile::TempDir,
    ca: Ca,
    other: Ca,
}

impl Pki {
    fn new() -> Pki {
        let pki = Pki {
            dir: tempfile::tempdir().unwrap(),
            ca: ca("consul-sandbox test CA"),
            other: ca("an unrelated CA"),
        };
        let (cert, key) = leaf(
            &pki.ca,
            &["server.dc1.consul", "127.0.0.1"],
            ExtendedKeyUsagePurpose::ServerAuth,
        );
        pki.write("server.pem", &cert);
        pki.write("server-key.pem", &key);
        pki.write("ca.pem", &pki.ca.pem);
        pki
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn tls(&self, verify_incoming: bool) -> TlsConfig {
        TlsConfig {
            cert_file: self.path("server.pem"),
            key_file: self.path("server-key.pem"),
            ca_file: Some(self.path("ca.pem")),
            verify_incoming,
        }
    }

    /// A client certificate (cert then key, one PEM) signed by `ca`.
    fn client_identity(&self, ca: &Ca) -> reqwest::Identity {
        let (cert, key) = leaf(ca, &["sync-catalog"], ExtendedKeyUsagePurpose::ClientAuth);
        reqwest::Identity::from_pem(format!("{cert}\n{key}").as_bytes()).unwrap()
    }
}

async fn start(pki: &Pki, verify_incoming: bool) -> Sandbox {
    Sandbox::start(Config {
        tls: Some(pki.tls(verify_incoming)),
        ..Config::default()
    })
    .await
    .unwrap()
}

/// A client that trusts `ca` only, with an optional client certificate,
/// one connection per request so that each request is one handshake.
fn client(ca: &Ca, identity: Option<reqwest::Identity>) -> reqwest::Client {
    let mut b = reqwest::Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(ca.pem.as_bytes()).unwrap())
        .pool_max_idle_per_host(0);
    if let Some(id) = identity {
        b = b.identity(id);
    }
    b.build().unwrap()
}

fn https(sb: &Sandbox, path: &str) -> String {
    format!("{}{path}", sb.https_url().unwrap())
}

/// `GET /v1/catalog/services` over HTTPS with `c`.
async fn get_services(c: &reqwest::Client, sb: &Sandbox) -> reqwest::Result<reqwest::Response> {
    c.get(https(sb, "/v1/catalog/services")).send().await
}

/// Waits until the sandbox has counted `n` refused handshakes.
async fn wait_for_refused_handshakes(sb: &Sandbox, n: u64) {
    wait_for(&format!("{n} refused handshakes to be counted"), || async {
        sb.stats().tls_handshakes_failed == n
    })
    .await;
}

fn index(resp: &reqwest::Response) -> u64 {
    resp.headers()["X-Consul-Index"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

fn register_body(port: u16) -> serde_json::Value {
    json!({
        "Node": "k8s-sync", "Address": "127.0.0.1",
        "Service": {"ID": "web-1", "Service": "web", "Port": port},
    })
}

#[tokio::test]
async fn https_serves_reads_writes_and_blocking_queries_over_one_store() {
    let pki = Pki::new();
    let sb = start(&pki, false).await;
    assert_ne!(sb.https_addr(), Some(sb.addr()));
    let c = client(&pki.ca, None);

    let resp = c
        .put(https(&sb, "/v1/catalog/register"))
        .json(&register_body(80))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let first = c
        .get(https(&sb, "/v1/catalog/service/web"))
        .send()
        .await
        .unwrap();
    assert_eq!(first.status(), 200);
    let idx = index(&first);

    // A long poll over TLS, woken by a write over plain HTTP: both
    // listeners share one catalog and one set of watches.
    let url = https(&sb, &format!("/v1/catalog/service/web?index={idx}&wait=5m"));
    let waiter = tokio::spawn({
        let c = c.clone();
        async move { c.get(url).send().await.unwrap() }
    });
    wait_for("the HTTPS long poll to block", || async {
        sb.stats().blocking_queries_open == 1
    })
    .await;
    let plain = reqwest::Client::new();
    let resp = plain
        .put(format!("{}/v1/catalog/register", sb.url()))
        .json(&register_body(81))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let woken = tokio::time::timeout(SOON, waiter)
        .await
        .expect("the long poll returned")
        .unwrap();
    assert!(index(&woken) > idx);
    let body: serde_json::Value = woken.json().await.unwrap();
    assert_eq!(body[0]["ServicePort"], 81);

    let stats = sb.stats();
    assert_eq!(stats.raft_applies, 2);
    assert_eq!(stats.blocking_queries_total, 1);
    assert_eq!(stats.blocking_wakeups, 1);
    // register, read, long poll: one connection each.
    assert_eq!(stats.tls_handshakes, 3);
    assert_eq!(stats.tls_handshakes_failed, 0);
    assert_eq!(stats.requests_for("PUT /v1/catalog/register"), 2);
}

#[tokio::test]
async fn a_client_that_does_not_trust_the_servers_ca_is_refused() {
    let pki = Pki::new();
    let sb = start(&pki, false).await;
    let err = get_services(&client(&pki.other, None), &sb)
        .await
        .unwrap_err();
    assert!(err.is_connect(), "{err:?}");
    wait_for_refused_handshakes(&sb, 1).await;
    let stats = sb.stats();
    assert_eq!(stats.tls_handshakes, 0);
    assert_eq!(stats.requests_for("GET /v1/catalog/services"), 0);
}

#[tokio::test]
async fn plain_http_on_the_https_port_is_refused_without_an_answer() {
    let pki = Pki::new();
    let sb = start(&pki, false).await;
    let addr = sb.https_addr().unwrap();
    let err = reqwest::Client::new()
        .get(format!("http://{addr}/v1/catalog/services"))
        .send()
        .await
        .unwrap_err();
    assert!(!err.is_status(), "{err:?}");
    wait_for_refused_handshakes(&sb, 1).await;
    assert_eq!(sb.stats().requests_for("GET /v1/catalog/services"), 0);
}

#[tokio::test]
async fn verify_incoming_refuses_clients_without_a_certificate_from_its_ca() {
    let pki = Pki::new();
    let sb = start(&pki, true).await;

    // No client certificate: TLS 1.3 lets the client finish its side
    // first, so the request fails when the server's refusal arrives.
    let err = get_services(&client(&pki.ca, None), &sb).await.unwrap_err();
    assert!(!err.is_status(), "{err:?}");
    wait_for_refused_handshakes(&sb, 1).await;

    // A certificate signed by another CA: refused the same way.
    let stranger = pki.client_identity(&pki.other);
    let err = get_services(&client(&pki.ca, Some(stranger)), &sb)
        .await
        .unwrap_err();
    assert!(!err.is_status(), "{err:?}");
    wait_for_refused_handshakes(&sb, 2).await;
    assert_eq!(sb.stats().requests_for("GET /v1/catalog/services"), 0);

    // A certificate from the CA: served.
    let ok = pki.client_identity(&pki.ca);
    let resp = get_services(&client(&pki.ca, Some(ok)), &sb).await.unwrap();
    assert_eq!(resp.status(), 200);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert!(body.get("consul").is_some(), "{body}");
    let stats = sb.stats();
    assert_eq!(stats.tls_handshakes, 1);
    assert_eq!(stats.tls_handshakes_failed, 2);
    assert_eq!(stats.requests_for("GET /v1/catalog/services"), 1);

    // Plain HTTP beside it is not affected, as in Consul.
    let resp = reqwest::get(format!("{}/v1/catalog/services", sb.url()))
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
}

fn load_err(tls: &TlsConfig) -> TlsError {
    tls.load().unwrap_err()
}

#[tokio::test]
async fn bad_certificate_and_key_files_are_errors_naming_the_file() {
    let pki = Pki::new();
    let good = pki.tls(true);

    let missing = pki.path("nope.pem");
    let err = load_err(&TlsConfig {
        cert_file: missing.clone(),
        ..good.clone()
    });
    assert!(matches!(err, TlsError::Read { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("certificate file"), "{text}");
    assert!(text.contains(&missing.display().to_string()), "{text}");

    let not_pem = pki.write("not-pem.pem", "this is not a certificate\n");
    for (what, cfg) in [
        (
            "certificate file",
            TlsConfig {
                cert_file: not_pem.clone(),
                ..good.clone()
            },
        ),
        (
            "key file",
            TlsConfig {
                key_file: not_pem.clone(),
                ..good.clone()
            },
        ),
        (
            "CA file",
            TlsConfig {
                ca_file: Some(not_pem.clone()),
                ..good.clone()
            },
        ),
    ] {
        let err = load_err(&cfg);
        assert!(matches!(err, TlsError::Pem { .. }), "{what}: {err:?}");
        let text = err.to_string();
        assert!(text.contains(what), "{text}");
        assert!(text.contains(&not_pem.display().to_string()), "{text}");
    }

    // A certificate where the key should be: PEM, but no key in it.
    let err = load_err(&TlsConfig {
        key_file: pki.path("server.pem"),
        ..good.clone()
    });
    let text = err.to_string();
    assert!(text.contains("holds no PEM private key"), "{text}");
    assert!(text.contains("server.pem"), "{text}");

    // Broken base64 inside a PEM block.
    let broken = pki.write(
        "broken.pem",
        "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n",
    );
    let err = load_err(&TlsConfig {
        cert_file: broken.clone(),
        ..good.clone()
    });
    assert!(err.to_string().contains("broken.pem"), "{err}");

    // A key that is not the certificate's.
    let (_, other_key) = leaf(&pki.ca, &["127.0.0.1"], ExtendedKeyUsagePurpose::ServerAuth);
    let other_key = pki.write("other-key.pem", &other_key);
    let err = load_err(&TlsConfig {
        key_file: other_key,
        ..good.clone()
    });
    assert!(matches!(err, TlsError::Unusable { .. }), "{err:?}");
    assert!(err.to_string().contains("server.pem"), "{err}");

    let err = load_err(&TlsConfig {
        ca_file: None,
        ..good.clone()
    });
    assert!(matches!(err, TlsError::VerifyIncomingWithoutCa), "{err:?}");

    // Through the sandbox: an InvalidInput error carrying the same text,
    // and nothing listening.
    let err = Sandbox::start(Config {
        tls: Some(TlsConfig {
            cert_file: missing.clone(),
            ..good
        }),
        ..Config::default()
    })
    .await
    .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(
        err.to_string().contains(&missing.display().to_string()),
        "{err}"
    );
}
