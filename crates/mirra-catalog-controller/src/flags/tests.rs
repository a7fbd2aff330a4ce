//! The command line: parsing, defaults, environment and bad input.

use super::*;
use clap::Parser;
use proptest::prelude::*;

#[test]
fn the_default_write_timeouts_fit_the_default_lease() {
    let lease = mirra_runtime::LeaderConfig::new("ns", "mirra-sync-catalog", "me");
    assert!(DEFAULT_KUBE_WRITE_TIMEOUT < lease.fence_budget());
    assert!(mirra_consul::config::DEFAULT_REQUEST_TIMEOUT < lease.fence_budget());
}

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: SyncCatalogArgs,
}

fn parse(args: &[&str]) -> Result<SyncCatalogArgs, clap::Error> {
    let mut v: Vec<OsString> = vec!["x".into()];
    v.extend(normalize_flags(args.iter().map(OsString::from).collect()));
    Cli::try_parse_from(v).map(|c| c.args)
}

#[test]
fn normalize_rewrites_single_dash_only() {
    // (given, after normalising)
    let cases = [
        ("-k8s-default-sync=false", "--k8s-default-sync=false"),
        ("-consul-node-name", "--consul-node-name"),
        ("foo", "foo"),
        ("--to-k8s=false", "--to-k8s=false"),
        ("-h", "-h"),
        ("-1", "-1"),
        ("--", "--"),
        ("-x-y", "-x-y"),
    ];
    let got = normalize_flags(
        cases
            .iter()
            .map(|(given, _)| OsString::from(given))
            .collect(),
    );
    let want: Vec<OsString> = cases
        .iter()
        .map(|(_, after)| OsString::from(after))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn consul_k8s_connection_flags_reach_the_consul_settings() {
    let a = parse(&[
        "-addresses=10.0.0.7,10.0.0.8",
        "-http-port",
        "8501",
        "-use-tls",
        "-api-timeout=1m30s",
        "-partition",
        "p1",
        "-ca-cert-file",
        "/k8s/ca.pem",
        "-datacenter=dc2",
    ])
    .unwrap();
    let c = ConsulConfig::from_sources(&Default::default(), &a.consul_overrides()).unwrap();
    let got: Vec<&str> = c.addresses.iter().map(|u| u.as_str()).collect();
    assert_eq!(got, ["https://10.0.0.7:8501/", "https://10.0.0.8:8501/"]);
    assert_eq!(c.request_timeout, Duration::from_secs(90));
    assert_eq!(c.partition.as_deref(), Some("p1"));
    assert_eq!(c.datacenter.as_deref(), Some("dc2"));
    assert_eq!(
        c.tls.ca_file.as_deref(),
        Some(std::path::Path::new("/k8s/ca.pem"))
    );
    // -ca-file wins over -ca-cert-file; -http-addr over -addresses.
    let a = parse(&[
        "-ca-file=/a.pem",
        "-ca-cert-file=/b.pem",
        "-addresses=10.0.0.7",
        "-http-addr=127.0.0.1:8500",
    ])
    .unwrap();
    let c = ConsulConfig::from_sources(&Default::default(), &a.consul_overrides()).unwrap();
    assert_eq!(
        c.tls.ca_file.as_deref(),
        Some(std::path::Path::new("/a.pem"))
    );
    assert!(c.addresses.is_empty());
    assert_eq!(c.address.host_str(), Some("127.0.0.1"));
    for bad in [
        &["-http-port=0"][..],
        &["-http-port=65536"],
        &["-use-tls=yes"],
        &["-api-timeout=5"],
    ] {
        assert!(parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn consul_k8s_login_flags_reach_the_consul_settings() {
    let bearer = std::env::temp_dir().join(format!("mirra-flags-jwt-{}", std::process::id()));
    std::fs::write(&bearer, "jwt").unwrap();
    let path = bearer.to_str().unwrap().to_owned();
    let a = parse(&[
        "-auth-method-name=consul-k8s-component-auth-method",
        "-consul-login-bearer-token-file",
        &path,
        "-consul-login-datacenter=dc1",
        "-consul-login-partition=p1",
        "-consul-login-namespace=ns1",
        "-consul-login-meta=component=sync-catalog",
        "-consul-login-meta",
        "pod=consul/sync-0",
        "-token=static",
    ])
    .unwrap();
    let c = ConsulConfig::from_sources(&Default::default(), &a.consul_overrides()).unwrap();
    let l = c.login.unwrap();
    assert_eq!(l.auth_method, "consul-k8s-component-auth-method");
    assert_eq!(l.bearer_token_file, bearer);
    assert_eq!(
        (
            l.datacenter.as_deref(),
            l.partition.as_deref(),
            l.namespace.as_deref()
        ),
        (Some("dc1"), Some("p1"), Some("ns1"))
    );
    assert_eq!(l.meta.len(), 2);
    assert_eq!(l.meta["pod"], "consul/sync-0");
    assert!(
        c.token.is_none(),
        "a login wins over -token, as in consul-k8s"
    );
    let a = parse(&[
        "-auth-method-name=m",
        "-consul-login-bearer-token-file",
        &path,
        "-consul-login-meta=novalue",
    ])
    .unwrap();
    let err = ConsulConfig::from_sources(&Default::default(), &a.consul_overrides())
        .unwrap_err()
        .to_string();
    assert!(err.contains("\"novalue\""), "{err}");
    std::fs::remove_file(&bearer).unwrap();
}

#[test]
fn both_spellings_parse_the_same() {
    let a = parse(&[
        "-k8s-default-sync=false",
        "-consul-node-name",
        "c1",
        "-allow-k8s-namespace=*",
        "-allow-k8s-namespace",
        "apps",
        "-deny-k8s-namespace=kube-system",
        "-add-k8s-namespace-suffix",
        "-consul-write-interval=1m30s",
        "-node-port-sync-type=ExternalFirst",
    ])
    .unwrap();
    let b = parse(&[
        "--k8s-default-sync=false",
        "--consul-node-name=c1",
        "--allow-k8s-namespace",
        "*",
        "--allow-k8s-namespace=apps",
        "--deny-k8s-namespace",
        "kube-system",
        "--add-k8s-namespace-suffix=true",
        "--consul-write-interval",
        "90s",
        "--node-port-sync-type",
        "ExternalFirst",
    ])
    .unwrap();
    let (sa, sb) = (
        Settings::from_args(&a).unwrap(),
        Settings::from_args(&b).unwrap(),
    );
    assert_eq!(sa.sync, sb.sync);
    assert!(!sa.sync.k8s_default_sync);
    assert!(sa.sync.add_k8s_namespace_suffix);
    assert_eq!(sa.sync.consul_node_name, "c1");
    assert_eq!(sa.verify_interval, Duration::from_secs(90));
    assert_eq!(sa.sync.node_port_sync_type, NodePortSyncType::ExternalFirst);
    assert!(sa.sync.namespace_allowed("x"));
    assert!(!sa.sync.namespace_allowed("kube-system"));
}

#[test]
fn defaults_are_consul_k8s_binary_defaults() {
    let s = Settings::from_args(&parse(&[]).unwrap()).unwrap();
    assert_eq!(s.sync, SyncSettings::default());
    assert_eq!(s.txn_batch, 128);
    assert_eq!(s.verify_interval, Duration::from_secs(30));
}

#[test]
fn bad_values_are_clear_errors() {
    assert!(parse(&["-k8s-default-sync=maybe"]).is_err());
    assert!(parse(&["-consul-write-interval=soon"]).is_err());
    let e = Settings::from_args(&parse(&["-consul-node-name=bad_name"]).unwrap()).unwrap_err();
    assert!(e.to_string().contains("-consul-node-name"), "{e}");
    let e = Settings::from_args(&parse(&["-node-port-sync-type=Both"]).unwrap()).unwrap_err();
    assert!(e.to_string().contains("node-port-sync-type"), "{e}");
    let e = Settings::from_args(&parse(&["-txn-batch-size=0"]).unwrap()).unwrap_err();
    assert!(matches!(e, SettingsError::TxnBatch(0)));
    // Above Consul's largest limit, 128, and not a count at all.
    let e = Settings::from_args(&parse(&["-txn-batch-size=129"]).unwrap()).unwrap_err();
    assert!(matches!(e, SettingsError::TxnBatch(129)));
    for bad in ["-1", "many", ""] {
        let arg = format!("-txn-batch-size={bad}");
        assert!(parse(&[arg.as_str()]).is_err(), "{arg}");
    }
    assert_eq!(
        Settings::from_args(&parse(&["-txn-batch-size=64"]).unwrap())
            .unwrap()
            .txn_batch,
        64
    );
    let e = Settings::from_args(&parse(&["-consul-write-interval=0"]).unwrap()).unwrap_err();
    assert!(matches!(e, SettingsError::WriteInterval));
    let e =
        Settings::from_args(&parse(&["-debounce=2s", "-max-debounce=1s"]).unwrap()).unwrap_err();
    assert!(matches!(e, SettingsError::Debounce { .. }));
    for bad in ["0", "33", "-1", "many", ""] {
        let arg = format!("-txn-concurrency={bad}");
        assert!(parse(&[arg.as_str()]).is_err(), "{arg}");
    }
    let s = Settings::from_args(&parse(&["-txn-concurrency=1"]).unwrap()).unwrap();
    assert_eq!(s.txn_concurrency, 1);
    let s = Settings::from_args(&parse(&[]).unwrap()).unwrap();
    assert_eq!(s.txn_concurrency, usize::from(DEFAULT_TXN_CONCURRENCY));
}

#[test]
fn dry_run_in_every_spelling_and_never_with_a_purge() {
    let s = Settings::from_args(&parse(&[]).unwrap()).unwrap();
    assert!(s.preview.is_none());
    for args in [
        &["-dry-run"][..],
        &["-dry-run=true"],
        &["--dry-run"],
        &["--dry-run=true"],
    ] {
        let s = Settings::from_args(&parse(args).unwrap()).unwrap();
        assert_eq!(
            s.preview.map(|p| p.controller()),
            Some("catalog"),
            "{args:?}"
        );
    }
    let s = Settings::from_args(&parse(&["-dry-run=false"]).unwrap()).unwrap();
    assert!(s.preview.is_none());
    assert!(parse(&["-dry-run=maybe"]).is_err());
    let e = Settings::from_args(&parse(&["-dry-run", "-purge-k8s-services-from-node"]).unwrap())
        .unwrap_err();
    assert!(matches!(e, SettingsError::DryRunPurge), "{e}");
    assert!(
        e.to_string().contains("-purge-k8s-services-from-node"),
        "{e}"
    );
}

#[test]
fn port_layout_flag_in_both_spellings_and_its_default() {
    let s = Settings::from_args(&parse(&[]).unwrap()).unwrap();
    assert_eq!(s.sync.port_layout, PortLayout::Single);
    for args in [
        &["-port-layout=multi"][..],
        &["-port-layout", "multi"],
        &["--port-layout=multi"],
        &["--port-layout", "multi"],
    ] {
        let s = Settings::from_args(&parse(args).unwrap()).unwrap();
        assert_eq!(s.sync.port_layout, PortLayout::Multi, "{args:?}");
    }
    let s = Settings::from_args(&parse(&["-port-layout=single"]).unwrap()).unwrap();
    assert_eq!(s.sync.port_layout, PortLayout::Single);
}

#[test]
fn bad_port_layout_is_a_clap_error_naming_the_flag_and_the_values() {
    for bad in ["Multi", "both", "single,multi", " single"] {
        let arg = format!("-port-layout={bad}");
        let e = parse(&[arg.as_str()])
            .err()
            .unwrap_or_else(|| panic!("{arg} accepted"));
        assert_eq!(e.kind(), clap::error::ErrorKind::InvalidValue, "{arg}");
        let text = e.to_string();
        assert!(
            text.contains(&format!(
                "invalid value '{bad}' for '--port-layout <PORT_LAYOUT>'"
            )),
            "{text}"
        );
        assert!(text.contains("[possible values: single, multi]"), "{text}");
    }
    // An empty or missing value is refused too, not read as the default.
    for args in [&["-port-layout="][..], &["-port-layout"]] {
        let text = parse(args).expect_err("refused").to_string();
        assert!(
            text.contains("a value is required for '--port-layout <PORT_LAYOUT>'"),
            "{text}"
        );
        assert!(text.contains("[possible values: single, multi]"), "{text}");
    }
}

#[test]
fn go_durations() {
    assert_eq!(go_duration("30s"), Ok(Duration::from_secs(30)));
    assert_eq!(go_duration("1h2m3s"), Ok(Duration::from_secs(3723)));
    assert_eq!(go_duration("250ms"), Ok(Duration::from_millis(250)));
    assert_eq!(go_duration("0"), Ok(Duration::ZERO));
    for bad in ["", "s", "10", "1x", "-1s", "1.5s"] {
        assert!(go_duration(bad).is_err(), "{bad}");
    }
}

proptest! {
    #[test]
    fn normalize_is_idempotent_and_total(args in proptest::collection::vec("[-=a-zA-Z0-9 ]{0,12}", 0..8)) {
        let input: Vec<OsString> = args.iter().map(OsString::from).collect();
        let once = normalize_flags(input.clone());
        prop_assert_eq!(once.len(), input.len());
        let twice = normalize_flags(once.clone());
        prop_assert_eq!(&once, &twice);
        for (a, b) in input.iter().zip(&once) {
            // Only ever a dash is prepended.
            let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
            let prefixed = format!("-{}", a);
            prop_assert!(a == b || prefixed == b);
        }
    }
}
