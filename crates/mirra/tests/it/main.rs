//! The integration tests of `mirra`, linked into one test binary (see
//! docs/ARCHITECTURE.md, Tests). Run one part with
//! `cargo test -p mirra --test it <module>::`.

mod cli_golden;
