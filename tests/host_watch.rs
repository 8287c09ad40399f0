//! `WatchSessions`: the whole list, then each change, with revisions that
//! only grow; resumed from a revision; resynced after a restart. Real
//! host-service, daemon and programs.

mod support;

use holdfast_api::proto::host::v1 as pb;
use pb::watch_sessions_response::Event;
use rustix::process::Signal;
use support::host::*;
use support::*;

type Watch = tonic::Streaming<pb::WatchSessionsResponse>;

async fn watch(host: &HostService, workspace_id: &str, since: Option<u64>) -> Watch {
    host.terminals
        .clone()
        .watch_sessions(pb::WatchSessionsRequest {
            workspace_id: workspace_id.to_owned(),
            since_revision: since,
        })
        .await
        .expect("watch")
        .into_inner()
}

/// The next message, within the tests' patience.
async fn next(watch: &mut Watch) -> pb::WatchSessionsResponse {
    tokio::time::timeout(PATIENCE, watch.message())
        .await
        .expect("an event in time")
        .expect("the stream goes on")
        .expect("not ended")
}

/// Messages until one `accept` takes; every one read is kept in `seen`.
async fn until(
    watch: &mut Watch,
    seen: &mut Vec<pb::WatchSessionsResponse>,
    accept: impl Fn(&Event) -> bool,
) -> pb::WatchSessionsResponse {
    loop {
        let message = next(watch).await;
        seen.push(message.clone());
        if message.event.as_ref().is_some_and(&accept) {
            return message;
        }
    }
}

fn the_list(message: &pb::WatchSessionsResponse) -> &pb::WatchedList {
    match &message.event {
        Some(Event::List(list)) => list,
        other => panic!("expected the whole list, got {other:?}"),
    }
}

/// Ids and names, as a list and a watch both show them.
fn shown(sessions: &[pb::Session]) -> Vec<(String, String, bool)> {
    sessions
        .iter()
        .map(|s| (s.session_id.clone(), s.name.clone(), s.attached))
        .collect()
}

#[tokio::test]
async fn a_watch_sees_every_change_in_order_and_resumes() {
    let home = HostHome::new();
    // Hubs that never look unprompted: every change below is pushed, by
    // memory or by the daemon (the title, the exit).
    let mut host = home
        .start_with_env(&[], &[("HOLDFAST_WATCH_POLL_MS", "600000")])
        .await;
    let workspace = host.create_workspace("watched").await.workspace_id;
    let mut watcher = watch(&host, &workspace, None).await;
    let first = next(&mut watcher).await;
    assert!(the_list(&first).sessions.is_empty() && the_list(&first).resync);
    let mut seen = vec![first.clone()];

    // Created, then renamed, then attached and detached.
    let cat = host
        .create_session(session_request(&workspace, &["cat"]))
        .await;
    let added = until(&mut watcher, &mut seen, |e| matches!(e, Event::Added(_))).await;
    let Some(Event::Added(session)) = &added.event else {
        unreachable!()
    };
    assert_eq!(session.session_id, cat.session_id);
    assert!(session.alive && session.pid == cat.pid, "{session:?}");
    let hidden = {
        let mut request = session_request(&workspace, &["cat"]);
        request.listed = Some(false);
        host.create_session(request).await.session_id
    };
    host.terminals
        .rename_session(pb::RenameSessionRequest {
            session_id: cat.session_id.clone(),
            name: "renamed".into(),
        })
        .await
        .expect("rename");
    until(
        &mut watcher,
        &mut seen,
        |e| matches!(e, Event::Changed(s) if s.name == "renamed"),
    )
    .await;
    let resume_from = seen.last().expect("seen").revision;
    let attached = host.attach(&cat.session_id, None).await;
    until(
        &mut watcher,
        &mut seen,
        |e| matches!(e, Event::Changed(s) if s.attached),
    )
    .await;
    drop(attached);
    until(
        &mut watcher,
        &mut seen,
        |e| matches!(e, Event::Changed(s) if !s.attached),
    )
    .await;

    // A title the program sets, then its exit with a status.
    let shell = host
        .create_session(session_request(&workspace, &["sh"]))
        .await;
    host.write_input(&shell.session_id, "printf '\\033]0;busy\\007'\n")
        .await;
    until(
        &mut watcher,
        &mut seen,
        |e| matches!(e, Event::Changed(s) if s.session_id == shell.session_id && s.title == "busy"),
    )
    .await;
    host.write_input(&shell.session_id, "exit 3\n").await;
    let exited = until(&mut watcher, &mut seen, |e| matches!(e, Event::Removed(_))).await;
    let Some(Event::Removed(removed)) = &exited.event else {
        unreachable!()
    };
    assert_eq!(removed.session_id, shell.session_id);
    assert_eq!(removed.reason(), pb::Removal::Exited);
    assert_eq!(removed.exit_code, Some(3), "{removed:?}");

    // Disposed.
    host.dispose(&cat.session_id).await;
    let disposed = until(&mut watcher, &mut seen, |e| matches!(e, Event::Removed(_))).await;
    let Some(Event::Removed(removed)) = &disposed.event else {
        unreachable!()
    };
    assert_eq!(
        (removed.session_id.as_str(), removed.reason()),
        (cat.session_id.as_str(), pb::Removal::Disposed)
    );

    // In order, revisions only growing, the hidden session never shown.
    let revisions: Vec<u64> = seen.iter().map(|m| m.revision).collect();
    assert!(revisions.windows(2).all(|w| w[0] < w[1]), "{revisions:?}");
    assert!(
        !format!("{seen:?}").contains(&hidden),
        "a hidden session was shown"
    );

    // A watch resumed from a revision gets exactly what came after it.
    let last = seen.last().expect("seen").revision;
    let mut resumed = watch(&host, &workspace, Some(resume_from)).await;
    let mut again = Vec::new();
    while again
        .last()
        .is_none_or(|m: &pb::WatchSessionsResponse| m.revision < last)
    {
        again.push(next(&mut resumed).await);
    }
    let after: Vec<_> = seen
        .iter()
        .filter(|m| m.revision > resume_from)
        .cloned()
        .collect();
    assert_eq!(again, after);

    // After a restart, a watcher resuming from its revision is resynced:
    // the whole list, as ListSessions gives it.
    let still = host
        .create_session(session_request(&workspace, &["cat"]))
        .await;
    until(
        &mut watcher,
        &mut seen,
        |e| matches!(e, Event::Added(s) if s.session_id == still.session_id),
    )
    .await;
    let before_restart = seen.last().expect("seen").revision;
    host.stop(Signal::KILL);
    let host = home.start(&[]).await;
    let list = host
        .list_until("the restored list", &workspace, |list| {
            is_complete(list) && list.sessions.len() == 1
        })
        .await;
    let mut watcher = watch(&host, &workspace, Some(before_restart)).await;
    let resync = next(&mut watcher).await;
    assert!(resync.revision > before_restart);
    let resynced = the_list(&resync);
    assert!(resynced.resync);
    assert_eq!(shown(&resynced.sessions), shown(&list.sessions));
}

