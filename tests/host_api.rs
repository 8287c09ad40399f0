//! The host API end to end, against the real host-service and daemon.
//!
//! These cover workspaces, disposal, bad input, the reaper, grpc-web and
//! health.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use holdfast_api::proto::host::v1 as pb;
use holdfast_plumbing::answered_stream::{self, AnsweredStream};
use holdfast_plumbing::proc_usage::rss_kib;
use support::host::*;
use support::*;
use tonic::Code;

#[tokio::test]
async fn input_from_many_writers_arrives_whole_and_an_ended_session_refuses_more() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("input").await.workspace_id;
    let script = r#"stty raw -echo; echo ready; head -c 24000; printf '\ndone\n'; read x; exit 3"#;
    let [session] = host
        .create_sessions(&workspace, [&["sh", "-c", script]])
        .await;
    let id = &session.session_id;
    let mut stream = host.attach(id, Some(0)).await;
    let mut text = receive_host_text(&mut stream, "ready").await;

    // Eight writers at once, each a run of its own letter.
    let writers = (0..8u8).map(|i| {
        let mut terminals = host.terminals.clone();
        let write = pb::WriteInputRequest {
            session_id: id.clone(),
            data: vec![b'a' + i; 3000].into(),
            ..Default::default()
        };
        async move { terminals.write_input(write).await.expect("write") }
    });
    futures_util::future::join_all(writers).await;
    text += &receive_host_text(&mut stream, "done").await;
    let (_, read) = text.split_once("ready\n").expect("ready, then the input");
    let (read, _) = read.split_once("\ndone").expect("the input, then done");
    let mut runs: Vec<(char, usize)> = Vec::new();
    for c in read.chars() {
        match runs.last_mut() {
            Some((letter, count)) if *letter == c => *count += 1,
            _ => runs.push((c, 1)),
        }
    }
    runs.sort();
    let whole: Vec<(char, usize)> = ('a'..='h').map(|c| (c, 3000)).collect();
    assert_eq!(runs, whole, "each write whole, none lost");

    // Once the program has ended, a write is refused as for any ended
    // session (on the input stream the daemon ended, or as a request of
    // its own once the host has forgotten the session).
    host.write_input(id, "\n").await;
    assert_eq!(receive_host_exit(&mut stream).await.exit_code, Some(3));
    let refused = expect_status(
        host.terminals
            .clone()
            .write_input(pb::WriteInputRequest {
                session_id: id.clone(),
                data: "more".into(),
                ..Default::default()
            })
            .await,
        Code::FailedPrecondition,
        "exited",
    );
    let (reason, named) = error_details::reason_of(&refused).expect("a reason");
    assert!(
        ["SESSION_EXITED", "TERMINAL_CLOSED"].contains(&reason.as_str()),
        "{reason}"
    );
    assert_eq!(named.get("sessionId"), Some(id));
}

/// A `SendInput` stream on the host-service, opened with `first`.
async fn send_input(
    host: &HostService,
    first: pb::SendInputRequest,
) -> Result<AnsweredStream<pb::SendInputRequest, pb::SendInputResponse>, tonic::Status> {
    let (writes, requests) = answered_stream::requests(first);
    let answers = host.terminals.clone().send_input(requests).await?;
    AnsweredStream::opened(writes, answers.into_inner()).await
}

fn keys(session_id: &str, data: &[u8]) -> pb::SendInputRequest {
    pb::SendInputRequest {
        session_id: session_id.to_owned(),
        data: data.to_vec().into(),
        ..Default::default()
    }
}

#[tokio::test]
async fn send_input_streams_writes_in_order_and_refuses_precisely() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("keys").await.workspace_id;
    let reader = r#"while read line; do echo "got $line"; done; exit 4"#;
    let [reader, other] = host
        .create_sessions(&workspace, [&["sh", "-c", reader], &["cat"]])
        .await;
    let mut read = host.attach(&reader.session_id, Some(0)).await;
    let mut input = send_input(&host, keys(&reader.session_id, b"one\n"))
        .await
        .expect("the first write opens the stream");
    input
        .send(keys("", b"two\n"))
        .await
        .expect("the same session");
    let text = receive_host_text(&mut read, "got two").await;
    let got: Vec<&str> = text.lines().filter(|l| l.starts_with("got")).collect();
    assert_eq!(got, ["got one", "got two"]);

    // A message may name another session; later ones follow it.
    let mut cat = host.attach(&other.session_id, Some(0)).await;
    input
        .send(keys(&other.session_id, b"x"))
        .await
        .expect("another session");
    input
        .send(keys("", b"y\n"))
        .await
        .expect("still the other one");
    receive_host_text(&mut cat, "xy\r\nxy").await;
    // A later message's client token is checked as the first's would be.
    let mut named = send_input(&host, keys(&other.session_id, b"p"))
        .await
        .expect("a stream");
    let refused = named
        .send(pb::SendInputRequest {
            data: "q".into(),
            attachment: "x".into(),
            ..Default::default()
        })
        .await;
    let refused = expect_status(refused, Code::InvalidArgument, "holdfast-attachment");
    expect_field(&refused, "attachment");

    // The reader ends; writing on is refused for that reason, and ends
    // the stream.
    input
        .send(keys(&reader.session_id, &[0x04]))
        .await
        .expect("end of input");
    assert_eq!(receive_host_exit(&mut read).await.exit_code, Some(4));
    expect_status(
        input.send(keys("", b"more\n")).await,
        Code::FailedPrecondition,
        "exited",
    );

    let unknown = uuid_like();
    for (first, code, needle) in [
        (
            keys("", b"x"),
            Code::InvalidArgument,
            "session_id is required",
        ),
        (keys("nope", b"x"), Code::InvalidArgument, "not a valid id"),
        (keys(&unknown, b"x"), Code::NotFound, "no session"),
        (
            keys(&other.session_id, &vec![0; (1 << 20) + 1]),
            Code::InvalidArgument,
            "at most 1048576",
        ),
    ] {
        expect_status(send_input(&host, first).await.map(drop), code, needle);
    }
}

#[tokio::test]
async fn bad_input_gets_precise_statuses() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("errors").await.workspace_id;
    let live = host
        .create_session(session_request(&workspace, &["sleep", "1000"]))
        .await;
    let unknown = uuid_like();
    let t = &mut host.terminals;
    let w = &mut host.workspaces;

    expect_status(
        w.create_workspace(pb::CreateWorkspaceRequest { name: " ".into() })
            .await,
        Code::InvalidArgument,
        "name is required",
    );
    expect_status(
        w.create_workspace(pb::CreateWorkspaceRequest {
            name: "x".repeat(201),
        })
        .await,
        Code::InvalidArgument,
        "more than 200 characters",
    );
    expect_status(
        w.close_workspace(pb::CloseWorkspaceRequest {
            workspace_id: unknown.clone(),
        })
        .await,
        Code::NotFound,
        &unknown,
    );
    expect_status(
        t.list_sessions(pb::ListSessionsRequest {
            workspace_id: String::new(),
            ..Default::default()
        })
        .await,
        Code::InvalidArgument,
        "workspace_id is required",
    );
    expect_status(
        t.list_sessions(pb::ListSessionsRequest {
            workspace_id: "../etc".into(),
            ..Default::default()
        })
        .await,
        Code::InvalidArgument,
        "not a valid id",
    );
    expect_status(
        t.list_sessions(pb::ListSessionsRequest {
            workspace_id: unknown.clone(),
            ..Default::default()
        })
        .await,
        Code::NotFound,
        "no workspace",
    );
    expect_status(
        t.count_background_sessions(pb::CountBackgroundSessionsRequest {
            workspace_id: unknown.clone(),
            ..Default::default()
        })
        .await,
        Code::NotFound,
        "no workspace",
    );
    expect_status(
        t.count_background_sessions(pb::CountBackgroundSessionsRequest {
            workspace_id: workspace.clone(),
            attached_session_ids: vec![String::new(); 10_001],
            ..Default::default()
        })
        .await,
        Code::InvalidArgument,
        "limit is 10000",
    );
    // An id that would never match is no id to subtract.
    for (bad, why) in [
        ("x", "attached_session_ids[1] \"x\" is not a valid id"),
        ("", "attached_session_ids[1] is required"),
        ("ABCDEF01-2345-4678-9ABC-DEF012345678", "lower case"),
    ] {
        expect_status(
            t.count_background_sessions(pb::CountBackgroundSessionsRequest {
                workspace_id: workspace.clone(),
                attached_session_ids: vec![unknown.clone(), bad.to_owned()],
                ..Default::default()
            })
            .await,
            Code::InvalidArgument,
            why,
        );
    }
    expect_status(
        t.create_session(session_request(&unknown, &["true"])).await,
        Code::NotFound,
        "no workspace",
    );
    // The daemon's refusal of a program this user may not run, passed on.
    expect_status(
        t.create_session(session_request(&workspace, &["/etc/passwd"]))
            .await,
        Code::PermissionDenied,
        "/etc/passwd",
    );
    let mut huge = session_request(&workspace, &["true"]);
    huge.cols = 10_001;
    expect_status(
        t.create_session(huge).await,
        Code::InvalidArgument,
        "cols must be between 1 and 10000",
    );
    expect_status(
        t.create_session(session_request(&workspace, &["no-such-program-x"]))
            .await,
        Code::NotFound,
        "no-such-program-x",
    );
    let mut bad_cwd = session_request(&workspace, &["true"]);
    bad_cwd.cwd = "/no/such/dir".into();
    expect_status(
        t.create_session(bad_cwd).await,
        Code::NotFound,
        "/no/such/dir",
    );
    expect_status(
        t.write_input(pb::WriteInputRequest {
            session_id: unknown.clone(),
            data: "x".into(),
            ..Default::default()
        })
        .await,
        Code::NotFound,
        "no session",
    );
    expect_status(
        t.write_input(pb::WriteInputRequest {
            session_id: "nope".into(),
            data: "x".into(),
            ..Default::default()
        })
        .await,
        Code::InvalidArgument,
        "not a valid id",
    );
    let refused = expect_status(
        t.write_input(pb::WriteInputRequest {
            session_id: live.session_id.clone(),
            data: "x".into(),
            attachment: "desk".into(),
        })
        .await,
        Code::InvalidArgument,
        "holdfast-attachment",
    );
    expect_field(&refused, "attachment");
    expect_status(
        t.write_input(pb::WriteInputRequest {
            session_id: live.session_id.clone(),
            data: vec![0; (1 << 20) + 1].into(),
            ..Default::default()
        })
        .await,
        Code::InvalidArgument,
        "at most 1048576",
    );
    expect_status(
        t.resize_session(pb::ResizeSessionRequest {
            session_id: live.session_id.clone(),
            cols: 80,
            rows: 0,
            ..Default::default()
        })
        .await,
        Code::InvalidArgument,
        "rows",
    );
    expect_status(
        t.attach_session(pb::AttachSessionRequest {
            session_id: unknown.clone(),
            from_offset: None,
            ..Default::default()
        })
        .await,
        Code::NotFound,
        "no session",
    );
    expect_status(
        t.dispose_session(pb::DisposeSessionRequest {
            session_id: unknown,
            ..Default::default()
        })
        .await,
        Code::NotFound,
        "no session",
    );

    // Failed creations leave nothing behind; the live session is untouched.
    let list = host.list(&workspace).await;
    assert_eq!(ids(&list), vec![live.session_id.as_str()]);
}

