use super::*;
use crate::config::{Overrides, TokenConfig, TokenSource};

const SECRET: &str = "6a1f0c55-secret-token-value-4be2";

fn config_with_token() -> ConsulConfig {
    let mut c = ConsulConfig::new("127.0.0.1:1").unwrap();
    c.token = Some(TokenConfig {
        secret: Token::new(SECRET),
        source: TokenSource::EnvVar,
    });
    c
}

#[test]
fn client_debug_hides_token() {
    let client = Client::new(config_with_token()).unwrap();
    let dbg = format!("{client:?}");
    assert!(!dbg.contains(SECRET), "{dbg}");
    assert!(dbg.contains("CONSUL_HTTP_TOKEN"));
}

#[test]
fn txn_max_ops_is_validated() {
    for bad in [0usize, 129, 10_000] {
        let mut c = ConsulConfig::new("127.0.0.1:1").unwrap();
        c.txn_max_ops = bad;
        let err = Client::new(c).unwrap_err();
        assert_eq!(err.class(), "config");
    }
    let mut c = ConsulConfig::new("127.0.0.1:1").unwrap();
    c.txn_max_ops = 128;
    assert_eq!(Client::new(c).unwrap().txn_max_ops(), 128);
}

#[test]
fn missing_and_garbage_tls_files_are_config_errors() {
    let mut c = ConsulConfig::new("https://127.0.0.1:8501").unwrap();
    c.tls.ca_file = Some("/nonexistent/ca.pem".into());
    let err = Client::new(c).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Config(ConfigError::Tls {
                what: "CA file",
                ..
            })
        ),
        "{err}"
    );

    let mut c = ConsulConfig::new("https://127.0.0.1:8501").unwrap();
    c.tls.ca_pem = Some("not a certificate".into());
    let err = Client::new(c).unwrap_err();
    assert!(
        matches!(err, Error::Config(ConfigError::Tls { what: "CA PEM", .. })),
        "{err}"
    );
    assert!(err.to_string().contains("CONSUL_CACERT_PEM"), "{err}");

    let garbage = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(garbage.path(), "not a certificate").unwrap();
    let mut c = ConsulConfig::new("https://127.0.0.1:8501").unwrap();
    c.tls.ca_file = Some(garbage.path().to_owned());
    assert!(matches!(
        Client::new(c).unwrap_err(),
        Error::Config(ConfigError::Tls { .. })
    ));

    let mut c = ConsulConfig::new("https://127.0.0.1:8501").unwrap();
    c.tls.client_cert = Some(garbage.path().to_owned());
    c.tls.client_key = Some(garbage.path().to_owned());
    assert!(matches!(
        Client::new(c).unwrap_err(),
        Error::Config(ConfigError::Tls { .. })
    ));

    let mut c = ConsulConfig::new("https://127.0.0.1:8501").unwrap();
    c.tls.client_cert = Some(garbage.path().to_owned());
    assert!(matches!(
        Client::new(c).unwrap_err(),
        Error::Config(ConfigError::IncompleteClientIdentity)
    ));
}

#[test]
fn server_name_rewrites_host_and_keeps_port() {
    let mut c = ConsulConfig::new("https://127.0.0.1:8501").unwrap();
    c.tls.server_name = Some("server.dc1.consul".into());
    c.tls.insecure_skip_verify = true;
    let client = Client::new(c).unwrap();
    assert_eq!(client.address().host_str(), Some("server.dc1.consul"));
    assert_eq!(client.address().port(), Some(8501));

    // Plain http has no SNI: the address is left alone.
    let mut c = ConsulConfig::new("http://127.0.0.1:8500").unwrap();
    c.tls.server_name = Some("server.dc1.consul".into());
    assert_eq!(
        Client::new(c).unwrap().address().host_str(),
        Some("127.0.0.1")
    );
}

#[test]
fn from_env_overrides_builds() {
    let c = ConsulConfig::from_sources(&Default::default(), &Overrides::default()).unwrap();
    assert!(Client::new(c).is_ok());
}
