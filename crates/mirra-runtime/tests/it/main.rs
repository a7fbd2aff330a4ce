//! The integration tests of `mirra-runtime`, linked into one test binary (see
//! docs/ARCHITECTURE.md, Tests). Run one part with
//! `cargo test -p mirra-runtime --test it <module>::`.

mod leader_rbac;
mod sandbox;