fn uuid_like() -> String {
    "00000000-0000-4000-8000-000000000000".into()
}

/// A client polling with the generation of the list it holds gets only the
/// output offsets while nothing else changed, and a whole list with a new
/// generation after any other change.
#[tokio::test]
async fn a_list_asked_if_still_its_generation_sends_only_offsets() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("polled").await.workspace_id;
    let [quiet, talker] = host
        .create_sessions(&workspace, [&["sleep", "600"], &["cat"]])
        .await;
    let mut terminals = host.terminals.clone();
    let mut list_if = async |generation: u64| {
        terminals
            .list_sessions(pb::ListSessionsRequest {
                workspace_id: workspace.clone(),
                if_generation: Some(generation),
                ..Default::default()
            })
            .await
            .expect("list")
            .into_inner()
    };
    let held = host.list(&workspace).await;
    assert_ne!(held.generation, 0);
    assert!(!held.unchanged && held.output_offsets.is_empty());
    assert_eq!(
        ids(&held),
        vec![quiet.session_id.as_str(), talker.session_id.as_str()]
    );
    let offsets: Vec<u64> = held.sessions.iter().map(|s| s.output_offset).collect();

    let same = list_if(held.generation).await;
    assert!(same.unchanged && same.sessions.is_empty(), "{same:?}");
    assert_eq!(
        (same.generation, &same.output_offsets),
        (held.generation, &offsets)
    );

    // Output alone keeps the generation; the offsets move.
    host.write_input(&talker.session_id, "hello\n").await;
    let talked = offsets[1];
    let moved = eventually("the offset to move", || {
        let mut terminals = host.terminals.clone();
        let request = pb::ListSessionsRequest {
            workspace_id: workspace.clone(),
            if_generation: Some(held.generation),
            ..Default::default()
        };
        async move {
            let list = terminals.list_sessions(request).await.ok()?.into_inner();
            (list.output_offsets.get(1) > Some(&talked)).then_some(list)
        }
    })
    .await;
    assert!(moved.unchanged && moved.sessions.is_empty());
    assert_eq!(moved.output_offsets[0], offsets[0]);

    // Any other change, or a generation this host never gave: all of it.
    let stranger = list_if(held.generation ^ 0x5a5a).await;
    assert!(!stranger.unchanged && stranger.sessions.len() == 2);
    let attached = host.attach(&talker.session_id, None).await;
    let after_attach = list_if(held.generation).await;
    assert!(!after_attach.unchanged, "attaching changes the list");
    assert_ne!(after_attach.generation, held.generation);
    assert!(after_attach.sessions[1].attached);
    drop(attached);
    let third = host
        .create_session(session_request(&workspace, &["sleep", "600"]))
        .await;
    let after_create = host
        .list_until("the new session", &workspace, |list| {
            list.sessions.len() == 3
        })
        .await;
    assert_eq!(after_create.sessions[2].session_id, third.session_id);
    let again = list_if(after_create.generation).await;
    assert!(
        again.unchanged && again.output_offsets.len() == 3,
        "{again:?}"
    );
}

/// Reads a `StartSession` stream until its output holds `needle`,
/// checking that output comes in order from the first byte; returns the
/// exit instead if it comes first. The stream must not end before either.
async fn start_output_until(
    stream: &mut tonic::Streaming<pb::StartSessionResponse>,
    text: &mut Vec<u8>,
    needle: &str,
) -> Option<pb::Exited> {
    use pb::attach_session_response::Event as Attached;
    use pb::start_session_response::Event;
    while !String::from_utf8_lossy(text).contains(needle) {
        let message = next_message(stream, "output")
            .await
            .unwrap_or_else(|| panic!("the stream ended before {needle:?} or an exit"));
        match message.event {
            Some(Event::Attach(pb::AttachSessionResponse {
                event: Some(Attached::Output(output)),
            })) => {
                assert_eq!(output.offset, text.len() as u64, "output in order");
                text.extend_from_slice(&output.data);
            }
            Some(Event::Attach(pb::AttachSessionResponse {
                event: Some(Attached::Exited(exited)),
            })) => return Some(exited),
            Some(Event::Started(session)) => panic!("started twice: {session:?}"),
            _ => {}
        }
    }
    None
}

/// StartSession: the session first, then its output from the first byte;
/// attached while the stream is open and still running once it closes;
/// the exit ends the stream; refused as CreateSession is.
#[tokio::test]
async fn start_session_streams_a_new_session_from_its_first_byte() {
    use pb::start_session_response::Event;
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("start").await.workspace_id;
    let terminals = host.terminals.clone();
    let start = |argv: &[&str]| {
        let mut terminals = terminals.clone();
        let request = pb::StartSessionRequest {
            create: Some(session_request(&workspace, argv)),
        };
        async move {
            let mut stream = terminals
                .start_session(request)
                .await
                .expect("start")
                .into_inner();
            let first = stream.message().await.expect("stream").expect("a message");
            let Some(Event::Started(session)) = first.event else {
                panic!("the first message must be the session, got {first:?}");
            };
            (session, stream)
        }
    };

    let (session, mut stream) = start(&[
        "sh",
        "-c",
        "echo first; read line; echo got:$line; exec sleep 600",
    ])
    .await;
    assert!(session.attached && session.alive, "{session:?}");
    let mut text = Vec::new();
    assert!(
        start_output_until(&mut stream, &mut text, "first")
            .await
            .is_none()
    );
    let listed = host.list(&workspace).await;
    assert_eq!(ids(&listed), vec![session.session_id.as_str()]);
    assert!(listed.sessions[0].attached, "attached while streamed");
    host.write_input(&session.session_id, "x\n").await;
    assert!(
        start_output_until(&mut stream, &mut text, "got:x")
            .await
            .is_none()
    );
    drop(stream);
    host.list_until(
        "the session to be detached and running",
        &workspace,
        |list| {
            list.sessions.iter().any(|listed| {
                listed.session_id == session.session_id && listed.alive && !listed.attached
            })
        },
    )
    .await;

    let (quick, mut stream) = start(&["sh", "-c", "echo bye; exit 3"]).await;
    let mut text = Vec::new();
    let exited = start_output_until(&mut stream, &mut text, "never printed").await;
    assert_eq!(text, b"bye\r\n", "all of its output, from the first byte");
    assert_eq!(exited.expect("the exit").exit_code, Some(3), "{quick:?}");
    assert!(
        stream.message().await.expect("stream").is_none(),
        "the exit is last"
    );

    let start_of = |create: Option<pb::CreateSessionRequest>| pb::StartSessionRequest { create };
    expect_status(
        host.terminals.start_session(start_of(None)).await,
        Code::InvalidArgument,
        "create is required",
    );
    expect_status(
        host.terminals
            .start_session(start_of(Some(session_request(&uuid_like(), &["true"]))))
            .await,
        Code::NotFound,
        "workspace",
    );
    let mut oversized = session_request(&workspace, &["true"]);
    oversized.cols = 10_001;
    expect_status(
        host.terminals
            .start_session(start_of(Some(oversized)))
            .await,
        Code::InvalidArgument,
        "cols",
    );
}

