//! Real TLS handshakes between the client and an https Consul endpoint.
//!
//! The endpoint is `consul-sandbox` behind a small TLS terminator written
//! here with rustls: it accepts TLS on a loopback port, records what the
//! handshake saw (SNI, the client's certificate, or why it failed), and
//! forwards the plaintext bytes to the sandbox. So every request below is a
//! real Consul API call over a real TLS 1.3 (or 1.2) session, configured
//! through the same `ConsulConfig::from_sources` path mirra uses with
//! Consul's CLI variables (`CONSUL_CACERT`, `CONSUL_CLIENT_CERT`, ...).
//!
//! Certificates are generated per test run with rcgen: one CA, a server
//! certificate for `127.0.0.1` and `consul.test` (as Consul's own
//! `consul tls cert create -server` adds `localhost`/`127.0.0.1` next to
//! `server.<dc>.consul`), a client certificate, and a second, unrelated CA
//! that signs nothing the server uses.

// Test helpers outside #[test] functions unwrap too: a failed fixture must
// stop the test, and clippy only exempts the test functions themselves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::common::{fast_retry, string_map as env};
use consul_sandbox::{Config, Sandbox};
use mirra_consul::{
    Client, ConsulConfig, Error, Node, Overrides, QueryOptions, RegisterRequest, Service, TxnOp,
    Verb,
};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::RootCertStore;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;

/// The DNS name in the server certificate besides `127.0.0.1`.
const SERVER_NAME: &str = "consul.test";

// ----- certificates -----------------------------------------------------------

/// A certificate and its key, as PEM and DER.
struct Leaf {
    cert_pem: String,
    key_pem: String,
    cert_der: CertificateDer<'static>,
    key_der: Vec<u8>,
}

/// A CA that can sign leaves.
struct Ca {
    cert_pem: String,
    cert_der: CertificateDer<'static>,
    issuer: Issuer<'static, KeyPair>,
}

fn new_ca(name: &str) -> Ca {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    Ca {
        cert_pem: cert.pem(),
        cert_der: cert.der().clone(),
        issuer: Issuer::new(params, key),
    }
}

fn leaf_params(names: &[&str], usage: ExtendedKeyUsagePurpose) -> CertificateParams {
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let mut params = CertificateParams::new(names.clone()).unwrap();
    params.distinguished_name.push(
        DnType::CommonName,
        names.first().cloned().unwrap_or_default(),
    );
    params.use_authority_key_identifier_extension = true;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![usage];
    params
}

fn leaf(params: CertificateParams, issuer: Option<&Issuer<'static, KeyPair>>) -> Leaf {
    let key = KeyPair::generate().unwrap();
    let cert = match issuer {
        Some(issuer) => params.signed_by(&key, issuer).unwrap(),
        None => params.self_signed(&key).unwrap(),
    };
    Leaf {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        cert_der: cert.der().clone(),
        key_der: key.serialize_der(),
    }
}

/// Everything a test needs, written to PEM files in a temporary directory.
struct Pki {
    dir: tempfile::TempDir,
    ca: Ca,
    server: Leaf,
    client: Leaf,
    /// Signed by an unrelated CA, which the server does not trust.
    stranger_client: Leaf,
    /// Signed by nobody.
    self_signed_server: Leaf,
}

impl Pki {
    fn new() -> Pki {
        let ca = new_ca("mirra test CA");
        let other = new_ca("some other CA");
        let server = leaf(
            leaf_params(
                &[SERVER_NAME, "127.0.0.1"],
                ExtendedKeyUsagePurpose::ServerAuth,
            ),
            Some(&ca.issuer),
        );
        let client = leaf(
            leaf_params(&["mirra-client"], ExtendedKeyUsagePurpose::ClientAuth),
            Some(&ca.issuer),
        );
        let stranger_client = leaf(
            leaf_params(&["stranger"], ExtendedKeyUsagePurpose::ClientAuth),
            Some(&other.issuer),
        );
        let self_signed_server = leaf(
            leaf_params(
                &[SERVER_NAME, "127.0.0.1"],
                ExtendedKeyUsagePurpose::ServerAuth,
            ),
            None,
        );
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki {
            dir,
            ca,
            server,
            client,
            stranger_client,
            self_signed_server,
        };
        pki.write("ca.pem", &pki.ca.cert_pem);
        pki.write("other-ca.pem", &other.cert_pem);
        pki.write("client.pem", &pki.client.cert_pem);
        pki.write("client-key.pem", &pki.client.key_pem);
        pki.write("stranger.pem", &pki.stranger_client.cert_pem);
        pki.write("stranger-key.pem", &pki.stranger_client.key_pem);
        pki
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.dir.path().join(name), text).unwrap();
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

// ----- the https endpoint ---------------------------------------------------------

/// What the server side saw of one TLS connection.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Handshake {
    /// Completed: the SNI the client sent and the client certificate, if any.
    Ok {
        sni: Option<String>,
        client_cert: Option<Vec<u8>>,
    },
    /// Refused, with rustls' reason.
    Failed(String),
}

