//! HTTPS, as every real API server speaks it: a CA and a serving
//! certificate for `127.0.0.1` and `localhost` made at start, the CA
//! handed to clients through the kubeconfig (`certificate-authority-data`).
//! kubectl sends a bearer token only over TLS, so a sandbox with
//! authentication (`crate::auth`) needs this for kubectl to be anyone but
//! `system:anonymous`.
//!
//! What this module must NOT do: read certificate files, or ask for client
//! certificates (no client-certificate authenticator is modelled).

use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// How long a client may take to finish the TLS handshake.
const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The serving identity of a sandbox: its CA (for kubeconfigs) and the
/// acceptor of its certificate.
#[derive(Clone)]
pub struct ServerTls {
    ca_pem: String,
    acceptor: tokio_rustls::TlsAcceptor,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls").finish_non_exhaustive()
    }
}

/// Why the serving identity could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// Generating a key or a certificate failed.
    #[error("cannot make the sandbox's certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    /// rustls refused the certificate or key.
    #[error("cannot use the sandbox's certificate: {0}")]
    Rustls(#[from] rustls::Error),
}

impl ServerTls {
    /// A fresh CA and a serving certificate signed by it.
    pub fn generate() -> Result<ServerTls, TlsError> {
        let mut ca = CertificateParams::new(Vec::<String>::new())?;
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "kube-sandbox CA");
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_key = KeyPair::generate()?;
        let ca_cert = ca.self_signed(&ca_key)?;
        let ca_pem = ca_cert.pem();
        let issuer = Issuer::new(ca, ca_key);

        let mut leaf = CertificateParams::new(vec!["localhost".to_string()])?;
        leaf.subject_alt_names
            .push(SanType::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()));
        leaf.distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        leaf.use_authority_key_identifier_extension = true;
        leaf.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let leaf_key = KeyPair::generate()?;
        let leaf_cert = leaf.signed_by(&leaf_key, &issuer)?;

        let chain = vec![CertificateDer::from(leaf_cert.der().to_vec())];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(ServerTls {
            ca_pem,
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        })
    }

    /// The CA certificate, PEM: what clients trust.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }
}

/// A TCP listener whose connections are TLS: what `axum::serve` accepts
/// from when the sandbox speaks HTTPS. Each handshake runs in a task of
/// its own, so a client that connects and stalls holds back no other; a
/// failed or timed-out handshake is logged at debug and dropped.
pub(crate) struct TlsListener {
    tcp: tokio::net::TcpListener,
    tls: ServerTls,
    done_tx: tokio::sync::mpsc::Sender<(TlsStream, std::net::SocketAddr)>,
    done_rx: tokio::sync::mpsc::Receiver<(TlsStream, std::net::SocketAddr)>,
}

type TlsStream = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;

impl TlsListener {
    /// Serves `tls` on the connections of `tcp`.
    pub(crate) fn new(tcp: tokio::net::TcpListener, tls: ServerTls) -> Self {
        // 64: handshakes finished but not yet taken by the server loop;
        // a full channel only makes the next ones wait their turn.
        let (done_tx, done_rx) = tokio::sync::mpsc::channel(64);
        TlsListener {
            tcp,
            tls,
            done_tx,
            done_rx,
        }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            tokio::select! {
                Some(ready) = self.done_rx.recv() => return ready,
                (stream, peer) = axum::serve::Listener::accept(&mut self.tcp) => {
                    let acceptor = self.tls.acceptor.clone();
                    let done = self.done_tx.clone();
                    tokio::spawn(async move {
                        match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                            Ok(Ok(tls)) => {
                                let _ = done.send((tls, peer)).await;
                            }
                            Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake refused"),
                            Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                        }
                    });
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}