#[tokio::test]
async fn a_look_sends_the_output_so_far_and_ends_without_attaching() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("look").await.workspace_id;
    let [written_once, ticking, exiting, silent] = host
        .create_sessions(
            &workspace,
            [
                // More than a stream's window: the look stays open until read.
                &[
                    "sh",
                    "-c",
                    "head -c 300000 /dev/zero | tr '\\0' x; echo; echo done; exec sleep 600",
                ],
                &["sh", "-c", "while :; do echo tick; sleep 0.01; done"],
                &["sh", "-c", "echo bye; exit 3"],
                &["sleep", "600"],
            ],
        )
        .await;
    let written = 300_000 + "\r\ndone\r\n".len() as u64;
    host.list_until("all of its output written", &workspace, |list| {
        let offset = |id: &str| {
            list.sessions
                .iter()
                .find(|s| s.session_id == id)
                .map(|s| s.output_offset)
        };
        offset(&written_once.session_id) == Some(written)
            && offset(&ticking.session_id) >= Some("tick\r\n".len() as u64)
    })
    .await;

    // Not attached while looked at.
    let mut open = host
        .terminals
        .clone()
        .attach_session(pb::AttachSessionRequest {
            session_id: written_once.session_id.clone(),
            from_offset: None,
            until_now: true,
            ..Default::default()
        })
        .await
        .expect("a look")
        .into_inner();
    assert!(open.message().await.expect("stream").is_some());
    let listed = host.list(&workspace).await;
    let shown = listed
        .sessions
        .iter()
        .find(|s| s.session_id == written_once.session_id)
        .expect("listed");
    assert!(!shown.attached, "a look is no attachment: {shown:?}");
    drop(open);

    let (text, exited) = look(&host, &written_once.session_id, None)
        .await
        .expect("look");
    assert_eq!(text.len() as u64, written);
    assert!(text.ends_with(b"x\r\ndone\r\n") && exited.is_none());
    let (text, _) = look(&host, &written_once.session_id, Some(written - 6))
        .await
        .expect("look");
    assert_eq!(text, b"done\r\n", "from an offset");
    let (text, _) = look(&host, &written_once.session_id, Some(written))
        .await
        .expect("look");
    assert!(text.is_empty(), "from the end: nothing");

    // A program still writing: the look ends all the same.
    let (text, exited) = look(&host, &ticking.session_id, None).await.expect("look");
    assert!(
        text.starts_with(b"tick\r\n") && exited.is_none(),
        "{text:?}"
    );

    // Nothing written yet: it ends at once.
    let (text, exited) = look(&host, &silent.session_id, None).await.expect("look");
    assert!(text.is_empty() && exited.is_none());

    // An exited session: its output, then its exit.
    let (text, exited) = eventually("the exit, looked at", || async {
        let (text, exited) = look(&host, &exiting.session_id, None).await.ok()?;
        Some((text, exited?))
    })
    .await;
    assert_eq!(
        (text.as_slice(), exited.exit_code),
        (&b"bye\r\n"[..], Some(3))
    );

    host.dispose(&silent.session_id).await;
    let refused = look(&host, &silent.session_id, None).await;
    assert_eq!(refused.map_err(|s| s.code()).err(), Some(Code::NotFound));
    let refused = look(&host, &uuid_like(), None).await;
    assert_eq!(refused.map_err(|s| s.code()).err(), Some(Code::NotFound));
}

#[tokio::test]
async fn dispose_stamps_once_kills_and_hides_for_good() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("dispose").await.workspace_id;
    let session = host
        .create_session(session_request(&workspace, &["sleep", "1000"]))
        .await;
    let dispose = pb::DisposeSessionRequest {
        session_id: session.session_id.clone(),
        ..Default::default()
    };
    let first = host
        .terminals
        .dispose_session(dispose.clone())
        .await
        .expect("dispose")
        .into_inner();
    let second = host
        .terminals
        .dispose_session(dispose)
        .await
        .expect("disposing twice is fine")
        .into_inner();
    assert_eq!(
        first.dispose_requested_at, second.dispose_requested_at,
        "the first stamp wins"
    );
    assert!(host.list(&workspace).await.sessions.is_empty());
    process_gone(session.pid).await;
    expect_status(
        host.terminals
            .attach_session(pb::AttachSessionRequest {
                session_id: session.session_id.clone(),
                from_offset: None,
                ..Default::default()
            })
            .await,
        Code::NotFound,
        "disposed",
    );
}

#[tokio::test]
async fn closing_a_workspace_disposes_its_sessions_and_refuses_new_ones() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("closing").await.workspace_id;
    let other = host.create_workspace("other").await.workspace_id;
    let shown = host
        .create_session(session_request(&workspace, &["sleep", "1000"]))
        .await;
    let mut hidden = session_request(&workspace, &["sleep", "1000"]);
    hidden.listed = Some(false);
    let hidden = host.create_session(hidden).await;
    let elsewhere = host
        .create_session(session_request(&other, &["sleep", "1000"]))
        .await;

    let closed = host
        .workspaces
        .close_workspace(pb::CloseWorkspaceRequest {
            workspace_id: workspace.clone(),
        })
        .await
        .expect("close")
        .into_inner();
    assert_eq!(closed.stamped, 2);
    assert!(closed.workspace.expect("workspace").closed_at.is_some());
    process_gone(shown.pid).await;
    process_gone(hidden.pid).await;
    assert!(host.list(&workspace).await.sessions.is_empty());
    assert_eq!(
        ids(&host.list(&other).await),
        vec![elsewhere.session_id.as_str()]
    );
    expect_status(
        host.terminals
            .create_session(session_request(&workspace, &["true"]))
            .await,
        Code::FailedPrecondition,
        "is closed",
    );
    // Closing again stamps nothing.
    let again = host
        .workspaces
        .close_workspace(pb::CloseWorkspaceRequest {
            workspace_id: workspace,
        })
        .await
        .expect("close again");
    assert_eq!(again.into_inner().stamped, 0);
    let listed = host
        .workspaces
        .list_workspaces(pb::ListWorkspacesRequest::default())
        .await
        .expect("list")
        .into_inner();
    assert_eq!(
        listed
            .workspaces
            .iter()
            .map(|w| w.name.as_str())
            .collect::<Vec<_>>(),
        vec!["closing", "other"]
    );
}

/// `ListWorkspaces` a page at a time (AIP-158): pages follow each other
/// without a gap or a repeat, a workspace created between two pages comes
/// on a later one, the last page has no next token, and without a page
/// size everything comes at once, as before pages. With `open_only`, pages
/// are of open workspaces only.
#[tokio::test]
async fn workspaces_come_a_page_at_a_time() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    for i in 0..5 {
        host.create_workspace(&format!("w{i}")).await;
    }
    let client = host.workspaces.clone();
    let list_open = |open_only: bool, page_size: i32, page_token: &str| {
        let request = pb::ListWorkspacesRequest {
            page_size,
            page_token: page_token.to_owned(),
            open_only,
        };
        let mut client = client.clone();
        async move { client.list_workspaces(request).await }
    };
    let list = |page_size: i32, page_token: &str| list_open(false, page_size, page_token);
    let names = |page: &pb::ListWorkspacesResponse| {
        page.workspaces
            .iter()
            .map(|w| w.name.clone())
            .collect::<Vec<_>>()
    };
    let all = list(0, "").await.expect("everything").into_inner();
    assert_eq!(names(&all), ["w0", "w1", "w2", "w3", "w4"]);
    assert_eq!(all.next_page_token, "");

    let first = list(2, "").await.expect("page 1").into_inner();
    assert_eq!(names(&first), ["w0", "w1"]);
    assert_ne!(first.next_page_token, "");
    host.create_workspace("meanwhile").await;
    let second = list(2, &first.next_page_token)
        .await
        .expect("page 2")
        .into_inner();
    assert_eq!(names(&second), ["w2", "w3"]);
    let third = list(2, &second.next_page_token)
        .await
        .expect("page 3")
        .into_inner();
    assert_eq!(names(&third), ["w4", "meanwhile"]);
    assert_eq!(third.next_page_token, "", "nothing follows");

    let rest = list(0, &first.next_page_token)
        .await
        .expect("the rest")
        .into_inner();
    assert_eq!(names(&rest), ["w2", "w3", "w4", "meanwhile"]);
    assert_eq!(rest.next_page_token, "");
    let capped = list(i32::MAX, "").await.expect("capped").into_inner();
    assert_eq!(capped.workspaces.len(), 6);
    assert_eq!(capped.next_page_token, "");
    expect_status(list(-1, "").await, Code::InvalidArgument, "page_size is -1");
    let refused = list(2, "forged-token-1234").await.expect_err("not ours");
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert!(
        refused
            .message()
            .contains("page_token is not one this service gave")
            && !refused.message().contains("forged-token"),
        "{refused:?}"
    );

    for closed in [&all.workspaces[1], &all.workspaces[3]] {
        host.close_workspace(&closed.workspace_id).await;
    }
    let first = list_open(true, 2, "").await.expect("open 1").into_inner();
    assert_eq!(names(&first), ["w0", "w2"]);
    let second = list_open(true, 2, &first.next_page_token)
        .await
        .expect("open 2")
        .into_inner();
    assert_eq!(names(&second), ["w4", "meanwhile"]);
    assert_eq!(second.next_page_token, "");
    let all = list_open(false, 0, "").await.expect("all").into_inner();
    assert_eq!(all.workspaces.len(), 6, "closed ones too without open_only");
}

