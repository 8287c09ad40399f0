//! Scenario 10: Daemon upgrade in place.
//!
//! A daemon holds many sessions, a few of them flooding (`yes`), each of
//! those drained by an attacher that attaches again from its offset when
//! an upgrade ends its stream. The daemon is upgraded to its own binary,
//! round after round. Timed: from the `Upgrade` request to the new image's
//! first `List` answer, and in each round the longest pause any attacher
//! saw between two chunks of output.
//!
//! Floors from the same run: a `List` of the same daemon without a switch,
//! and quiet rounds between the upgrades, as long, where attachers pause
//! only because two CPUs are shared by ten floods and their readers.

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

/// How long output flows after a switch, before the next round.
const SETTLE: Duration = Duration::from_millis(200);

/// How long a quiet round lasts: about as long as an upgrade round.
const QUIET: Duration = Duration::from_millis(260);

/// Where in a quiet round its window starts.
const QUIET_WINDOW_AT: Duration = Duration::from_millis(100);

/// The floors' subjects.
const QUIET_PAUSES: &str = "longest attacher pause, no upgrade";
const LIST: &str = "List of the same daemon";

/// A stretch of time: a round, or a pause between two chunks.
type Span = (Instant, Instant);

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
    // Each upgrade's window runs from its request to the new image's
    // first answer; a quiet round's is as long, without an upgrade.
    let (mut upgrade_windows, mut quiet_rounds) = (Vec::new(), Vec::new());
    for round in 0..ctx.scale.upgrade_rounds {
        quiet_rounds.push(Instant::now());
        tokio::time::sleep(QUIET).await;

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
        upgrade_windows.push((started, Instant::now()));
        // Output flows again everywhere before the next round.
        tokio::time::sleep(SETTLE).await;
    }
    stop.store(true, Ordering::Release);
    let mut pauses = Vec::new();
    for attacher in attachers {
        pauses.extend(attacher.await??);
    }
    let quiet_windows: Vec<Span> = quiet_rounds
        .iter()
        .map(|start| {
            (
                *start + QUIET_WINDOW_AT,
                *start + QUIET_WINDOW_AT + switches.p50(),
            )
        })
        .collect();
    let upgrade_pauses = longest_pauses(&upgrade_windows, &pauses);
    let quiet_pauses = longest_pauses(&quiet_windows, &pauses);
    let report = &mut ctx.report;
    report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            "Upgrade → first List of the new image",
            Figure::latency(&switches),
        )
        .against(LIST)
        .target("p50 ≤ 50 ms", switches.p50() <= Duration::from_millis(50))
        .note(format!(
            "{count} sessions, {flooding} flooding with an attacher each; {} upgrades",
            switches.len()
        )),
    );
    let worst = upgrade_pauses.quantile(1.0);
    report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            "longest attacher pause across an upgrade",
            Figure::latency(&upgrade_pauses),
        )
        .against(QUIET_PAUSES)
        .target("worst ≤ 100 ms", worst <= Duration::from_millis(100))
        .note(format!(
            "worst {}; overlapping request to first answer; attaching again included",
            crate::report::micros(worst)
        )),
    );
    report.add(
        Row::new(
            NAME,
            Role::Floor,
            QUIET_PAUSES,
            Figure::latency(&quiet_pauses),
        )
        .note(format!(
            "worst {}; as long a window of the same floods and attachers",
            crate::report::micros(quiet_pauses.quantile(1.0))
        )),
    );
    report.add(Row::new(NAME, Role::Floor, LIST, Figure::latency(&lists)));
    Ok(())
}

/// For each window, the longest pause that overlaps it.
fn longest_pauses(windows: &[Span], pauses: &[Span]) -> Samples {
    let mut longest = Samples::default();
    for &(start, end) in windows {
        let worst = pauses
            .iter()
            .filter(|(from, to)| *from < end && *to > start)
            .map(|(from, to)| *to - *from)
            .max()
            .unwrap_or_default();
        longest.push(worst);
    }
    longest
}

/// Reads a session's output until `stop`, attaching again from its offset
/// whenever a stream ends; every pause of over a millisecond between two
/// chunks.
async fn drain(
    socket: std::path::PathBuf,
    session_id: String,
    stop: Arc<AtomicBool>,
) -> Result<Vec<Span>> {
    use daemon_pb::attach_response::Event;
    let (mut next, mut last, mut pauses) = (None::<u64>, None::<Instant>, Vec::new());
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
                if let Some(last) = last
                    && now - last > Duration::from_millis(1)
                {
                    pauses.push((last, now));
                }
                last = Some(now);
                next = Some(output.offset + output.data.len() as u64);
            }
        }
    }
    Ok(pauses)
}
