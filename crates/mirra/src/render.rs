//! `mirra render` and `mirra crds`: offline commands that read manifests and
//! print YAML. They call the same planner as the controller
//! ([`mirra_mirror::render`]); this module only reads and sorts the input.
//!
//! What it must NOT do: talk to a cluster, or decide anything the planner
//! decides.

use std::io::Read;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::Namespace;
use mirra_mirror::SyncConfig;
use serde::Deserialize;
use serde_json::Value;

/// Why manifests could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file (or stdin) could not be read.
    #[error("{source_name}: {error}")]
    Io {
        /// The file name, or `-` for stdin.
        source_name: String,
        /// What the system said.
        error: std::io::Error,
    },
    /// A document is not valid YAML (or JSON).
    #[error("{source_name}: document {index}: not valid YAML: {error}")]
    Syntax {
        /// The file name.
        source_name: String,
        /// 1-based document number.
        index: usize,
        /// The parser's message, with line and column.
        error: String,
    },
    /// A document is valid YAML but not a usable object of the expected kind.
    #[error("{source_name}: document {index}: {message}")]
    Object {
        /// The file name.
        source_name: String,
        /// 1-based document number.
        index: usize,
        /// What is wrong with it.
        message: String,
    },
}

/// SyncConfigs and Namespaces read from manifests.
#[derive(Debug, Default)]
pub struct Manifests {
    /// Every SyncConfig found.
    pub configs: Vec<SyncConfig>,
    /// Every Namespace found.
    pub namespaces: Vec<Namespace>,
    /// Every other namespaced object: the sources copyItems may name.
    pub sources: Vec<Value>,
}

/// Reads `path` (`-` for stdin).
fn read_source(path: &Path) -> Result<String, LoadError> {
    let source_name = path.display().to_string();
    let result = if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).map(|_| text)
    } else {
        std::fs::read_to_string(path)
    };
    result.map_err(|error| LoadError::Io { source_name, error })
}

/// Adds the objects of one multi-document YAML text to `out`. `List`
/// documents (what `kubectl get -o yaml` prints) contribute their items.
pub fn parse_into(text: &str, source_name: &str, out: &mut Manifests) -> Result<(), LoadError> {
    for (i, doc) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let index = i + 1;
        let value = serde_yaml::Value::deserialize(doc).map_err(|e| LoadError::Syntax {
            source_name: source_name.into(),
            index,
            error: e.to_string(),
        })?;
        if value.is_null() {
            // An empty document (a trailing `---`, comments only).
            continue;
        }
        let value: Value = serde_json::to_value(&value).map_err(|e| LoadError::Object {
            source_name: source_name.into(),
            index,
            message: format!("cannot be read as a Kubernetes object: {e}"),
        })?;
        add_object(value, source_name, index, out)?;
    }
    Ok(())
}

fn add_object(
    value: Value,
    source_name: &str,
    index: usize,
    out: &mut Manifests,
) -> Result<(), LoadError> {
    let err = |message: String| LoadError::Object {
        source_name: source_name.into(),
        index,
        message,
    };
    let Some(kind) = value.get("kind").and_then(Value::as_str) else {
        return Err(err(
            "has no `kind`; expected a SyncConfig, a Namespace or a List".into(),
        ));
    };
    let api_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match (kind, api_version) {
        ("SyncConfig", "sync.appuio.ch/v1alpha1") => {
            let config: SyncConfig = serde_json::from_value(value)
                .map_err(|e| err(format!("not a valid SyncConfig: {e}")))?;
            out.configs.push(config);
        }
        ("Namespace", "v1") => {
            let ns: Namespace = serde_json::from_value(value)
                .map_err(|e| err(format!("not a valid Namespace: {e}")))?;
            out.namespaces.push(ns);
        }
        (k, _) if k.ends_with("List") => {
            let Some(items) = value.get("items").and_then(Value::as_array) else {
                return Err(err(format!("{k} without an `items` list")));
            };
            for item in items {
                add_object(item.clone(), source_name, index, out)?;
            }
        }
        _ if value
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty())
            && value
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty()) =>
        {
            out.sources.push(value);
        }
        (k, v) => {
            return Err(err(format!(
                "is a {k} ({v}) without metadata.namespace and metadata.name; expected a \
                 SyncConfig (sync.appuio.ch/v1alpha1), a Namespace (v1), the source object of \
                 a copyItem (with its namespace and name) or a List of them"
            )));
        }
    }
    Ok(())
}

/// Reads every file and renders what mirra would write.
pub fn render_files(files: &[PathBuf], namespaces: &[PathBuf]) -> anyhow::Result<String> {
    let mut manifests = Manifests::default();
    for path in files.iter().chain(namespaces) {
        let text = read_source(path)?;
        parse_into(&text, &path.display().to_string(), &mut manifests)?;
    }
    if manifests.configs.is_empty() {
        anyhow::bail!("no SyncConfig found in {}", join(files));
    }
    Ok(mirra_mirror::render(
        &manifests.configs,
        &manifests.namespaces,
        &manifests.sources,
    )?)
}

fn join(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Manifests, LoadError> {
        let mut m = Manifests::default();
        parse_into(text, "input.yaml", &mut m)?;
        Ok(m)
    }

    #[test]
    fn reads_configs_namespaces_and_lists() {
        let m = parse(
            "apiVersion: sync.appuio.ch/v1alpha1\nkind: SyncConfig\nmetadata: {name: a, namespace: ops}\n\
             spec: {namespaceSelector: {matchNames: [x]}}\n---\n\
             # only a comment\n---\n\
             apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: x}}\n\
             - {apiVersion: v1, kind: Namespace, metadata: {name: y}}\n",
        )
        .unwrap();
        assert_eq!(m.configs.len(), 1);
        assert_eq!(m.namespaces.len(), 2);
    }

    #[test]
    fn malformed_input_names_the_document() {
        let cases = [
            ("a: [unclosed", "document 1: not valid YAML"),
            (
                "apiVersion: v1\nkind: Namespace\n---\n{]",
                "document 2: not valid YAML",
            ),
            ("just a string", "has no `kind`"),
            (
                "{apiVersion: v1, kind: ConfigMap, metadata: {name: x}}",
                "is a ConfigMap (v1)",
            ),
            (
                "{apiVersion: sync.appuio.ch/v1, kind: SyncConfig, metadata: {name: x}}",
                "is a SyncConfig (sync.appuio.ch/v1)",
            ),
            (
                "{apiVersion: sync.appuio.ch/v1alpha1, kind: SyncConfig, metadata: {name: x}, spec: 3}",
                "not a valid SyncConfig",
            ),
            (
                "{apiVersion: v1, kind: Namespace, metadata: {name: [1]}}",
                "not a valid Namespace",
            ),
            (
                "{apiVersion: v1, kind: List}",
                "List without an `items` list",
            ),
            (
                "{? [1, 2] : x, kind: Namespace}",
                "cannot be read as a Kubernetes object",
            ),
        ];
        for (text, want) in cases {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.starts_with("input.yaml: "), "{text:?}: {e}");
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn missing_file_is_a_clear_error() {
        let e = render_files(&[PathBuf::from("/nonexistent/sc.yaml")], &[]).unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent/sc.yaml: "), "{e}");
    }

    #[test]
    fn no_syncconfig_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("ns.yaml");
        std::fs::write(&p, "{apiVersion: v1, kind: Namespace, metadata: {name: x}}").unwrap();
        let e = render_files(std::slice::from_ref(&p), &[]).unwrap_err();
        assert!(e.to_string().contains("no SyncConfig found"), "{e}");
    }
}