/// Creates racing a CloseWorkspace, in four lanes: however each one lands
/// (refused, started then killed, or answered then killed by the close),
/// once all have answered nothing of the workspace is listed or running.
#[tokio::test]
async fn closing_a_workspace_while_sessions_start_leaves_none_running() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("racing").await.workspace_id;
    let mut lanes = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let mut terminals = host.terminals.clone();
        let request = session_request(&workspace, &["sleep", "1000"]);
        lanes.spawn(async move {
            loop {
                if let Err(status) = terminals.create_session(request.clone()).await {
                    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
                    return;
                }
            }
        });
    }
    host.list_until("a few sessions started", &workspace, |list| {
        list.sessions.len() >= 8
    })
    .await;
    host.close_workspace(&workspace).await;
    while let Some(lane) = lanes.join_next().await {
        lane.expect("lane");
    }
    assert!(host.list(&workspace).await.sessions.is_empty());
    home.until_no_session_runs("every started session to have exited")
        .await;
}

/// A create whose row is refused (here its workspace was closed behind the
/// host's back, in the database) never starts its program, not even for a
/// moment, whether or not the host knew the workspace to be open: the row
/// comes first. An error from CreateSession means nothing ran.
#[tokio::test]
async fn a_create_refused_by_its_row_never_starts_its_program() {
    use diesel::RunQueryDsl;

    let home = HostHome::sqlite();
    // A reaper that would not come by during the test.
    let mut host = home.start(&["--reap-interval-secs", "3600"]).await;
    let workspace = host.create_workspace("closing").await.workspace_id;
    let mut db = home.open_database();
    diesel::sql_query("UPDATE workspaces SET closed_at = 1 WHERE id = ?")
        .bind::<diesel::sql_types::Text, _>(&workspace)
        .execute(&mut db)
        .expect("close the workspace");
    for attempt in ["known open", "known closed"] {
        let refused = host
            .terminals
            .create_session(session_request(&workspace, &["sleep", "600"]))
            .await
            .expect_err("refused");
        assert_eq!(
            refused.code(),
            Code::FailedPrecondition,
            "{attempt}: {refused:?}"
        );
        let started = home.until_no_session_runs(attempt).await;
        assert_eq!(started, 0, "{attempt}: a program was started");
    }
}

#[tokio::test]
async fn the_reaper_kills_orphans_but_never_active_sessions() {
    let home = HostHome::new();
    let mut host = home.start(&["--reap-interval-secs", "1"]).await;
    let workspace = host.create_workspace("reaper").await.workspace_id;
    let kept = host
        .create_session(session_request(&workspace, &["sleep", "1000"]))
        .await;
    // A session started on the daemon behind the host's back has no row.
    let mut client =
        holdfast_plumbing::daemon_client::connect(&home.socket(), Duration::from_secs(5))
            .await
            .expect("daemon");
    let orphan = spawn(&mut client, &["sleep", "1000"]).await;
    let reaped = exited(&client, &orphan.session_id).await;
    assert_eq!(reaped.signal, Some(1), "killed with SIGHUP");
    let listed = find(&mut client, &kept.session_id)
        .await
        .expect("kept session");
    assert!(listed.alive, "the reaper never kills an active session");
    assert_eq!(
        ids(&host.list(&workspace).await),
        vec![kept.session_id.as_str()]
    );
}

/// A session that exited and that the daemon has forgotten (here at once:
/// no retention) is answered as exited, from its row, not as unknown:
/// input and resizes are refused as the daemon refuses them for an exited
/// session it still holds, and an attach or a look tells its exit.
#[tokio::test]
async fn a_session_the_daemon_forgot_is_still_told_as_exited() {
    use pb::attach_session_response::Event;
    let home = HostHome::new();
    let mut host = home
        .start_with_env(&[], &[("HOLDFAST_EXIT_RETENTION_SECS", "0")])
        .await;
    let workspace = host.create_workspace("forgotten").await.workspace_id;
    let session = host
        .create_session(session_request(&workspace, &["sh", "-c", "exit 4"]))
        .await;
    let id = session.session_id.as_str();
    // Forgotten by the daemon: what follows is the host-service's answer.
    let daemon = holdfast_plumbing::daemon_client::connect(&home.socket(), Duration::from_secs(5))
        .await
        .expect("daemon");
    eventually("the daemon to forget the session", || {
        let mut daemon = daemon.clone();
        async move { find(&mut daemon, id).await.is_none().then_some(()) }
    })
    .await;
    let refused = eventually("the exit recorded", || {
        let mut terminals = host.terminals.clone();
        async move {
            let write = pb::WriteInputRequest {
                session_id: id.to_owned(),
                data: "x".into(),
                ..Default::default()
            };
            let status = terminals.write_input(write).await.err()?;
            (status.code() == Code::FailedPrecondition).then_some(status)
        }
    })
    .await;
    assert!(refused.message().contains("has exited"), "{refused:?}");
    expect_status(
        host.terminals
            .resize_session(pb::ResizeSessionRequest {
                session_id: id.to_owned(),
                cols: 100,
                rows: 30,
                ..Default::default()
            })
            .await,
        Code::FailedPrecondition,
        "has exited",
    );
    let mut attached = host.attach(id, None).await;
    let told = attached
        .message()
        .await
        .expect("stream")
        .expect("a message");
    assert!(
        matches!(
            told.event,
            Some(Event::Exited(pb::Exited {
                exit_code: Some(4),
                ..
            }))
        ),
        "{told:?}"
    );
    assert!(
        attached.message().await.expect("stream").is_none(),
        "the exit is last"
    );
    let (text, exited) = look(&host, id, None).await.expect("a look");
    assert!(text.is_empty());
    assert_eq!(exited.expect("the exit").exit_code, Some(4));
}

#[tokio::test]
async fn an_exit_is_recorded_and_the_session_leaves_the_list() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("exits").await.workspace_id;
    let session = host
        .create_session(session_request(
            &workspace,
            &["sh", "-c", "read line; exit 7"],
        ))
        .await;
    assert_eq!(
        ids(&host.list(&workspace).await),
        vec![session.session_id.as_str()]
    );
    host.write_input(&session.session_id, "go\n").await;
    host.list_until("the exited session to leave the list", &workspace, |list| {
        list.sessions.is_empty()
    })
    .await;
    // Its output can still be replayed, ending with the exit code.
    let mut stream = host.attach(&session.session_id, Some(0)).await;
    let mut exit = None;
    while let Some(message) = next_message(&mut stream, "replayed event").await {
        if let Some(pb::attach_session_response::Event::Exited(exited)) = message.event {
            exit = Some(exited);
        }
    }
    assert_eq!(exit.and_then(|e| e.exit_code), Some(7));
}

/// Lists are made once per change and reused while only output moves:
/// offsets, attachment, titles and other workspaces must still be fresh.
#[tokio::test]
async fn a_reused_list_is_fresh_in_every_field() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("fresh").await.workspace_id;
    let other = host.create_workspace("other").await.workspace_id;
    let [quiet, talker] = host
        .create_sessions(&workspace, [&["sleep", "600"], &["cat"]])
        .await;
    let elsewhere = host
        .create_session(session_request(&other, &["sleep", "600"]))
        .await;
    let first = host.list(&workspace).await;
    assert_eq!(ids(&first), vec![&*quiet.session_id, &*talker.session_id]);
    let session = |list: &pb::ListSessionsResponse, id: &str| {
        list.sessions
            .iter()
            .find(|session| session.session_id == id)
            .cloned()
            .expect("listed")
    };

    // Output alone: the offset moves, nothing else does.
    let before = session(&first, &talker.session_id);
    host.write_input(&talker.session_id, "hello\n").await;
    let moved = host
        .list_until("the output offset to move", &workspace, |list| {
            session(list, &talker.session_id).output_offset > before.output_offset
        })
        .await;
    let after = session(&moved, &talker.session_id);
    assert_eq!(
        pb::Session {
            output_offset: before.output_offset,
            ..after
        },
        before
    );
    assert_eq!(
        session(&moved, &quiet.session_id),
        session(&first, &quiet.session_id)
    );

    // Attaching and detaching show at once.
    let stream = host.attach(&talker.session_id, None).await;
    host.list_until("the session to show attached", &workspace, |list| {
        session(list, &talker.session_id).attached
    })
    .await;
    drop(stream);
    host.list_until("the session to show detached", &workspace, |list| {
        !session(list, &talker.session_id).attached
    })
    .await;

    // A title the program sets.
    host.write_input(&talker.session_id, "\x1b]2;renamed\x07\n")
        .await;
    host.list_until("the new title", &workspace, |list| {
        session(list, &talker.session_id).title == "renamed"
    })
    .await;

    // Each workspace gets its own list, however they alternate.
    for _ in 0..3 {
        assert_eq!(ids(&host.list(&other).await), vec![&*elsewhere.session_id]);
        assert_eq!(
            ids(&host.list(&workspace).await),
            vec![&*quiet.session_id, &*talker.session_id]
        );
    }
}

#[tokio::test]
async fn the_database_is_owner_only() {
    let home = HostHome::sqlite();
    let _host = home.start(&[]).await;
    let mode = |path: &std::path::Path| {
        std::fs::metadata(path).expect("stat").permissions().mode() & 0o777
    };
    assert_eq!(mode(&home.database()), 0o600);
    assert_eq!(mode(home.database().parent().expect("dir")), 0o700);
}

