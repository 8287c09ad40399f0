//! Refusals say why in terms a program can act on.
//!
//! Each carries a reason (`google.rpc.ErrorInfo` in the `holdfast` domain)
//! naming what it concerns. For bad input it also names the field
//! (`google.rpc.BadRequest`), as paths in the request that was sent. This
//! holds whichever service found the fault. Every `expect_status` checks that
//! a reason is there; these check which.

mod support;

use holdfast_api::proto::daemon::v1 as daemon_pb;
use holdfast_api::proto::host::v1 as pb;
use support::host::*;
use support::*;
use tonic::Code;

#[tokio::test]
async fn the_host_names_the_reason_the_field_and_the_subject() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("refusals").await.workspace_id;
    let mut terminals = host.terminals.clone();
    let create = |edit: &dyn Fn(&mut pb::CreateSessionRequest)| {
        let mut request = session_request(&workspace, &["true"]);
        edit(&mut request);
        request
    };
    let start = |create| pb::StartSessionRequest {
        create: Some(create),
    };

    // Found wrong by the host-service, and by the daemon behind it: the
    // same field of the same request either way, inside `create` when it
    // came inside `create`.
    for (edit, field, needle) in [
        (
            &(|r: &mut pb::CreateSessionRequest| r.title = Some("a\u{7}b".into()))
                as &dyn Fn(&mut pb::CreateSessionRequest),
            "title",
            "control characters",
        ),
        (&|r| r.cols = 10_001, "cols", "between 1 and 10000"),
        (&|r| r.cwd = "relative/dir".into(), "cwd", "absolute"),
        (&|r| r.argv = vec![String::new()], "argv[0]", "empty"),
        (
            &|r| r.argv = vec!["sh".into(), "a\0b".into()],
            "argv[1]",
            "NUL",
        ),
    ] {
        let refused = expect_status(
            terminals.create_session(create(edit)).await,
            Code::InvalidArgument,
            needle,
        );
        expect_field(&refused, field);
        let refused = expect_status(
            terminals.start_session(start(create(edit))).await,
            Code::InvalidArgument,
            needle,
        );
        expect_field(&refused, &format!("create.{field}"));
    }
    let refused = expect_status(
        terminals
            .start_session(pb::StartSessionRequest { create: None })
            .await,
        Code::InvalidArgument,
        "create is required",
    );
    expect_field(&refused, "create");

    // The daemon's reasons come through with what they name.
    let refused = expect_status(
        terminals
            .create_session(create(&|r| r.argv = vec!["/no/such/program".into()]))
            .await,
        Code::NotFound,
        "/no/such/program",
    );
    expect_reason(
        &refused,
        Reason::ProgramNotFound,
        &[("program", "/no/such/program")],
    );
    let refused = expect_status(
        terminals
            .create_session(create(&|r| r.cwd = "/no/such/dir".into()))
            .await,
        Code::NotFound,
        "/no/such/dir",
    );
    expect_reason(&refused, Reason::CwdNotFound, &[("cwd", "/no/such/dir")]);
    let refused = expect_status(
        terminals
            .create_session(create(&|r| r.argv = vec!["/etc/passwd".into()]))
            .await,
        Code::PermissionDenied,
        "/etc/passwd",
    );
    expect_reason(
        &refused,
        Reason::ProgramNotPermitted,
        &[("program", "/etc/passwd")],
    );

    // Sessions and workspaces that are not there, or no longer open.
    let unknown = "0b6e7c58-4a3e-4d1f-9d0e-3c1a2b4c5d6e";
    let refused = expect_status(
        terminals
            .get_session(pb::GetSessionRequest {
                session_id: unknown.into(),
            })
            .await,
        Code::NotFound,
        unknown,
    );
    expect_reason(&refused, Reason::SessionNotFound, &[("sessionId", unknown)]);
    let refused = expect_status(
        terminals
            .list_sessions(pb::ListSessionsRequest {
                workspace_id: unknown.into(),
                ..Default::default()
            })
            .await,
        Code::NotFound,
        "no workspace",
    );
    expect_reason(
        &refused,
        Reason::WorkspaceNotFound,
        &[("workspaceId", unknown)],
    );

    let [session] = host.create_sessions(&workspace, [&["sleep", "1000"]]).await;
    let id = session.session_id.as_str();
    host.dispose(id).await;
    let refused = expect_status(
        terminals
            .write_input(pb::WriteInputRequest {
                session_id: id.into(),
                data: b"x".to_vec().into(),
                ..Default::default()
            })
            .await,
        Code::NotFound,
        "disposed",
    );
    expect_reason(&refused, Reason::SessionDisposed, &[("sessionId", id)]);

    host.close_workspace(&workspace).await;
    let refused = expect_status(
        terminals
            .create_session(session_request(&workspace, &["true"]))
            .await,
        Code::FailedPrecondition,
        "closed",
    );
    expect_reason(
        &refused,
        Reason::WorkspaceClosed,
        &[("workspaceId", &workspace)],
    );
}

