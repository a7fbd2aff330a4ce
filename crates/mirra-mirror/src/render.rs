//! Offline render: what mirra would write into each namespace, as
//! deterministic multi-document YAML, for `mirra render` and for reviewing a
//! SyncConfig change before it reaches a cluster.
//!
//! It runs the same planner as the controller, with nothing observed, so the
//! output is exactly the apply bodies (marks and hash included), ordered by
//! namespace, then API group, kind and name. Deletions are not shown: with
//! nothing observed there is nothing to delete. The sources of copyItems
//! are taken from the objects given beside the SyncConfigs; a source not
//! given is missing, as it would be in a cluster without it.
//!
//! What this module must NOT do: read files or talk to a cluster; the caller
//! parses the manifests and prints the result.

use k8s_openapi::api::core::v1::Namespace;

use serde_json::Value;

use crate::compile::{CompiledConfig, SourceState};
use crate::error::RenderError;
use crate::plan::{ObservedSet, Op, OutcomeState, plan_namespace};
use crate::refs::{ObjectRef, group_of};
use crate::resource::SyncConfig;
use crate::selector::NamespaceView;

/// The namespace a SyncConfig without `metadata.namespace` is taken to live
/// in, as `kubectl apply` would place it with a default context.
pub const DEFAULT_NAMESPACE: &str = "default";

/// Renders what `configs` would write into `namespaces`, with `sources`
/// the objects copyItems may name.
///
/// Fails on the first invalid SyncConfig (in `namespace/name` order) and on
/// any item that cannot be written to some namespace, because the controller
/// would refuse them too. Conflicts are not errors: the winner is rendered.
pub fn render(
    configs: &[SyncConfig],
    namespaces: &[Namespace],
    sources: &[Value],
) -> Result<String, RenderError> {
    let lookup = |wanted: &ObjectRef| {
        let field = |o: &Value, p: &str| o.pointer(p).and_then(Value::as_str).map(str::to_string);
        sources
            .iter()
            .find(|o| {
                field(o, "/kind").as_deref() == Some(wanted.kind.as_str())
                    && field(o, "/apiVersion")
                        .is_some_and(|v| group_of(&v) == group_of(&wanted.api_version))
                    && field(o, "/metadata/namespace").as_deref() == Some(wanted.namespace.as_str())
                    && field(o, "/metadata/name").as_deref() == Some(wanted.name.as_str())
            })
            .map_or(SourceState::Missing, SourceState::Found)
    };
    let mut compiled: Vec<CompiledConfig> = configs
        .iter()
        .map(|c| {
            let mut c = c.clone();
            if c.metadata.namespace.as_deref().is_none_or(str::is_empty) {
                c.metadata.namespace = Some(DEFAULT_NAMESPACE.into());
            }
            let mut compiled = CompiledConfig::compile(&c);
            compiled.resolve_sources(&lookup);
            compiled
        })
        .collect();
    compiled.sort_by(|a, b| a.key.cmp(&b.key));
    if let Some(bad) = compiled.iter().find(|c| !c.is_valid()) {
        return Err(RenderError::InvalidConfig {
            config: bad.key.to_string(),
            errors: bad.errors().to_vec(),
        });
    }
    let mut views: Vec<NamespaceView<'_>> = namespaces
        .iter()
        .map(NamespaceView::from_namespace)
        .collect();
    views.sort_by(|a, b| a.name.cmp(b.name));
    views.dedup_by(|a, b| a.name == b.name);
    let empty = ObservedSet::new();
    let mut out = String::new();
    for ns in &views {
        let plan = plan_namespace(Some(ns), &compiled, &empty, &|_| false);
        if let Some(failed) = plan.outcomes.iter().find_map(|o| match &o.state {
            OutcomeState::Failed { reason } => Some((o, reason)),
            _ => None,
        }) {
            return Err(RenderError::ItemFailed {
                config: failed.0.config.to_string(),
                namespace: ns.name.to_string(),
                reason: failed.1.clone(),
            });
        }
        for op in &plan.ops {
            if let Op::Apply { body, .. } = op {
                out.push_str("---\n");
                out.push_str(&serde_yaml::to_string(body)?);
            }
        }
    }
    Ok(out)
}
