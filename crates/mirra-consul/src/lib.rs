//! mirra-consul: mirra's typed async client for Consul's HTTP API.
//!
//! It covers what catalog sync needs and nothing more: catalog register and
//! deregister, the catalog and health reads, `/v1/txn` with Node, Service
//! and Check operations (split into transactions of at most 64 operations,
//! because each request is one Raft apply on the servers), blocking queries
//! and watch streams, ACL tokens (configured, or obtained by logging in to
//! an auth method as consul-k8s 1.x's `CONSUL_LOGIN_*` say), Consul
//! Enterprise namespaces, TLS, and failover between the servers consul-k8s
//! 1.x's `CONSUL_ADDRESSES` names. It was written from Consul's HTTP
//! API documentation and shares no code or types with the test server in
//! `consul-sandbox`, so that a misread field on either side shows up as a
//! failing integration test.
//!
//! ```text
//! ConsulConfig::from_sources(env, overrides)   config.rs  (pure)
//!   -> Client::new                               client.rs  (pools, TLS, token, failover)
//!        login / logout, acl_login / acl_logout    token from an auth method (acl.rs bodies)
//!        create_namespace / namespace              Enterprise namespaces (acl.rs bodies)
//!        register / deregister / txn / apply_ops   writes  -> txn.rs (split, map 409)
//!        services / service / node_services /      reads   -> blocking.rs (index rules)
//!        nodes / health_service / health_node
//!        watch_node_services / watch_health_node -> Stream   watch.rs
//!   errors: Error (error.rs) with class() for metrics and is_retryable()
//! ```
//!
//! What this crate must NOT do: decide what to write (that is the catalog
//! planner's job), cache catalog state, log or display the ACL token, or
//! retry a non-idempotent write whose outcome is unknown.

pub mod acl;
pub mod backoff;
pub mod blocking;
mod client;
pub mod config;
pub mod endpoint;
pub mod error;
pub mod txn;
pub mod types;
mod watch;

pub use acl::{AclLink, LoginDecodeError, LoginRequest, LoginToken, Namespace, NamespaceAcls};
pub use backoff::RetryPolicy;
pub use blocking::{QueryOptions, Versioned, WatchOptions};
pub use client::{BodyParser, Client, INDEX_HEADER, TOKEN_HEADER};
pub use config::{
    ConfigError, ConsulConfig, DurationError, LoginConfig, Overrides, TlsConfig, Token,
    TokenConfig, TokenSource,
};
pub use error::Error;
pub use txn::{
    FailedOp, TxnBatchError, TxnOp, TxnResult, TxnSummary, Verb, is_cas_conflict, split_ops,
};
pub use types::{
    CatalogServiceInstance, CheckDefinition, DeregisterRequest, HealthCheck, Meta, Node,
    NodeServices, RegisterRequest, Service, ServiceAddress, ServiceEntry, ServicePort, ServiceTags,
    Weights,
};
pub use watch::Pause;
