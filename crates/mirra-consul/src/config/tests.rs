use super::*;
use proptest::prelude::*;
use std::io::Write;

#[test]
fn a_token_over_plain_http_to_another_host_is_in_clear() {
    let with_token = |addr: &str| {
        let mut c = ConsulConfig::new(addr).unwrap();
        c.token = Some(TokenConfig {
            secret: Token::new("s"),
            source: TokenSource::EnvVar,
        });
        c
    };
    assert!(with_token("http://10.0.0.5:8500").token_in_clear());
    assert!(with_token("consul.example:8500").token_in_clear());
    assert!(!with_token("https://consul.example:8501").token_in_clear());
    assert!(!with_token("http://127.0.0.1:8500").token_in_clear());
    assert!(!with_token("http://[::1]:8500").token_in_clear());
    assert!(!with_token("http://localhost:8500").token_in_clear());
    assert!(
        !ConsulConfig::new("http://10.0.0.5:8500")
            .unwrap()
            .token_in_clear()
    );
}

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

const SECRET: &str = "3f9c1e2a-5b7d-4c8e-9a0b-1c2d3e4f5a6b";

#[test]
fn defaults_to_local_http_agent() {
    let c = ConsulConfig::from_sources(&env(&[]), &Overrides::default()).unwrap();
    assert_eq!(c.address.as_str(), "http://127.0.0.1:8500/");
    assert!(c.token.is_none());
    assert!(!c.tls.insecure_skip_verify);
    assert_eq!(c.txn_max_ops, 128);
}

