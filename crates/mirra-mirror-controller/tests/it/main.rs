//! The integration tests of `mirra-mirror-controller`, linked into one test binary: each
//! file under `tests/` used to be its own binary, and linking ~70 of
//! them filled the CI machine's disk and most of its build time.
//! Run one part with `cargo test -p mirra-mirror-controller --test it <module>::`.

mod behaviour;
mod cluster_scoped;
mod common;
mod copy_items;
mod counts;
mod deep;
mod deploy_rbac;
mod espejo_samples;
mod fault_matrix;
mod faults;
mod leader;
mod limits;
mod normalised;
mod ownership;
mod preview;
mod restart;
mod safety;
mod tenants;
