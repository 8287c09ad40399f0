//! Bad input to the daemon gets a precise status and a clear message.
//!
//! The daemon keeps serving afterwards.

mod support;

use holdfast_api::proto::daemon::v1 as pb;
use support::*;
use tonic::Code;

#[tokio::test]
async fn bad_input_gets_precise_statuses() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let live = spawn(&mut client, &["sleep", "1000"]).await;

    let with = |edit: &dyn Fn(&mut pb::SpawnRequest)| {
        let mut request = spawn_request(&["sleep", "1"]);
        edit(&mut request);
        request
    };
    expect_status(
        client.spawn(with(&|r| r.cols = 0)).await,
        Code::InvalidArgument,
        "cols must be between 1 and 10000",
    );
    expect_status(
        client.spawn(with(&|r| r.rows = 10_001)).await,
        Code::InvalidArgument,
        "rows",
    );
    expect_status(
        client
            .spawn(with(&|r| r.argv = vec!["/no/such/program".into()]))
            .await,
        Code::NotFound,
        "/no/such/program",
    );
    expect_status(
        client
            .spawn(with(&|r| r.argv = vec!["no-such-program-x".into()]))
            .await,
        Code::NotFound,
        "no-such-program-x",
    );
    expect_status(
        client.spawn(with(&|r| r.cwd = "/no/such/dir".into())).await,
        Code::NotFound,
        "/no/such/dir",
    );
    expect_status(
        client.spawn(with(&|r| r.cwd = "relative/dir".into())).await,
        Code::InvalidArgument,
        "absolute",
    );
    expect_status(
        client.spawn(with(&|r| r.cwd = "/tmp\0x".into())).await,
        Code::InvalidArgument,
        "NUL",
    );
    expect_status(
        client
            .spawn(with(&|r| r.cwd = format!("/{}", "d".repeat(100_000))))
            .await,
        Code::InvalidArgument,
        "a path may be at most",
    );
    // There, but no program this user may run.
    for not_runnable in ["/etc/passwd", "/tmp"] {
        expect_status(
            client
                .spawn(with(&|r| r.argv = vec![not_runnable.into()]))
                .await,
            Code::PermissionDenied,
            not_runnable,
        );
    }
    expect_status(
        client.spawn(with(&|r| r.session_id = "x".repeat(65))).await,
        Code::InvalidArgument,
        "limit is 64",
    );
    let list = |session_ids: Vec<String>, if_generation| pb::ListRequest {
        if_generation,
        session_ids,
    };
    expect_status(
        client.list(list(vec!["../etc".into()], None)).await,
        Code::InvalidArgument,
        "must start with a letter or digit",
    );
    expect_status(
        client.list(list(vec!["a".into(); 1001], None)).await,
        Code::InvalidArgument,
        "names 1001 sessions; the limit is 1000",
    );
    expect_status(
        client.list(list(vec!["a".into()], Some(1))).await,
        Code::InvalidArgument,
        "cannot be combined with session_ids",
    );
    expect_status(
        client
            .spawn(with(&|r| r.session_id = "a/../b".into()))
            .await,
        Code::InvalidArgument,
        "letters, digits",
    );
    expect_status(
        client
            .spawn(with(&|r| r.session_id = live.session_id.clone()))
            .await,
        Code::AlreadyExists,
        &live.session_id,
    );
    expect_status(
        client
            .spawn(with(&|r| {
                r.env.insert("A=B".into(), "1".into());
            }))
            .await,
        Code::InvalidArgument,
        "env name",
    );
    expect_status(
        client
            .spawn(with(&|r| r.argv = vec!["sh".into(), "a\0b".into()]))
            .await,
        Code::InvalidArgument,
        "NUL",
    );

    let unknown = "no-such-session".to_owned();
    expect_status(
        client
            .kill(pb::KillRequest {
                session_id: unknown.clone(),
                ..Default::default()
            })
            .await,
        Code::NotFound,
        "no-such-session",
    );
    expect_status(
        client
            .attach(pb::AttachRequest {
                session_id: unknown.clone(),
                from_offset: None,
                ..Default::default()
            })
            .await,
        Code::NotFound,
        "no-such-session",
    );
    expect_status(
        client
            .write(pb::WriteRequest {
                session_id: unknown.clone(),
                data: "x".into(),
            })
            .await,
        Code::NotFound,
        "no-such-session",
    );
    expect_status(
        client
            .resize(pb::ResizeRequest {
                session_id: unknown,
                cols: 80,
                rows: 24,
                ..Default::default()
            })
            .await,
        Code::NotFound,
        "no-such-session",
    );
    expect_status(
        client.kill(pb::KillRequest::default()).await,
        Code::InvalidArgument,
        "session_id is required",
    );
    expect_status(
        client
            .kill(pb::KillRequest {
                session_id: live.session_id.clone(),
                signal: 99,
                grace_ms: None,
            })
            .await,
        Code::InvalidArgument,
        "signal 99",
    );
    expect_status(
        client
            .kill(pb::KillRequest {
                session_id: live.session_id.clone(),
                signal: 0,
                grace_ms: Some(u32::MAX),
            })
            .await,
        Code::InvalidArgument,
        "grace_ms",
    );
    // Checked before the session is looked up, as on every call.
    expect_status(
        client
            .kill(pb::KillRequest {
                session_id: "no-such-session".into(),
                signal: 99,
                grace_ms: None,
            })
            .await,
        Code::InvalidArgument,
        "signal 99",
    );
    expect_status(
        client
            .resize(pb::ResizeRequest {
                session_id: live.session_id.clone(),
                cols: 80,
                rows: 0,
                ..Default::default()
            })
            .await,
        Code::InvalidArgument,
        "rows",
    );
    let oversized = vec![b'x'; (1 << 20) + 1];
    expect_status(
        client
            .write(pb::WriteRequest {
                session_id: live.session_id.clone(),
                data: oversized.into(),
            })
            .await,
        Code::InvalidArgument,
        "at most 1048576",
    );

    // Still serving, and the live session is untouched.
    let still = find(&mut client, &live.session_id).await.expect("listed");
    assert!(still.alive);
}

