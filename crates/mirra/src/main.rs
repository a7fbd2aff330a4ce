//! The `mirra` binary: command-line parsing, logging and wiring. It holds no
//! sync logic of its own; every command calls into a library crate.

mod cli;
mod render;
mod sandbox;

use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = cli::Cli::parse();
    if let Err(e) = cli::init_logging(&cli.log) {
        eprintln!("error: {e:#}");
        return std::process::ExitCode::from(2);
    }
    // Offline commands report errors on stderr only; servers also log them,
    // so that log pipelines see why the process stopped.
    let serves = matches!(cli.command, cli::Command::Dev(_) | cli::Command::Sandbox(_));
    let result = match cli.command {
        cli::Command::Dev(args) => sandbox::dev(args).await,
        cli::Command::Sandbox(cli::SandboxCommand::Kube(args)) => sandbox::kube(args).await,
        cli::Command::Sandbox(cli::SandboxCommand::Consul(args)) => sandbox::consul(args).await,
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
