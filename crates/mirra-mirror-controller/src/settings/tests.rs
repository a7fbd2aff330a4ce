#![allow(clippy::unwrap_used)]
use super::*;
use clap::Parser;

#[test]
fn the_default_write_timeout_fits_the_default_lease() {
    let lease = mirra_runtime::LeaderConfig::new("ns", "mirra-mirror", "me");
    assert!(DEFAULT_WRITE_TIMEOUT < lease.fence_budget());
}

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    run: RunArgs,
}

fn parse(args: &[&str]) -> RunArgs {
    Cli::try_parse_from(std::iter::once("mirra").chain(args.iter().copied()))
        .unwrap()
        .run
}

#[test]
fn default_scope_is_own_namespace_or_a_clear_error() {
    let args = parse(&[]);
    let s = Settings::from_args_with(&args, || Some("ops".into())).unwrap();
    assert_eq!(s.scope, WatchScope::Namespaces(["ops".to_string()].into()));
    let err = Settings::from_args_with(&args, || None).unwrap_err();
    assert_eq!(err, SettingsError::NoWatchNamespace);
    assert!(err.to_string().contains("--watch-namespace"));
    assert!(err.to_string().contains("--all-namespaces"));
}

#[test]
fn system_and_own_namespaces_are_protected_unless_lifted() {
    let s = Settings::from_args_with(&parse(&["--watch-namespace", "a"]), || {
        Some("mirra-system".into())
    })
    .unwrap();
    for ns in [
        "kube-system",
        "kube-public",
        "kube-node-lease",
        "mirra-system",
    ] {
        assert!(s.never_write.contains(ns), "{ns}");
    }
    let s = Settings::from_args_with(
        &parse(&[
            "--allow-write-namespace",
            "kube-public",
            "--never-write-namespace",
            "prod",
        ]),
        || Some("mirra-system".into()),
    )
    .unwrap();
    assert!(!s.never_write.contains("kube-public"));
    assert!(s.never_write.contains("prod") && s.never_write.contains("kube-system"));
}

#[test]
fn max_writes_per_pass_is_at_least_one() {
    let ok = Settings::from_args_with(&parse(&["--max-writes-per-pass", "7"]), || {
        Some("ops".into())
    })
    .unwrap();
    assert_eq!(ok.max_writes_per_pass, 7);
    let err = Settings::from_args_with(&parse(&["--max-writes-per-pass", "0"]), || {
        Some("ops".into())
    })
    .unwrap_err();
    assert_eq!(
        err,
        SettingsError::Invalid {
            flag: "--max-writes-per-pass",
            message: "must be at least 1".into()
        }
    );
    // Not a number: clap refuses it before the settings see it.
    let cli = Cli::try_parse_from(["mirra", "--max-writes-per-pass", "many"]);
    assert!(cli.is_err());
}

#[test]
fn limits_per_syncconfig_default_parse_and_refuse_zero_or_malformed() {
    let ok = |a: &[&str]| Settings::from_args_with(&parse(a), || Some("ops".into()));
    let defaults = ok(&[]).unwrap();
    assert_eq!(
        defaults.limits,
        mirra_mirror::Limits {
            max_copies: 20_000,
            max_bytes: 128 * 1024 * 1024
        }
    );
    assert_eq!(defaults.limits, Settings::new(WatchScope::All).limits);
    let s = ok(&[
        "--max-copies-per-syncconfig",
        "7",
        "--max-bytes-per-syncconfig",
        "3Gi",
    ])
    .unwrap();
    assert_eq!(s.limits.max_copies, 7);
    assert_eq!(s.limits.max_bytes, 3 << 30);
    for (flag, zero) in [
        ("--max-copies-per-syncconfig", "0"),
        ("--max-bytes-per-syncconfig", "0"),
        ("--max-bytes-per-syncconfig", "0Mi"),
    ] {
        assert_eq!(
            ok(&[flag, zero]).unwrap_err(),
            SettingsError::Invalid {
                flag,
                message: "must be at least 1".into()
            },
            "{flag} {zero}"
        );
    }
    // Malformed: clap refuses with the flag's name and the reason.
    for (flag, bad, says) in [
        ("--max-copies-per-syncconfig", "many", "invalid digit"),
        ("--max-copies-per-syncconfig", "-1", ""),
        ("--max-copies-per-syncconfig", "1e4", "invalid digit"),
        ("--max-bytes-per-syncconfig", "128MB", "unknown unit"),
        ("--max-bytes-per-syncconfig", "Mi", "not a number of bytes"),
        (
            "--max-bytes-per-syncconfig",
            "1.5Gi",
            "not a number of bytes",
        ),
        ("--max-bytes-per-syncconfig", "", "not a number of bytes"),
        ("--max-bytes-per-syncconfig", "17179869184Gi", "too large"),
        (
            "--max-bytes-per-syncconfig",
            "99999999999999999999",
            "too large",
        ),
    ] {
        let arg = format!("{flag}={bad}");
        let err = Cli::try_parse_from(["mirra", arg.as_str()])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains(flag), "{bad}: {err}");
        assert!(err.contains(says), "{bad}: {err}");
    }
}