/// One grpc-web call over plain HTTP/1.1, as a browser would send it.
#[tokio::test]
async fn grpc_web_answers_local_pages_and_health_reports_the_daemon() {
    let home = HostHome::new();
    let host = home.start(&[]).await;
    let local = grpc_web_call(&host.address, None, "http://localhost:5173").await;
    assert!(local.starts_with("http/1.1 200"), "{local}");
    assert!(
        local.contains("access-control-allow-origin: http://localhost:5173"),
        "{local}"
    );
    assert!(
        local.contains("grpc-status:0"),
        "the trailer frame reports success: {local}"
    );
    let exposed = local
        .lines()
        .find_map(|line| line.strip_prefix("access-control-expose-headers:"))
        .unwrap_or_default();
    assert!(
        exposed.contains("grpc-status")
            && exposed.contains("grpc-status-details-bin")
            && exposed.contains("holdfast-until-now")
            && exposed.contains("holdfast-attachment"),
        "a page may read the status and its details, tell a look from an attach, and name its attachment in resizes and input: {local}"
    );
    // A page sending the token asks first; `authorization` must be named
    // in the answer (a wildcard does not cover it).
    let preflight = grpc_web_preflight(
        &host.address,
        "http://localhost:5173",
        "authorization,content-type,x-grpc-web",
    )
    .await;
    let allowed = preflight
        .lines()
        .find_map(|line| line.strip_prefix("access-control-allow-headers:"))
        .unwrap_or_default();
    assert!(allowed.contains("authorization"), "{preflight}");
    let foreign = grpc_web_call(&host.address, None, "http://evil.example").await;
    assert!(
        !foreign.contains("access-control-allow-origin"),
        "a foreign page gets no CORS grant: {foreign}"
    );

    let channel = tonic::transport::Channel::from_shared(host.address.clone())
        .expect("uri")
        .connect()
        .await
        .expect("connect");
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
    for service in [
        "holdfast.host.v1.TerminalService",
        "holdfast.host.v1.WorkspaceService",
        "holdfast.daemon.v1.PtyDaemon",
    ] {
        let status = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: service.into(),
            })
            .await
            .expect("health")
            .into_inner()
            .status;
        assert_eq!(
            status,
            tonic_health::pb::health_check_response::ServingStatus::Serving as i32,
            "{service}"
        );
    }
}

/// What is neither gRPC nor grpc-web (`curl` with JSON, a browser pointed
/// at the port, gRPC over HTTP/1.1) is told in words what the port speaks,
/// with the HTTP status that says why: before, tonic gave a bare 400, or
/// over HTTP/2 read the JSON as gRPC and answered `INTERNAL` "Unexpected
/// EOF decoding stream".
#[tokio::test]
async fn requests_that_are_not_grpc_are_told_what_the_port_speaks() {
    let home = HostHome::new();
    let host = home.start(&[]).await;
    let method = "/holdfast.host.v1.WorkspaceService/ListWorkspaces";
    // From a page this machine serves: the answer must be readable by it.
    let origin = "Origin: http://localhost:5173";
    for (head, body, status) in [
        (
            format!("POST {method} HTTP/1.1\r\n{origin}\r\nContent-Type: application/json"),
            "{}",
            "415 unsupported media type",
        ),
        (
            format!("GET / HTTP/1.1\r\n{origin}"),
            "",
            "405 method not allowed",
        ),
        (
            format!("POST {method} HTTP/1.1\r\n{origin}\r\nContent-Type: application/grpc"),
            "\0\0\0\0\0",
            "505 http version not supported",
        ),
    ] {
        let answer = http1_call(&host.address, None, &head, body).await;
        assert!(
            answer.starts_with(&format!("http/1.1 {status}")),
            "{answer}"
        );
        assert!(
            answer.contains("content-type: text/plain") && answer.contains("grpcurl -plaintext"),
            "{answer}"
        );
        assert!(
            answer.contains("access-control-allow-origin: http://localhost:5173"),
            "{answer}"
        );
        assert_eq!(
            answer.contains("allow: post, options"),
            head.starts_with("GET"),
            "{answer}"
        );
    }

    // HTTP/2, as `curl --http2-prior-knowledge` sends it.
    let mut channel = tonic::transport::Channel::from_shared(host.address.clone())
        .expect("uri")
        .connect()
        .await
        .expect("connect");
    let request = http::Request::builder()
        .method("POST")
        .uri(format!("{}{method}", host.address))
        .header("content-type", "application/json")
        .body(tonic::body::Body::new("{}".to_owned()))
        .expect("request");
    let answer = tower::ServiceExt::oneshot(&mut channel, request)
        .await
        .expect("an answer");
    assert_eq!(answer.status(), http::StatusCode::UNSUPPORTED_MEDIA_TYPE);

    // gRPC and grpc-web pass as before.
    let web = grpc_web_call(&host.address, None, "http://localhost:5173").await;
    assert!(web.contains("grpc-status:0"), "{web}");
    let mut workspaces = pb::workspace_service_client::WorkspaceServiceClient::new(channel);
    workspaces
        .list_workspaces(pb::ListWorkspacesRequest::default())
        .await
        .expect("gRPC");
}

/// Short answers go out at once. With Nagle's algorithm left on, each reply
/// waited for the client's delayed ACK, ~40 ms per call; 20 calls then take
/// over 800 ms, against a few ms each without it. The bound is generous.
#[tokio::test]
async fn short_answers_are_not_held_back_by_nagle() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("nagle").await.workspace_id;
    for _ in 0..10 {
        host.create_session(session_request(&workspace, &["sleep", "1000"]))
            .await;
    }
    host.list(&workspace).await;
    let start = std::time::Instant::now();
    for _ in 0..20 {
        host.list(&workspace).await;
    }
    let took = start.elapsed();
    assert!(
        took < Duration::from_millis(500),
        "20 ListSessions took {took:?}"
    );
}

/// Reads output until at least `bytes` arrived; returns how many did.
async fn receive_bytes(
    stream: &mut tonic::Streaming<pb::AttachSessionResponse>,
    bytes: usize,
) -> usize {
    let mut received = 0;
    while received < bytes {
        let message = next_message(stream, "output for the reading attacher (starved)")
            .await
            .expect("open");
        if let Some(pb::attach_session_response::Event::Output(output)) = message.event {
            received += output.data.len();
        }
    }
    received
}

/// Two sessions for the stalled-attacher tests: `yes` flooding, and `cat`.
async fn flood_and_echo(host: &mut HostService, workspace: &str) -> (pb::Session, pb::Session) {
    let flood = host
        .create_session(session_request(workspace, &["yes", "stalled flood"]))
        .await;
    let echo = host
        .create_session(session_request(workspace, &["cat"]))
        .await;
    (flood, echo)
}

/// An attach stream from the oldest byte held, on a connection of its own
/// (so that its flow control is its own, as another client's would be).
async fn attach_on_own_connection(
    host: &HostService,
    session_id: &str,
) -> tonic::Streaming<pb::AttachSessionResponse> {
    let channel = tonic::transport::Channel::from_shared(host.address.clone())
        .expect("uri")
        .connect()
        .await
        .expect("connect");
    holdfast_api::proto::host::v1::terminal_service_client::TerminalServiceClient::new(channel)
        .attach_session(pb::AttachSessionRequest {
            session_id: session_id.to_owned(),
            from_offset: None,
            ..Default::default()
        })
        .await
        .expect("attach")
        .into_inner()
}

/// A client that opens an attach stream on a flooding session and never
/// reads it holds up nobody for longer than the daemon's attacher patience
/// (1 s): another session echoes, another attacher of the same session
/// keeps receiving, lists answer, and neither service's memory grows with
/// the flood.
#[tokio::test]
async fn a_stalled_attacher_holds_nothing_up_for_long_and_memory_stays_bounded() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("stalled").await.workspace_id;
    let (flood, echo) = flood_and_echo(&mut host, &workspace).await;
    // Opened, then never read.
    let _stalled = attach_on_own_connection(&host, &flood.session_id).await;
    let mut reader = attach_on_own_connection(&host, &flood.session_id).await;
    let mut echo_stream = attach_on_own_connection(&host, &echo.session_id).await;

    let daemon = home.serving_daemon_pid().await.expect("daemon");
    let host_pid = host.child.id() as i32;
    // The baseline once the flood has filled the ring and every window:
    // after the reading attacher has had several MiB.
    let mut flood_bytes = receive_bytes(&mut reader, 4 << 20).await;
    let (daemon_before, host_before) = (rss_kib(daemon), rss_kib(host_pid));
    let started = std::time::Instant::now();
    let mut rounds = 0;
    while started.elapsed() < Duration::from_secs(3) {
        rounds += 1;
        let line = format!("round {rounds}\n");
        host.write_input(&echo.session_id, &line).await;
        receive_host_text(
            &mut echo_stream,
            &format!("round {rounds}\r\nround {rounds}"),
        )
        .await;
        let list = host.list(&workspace).await;
        assert_eq!(list.source, pb::Source::Complete as i32);
        assert_eq!(list.sessions.len(), 2);
        // The attacher that reads keeps receiving the flood.
        flood_bytes += receive_bytes(&mut reader, 64 * 1024).await;
    }
    assert!(rounds >= 3, "only {rounds} echo rounds in 3 s");
    // Scrollback is 1 MiB a session; a stalled reader must not make either
    // service buffer the flood (tens of MB went by meanwhile).
    let grown = |pid, before: u64| rss_kib(pid).saturating_sub(before);
    let (daemon_grew, host_grew) = (grown(daemon, daemon_before), grown(host_pid, host_before));
    assert!(
        daemon_grew < 16 * 1024,
        "daemon RSS grew {daemon_grew} KiB while {flood_bytes} bytes flowed"
    );
    assert!(
        host_grew < 16 * 1024,
        "host-service RSS grew {host_grew} KiB while {flood_bytes} bytes flowed"
    );
}

