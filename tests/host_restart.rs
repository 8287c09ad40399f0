//! The mission: background sessions stay listed across host-service restarts.
//!
//! The first query is answered from the daemon and the database. The tests
//! run the real host-service, which launches the real daemon, over real
//! sockets.

mod support;

use std::time::{Duration, Instant};

use holdfast_api::proto::daemon::v1 as daemon_pb;
use holdfast_api::proto::host::v1 as pb;
use holdfast_api::proto::host::v1::status_service_client::StatusServiceClient;
use holdfast_api::proto::host::v1::terminal_service_client::TerminalServiceClient;
use rustix::process::{Pid, Signal};
use support::host::*;
use support::*;
use tonic::transport::Channel;
use tonic_health::pb::health_check_response::ServingStatus;

#[tokio::test]
async fn background_sessions_survive_host_restarts_in_every_list() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("restart").await.workspace_id;

    let mut plain = session_request(
        &workspace,
        &[
            "sh",
            "-c",
            "printf '\\033]2;agent: working\\007'; echo ready; exec cat",
        ],
    );
    plain.title = Some("given title".into());
    let plain = host.create_session(plain).await;
    let mut hidden = session_request(&workspace, &["sleep", "1000"]);
    hidden.listed = Some(false);
    let hidden = host.create_session(hidden).await;
    let doomed = host
        .create_session(session_request(&workspace, &["sleep", "1000"]))
        .await;
    host.dispose(&doomed.session_id).await;
    // The OSC title has reached the daemon; the name stays the one given.
    let list = host
        .list_until("the OSC title", &workspace, |list| {
            list.sessions
                .first()
                .is_some_and(|s| s.title == "agent: working")
        })
        .await;
    assert_eq!(list.sessions[0].name, "given title");
    let daemon_pid = home
        .serving_daemon_pid()
        .await
        .expect("the host-service launched a daemon");

    for signal in [Signal::TERM, Signal::KILL] {
        let status = host.stop(signal);
        if signal == Signal::TERM {
            assert!(
                status.success(),
                "SIGTERM stops the host-service cleanly: {status:?}\n{}",
                host.log_text()
            );
        }
        for session in [&plain, &hidden] {
            let pid = Pid::from_raw(session.pid as i32).expect("pid");
            assert!(
                rustix::process::test_kill_process(pid).is_ok(),
                "session {} died with the host-service",
                session.pid
            );
        }
        host = home.start(&[]).await;

        // The first query after the restart already sees the background session.
        let list = host.list(&workspace).await;
        assert_eq!(
            list.source,
            pb::Source::Complete as i32,
            "{}",
            list.degraded_reason
        );
        assert_eq!(
            ids(&list),
            vec![plain.session_id.as_str()],
            "after {signal:?}: only the plain session"
        );
        let listed = &list.sessions[0];
        assert!(!listed.attached);
        assert!(listed.alive);
        assert_eq!(listed.title, "agent: working");
        assert_eq!(listed.name, "given title", "named from its row");
        assert_eq!(listed.pid, plain.pid, "the PTY process is the same one");
        assert_eq!(listed.workspace_id, workspace);

        let count = host.count(&workspace, &[]).await;
        assert_eq!(
            (count.count, count.source),
            (1, pb::Source::Complete as i32)
        );
        assert_eq!(host.count(&workspace, &[&plain.session_id]).await.count, 0);

        // Listing is read-only: the same answer again, the same daemon.
        let again = host.list(&workspace).await;
        assert_eq!(again.sessions, list.sessions);
        assert_eq!(
            home.serving_daemon_pid().await,
            Some(daemon_pid),
            "the daemon survived the restart"
        );
    }

    // Input to the restored session reaches its process (adopted on demand).
    let mut stream = host.attach(&plain.session_id, None).await;
    host.terminals
        .write_input(pb::WriteInputRequest {
            session_id: plain.session_id.clone(),
            data: "echo-me\n".into(),
            ..Default::default()
        })
        .await
        .expect("write to a restored session");
    let text = receive_host_text(&mut stream, "echo-me\r\necho-me").await;
    assert!(
        text.starts_with("\u{1b}]2;agent: working\u{7}ready\r\n"),
        "replayed from the start: {text:?}"
    );

    // While the stream is open the session counts as attached; adopted,
    // it keeps its name.
    let list = host.list(&workspace).await;
    assert!(list.sessions[0].attached);
    assert_eq!(list.sessions[0].name, "given title");
    let described = host.get_session(&plain.session_id).await;
    assert_eq!(
        (described.name.as_str(), described.title.as_str()),
        ("given title", "agent: working")
    );
    drop(stream);
    host.list_until("the detach to register", &workspace, |list| {
        list.sessions.first().is_some_and(|s| !s.attached)
    })
    .await;
}