/// The sandbox behind a TLS terminator on its own loopback port.
struct TlsConsul {
    sandbox: Sandbox,
    addr: std::net::SocketAddr,
    handshakes: mpsc::UnboundedReceiver<Handshake>,
}

impl TlsConsul {
    /// `require_client_cert_from`: when set, the server demands a client
    /// certificate signed by this CA (Consul's `verify_incoming = true`).
    async fn start(server: &Leaf, require_client_cert_from: Option<&Ca>) -> TlsConsul {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap();
        let builder = match require_client_cert_from {
            Some(ca) => {
                let mut roots = RootCertStore::empty();
                roots.add(ca.cert_der.clone()).unwrap();
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    Arc::new(roots),
                    provider,
                )
                .build()
                .unwrap();
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server.key_der.clone()));
        let config = builder
            .with_single_cert(vec![server.cert_der.clone()], key)
            .unwrap();
        let acceptor = TlsAcceptor::from(Arc::new(config));

        let sandbox = Sandbox::start(Config::default()).await.unwrap();
        let backend = sandbox.addr();
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, handshakes) = mpsc::unbounded_channel();
        // The accept loop ends with the test's runtime.
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                let tx = tx.clone();
                tokio::spawn(async move {
                    let mut tls = match acceptor.accept(tcp).await {
                        Ok(tls) => tls,
                        Err(e) => {
                            let _ = tx.send(Handshake::Failed(e.to_string()));
                            return;
                        }
                    };
                    let conn = tls.get_ref().1;
                    let _ = tx.send(Handshake::Ok {
                        sni: conn.server_name().map(str::to_owned),
                        client_cert: conn
                            .peer_certificates()
                            .and_then(|c| c.first())
                            .map(|c| c.to_vec()),
                    });
                    let mut plain = TcpStream::connect(backend).await.unwrap();
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        });
        TlsConsul {
            sandbox,
            addr,
            handshakes,
        }
    }

    fn host_port(&self) -> String {
        format!("127.0.0.1:{}", self.addr.port())
    }

    fn https_url(&self) -> String {
        format!("https://{}", self.host_port())
    }

    /// The next connection's outcome, as the server saw it.
    async fn next_handshake(&mut self) -> Handshake {
        self.handshakes.recv().await.unwrap()
    }

    /// No connection other than those already taken was attempted.
    fn no_more_handshakes(&mut self) {
        assert_eq!(self.handshakes.try_recv().ok(), None);
    }

    /// [`Self::no_more_handshakes`], and no request reached the sandbox,
    /// whatever the endpoint.
    fn no_more_handshakes_and_no_requests(&mut self) {
        self.no_more_handshakes();
        assert_eq!(self.sandbox.stats().requests.values().sum::<u64>(), 0);
    }
}

/// New certificates, and the sandbox behind TLS with their server
/// certificate; with `verify_incoming` (Consul's setting) it demands a
/// client certificate signed by their CA.
async fn start_with_new_pki(verify_incoming: bool) -> (Pki, TlsConsul) {
    let pki = Pki::new();
    let consul = TlsConsul::start(&pki.server, verify_incoming.then_some(&pki.ca)).await;
    (pki, consul)
}

// ----- client side ------------------------------------------------------------------

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A client from the real configuration path, with one attempt per call so
/// that each failing call is exactly one handshake.
fn client(env_map: &BTreeMap<String, String>, overrides: &Overrides) -> Client {
    let mut config = ConsulConfig::from_sources(env_map, overrides).unwrap();
    config.retry = fast_retry(1);
    Client::new(config).unwrap()
}

