//! The `mirra` binary: command-line parsing, logging and wiring. It holds no
//! sync logic of its own; every command calls into a library crate.

mod cli;
mod controllers;
mod render;
mod sandbox;
mod serve;

use clap::Parser;

/// jemalloc instead of glibc's malloc: with glibc, the catalog controller's
/// RSS at 50,000 instances stayed about twice its heap (per-thread arenas
/// keep what a burst freed). Its options are compiled in from
/// `.cargo/config.toml` (see BENCHMARKS.md, catalog memory).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = cli::Cli::parse_from(consul_k8s_spelling(std::env::args_os().collect()));
    if let Err(e) = cli::init_logging(&cli.log) {
        eprintln!("error: {e:#}");
        return std::process::ExitCode::from(2);
    }
    // Offline commands report errors on stderr only; servers also log them,
    // so that log pipelines see why the process stopped.
    let serves = matches!(
        cli.command,
        cli::Command::Dev(_)
            | cli::Command::Sandbox(_)
            | cli::Command::Run(_)
            | cli::Command::SyncCatalog(_)
    );
    let result = match cli.command {
        cli::Command::Dev(args) => sandbox::dev(args).await,
        cli::Command::Sandbox(cli::SandboxCommand::Kube(args)) => sandbox::kube(args).await,
        cli::Command::Sandbox(cli::SandboxCommand::Consul(args)) => sandbox::consul(args).await,
        cli::Command::Run(args) => controllers::mirror(args).await,
        cli::Command::SyncCatalog(args) => controllers::catalog(args).await,
        cli::Command::Crds => {
            print!("{}", mirra_mirror::crd_yaml());
            Ok(())
        }
        cli::Command::Render(args) => {
            render::render_files(&args.files, &args.namespaces).map(|out| print!("{out}"))
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            if serves {
                tracing::error!(error = format!("{e:#}"), "mirra failed");
            }
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// consul-k8s spells its flags with one dash (`-k8s-default-sync=false`);
/// the arguments after `sync-catalog` are rewritten to clap's `--` spelling
/// so that an existing sync-catalog argument list works unchanged.
fn consul_k8s_spelling(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let Some(at) = args.iter().position(|a| a == "sync-catalog") else {
        return args;
    };
    let mut args = args;
    let tail = args.split_off(at + 1);
    args.extend(mirra_catalog_controller::normalize_flags(tail));
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The options come from `.cargo/config.toml` at build time; a build
    /// that missed them would keep freed memory ten times longer, in up to
    /// four arenas per CPU of the host.
    #[test]
    fn the_allocator_returns_freed_pages_after_a_second_from_one_arena() {
        let conf = tikv_jemalloc_ctl::config::malloc_conf::read().unwrap_or_default();
        for option in [
            "background_thread:true",
            "dirty_decay_ms:1000",
            "muzzy_decay_ms:0",
            "narenas:1",
        ] {
            assert!(conf.contains(option), "{option} missing from {conf:?}");
        }
    }

    fn os(v: &[&str]) -> Vec<std::ffi::OsString> {
        v.iter().map(Into::into).collect()
    }

    #[test]
    fn only_the_sync_catalog_arguments_are_respelled() {
        assert_eq!(
            consul_k8s_spelling(os(&[
                "mirra",
                "--log-level",
                "debug",
                "sync-catalog",
                "-k8s-default-sync=false",
                "-log-json"
            ])),
            os(&[
                "mirra",
                "--log-level",
                "debug",
                "sync-catalog",
                "--k8s-default-sync=false",
                "--log-json"
            ])
        );
        assert_eq!(
            consul_k8s_spelling(os(&["mirra", "run", "--watch-namespace", "x"])),
            os(&["mirra", "run", "--watch-namespace", "x"])
        );
    }
}
