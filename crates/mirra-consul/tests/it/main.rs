//! The integration tests of `mirra-consul`, linked into one test binary: each
//! file under `tests/` used to be its own binary, and linking ~70 of
//! them filled the CI machine's disk and most of its build time.
//! Run one part with `cargo test -p mirra-consul --test it <module>::`.

mod common;
mod failover;
mod http_behaviour;
mod login;
mod logs;
mod namespaces;
mod sandbox;
mod tls;
