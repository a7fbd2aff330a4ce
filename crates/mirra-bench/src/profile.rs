//! `--perf-dir DIR`: one `perf record` per phase of a scenario, of the
//! benchmark process (the controller runs in it) and of the sandbox's,
//! written to `DIR/<phase>.data` for `perf report`. See BENCHMARKS.md for
//! the commands and what the profiles showed.
//!
//! What this module must NOT do: produce figures. perf's unwinding slows
//! every phase, so a profiled run's times are not comparable.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::Context;

/// Samples per second: enough for a phase of a few hundred milliseconds,
/// few enough that unwinding does not swamp two cores.
const FREQUENCY: &str = "999";

/// Time perf is given to attach before the phase starts.
const ATTACH: Duration = Duration::from_millis(500);

/// Profiles phases when a directory was given; does nothing otherwise.
pub(crate) struct PhaseProfiler {
    dir: Option<PathBuf>,
    pids: Vec<u32>,
}

/// A `perf record` running over one phase.
pub(crate) struct Recording {
    child: Child,
    out: PathBuf,
}

impl PhaseProfiler {
    /// A profiler of the processes `pids` writing into `dir` (none: off).
    pub(crate) fn new(dir: Option<PathBuf>, pids: Vec<u32>) -> anyhow::Result<Self> {
        if let Some(dir) = &dir {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("--perf-dir {}: cannot create it", dir.display()))?;
        }
        Ok(Self { dir, pids })
    }

    /// Starts recording `phase` (a file name); `None` when profiling is off.
    pub(crate) async fn start(&self, phase: &str) -> anyhow::Result<Option<Recording>> {
        let Some(dir) = &self.dir else {
            return Ok(None);
        };
        let out = dir.join(format!("{phase}.data"));
        let pids: Vec<String> = self.pids.iter().map(u32::to_string).collect();
        let child = Command::new("perf")
            .args([
                "record",
                "-F",
                FREQUENCY,
                "--call-graph",
                "dwarf,16384",
                "-p",
            ])
            .arg(pids.join(","))
            .arg("-o")
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("--perf-dir needs `perf` (Debian: linux-perf) on the PATH")?;
        tokio::time::sleep(ATTACH).await;
        Ok(Some(Recording { child, out }))
    }
}

impl Recording {
    /// Stops the recording (perf writes its file on SIGINT).
    pub(crate) fn stop(mut self) -> anyhow::Result<()> {
        let stopped = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .context("cannot signal perf")?;
        anyhow::ensure!(stopped.success(), "cannot signal perf");
        let status = self.child.wait().context("perf did not end")?;
        // perf ends with the signal's status when interrupted; the file is
        // what counts.
        anyhow::ensure!(
            self.out.is_file(),
            "perf wrote no {} ({status})",
            self.out.display()
        );
        eprintln!("profile written: {}", self.out.display());
        Ok(())
    }
}

/// Stops `recording` if there is one.
pub(crate) fn stop(recording: Option<Recording>) -> anyhow::Result<()> {
    recording.map_or(Ok(()), Recording::stop)
}