/// Attach streams share one connection to the daemon. Clients that stop
/// reading leave their streams' output unread in the host-service, and
/// that must not use up the connection's flow-control window: the output
/// of every other session still flows.
#[tokio::test]
async fn stalled_attachers_do_not_hold_up_other_sessions_output() {
    const STALLED: usize = 8;
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("stalled").await.workspace_id;
    let (flood, echo) = flood_and_echo(&mut host, &workspace).await;
    // Each opened on a connection of its own, then never read.
    let mut stalled = Vec::new();
    for _ in 0..STALLED {
        stalled.push(attach_on_own_connection(&host, &flood.session_id).await);
    }
    let mut echo_stream = attach_on_own_connection(&host, &echo.session_id).await;
    // Far more output than the stalled streams can take in, with every
    // window on the way full (MiBs each).
    host.list_until("the flood to pass 32 MiB", &workspace, |list| {
        list.sessions
            .iter()
            .any(|s| s.session_id == flood.session_id && s.output_offset > 32 << 20)
    })
    .await;
    host.write_input(&echo.session_id, "still flowing\n").await;
    receive_host_text(&mut echo_stream, "still flowing\r\nstill flowing").await;
    drop(stalled);
}

/// Every host RPC whose request starts with a string field, sent that
/// field as bytes that are not UTF-8: refused by the protobuf layer with
/// gRPC's code for an unparseable message (INTERNAL, as the gRPC status
/// code guide prescribes) naming the cause; nothing is created and the
/// service carries on.
#[tokio::test]
async fn invalid_utf8_in_a_string_field_is_refused_and_harmless() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let channel = tonic::transport::Channel::from_shared(host.address.clone())
        .expect("uri")
        .connect()
        .await
        .expect("connect");
    for method in [
        "WorkspaceService/CreateWorkspace",
        "WorkspaceService/CloseWorkspace",
        "TerminalService/CreateSession",
        "TerminalService/ListSessions",
        "TerminalService/CountBackgroundSessions",
        "TerminalService/AttachSession",
        "TerminalService/WriteInput",
        "TerminalService/ResizeSession",
        "TerminalService/DisposeSession",
    ] {
        let path = format!("/holdfast.host.v1.{method}");
        let status = send_invalid_utf8(channel.clone(), &path).await;
        assert_eq!(status.code(), Code::Internal, "{method}: {status:?}");
        assert!(status.message().contains("UTF-8"), "{method}: {status:?}");
        expect_reason(&status, Reason::MalformedMessage, &[]);
    }
    let workspaces = host
        .workspaces
        .list_workspaces(pb::ListWorkspacesRequest::default())
        .await
        .expect("still serving")
        .into_inner();
    assert!(workspaces.workspaces.is_empty());
}

/// Every RPC that takes an id, with every kind of bad id: the exact code
/// and a message naming the field; nothing huge is echoed back.
#[tokio::test]
async fn every_id_taking_rpc_refuses_every_kind_of_bad_id() {
    let home = HostHome::new();
    let host = home.start(&[]).await;
    let huge = "x".repeat(100_000);
    let unknown = uuid_like();
    // The same UUID spelt otherwise would never be found: refused, naming
    // the spelling to use.
    let lettered = "abcdef00-0000-4000-8000-0000000000ab";
    let upper = lettered.to_uppercase();
    let braced = format!("{{{unknown}}}");
    let cases: [(&str, Code, &str); 6] = [
        ("", Code::InvalidArgument, "is required"),
        ("../etc/passwd", Code::InvalidArgument, "is not a valid id"),
        (&huge, Code::InvalidArgument, "100000 bytes long"),
        (&upper, Code::InvalidArgument, lettered),
        (&braced, Code::InvalidArgument, &unknown),
        (&unknown, Code::NotFound, &unknown),
    ];
    for (id, code, needle) in cases {
        let (t, w) = (&mut host.terminals.clone(), &mut host.workspaces.clone());
        let id = id.to_owned();
        let by_session: [(&str, Result<(), tonic::Status>); 4] = [
            (
                "AttachSession",
                t.attach_session(pb::AttachSessionRequest {
                    session_id: id.clone(),
                    from_offset: None,
                    ..Default::default()
                })
                .await
                .map(drop),
            ),
            (
                "WriteInput",
                t.write_input(pb::WriteInputRequest {
                    session_id: id.clone(),
                    data: "x".into(),
                    ..Default::default()
                })
                .await
                .map(drop),
            ),
            (
                "ResizeSession",
                t.resize_session(pb::ResizeSessionRequest {
                    session_id: id.clone(),
                    cols: 80,
                    rows: 24,
                    ..Default::default()
                })
                .await
                .map(drop),
            ),
            (
                "DisposeSession",
                t.dispose_session(pb::DisposeSessionRequest {
                    session_id: id.clone(),
                    ..Default::default()
                })
                .await
                .map(drop),
            ),
        ];
        let by_workspace: [(&str, Result<(), tonic::Status>); 4] = [
            (
                "CloseWorkspace",
                w.close_workspace(pb::CloseWorkspaceRequest {
                    workspace_id: id.clone(),
                })
                .await
                .map(drop),
            ),
            (
                "CreateSession",
                t.create_session(session_request(&id, &["true"]))
                    .await
                    .map(drop),
            ),
            (
                "ListSessions",
                t.list_sessions(pb::ListSessionsRequest {
                    workspace_id: id.clone(),
                    ..Default::default()
                })
                .await
                .map(drop),
            ),
            (
                "CountBackgroundSessions",
                t.count_background_sessions(pb::CountBackgroundSessionsRequest {
                    workspace_id: id.clone(),
                    attached_session_ids: Vec::new(),
                    ..Default::default()
                })
                .await
                .map(drop),
            ),
        ];
        for (rpc, field, result) in by_session
            .into_iter()
            .map(|(rpc, r)| (rpc, "session_id", r))
            .chain(
                by_workspace
                    .into_iter()
                    .map(|(rpc, r)| (rpc, "workspace_id", r)),
            )
        {
            let status = result.expect_err(rpc);
            let label = format!("{rpc} with {:?}", &id[..id.len().min(20)]);
            assert_eq!(status.code(), code, "{label}: {status:?}");
            assert!(
                status.message().contains(needle),
                "{label}: {:.200}",
                status.message()
            );
            if code == Code::InvalidArgument {
                assert!(
                    status.message().contains(field),
                    "{label}: {:.200}",
                    status.message()
                );
            }
            assert!(status.message().len() < 300, "{label}: a long message");
        }
    }
}

/// A watch follows the output as an onlooker: the session is not counted
/// as attached while it is open, and its program is never held up for it.
/// Left unread while the program writes far more than the scrollback, the
/// watch is told what it missed, and the program runs to its exit
/// (with a patience of ten minutes, a stream that paces the program would
/// hold it that long).
#[tokio::test]
async fn a_watch_is_no_attachment_and_holds_nothing_up() {
    let home = HostHome::new();
    let mut host = home
        .start_with_env(&[], &[("HOLDFAST_ATTACHER_PATIENCE_MS", "600000")])
        .await;
    let workspace = host.create_workspace("watch").await.workspace_id;
    let session = host
        .create_session(session_request(
            &workspace,
            &[
                "sh",
                "-c",
                "read go; head -c 32000000 /dev/zero | tr '\\0' x; echo; echo done",
            ],
        ))
        .await;
    let id = session.session_id.clone();
    let mut watch = host
        .terminals
        .clone()
        .attach_session(pb::AttachSessionRequest {
            session_id: id.clone(),
            watch: true,
            ..Default::default()
        })
        .await
        .expect("a watch")
        .into_inner();
    host.write_input(&id, "go\n").await;
    assert!(watch.message().await.expect("stream").is_some());
    let listed = host.list(&workspace).await;
    let shown = listed
        .sessions
        .iter()
        .find(|s| s.session_id == id)
        .expect("listed while it writes");
    assert!(!shown.attached, "a watch is no attachment: {shown:?}");

    // Unread all the while, until the program has exited.
    host.list_until("the program to run to its exit", &workspace, |list| {
        !list.sessions.iter().any(|s| s.session_id == id)
    })
    .await;
    let (mut truncated, mut exited) = (false, None);
    while let Some(message) = tokio::time::timeout(PATIENCE, watch.message())
        .await
        .expect("the watch goes on")
        .expect("stream")
    {
        match message.event {
            Some(pb::attach_session_response::Event::Truncated(_)) => truncated = true,
            Some(pb::attach_session_response::Event::Exited(exit)) => exited = Some(exit),
            _ => {}
        }
    }
    assert!(truncated, "told what it missed");
    assert_eq!(exited.expect("the exit").exit_code, Some(0));
}

