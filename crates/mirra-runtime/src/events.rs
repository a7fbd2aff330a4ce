//! Warning Events, recorded the way the API server's own clients record
//! them: one `core/v1` Event per (object, reason), created once and then
//! counted up, so a failure repeated a thousand times is one Event with a
//! count of 1,000 rather than a thousand objects in etcd.
//!
//! Every request goes through the leader write fence, and an Event is best
//! effort: the caller logs and counts a failure, nothing retries it (the
//! same fact is in the log, a status or a metric).
//!
//! This module must NOT decide when something deserves an Event (callers
//! do), retry, or keep more than one counter per (object, reason).
//!
//! kube-runtime's `events::Recorder` is not used: it writes
//! `events.k8s.io/v1` Events with series, while `kubectl describe` and the
//! tools our users read Events with (and the sandbox) work with the
//! `core/v1` Events of `count`/`lastTimestamp` this module writes.

use std::collections::HashMap;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::fence::{FenceError, WriteFence};

/// Why an Event was not recorded.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    /// The API server refused or did not answer. Not retried: Events are
    /// best effort.
    #[error(transparent)]
    Api(#[from] kube::Error),
    /// This replica does not hold the Lease with enough time left.
    #[error(transparent)]
    Fenced(#[from] FenceError),
}

impl EventError {
    /// A short label for metrics.
    pub fn class(&self) -> &'static str {
        match self {
            Self::Api(_) => "event",
            Self::Fenced(e) => e.class(),
        }
    }
}

/// Records warning Events through a write fence. See the module docs.
pub struct EventRecorder {
    client: kube::Client,
    fence: WriteFence,
    component: String,
    /// (namespace, name, kind, reason) -> the count last written.
    counts: Mutex<HashMap<(String, String, String, String), i32>>,
}

impl EventRecorder {
    /// Events written with `client` through `fence`, naming `component` as
    /// their source and reporting component.
    pub fn new(client: kube::Client, fence: WriteFence, component: impl Into<String>) -> Self {
        Self {
            client,
            fence,
            component: component.into(),
            counts: Mutex::new(HashMap::new()),
        }
    }

    /// Records a warning Event about `involved` (its namespace and name
    /// must be set), or counts up the one already recorded for the same
    /// object and reason. Its name is `<object name>.<reason in lowercase>`.
    pub async fn warn(
        &self,
        involved: &ObjectReference,
        reason: &str,
        message: &str,
    ) -> Result<(), EventError> {
        let ns = involved.namespace.clone().unwrap_or_default();
        let object = involved.name.clone().unwrap_or_default();
        let name = format!("{object}.{}", reason.to_ascii_lowercase());
        let id = (
            ns.clone(),
            object,
            involved.kind.clone().unwrap_or_default(),
            reason.to_owned(),
        );
        let count = {
            let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
            let n = counts.entry(id.clone()).or_insert(0);
            *n = n.saturating_add(1);
            *n
        };
        let now = Time(k8s_openapi::jiff::Timestamp::now());
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(ns.clone()),
                ..ObjectMeta::default()
            },
            involved_object: involved.clone(),
            reason: Some(reason.to_owned()),
            message: Some(message.to_owned()),
            type_: Some("Warning".to_owned()),
            // 1 for a new Event: an earlier process's count is not known.
            count: Some(1),
            first_timestamp: Some(now.clone()),
            last_timestamp: Some(now.clone()),
            reporting_component: Some(self.component.clone()),
            reporting_instance: Some(self.component.clone()),
            source: Some(EventSource {
                component: Some(self.component.clone()),
                host: None,
            }),
            ..Event::default()
        };
        let bump = json!({"count": count, "message": message, "lastTimestamp": now});
        let api: Api<Event> = Api::namespaced(self.client.clone(), &ns);
        // One fenced send for the create-or-bump pair: both requests end
        // within the write timeout, so both within the Lease.
        let exchange = async {
            if count == 1 {
                match api.create(&PostParams::default(), &event).await {
                    // Left by an earlier process: count it up instead.
                    Err(kube::Error::Api(s)) if s.code == 409 => api
                        .patch(&name, &PatchParams::default(), &Patch::Merge(&bump))
                        .await
                        .map(|_| ()),
                    other => other.map(|_| ()),
                }
            } else {
                match api
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&bump))
                    .await
                {
                    // The Event expired (the API server's event TTL, one
                    // hour by default) or was deleted: start a new one,
                    // counting from 1, rather than losing every later
                    // Event of this reason.
                    Err(kube::Error::Api(s)) if s.code == 404 => {
                        self.counts
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(id, 1);
                        api.create(&PostParams::default(), &event).await.map(|_| ())
                    }
                    other => other.map(|_| ()),
                }
            }
        };
        self.fence.send(exchange).await??;
        Ok(())
    }
}
