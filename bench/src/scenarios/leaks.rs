//! Scenario 9: Leaks and stopping.
//!
//! It runs spawn/kill cycles on a daemon of its own. Then it checks the
//! daemon's open fds, threads, zombies and memory against the baseline. It
//! also times how long SIGTERM takes to stop the daemon with many sessions,
//! beside `tmux kill-server` with as many.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use holdfast_api::proto::daemon::v1 as daemon_pb;
use rustix::process::{Pid, Signal, kill_process};

use super::Ctx;
use holdfast_plumbing::proc_stat::zombie_children;

use crate::report::{Figure, Role, Row};
use crate::services::{Daemon, Home, spawn_request};
use crate::stats::{Samples, time_blocking};
use crate::tmux::Tmux;
use holdfast_plumbing::proc_usage::{anon_rss_kib, open_fds, rss_kib, threads};

const NAME: &str = "9. leaks and stop time";

struct Usage {
    fds: usize,
    threads: u64,
    rss_kib: u64,
    anon_rss_kib: u64,
    zombies: usize,
}

fn usage(pid: i32) -> Usage {
    Usage {
        fds: open_fds(pid),
        threads: threads(pid),
        rss_kib: rss_kib(pid),
        anon_rss_kib: anon_rss_kib(pid),
        zombies: zombie_children(pid),
    }
}

/// `cycles` sessions started and killed, one after another, each waited
/// for until the daemon reports it gone.
async fn cycle(daemon: &mut Daemon, first: usize, cycles: usize) -> Result<()> {
    let client = &mut daemon.client;
    let mut exits = client
        .watch_sessions(daemon_pb::WatchSessionsRequest {})
        .await?
        .into_inner();
    for i in first..first + cycles {
        let id = format!("cycle-{i}");
        client.spawn(spawn_request(&id, &["sleep", "60"])).await?;
        client
            .kill(daemon_pb::KillRequest {
                session_id: id.clone(),
                ..Default::default()
            })
            .await?;
        loop {
            let event = exits.message().await?.context("the watch stream ended")?;
            match event.event {
                Some(daemon_pb::watch_sessions_response::Event::Exited(e))
                    if e.session_id == id =>
                {
                    break;
                }
                Some(daemon_pb::watch_sessions_response::Event::Lagged(_)) => {
                    bail!("the watcher lagged")
                }
                _ => {}
            }
        }
    }
    Ok(())
}

pub async fn run(ctx: &mut Ctx) -> Result<()> {
    let cycles = ctx.scale.leak_cycles;
    let home = Home::new()?;
    let mut daemon = home.start_daemon(&ctx.bins).await?;
    let pid = daemon.pid();
    cycle(&mut daemon, 0, 100).await?;
    daemon.wait_until_empty().await?;
    let before = usage(pid);
    let start = Instant::now();
    cycle(&mut daemon, 100, cycles).await?;
    let per_cycle = start.elapsed() / cycles as u32;
    daemon.wait_until_empty().await?;
    // Idle blocking-pool threads retire after 10 s: wait (bounded) for the
    // baseline.
    let settle = Instant::now() + Duration::from_secs(15);
    let mut after = usage(pid);
    while (after.fds > before.fds || after.threads > before.threads) && Instant::now() < settle {
        tokio::time::sleep(Duration::from_millis(100)).await;
        after = usage(pid);
    }
    let growth = (after.rss_kib as f64 / before.rss_kib as f64 - 1.0) * 100.0;

    // Stop time with many sessions.
    let count = ctx.scale.stop_sessions;
    for i in 0..count {
        daemon
            .client
            .spawn(spawn_request(&format!("stop-{i}"), &["sleep", "86400"]))
            .await?;
    }
    let start = Instant::now();
    kill_process(Pid::from_raw(pid).expect("pid"), Signal::TERM)?;
    // Polled, not waited on: the client must keep running to answer the
    // daemon's GOAWAY, or the stop would include its 1 s grace for clients.
    let status = loop {
        if let Some(status) = daemon.child.try_wait()? {
            break status;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    };
    let stop = start.elapsed();
    if !status.success() {
        bail!("the daemon stopped with {status}");
    }

    let tmux = Tmux::start()?;
    let mut control = tmux.control("base")?;
    for i in 0..count {
        control.send(&format!("new-session -d -s s{i} sleep 86400"))?;
    }
    for _ in 0..count {
        control.reply(true)?;
    }
    drop(control);
    let (tmux_stop, done) = time_blocking(|| tmux.run(&["kill-server"]));
    done?;

    let report = &mut ctx.report;
    let back = after.fds <= before.fds && after.threads <= before.threads && after.zombies == 0;
    report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            "daemon open fds after the cycles",
            Figure::Amount { value: after.fds as f64, unit: "fds" },
        )
        .target("fds, threads, zombies back to baseline", back)
        .note(format!(
            "{cycles} spawn/kill cycles, {per_cycle:?} each; before: {} fds, {} threads; after: {} threads, {} zombies",
            before.fds, before.threads, after.threads, after.zombies
        )),
    );
    report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            "daemon RSS growth over the cycles",
            Figure::Amount {
                value: growth,
                unit: "%",
            },
        )
        .target("≤ 5 %", growth <= 5.0)
        .note(format!(
            "{} → {} KiB; of it anonymous (heap, stacks) {} → {} KiB",
            before.rss_kib, after.rss_kib, before.anon_rss_kib, after.anon_rss_kib
        )),
    );
    let mut stop_samples = Samples::default();
    stop_samples.push(stop);
    report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            "daemon stop (SIGTERM → exit)",
            Figure::latency(&stop_samples),
        )
        .target("≤ 2 s", stop <= Duration::from_secs(2))
        .note(format!("{count} sessions hung up and reaped")),
    );
    let mut peer = Samples::default();
    peer.push(tmux_stop);
    report.add(Row::new(
        NAME,
        Role::Peer,
        "`tmux kill-server`",
        Figure::latency(&peer),
    ));
    Ok(())
}
