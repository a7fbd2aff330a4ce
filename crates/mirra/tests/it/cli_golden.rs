//! Golden tests of what users see from the `mirra` binary: `mirra crds`,
//! `mirra render`, and the help texts. Regenerate the expected files with
//! `MIRRA_BLESS=1 cargo test -p mirra --test it cli_golden::` and review the diff.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn mirra(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mirra"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap()
}

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// Compares `actual` with the golden file, or rewrites it when blessing.
fn check(actual: &str, path: &Path) {
    if std::env::var_os("MIRRA_BLESS").is_some() {
        std::fs::write(path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with MIRRA_BLESS=1)", path.display()));
    assert_eq!(actual, expected, "{} differs", path.display());
}

fn stdout_of(args: &[&str]) -> String {
    let out = mirra(args);
    assert!(
        out.status.success(),
        "mirra {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn crds_prints_the_deployed_crd() {
    let deployed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/crd/syncconfig.yaml");
    let expected = std::fs::read_to_string(deployed).unwrap();
    assert_eq!(stdout_of(&["crds"]), expected);
}

#[test]
fn render_prints_the_copies_per_namespace() {
    let out = stdout_of(&[
        "render",
        "-f",
        "tests/golden/render-syncconfigs.yaml",
        "--namespaces",
        "tests/golden/render-namespaces.yaml",
    ]);
    // Only team-a is selected (team-legacy is ignored, other has no label).
    assert!(out.contains("namespace: team-a"), "{out}");
    assert!(!out.contains("namespace: team-legacy"), "{out}");
    assert!(!out.contains("namespace: other"), "{out}");
    assert!(out.contains("team-a-default-deny"), "{out}");
    check(&out, &golden("render.out.yaml"));
}

#[test]
fn render_reads_stdin() {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_mirra"))
        .args([
            "render",
            "-f",
            "-",
            "--namespaces",
            "tests/golden/render-namespaces.yaml",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let input = std::fs::read(golden("render-syncconfigs.yaml")).unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    check(
        &String::from_utf8(out.stdout).unwrap(),
        &golden("render.out.yaml"),
    );
}

#[test]
fn render_rejects_bad_input_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    let cases = [
        (
            "kind: SyncConfig\napiVersion: sync.appuio.ch/v1alpha1\nspec: [",
            "not valid YAML",
        ),
        (
            "apiVersion: sync.appuio.ch/v1alpha1\nkind: SyncConfig\nmetadata: {name: x}\nspec:\n  namespaceSelector: {matchNames: ['(']}\n",
            "invalid regular expression",
        ),
        (
            "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n",
            "is a Secret (v1)",
        ),
    ];
    for (text, want) in cases {
        std::fs::write(&bad, text).unwrap();
        let out = mirra(&[
            "render",
            "-f",
            bad.to_str().unwrap(),
            "--namespaces",
            "tests/golden/render-namespaces.yaml",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{text:?} was accepted");
        assert!(out.stdout.is_empty(), "{text:?} printed output");
        assert!(stderr.contains("error: "), "{stderr}");
        assert!(stderr.contains(want), "{text:?}: {stderr}");
    }
}

#[test]
fn help_texts() {
    check(&stdout_of(&["--help"]), &golden("help.txt"));
    check(
        &stdout_of(&["render", "--help"]),
        &golden("help-render.txt"),
    );
    check(&stdout_of(&["run", "--help"]), &golden("help-run.txt"));
    check(
        &stdout_of(&["sync-catalog", "--help"]),
        &golden("help-sync-catalog.txt"),
    );
}

/// A preview never takes the leader-election Lease: asking for both is
/// refused at start, before anything connects anywhere.
#[test]
fn a_dry_run_is_refused_with_leader_election() {
    let out = mirra(&[
        "run",
        "--dry-run",
        "--leader-elect",
        "--watch-namespace",
        "ops",
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--dry-run cannot be combined with --leader-elect"),
        "{stderr}"
    );
}

/// The chart runs `consul-k8s-control-plane sync-catalog ...` from its
/// shell; an image with a link of that name to mirra runs the same
/// command as `mirra sync-catalog ...`.
#[test]
fn consul_k8s_control_plane_link_is_sync_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("consul-k8s-control-plane");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_mirra"), &link).unwrap();
    let run = |args: &[&str]| Command::new(&link).args(args).output().unwrap();

    let via_link = run(&["sync-catalog", "--help"]);
    assert!(via_link.status.success());
    let direct = mirra(&["sync-catalog", "--help"]);
    // Only the program name in the usage line differs.
    assert_eq!(
        String::from_utf8_lossy(&via_link.stdout).replace(
            "consul-k8s-control-plane sync-catalog",
            "mirra sync-catalog"
        ),
        String::from_utf8_lossy(&direct.stdout)
    );

    // Unknown flags still fail, naming the flag, both ways; a setting
    // refused at start is refused the same way through the link (before
    // anything connects anywhere).
    for (flag, named) in [
        ("-no-such-flag=1", "no-such-flag"),
        ("-metrics-path=/custom", "-metrics-path"),
    ] {
        for out in [run(&["sync-catalog", flag]), mirra(&["sync-catalog", flag])] {
            assert!(!out.status.success(), "{flag}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.contains(named), "{flag}: {stderr}");
        }
    }
}

/// Every flag consul-k8s's Helm chart (1.0 on) renders into its
/// sync-catalog command, with the values a realistic install gives them,
/// parses; the check stops at the first thing needing a cluster (the
/// kubeconfig), so an unknown flag or value would show here first.
#[test]
fn every_flag_the_chart_renders_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-kubeconfig");
    let out = mirra(&[
        "sync-catalog",
        "-log-level=info",
        "-log-json=false",
        "-k8s-default-sync=true",
        "-to-consul=true",
        "-to-k8s=false",
        "-consul-domain=consul",
        "-k8s-service-prefix=k8s-",
        "-k8s-source-namespace=apps",
        "-allow-k8s-namespace=*",
        "-deny-k8s-namespace=kube-system",
        "-deny-k8s-namespace=kube-public",
        "-k8s-write-namespace=consul",
        "-sync-clusterip-services=false",
        "-node-port-sync-type=ExternalFirst",
        "-consul-write-interval=30s",
        "-consul-k8s-tag=k8s",
        "-consul-node-name=k8s-sync",
        "-partition=default",
        "-consul-service-prefix=k8s-",
        "-add-k8s-namespace-suffix",
        "-enable-namespaces=true",
        "-consul-destination-namespace=default",
        "-consul-cross-namespace-acl-policy=cross-namespace-policy",
        "-enable-ingress=true",
        "-loadBalancer-ips=true",
        "-enable-metrics=true",
        "-metrics-path=/metrics",
        "-metrics-port=20300",
        "-prometheus-retention-time=1m",
        "-grpc-port=8502",
        "-skip-server-watch=false",
        "-is-windows=false",
        "-filter=",
        "-namespace=",
        "-listen=127.0.0.1:0",
        "-kubeconfig",
        missing.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("-kubeconfig"), "{stderr}");
    assert!(!stderr.contains("unexpected argument"), "{stderr}");
}

/// Runs `mirra sandbox consul` with the given log flags until it logged
/// that it is ready, stops it and returns what it logged up to then.
fn sandbox_logs(args: &[&str]) -> String {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(env!("CARGO_BIN_EXE_mirra"))
        .args(["sandbox", "consul"])
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("NO_COLOR")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut text = String::new();
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        text.push_str(&line);
        text.push('\n');
        if line.contains("consul-sandbox ready") {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    text
}

#[test]
fn logs_to_a_pipe_carry_no_colour_codes() {
    let text = sandbox_logs(&[]);
    assert!(text.contains("consul-sandbox ready"), "{text}");
    assert!(!text.contains('\u{1b}'), "colour codes in {text:?}");
}

#[test]
fn json_logs_are_flat_objects_with_the_usual_keys() {
    let text = sandbox_logs(&["--log-json"]);
    let ready: serde_json::Value = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["message"] == "consul-sandbox ready")
        .unwrap_or_else(|| panic!("no ready line in {text}"));
    assert_eq!(ready["level"], "INFO");
    assert_eq!(ready["target"], "mirra::sandbox");
    assert!(
        ready["timestamp"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    // The event's fields sit beside the message, not under `fields`.
    assert!(
        ready["url"]
            .as_str()
            .is_some_and(|u| u.starts_with("http://"))
    );
    assert!(ready.get("fields").is_none());
}

/// `mirra sandbox kube --token` needs `--rbac` and the token file's line
/// form; both mistakes stop it at once, naming what is wrong.
#[test]
fn sandbox_tokens_need_rbac_and_their_form() {
    for (args, says) in [
        (&["sandbox", "kube", "--token", "t=alice"][..], "--rbac"),
        (
            &["sandbox", "kube", "--rbac", "--token", "alice"],
            "TOKEN=USER",
        ),
        (
            &["sandbox", "kube", "--rbac", "--token", "t="],
            "must not be empty",
        ),
    ] {
        let out = mirra(args);
        assert!(!out.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}
