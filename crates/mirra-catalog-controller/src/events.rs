//! Warning Events for bad annotation values and for instances another
//! writer keeps changing in Consul.
//!
//! This module must NOT decide which warnings to report (the round does,
//! only when a Service's warnings changed) nor retry: an Event is best
//! effort, the warning is in the log too, and the Service is synced
//! regardless.

use k8s_openapi::api::core::v1::ObjectReference;
use mirra_catalog::{ServiceInput, Warning};
use mirra_runtime::WriteFence;
use mirra_runtime::events::EventRecorder;

use crate::metrics::CatalogMetrics;

/// Reason of the warning Event for a bad annotation value.
pub const EVENT_REASON: &str = "InvalidAnnotation";
/// Reason of the warning Event for instances another writer keeps
/// changing in Consul.
pub const EVENT_REASON_CONTESTED: &str = "ContestedInConsul";
/// Reason of the warning Event for a Consul namespace that could not be
/// found or created.
pub const EVENT_REASON_NAMESPACE: &str = "ConsulNamespaceFailed";
/// Component named in warning Events.
pub const EVENT_COMPONENT: &str = "mirra-sync-catalog";

/// Creates warning Events on Services, through the leader write fence: one
/// per Service and reason, counted up when it happens again.
pub struct WarningEvents {
    recorder: EventRecorder,
    metrics: CatalogMetrics,
}

impl WarningEvents {
    /// Events written with `kube`, fenced by `fence`.
    pub fn new(kube: kube::Client, fence: WriteFence, metrics: CatalogMetrics) -> Self {
        Self {
            recorder: EventRecorder::new(kube, fence, EVENT_COMPONENT),
            metrics,
        }
    }
    /// Logs each Service's warnings and creates a warning Event for it.
    pub async fn send(&self, events: Vec<(ServiceInput, Vec<Warning>)>) {
        for (svc, warnings) in events {
            let message = warnings
                .iter()
                .map(|w| format!("{}={:?}: {}", w.annotation, w.value, w.message))
                .collect::<Vec<_>>()
                .join("; ");
            tracing::warn!(
                namespace = svc.namespace.as_str(),
                service = svc.name.as_str(),
                %message,
                "bad annotation values"
            );
            self.create(&svc, EVENT_REASON, message).await;
        }
    }

    /// A warning Event on each Service whose instances another writer
    /// keeps changing in Consul (the engine logged it already).
    pub async fn send_contested(&self, services: Vec<ServiceInput>) {
        for svc in services {
            let message = "its instances in Consul were changed again after mirra repaired them: \
                           another writer manages them too; mirra keeps repairing them, spaced out"
                .to_owned();
            self.create(&svc, EVENT_REASON_CONTESTED, message).await;
        }
    }

    /// A warning Event on each Service bound for a Consul namespace that
    /// could not be found or created (the writer logged it already).
    pub async fn send_namespace_failed(
        &self,
        services: Vec<ServiceInput>,
        namespace: &str,
        error: &str,
    ) {
        for svc in services {
            let message = format!(
                "Consul namespace {namespace:?} could not be created: {error}; \
                 this Service is not synced until it can be, other namespaces keep syncing"
            );
            self.create(&svc, EVENT_REASON_NAMESPACE, message).await;
        }
    }

    async fn create(&self, svc: &ServiceInput, reason: &str, message: String) {
        let involved = ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Service".into()),
            name: Some(svc.name.clone()),
            namespace: Some(svc.namespace.clone()),
            uid: svc.uid.clone(),
            resource_version: svc.resource_version.clone(),
            ..ObjectReference::default()
        };
        match self.recorder.warn(&involved, reason, &message).await {
            Ok(()) => self.metrics.event(),
            // Best effort: the warning is also in the log, and the Service
            // is synced regardless.
            Err(mirra_runtime::events::EventError::Fenced(e)) => {
                tracing::debug!(error = %e, "warning Event fenced");
            }
            Err(e) => tracing::warn!(error = %e, "could not create the warning Event"),
        }
    }
}