#[tokio::test]
async fn a_watch_of_a_missing_workspace_is_refused() {
    let home = HostHome::new();
    let host = home.start(&[]).await;
    let refused = host
        .terminals
        .clone()
        .watch_sessions(pb::WatchSessionsRequest {
            workspace_id: uuid::Uuid::new_v4().to_string(),
            since_revision: None,
        })
        .await;
    expect_status(refused, tonic::Code::NotFound, "workspace");
    let refused = host
        .terminals
        .clone()
        .watch_sessions(pb::WatchSessionsRequest {
            workspace_id: "not an id".into(),
            since_revision: None,
        })
        .await;
    expect_status(refused, tonic::Code::InvalidArgument, "workspace_id");
}

/// A hung daemon turns the watch's source memory-only, within the list's
/// deadline and a poll, and complete again once it answers; the session
/// memory holds stays listed throughout.
#[tokio::test]
async fn a_hung_daemon_turns_the_source_memory_only_and_back() {
    let home = HostHome::new();
    let mut host = home.start(&["--daemon-deadline-ms", "250"]).await;
    let workspace = host.create_workspace("hung").await.workspace_id;
    let session = host
        .create_session(session_request(&workspace, &["sleep", "1000"]))
        .await;
    let mut watcher = watch(&host, &workspace, None).await;
    let first = next(&mut watcher).await;
    assert_eq!(shown(&the_list(&first).sessions).len(), 1);
    let daemon = hang_the_daemon(&home).await;
    let mut seen = Vec::new();
    let degraded = until(&mut watcher, &mut seen, |e| matches!(e, Event::Source(_))).await;
    let _ = rustix::process::kill_process(daemon, Signal::CONT);
    let Some(Event::Source(change)) = &degraded.event else {
        unreachable!()
    };
    assert_eq!(change.source(), pb::Source::MemoryOnly);
    assert!(change.degraded_reason.contains("daemon"), "{change:?}");
    let back = until(&mut watcher, &mut seen, |e| matches!(e, Event::Source(_))).await;
    let Some(Event::Source(change)) = &back.event else {
        unreachable!()
    };
    assert_eq!(change.source(), pb::Source::Complete);
    assert!(
        !seen.iter().any(
            |m| matches!(&m.event, Some(Event::Removed(r)) if r.session_id == session.session_id)
        ),
        "{seen:?}"
    );
}

