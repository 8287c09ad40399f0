//! Scenario 12: Watching instead of polling (`WatchSessions`).
//!
//! One watcher of a workspace; a session is created, and timed is the gap
//! from `CreateSession`'s answer to the watcher's `added` event. The floor
//! beside it, from the same run: a `ListSessions` of the same workspace,
//! what a client that polls pays for every look.
//!
//! Then many watchers of one workspace, while sessions are created and
//! disposed of: the host's resident memory per watcher, its CPU time per
//! change delivered to all of them, and how long the last watcher waits
//! for the last change.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use holdfast_api::proto::host::v1 as pb;
use holdfast_plumbing::proc_usage::rss_kib;
use pb::watch_sessions_response::Event;
use tonic::Streaming;

use super::Ctx;
use crate::report::{Figure, Role, Row};
use crate::services::Home;
use crate::stats::Samples;

const NAME: &str = "12. watching instead of polling";

/// How many watch streams share one connection.
const STREAMS_PER_CONNECTION: usize = 100;

pub async fn run(ctx: &mut Ctx) -> Result<()> {
    let home = Home::new()?;
    let mut host = home.start_host(&ctx.bins, &[]).await?;
    let workspace = host.workspace("watched").await?;
    let mut watcher = watch(&host.terminals, &workspace).await?;
    let (mut events, mut lists) = (Samples::default(), Samples::default());
    let mut answers = Samples::default();
    let mut behind = Vec::new();
    for _ in 0..ctx.scale.watch_samples {
        let sent = Instant::now();
        let session = host.create(&workspace, &["sleep", "86400"]).await?;
        let answered = sent.elapsed();
        until_added(&mut watcher, &session.session_id).await?;
        let told = sent.elapsed();
        answers.push(answered);
        events.push(told);
        behind.push(told.saturating_sub(answered));
        let started = Instant::now();
        host.list(&workspace).await?;
        lists.push(started.elapsed());
    }
    behind.sort();
    let behind_p50 = behind.get(behind.len() / 2).copied().unwrap_or_default();
    let floor = "CreateSession sent → its answer";
    ctx.report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            "CreateSession sent → the watcher's event",
            Figure::latency(&events),
        )
        .against(floor)
        .target(
            "event p50 ≤ 1 ms after the answer",
            behind_p50 <= Duration::from_millis(1),
        )
        .note(format!(
            "one watcher, over TCP loopback; the event came {:.0} µs after the answer (p50)",
            behind_p50.as_secs_f64() * 1e6
        )),
    );
    ctx.report.add(Row::new(
        NAME,
        Role::Floor,
        floor,
        Figure::latency(&answers),
    ));
    ctx.report.add(Row::new(
        NAME,
        Role::Floor,
        format!(
            "a poll instead: ListSessions of the same workspace (up to {} sessions)",
            ctx.scale.watch_samples
        ),
        Figure::latency(&lists),
    ));
    many(ctx, host).await
}

/// Many watchers while sessions come and go.
async fn many(ctx: &mut Ctx, mut host: crate::services::Host) -> Result<()> {
    let count = ctx.scale.watchers;
    let workspace = host.workspace("crowded").await?;
    let pid = host.child.id() as i32;
    let before = rss_kib(pid);
    let mut watchers = Vec::with_capacity(count);
    let mut connection = None;
    for index in 0..count {
        if index % STREAMS_PER_CONNECTION == 0 {
            let channel = tonic::transport::Channel::from_shared(host.uri.clone())?
                .connect()
                .await?;
            connection = Some(pb::terminal_service_client::TerminalServiceClient::new(
                channel,
            ));
        }
        let client = connection.as_ref().context("a connection")?;
        watchers.push(watch(client, &workspace).await?);
    }
    let opened = rss_kib(pid);
    let cpu_before = cpu_ticks(pid);
    let churn = ctx.scale.watch_churn;
    let started = Instant::now();
    let mut last = String::new();
    for _ in 0..churn {
        let session = host.create(&workspace, &["sleep", "86400"]).await?;
        host.terminals
            .dispose_session(pb::DisposeSessionRequest {
                session_id: session.session_id.clone(),
                ..Default::default()
            })
            .await?;
        last = session.session_id;
    }
    // Every watcher sees the last session leave: read all at once, as
    // their streams share connections (one read alone would wait behind
    // the others' unread data).
    let told = watchers
        .iter_mut()
        .map(|watcher| until_removed(watcher, &last));
    futures_util::future::try_join_all(told).await?;
    let all_told = started.elapsed();
    let cpu = cpu_ticks(pid).saturating_sub(cpu_before);
    let changes = (churn * 2) as f64;
    let per_watcher = (opened.saturating_sub(before)) as f64 / count as f64;
    let cpu_ms_per_change = cpu as f64 * 10.0 / changes;
    ctx.report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            format!("host memory per watcher ({count} watchers)"),
            Figure::Amount {
                value: per_watcher,
                unit: "KiB",
            },
        )
        .note(format!(
            "{churn} sessions created and disposed of while watched: {cpu_ms_per_change:.2} ms of host CPU per change, all {count} told of the last in {:.0} ms",
            all_told.as_secs_f64() * 1000.0
        )),
    );
    Ok(())
}

/// A watch of `workspace_id`, its first message (the whole list) read.
async fn watch(
    client: &pb::terminal_service_client::TerminalServiceClient<tonic::transport::Channel>,
    workspace_id: &str,
) -> Result<Streaming<pb::WatchSessionsResponse>> {
    let mut stream = client
        .clone()
        .watch_sessions(pb::WatchSessionsRequest {
            workspace_id: workspace_id.to_owned(),
            since_revision: None,
        })
        .await?
        .into_inner();
    stream.message().await?.context("the first list")?;
    Ok(stream)
}

async fn until_added(watcher: &mut Streaming<pb::WatchSessionsResponse>, id: &str) -> Result<()> {
    loop {
        let message = watcher.message().await?.context("the watch ended")?;
        if let Some(Event::Added(session)) = message.event
            && session.session_id == id
        {
            return Ok(());
        }
    }
}

async fn until_removed(watcher: &mut Streaming<pb::WatchSessionsResponse>, id: &str) -> Result<()> {
    loop {
        let message = watcher.message().await?.context("the watch ended")?;
        match message.event {
            Some(Event::Removed(removed)) if removed.session_id == id => return Ok(()),
            // A watcher resynced: the list says whether it is gone.
            Some(Event::List(list)) if !list.sessions.iter().any(|s| s.session_id == id) => {
                return Ok(());
            }
            _ => {}
        }
    }
}

/// The process's user and system CPU time, in clock ticks (10 ms).
fn cpu_ticks(pid: i32) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    // The fields after the command (which may hold spaces) in parentheses.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let field = |n: usize| {
        fields
            .get(n)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 of the whole line.
    field(11) + field(12)
}