proptest::proptest! {
    #[test]
    fn byte_counts_parse_exactly_or_fail(n in proptest::prelude::any::<u64>(), unit in 0usize..5) {
        let (suffix, shift) = [("", 0), ("Ki", 10), ("Mi", 20), ("Gi", 30), ("Ti", 40)][unit];
        let parsed = parse_bytes(&format!("{n}{suffix}"));
        let exact = u128::from(n) << shift;
        match u64::try_from(exact) {
            Ok(v) => proptest::prop_assert_eq!(parsed, Ok(v)),
            Err(_) => proptest::prop_assert!(parsed.is_err()),
        }
    }

    #[test]
    fn byte_counts_never_panic(v in "\\PC{0,12}") {
        let _ = parse_bytes(&v);
    }
}

#[test]
fn allowed_kinds_default_replace_and_wildcard() {
    let s = Settings::from_args_with(&parse(&[]), || Some("ops".into())).unwrap();
    assert_eq!(s.refuses_kind("", "ConfigMap"), None);
    assert_eq!(s.refuses_kind("networking.k8s.io", "NetworkPolicy"), None);
    let refused = s.refuses_kind("rbac.authorization.k8s.io", "Role").unwrap();
    assert!(
        refused.contains("--allow-kind Role.rbac.authorization.k8s.io"),
        "{refused}"
    );
    assert!(s.refuses_kind("", "ServiceAccount").is_some());
    let s = Settings::from_args_with(
        &parse(&[
            "--allow-kind",
            "Role.rbac.authorization.k8s.io",
            "--allow-kind",
            "ConfigMap",
        ]),
        || Some("ops".into()),
    )
    .unwrap();
    assert_eq!(s.refuses_kind("rbac.authorization.k8s.io", "Role"), None);
    // The list replaces the default.
    assert!(s.refuses_kind("", "Secret").is_some());
    let s =
        Settings::from_args_with(&parse(&["--allow-kind", "*"]), || Some("ops".into())).unwrap();
    assert_eq!(s.allowed_kinds, None);
    assert_eq!(s.refuses_kind("example.com", "Widget"), None);
}

#[test]
fn malformed_kind_names_are_clear_errors() {
    for bad in [
        "",
        "configmap",
        "Config Map",
        "Role.",
        "Role..x",
        "Role.Rbac",
        ".x",
        "Ro-le",
    ] {
        let err = Settings::from_args_with(&parse(&["--allow-kind", bad]), || Some("ops".into()))
            .unwrap_err();
        let SettingsError::Invalid { flag, message } = &err else {
            panic!("{bad:?}: {err:?}");
        };
        assert_eq!(*flag, "--allow-kind");
        assert!(
            message.contains(&format!("{:?}", bad.trim())),
            "{bad:?}: {message}"
        );
    }
    assert_eq!(
        parse_kind_name("NetworkPolicy.networking.k8s.io").unwrap(),
        ("networking.k8s.io".to_string(), "NetworkPolicy".to_string())
    );
    assert_eq!(kind_name("", "ConfigMap"), "ConfigMap");
}

proptest::proptest! {
    #[test]
    fn kind_names_never_panic_and_round_trip(v in "\\PC{0,30}") {
        if let Ok((group, kind)) = parse_kind_name(&v) {
            proptest::prop_assert_eq!(parse_kind_name(&kind_name(&group, &kind)).unwrap(), (group, kind));
        }
    }
}

#[test]
fn flags_are_honoured() {
    let args = parse(&[
        "--watch-namespace",
        "a",
        "--watch-namespace",
        "b",
        "--never-write-namespace",
        "kube-system",
        "--debounce-ms",
        "5",
        "--verify-interval-secs",
        "0",
    ]);
    let s = Settings::from_args_with(&args, || None).unwrap();
    assert_eq!(
        s.scope,
        WatchScope::Namespaces(["a".to_string(), "b".to_string()].into())
    );
    assert!(s.never_write.contains("kube-system"));
    assert_eq!(s.debounce, Duration::from_millis(5));
    assert_eq!(s.verify_interval, None);
    let all = Settings::from_args_with(&parse(&["--all-namespaces"]), || None).unwrap();
    assert_eq!(all.scope, WatchScope::All);
    assert!(Cli::try_parse_from(["mirra", "--all-namespaces", "--watch-namespace", "a"]).is_err());
    assert!(Settings::from_args_with(&parse(&["--workers", "0"]), || Some("a".into())).is_err());
}