/// A create whose client gives up (its deadline passes while the daemon is
/// stopped) still finishes once the daemon answers, and the session is
/// then like any other: here the reaper kills it once its row is stamped
/// behind the host's back. Abandoned half way, it stayed "being created"
/// for good, and the reaper left it alone forever.
#[tokio::test]
async fn a_create_whose_client_gave_up_still_finishes() {
    use diesel::RunQueryDsl;

    let home = HostHome::sqlite();
    let mut host = home.start(&["--reap-interval-secs", "1"]).await;
    let workspace = host.create_workspace("impatient").await.workspace_id;
    let daemon = hang_the_daemon(&home).await;
    let mut request = tonic::Request::new(session_request(&workspace, &["sleep", "1000"]));
    request.set_timeout(Duration::from_millis(300));
    let gave_up = host
        .terminals
        .create_session(request)
        .await
        .expect_err("the daemon is stopped");
    // The client's own timer or the server's deadline, whichever fires first.
    assert!(
        matches!(
            gave_up.code(),
            tonic::Code::DeadlineExceeded | tonic::Code::Cancelled
        ),
        "{gave_up:?}"
    );
    rustix::process::kill_process(daemon, Signal::CONT).expect("SIGCONT the daemon");
    let client = holdfast_plumbing::daemon_client::connect(&home.socket(), PATIENCE)
        .await
        .expect("daemon");
    eventually("the session to run", || {
        let mut client = client.clone();
        async move {
            let list = client.list(daemon_pb::ListRequest::default()).await.ok()?;
            list.into_inner()
                .sessions
                .iter()
                .any(|session| session.alive)
                .then_some(())
        }
    })
    .await;
    let mut db = home.open_database();
    diesel::sql_query(
        "UPDATE terminal_sessions SET dispose_requested_at = 1 WHERE workspace_id = ?",
    )
    .bind::<diesel::sql_types::Text, _>(&workspace)
    .execute(&mut db)
    .expect("stamp the row");
    home.until_no_session_runs("the reaper to kill the stamped session")
        .await;
}

/// A row recorded as ended while its program runs (a reaper pass that read
/// the rows while the spawn of a host-service that died was still under
/// way) is listed again; one whose workspace was closed meanwhile ends.
#[tokio::test]
async fn a_running_session_recorded_as_ended_is_listed_again() {
    use diesel::RunQueryDsl;

    let home = HostHome::sqlite();
    let mut host = home.start(&[]).await;
    let kept = host.create_workspace("kept").await.workspace_id;
    let closed = host.create_workspace("closed").await.workspace_id;
    let running = host
        .create_session(session_request(&kept, &["sleep", "1000"]))
        .await;
    let condemned = host
        .create_session(session_request(&closed, &["sleep", "1000"]))
        .await;
    host.stop(rustix::process::Signal::KILL);
    let mut db = home.open_database();
    diesel::sql_query(
        "UPDATE terminal_sessions SET status = 'exited', ended_at = 1, exit_code = 0",
    )
    .execute(&mut db)
    .expect("record both as ended");
    diesel::sql_query("UPDATE workspaces SET closed_at = 1 WHERE id = ?")
        .bind::<diesel::sql_types::Text, _>(&closed)
        .execute(&mut db)
        .expect("close a workspace");

    let host = home.start(&[]).await;
    let listed = host
        .list_until("the running session listed again", &kept, |list| {
            is_complete(list) && !list.sessions.is_empty()
        })
        .await;
    assert_eq!(ids(&listed), vec![running.session_id.as_str()]);
    assert!(listed.sessions[0].alive, "{listed:?}");
    let mut client =
        holdfast_plumbing::daemon_client::connect(&home.socket(), Duration::from_secs(5))
            .await
            .expect("daemon");
    exited(&client, &condemned.session_id).await;
    let still = find(&mut client, &running.session_id)
        .await
        .expect("listed");
    assert!(still.alive, "the revived session is left running");
}

