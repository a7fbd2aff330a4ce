//! The integration tests of `kube-sandbox`, linked into one test binary: each
//! file under `tests/` used to be its own binary, and linking ~70 of
//! them filled the CI machine's disk and most of its build time.
//! Run one part with `cargo test -p kube-sandbox --test it <module>::`.

mod api;
mod common;
mod custom_resources;
mod decode_errors;
mod fields;
mod hpa_versions;
mod protobuf;
mod rbac;
mod reflector;
mod restart;
mod review_and_subresources;
mod service_account_tokens;
mod typed_kinds;
