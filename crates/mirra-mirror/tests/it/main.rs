//! The integration tests of `mirra-mirror`, linked into one test binary: each
//! file under `tests/` used to be its own binary, and linking ~70 of
//! them filled the CI machine's disk and most of its build time.
//! Run one part with `cargo test -p mirra-mirror --test it <module>::`.

mod cluster_scoped;
mod common;
mod copy_items;
mod crd;
mod espejo_compat;
mod narrow_plan;
mod planner;
mod planner_props;
mod render;
mod status;
mod tenancy;