#[tokio::test]
async fn a_session_disposed_while_being_adopted_is_never_listed_again() {
    use diesel::RunQueryDsl;

    let home = HostHome::sqlite();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("racing").await.workspace_id;
    // It ignores the hang-up, so it outlives the dispose's kill by the
    // kill's grace (1 s) before SIGKILL.
    let session = host
        .create_session(session_request(
            &workspace,
            &["sh", "-c", "trap '' HUP; exec sleep 1000"],
        ))
        .await
        .session_id;
    host.stop(Signal::KILL);
    // Restored: not in the new host-service's memory until first used.
    let mut host = home.start(&["--operation-timeout-ms", "30000"]).await;
    let daemon = hang_the_daemon(&home).await;

    // An attach reads the row (active), then waits on the stopped daemon.
    let attach = tokio::spawn({
        let mut terminals = host.terminals.clone();
        let session_id = session.clone();
        async move {
            terminals
                .attach_session(pb::AttachSessionRequest {
                    session_id,
                    from_offset: None,
                    ..Default::default()
                })
                .await
        }
    });
    eventually("the attach to have read the row", || {
        let log = host.log_text();
        async move { log.contains("adopting a restored session").then_some(()) }
    })
    .await;
    // A dispose stamps the row after that read, then waits on the daemon
    // to kill the session.
    let dispose = tokio::spawn({
        let mut terminals = host.terminals.clone();
        let session_id = session.clone();
        async move {
            terminals
                .dispose_session(pb::DisposeSessionRequest {
                    session_id,
                    ..Default::default()
                })
                .await
        }
    });
    let mut db = home.open_database();
    #[derive(diesel::QueryableByName)]
    struct Stamped {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        stamped: i64,
    }
    eventually("the dispose to stamp the row", || {
        let rows: Vec<Stamped> = diesel::sql_query(
            "SELECT COUNT(*) AS stamped FROM terminal_sessions WHERE id = ? AND dispose_requested_at IS NOT NULL",
        )
        .bind::<diesel::sql_types::Text, _>(&session)
        .load(&mut db)
        .expect("read the row");
        async move { (rows[0].stamped == 1).then_some(()) }
    })
    .await;

    // Both go on: the adoption finds the session still running (its kill
    // is in its grace), but must not bring it back.
    rustix::process::kill_process(daemon, Signal::CONT).expect("SIGCONT the daemon");
    dispose.await.expect("task").expect("disposed");
    let _ = attach.await.expect("task");
    let client = holdfast_plumbing::daemon_client::connect(&home.socket(), PATIENCE)
        .await
        .expect("daemon");
    let mut lists = 0;
    let deadline = Instant::now() + PATIENCE;
    while find(&mut client.clone(), &session)
        .await
        .is_some_and(|s| s.alive)
    {
        assert!(Instant::now() < deadline, "the disposed session still runs");
        let list = host.list(&workspace).await;
        assert!(
            !ids(&list).contains(&session.as_str()),
            "a disposed session was listed again: {list:?}"
        );
        lists += 1;
    }
    let list = host.list(&workspace).await;
    assert!(!ids(&list).contains(&session.as_str()), "{list:?}");
    eprintln!("{lists} lists while the disposed session still ran");
}

#[tokio::test]
async fn a_failing_database_degrades_lists_and_a_locked_one_is_unavailable() {
    use diesel::connection::SimpleConnection;

    let home = HostHome::sqlite();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("faulty").await.workspace_id;
    let session = host
        .create_session(session_request(&workspace, &["sleep", "1000"]))
        .await
        .session_id;
    // Restored after a restart: only the rows say it may be listed.
    host.stop(Signal::KILL);
    let mut host = home.start(&[]).await;
    let listed = host.list(&workspace).await;
    assert!(is_complete(&listed) && ids(&listed) == [session.as_str()]);

    // The rows cannot be read: lists answer from memory, and say why.
    let mut db = home.open_database();
    db.batch_execute("ALTER TABLE terminal_sessions RENAME TO hidden_sessions")
        .expect("hide the rows");
    let list = host.list(&workspace).await;
    assert_eq!(list.source, pb::Source::MemoryOnly as i32);
    assert!(
        list.degraded_reason.contains("database"),
        "reason: {}",
        list.degraded_reason
    );
    assert!(
        list.sessions.is_empty(),
        "memory knows nothing after a restart"
    );
    let count = host.count(&workspace, &[]).await;
    assert_eq!(count.source, pb::Source::MemoryOnly as i32);
    // Nor can a workspace not seen before be looked up.
    db.batch_execute("ALTER TABLE workspaces RENAME TO hidden_workspaces")
        .expect("hide the workspaces");
    let unseen = host.list("00000000-0000-4000-8000-000000000000").await;
    assert_eq!(unseen.source, pb::Source::MemoryOnly as i32);
    db.batch_execute(
        "ALTER TABLE hidden_workspaces RENAME TO workspaces; \
         ALTER TABLE hidden_sessions RENAME TO terminal_sessions",
    )
    .expect("show the rows again");
    let list = host.list(&workspace).await;
    assert!(is_complete(&list) && ids(&list) == [session.as_str()]);

    // Another process holds the write lock past the busy timeout (5 s): a
    // create is UNAVAILABLE, for the client to retry, and starts nothing.
    db.batch_execute("BEGIN IMMEDIATE")
        .expect("take the write lock");
    let status = host
        .terminals
        .create_session(session_request(&workspace, &["sleep", "1000"]))
        .await
        .expect_err("the database is locked");
    assert_eq!(
        status.code(),
        tonic::Code::Unavailable,
        "{}",
        status.message()
    );
    assert!(status.message().contains("locked"), "{}", status.message());
    db.batch_execute("ROLLBACK").expect("release the lock");
    host.create_session(session_request(&workspace, &["sleep", "1000"]))
        .await;
    let mut daemon = holdfast_plumbing::daemon_client::connect(&home.socket(), PATIENCE)
        .await
        .expect("daemon");
    let running = daemon_list(&mut daemon).await.sessions.len();
    assert_eq!(running, 2, "the refused create started nothing");
}

