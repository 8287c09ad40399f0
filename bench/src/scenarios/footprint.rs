//! Scenario 6: Footprint of idle `sleep` sessions.
//!
//! The sessions run in a daemon of their own. It measures the daemon's
//! threads, and its resident memory per session beyond the scrollback bytes
//! it holds. Beside it is a tmux server with as many sessions.

use std::time::Duration;

use anyhow::{Result, ensure};
use holdfast_api::proto::daemon::v1 as daemon_pb;

use super::Ctx;
use crate::report::{Figure, Role, Row};
use crate::services::{Home, spawn_request};
use crate::tmux::Tmux;
use holdfast_plumbing::proc_usage::{rss_kib, threads};

const NAME: &str = "6. footprint of idle sessions";

pub async fn run(ctx: &mut Ctx) -> Result<()> {
    let count = ctx.scale.idle_sessions;
    let home = Home::new()?;
    let daemon = home.start_daemon(&ctx.bins).await?;
    let mut client = daemon.client.clone();
    // Warm up: the first sessions allocate the runtime's and allocator's pools.
    for i in 0..10 {
        client
            .spawn(spawn_request(&format!("warm-{i}"), &["true"]))
            .await?;
    }
    daemon.wait_until_empty().await?;
    let pid = daemon.pid();
    let (rss_before, threads_before) = (rss_kib(pid), threads(pid));
    for i in 0..count {
        client
            .spawn(spawn_request(&format!("idle-{i}"), &["sleep", "86400"]))
            .await?;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let list = client
        .list(daemon_pb::ListRequest::default())
        .await?
        .into_inner();
    ensure!(
        list.sessions.iter().filter(|s| s.alive).count() == count,
        "not every session is alive"
    );
    let held: u64 = list.sessions.iter().map(|s| s.output_offset).sum();
    let (rss_after, threads_after) = (rss_kib(pid), threads(pid));
    let per_session = (rss_after.saturating_sub(rss_before) as f64 * 1024.0 - held as f64)
        / count as f64
        / 1024.0;

    let tmux = Tmux::start()?;
    let server = tmux.server_pid()?;
    let tmux_before = rss_kib(server);
    let mut control = tmux.control("base")?;
    for i in 0..count {
        control.send(&format!("new-session -d -s s{i} sleep 86400"))?;
    }
    for _ in 0..count {
        control.reply(true)?;
    }
    let tmux_per_session = rss_kib(server).saturating_sub(tmux_before) as f64 / count as f64;
    let tmux_threads = threads(server);

    let report = &mut ctx.report;
    report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            "daemon RSS per idle session",
            Figure::Amount {
                value: per_session,
                unit: "KiB",
            },
        )
        .target("≤ 16 KiB", per_session <= 16.0)
        .note(format!(
            "{count} sessions: {rss_before} → {rss_after} KiB, {held} scrollback bytes held"
        )),
    );
    report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            "daemon threads",
            Figure::Amount {
                value: threads_after as f64,
                unit: "threads",
            },
        )
        .target("≤ 16", threads_after <= 16)
        .note(format!("{threads_before} before the sessions")),
    );
    report.add(Row::new(
        NAME,
        Role::Peer,
        "tmux server RSS per idle session",
        Figure::Amount {
            value: tmux_per_session,
            unit: "KiB",
        },
    ));
    report.add(Row::new(
        NAME,
        Role::Peer,
        "tmux server threads",
        Figure::Amount {
            value: tmux_threads as f64,
            unit: "threads",
        },
    ));
    Ok(())
}