#[tokio::test]
async fn start_refuses_what_spawn_refuses_before_starting_anything() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let live = spawn(&mut client, &["sleep", "1000"]).await;
    let start = |edit: &dyn Fn(&mut pb::SpawnRequest)| {
        let mut request = spawn_request(&["sleep", "1"]);
        edit(&mut request);
        pb::StartRequest {
            spawn: Some(request),
        }
    };
    expect_status(
        client.start(pb::StartRequest { spawn: None }).await,
        Code::InvalidArgument,
        "spawn is required",
    );
    expect_status(
        client.start(start(&|r| r.cols = 0)).await,
        Code::InvalidArgument,
        "cols must be between 1 and 10000",
    );
    expect_status(
        client
            .start(start(&|r| r.argv = vec!["no-such-program-x".into()]))
            .await,
        Code::NotFound,
        "no-such-program-x",
    );
    expect_status(
        client
            .start(start(&|r| r.session_id = live.session_id.clone()))
            .await,
        Code::AlreadyExists,
        &live.session_id,
    );
    let sessions = client
        .list(pb::ListRequest::default())
        .await
        .expect("list")
        .into_inner()
        .sessions;
    assert_eq!(sessions.len(), 1, "nothing else started: {sessions:?}");
}

#[tokio::test]
async fn input_streams_refuse_bad_writes_with_precise_statuses() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let live = spawn(&mut client, &["cat"]).await;
    let other = spawn(&mut client, &["cat"]).await;
    let writer = client.clone();
    let refused = async |writes: &[(&str, &[u8])]| {
        let mut input = Input::new(&writer);
        for (session_id, data) in &writes[..writes.len() - 1] {
            input.write(session_id, data).await.expect("a good write");
        }
        let (session_id, data) = writes[writes.len() - 1];
        input.write(session_id, data).await
    };
    expect_status(
        refused(&[("", b"x")]).await,
        Code::InvalidArgument,
        "session_id is required",
    );
    expect_status(
        refused(&[("no-such-session", b"x")]).await,
        Code::NotFound,
        "no-such-session",
    );
    expect_status(
        refused(&[(&live.session_id, b"x"), (&other.session_id, b"y")]).await,
        Code::InvalidArgument,
        "open a stream per session",
    );
    let oversized = vec![b'x'; (1 << 20) + 1];
    expect_status(
        refused(&[(&live.session_id, &oversized)]).await,
        Code::InvalidArgument,
        "at most",
    );
    let gone = spawn(&mut client, &["true"]).await;
    exited(&client, &gone.session_id).await;
    expect_status(
        refused(&[(&gone.session_id, b"x")]).await,
        Code::FailedPrecondition,
        "exited",
    );
    // Still serving, and the refusals wrote nothing.
    let mut stream = attach(&mut client, &other.session_id, Some(0)).await;
    write(&client, &other.session_id, "after\n").await;
    let mut received = Received::default();
    receive_text(&mut stream, &mut received, "after\r\nafter").await;
    assert_eq!(received.text(), "after\r\nafter\r\n");
}