/// [`client`] from these variables alone, without overrides.
fn client_from_env(pairs: &[(&str, &str)]) -> Client {
    client(&env(pairs), &Overrides::default())
}

/// A read and a write through the TLS session; the sandbox's own `consul`
/// service proves the answer came from Consul's API, not the terminator.
async fn read_and_write(client: &Client, consul: &TlsConsul) -> Result<(), Error> {
    let services = client.services(&QueryOptions::default()).await?;
    assert!(
        services.value.contains_key("consul"),
        "{:?}",
        services.value
    );
    client
        .register(&RegisterRequest {
            node: "k8s-sync".into(),
            address: "127.0.0.1".into(),
            service: Some(Service {
                id: "web-1".into(),
                service: "web".into(),
                port: 8080,
                ..Service::default()
            }),
            ..RegisterRequest::default()
        })
        .await?;
    assert_eq!(consul.sandbox.stats().raft_applies, 1);
    let web = client.service("web", &QueryOptions::default()).await?;
    assert_eq!(web.value.len(), 1);
    Ok(())
}

/// The error of one call that cannot get through.
async fn failing_read(client: &Client) -> Error {
    client
        .services(&QueryOptions::default())
        .await
        .expect_err("the TLS session must not be established")
}

// ----- tests ----------------------------------------------------------------------------

#[tokio::test]
async fn trusted_ca_file_from_consul_cacert() {
    let (pki, mut consul) = start_with_new_pki(false).await;
    let ca = pki.path("ca.pem");
    let client = client_from_env(&[
        ("CONSUL_HTTP_ADDR", &consul.host_port()),
        ("CONSUL_HTTP_SSL", "true"),
        ("CONSUL_CACERT", path_str(&ca)),
    ]);
    assert_eq!(client.address().scheme(), "https");
    read_and_write(&client, &consul).await.unwrap();

    // No SNI for an IP address (RFC 6066 forbids it), no client cert, and
    // the pool reuses one TLS session for all three calls.
    assert_eq!(
        consul.next_handshake().await,
        Handshake::Ok {
            sni: None,
            client_cert: None
        }
    );
    consul.no_more_handshakes();
}

#[tokio::test]
async fn unknown_ca_is_a_connect_error_naming_the_issuer_problem() {
    let (pki, mut consul) = start_with_new_pki(false).await;
    let url = consul.https_url();

    // No CA configured: only the built-in public roots, which did not sign
    // the server's certificate.
    let err = failing_read(&client_from_env(&[("CONSUL_HTTP_ADDR", &url)])).await;
    assert!(matches!(err, Error::Connect { .. }), "{err:?}");
    assert_eq!(err.class(), "connect");
    let msg = err.to_string();
    assert!(
        msg.starts_with("catalog.services: cannot connect to Consul: "),
        "{msg}"
    );
    assert!(
        msg.contains("invalid peer certificate: UnknownIssuer"),
        "{msg}"
    );
    // The client aborts the handshake with an "unknown CA" alert.
    assert_eq!(
        consul.next_handshake().await,
        Handshake::Failed("received fatal alert: UnknownCA".into())
    );

    // A CA file with another CA: the same refusal.
    let other = pki.path("other-ca.pem");
    let err = failing_read(&client_from_env(&[
        ("CONSUL_HTTP_ADDR", &url),
        ("CONSUL_CACERT", path_str(&other)),
    ]))
    .await;
    assert_server_certificate_untrusted(&err);
    assert_eq!(
        consul.next_handshake().await,
        Handshake::Failed("received fatal alert: UnknownCA".into())
    );
    consul.no_more_handshakes_and_no_requests();
}

#[tokio::test]
async fn unknown_ca_is_retried_as_a_connect_error() {
    // A verification failure is a connect error: the request never reached
    // Consul, so even a write is safe to resend, and a certificate fixed on
    // the server side (a renewed cert) heals without a restart.
    let (_pki, mut consul) = start_with_new_pki(false).await;
    let mut config = ConsulConfig::new(&consul.https_url()).unwrap();
    config.retry = fast_retry(3);
    let err = failing_read(&Client::new(config).unwrap()).await;
    assert!(matches!(err, Error::Connect { .. }), "{err:?}");
    for _ in 0..3 {
        assert!(matches!(
            consul.next_handshake().await,
            Handshake::Failed(_)
        ));
    }
    consul.no_more_handshakes();
}