/// A disposal may name its first signal and grace period, as `docker stop
/// -t` does: a program that shuts down cleanly on SIGTERM, taking a few
/// seconds, is given them, and the reaper (here every second) leaves a
/// disposal under way to the daemon instead of cutting its grace short.
/// A second disposal sends its own signal: SIGKILL ends a slow one at once.
#[tokio::test]
async fn a_disposal_can_give_a_signal_and_time_to_shut_down() {
    let home = HostHome::new();
    let mut host = home.start(&["--reap-interval-secs", "1"]).await;
    let workspace = host.create_workspace("graceful").await.workspace_id;
    let client = holdfast_plumbing::daemon_client::connect(&home.socket(), Duration::from_secs(5))
        .await
        .expect("daemon");
    let script = "trap 'sleep 3; exit 42' TERM; echo ready; while :; do sleep 0.05; done";
    let [clean, stubborn] = host
        .create_sessions(&workspace, [&["sh", "-c", script], &["sh", "-c", script]])
        .await;
    for session in [&clean, &stubborn] {
        let mut output = host.attach(&session.session_id, None).await;
        receive_host_text(&mut output, "ready").await;
    }
    let terminals = host.terminals.clone();
    let dispose = |session: &pb::Session, signal: pb::Signal, grace_ms: Option<u32>| {
        let mut terminals = terminals.clone();
        let request = pb::DisposeSessionRequest {
            session_id: session.session_id.clone(),
            signal: signal.into(),
            grace_ms,
        };
        async move { terminals.dispose_session(request).await.map(drop) }
    };

    let said = terminals
        .clone()
        .dispose_session(pb::DisposeSessionRequest {
            session_id: clean.session_id.clone(),
            signal: pb::Signal::Term.into(),
            grace_ms: Some(10_000),
        })
        .await
        .expect("dispose with SIGTERM")
        .into_inner();
    assert_eq!(
        (said.signal, said.grace_ms),
        (pb::Signal::Term as i32, 10_000),
        "it says what it sent"
    );
    dispose(&stubborn, pb::Signal::Term, Some(10_000))
        .await
        .expect("dispose with SIGTERM");
    dispose(&stubborn, pb::Signal::Kill, None)
        .await
        .expect("then with SIGKILL");
    let killed = exited(&client, &stubborn.session_id).await;
    assert_eq!(killed.signal, Some(9), "{killed:?}");
    let ended = exited(&client, &clean.session_id).await;
    assert_eq!(
        (ended.exit_code, ended.signal),
        (Some(42), None),
        "its clean shutdown ran to its end: {ended:?}"
    );

    let untouched = host
        .create_session(session_request(&workspace, &["sleep", "1000"]))
        .await;
    let refused = dispose(&untouched, pb::Signal::Term, Some(600_001)).await;
    expect_status(
        refused,
        Code::InvalidArgument,
        "grace_ms is 600001; the limit is 600000",
    );
    let refused = terminals
        .clone()
        .dispose_session(pb::DisposeSessionRequest {
            session_id: untouched.session_id.clone(),
            signal: 10,
            grace_ms: None,
        })
        .await
        .map(drop);
    expect_status(
        refused,
        Code::InvalidArgument,
        "signal 10 is not one a disposal sends",
    );
    assert!(
        host.list(&workspace)
            .await
            .sessions
            .iter()
            .any(|s| s.session_id == untouched.session_id),
        "a refused disposal stamps nothing"
    );
}

/// How a session running `script` ends once its row is set, behind the
/// host-service's back, by `stamp` (an UPDATE whose `?`s are the
/// disposal's deadline, in microseconds, and the session's id), with the
/// reaper coming by every second: its exit code and signal.
async fn ended_by_the_reaper(
    script: &str,
    stamp: &str,
    deadline: i64,
) -> (Option<i32>, Option<i32>) {
    use diesel::RunQueryDsl;
    let home = HostHome::sqlite();
    let mut host = home.start(&["--reap-interval-secs", "1"]).await;
    let workspace = host.create_workspace("reaped").await.workspace_id;
    let session = host
        .create_session(session_request(&workspace, &["sh", "-c", script]))
        .await;
    let mut output = host.attach(&session.session_id, None).await;
    receive_host_text(&mut output, "ready").await;
    diesel::sql_query(stamp)
        .bind::<diesel::sql_types::BigInt, _>(deadline)
        .bind::<diesel::sql_types::Text, _>(&session.session_id)
        .execute(&mut home.open_database())
        .expect("stamp the row");
    let client = holdfast_plumbing::daemon_client::connect(&home.socket(), Duration::from_secs(5))
        .await
        .expect("daemon");
    let ended = exited(&client, &session.session_id).await;
    (ended.exit_code, ended.signal)
}

/// A disposal the daemon never took (its kill failed, or the host-service
/// died between the stamp and the kill) is ended by the reaper as it
/// asked: here with SIGTERM, on which this program shuts down cleanly.
#[tokio::test]
async fn the_reaper_ends_a_disposal_as_it_asked() {
    // Stamped, with its grace over.
    let ended = ended_by_the_reaper(
        "trap 'exit 42' TERM; echo ready; while :; do sleep 0.05; done",
        "UPDATE terminal_sessions SET dispose_requested_at = 1, dispose_signal = 15, \
         dispose_grace_ms = 10000, dispose_deadline = ? WHERE id = ?",
        1,
    )
    .await;
    assert_eq!(ended, (Some(42), None));
}

/// A session stamped after a reaper pass read the rows (created and
/// disposed meanwhile) is ended as its disposal asked, in its own time,
/// not at once with the default signal: here a program that ignores
/// SIGHUP and shuts down cleanly on SIGTERM. (Before, the pass sent SIGHUP
/// and, a second later, SIGKILL.)
#[tokio::test]
async fn the_reaper_keeps_to_a_disposal_made_after_it_read_the_rows() {
    // Out of every pass's rows (as one made after the pass read them),
    // stamped, its grace running for 3 s more.
    let deadline = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        + Duration::from_secs(3);
    let ended = ended_by_the_reaper(
        "trap '' HUP; trap 'exit 42' TERM; echo ready; while :; do sleep 0.05; done",
        "UPDATE terminal_sessions SET status = 'disposed', dispose_requested_at = 1, \
         dispose_signal = 15, dispose_grace_ms = 10000, dispose_deadline = ? WHERE id = ?",
        i64::try_from(deadline.as_micros()).expect("micros"),
    )
    .await;
    assert_eq!(ended, (Some(42), None));
}

/// `GetSession` describes one session, running or ended, hidden or not:
/// what a list shows of it, what it was started with, and its end; a
/// disposed or unknown session is NOT_FOUND, a bad id INVALID_ARGUMENT.
#[tokio::test]
async fn get_session_describes_a_session_running_or_ended() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("get").await.workspace_id;
    let mut running = session_request(&workspace, &["sh", "-c", "read x; exit 3"]);
    running.cwd = "/tmp".into();
    running.title = Some("reader".into());
    let running = host.create_session(running).await;
    let mut hidden = session_request(&workspace, &["sleep", "1000"]);
    hidden.listed = Some(false);
    let hidden = host.create_session(hidden).await;
    let terminals = host.terminals.clone();
    let get = |id: &str| {
        let mut terminals = terminals.clone();
        let request = pb::GetSessionRequest {
            session_id: id.to_owned(),
        };
        async move {
            terminals
                .get_session(request)
                .await
                .map(|answer| answer.into_inner().session.expect("a session"))
        }
    };

    let listed = host.list(&workspace).await;
    let shown = get(&running.session_id).await.expect("get a running one");
    let in_list = listed
        .sessions
        .iter()
        .find(|s| s.session_id == running.session_id)
        .expect("listed");
    assert_eq!(
        pb::Session {
            argv: Vec::new(),
            cwd: String::new(),
            output_offset: in_list.output_offset,
            ..shown.clone()
        },
        *in_list,
        "what a list shows of it"
    );
    assert_eq!(shown.argv, ["sh", "-c", "read x; exit 3"]);
    assert_eq!((shown.cwd.as_str(), shown.ended_at), ("/tmp", None));
    let hidden_shown = get(&hidden.session_id).await.expect("get a hidden one");
    assert!(hidden_shown.alive && hidden_shown.pid == hidden.pid);

    host.write_input(&running.session_id, "x\n").await;
    let ended = eventually("the exit to show", || {
        let shown = get(&running.session_id);
        async move { shown.await.ok().filter(|s| !s.alive) }
    })
    .await;
    assert_eq!((ended.exit_code, ended.signal), (Some(3), None));
    assert!(ended.ended_at.is_some(), "{ended:?}");

    terminals
        .clone()
        .dispose_session(pb::DisposeSessionRequest {
            session_id: hidden.session_id.clone(),
            ..Default::default()
        })
        .await
        .expect("dispose");
    expect_status(get(&hidden.session_id).await, Code::NotFound, "disposed");
    expect_status(get(&uuid_like()).await, Code::NotFound, "");
    expect_status(get("nope").await, Code::InvalidArgument, "not a valid id");
}