/// Input for a terminal no one holds: its program let go of it (here it
/// put its input and output elsewhere; a program that exited but is not
/// reaped yet, while what it left waits for an attacher, is the same). The
/// kernel would take the bytes and no one would read them; the write is
/// refused instead, as for an exited session.
#[tokio::test]
async fn input_for_a_terminal_no_one_holds_is_a_failed_precondition() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let script = "exec sleep 600 </dev/null >/dev/null 2>&1";
    let session = spawn(&mut client, &["sh", "-c", script]).await;
    let refusal = eventually("a write to be refused", || {
        let mut client = client.clone();
        let session_id = session.session_id.clone();
        async move {
            client
                .write(pb::WriteRequest {
                    session_id,
                    data: "x".into(),
                })
                .await
                .err()
        }
    })
    .await;
    expect_status(
        Err::<(), _>(refusal),
        Code::FailedPrecondition,
        "terminal is closed",
    );
    let pid = i32::try_from(session.pid).expect("pid");
    assert!(running(pid), "the program still runs");
}

#[tokio::test]
async fn an_exited_session_takes_no_input_or_resize_but_kill_is_idempotent() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let session = spawn(&mut client, &["true"]).await;
    exited(&client, &session.session_id).await;
    let id = session.session_id.clone();
    expect_status(
        client
            .write(pb::WriteRequest {
                session_id: id.clone(),
                data: "x".into(),
            })
            .await,
        Code::FailedPrecondition,
        "exited",
    );
    expect_status(
        client
            .resize(pb::ResizeRequest {
                session_id: id.clone(),
                cols: 80,
                rows: 24,
                ..Default::default()
            })
            .await,
        Code::FailedPrecondition,
        "exited",
    );
    client
        .kill(pb::KillRequest {
            session_id: id,
            ..Default::default()
        })
        .await
        .expect("killing an exited session is a no-op");
}

/// A huge field echoed in an error is cut, so the status still reaches the
/// client (a 100 KB `grpc-message` header would make it drop the
/// connection) and the connection stays usable.
#[tokio::test]
async fn errors_about_huge_fields_are_short_and_the_connection_survives() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let huge = "x".repeat(100_000);
    let mut missing_program = spawn_request(&["sleep", "1"]);
    missing_program.argv = vec![format!("/no/such/{huge}")];
    let mut bad_env_name = spawn_request(&["sleep", "1"]);
    bad_env_name.env.insert(format!("{huge}="), "v".into());
    for (request, code, needle) in [
        (missing_program, Code::NotFound, "/no/such/xxx"),
        (bad_env_name, Code::InvalidArgument, "env name"),
    ] {
        let status = client.spawn(request).await.expect_err("refused");
        assert_eq!(status.code(), code, "{:.200}", status.message());
        assert!(
            status.message().contains(needle),
            "{:.200}",
            status.message()
        );
        assert!(
            status.message().len() <= holdfast_api::status_text::MAX_STATUS_MESSAGE_BYTES,
            "{} bytes",
            status.message().len()
        );
    }
    client
        .list(pb::ListRequest::default())
        .await
        .expect("the same connection still answers");
}

