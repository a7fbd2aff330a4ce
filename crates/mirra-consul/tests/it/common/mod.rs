//! What several of the client's integration tests build the same way.

// A failed fixture must stop the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use mirra_consul::{Client, NodeServices, QueryOptions, RetryPolicy};

/// The node mirra registers its instances on.
pub const NODE: &str = "k8s-sync";

/// A string map (meta, environment) from pairs.
pub fn string_map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Retries a few milliseconds apart: the tests count attempts, and waiting
/// out real backoffs would only make them slow.
pub fn fast_retry(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(5),
    }
}

/// What the catalog holds on [`NODE`] now.
pub async fn node_services(client: &Client) -> NodeServices {
    client
        .node_services(NODE, &QueryOptions::default())
        .await
        .unwrap()
        .value
}
