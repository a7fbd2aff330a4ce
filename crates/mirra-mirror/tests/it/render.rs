//! Offline render: golden files and error cases.
//!
//! Each `tests/golden/<case>.input.yaml` holds SyncConfigs and Namespaces;
//! `<case>.output.yaml` is the expected render. `MIRRA_BLESS=1 cargo test -p
//! mirra-mirror --test it render::` rewrites the outputs.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests may unwrap: a panic is a test failure.

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::Namespace;
use mirra_mirror::{RenderError, SyncConfig, render};
use serde::Deserialize;

fn golden_dir() -> PathBuf {
    std::fs::canonicalize(env!("CARGO_MANIFEST_DIR"))
        .unwrap()
        .join("tests/golden")
}

fn load(path: &Path) -> (Vec<SyncConfig>, Vec<Namespace>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut configs = Vec::new();
    let mut namespaces = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(&text) {
        let value = serde_json::Value::deserialize(doc).unwrap();
        match value["kind"].as_str() {
            Some("SyncConfig") => configs.push(serde_json::from_value(value).unwrap()),
            Some("Namespace") => namespaces.push(serde_json::from_value(value).unwrap()),
            other => panic!("{}: unexpected kind {other:?}", path.display()),
        }
    }
    (configs, namespaces)
}

#[test]
fn golden_renders() {
    let bless = std::env::var_os("MIRRA_BLESS").is_some();
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(golden_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".input.yaml"))
        .collect();
    inputs.sort();
    assert!(inputs.len() >= 2, "golden inputs missing");
    for input in inputs {
        let output = PathBuf::from(
            input
                .to_string_lossy()
                .replace(".input.yaml", ".output.yaml"),
        );
        let (configs, namespaces) = load(&input);
        let rendered = render(&configs, &namespaces, &[]).unwrap();
        if bless {
            std::fs::write(&output, &rendered).unwrap();
        }
        let expected = std::fs::read_to_string(&output)
            .unwrap_or_else(|e| panic!("{}: {e}; run with MIRRA_BLESS=1", output.display()));
        assert!(
            expected == rendered,
            "{} differs from the render:\n{rendered}",
            output.display()
        );
    }
}

#[test]
fn render_is_independent_of_input_order() {
    let (mut configs, mut namespaces) = load(&golden_dir().join("basic.input.yaml"));
    let a = render(&configs, &namespaces, &[]).unwrap();
    configs.reverse();
    namespaces.reverse();
    namespaces.push(namespaces[0].clone());
    assert_eq!(render(&configs, &namespaces, &[]).unwrap(), a);
}

#[test]
fn basic_render_shows_selection_conflict_and_normalisation() {
    let (configs, namespaces) = load(&golden_dir().join("basic.input.yaml"));
    let out = render(&configs, &namespaces, &[]).unwrap();
    assert!(!out.contains("team-secret"), "ignored namespace rendered");
    assert!(!out.contains("namespace: unrelated"));
    assert!(out.contains("namespace: billing"));
    assert!(
        !out.contains("owner: late-comer"),
        "the younger config lost the conflict"
    );
    assert!(out.contains("hello: team-a"));
    assert!(!out.contains("stringData"));
    assert!(out.contains("cpu: 1.5"));
    assert!(out.contains("limit: 9007199254740993"));
}

fn config_yaml(spec: &str) -> SyncConfig {
    serde_yaml::from_str(&format!(
        "apiVersion: sync.appuio.ch/v1alpha1\nkind: SyncConfig\nmetadata: {{name: c}}\nspec:\n{spec}"
    ))
    .unwrap()
}

fn namespace(name: &str) -> Namespace {
    serde_yaml::from_str(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {name}}}"
    ))
    .unwrap()
}

#[test]
fn invalid_configs_fail_the_render_with_paths() {
    let c = config_yaml(
        "  namespaceSelector: {matchNames: ['(']}\n  syncItems: [{apiVersion: v1, kind: ConfigMap}]\n",
    );
    let err = render(&[c], &[namespace("a")], &[]).unwrap_err();
    let RenderError::InvalidConfig { config, errors } = &err else {
        panic!("{err}")
    };
    assert_eq!(config, "default/c");
    let paths: Vec<&str> = errors.iter().map(|e| e.path()).collect();
    assert_eq!(
        paths,
        [
            "spec.namespaceSelector.matchNames[0]",
            "spec.syncItems[0].metadata.name"
        ]
    );
    assert!(err.to_string().contains("spec.syncItems[0].metadata.name"));
}

#[test]
fn an_item_that_cannot_be_written_fails_the_render() {
    let c = config_yaml(
        "  namespaceSelector: {matchNames: ['.*']}\n  syncItems: [{apiVersion: v1, kind: Service, metadata: {name: '${PROJECT_NAME}'}}]\n",
    );
    let err = render(&[c], &[namespace("web"), namespace("9lives")], &[]).unwrap_err();
    let RenderError::ItemFailed { namespace, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(namespace, "9lives");
}

#[test]
fn nothing_selected_renders_nothing() {
    let c = config_yaml(
        "  namespaceSelector: {matchNames: [nothing]}\n  syncItems: [{apiVersion: v1, kind: ConfigMap, metadata: {name: x}}]\n",
    );
    assert_eq!(render(&[c], &[namespace("a")], &[]).unwrap(), "");
    assert_eq!(render(&[], &[], &[]).unwrap(), "");
}
