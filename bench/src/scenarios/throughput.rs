//! Scenario 4: Output throughput.
//!
//! It runs `cat` of a file, timed from the keystroke that starts it until an
//! attached client has received it all (the exit event). The output goes
//! through the daemon and the host-service. The floor reads the same program
//! on a raw PTY in-process. The peer is a tmux control-mode client.

use std::io::Write;
use std::time::Instant;

use anyhow::{Result, ensure};

use super::Ctx;
use crate::floor::RawPty;
use crate::report::{Figure, Role, Row};
use crate::services::{Home, attach_daemon, spawn_request, write_daemon};
use crate::streams::until_exit;
use crate::tmux::{Tmux, output_bytes};

const NAME: &str = "4. output throughput";

/// Megabytes per second for `bytes` in `seconds`.
fn rate(bytes: u64, seconds: f64) -> f64 {
    bytes as f64 / 1e6 / seconds
}

fn median(mut rates: Vec<f64>) -> f64 {
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

pub async fn run(ctx: &mut Ctx) -> Result<()> {
    let home = Home::new()?;
    let size = ctx.scale.throughput_bytes;
    // Printable lines: what a build log looks like, and nothing tmux escapes.
    let file = home.dir.path().join("output.txt");
    let line = format!("{}\n", "0123456789abcdefghijklmnopqrstuvwxyz".repeat(2));
    let lines = size / line.len() as u64;
    let mut writer = std::io::BufWriter::new(std::fs::File::create(&file)?);
    for _ in 0..lines {
        writer.write_all(line.as_bytes())?;
    }
    writer.flush()?;
    let size = lines * line.len() as u64;
    let script = format!("read start; exec cat {}", file.display());
    let argv = ["sh", "-c", script.as_str()];

    let mut host = home.start_host(&ctx.bins, &[]).await?;
    let workspace = host.workspace("throughput").await?;
    let mut daemon = host.daemon().clone();
    let tmux = Tmux::start()?;
    let (mut via_host, mut via_daemon, mut floor, mut peer) = (vec![], vec![], vec![], vec![]);
    let mut lost = 0;
    for round in 0..ctx.scale.throughput_rounds {
        let mut pty = RawPty::spawn(&argv)?;
        pty.writer.write_all(b"\n")?;
        let start = Instant::now();
        let received = pty.drain();
        floor.push(rate(size, start.elapsed().as_secs_f64()));
        ensure!(
            received >= size,
            "the raw PTY gave {received} of {size} bytes"
        );

        let id = format!("cat-{round}");
        daemon.spawn(spawn_request(&id, &argv)).await?;
        let mut stream = attach_daemon(&mut daemon, &id).await?;
        let start = Instant::now();
        write_daemon(&mut daemon, &id, b"\n").await?;
        let (received, missed) = until_exit(&mut stream).await?;
        via_daemon.push(rate(size, start.elapsed().as_secs_f64()));
        lost += missed;
        ensure!(
            received + missed >= size,
            "the daemon gave {received} of {size} bytes ({missed} announced lost)"
        );

        let session = host.create(&workspace, &argv).await?.session_id;
        let mut stream = host.attach(&session).await?;
        let start = Instant::now();
        host.write(&session, b"\n").await?;
        let (received, missed) = until_exit(&mut stream).await?;
        via_host.push(rate(size, start.elapsed().as_secs_f64()));
        lost += missed;
        ensure!(
            received + missed >= size,
            "the host-service gave {received} of {size} bytes ({missed} announced lost)"
        );

        let name = format!("cat{round}");
        tmux.new_session(&name, &script)?;
        let mut control = tmux.control(&name)?;
        control.send(&format!("send-keys -t {name} Enter"))?;
        let start = Instant::now();
        let mut received = 0;
        loop {
            let line = control.line()?;
            if line.starts_with("%exit") {
                break;
            }
            received += output_bytes(&line) as u64;
        }
        peer.push(rate(size, start.elapsed().as_secs_f64()));
        ensure!(received >= size, "tmux gave {received} of {size} bytes");
    }
    let floor = median(floor);
    let (via_daemon, via_host) = (median(via_daemon), median(via_host));
    let setting = format!(
        "{} MiB, median of {} rounds",
        size >> 20,
        ctx.scale.throughput_rounds
    );
    let report = &mut ctx.report;
    let mut daemon_row = Row::new(
        NAME,
        Role::Holdfast,
        "through the daemon (Attach)",
        Figure::Throughput(via_daemon),
    )
    .target("≥ 90 % of the floor", via_daemon >= 0.9 * floor);
    if lost > 0 {
        daemon_row = daemon_row.note(format!(
            "{lost} bytes announced as truncated across all runs"
        ));
    }
    report.add(daemon_row);
    report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            "through the host-service (AttachSession)",
            Figure::Throughput(via_host),
        )
        .target("≥ 80 % of the floor", via_host >= 0.8 * floor),
    );
    report.add(
        Row::new(
            NAME,
            Role::Floor,
            "raw PTY read in-process",
            Figure::Throughput(floor),
        )
        .note(setting),
    );
    report.add(Row::new(
        NAME,
        Role::Peer,
        "tmux control-mode client",
        Figure::Throughput(median(peer)),
    ));
    Ok(())
}
