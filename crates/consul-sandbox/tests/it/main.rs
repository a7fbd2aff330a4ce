//! The integration tests of `consul-sandbox`, linked into one test binary: each
//! file under `tests/` used to be its own binary, and linking ~70 of
//! them filled the CI machine's disk and most of its build time.
//! Run one part with `cargo test -p consul-sandbox --test it <module>::`.

mod acl;
mod acl_api;
mod auth_login;
mod blocking;
mod common;
mod consul_parity;
mod endpoints;
mod faults;
mod model;
mod namespaces;
mod partition_acl;
mod partitions;
mod ports;
mod robustness;
mod tls;
mod txn;
