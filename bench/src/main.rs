//! holdfast-bench: holdfast measured beside tmux and the raw-PTY floor.
//!
//! It makes one run per scenario, and each scenario measures all of them in
//! the same run. It prints a table and writes JSON. BENCHMARKS.md holds the
//! method and the latest figures.
//!
//!   cargo run --release -p holdfast-bench [-- --quick] [--only spawn,echo]

mod floor;
mod report;
mod scenarios;
mod services;
mod stats;
mod streams;
mod tmux;

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result, bail};
use clap::Parser;
use serde_json::json;

use scenarios::{ALL, Ctx, Scale};
use services::Bins;

#[derive(Debug, Parser)]
#[command(version = holdfast_api::VERSION, about = "holdfast beside tmux and the raw-PTY floor")]
struct Args {
    /// Small sizes, to prove the harness works (CI runs this).
    #[arg(long)]
    quick: bool,
    /// Only these scenarios (comma-separated): list-scale, list-flood,
    /// spawn, throughput, echo, footprint, recovery, deadline, leaks, upgrade,
    /// postgres, watch, screen.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Where host-service and pty-daemon are; default beside this binary,
    /// built first when run by cargo.
    #[arg(long)]
    bin_dir: Option<PathBuf>,
    /// Where to write the JSON results; default holdfast-bench.json beside
    /// the binaries.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// The binaries beside this one, built from the same sources first when
/// cargo started us (so a run never measures stale binaries).
fn binaries(bin_dir: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(dir) = bin_dir {
        return Ok(dir);
    }
    let exe = std::env::current_exe()?;
    let dir = exe.parent().context("the binary's folder")?.to_path_buf();
    if let Some(cargo) = std::env::var_os("CARGO") {
        let mut build = Command::new(cargo);
        build.args(["build", "--quiet", "-p", "host-service", "-p", "pty-daemon"]);
        if dir.ends_with("release") {
            build.arg("--release");
        }
        if !build.status()?.success() {
            bail!("building host-service and pty-daemon failed");
        }
    }
    Ok(dir)
}

// One thread, as tmux's control client and the floor's reads are measured:
// a figure then holds the services' hops, not the harness's own hand-offs
// between runtime threads (worth 150 µs of an echo here).
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let args = Args::parse();
    let dir = binaries(args.bin_dir)?;
    let bins = Bins::in_dir(&dir)?;
    tmux::Tmux::ensure_installed()?;
    let names: Vec<String> = if args.only.is_empty() {
        ALL.iter().map(|s| s.to_string()).collect()
    } else {
        args.only
    };
    let mut ctx = Ctx {
        bins,
        scale: if args.quick {
            Scale::quick()
        } else {
            Scale::full()
        },
        report: Default::default(),
    };
    for name in &names {
        eprintln!("running {name}…");
        scenarios::run(name, &mut ctx)
            .await
            .with_context(|| format!("scenario {name}"))?;
    }
    print!("{}", ctx.report.table());

    let uname = rustix::system::uname();
    let meta = json!({
        "holdfast": holdfast_api::VERSION,
        "tmux": tmux::Tmux::version(),
        "quick": args.quick,
        "scenarios": names,
        "unix_time": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_secs(),
        "cpus": std::thread::available_parallelism()?.get(),
        "kernel": uname.release().to_string_lossy(),
        "binaries": dir,
    });
    let path = args.json.unwrap_or_else(|| dir.join("holdfast-bench.json"));
    std::fs::write(&path, serde_json::to_string_pretty(&ctx.report.json(meta))?)
        .with_context(|| format!("writing {}", path.display()))?;
    eprintln!("results written to {}", path.display());
    Ok(())
}