#[test]
fn retry_flags_are_honoured_and_checked() {
    let ok = |a: &[&str]| Settings::from_args_with(&parse(a), || Some("ops".into()));
    let defaults = ok(&[]).unwrap();
    assert_eq!(defaults.permanent_retry_base, Duration::from_secs(30));
    assert_eq!(defaults.permanent_retry_cap, Duration::from_secs(300));
    assert_eq!(defaults.watch_retry_base, Duration::from_millis(800));
    assert_eq!(defaults.watch_retry_cap, Duration::from_secs(30));
    assert!(defaults.startup_sweep);
    let s = ok(&[
        "--permanent-retry-initial-secs",
        "5",
        "--permanent-retry-max-secs",
        "60",
        "--watch-retry-initial-ms",
        "100",
        "--watch-retry-max-ms",
        "2000",
        "--no-startup-sweep",
    ])
    .unwrap();
    assert_eq!(s.permanent_retry_base, Duration::from_secs(5));
    assert_eq!(s.permanent_retry_cap, Duration::from_secs(60));
    assert_eq!(s.watch_retry_base, Duration::from_millis(100));
    assert_eq!(s.watch_retry_cap, Duration::from_secs(2));
    assert!(!s.startup_sweep);
    let invalid = |a: &[&str]| ok(a).unwrap_err();
    assert_eq!(
        invalid(&["--permanent-retry-initial-secs", "0"]),
        SettingsError::Invalid {
            flag: "--permanent-retry-initial-secs",
            message: "must be at least 1".into()
        }
    );
    assert_eq!(
        invalid(&[
            "--watch-retry-initial-ms",
            "5000",
            "--watch-retry-max-ms",
            "10"
        ]),
        SettingsError::Invalid {
            flag: "--watch-retry-max-ms",
            message: "must be at least --watch-retry-initial-ms".into()
        }
    );
    assert_eq!(
        invalid(&["--permanent-retry-max-secs", "1"]).to_string(),
        "invalid flag --permanent-retry-max-secs: must be at least \
         --permanent-retry-initial-secs"
    );
    // Not a number, negative, overflowing: clap refuses with the flag's name.
    for bad in ["x", "-1", "99999999999999999999999"] {
        let arg = format!("--watch-retry-max-ms={bad}");
        let err = Cli::try_parse_from(["mirra", arg.as_str()])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("--watch-retry-max-ms"), "{bad}: {err}");
    }
}

#[test]
fn own_namespace_sources() {
    let dir = std::env::temp_dir().join(format!("mirra-ns-{}", std::process::id()));
    std::fs::write(&dir, "from-file\n").unwrap();
    assert_eq!(
        own_namespace(Some("env".into()), &dir).as_deref(),
        Some("env")
    );
    assert_eq!(own_namespace(None, &dir).as_deref(), Some("from-file"));
    assert_eq!(
        own_namespace(Some(" ".into()), Path::new("/nonexistent")),
        None
    );
    let _ = std::fs::remove_file(&dir);
}

#[test]
fn tenant_namespaces_are_honoured_watched_and_checked() {
    let s = Settings::from_args_with(
        &parse(&[
            "--watch-namespace",
            "ops",
            "--tenant-namespace",
            "team-a",
            "--tenant-namespace",
            " team-b ",
        ]),
        || None,
    )
    .unwrap();
    assert_eq!(
        s.tenant_namespaces,
        ["team-a".to_string(), "team-b".to_string()].into()
    );
    assert!(s.honours("ops") && s.honours("team-a") && !s.honours("other"));
    assert_eq!(
        s.config_watch_namespaces(),
        vec![
            Some("ops".to_string()),
            Some("team-a".to_string()),
            Some("team-b".to_string())
        ]
    );
    let none = Settings::from_args_with(&parse(&["--watch-namespace", "ops"]), || None).unwrap();
    assert!(none.tenant_namespaces.is_empty() && !none.honours("team-a"));
    let err = Settings::from_args_with(
        &parse(&["--watch-namespace", "ops", "--tenant-namespace", " "]),
        || None,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("--tenant-namespace") && err.contains("empty"),
        "{err}"
    );
}