#[test]
fn host_port_without_scheme_is_http_unless_ssl() {
    let c = ConsulConfig::from_sources(
        &env(&[("CONSUL_HTTP_ADDR", "consul.example:8501")]),
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(c.address.scheme(), "http");
    assert_eq!(c.address.port(), Some(8501));

    let c = ConsulConfig::from_sources(
        &env(&[
            ("CONSUL_HTTP_ADDR", "consul.example:8501"),
            ("CONSUL_HTTP_SSL", "true"),
        ]),
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(c.address.scheme(), "https");
}

#[test]
fn https_url_and_path_prefix_are_kept() {
    let u = parse_address("https://proxy.example/consul/", false, "t").unwrap();
    assert_eq!(u.scheme(), "https");
    assert_eq!(u.path(), "/consul");
}

#[test]
fn explicit_address_wins_over_env() {
    let o = Overrides {
        address: Some("http://10.0.0.1:8500".into()),
        ..Overrides::default()
    };
    let c = ConsulConfig::from_sources(&env(&[("CONSUL_HTTP_ADDR", "other:1")]), &o).unwrap();
    assert_eq!(c.address.host_str(), Some("10.0.0.1"));
}

#[test]
fn malformed_addresses_are_rejected_with_origin() {
    for bad in [
        "",
        "ftp://x:1",
        "unix:///tmp/consul.sock",
        "http://",
        "http://h:99999",
        "http://u:p@h:1",
        "http://h:1/?a=b",
    ] {
        let err =
            ConsulConfig::from_sources(&env(&[("CONSUL_HTTP_ADDR", bad)]), &Overrides::default());
        // An empty variable counts as unset, like in Consul's CLI.
        if bad.is_empty() {
            assert!(err.is_ok());
            continue;
        }
        let err = err.unwrap_err();
        assert!(
            matches!(
                err,
                ConfigError::BadAddress {
                    origin: "CONSUL_HTTP_ADDR",
                    ..
                }
            ),
            "{bad}: {err}"
        );
        assert!(err.to_string().contains("CONSUL_HTTP_ADDR"));
    }
    assert!(parse_address("   ", false, "t").is_err());
}

#[test]
fn bad_bool_is_an_error_naming_the_variable() {
    let err = ConsulConfig::from_sources(
        &env(&[("CONSUL_HTTP_SSL_VERIFY", "nope")]),
        &Overrides::default(),
    )
    .unwrap_err();
    assert!(matches!(
        err,
        ConfigError::BadBool {
            name: "CONSUL_HTTP_SSL_VERIFY",
            ..
        }
    ));
    assert!(err.to_string().contains("CONSUL_HTTP_SSL_VERIFY"));
}

#[test]
fn ssl_verify_false_means_insecure() {
    let c = ConsulConfig::from_sources(
        &env(&[("CONSUL_HTTP_SSL_VERIFY", "false")]),
        &Overrides::default(),
    )
    .unwrap();
    assert!(c.tls.insecure_skip_verify);
    let o = Overrides {
        insecure_skip_verify: Some(false),
        ..Overrides::default()
    };
    let c = ConsulConfig::from_sources(&env(&[("CONSUL_HTTP_SSL_VERIFY", "0")]), &o).unwrap();
    assert!(!c.tls.insecure_skip_verify);
}

#[test]
fn tls_settings_come_from_env() {
    let c = ConsulConfig::from_sources(
        &env(&[
            ("CONSUL_CACERT", "/etc/consul/ca.pem"),
            ("CONSUL_CLIENT_CERT", "/etc/consul/cert.pem"),
            ("CONSUL_CLIENT_KEY", "/etc/consul/key.pem"),
            ("CONSUL_TLS_SERVER_NAME", "server.dc1.consul"),
        ]),
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(
        c.tls.ca_file.as_deref(),
        Some(Path::new("/etc/consul/ca.pem"))
    );
    assert_eq!(
        c.tls.client_cert.as_deref(),
        Some(Path::new("/etc/consul/cert.pem"))
    );
    assert_eq!(
        c.tls.client_key.as_deref(),
        Some(Path::new("/etc/consul/key.pem"))
    );
    assert_eq!(c.tls.server_name.as_deref(), Some("server.dc1.consul"));
}

#[test]
fn client_cert_without_key_is_rejected() {
    let err = ConsulConfig::from_sources(
        &env(&[("CONSUL_CLIENT_CERT", "/c.pem")]),
        &Overrides::default(),
    )
    .unwrap_err();
    assert!(matches!(err, ConfigError::IncompleteClientIdentity));
}

#[test]
fn namespace_and_partition_from_env_datacenter_explicit() {
    let o = Overrides {
        datacenter: Some("dc2".into()),
        ..Overrides::default()
    };
    let c = ConsulConfig::from_sources(
        &env(&[("CONSUL_NAMESPACE", "team-a"), ("CONSUL_PARTITION", "p1")]),
        &o,
    )
    .unwrap();
    assert_eq!(c.datacenter.as_deref(), Some("dc2"));
    assert_eq!(c.namespace.as_deref(), Some("team-a"));
    assert_eq!(c.partition.as_deref(), Some("p1"));
}

#[test]
fn token_from_env_var() {
    let c = ConsulConfig::from_sources(
        &env(&[("CONSUL_HTTP_TOKEN", SECRET)]),
        &Overrides::default(),
    )
    .unwrap();
    let t = c.token.as_ref().unwrap();
    assert_eq!(t.secret.expose(), SECRET);
    assert_eq!(t.source, TokenSource::EnvVar);
    assert_eq!(c.token_hint(), "token from CONSUL_HTTP_TOKEN");
}

#[test]
fn token_file_wins_over_token_var_and_is_trimmed() {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    writeln!(f, "  {SECRET}  ").unwrap();
    let path = f.path().to_str().unwrap().to_owned();
    let c = ConsulConfig::from_sources(
        &env(&[
            ("CONSUL_HTTP_TOKEN", "other"),
            ("CONSUL_HTTP_TOKEN_FILE", &path),
        ]),
        &Overrides::default(),
    )
    .unwrap();
    let t = c.token.as_ref().unwrap();
    assert_eq!(t.secret.expose(), SECRET);
    assert!(matches!(t.source, TokenSource::EnvFile(_)));
    assert!(c.token_hint().contains("CONSUL_HTTP_TOKEN_FILE"));
}

#[test]
fn explicit_token_wins_over_env() {
    let o = Overrides {
        token: Some("explicit-secret".into()),
        ..Overrides::default()
    };
    let c = ConsulConfig::from_sources(&env(&[("CONSUL_HTTP_TOKEN", SECRET)]), &o).unwrap();
    assert_eq!(c.token.as_ref().unwrap().secret.expose(), "explicit-secret");
    assert_eq!(c.token.as_ref().unwrap().source, TokenSource::Explicit);
}

#[test]
fn unreadable_and_empty_token_files_are_errors() {
    let err = ConsulConfig::from_sources(
        &env(&[("CONSUL_HTTP_TOKEN_FILE", "/nonexistent/mirra/token")]),
        &Overrides::default(),
    )
    .unwrap_err();
    assert!(matches!(err, ConfigError::TokenFileUnreadable { .. }));
    assert!(err.to_string().contains("/nonexistent/mirra/token"));

    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), "\n  \n").unwrap();
    let o = Overrides {
        token_file: Some(f.path().to_owned()),
        ..Overrides::default()
    };
    let err = ConsulConfig::from_sources(&env(&[]), &o).unwrap_err();
    assert!(matches!(err, ConfigError::TokenFileEmpty { .. }));
}

#[test]
fn token_with_newline_inside_is_refused_without_showing_it() {
    let o = Overrides {
        token: Some("abc\ndef-secret".into()),
        ..Overrides::default()
    };
    let err = ConsulConfig::from_sources(&env(&[]), &o).unwrap_err();
    assert!(matches!(err, ConfigError::TokenNotHeaderSafe { .. }));
    assert!(!err.to_string().contains("def-secret"));
    assert!(!format!("{err:?}").contains("def-secret"));
}

#[test]
fn secret_never_appears_in_debug_of_config_or_overrides() {
    let o = Overrides {
        token: Some(SECRET.into()),
        ..Overrides::default()
    };
    assert!(!format!("{o:?}").contains(SECRET));
    let c = ConsulConfig::from_sources(&env(&[]), &o).unwrap();
    let dbg = format!("{c:?}");
    assert!(!dbg.contains(SECRET), "{dbg}");
    assert!(dbg.contains("redacted"));
    assert!(!format!("{:#?}", c).contains(SECRET));
    assert!(!c.token_hint().contains(SECRET));
}

#[test]
fn go_bool_spellings() {
    for t in ["1", "t", "T", "TRUE", "true", "True"] {
        assert!(parse_bool("X", t).unwrap());
    }
    for f in ["0", "f", "F", "FALSE", "false", "False"] {
        assert!(!parse_bool("X", f).unwrap());
    }
    for bad in ["yes", "no", "tRuE", "2", ""] {
        assert!(parse_bool("X", bad).is_err());
    }
}

proptest! {
    #[test]
    fn address_parsing_never_panics(s in ".{0,64}") {
        let _ = parse_address(&s, false, "t");
        let _ = parse_address(&s, true, "t");
    }

    #[test]
    fn bool_parsing_never_panics(s in ".{0,16}") {
        let _ = parse_bool("X", &s);
    }

    #[test]
    fn host_port_round_trips(host in "[a-w][a-z0-9-]{0,20}(\\.[a-w][a-z0-9-]{0,10}){0,3}", port in 1u16..) {
        let u = parse_address(&format!("{host}:{port}"), false, "t").unwrap();
        prop_assert_eq!(u.scheme(), "http");
        prop_assert_eq!(u.host_str(), Some(host.as_str()));
        // The URL omits the port when it is the scheme's default.
        prop_assert_eq!(u.port_or_known_default(), Some(port));
    }
}
// ----- consul-k8s 1.x variables ------------------------------------------

#[test]
fn consul_addresses_with_port_and_tls() {
    let c = ConsulConfig::from_sources(
        &env(&[
            ("CONSUL_ADDRESSES", "consul-server.consul.svc"),
            ("CONSUL_HTTP_PORT", "8501"),
            ("CONSUL_USE_TLS", "true"),
        ]),
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(c.address.as_str(), "https://consul-server.consul.svc:8501/");
    assert_eq!(c.addresses, vec![c.address.clone()]);
}

#[test]
fn consul_addresses_ip_list_defaults_port_by_scheme() {
    let c = ConsulConfig::from_sources(
        &env(&[(
            "CONSUL_ADDRESSES",
            " 10.0.0.1, 10.0.0.2 ,,::1,[fd00::2],10.0.0.1",
        )]),
        &Overrides::default(),
    )
    .unwrap();
    let got: Vec<&str> = c.addresses.iter().map(Url::as_str).collect();
    assert_eq!(
        got,
        [
            "http://10.0.0.1:8500/",
            "http://10.0.0.2:8500/",
            "http://[::1]:8500/",
            "http://[fd00::2]:8500/"
        ]
    );
    let c = ConsulConfig::from_sources(
        &env(&[("CONSUL_ADDRESSES", "10.0.0.1"), ("CONSUL_USE_TLS", "1")]),
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(c.address.as_str(), "https://10.0.0.1:8501/");
}

#[test]
fn consul_addresses_wins_over_http_addr_and_the_flag_over_both() {
    let e = env(&[
        ("CONSUL_ADDRESSES", "10.0.0.1"),
        ("CONSUL_HTTP_ADDR", "10.9.9.9:8500"),
    ]);
    let c = ConsulConfig::from_sources(&e, &Overrides::default()).unwrap();
    assert_eq!(c.address.host_str(), Some("10.0.0.1"));
    let o = Overrides {
        address: Some("http://10.5.5.5:8500".into()),
        ..Overrides::default()
    };
    let c = ConsulConfig::from_sources(&e, &o).unwrap();
    assert_eq!(c.address.host_str(), Some("10.5.5.5"));
    assert!(c.addresses.is_empty());
}

#[test]
fn use_tls_applies_to_consul_addresses_not_to_http_addr() {
    let c = ConsulConfig::from_sources(
        &env(&[
            ("CONSUL_HTTP_ADDR", "10.9.9.9:8500"),
            ("CONSUL_USE_TLS", "true"),
        ]),
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(c.address.scheme(), "http");
}

#[test]
fn malformed_consul_addresses_are_refused() {
    for bad in [
        "exec=discover-servers",
        "10.0.0.1:8500",
        "http://consul",
        "consul/x",
        "-bad.example",
        "300.1.1.1",
        ",, ,",
    ] {
        let err =
            ConsulConfig::from_sources(&env(&[("CONSUL_ADDRESSES", bad)]), &Overrides::default())
                .unwrap_err();
        assert!(
            matches!(
                err,
                ConfigError::BadAddress {
                    origin: "CONSUL_ADDRESSES",
                    ..
                }
            ),
            "{bad}: {err}"
        );
        assert!(err.to_string().contains("CONSUL_ADDRESSES"), "{err}");
    }
}

#[test]
fn bad_http_port_is_an_error_even_without_addresses() {
    for bad in ["0", "65536", "-1", "85OO", "8500.0"] {
        let err =
            ConsulConfig::from_sources(&env(&[("CONSUL_HTTP_PORT", bad)]), &Overrides::default())
                .unwrap_err();
        assert!(
            matches!(
                err,
                ConfigError::BadPort {
                    name: "CONSUL_HTTP_PORT",
                    ..
                }
            ),
            "{bad}: {err}"
        );
        assert!(err.to_string().contains("CONSUL_HTTP_PORT"));
    }
    assert_eq!(parse_port("X", " 65535 ").unwrap(), 65535);
}

#[test]
fn bad_use_tls_is_an_error() {
    let err = ConsulConfig::from_sources(&env(&[("CONSUL_USE_TLS", "yes")]), &Overrides::default())
        .unwrap_err();
    assert!(matches!(
        err,
        ConfigError::BadBool {
            name: "CONSUL_USE_TLS",
            ..
        }
    ));
}

#[test]
fn api_timeout_is_a_go_duration() {
    let t = |v: &str| {
        ConsulConfig::from_sources(&env(&[("CONSUL_API_TIMEOUT", v)]), &Overrides::default())
    };
    assert_eq!(t("5s").unwrap().request_timeout, Duration::from_secs(5));
    assert_eq!(t("1m30s").unwrap().request_timeout, Duration::from_secs(90));
    // Zero means "the default", as in consul-k8s.
    assert_eq!(t("0").unwrap().request_timeout, DEFAULT_REQUEST_TIMEOUT);
    assert_eq!(
        ConsulConfig::from_sources(&env(&[]), &Overrides::default())
            .unwrap()
            .request_timeout,
        DEFAULT_REQUEST_TIMEOUT
    );
    for bad in ["5", "five", "-5s", "5x", "1.2.3s"] {
        let err = t(bad).unwrap_err();
        assert!(
            matches!(
                err,
                ConfigError::BadDuration {
                    name: "CONSUL_API_TIMEOUT",
                    ..
                }
            ),
            "{bad}: {err}"
        );
        assert!(err.to_string().contains("CONSUL_API_TIMEOUT"));
    }
}

#[test]
fn go_duration_syntax() {
    let ok = |s: &str, d: Duration| assert_eq!(parse_go_duration(s), Ok(d), "{s}");
    ok("0", Duration::ZERO);
    ok("+0", Duration::ZERO);
    ok("-0", Duration::ZERO);
    ok("5s", Duration::from_secs(5));
    ok("+5s", Duration::from_secs(5));
    ok("1m30s", Duration::from_secs(90));
    ok("1h2m3s4ms5us6ns", Duration::new(3723, 4_005_006));
    ok("1.5s", Duration::from_millis(1500));
    ok(".5s", Duration::from_millis(500));
    ok("1.s", Duration::from_secs(1));
    ok("2µs", Duration::from_micros(2));
    ok("2μs", Duration::from_micros(2));
    ok("0.000000001s", Duration::from_nanos(1));
    ok("0.0000000009s", Duration::ZERO);
    ok(
        "2562047h47m16.854775807s",
        Duration::from_nanos(i64::MAX.unsigned_abs()),
    );
    assert_eq!(parse_go_duration(""), Err(DurationError::Empty));
    assert_eq!(parse_go_duration("5"), Err(DurationError::MissingUnit));
    assert_eq!(parse_go_duration("1s5"), Err(DurationError::MissingUnit));
    assert_eq!(parse_go_duration("-1s"), Err(DurationError::Negative));
    assert_eq!(parse_go_duration("."), Err(DurationError::Syntax));
    assert_eq!(parse_go_duration("s"), Err(DurationError::Syntax));
    assert_eq!(parse_go_duration("+"), Err(DurationError::Syntax));
    assert_eq!(parse_go_duration(" 5s"), Err(DurationError::Syntax));
    assert_eq!(
        parse_go_duration("5d"),
        Err(DurationError::UnknownUnit("d".into()))
    );
    assert_eq!(
        parse_go_duration("2562047h47m16.854775808s"),
        Err(DurationError::Overflow)
    );
    assert_eq!(
        parse_go_duration("99999999999999999999999h"),
        Err(DurationError::Overflow)
    );
}

#[test]
fn consul_k8s_tokens_win_over_consul_http_tokens() {
    let mut acl_file = tempfile::NamedTempFile::new().unwrap();
    writeln!(acl_file, "acl-file-secret").unwrap();
    let acl_path = acl_file.path().to_str().unwrap().to_owned();
    let mut http_file = tempfile::NamedTempFile::new().unwrap();
    writeln!(http_file, "http-file-secret").unwrap();
    let http_path = http_file.path().to_str().unwrap().to_owned();
    let all = [
        ("CONSUL_ACL_TOKEN", "acl-secret"),
        ("CONSUL_ACL_TOKEN_FILE", acl_path.as_str()),
        ("CONSUL_HTTP_TOKEN_FILE", http_path.as_str()),
        ("CONSUL_HTTP_TOKEN", "http-secret"),
    ];
    let expected = [
        "acl-secret",
        "acl-file-secret",
        "http-file-secret",
        "http-secret",
    ];
    // Dropping the winner each time shows the whole order.
    for (i, want) in expected.iter().enumerate() {
        let c = ConsulConfig::from_sources(&env(&all[i..]), &Overrides::default()).unwrap();
        assert_eq!(c.token.as_ref().unwrap().secret.expose(), *want);
    }
    let c = ConsulConfig::from_sources(&env(&all), &Overrides::default()).unwrap();
    assert_eq!(c.token_hint(), "token from CONSUL_ACL_TOKEN");
    let c = ConsulConfig::from_sources(&env(&all[1..]), &Overrides::default()).unwrap();
    assert!(c.token_hint().contains("CONSUL_ACL_TOKEN_FILE"));
    // The flag still wins over all of them.
    let o = Overrides {
        token: Some("flag-secret".into()),
        ..Overrides::default()
    };
    let c = ConsulConfig::from_sources(&env(&all), &o).unwrap();
    assert_eq!(c.token.as_ref().unwrap().secret.expose(), "flag-secret");

    let err = ConsulConfig::from_sources(
        &env(&[("CONSUL_ACL_TOKEN_FILE", "/nonexistent/mirra/acl-token")]),
        &Overrides::default(),
    )
    .unwrap_err();
    assert!(matches!(err, ConfigError::TokenFileUnreadable { .. }));
    assert!(err.to_string().contains("CONSUL_ACL_TOKEN_FILE"));
}

#[test]
fn cacert_file_wins_over_cacert_and_the_flag_over_both() {
    let e = env(&[
        ("CONSUL_CACERT_FILE", "/k8s/ca.pem"),
        ("CONSUL_CACERT", "/cli/ca.pem"),
    ]);
    let c = ConsulConfig::from_sources(&e, &Overrides::default()).unwrap();
    assert_eq!(c.tls.ca_file.as_deref(), Some(Path::new("/k8s/ca.pem")));
    let o = Overrides {
        ca_file: Some("/flag/ca.pem".into()),
        ..Overrides::default()
    };
    let c = ConsulConfig::from_sources(&e, &o).unwrap();
    assert_eq!(c.tls.ca_file.as_deref(), Some(Path::new("/flag/ca.pem")));
}

#[test]
fn cacert_pem_is_read_and_a_ca_file_is_kept_beside_it() {
    let pem = "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n";
    let c = ConsulConfig::from_sources(&env(&[("CONSUL_CACERT_PEM", pem)]), &Overrides::default())
        .unwrap();
    // Variables are read trimmed; PEM parsing ignores the blanks.
    assert_eq!(c.tls.ca_pem.as_deref(), Some(pem.trim()));
    assert_eq!(c.tls.ca_file, None);
    let o = Overrides {
        ca_pem: Some("flag pem".into()),
        ..Overrides::default()
    };
    let c = ConsulConfig::from_sources(&env(&[("CONSUL_CACERT_PEM", pem)]), &o).unwrap();
    assert_eq!(c.tls.ca_pem.as_deref(), Some("flag pem"));
    // Both set: the file is used (the client's rule, as consul-k8s's).
    let c = ConsulConfig::from_sources(
        &env(&[
            ("CONSUL_CACERT_PEM", pem),
            ("CONSUL_CACERT_FILE", "/k8s/ca.pem"),
        ]),
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(c.tls.ca_file.as_deref(), Some(Path::new("/k8s/ca.pem")));
    // Its text never reaches a Debug rendering of the overrides.
    assert!(!format!("{o:?}").contains("flag pem"));
}

#[test]
fn datacenter_partition_and_server_name_from_consul_k8s_env() {
    let e = env(&[
        ("CONSUL_DATACENTER", "dc3"),
        ("CONSUL_PARTITION", "team-p"),
        ("CONSUL_TLS_SERVER_NAME", "server.dc3.consul"),
    ]);
    let c = ConsulConfig::from_sources(&e, &Overrides::default()).unwrap();
    assert_eq!(c.datacenter.as_deref(), Some("dc3"));
    assert_eq!(c.partition.as_deref(), Some("team-p"));
    assert_eq!(c.tls.server_name.as_deref(), Some("server.dc3.consul"));
    let o = Overrides {
        datacenter: Some("dc4".into()),
        ..Overrides::default()
    };
    let c = ConsulConfig::from_sources(&e, &o).unwrap();
    assert_eq!(c.datacenter.as_deref(), Some("dc4"));
}

#[test]
fn explicit_consul_k8s_values_win_over_the_environment() {
    let e = env(&[
        ("CONSUL_ADDRESSES", "10.0.0.1"),
        ("CONSUL_HTTP_PORT", "8500"),
        ("CONSUL_USE_TLS", "false"),
        ("CONSUL_API_TIMEOUT", "5s"),
    ]);
    let o = Overrides {
        addresses: Some("10.0.0.7,10.0.0.8".into()),
        http_port: Some(8501),
        use_tls: Some(true),
        api_timeout: Some(Duration::from_secs(20)),
        ..Overrides::default()
    };
    let c = ConsulConfig::from_sources(&e, &o).unwrap();
    let got: Vec<&str> = c.addresses.iter().map(Url::as_str).collect();
    assert_eq!(got, ["https://10.0.0.7:8501/", "https://10.0.0.8:8501/"]);
    assert_eq!(c.request_timeout, Duration::from_secs(20));
    // A zero timeout given explicitly falls back like the variable does.
    let o = Overrides {
        api_timeout: Some(Duration::ZERO),
        ..Overrides::default()
    };
    let c = ConsulConfig::from_sources(&e, &o).unwrap();
    assert_eq!(c.request_timeout, Duration::from_secs(5));
    let o = Overrides {
        http_port: Some(0),
        ..Overrides::default()
    };
    assert!(matches!(
        ConsulConfig::from_sources(&e, &o).unwrap_err(),
        ConfigError::BadPort { .. }
    ));
}

fn bearer_file(content: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    write!(f, "{content}").unwrap();
    f
}

#[test]
fn login_variables_are_read_when_an_auth_method_is_named() {
    let bearer = bearer_file("eyJhbGciOi.jwt.sig\n");
    let path = bearer.path().to_str().unwrap().to_owned();
    let c = ConsulConfig::from_sources(
        &env(&[
            (
                "CONSUL_LOGIN_AUTH_METHOD",
                "consul-k8s-component-auth-method",
            ),
            ("CONSUL_LOGIN_BEARER_TOKEN_FILE", path.as_str()),
            ("CONSUL_LOGIN_DATACENTER", "dc1"),
            ("CONSUL_LOGIN_PARTITION", "team-p"),
            ("CONSUL_LOGIN_NAMESPACE", "apps"),
            (
                "CONSUL_LOGIN_META",
                "component=sync-catalog,pod=consul/sync-0",
            ),
            ("CONSUL_DATACENTER", "dc2"),
        ]),
        &Overrides::default(),
    )
    .unwrap();
    let l = c.login.as_ref().unwrap();
    assert_eq!(l.auth_method, "consul-k8s-component-auth-method");
    assert_eq!(l.bearer_token_file, bearer.path());
    assert_eq!(l.datacenter.as_deref(), Some("dc1"));
    assert_eq!(l.partition.as_deref(), Some("team-p"));
    assert_eq!(l.namespace.as_deref(), Some("apps"));
    assert_eq!(
        l.meta,
        env(&[("component", "sync-catalog"), ("pod", "consul/sync-0")])
    );
    assert_eq!(
        l.read_bearer_token().unwrap().expose(),
        "eyJhbGciOi.jwt.sig"
    );
    // The login's datacenter is the login's only.
    assert_eq!(c.datacenter.as_deref(), Some("dc2"));
    assert_eq!(
        c.token_hint(),
        "token from login with auth method \"consul-k8s-component-auth-method\""
    );
    let shown = format!("{c:?}");
    assert!(!shown.contains("eyJhbGciOi"), "{shown}");
}

#[test]
fn the_bearer_token_file_defaults_to_the_service_account_token() {
    let l = LoginConfig::new("k8s");
    assert_eq!(
        l.bearer_token_file,
        Path::new("/var/run/secrets/kubernetes.io/serviceaccount/token")
    );
    // Outside a pod the default file is missing: an error naming the
    // variable that would fix it, at start.
    if !l.bearer_token_file.exists() {
        let err = ConsulConfig::from_sources(
            &env(&[("CONSUL_LOGIN_AUTH_METHOD", "k8s")]),
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(
            matches!(err, ConfigError::TokenFileUnreadable { .. }),
            "{err}"
        );
        let text = err.to_string();
        assert!(text.contains("CONSUL_LOGIN_BEARER_TOKEN_FILE"), "{text}");
        assert!(text.contains("serviceaccount/token"), "{text}");
    }
}

#[test]
fn a_login_wins_over_every_static_token_as_in_consul_k8s() {
    let bearer = bearer_file("jwt");
    let path = bearer.path().to_str().unwrap().to_owned();
    let e = env(&[
        ("CONSUL_LOGIN_AUTH_METHOD", "k8s"),
        ("CONSUL_LOGIN_BEARER_TOKEN_FILE", path.as_str()),
        ("CONSUL_ACL_TOKEN", "acl-secret"),
        // Not even read: a login does not use it.
        ("CONSUL_ACL_TOKEN_FILE", "/nonexistent/acl-token"),
        ("CONSUL_HTTP_TOKEN", "http-secret"),
    ]);
    let o = Overrides {
        token: Some("flag-secret".into()),
        ..Overrides::default()
    };
    let c = ConsulConfig::from_sources(&e, &o).unwrap();
    assert!(c.token.is_none());
    assert_eq!(c.login.as_ref().unwrap().auth_method, "k8s");
    // Without an auth method the login variables are ignored, however
    // malformed, and the static token is used.
    let c = ConsulConfig::from_sources(
        &env(&[
            ("CONSUL_LOGIN_META", "no-equals-sign"),
            ("CONSUL_LOGIN_BEARER_TOKEN_FILE", "/nonexistent/jwt"),
            ("CONSUL_ACL_TOKEN", "acl-secret"),
        ]),
        &Overrides::default(),
    )
    .unwrap();
    assert!(c.login.is_none());
    assert_eq!(c.token.unwrap().secret.expose(), "acl-secret");
    // An explicit auth method and file win over the variables.
    let other = bearer_file("other-jwt");
    let o = Overrides {
        login_auth_method: Some("explicit".into()),
        login_bearer_token_file: Some(other.path().to_owned()),
        login_meta: Some("a=1".into()),
        ..Overrides::default()
    };
    let c = ConsulConfig::from_sources(&e, &o).unwrap();
    let l = c.login.unwrap();
    assert_eq!(l.auth_method, "explicit");
    assert_eq!(l.bearer_token_file, other.path());
    assert_eq!(l.meta, env(&[("a", "1")]));
}

#[test]
fn unreadable_or_empty_bearer_token_files_are_errors_naming_the_variable() {
    let empty = bearer_file(" \n");
    let empty_path = empty.path().to_str().unwrap().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let dir_path = dir.path().to_str().unwrap().to_owned();
    for (path, want_empty) in [
        ("/nonexistent/mirra/jwt", false),
        (dir_path.as_str(), false),
        (empty_path.as_str(), true),
    ] {
        let err = ConsulConfig::from_sources(
            &env(&[
                ("CONSUL_LOGIN_AUTH_METHOD", "k8s"),
                ("CONSUL_LOGIN_BEARER_TOKEN_FILE", path),
            ]),
            &Overrides::default(),
        )
        .unwrap_err();
        if want_empty {
            assert!(matches!(err, ConfigError::TokenFileEmpty { .. }), "{err}");
        } else {
            assert!(
                matches!(err, ConfigError::TokenFileUnreadable { .. }),
                "{err}"
            );
        }
        let text = err.to_string();
        assert!(text.contains("CONSUL_LOGIN_BEARER_TOKEN_FILE"), "{text}");
        assert!(text.contains(path), "{text}");
    }
}

#[test]
fn login_meta_is_comma_separated_key_value_pairs() {
    let m = |v: &str| parse_login_meta(v).unwrap();
    assert_eq!(m(""), BTreeMap::new());
    assert_eq!(m("a=b"), env(&[("a", "b")]));
    assert_eq!(m(" a = b , c=d,"), env(&[("a", "b"), ("c", "d")]));
    assert_eq!(m("a=,b=2"), env(&[("a", ""), ("b", "2")]));
    assert_eq!(m("a=1,a=2"), env(&[("a", "2")]));
    assert_eq!(m("pod=ns/name-0"), env(&[("pod", "ns/name-0")]));
    for (bad, reason) in [
        ("novalue", "expected key=value"),
        ("a=b,oops", "expected key=value"),
        ("a=b=c", "more than one '='"),
        ("=v", "empty key"),
        (" =v", "empty key"),
    ] {
        let err = parse_login_meta(bad).unwrap_err();
        assert!(
            matches!(err, ConfigError::BadLoginMeta { .. }),
            "{bad}: {err}"
        );
        let text = err.to_string();
        assert!(text.contains("CONSUL_LOGIN_META"), "{text}");
        assert!(text.contains(reason), "{bad}: {text}");
    }
    let bearer = bearer_file("jwt");
    let path = bearer.path().to_str().unwrap().to_owned();
    let err = ConsulConfig::from_sources(
        &env(&[
            ("CONSUL_LOGIN_AUTH_METHOD", "k8s"),
            ("CONSUL_LOGIN_BEARER_TOKEN_FILE", path.as_str()),
            ("CONSUL_LOGIN_META", "component=sync-catalog,pod"),
        ]),
        &Overrides::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("\"pod\""), "{err}");
}

#[test]
fn a_login_over_plain_http_to_another_host_is_in_clear() {
    let mut c = ConsulConfig::new("http://10.0.0.5:8500").unwrap();
    c.login = Some(LoginConfig::new("k8s"));
    assert!(c.token_in_clear());
    c.address = parse_address("https://10.0.0.5:8501", false, "t").unwrap();
    assert!(!c.token_in_clear());
}

#[test]
fn an_empty_partition_is_not_kept() {
    for p in ["", "  "] {
        let c = ConsulConfig::from_sources(&env(&[("CONSUL_PARTITION", p)]), &Overrides::default())
            .unwrap();
        assert_eq!(c.partition, None);
        let o = Overrides {
            partition: Some(p.into()),
            ..Overrides::default()
        };
        let c = ConsulConfig::from_sources(&env(&[("CONSUL_PARTITION", "p2")]), &o).unwrap();
        assert_eq!(c.partition.as_deref(), Some("p2"));
    }
}

proptest! {
    #[test]
    fn go_duration_never_panics(s in "[-+0-9.hmsunµμd]{0,24}") {
        let _ = parse_go_duration(&s);
    }

    #[test]
    fn go_duration_never_panics_on_anything(s in ".{0,32}") {
        let _ = parse_go_duration(&s);
    }

    #[test]
    fn go_duration_reads_what_go_would_print(
        h in 0u64..10_000, m in 0u64..60, s in 0u64..60, ms in 0u64..1000,
    ) {
        let want = Duration::from_millis(((h * 60 + m) * 60 + s) * 1000 + ms);
        // Go's String() form: 1h2m3.004s, 3.004s, 4ms.
        let text = if h > 0 {
            format!("{h}h{m}m{s}.{ms:03}s")
        } else if m > 0 {
            format!("{m}m{s}.{ms:03}s")
        } else {
            format!("{s}.{ms:03}s")
        };
        prop_assert_eq!(parse_go_duration(&text), Ok(want));
        // The same sum in any split of units.
        let split = format!("{h}h{m}m{s}s{ms}ms");
        prop_assert_eq!(parse_go_duration(&split), Ok(want));
        let in_ms = format!("{}ms", want.as_millis());
        prop_assert_eq!(parse_go_duration(&in_ms), Ok(want));
    }

    #[test]
    fn login_meta_parsing_never_panics_and_keeps_what_it_accepts(s in "[a-z=, ]{0,40}") {
        if let Ok(meta) = parse_login_meta(&s) {
            for (k, v) in meta {
                prop_assert!(!k.is_empty() && !k.contains('=') && !k.contains(','));
                prop_assert!(!v.contains('=') && !v.contains(','));
            }
        }
    }

    #[test]
    fn addresses_parsing_never_panics(s in ".{0,64}", tls in any::<bool>(), port in 1u16..) {
        if let Ok(list) = parse_addresses(&s, tls, port) {
            for u in list {
                prop_assert_eq!(u.port_or_known_default(), Some(port));
            }
        }
    }
}
