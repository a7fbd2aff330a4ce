//! The integration tests of `mirra-catalog-controller`, linked into one test binary: each
//! file under `tests/` used to be its own binary, and linking ~70 of
//! them filled the CI machine's disk and most of its build time.
//! Run one part with `cargo test -p mirra-catalog-controller --test it <module>::`.

mod catalog;
mod catalog_cas;
mod catalog_consul_failures;
mod catalog_events;
mod catalog_faults;
mod catalog_mapping_parity;
mod catalog_namespaces;
mod catalog_ports;
mod catalog_preview;
mod catalog_repair;
mod common;
mod deploy_rbac;
mod fault_matrix;
mod leader;
mod round;
mod to_k8s;