/// A program whose arguments the kernel will not take (one longer than
/// its 128 KiB limit for a single argument) is the request's fault, not a
/// missing program; a program that is missing is still NOT_FOUND.
#[tokio::test]
async fn arguments_too_long_for_the_system_are_an_invalid_argument() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let too_long = "x".repeat(200_000);
    let status = client
        .spawn(spawn_request(&["true", too_long.as_str()]))
        .await
        .expect_err("refused");
    assert_eq!(
        status.code(),
        Code::InvalidArgument,
        "{:.300}",
        status.message()
    );
    assert!(
        status.message().contains("longer than the system takes"),
        "{:.300}",
        status.message()
    );
    let status = client
        .spawn(spawn_request(&["/no/such/program"]))
        .await
        .expect_err("refused");
    assert_eq!(status.code(), Code::NotFound, "{}", status.message());
}

/// Every daemon RPC whose request starts with a string, sent that field as
/// bytes that are not UTF-8: refused (INTERNAL, gRPC's code for an
/// unparseable message) naming the cause, and the daemon carries on.
#[tokio::test]
async fn invalid_utf8_in_a_string_field_is_refused_and_harmless() {
    let daemon = Daemon::start().await;
    let channel = holdfast_plumbing::daemon_client::connect_channel(
        &daemon.socket,
        std::time::Duration::from_secs(5),
    )
    .await
    .expect("connect");
    for method in ["Spawn", "Kill", "Attach", "Write", "Resize"] {
        let path = format!("/holdfast.daemon.v1.PtyDaemon/{method}");
        let status = send_invalid_utf8(channel.clone(), &path).await;
        assert_eq!(status.code(), Code::Internal, "{method}: {status:?}");
        assert!(status.message().contains("UTF-8"), "{method}: {status:?}");
        expect_reason(&status, Reason::MalformedMessage, &[]);
    }
    let mut client = daemon.client().await;
    let list = client
        .list(pb::ListRequest::default())
        .await
        .expect("still serving");
    assert!(list.into_inner().sessions.is_empty(), "nothing was spawned");
}

/// Every daemon RPC that names a session, with every kind of bad id.
#[tokio::test]
async fn every_session_rpc_refuses_every_kind_of_bad_id() {
    let daemon = Daemon::start().await;
    let client = daemon.client().await;
    let huge = "x".repeat(100_000);
    let cases: [(&str, Code, &str); 4] = [
        ("", Code::InvalidArgument, "session_id is required"),
        (
            "../etc",
            Code::InvalidArgument,
            "must start with a letter or digit",
        ),
        (&huge, Code::InvalidArgument, "100000 bytes long"),
        ("no-such-session", Code::NotFound, "no-such-session"),
    ];
    for (id, code, needle) in cases {
        let mut c = client.clone();
        let session_id = id.to_owned();
        let results: [(&str, Result<(), tonic::Status>); 4] = [
            (
                "Kill",
                c.kill(pb::KillRequest {
                    session_id: session_id.clone(),
                    ..Default::default()
                })
                .await
                .map(drop),
            ),
            (
                "Attach",
                c.attach(pb::AttachRequest {
                    session_id: session_id.clone(),
                    from_offset: None,
                    ..Default::default()
                })
                .await
                .map(drop),
            ),
            (
                "Write",
                c.write(pb::WriteRequest {
                    session_id: session_id.clone(),
                    data: "x".into(),
                })
                .await
                .map(drop),
            ),
            (
                "Resize",
                c.resize(pb::ResizeRequest {
                    session_id: session_id.clone(),
                    cols: 80,
                    rows: 24,
                    ..Default::default()
                })
                .await
                .map(drop),
            ),
        ];
        for (rpc, result) in results {
            let status = result.expect_err(rpc);
            let label = format!("{rpc} with {:?}", &id[..id.len().min(20)]);
            assert_eq!(status.code(), code, "{label}: {:.200}", status.message());
            assert!(
                status.message().contains(needle),
                "{label}: {:.200}",
                status.message()
            );
            assert!(status.message().len() < 300, "{label}: a long message");
        }
    }
}