/// Writers stuck behind another process's write lock hold every pooled
/// connection for up to the busy timeout (5 s). Lists, which need a
/// connection for the rows of restored sessions, do not wait for one past
/// the deadline (250 ms): they answer from memory and say why. They
/// used to wait the whole 5 s.
#[tokio::test]
async fn lists_do_not_wait_for_the_database_past_the_deadline() {
    use diesel::connection::SimpleConnection;

    let home = HostHome::sqlite();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("stuck").await.workspace_id;
    host.create_session(session_request(&workspace, &["sleep", "1000"]))
        .await;
    // Restored after a restart: each list reads the rows.
    host.stop(Signal::KILL);
    let mut host = home.start(&[]).await;
    assert!(is_complete(&host.list(&workspace).await));

    let mut db = home.open_database();
    db.batch_execute("BEGIN IMMEDIATE")
        .expect("take the write lock");
    // More writers than the pool has connections, each waiting out the
    // busy timeout on one.
    let mut writers = tokio::task::JoinSet::new();
    for i in 0..8 {
        let mut workspaces = host.workspaces.clone();
        writers.spawn(async move {
            workspaces
                .create_workspace(pb::CreateWorkspaceRequest {
                    name: format!("writer-{i}"),
                })
                .await
        });
    }
    let list = eventually("a list answered from memory", || {
        let mut terminals = host.terminals.clone();
        let workspace = workspace.clone();
        async move {
            let asked = Instant::now();
            let list = terminals
                .list_sessions(pb::ListSessionsRequest {
                    workspace_id: workspace,
                    ..Default::default()
                })
                .await
                .expect("list sessions")
                .into_inner();
            let took = asked.elapsed();
            assert!(
                took < Duration::from_secs(2),
                "a list waited {took:?} for the database"
            );
            (list.source == pb::Source::MemoryOnly as i32).then_some(list)
        }
    })
    .await;
    assert!(
        list.degraded_reason.contains("database did not answer"),
        "reason: {}",
        list.degraded_reason
    );
    db.batch_execute("ROLLBACK").expect("release the lock");
    while let Some(written) = writers.join_next().await {
        written.expect("writer task").ok();
    }
    assert!(is_complete(&host.list(&workspace).await));
}

/// A create that failed because the daemon hung (no answer within the
/// operation timeout) leaves nothing running once the daemon goes on, even
/// though the daemon then reads the spawn it was sent: the host-service
/// kills it, not the reaper (whose next pass is an hour away here).
#[tokio::test]
async fn a_create_that_got_no_answer_leaves_nothing_running() {
    let home = HostHome::new();
    let mut host = home
        .start(&[
            "--operation-timeout-ms",
            "300",
            "--reap-interval-secs",
            "3600",
        ])
        .await;
    let workspace = host.create_workspace("hung").await.workspace_id;
    let daemon = hang_the_daemon(&home).await;
    let failed = host
        .terminals
        .create_session(session_request(&workspace, &["sleep", "1000"]))
        .await;
    let failed = expect_status(failed, tonic::Code::Unavailable, "no answer");
    expect_reason(&failed, Reason::DaemonUnavailable, &[]);
    rustix::process::kill_process(daemon, Signal::CONT).expect("SIGCONT the daemon");
    home.until_no_session_runs("the failed create's program to be ended")
        .await;
    assert!(ids(&host.list(&workspace).await).is_empty());
}

/// A rename while the daemon does not answer, of a session this process
/// does not hold (restored after a restart): the new name is kept, and the
/// refusal to describe the session says so.
#[tokio::test]
async fn a_rename_the_daemon_cannot_answer_for_is_kept_and_says_so() {
    let home = HostHome::new();
    let flags = ["--operation-timeout-ms", "300"];
    let mut host = home.start(&flags).await;
    let workspace = host.create_workspace("hung").await.workspace_id;
    let session = host
        .create_session(session_request(&workspace, &["sleep", "1000"]))
        .await;
    host.stop(Signal::TERM);
    let mut host = home.start(&flags).await;
    let daemon = hang_the_daemon(&home).await;
    let refused = host
        .terminals
        .rename_session(pb::RenameSessionRequest {
            session_id: session.session_id.clone(),
            name: "kept".into(),
        })
        .await;
    let refused = expect_status(refused, tonic::Code::Unavailable, "the new name is kept");
    expect_reason(&refused, Reason::DaemonUnavailable, &[]);
    rustix::process::kill_process(daemon, Signal::CONT).expect("SIGCONT the daemon");
    host.list_until("the new name", &workspace, |list| {
        list.sessions.first().is_some_and(|s| s.name == "kept")
    })
    .await;
}

