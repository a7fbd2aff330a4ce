//! The cost curve (issue 18, goal 6): how mirra's cost grows with the
//! cluster. Runs the `mirror` scenario at several namespace counts and the
//! `catalog` scenario at several Service counts, each size in a child
//! process of this executable (so that one size's RSS carries nothing of
//! the previous size's allocations), collects the figures each writes with
//! `--json-out`, and writes a markdown table per controller (requests per
//! event, Raft applies per change, RSS and RSS per object, latency) and an
//! SVG plot of RSS and p99 latency against size. Memory should grow
//! linearly in the objects and the per-event cost stay flat.
//!
//! Usage: `mirra-bench cost-curve [--mirror-sizes 1000,2000,5000]
//! [--catalog-sizes 10000,20000,50000] [--out-dir DIR] [--skip-mirror]
//! [--skip-catalog] [--report-only]`; `--report-only` makes the table and
//! plot again from the JSON figures an earlier run left in DIR. Writes `DIR/cost-curve.md`, `DIR/cost-curve.svg`,
//! and each size's JSON figures and printed output beside them.
//!
//! What this module must NOT do: measure anything itself; the scenarios
//! measure, [`report`] turns their figures into the table and the plot.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::Context;

pub(crate) mod figures;
mod report;

use figures::{CatalogFigures, MirrorFigures, read_json};

/// Namespace creations (and relabels) per mirror run, as the mirror
/// scenario's default; smaller sizes use one per namespace.
const MIRROR_EVENTS: usize = 100;

#[derive(Debug, PartialEq)]
struct Args {
    mirror_sizes: Vec<usize>,
    catalog_sizes: Vec<usize>,
    out_dir: PathBuf,
    /// Read each size's figures from the JSON an earlier run left in the
    /// directory instead of running it (`--report-only`).
    report_only: bool,
}

/// A comma-separated list of sizes above 0, refused with the flag's name.
fn sizes(flag: &str, value: &str) -> anyhow::Result<Vec<usize>> {
    crate::flags::positive_list(flag, value, "a size of 0 measures nothing")
}

fn parse(args: Vec<String>) -> anyhow::Result<Args> {
    let mut out = Args {
        mirror_sizes: vec![1000, 2000, 5000],
        catalog_sizes: vec![10_000, 20_000, 50_000],
        out_dir: PathBuf::from("bench-out/cost-curve"),
        report_only: false,
    };
    let (mut skip_mirror, mut skip_catalog) = (false, false);
    let mut it = args.into_iter();
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--skip-mirror" => skip_mirror = true,
            "--skip-catalog" => skip_catalog = true,
            "--report-only" => out.report_only = true,
            "--mirror-sizes" | "--catalog-sizes" | "--out-dir" => {
                let value = it.next().with_context(|| format!("{flag} needs a value"))?;
                match flag.as_str() {
                    "--mirror-sizes" => out.mirror_sizes = sizes(&flag, &value)?,
                    "--catalog-sizes" => out.catalog_sizes = sizes(&flag, &value)?,
                    _ => out.out_dir = value.into(),
                }
            }
            other => anyhow::bail!("unknown flag {other}"),
        }
    }
    if skip_mirror {
        out.mirror_sizes.clear();
    }
    if skip_catalog {
        out.catalog_sizes.clear();
    }
    anyhow::ensure!(
        !out.mirror_sizes.is_empty() || !out.catalog_sizes.is_empty(),
        "--skip-mirror and --skip-catalog together leave nothing to run"
    );
    Ok(out)
}

