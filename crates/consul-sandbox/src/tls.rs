//! The HTTPS side, as Consul serves it on `ports.https` with
//! `tls.defaults` (or the older top-level `cert_file`, `key_file`,
//! `ca_file`, `verify_incoming`): a certificate chain and its key, and,
//! with `verify_incoming`, client certificates checked against the CA.
//!
//! Loading reads every file at once and names the file in any error, so a
//! wrong path or a file that is not PEM stops the sandbox before it
//! listens, never in the middle of a handshake.
//!
//! This module must NOT look at requests: after the handshake the
//! connection is handed to the same HTTP pipeline as a plain one.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;

/// The TLS settings of the HTTPS listener (Consul's `tls.defaults`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsConfig {
    /// PEM file with the server certificate, followed by any intermediates
    /// (Consul's `cert_file`).
    pub cert_file: PathBuf,
    /// PEM file with the server certificate's private key, PKCS#8, PKCS#1
    /// or SEC1 (Consul's `key_file`).
    pub key_file: PathBuf,
    /// PEM file with the CA certificates that sign client certificates
    /// (Consul's `ca_file`). Only read with `verify_incoming`.
    pub ca_file: Option<PathBuf>,
    /// Demand a client certificate signed by `ca_file` on every HTTPS
    /// connection (Consul's `verify_incoming`); a client without one is
    /// refused during the handshake.
    pub verify_incoming: bool,
}

/// Why the TLS settings cannot be used. Every variant names the file at
/// fault, when there is one.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file cannot be read (missing, unreadable, a directory).
    #[error("cannot read the TLS {what} {path}: {source}")]
    Read {
        /// What the file was for (`certificate file`, `key file`, `CA file`).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file is not PEM, or has no block of the kind it must hold.
    #[error("the TLS {what} {path} {problem}")]
    Pem {
        /// What the file was for.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong, e.g. `holds no PEM CERTIFICATE block`.
        problem: String,
    },
    /// `verify_incoming` without a CA file to check clients against.
    #[error("verify_incoming needs a CA file to check client certificates against")]
    VerifyIncomingWithoutCa,
    /// The files parse, but do not make a usable server configuration
    /// (for example a key that does not match the certificate).
    #[error("the TLS certificate {cert} and key {key} cannot be used: {reason}")]
    Unusable {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// rustls' reason.
        reason: String,
    },
    /// The CA file's certificates cannot verify clients.
    #[error("the TLS CA file {path} cannot verify client certificates: {reason}")]
    ClientVerifier {
        /// The CA file.
        path: PathBuf,
        /// rustls' reason.
        reason: String,
    },
}

/// A loaded TLS server configuration, ready to accept handshakes.
#[derive(Clone)]
pub struct TlsServer {
    pub(crate) acceptor: tokio_rustls::TlsAcceptor,
    pub(crate) verify_incoming: bool,
}

impl std::fmt::Debug for TlsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsServer")
            .field("verify_incoming", &self.verify_incoming)
            .finish_non_exhaustive()
    }
}

fn read(what: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        what,
        path: path.to_path_buf(),
        source,
    })
}

fn pem_error(what: &'static str, path: &Path, problem: impl Into<String>) -> TlsError {
    TlsError::Pem {
        what,
        path: path.to_path_buf(),
        problem: problem.into(),
    }
}

/// Every `CERTIFICATE` block of a PEM file; at least one.
fn certificates(what: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = read(what, path)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(what, path, format!("is not valid PEM: {e}")))?;
    if certs.is_empty() {
        return Err(pem_error(what, path, "holds no PEM CERTIFICATE block"));
    }
    Ok(certs)
}

impl TlsConfig {
    /// Reads the files and builds the server side of the handshake.
    pub fn load(&self) -> Result<TlsServer, TlsError> {
        const CERT: &str = "certificate file";
        const KEY: &str = "key file";
        const CA: &str = "CA file";
        let chain = certificates(CERT, &self.cert_file)?;
        let key_bytes = read(KEY, &self.key_file)?;
        let key = PrivateKeyDer::from_pem_slice(&key_bytes).map_err(|e| match e {
            rustls::pki_types::pem::Error::NoItemsFound => pem_error(
                KEY,
                &self.key_file,
                "holds no PEM private key (PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY)",
            ),
            other => pem_error(KEY, &self.key_file, format!("is not valid PEM: {other}")),
        })?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let unusable = |reason: String| TlsError::Unusable {
            cert: self.cert_file.clone(),
            key: self.key_file.clone(),
            reason,
        };
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| unusable(e.to_string()))?;
        let builder = if self.verify_incoming {
            let ca_file = self
                .ca_file
                .as_deref()
                .ok_or(TlsError::VerifyIncomingWithoutCa)?;
            let mut roots = RootCertStore::empty();
            for cert in certificates(CA, ca_file)? {
                roots
                    .add(cert)
                    .map_err(|e| pem_error(CA, ca_file, format!("holds a bad certificate: {e}")))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| TlsError::ClientVerifier {
                    path: ca_file.to_path_buf(),
                    reason: e.to_string(),
                })?;
            builder.with_client_cert_verifier(verifier)
        } else {
            // Consul reads `ca_file` without `verify_incoming` too (for
            // its outgoing connections), so a bad one is still an error.
            if let Some(ca_file) = &self.ca_file {
                certificates(CA, ca_file)?;
            }
            builder.with_no_client_auth()
        };
        let mut config = builder
            .with_single_cert(chain, key)
            .map_err(|e| unusable(e.to_string()))?;
        // Consul's HTTPS listener speaks HTTP/1.1 (and h2, which the
        // sandbox does not): offering only HTTP/1.1 makes clients that
        // negotiate ALPN pick it.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(TlsServer {
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
            verify_incoming: self.verify_incoming,
        })
    }
}
