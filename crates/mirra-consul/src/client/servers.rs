//! Building the per-server HTTP clients from the configuration: the server
//! addresses, the connection pool settings, TLS (CA, client certificate, server
//! name).
//!
//! This module must NOT send requests: `transport` does.

use super::*;

pub(super) fn http_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .pool_idle_timeout(POOL_IDLE_TIMEOUT)
        .pool_max_idle_per_host(POOL_MAX_IDLE_PER_HOST)
        .tcp_keepalive(TCP_KEEPALIVE)
        .user_agent(concat!("mirra-consul/", env!("CARGO_PKG_VERSION")))
}

pub(super) fn finish(b: reqwest::ClientBuilder) -> Result<reqwest::Client, ConfigError> {
    b.build()
        .map_err(|e| ConfigError::HttpClient(e.to_string()))
}

/// One [`Server`] per configured address; a host name from
/// `CONSUL_ADDRESSES` becomes one server per address it resolves to.
pub(super) fn build_servers(config: &ConsulConfig) -> Result<Vec<Server>, ConfigError> {
    if config.addresses.is_empty() {
        let mut base = config.address.clone();
        let http = finish(apply_tls(http_builder(), &config.tls, &mut base)?)?;
        return Ok(vec![Server { http, base }]);
    }
    let mut servers = Vec::new();
    let mut failures = Vec::new();
    for url in &config.addresses {
        let Some(host) = url.host_str() else { continue };
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let Some(port) = url.port_or_known_default() else {
            continue;
        };
        let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => match (host.as_str(), port).to_socket_addrs() {
                Ok(a) => a.collect(),
                Err(e) => {
                    warn!(host = %host, error = %e, "cannot resolve a Consul server name");
                    failures.push(format!("{host}: {e}"));
                    continue;
                }
            },
        };
        let is_name = host.parse::<IpAddr>().is_err();
        for addr in addrs {
            let mut base = url.clone();
            let mut b = apply_tls_files(http_builder(), &config.tls)?;
            // Over TLS the certificate names the configured server name, or
            // else the DNS name the operator gave (consul-k8s verifies
            // against it too); the connection still goes to this address.
            let sni = config
                .tls
                .server_name
                .clone()
                .filter(|n| !n.is_empty())
                .or_else(|| is_name.then(|| host.clone()));
            match sni {
                Some(name) if url.scheme() == "https" => {
                    base.set_host(Some(&name))
                        .map_err(|e| ConfigError::ServerName {
                            server_name: name.clone(),
                            reason: format!("not a valid host name: {e}"),
                        })?;
                    b = b.resolve_to_addrs(&name, &[addr]);
                }
                _ => {
                    let ip = match addr.ip() {
                        IpAddr::V4(v4) => v4.to_string(),
                        IpAddr::V6(v6) => format!("[{v6}]"),
                    };
                    base.set_host(Some(&ip))
                        .map_err(|e| ConfigError::BadAddress {
                            value: addr.to_string(),
                            origin: crate::config::env::ADDRESSES,
                            reason: e.to_string(),
                        })?;
                }
            }
            if servers.iter().any(|s: &Server| s.base == base) && url.scheme() == "http" {
                continue;
            }
            servers.push(Server {
                http: finish(b)?,
                base,
            });
        }
    }
    if servers.is_empty() {
        return Err(ConfigError::Resolve {
            reason: if failures.is_empty() {
                "no address".into()
            } else {
                failures.join("; ")
            },
        });
    }
    Ok(servers)
}

pub(super) fn apply_tls(
    b: reqwest::ClientBuilder,
    tls: &TlsConfig,
    base: &mut Url,
) -> Result<reqwest::ClientBuilder, ConfigError> {
    let b = apply_tls_files(b, tls)?;
    if let Some(name) = tls.server_name.as_deref().filter(|n| !n.is_empty())
        && base.scheme() == "https"
    {
        return apply_server_name(b, name, base);
    }
    Ok(b)
}

/// The CA bundle, the client identity and the verification switch.
pub(super) fn apply_tls_files(
    mut b: reqwest::ClientBuilder,
    tls: &TlsConfig,
) -> Result<reqwest::ClientBuilder, ConfigError> {
    let read = |what: &'static str, p: &std::path::Path| {
        std::fs::read(p).map_err(|e| ConfigError::Tls {
            what,
            path: p.display().to_string(),
            reason: e.to_string(),
        })
    };
    let ca = match (&tls.ca_file, &tls.ca_pem) {
        (Some(ca), _) => Some(("CA file", ca.display().to_string(), read("CA file", ca)?)),
        (None, Some(pem)) => Some((
            "CA PEM",
            "(-ca-cert-pem, CONSUL_CACERT_PEM)".to_owned(),
            pem.as_bytes().to_vec(),
        )),
        (None, None) => None,
    };
    if let Some((what, origin, pem)) = ca {
        let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| ConfigError::Tls {
            what,
            path: origin.clone(),
            reason: e.to_string(),
        })?;
        if certs.is_empty() {
            return Err(ConfigError::Tls {
                what,
                path: origin,
                reason: "no PEM certificate found".into(),
            });
        }
        for c in certs {
            b = b.add_root_certificate(c);
        }
    }
    match (&tls.client_cert, &tls.client_key) {
        (Some(cert), Some(key)) => {
            let mut pem = read("client certificate", cert)?;
            pem.push(b'\n');
            pem.extend(read("client key", key)?);
            let id = reqwest::Identity::from_pem(&pem).map_err(|e| ConfigError::Tls {
                what: "client certificate/key",
                path: format!("{} + {}", cert.display(), key.display()),
                reason: e.to_string(),
            })?;
            b = b.identity(id);
        }
        (None, None) => {}
        _ => return Err(ConfigError::IncompleteClientIdentity),
    }
    if tls.insecure_skip_verify {
        warn!("TLS certificate verification of Consul is disabled");
        b = b.danger_accept_invalid_certs(true);
    }
    Ok(b)
}

/// Makes TLS use `name` for SNI and certificate verification while still
/// connecting to the configured host: the URL's host becomes `name`, and
/// `name` resolves to the configured host's addresses. A configured host
/// name is resolved once, here.
pub(super) fn apply_server_name(
    b: reqwest::ClientBuilder,
    name: &str,
    base: &mut Url,
) -> Result<reqwest::ClientBuilder, ConfigError> {
    let fail = |reason: String| ConfigError::ServerName {
        server_name: name.to_owned(),
        reason,
    };
    let host = base
        .host_str()
        .ok_or_else(|| fail("address has no host".into()))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = base
        .port_or_known_default()
        .ok_or_else(|| fail("address has no port".into()))?;
    let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => (host.as_str(), port)
            .to_socket_addrs()
            .map_err(|e| fail(format!("cannot resolve {host}: {e}")))?
            .collect(),
    };
    if addrs.is_empty() {
        return Err(fail(format!("{host} resolves to no address")));
    }
    base.set_host(Some(name))
        .map_err(|e| fail(format!("not a valid host name: {e}")))?;
    Ok(b.resolve_to_addrs(name, &addrs))
}