/// Runs this executable with `args`, its printed output into `log`, and
/// reads the figures it wrote to `json`.
fn run_child<T: for<'de> serde::Deserialize<'de>>(
    args: &[String],
    json: &Path,
    log: &Path,
    report_only: bool,
) -> anyhow::Result<T> {
    if report_only {
        return read_json(json).with_context(|| {
            format!(
                "--report-only: no figures of an earlier `{}` in {}",
                args.join(" "),
                json.display()
            )
        });
    }
    let exe = std::env::current_exe().context("finding this executable")?;
    let out = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    // A stale file from an earlier run must not pass for this one's.
    let _ = std::fs::remove_file(json);
    let started = Instant::now();
    eprintln!("cost-curve: running {} {}", exe.display(), args.join(" "));
    let status = Command::new(&exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(Stdio::inherit())
        .status()
        .with_context(|| format!("starting {}", exe.display()))?;
    anyhow::ensure!(
        status.success(),
        "`{} {}` failed ({status}); its output is in {}",
        exe.display(),
        args.join(" "),
        log.display()
    );
    eprintln!(
        "cost-curve: done in {:.0} s, output in {}",
        started.elapsed().as_secs_f64(),
        log.display()
    );
    read_json(json)
}

fn strings(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

pub async fn run(args: Vec<String>) -> anyhow::Result<()> {
    let args = parse(args)?;
    let dir = &args.out_dir;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    // The children block; this runtime has nothing else to do meanwhile.
    let (mirror, catalog) = tokio::task::block_in_place(|| -> anyhow::Result<_> {
        let mut mirror: Vec<MirrorFigures> = Vec::new();
        for &n in &args.mirror_sizes {
            let json = dir.join(format!("mirror-{n}.json"));
            let child_args = strings(&[
                "mirror",
                "--namespaces",
                &n.to_string(),
                "--events",
                &MIRROR_EVENTS.min(n).to_string(),
                "--skip-baseline",
                "--json-out",
                &json.to_string_lossy(),
            ]);
            mirror.push(run_child(
                &child_args,
                &json,
                &dir.join(format!("mirror-{n}.txt")),
                args.report_only,
            )?);
        }
        let mut catalog: Vec<CatalogFigures> = Vec::new();
        for &n in &args.catalog_sizes {
            let json = dir.join(format!("catalog-{n}.json"));
            let child_args = strings(&[
                "catalog",
                "--services",
                &n.to_string(),
                "--json-out",
                &json.to_string_lossy(),
            ]);
            catalog.push(run_child(
                &child_args,
                &json,
                &dir.join(format!("catalog-{n}.txt")),
                args.report_only,
            )?);
        }
        Ok((mirror, catalog))
    })?;

    let mut md = String::from("# cost curve\n\n");
    let mut panels = Vec::new();
    if !mirror.is_empty() {
        md += &report::mirror_table(&mirror);
        md += "\n";
        panels.push(report::mirror_panel(&mirror));
    }
    if !catalog.is_empty() {
        md += &report::catalog_table(&catalog);
        md += "\n";
        panels.push(report::catalog_panel(&catalog));
    }
    md += "![RSS and p99 latency against size](cost-curve.svg)\n";
    let svg = report::svg(&panels)?;
    let (md_path, svg_path) = (dir.join("cost-curve.md"), dir.join("cost-curve.svg"));
    std::fs::write(&md_path, &md).with_context(|| format!("writing {}", md_path.display()))?;
    std::fs::write(&svg_path, svg).with_context(|| format!("writing {}", svg_path.display()))?;
    print!("{md}");
    eprintln!(
        "cost-curve: wrote {} and {}",
        md_path.display(),
        svg_path.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse_and_malformed_ones_are_refused_with_their_name() {
        let ok = parse(strings(&[
            "--mirror-sizes",
            "50, 100",
            "--catalog-sizes",
            "200",
            "--out-dir",
            "/tmp/cc",
        ]))
        .ok();
        assert_eq!(
            ok,
            Some(Args {
                mirror_sizes: vec![50, 100],
                catalog_sizes: vec![200],
                out_dir: "/tmp/cc".into(),
                report_only: false,
            })
        );
        assert_eq!(
            parse(strings(&["--report-only"]))
                .ok()
                .map(|a| a.report_only),
            Some(true)
        );
        let skipped = parse(strings(&["--skip-mirror"])).ok();
        assert_eq!(
            skipped.map(|a| (a.mirror_sizes, a.catalog_sizes)),
            Some((vec![], vec![10_000, 20_000, 50_000]))
        );
        for (bad, says) in [
            (
                &["--mirror-sizes", "1000,2k"][..],
                "--mirror-sizes \"1000,2k\": a comma-separated list",
            ),
            (&["--catalog-sizes", "10000,,20000"][..], "--catalog-sizes"),
            (&["--catalog-sizes", "-5"][..], "--catalog-sizes \"-5\""),
            (
                &["--mirror-sizes", "0,10"][..],
                "--mirror-sizes \"0,10\": a size of 0",
            ),
            (&["--mirror-sizes"][..], "--mirror-sizes needs a value"),
            (&["--skip-mirror", "--skip-catalog"][..], "nothing to run"),
            (&["--sizes", "1"][..], "unknown flag --sizes"),
        ] {
            let e = parse(strings(bad))
                .err()
                .map(|e| format!("{e:#}"))
                .unwrap_or_default();
            assert!(e.contains(says), "{bad:?}: {e}");
        }
    }
}
