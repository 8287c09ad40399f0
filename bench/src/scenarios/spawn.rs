//! Scenario 3: Spawn.
//!
//! It times a request to start `echo x` until its first output byte arrives.
//! The request goes through the host-service (two calls, and
//! `StartSession`'s one) and the daemon (`Spawn` then `Attach`, and
//! `Start`'s one). The floor is openpty + fork/exec + the first read
//! in-process. The peer is `tmux new-session -d`.

use std::io::Read;
use std::time::Duration;

use anyhow::Result;

use super::Ctx;
use crate::floor::RawPty;
use crate::report::{Figure, Role, Row};
use crate::services::{Home, attach_daemon, spawn_request, start_via_daemon};
use crate::stats::{Samples, time_blocking};
use crate::streams::first_output;
use crate::tmux::Tmux;

const NAME: &str = "3. spawn to first output byte";
const ARGV: [&str; 2] = ["echo", "x"];
/// The host's two ways, the daemon's two, the floor and tmux.
const SUBJECTS: usize = 6;

pub async fn run(ctx: &mut Ctx) -> Result<()> {
    let home = Home::new()?;
    let mut host = home.start_host(&ctx.bins, &[]).await?;
    let workspace = host.workspace("spawn").await?;
    let mut daemon = host.daemon().clone();
    let tmux = Tmux::start()?;
    let tmux_server = tmux.server_pid()?;
    let [
        mut via_host,
        mut via_start,
        mut via_daemon,
        mut via_daemon_start,
        mut floor,
        mut peer,
    ] = std::array::from_fn(|_| Samples::default());
    for i in 0..ctx.scale.spawn_samples {
        // Each round starts with the next subject: whichever goes first
        // follows tmux's server going idle, and on this kind of machine
        // the first request after a quiet spell pays for waking the CPUs.
        for subject in (0..SUBJECTS).map(|k| (i + k) % SUBJECTS) {
            match subject {
                0 => {
                    let start = std::time::Instant::now();
                    let session = host.create(&workspace, &ARGV).await?;
                    let mut stream = host.attach(&session.session_id).await?;
                    first_output(&mut stream).await?;
                    via_host.push(start.elapsed());
                }
                1 => {
                    let start = std::time::Instant::now();
                    let mut stream = host.start(&workspace, &ARGV).await?;
                    first_output(&mut stream).await?;
                    via_start.push(start.elapsed());
                }
                2 => {
                    let start = std::time::Instant::now();
                    let id = format!("spawn-{i}");
                    daemon.spawn(spawn_request(&id, &ARGV)).await?;
                    let mut stream = attach_daemon(&mut daemon, &id).await?;
                    first_output(&mut stream).await?;
                    via_daemon.push(start.elapsed());
                }
                3 => {
                    let start = std::time::Instant::now();
                    let id = format!("start-{i}");
                    let mut stream =
                        start_via_daemon(&mut daemon, spawn_request(&id, &ARGV)).await?;
                    first_output(&mut stream).await?;
                    via_daemon_start.push(start.elapsed());
                }
                4 => {
                    let (took, pty) = time_blocking(|| -> Result<RawPty> {
                        let mut pty = RawPty::spawn(&ARGV)?;
                        let mut byte = [0u8; 1];
                        pty.reader.read_exact(&mut byte)?;
                        Ok(pty)
                    });
                    drop(pty?);
                    floor.push(took);
                }
                _tmux => {
                    let session = format!("s{i}");
                    let (took, done) = time_blocking(|| {
                        tmux.run(&["new-session", "-d", "-s", &session, "echo x"])
                    });
                    done?;
                    peer.push(took);
                    tmux.settle(tmux_server);
                }
            }
        }
    }
    let report = &mut ctx.report;
    report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            "host CreateSession → AttachSession first byte",
            Figure::latency(&via_host),
        )
        .target(
            "p50 ≤ 2 ms, p99 ≤ 5 ms",
            via_host.p50() <= Duration::from_millis(2)
                && via_host.p99() <= Duration::from_millis(5),
        ),
    );
    report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            "host StartSession first byte",
            Figure::latency(&via_start),
        )
        .note("CreateSession and AttachSession in one call")
        .target(
            "p50 ≤ 2 ms, p99 ≤ 5 ms",
            via_start.p50() <= Duration::from_millis(2)
                && via_start.p99() <= Duration::from_millis(5),
        ),
    );
    report.add(Row::new(
        NAME,
        Role::Holdfast,
        "daemon Spawn → Attach first byte",
        Figure::latency(&via_daemon),
    ));
    report.add(Row::new(
        NAME,
        Role::Holdfast,
        "daemon Start first byte",
        Figure::latency(&via_daemon_start),
    ));
    report.add(Row::new(
        NAME,
        Role::Floor,
        "openpty + fork/exec → first byte",
        Figure::latency(&floor),
    ));
    report.add(
        Row::new(
            NAME,
            Role::Peer,
            "`tmux new-session -d` (a process)",
            Figure::latency(&peer),
        )
        .note("until the command returns; tmux gives no first-byte event"),
    );
    Ok(())
}
