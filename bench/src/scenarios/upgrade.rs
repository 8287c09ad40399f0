//! Scenario 10: Daemon upgrade in place.
//!
//! A daemon holds many sessions, a few of them flooding (`yes`), each of
//! those drained by an attacher that attaches again from its offset when
//! an upgrade ends its stream. The daemon is upgraded to its own binary,
//! round after round. Timed: from the `Upgrade` request to the new image's
//! first `List` answer, and the longest pause any attacher saw between two
//! chunks of output. The floor is a `List` of the same daemon, without a
//! switch.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use holdfast_api::proto::daemon::v1 as daemon_pb;
use holdfast_plumbing::daemon_client::{self, DaemonClient};

use super::Ctx;
use crate::report::{Figure, Role, Row};
use crate::services::{Home, spawn_request};
use crate::stats::Samples;

const NAME: &str = "10. daemon upgrade in place";

/// How long a client waits before it tries again during a switch.
const RETRY: Duration = Duration::from_millis(2);

pub async fn run(ctx: &mut Ctx) -> Result<()> {
    let (count, flooding) = (ctx.scale.upgrade_sessions, ctx.scale.upgrade_flooding);
    let home = Home::new()?;
    let daemon = home.start_daemon(&ctx.bins).await?;
    let mut client = daemon.client.clone();
    let mut floods = Vec::new();
    for index in 0..count {
        let argv: &[&str] = if index < flooding {
            &["yes"]
        } else {
            &["sleep", "86400"]
        };
        let session = client
            .spawn(spawn_request("", argv))
            .await?
            .into_inner()
            .session
            .context("spawned")?;
        if index < flooding {
            floods.push(session.session_id);
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let attachers: Vec<_> = floods
        .into_iter()
        .map(|session_id| tokio::spawn(drain(home.socket(), session_id, Arc::clone(&stop))))
        .collect();
    // Every attacher has output flowing before the first switch.
    tokio::time::sleep(Duration::from_millis(300)).await;

    let (mut switches, mut lists) = (Samples::default(), Samples::default());
    for round in 0..ctx.scale.upgrade_rounds {
        let started = Instant::now();
        client.list(daemon_pb::ListRequest::default()).await?;
        lists.push(started.elapsed());

        let started = Instant::now();
        client
            .upgrade(daemon_pb::UpgradeRequest::default())
            .await
            .context("upgrade")?;
        let socket = home.socket();
        loop {
            if let Ok(mut fresh) = daemon_client::connect(&socket, Duration::from_secs(1)).await
                && let Ok(list) = fresh.list(daemon_pb::ListRequest::default()).await
                && list
                    .into_inner()
                    .daemon
                    .is_some_and(|info| info.upgrades == round as u32 + 1)
            {
                client = fresh;
                break;
            }
            anyhow::ensure!(
                started.elapsed() < Duration::from_secs(20),
                "the upgrade did not finish"
            );
            // As a real client backs off: a tight loop would take the CPU
            // from the daemon it waits for.
            tokio::time::sleep(RETRY).await;
        }
        switches.push(started.elapsed());
        // Output flows again everywhere before the next round.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    stop.store(true, Ordering::Release);
    let mut worst = Duration::ZERO;
    for attacher in attachers {
        worst = worst.max(attacher.await??);
    }
    let report = &mut ctx.report;
    report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            "Upgrade → first List of the new image",
            Figure::latency(&switches),
        )
        .target("p50 ≤ 50 ms", switches.p50() <= Duration::from_millis(50))
        .note(format!(
            "{count} sessions, {flooding} flooding with an attacher each; {} upgrades",
            switches.len()
        )),
    );
    let mut pauses = Samples::default();
    pauses.push(worst);
    report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            "longest pause of any attacher",
            Figure::latency(&pauses),
        )
        .target("≤ 100 ms", worst <= Duration::from_millis(100))
        .note("between two output chunks, attaching again from its offset included"),
    );
    report.add(Row::new(
        NAME,
        Role::Floor,
        "List of the same daemon",
        Figure::latency(&lists),
    ));
    Ok(())
}

/// Reads a session's output until `stop`, attaching again from its offset
/// whenever a stream ends; the longest time between two chunks.
async fn drain(
    socket: std::path::PathBuf,
    session_id: String,
    stop: Arc<AtomicBool>,
) -> Result<Duration> {
    use daemon_pb::attach_response::Event;
    let (mut next, mut last, mut worst) = (None::<u64>, None::<Instant>, Duration::ZERO);
    while !stop.load(Ordering::Acquire) {
        let Ok(mut client): Result<DaemonClient, _> =
            daemon_client::connect(&socket, Duration::from_secs(1)).await
        else {
            tokio::time::sleep(RETRY).await;
            continue;
        };
        let request = daemon_pb::AttachRequest {
            session_id: session_id.clone(),
            from_offset: next,
            ..Default::default()
        };
        let Ok(stream) = client.attach(request).await else {
            tokio::time::sleep(RETRY).await;
            continue;
        };
        let mut stream = stream.into_inner();
        while !stop.load(Ordering::Acquire) {
            let Ok(Some(message)) = stream.message().await else {
                break;
            };
            if let Some(Event::Output(output)) = message.event {
                let now = Instant::now();
                if let Some(last) = last {
                    worst = worst.max(now - last);
                }
                last = Some(now);
                next = Some(output.offset + output.data.len() as u64);
            }
        }
    }
    Ok(worst)
}