#[tokio::test]
async fn a_hung_daemon_gives_memory_only_answers_within_the_deadline() {
    let home = HostHome::new();
    let mut host = home
        .start(&[
            "--daemon-deadline-ms",
            "250",
            "--operation-timeout-ms",
            "500",
        ])
        .await;
    let workspace = host.create_workspace("hung").await.workspace_id;
    let session = host
        .create_session(session_request(&workspace, &["sleep", "1000"]))
        .await;
    let daemon = hang_the_daemon(&home).await;

    for _ in 0..3 {
        let started = Instant::now();
        let list = host.list(&workspace).await;
        let took = started.elapsed();
        assert_eq!(list.source, pb::Source::MemoryOnly as i32);
        assert_eq!(list.generation, 0, "a memory-only list is never held");
        // The deadline's, or the supervisor's once it has found the
        // daemon down (it asks every 5 s).
        assert!(
            list.degraded_reason.contains("answer within"),
            "reason: {}",
            list.degraded_reason
        );
        assert_eq!(
            ids(&list),
            vec![session.session_id.as_str()],
            "memory still knows the session"
        );
        assert!(took < Duration::from_millis(250 + 1500), "took {took:?}");
        let count = host.count(&workspace, &[]).await;
        assert_eq!(
            (count.count, count.source),
            (1, pb::Source::MemoryOnly as i32)
        );
    }
    // Operations that need the daemon fail fast and say why.
    let started = Instant::now();
    let status = host
        .terminals
        .write_input(pb::WriteInputRequest {
            session_id: session.session_id.clone(),
            data: "x".into(),
            ..Default::default()
        })
        .await
        .expect_err("the daemon is stopped");
    assert_eq!(
        status.code(),
        tonic::Code::Unavailable,
        "{}",
        status.message()
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    // A session this process holds is described as it last knew it, as
    // lists show it meanwhile: a rename is kept, and answered so.
    let renamed = host
        .terminals
        .rename_session(pb::RenameSessionRequest {
            session_id: session.session_id.clone(),
            name: "kept".into(),
        })
        .await
        .expect("a rename while the daemon does not answer")
        .into_inner()
        .session
        .expect("a session");
    assert!(
        renamed.alive && renamed.pid == session.pid && renamed.name == "kept",
        "{renamed:?}"
    );
    assert_eq!(host.get_session(&session.session_id).await.name, "kept");
    // Its status says so: a daemon up that does not answer is down.
    let mut status =
        holdfast_api::proto::host::v1::status_service_client::StatusServiceClient::connect(
            host.address.clone(),
        )
        .await
        .expect("status client");
    let told = status
        .get_status(pb::GetStatusRequest {})
        .await
        .expect("status")
        .into_inner();
    assert_eq!(told.daemon_state, pb::DaemonState::Down as i32, "{told:?}");
    assert!(told.daemon_reason.contains("answer within"), "{told:?}");
    // So does its health service, for monitors that ask only that: the
    // supervisor asks the daemon every 5 s whether it answers (nothing
    // else need call it meanwhile).
    eventually("the daemon's health to say NOT_SERVING", || async {
        (host.daemon_health().await == ServingStatus::NotServing).then_some(())
    })
    .await;

    // Up again once it answers, under the same host-service: the same
    // daemon, its watch of exits never cut, calls taken again.
    rustix::process::kill_process(daemon, Signal::CONT).expect("SIGCONT");
    eventually("the daemon's health to say SERVING again", || async {
        (host.daemon_health().await == ServingStatus::Serving).then_some(())
    })
    .await;
    host.list_until("a complete list after SIGCONT", &workspace, |list| {
        is_complete(list) && ids(list) == [session.session_id.as_str()]
    })
    .await;
    host.write_input(&session.session_id, "x").await;
    let log = host.log_text();
    assert!(log.contains("the pty-daemon answers again"), "{log}");
    assert!(!log.contains("lost the pty-daemon's exit stream"), "{log}");
    let daemon = hang_the_daemon(&home).await;

    // A host-service started while the daemon hangs waits for it: it
    // neither replaces it nor counts its sessions as lost.
    host.stop(Signal::KILL);
    let mut host = home.start(&["--daemon-deadline-ms", "250"]).await;
    let list = host.list(&workspace).await;
    assert_eq!(list.source, pb::Source::MemoryOnly as i32);
    assert!(list.sessions.is_empty(), "memory is empty after a restart");
    eventually("the supervisor to recognise a hung daemon", || {
        let log = host.log_text();
        async move { log.contains("waiting for the pty-daemon").then_some(()) }
    })
    .await;

    rustix::process::kill_process(daemon, Signal::CONT).expect("SIGCONT");
    assert_eq!(
        home.serving_daemon_pid().await,
        Some(daemon.as_raw_nonzero().get()),
        "the same daemon"
    );
    host.list_until("a complete list again", &workspace, |list| {
        is_complete(list)
            && list
                .sessions
                .iter()
                .any(|s| s.session_id == session.session_id)
    })
    .await;
    eventually("the daemon's health to say SERVING again", || async {
        (host.daemon_health().await == ServingStatus::Serving).then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_dead_daemon_is_relaunched_and_its_sessions_are_recorded_as_exited() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("dead").await.workspace_id;
    let session = host
        .create_session(session_request(&workspace, &["sleep", "1000"]))
        .await;
    let first = home.kill_daemon().await;
    let second = home.relaunched_after(first).await;
    assert_ne!(second, first);
    host.list_until(
        "a complete list without the lost session",
        &workspace,
        |list| is_complete(list) && list.sessions.is_empty(),
    )
    .await;
    // The lost session never comes back, even after a restart.
    host.stop(Signal::TERM);
    let mut host = home.start(&[]).await;
    assert!(host.list(&workspace).await.sessions.is_empty());
    let status = host
        .terminals
        .write_input(pb::WriteInputRequest {
            session_id: session.session_id.clone(),
            data: "x".into(),
            ..Default::default()
        })
        .await
        .expect_err("the session is gone");
    // Gone with its daemon, and recorded so: it has exited.
    assert_eq!(
        (status.code(), status.message().contains("has exited")),
        (tonic::Code::FailedPrecondition, true),
        "{}",
        status.message()
    );
    // New sessions work on the new daemon.
    host.create_session(session_request(&workspace, &["sleep", "1000"]))
        .await;
}

#[tokio::test]
async fn a_daemon_whose_socket_directory_was_removed_is_adopted_not_replaced() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("logout").await.workspace_id;
    let session = host
        .create_session(session_request(&workspace, &["sleep", "1000"]))
        .await;
    let daemon = home.serving_daemon_pid().await.expect("a daemon serves");
    host.stop(Signal::KILL);
    // Stopped, it cannot bind its socket again before the next host-service
    // starts.
    let stopped_daemon = Pid::from_raw(daemon).expect("pid");
    rustix::process::kill_process(stopped_daemon, Signal::STOP).expect("SIGSTOP the daemon");
    stopped(daemon).await;
    // As logind removes $XDG_RUNTIME_DIR at a user's last logout: the
    // socket, its lock file and their directory go; the daemon lives on.
    std::fs::remove_dir_all(home.socket().parent().expect("parent")).expect("remove run/");

    // A host-service started before the daemon has bound its socket again
    // must wait for it, not start a second daemon that would hide the first
    // one's sessions for good.
    let host = home.start(&[]).await;
    rustix::process::kill_process(stopped_daemon, Signal::CONT).expect("SIGCONT the daemon");
    host.list_until("a complete list with the session", &workspace, |list| {
        is_complete(list) && ids(list) == [session.session_id.as_str()]
    })
    .await;
    assert_eq!(
        home.serving_daemon_pid().await,
        Some(daemon),
        "the same daemon"
    );
    assert_eq!(home.daemon_pids(), vec![daemon], "and no second one");
}

#[tokio::test]
async fn the_crash_loop_breaker_stops_relaunching() {
    let home = HostHome::new();
    let host = home.start(&[]).await;
    let mut seen = Vec::new();
    // More than three crashes within a minute.
    for _ in 0..4 {
        let deadline = Instant::now() + PATIENCE;
        let pid = loop {
            if let Some(pid) = home
                .serving_daemon_pid()
                .await
                .filter(|pid| !seen.contains(pid))
            {
                break pid;
            }
            assert!(
                Instant::now() < deadline,
                "no new daemon after {seen:?}:\n{}",
                host.log_text()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        seen.push(pid);
        rustix::process::kill_process(Pid::from_raw(pid).expect("pid"), Signal::KILL)
            .expect("kill");
    }
    let deadline = Instant::now() + PATIENCE;
    while !host.log_text().contains("not relaunching the pty-daemon") {
        assert!(
            Instant::now() < deadline,
            "the breaker did not trip:\n{}",
            host.log_text()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        home.serving_daemon_pid().await,
        None,
        "no daemon after the breaker tripped"
    );
    assert_eq!(host.daemon_health().await, ServingStatus::NotServing);
}

/// SIGKILL during a burst of CreateSession: after a restart every session
/// whose creation was acknowledged is listed, and the database is intact.
#[tokio::test]
async fn a_crash_during_a_burst_of_creates_loses_nothing_acknowledged() {
    use diesel::RunQueryDsl;

    let home = HostHome::sqlite();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("burst").await.workspace_id;
    let acknowledged = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut lanes = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let mut terminals = host.terminals.clone();
        let request = session_request(&workspace, &["sleep", "1000"]);
        let acknowledged = std::sync::Arc::clone(&acknowledged);
        lanes.spawn(async move {
            // Until the host-service dies under us.
            while let Ok(reply) = terminals.create_session(request.clone()).await {
                let session = reply.into_inner().session.expect("session");
                acknowledged.lock().unwrap().push(session.session_id);
            }
        });
    }
    eventually("a few creations acknowledged", || {
        let count = acknowledged.lock().unwrap().len();
        async move { (count >= 12).then_some(()) }
    })
    .await;
    host.stop(Signal::KILL);
    while lanes.join_next().await.is_some() {}
    let acknowledged = acknowledged.lock().unwrap().clone();

    let mut host = home.start(&[]).await;
    let listed = host.list(&workspace).await;
    assert_eq!(listed.source, pb::Source::Complete as i32);
    let listed_ids = ids(&listed);
    for id in &acknowledged {
        assert!(
            listed_ids.contains(&id.as_str()),
            "acknowledged session {id} is missing after the crash"
        );
    }

    #[derive(diesel::QueryableByName)]
    struct Check {
        #[diesel(sql_type = diesel::sql_types::Text)]
        integrity_check: String,
    }
    let mut db = home.open_database();
    let check: Vec<Check> = diesel::sql_query("PRAGMA integrity_check")
        .load(&mut db)
        .expect("integrity_check");
    assert_eq!(check.len(), 1);
    assert_eq!(check[0].integrity_check, "ok");
}

/// Restart storm: the host-service SIGKILLed and restarted again and again
/// while 20 sessions stream output, a client polls ListSessions and another
/// keeps an AttachSession open, reconnecting from its last offset; every
/// third cycle the daemon is upgraded in place first. After each restart the first list holds all 20 with the same pids, and the
/// reattached output is continuous by offset. CI runs 20 cycles;
/// HOLDFAST_STORM_CYCLES=100 runs the long variant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_storm_loses_no_session_and_no_output() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    use tokio::sync::watch;

    let cycles: usize = std::env::var("HOLDFAST_STORM_CYCLES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20);
    // A generous deadline: this test is about restarts, not about a daemon
    // slow to answer on a loaded machine.
    let flags = ["--daemon-deadline-ms", "3000"];
    let home = HostHome::new();
    let mut host = home.start(&flags).await;
    let workspace = host.create_workspace("storm").await.workspace_id;
    let script = "i=0; while :; do i=$((i+1)); echo line $i; sleep 0.01; done";
    let mut pids = std::collections::BTreeMap::new();
    for _ in 0..20 {
        let session = host
            .create_session(session_request(&workspace, &["sh", "-c", script]))
            .await;
        pids.insert(session.session_id, session.pid);
    }
    let watched = pids.keys().next().expect("a session").clone();
    // The current host-service's address; empty tells the clients to stop.
    let (address_tx, address_rx) = watch::channel(host.address.clone());
    let next_offset = Arc::new(AtomicU64::new(0));
    let attaches = Arc::new(AtomicUsize::new(0));

    // The attacher: from offset 0, reconnecting from where it left off;
    // returns the bytes announced lost.
    let attacher = tokio::spawn({
        let mut address_rx = address_rx.clone();
        let (next_offset, attaches) = (Arc::clone(&next_offset), Arc::clone(&attaches));
        let watched = watched.clone();
        async move {
            let mut announced_gaps = 0u64;
            loop {
                let address = address_rx.borrow_and_update().clone();
                if address.is_empty() {
                    return announced_gaps;
                }
                let from = next_offset.load(Ordering::SeqCst);
                let connected = async {
                    let channel = Channel::from_shared(address).ok()?.connect().await.ok()?;
                    let request = pb::AttachSessionRequest {
                        session_id: watched.clone(),
                        from_offset: Some(from),
                        ..Default::default()
                    };
                    let reply = TerminalServiceClient::new(channel)
                        .attach_session(request)
                        .await
                        .ok()?;
                    Some(reply.into_inner())
                };
                if let Some(mut stream) = connected.await {
                    attaches.fetch_add(1, Ordering::SeqCst);
                    while let Ok(Some(message)) = stream.message().await {
                        let next = next_offset.load(Ordering::SeqCst);
                        match message.event {
                            Some(pb::attach_session_response::Event::Output(output)) => {
                                assert_eq!(
                                    output.offset, next,
                                    "output continues where it left off"
                                );
                                next_offset
                                    .store(next + output.data.len() as u64, Ordering::SeqCst);
                            }
                            Some(pb::attach_session_response::Event::Truncated(gap)) => {
                                assert_eq!(
                                    gap.from_offset, next,
                                    "a gap is announced from its start"
                                );
                                announced_gaps += gap.to_offset - gap.from_offset;
                                next_offset.store(gap.to_offset, Ordering::SeqCst);
                            }
                            _ => {}
                        }
                    }
                }
                // This host-service is gone: wait for the next one.
                if address_rx.changed().await.is_err() {
                    return announced_gaps;
                }
            }
        }
    });
    // The poller: lists until told to stop; returns its complete answers.
    let poller = tokio::spawn({
        let mut address_rx = address_rx.clone();
        let workspace = workspace.clone();
        async move {
            let mut answers = 0usize;
            loop {
                let address = address_rx.borrow_and_update().clone();
                if address.is_empty() {
                    return answers;
                }
                if let Ok(channel) = Channel::from_shared(address).expect("uri").connect().await {
                    let mut client = TerminalServiceClient::new(channel);
                    let request = || pb::ListSessionsRequest {
                        workspace_id: workspace.clone(),
                        ..Default::default()
                    };
                    while let Ok(list) = client.list_sessions(request()).await {
                        let list = list.into_inner();
                        if list.source == pb::Source::Complete as i32 {
                            assert_eq!(list.sessions.len(), 20, "a complete list missed sessions");
                            answers += 1;
                        }
                    }
                }
                if address_rx.changed().await.is_err() {
                    return answers;
                }
            }
        }
    });

    // Each host-service serves the attacher before it is killed.
    let streaming_from = |host_number: usize| {
        let offset_before = next_offset.load(Ordering::SeqCst);
        let (next_offset, attaches) = (Arc::clone(&next_offset), Arc::clone(&attaches));
        eventually("the attacher to stream from this host-service", move || {
            let (next_offset, attaches) = (Arc::clone(&next_offset), Arc::clone(&attaches));
            async move {
                (attaches.load(Ordering::SeqCst) >= host_number
                    && next_offset.load(Ordering::SeqCst) > offset_before)
                    .then_some(())
            }
        })
    };
    streaming_from(1).await;
    let daemon_pid = home.serving_daemon_pid().await;
    for cycle in 0..cycles {
        if cycle % 3 == 1 {
            // Interleaved: the daemon upgrades in place under a live host,
            // whose attach stream resumes by itself.
            let offset_before = next_offset.load(Ordering::SeqCst);
            let mut status = StatusServiceClient::connect(host.address.clone())
                .await
                .expect("status client");
            let upgraded = status
                .upgrade_daemon(pb::UpgradeDaemonRequest { force: true })
                .await
                .expect("upgrade")
                .into_inner();
            assert!(upgraded.upgraded, "cycle {cycle}");
            assert_eq!(
                Some(upgraded.daemon_pid as i32),
                daemon_pid,
                "cycle {cycle}"
            );
            // Still found as this socket's daemon (so never launched twice,
            // and stopped with the home).
            assert_eq!(
                home.daemon_pids(),
                Vec::from_iter(daemon_pid),
                "cycle {cycle}: the upgraded daemon keeps its command line"
            );
            eventually("output to flow after the upgrade", || {
                let next_offset = Arc::clone(&next_offset);
                async move { (next_offset.load(Ordering::SeqCst) > offset_before + 1000).then_some(()) }
            })
            .await;
        }
        host.stop(Signal::KILL);
        host = home.start(&flags).await;
        let list = host.list(&workspace).await;
        assert_eq!(list.source, pb::Source::Complete as i32, "cycle {cycle}");
        let listed: std::collections::BTreeMap<String, u32> = list
            .sessions
            .iter()
            .map(|s| (s.session_id.clone(), s.pid))
            .collect();
        assert_eq!(listed, pids, "cycle {cycle}: sessions or pids changed");
        address_tx.send_replace(host.address.clone());
        streaming_from(cycle + 2).await;
    }
    address_tx.send_replace(String::new());
    host.stop(Signal::KILL);
    let gaps = attacher.await.expect("the attacher's checks");
    let answers = poller.await.expect("the poller's checks");
    assert_eq!(gaps, 0, "{gaps} bytes of output were lost");
    assert!(answers > 0, "the poller got no complete answer");
}
