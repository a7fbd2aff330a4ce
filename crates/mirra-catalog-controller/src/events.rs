//! Warning Events for bad annotation values and for instances another
//! writer keeps changing in Consul.
//!
//! This module must NOT decide which warnings to report (the round does,
//! only when a Service's warnings changed) nor retry: an Event is best
//! effort, the warning is in the log too, and the Service is synced
//! regardless.

use k8s_openapi::api::core::v1::{Event, ObjectReference, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Api, PostParams};
use mirra_catalog::Warning;
use mirra_runtime::WriteFence;

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

/// Creates warning Events, through the leader write fence.
pub struct WarningEvents {
    kube: kube::Client,
    /// Every Kubernetes write goes through it.
    fence: WriteFence,
    metrics: CatalogMetrics,
}

impl WarningEvents {
    /// Events written with `kube`, fenced by `fence`.
    pub fn new(kube: kube::Client, fence: WriteFence, metrics: CatalogMetrics) -> Self {
        Self {
            kube,
            fence,
            metrics,
        }
    }

    /// Logs each Service's warnings and creates a warning Event for it.
    pub async fn send(&self, events: Vec<(Service, Vec<Warning>)>) {
        for (svc, warnings) in events {
            let message = warnings
                .iter()
                .map(|w| format!("{}={:?}: {}", w.annotation, w.value, w.message))
                .collect::<Vec<_>>()
                .join("; ");
            tracing::warn!(
                namespace = svc.metadata.namespace.as_deref().unwrap_or_default(),
                service = svc.metadata.name.as_deref().unwrap_or_default(),
                %message,
                "bad annotation values"
            );
            self.create(&svc, EVENT_REASON, message).await;
        }
    }

    /// A warning Event on each Service whose instances another writer
    /// keeps changing in Consul (the engine logged it already).
    pub async fn send_contested(&self, services: Vec<Service>) {
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
        services: Vec<Service>,
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

    async fn create(&self, svc: &Service, reason: &str, message: String) {
        {
            let ns = svc.metadata.namespace.clone().unwrap_or_default();
            let name = svc.metadata.name.clone().unwrap_or_default();
            let now = Time(k8s_openapi::jiff::Timestamp::now());
            let ev = Event {
                metadata: ObjectMeta {
                    generate_name: Some(format!("{name}.")),
                    namespace: Some(ns.clone()),
                    ..ObjectMeta::default()
                },
                involved_object: ObjectReference {
                    api_version: Some("v1".into()),
                    kind: Some("Service".into()),
                    name: Some(name.clone()),
                    namespace: Some(ns.clone()),
                    uid: svc.metadata.uid.clone(),
                    resource_version: svc.metadata.resource_version.clone(),
                    ..ObjectReference::default()
                },
                reason: Some(reason.into()),
                message: Some(message),
                type_: Some("Warning".into()),
                count: Some(1),
                first_timestamp: Some(now.clone()),
                last_timestamp: Some(now),
                reporting_component: Some(EVENT_COMPONENT.into()),
                source: Some(k8s_openapi::api::core::v1::EventSource {
                    component: Some(EVENT_COMPONENT.into()),
                    host: None,
                }),
                ..Event::default()
            };
            let api: Api<Event> = Api::namespaced(self.kube.clone(), &ns);
            match self
                .fence
                .send(api.create(&PostParams::default(), &ev))
                .await
            {
                Ok(Ok(_)) => self.metrics.event(),
                // Best effort: the warning is also in the log, and the
                // Service is synced regardless.
                Ok(Err(e)) => tracing::warn!(error = %e, "could not create the warning Event"),
                Err(e) => tracing::debug!(error = %e, "warning Event fenced"),
            }
        }
    }
}