#[tokio::test]
async fn the_daemon_names_fields_as_paths_in_its_own_requests() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let mut relative = spawn_request(&["true"]);
    relative.cwd = "relative/dir".into();

    let refused = expect_status(
        client.spawn(relative.clone()).await,
        Code::InvalidArgument,
        "absolute",
    );
    expect_field(&refused, "cwd");
    let refused = expect_status(
        client
            .start(daemon_pb::StartRequest {
                spawn: Some(relative),
            })
            .await,
        Code::InvalidArgument,
        "absolute",
    );
    expect_field(&refused, "spawn.cwd");

    let refused = expect_status(
        client
            .write(daemon_pb::WriteRequest {
                session_id: "nobody-here".into(),
                data: b"x".to_vec().into(),
            })
            .await,
        Code::NotFound,
        "nobody-here",
    );
    expect_reason(
        &refused,
        Reason::SessionNotFound,
        &[("sessionId", "nobody-here")],
    );
    let refused = expect_status(
        client
            .list(daemon_pb::ListRequest {
                session_ids: vec!["fine".into(), "../etc".into()],
                ..Default::default()
            })
            .await,
        Code::InvalidArgument,
        "must start with a letter or digit",
    );
    expect_field(&refused, "session_ids[1]");

    let taken = spawn(&mut client, &["sleep", "1000"]).await;
    let mut again = spawn_request(&["true"]);
    again.session_id = taken.session_id.clone();
    let refused = expect_status(
        client.spawn(again).await,
        Code::AlreadyExists,
        "already exists",
    );
    expect_reason(
        &refused,
        Reason::SessionExists,
        &[("sessionId", &taken.session_id)],
    );
}

/// A request over a service's size limit is refused RESOURCE_EXHAUSTED, as
/// gRPC's status codes have it, naming the limit: a unary request, and a
/// message of a request stream, on both services (tonic's own refusal is
/// OUT_OF_RANGE, with no reason).
#[tokio::test]
async fn requests_over_the_size_limit_are_refused_with_the_limit() {
    const LIMIT: &str = "16777216";
    let oversize = || vec![b'x'; 17 << 20];
    let expect_too_large = |answer: Result<(), tonic::Status>, limit: &str| {
        let refused = expect_status(answer, Code::ResourceExhausted, "over this service's limit");
        expect_reason(&refused, Reason::RequestTooLarge, &[("limitBytes", limit)]);
    };

    let home = HostHome::new();
    let host = home.start(&[]).await;
    let mut terminals = host.terminals.clone();
    let answer = terminals
        .write_input(pb::WriteInputRequest {
            session_id: "any".into(),
            data: oversize().into(),
            ..Default::default()
        })
        .await;
    expect_too_large(answer.map(drop), LIMIT);
    let stream = tokio_stream::iter([pb::SendInputRequest {
        session_id: "any".into(),
        data: oversize().into(),
        ..Default::default()
    }]);
    expect_too_large(
        first_answer(terminals.send_input(stream).await).await,
        LIMIT,
    );
    // The workspace service keeps tonic's default limit, 4 MiB.
    let mut workspaces = host.workspaces.clone();
    let answer = workspaces
        .create_workspace(pb::CreateWorkspaceRequest {
            name: "x".repeat(5 << 20),
        })
        .await;
    expect_too_large(answer.map(drop), "4194304");

    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let answer = client
        .write(daemon_pb::WriteRequest {
            session_id: "any".into(),
            data: oversize().into(),
        })
        .await;
    expect_too_large(answer.map(drop), LIMIT);
    let stream = tokio_stream::iter([daemon_pb::InputRequest {
        session_id: "any".into(),
        data: oversize().into(),
    }]);
    expect_too_large(first_answer(client.input(stream).await).await, LIMIT);
}

/// The first answer of a stream, or the status that ended it first, from
/// its call or its first message.
async fn first_answer<T>(
    call: Result<tonic::Response<tonic::Streaming<T>>, tonic::Status>,
) -> Result<(), tonic::Status> {
    let mut answers = call?.into_inner();
    answers.message().await?;
    Ok(())
}