/// A watcher that stops reading holds nobody up and costs a bounded
/// queue: once it reads again it gets the whole list (a resync), as it is
/// now, while another watcher saw every change.
#[tokio::test]
async fn a_watcher_that_stops_reading_is_resynced_not_buffered() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("slow").await.workspace_id;
    let session = host
        .create_session(session_request(&workspace, &["cat"]))
        .await;
    // The stalled watcher's connection takes almost nothing in flight, so
    // what it does not read stays on the host's side.
    let small = tonic::transport::Endpoint::from_shared(host.address.clone())
        .expect("address")
        .initial_stream_window_size(1024)
        .initial_connection_window_size(1024)
        .connect()
        .await
        .expect("connect");
    let mut stalled = pb::terminal_service_client::TerminalServiceClient::new(small)
        .watch_sessions(pb::WatchSessionsRequest {
            workspace_id: workspace.clone(),
            since_revision: None,
        })
        .await
        .expect("watch")
        .into_inner();
    let mut reader = watch(&host, &workspace, None).await;
    next(&mut stalled).await;
    next(&mut reader).await;
    // Far more changes than the host's send buffer and a watcher's
    // allowance together hold: long names make big events.
    const RENAMES: usize = 1500;
    let mut seen = Vec::new();
    for round in 0..RENAMES {
        let name = format!("{round:>190}");
        host.terminals
            .rename_session(pb::RenameSessionRequest {
                session_id: session.session_id.clone(),
                name: name.clone(),
            })
            .await
            .expect("rename");
        // The reader keeps up, so each rename is an event of its own.
        until(
            &mut reader,
            &mut seen,
            |e| matches!(e, Event::Changed(s) if s.name == name),
        )
        .await;
    }
    let last = format!("{:>190}", RENAMES - 1);
    let mut read = Vec::new();
    let resync = until(&mut stalled, &mut read, |e| matches!(e, Event::List(_))).await;
    let list = the_list(&resync);
    assert!(list.resync);
    assert_eq!(list.sessions[0].name, last);
    assert!(
        read.len() < RENAMES,
        "{} messages held for a watcher that did not read",
        read.len()
    );
}

/// The daemon upgrading in place and the daemon restarting are told on
/// the watch: an upgrade keeps every session; a restart is followed by
/// the sessions lost with the old daemon.
#[tokio::test]
async fn a_watch_is_told_of_the_daemon_upgrading_and_restarting() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("daemon").await.workspace_id;
    let session = host
        .create_session(session_request(&workspace, &["sleep", "1000"]))
        .await;
    let mut watcher = watch(&host, &workspace, None).await;
    let mut seen = vec![next(&mut watcher).await];
    let pid = home.serving_daemon_pid().await.expect("a daemon serves");

    let mut status = pb::status_service_client::StatusServiceClient::connect(host.address.clone())
        .await
        .expect("status client");
    let upgraded = status
        .upgrade_daemon(pb::UpgradeDaemonRequest { force: true })
        .await
        .expect("upgrade")
        .into_inner();
    assert!(upgraded.upgraded);
    let told = until(&mut watcher, &mut seen, |e| matches!(e, Event::Daemon(_))).await;
    let Some(Event::Daemon(change)) = told.event else {
        unreachable!()
    };
    assert_eq!(change.kind(), pb::DaemonChangeKind::Upgraded);
    assert_eq!(change.pid as i32, pid);
    assert!(
        !seen
            .iter()
            .any(|m| matches!(m.event, Some(Event::Removed(_)))),
        "an upgrade keeps every session: {seen:?}"
    );

    assert_eq!(home.kill_daemon().await, pid);
    let told = until(&mut watcher, &mut seen, |e| matches!(e, Event::Daemon(_))).await;
    let Some(Event::Daemon(change)) = told.event else {
        unreachable!()
    };
    assert_eq!(change.kind(), pb::DaemonChangeKind::Restarted);
    assert_ne!(change.pid as i32, pid);
    let gone = until(&mut watcher, &mut seen, |e| matches!(e, Event::Removed(_))).await;
    let Some(Event::Removed(gone)) = gone.event else {
        unreachable!()
    };
    assert_eq!(gone.session_id, session.session_id);
    let revisions: Vec<u64> = seen.iter().map(|m| m.revision).collect();
    assert!(revisions.is_sorted(), "{revisions:?}");
}