/// Once the daemon has forgotten an ended session (past its exit
/// retention), `GetSession` still tells its end, from the row.
#[tokio::test]
async fn get_session_tells_the_end_the_daemon_forgot() {
    let home = HostHome::new();
    let mut host = home
        .start_with_env(&[], &[("HOLDFAST_EXIT_RETENTION_SECS", "3")])
        .await;
    let workspace = host.create_workspace("forgotten").await.workspace_id;
    let session = host
        .create_session(session_request(&workspace, &["sh", "-c", "exit 3"]))
        .await;
    let terminals = host.terminals.clone();
    let get = || {
        let request = pb::GetSessionRequest {
            session_id: session.session_id.clone(),
        };
        let mut terminals = terminals.clone();
        async move {
            terminals
                .get_session(request)
                .await
                .ok()?
                .into_inner()
                .session
        }
    };
    // Ended, and still known to the daemon.
    let ended = eventually("the exit", || async {
        get().await.filter(|shown| !shown.alive && shown.pid != 0)
    })
    .await;
    let forgotten = eventually("the daemon to forget it", || {
        let request = pb::GetSessionRequest {
            session_id: session.session_id.clone(),
        };
        let mut terminals = terminals.clone();
        async move {
            let shown = terminals
                .get_session(request)
                .await
                .ok()?
                .into_inner()
                .session?;
            (shown.pid == 0).then_some(shown)
        }
    })
    .await;
    assert_eq!(
        (forgotten.alive, forgotten.exit_code, forgotten.argv.len()),
        (false, Some(3), 3),
        "{forgotten:?}"
    );
    assert!(forgotten.ended_at.is_some(), "{forgotten:?}");
    assert_eq!(
        forgotten.ended_at, ended.ended_at,
        "the same end, before and after"
    );
}

/// A session follows its clients' sizes as tmux's `window-size latest`
/// does: typing in a client gives the session its size, and when the
/// client whose size it has detaches, it takes the size of the client
/// active last (resized or typed) among those still attached, be it the
/// one that started it.
#[tokio::test]
async fn a_session_goes_back_to_the_size_of_a_client_still_attached() {
    use pb::start_session_response::Event;
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("sizes").await.workspace_id;

    // Started at 120x40 by its first client.
    let mut start = session_request(&workspace, &["sleep", "1000"]);
    (start.cols, start.rows) = (120, 40);
    let started = host
        .terminals
        .start_session(pb::StartSessionRequest {
            create: Some(start),
        })
        .await
        .expect("start");
    let start_token = attachment_of(&started);
    assert!(!start_token.is_empty(), "a token to resize with");
    let mut started = started.into_inner();
    let Some(Event::Started(session)) = started
        .message()
        .await
        .expect("started")
        .and_then(|m| m.event)
    else {
        panic!("the stream begins with the session");
    };
    let id = session.session_id.as_str();

    let (desk, desk_stream) = host.attach_client(id).await;
    host.resize_as(id, &desk, (200, 50)).await;
    let (phone, phone_stream) = host.attach_client(id).await;
    host.resize_as(id, &phone, (60, 20)).await;
    host.size_until(&workspace, id, (60, 20)).await;

    // Typing is activity: the session takes the typing client's size.
    host.terminals
        .write_input(pb::WriteInputRequest {
            session_id: id.to_owned(),
            data: "x".into(),
            attachment: desk.clone(),
        })
        .await
        .expect("the desk types");
    host.size_until(&workspace, id, (200, 50)).await;
    let mut typed = send_input(
        &host,
        pb::SendInputRequest {
            session_id: id.to_owned(),
            data: "y".into(),
            attachment: phone.clone(),
        },
    )
    .await
    .expect("the phone types");
    host.size_until(&workspace, id, (60, 20)).await;
    host.terminals
        .write_input(pb::WriteInputRequest {
            session_id: id.to_owned(),
            data: "x".into(),
            attachment: start_token.clone(),
        })
        .await
        .expect("the starting client types");
    host.size_until(&workspace, id, (120, 40)).await;
    // The stream's later messages are the same client's.
    typed
        .send(keys("", b"z"))
        .await
        .expect("more from the phone");
    host.size_until(&workspace, id, (60, 20)).await;
    drop(typed);

    // The starting client typed after the desk did: its size comes back.
    drop(phone_stream);
    host.size_until(&workspace, id, (120, 40)).await;
    drop(desk_stream);

    // Onlookers are no clients with a size.
    for (watch, until_now) in [(true, false), (false, true)] {
        let look = host
            .terminals
            .attach_session(pb::AttachSessionRequest {
                session_id: id.to_owned(),
                watch,
                until_now,
                ..Default::default()
            })
            .await
            .expect("look");
        assert_eq!(
            attachment_of(&look),
            "",
            "watch {watch}, until_now {until_now}"
        );
    }

    // A token that is no number is refused; one no longer open is no
    // reason to refuse a resize.
    let refused = expect_status(
        host.terminals
            .resize_session(pb::ResizeSessionRequest {
                session_id: id.to_owned(),
                cols: 80,
                rows: 24,
                attachment: "desk".into(),
                ..Default::default()
            })
            .await,
        Code::InvalidArgument,
        "holdfast-attachment",
    );
    expect_field(&refused, "attachment");
    host.resize_as(id, &phone, (81, 25)).await;
    host.size_until(&workspace, id, (81, 25)).await;
    drop(started);
}

/// `RenameSession` gives a session a new name, as tmux's rename-session
/// does: lists and `GetSession` show it at once, and after a restart (it
/// is kept in the session's row). While the program has set no title of
/// its own the title follows the name; a title the program set stays.
/// Bad names and sessions that cannot be renamed are refused.
#[tokio::test]
async fn rename_session_renames_and_refuses_what_it_cannot() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("rename").await.workspace_id;
    let mut request = session_request(&workspace, &["cat"]);
    request.title = Some("first".into());
    let session = host.create_session(request).await;
    let id = session.session_id.clone();
    let rename = |name: &str| pb::RenameSessionRequest {
        session_id: id.clone(),
        name: name.into(),
    };
    let named = |session: &pb::Session| (session.name.clone(), session.title.clone());

    let renamed = host
        .terminals
        .rename_session(rename("second"))
        .await
        .expect("rename")
        .into_inner()
        .session
        .expect("a session");
    assert_eq!(named(&renamed), ("second".into(), "second".into()));
    assert!(renamed.alive && renamed.pid == session.pid, "{renamed:?}");
    let list = host
        .list_until("the new name", &workspace, |list| {
            list.sessions.first().is_some_and(|s| s.name == "second")
        })
        .await;
    assert_eq!(named(&list.sessions[0]), ("second".into(), "second".into()));

    // The program's own title stays through a rename.
    host.write_input(&id, "\x1b]2;vi main.rs\x07\n").await;
    host.list_until("the program's title", &workspace, |list| {
        list.sessions
            .first()
            .is_some_and(|s| s.title == "vi main.rs")
    })
    .await;
    host.terminals
        .rename_session(rename("third"))
        .await
        .expect("rename again");
    assert_eq!(
        named(&host.get_session(&id).await),
        ("third".into(), "vi main.rs".into())
    );

    // Kept in its row: the restarted host-service lists it so.
    host.stop(rustix::process::Signal::TERM);
    let mut host = home.start(&[]).await;
    let list = host.list(&workspace).await;
    assert_eq!(
        named(&list.sessions[0]),
        ("third".into(), "vi main.rs".into())
    );

    let mut terminals = host.terminals.clone();
    for (name, needle) in [
        ("", "name is required"),
        ("a\u{1b}b", "control characters"),
        (&"x".repeat(201)[..], "more than 200 characters"),
    ] {
        let refused = expect_status(
            terminals.rename_session(rename(name)).await,
            Code::InvalidArgument,
            needle,
        );
        expect_field(&refused, "name");
    }
    let unknown = uuid::Uuid::new_v4().to_string();
    expect_status(
        terminals
            .rename_session(pb::RenameSessionRequest {
                session_id: unknown,
                name: "x".into(),
            })
            .await,
        Code::NotFound,
        "no session with id",
    );
    host.dispose(&id).await;
    expect_status(
        terminals.rename_session(rename("fourth")).await,
        Code::NotFound,
        "disposed",
    );
}

/// Every attach stream that follows a session says where its live output
/// begins (`holdfast-live-offset`): the output written before it opened is
/// history, whose terminal queries a client must not answer again (see
/// the CLI's `stale_queries`). A `StartSession` stream is live from its
/// first byte.
#[tokio::test]
async fn attach_streams_say_where_their_live_output_begins() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("live").await.workspace_id;
    let session = host
        .create_session(session_request(
            &workspace,
            &["sh", "-c", "printf hello; exec sleep 600"],
        ))
        .await;
    let mut first = host.attach(&session.session_id, None).await;
    receive_host_text(&mut first, "hello").await;
    let mut terminals = host.terminals.clone();
    for watch in [false, true] {
        let answer = terminals
            .attach_session(pb::AttachSessionRequest {
                session_id: session.session_id.clone(),
                watch,
                ..Default::default()
            })
            .await
            .expect("attach");
        assert_eq!(
            holdfast_api::proto::live_offset(answer.metadata()),
            Some(5),
            "watch: {watch}"
        );
    }
    let started = terminals
        .start_session(pb::StartSessionRequest {
            create: Some(session_request(&workspace, &["true"])),
        })
        .await
        .expect("start");
    assert_eq!(
        holdfast_api::proto::live_offset(started.metadata()),
        Some(0)
    );
}