#[tokio::test]
async fn server_name_verifies_a_dns_name_while_dialing_an_ip() {
    let (pki, mut consul) = start_with_new_pki(false).await;
    let ca = pki.path("ca.pem");
    let url = consul.https_url();

    let client = client_from_env(&[
        ("CONSUL_HTTP_ADDR", &url),
        ("CONSUL_CACERT", path_str(&ca)),
        ("CONSUL_TLS_SERVER_NAME", SERVER_NAME),
    ]);
    assert_eq!(client.address().host_str(), Some(SERVER_NAME));
    read_and_write(&client, &consul).await.unwrap();
    // The name went out as SNI: a server choosing its certificate by name
    // (Consul behind an SNI-routing proxy) sees the right one.
    assert_eq!(
        consul.next_handshake().await,
        Handshake::Ok {
            sni: Some(SERVER_NAME.into()),
            client_cert: None
        }
    );

    // A name the certificate does not carry is refused, although the CA is
    // trusted and the dialled IP is in the certificate.
    let wrong = client_with_name(&url, &ca, "other.test");
    let err = failing_read(&wrong).await;
    assert!(matches!(err, Error::Connect { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("certificate not valid for name \"other.test\""),
        "{err}"
    );
    assert_eq!(
        consul.next_handshake().await,
        Handshake::Failed("received fatal alert: BadCertificate".into())
    );
    consul.no_more_handshakes();
}

fn client_with_name(url: &str, ca: &Path, name: &str) -> Client {
    client(
        &env(&[]),
        &Overrides {
            address: Some(url.to_owned()),
            ca_file: Some(ca.to_owned()),
            tls_server_name: Some(name.to_owned()),
            ..Overrides::default()
        },
    )
}

#[tokio::test]
async fn insecure_switch_accepts_a_self_signed_certificate() {
    let pki = Pki::new();
    let mut consul = TlsConsul::start(&pki.self_signed_server, None).await;
    let url = consul.https_url();

    // Verified, a self-signed certificate has no issuer anyone trusts.
    let err = failing_read(&client_from_env(&[("CONSUL_HTTP_ADDR", &url)])).await;
    assert_server_certificate_untrusted(&err);
    assert!(matches!(
        consul.next_handshake().await,
        Handshake::Failed(_)
    ));

    // CONSUL_HTTP_SSL_VERIFY=false, as with Consul's CLI.
    let insecure = client_from_env(&[
        ("CONSUL_HTTP_ADDR", &url),
        ("CONSUL_HTTP_SSL_VERIFY", "false"),
    ]);
    read_and_write(&insecure, &consul).await.unwrap();
    assert!(matches!(
        consul.next_handshake().await,
        Handshake::Ok { .. }
    ));

    // The explicit switch wins over an environment that asks to verify, and
    // also skips the name check.
    let insecure = client(
        &env(&[
            ("CONSUL_HTTP_ADDR", &url),
            ("CONSUL_HTTP_SSL_VERIFY", "true"),
        ]),
        &Overrides {
            insecure_skip_verify: Some(true),
            tls_server_name: Some("not-in-the-cert.test".into()),
            ..Overrides::default()
        },
    );
    let services = insecure.services(&QueryOptions::default()).await.unwrap();
    assert!(services.value.contains_key("web"));
    assert_eq!(
        consul.next_handshake().await,
        Handshake::Ok {
            sni: Some("not-in-the-cert.test".into()),
            client_cert: None
        }
    );
    consul.no_more_handshakes();
}

#[tokio::test]
async fn client_certificate_is_presented_when_the_server_requires_one() {
    let (pki, mut consul) = start_with_new_pki(true).await;
    let ca = pki.path("ca.pem");
    let addr = consul.host_port();

    let with_cert = client_from_env(&[
        ("CONSUL_HTTP_ADDR", &addr),
        ("CONSUL_HTTP_SSL", "true"),
        ("CONSUL_CACERT", path_str(&ca)),
        ("CONSUL_CLIENT_CERT", path_str(&pki.path("client.pem"))),
        ("CONSUL_CLIENT_KEY", path_str(&pki.path("client-key.pem"))),
    ]);
    read_and_write(&with_cert, &consul).await.unwrap();
    assert_eq!(
        consul.next_handshake().await,
        Handshake::Ok {
            sni: None,
            client_cert: Some(pki.client.cert_der.to_vec()),
        }
    );
}

#[tokio::test]
async fn missing_client_certificate_is_refused() {
    let (pki, mut consul) = start_with_new_pki(true).await;
    let ca = pki.path("ca.pem");
    let env_map = env(&[
        ("CONSUL_HTTP_ADDR", &consul.host_port()),
        ("CONSUL_HTTP_SSL", "true"),
        ("CONSUL_CACERT", path_str(&ca)),
    ]);

    let without = client(&env_map, &Overrides::default());
    let err = failing_read(&without).await;
    assert_eq!(
        consul.next_handshake().await,
        Handshake::Failed("peer sent no certificates".into())
    );
    assert_mtls_refusal(&err, "CertificateRequired");
    consul.no_more_handshakes();

    // The refusal is a connect error, so even a cas transaction (never
    // resent after an unknown outcome) is retried: the server read nothing.
    let mut config = ConsulConfig::from_sources(&env_map, &Overrides::default()).unwrap();
    config.retry = fast_retry(2);
    let cas = TxnOp::Node {
        verb: Verb::Cas,
        node: Node {
            node: "k8s-sync".into(),
            address: "127.0.0.1".into(),
            ..Node::default()
        },
    };
    let err = Client::new(config).unwrap().txn(&[cas]).await.unwrap_err();
    assert_mtls_refusal(&err, "CertificateRequired");
    for _ in 0..2 {
        assert_eq!(
            consul.next_handshake().await,
            Handshake::Failed("peer sent no certificates".into())
        );
    }
    consul.no_more_handshakes_and_no_requests();
}

#[tokio::test]
async fn client_certificate_from_an_untrusted_ca_is_refused() {
    let (pki, mut consul) = start_with_new_pki(true).await;
    let ca = pki.path("ca.pem");
    let stranger = client(
        &env(&[
            ("CONSUL_HTTP_ADDR", &consul.host_port()),
            ("CONSUL_HTTP_SSL", "true"),
            ("CONSUL_CACERT", path_str(&ca)),
        ]),
        &Overrides {
            client_cert: Some(pki.path("stranger.pem")),
            client_key: Some(pki.path("stranger-key.pem")),
            ..Overrides::default()
        },
    );
    let err = failing_read(&stranger).await;
    assert_eq!(
        consul.next_handshake().await,
        Handshake::Failed("invalid peer certificate: UnknownIssuer".into())
    );
    assert_mtls_refusal(&err, "UnknownCA");
    consul.no_more_handshakes_and_no_requests();
}

/// How the client reports a server certificate no trusted CA signed: a
/// connect error naming rustls' reason.
fn assert_server_certificate_untrusted(err: &Error) {
    assert!(matches!(err, Error::Connect { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("invalid peer certificate: UnknownIssuer"),
        "{err}"
    );
}

/// How the client reports a server that refused its (missing or untrusted)
/// certificate: a connect error (TLS 1.3 reports it while sending, but the
/// request was never read) with the server's TLS alert in the message.
fn assert_mtls_refusal(err: &Error, alert: &str) {
    assert!(matches!(err, Error::Connect { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains(&format!("received fatal alert: {alert}")),
        "{err}"
    );
}

#[tokio::test]
async fn consul_k8s_tls_settings_fail_over_with_the_server_name_kept() {
    let (pki, mut consul) = start_with_new_pki(false).await;
    let ca = pki.path("ca.pem");
    let port = consul.addr.port().to_string();
    // Nothing listens on 127.0.0.2: the client moves on to 127.0.0.1 and
    // still verifies the certificate against the configured name.
    let client = client_from_env(&[
        ("CONSUL_ADDRESSES", "127.0.0.2,127.0.0.1"),
        ("CONSUL_HTTP_PORT", &port),
        ("CONSUL_USE_TLS", "true"),
        ("CONSUL_CACERT_FILE", path_str(&ca)),
        ("CONSUL_TLS_SERVER_NAME", SERVER_NAME),
    ]);
    assert_eq!(client.servers().len(), 2);
    assert!(
        client
            .servers()
            .iter()
            .all(|u| u.scheme() == "https" && u.host_str() == Some(SERVER_NAME))
    );
    read_and_write(&client, &consul).await.unwrap();
    assert_eq!(
        consul.next_handshake().await,
        Handshake::Ok {
            sni: Some(SERVER_NAME.into()),
            client_cert: None
        }
    );
}
