//! The integration tests of `mirra-catalog`, linked into one test binary: each
//! file under `tests/` used to be its own binary, and linking ~70 of
//! them filled the CI machine's disk and most of its build time.
//! Run one part with `cargo test -p mirra-catalog --test it <module>::`.

mod common;
mod mapping;
mod planner;
mod properties;
