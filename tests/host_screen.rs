//! `GetScreen` and `holdfast screen` against tmux as the oracle: the same
//! program, at the same size, in a holdfast session and in a tmux pane;
//! the screen holdfast draws must be the text `tmux capture-pane -p` shows.

mod support;

use std::path::Path;
use std::process::Command;

use holdfast_api::proto::host::v1 as pb;
use support::host::*;
use support::tmux::{Tmux, tmux, trimmed};
use support::*;

const COLS: u32 = 80;
const ROWS: u32 = 24;

/// Runs `argv` in holdfast and in tmux, and waits until holdfast's screen
/// is what tmux shows (both settle as the program draws).
async fn same_screen_as_tmux(
    host: &mut HostService,
    workspace: &str,
    tmux: &Path,
    argv: &[&str],
) -> (pb::GetScreenResponse, Vec<String>) {
    let mut request = session_request(workspace, argv);
    (request.cols, request.rows) = (COLS, ROWS);
    let session = host.create_session(request).await;
    let oracle = Tmux::start(tmux, (COLS, ROWS), &[], argv);
    let terminals = host.terminals.clone();
    eventually("holdfast's screen to be tmux's", || {
        let mut terminals = terminals.clone();
        let request = pb::GetScreenRequest {
            session_id: session.session_id.clone(),
            ..Default::default()
        };
        let oracle = &oracle;
        async move {
            let screen = terminals.get_screen(request).await.ok()?.into_inner();
            let shown = oracle.capture();
            (!shown.is_empty() && trimmed(screen.lines.clone()) == shown).then_some((screen, shown))
        }
    })
    .await
}

#[tokio::test]
async fn the_screen_is_what_tmux_shows() {
    let Some(tmux) = tmux() else { return };
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("screens").await.workspace_id;

    // Text placed by cursor moves, attributes, a cleared line.
    let script = "printf '\\033[2J\\033[3;5Hhello\\033[10;1Hworld \\033[1mbold\\033[0m\\033[12;1Hgone\\033[12;1H\\033[K\\033[7;40Hend'; sleep 600";
    let (screen, shown) =
        same_screen_as_tmux(&mut host, &workspace, &tmux, &["sh", "-c", script]).await;
    assert_eq!(shown[2], "    hello");
    assert!(screen.complete && !screen.alternate_screen);
    assert_eq!((screen.cols, screen.rows), (COLS, ROWS));

    // A full-screen program: less on a long file, in the alternate screen.
    let file = home.dir.path().join("long.txt");
    let text: String = (1..=200)
        .map(|n| format!("line {n} of the file\n"))
        .collect();
    std::fs::write(&file, text).expect("write the file");
    let file = file.to_str().expect("utf-8");
    let less = ["env", "TERM=xterm-256color", "LESSHISTFILE=-", "less", file];
    let (screen, shown) = same_screen_as_tmux(&mut host, &workspace, &tmux, &less).await;
    assert!(
        screen.alternate_screen,
        "less draws in the alternate screen"
    );
    assert_eq!(shown[0], "line 1 of the file");

    // `holdfast screen` prints that text; `--ansi` draws it.
    let session = host.list(&workspace).await.sessions.pop().expect("less");
    let printed = Command::new(binary("holdfast"))
        .args(["--addr", &host.address, "screen", &session.session_id])
        .output()
        .expect("run holdfast");
    let printed = stdout_of(&printed);
    assert_eq!(printed.lines().collect::<Vec<_>>(), shown);
    let drawn = Command::new(binary("holdfast"))
        .args([
            "--addr",
            &host.address,
            "screen",
            "--ansi",
            &session.session_id,
        ])
        .output()
        .expect("run holdfast");
    assert!(drawn.status.success());
    assert!(drawn.stdout.starts_with(b"\x1b["), "escape sequences");
}

#[tokio::test]
async fn a_screen_of_a_missing_session_is_refused() {
    let home = HostHome::new();
    let host = home.start(&[]).await;
    let refused = host
        .terminals
        .clone()
        .get_screen(pb::GetScreenRequest {
            session_id: uuid::Uuid::new_v4().to_string(),
            ..Default::default()
        })
        .await;
    expect_status(refused, tonic::Code::NotFound, "session");
    let refused = host
        .terminals
        .clone()
        .get_screen(pb::GetScreenRequest {
            session_id: "no".into(),
            ..Default::default()
        })
        .await;
    expect_status(refused, tonic::Code::InvalidArgument, "session_id");
}

/// Opens an attach stream as `request` says.
async fn attach_with(
    host: &HostService,
    request: pb::AttachSessionRequest,
) -> Result<(String, tonic::Streaming<pb::AttachSessionResponse>), tonic::Status> {
    let answer = host.terminals.clone().attach_session(request).await?;
    Ok((attachment_of(&answer), answer.into_inner()))
}

/// The next event of `stream`, which must come.
async fn next_event(
    stream: &mut tonic::Streaming<pb::AttachSessionResponse>,
) -> pb::attach_session_response::Event {
    next_message(stream, "an attach event")
        .await
        .expect("an event before the stream ends")
        .event
        .expect("every event has a body")
}

/// A full-screen program whose output outgrew the ring: an attach that
/// starts with the screen gets it whole (on the alternate screen, where
/// the program left it, though the switch to it was let go), then output
/// from exactly the byte after it. A session whose replay draws its screen
/// right is replayed when the client lets the daemon choose.
#[tokio::test]
async fn an_attach_can_start_with_the_screen_and_go_on_from_its_end() {
    let home = HostHome::new();
    let mut host = home
        .start_with_env(&[], &[("HOLDFAST_SCROLLBACK_BYTES", "65536")])
        .await;
    let workspace = host.create_workspace("screen-first").await.workspace_id;
    // 170 KB of frames in the alternate screen, then a last one.
    let script = "printf '\\033[?1049h\\033[?25l'; seq 1 30000; printf '\\033[2J\\033[Hlast frame'; \
                  read x; printf '\\r\\nafter %s' \"$x\"; sleep 600";
    let session = host
        .create_session(session_request(&workspace, &["sh", "-c", script]))
        .await;
    let id = session.session_id.as_str();
    let screen = host
        .screen_until("the last frame", id, |screen| {
            screen.lines[0] == "last frame"
        })
        .await;
    assert!(screen.alternate_screen && !screen.cursor_visible && !screen.complete);

    for start in [pb::AttachStart::Auto, pb::AttachStart::Screen] {
        let request = pb::AttachSessionRequest {
            session_id: id.to_owned(),
            start: start.into(),
            ..Default::default()
        };
        let (_, mut stream) = attach_with(&host, request).await.expect("attach");
        let pb::attach_session_response::Event::Screen(drawn) = next_event(&mut stream).await
        else {
            panic!("{start:?}: the screen comes first");
        };
        assert_eq!(drawn.lines, screen.lines, "{start:?}");
        assert_eq!(drawn.output_offset, screen.output_offset);
        assert!(
            drawn.rendering.starts_with(b"\x1b[?1049h"),
            "drawn on the alternate screen"
        );
        if start == pb::AttachStart::Auto {
            continue;
        }
        host.write_input(id, "go\n").await;
        let mut text = Vec::new();
        let mut next = drawn.output_offset;
        while !String::from_utf8_lossy(&text).contains("after go") {
            match next_event(&mut stream).await {
                pb::attach_session_response::Event::Output(output) => {
                    assert_eq!(output.offset, next, "no gap, no byte twice");
                    next += output.data.len() as u64;
                    text.extend_from_slice(&output.data);
                }
                pb::attach_session_response::Event::Title(_) => {}
                other => panic!("unexpected {other:?}"),
            }
        }
        assert!(!String::from_utf8_lossy(&text).contains("last frame"));
    }

    // All its output held and on the normal screen: a replay draws it.
    let plain = host
        .create_session(session_request(
            &workspace,
            &["sh", "-c", "echo plain; sleep 600"],
        ))
        .await;
    let mut stream = host.attach(&plain.session_id, None).await;
    receive_host_text(&mut stream, "plain").await;
    let request = pb::AttachSessionRequest {
        session_id: plain.session_id.clone(),
        start: pb::AttachStart::Auto.into(),
        ..Default::default()
    };
    let (_, mut stream) = attach_with(&host, request).await.expect("attach");
    let first = next_event(&mut stream).await;
    assert!(
        matches!(&first, pb::attach_session_response::Event::Output(output) if output.offset == 0),
        "replayed from the first byte: {first:?}"
    );

    // A screen with an offset or a look is refused, as is a start unknown.
    let refusals = [
        (
            Some(0),
            false,
            pb::AttachStart::Screen as i32,
            "from_offset",
        ),
        (None, true, pb::AttachStart::Auto as i32, "until_now"),
        (None, false, 9, "start"),
    ];
    for (from_offset, until_now, start, field) in refusals {
        let request = pb::AttachSessionRequest {
            session_id: plain.session_id.clone(),
            from_offset,
            until_now,
            start,
            ..Default::default()
        };
        let refused = attach_with(&host, request).await.map(drop);
        let status = expect_status(refused, tonic::Code::InvalidArgument, field);
        assert_eq!(error_details::field_of(&status).as_deref(), Some(field));
    }
}

/// A read-only client sees the output, but its token types nothing and
/// sizes nothing: refused with a reason, however it is sent.
#[tokio::test]
async fn a_read_only_attach_cannot_type_or_resize() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("read-only").await.workspace_id;
    let session = host
        .create_session(session_request(&workspace, &["cat"]))
        .await;
    let id = session.session_id.as_str();
    let (writer, _writing) = host.attach_client(id).await;
    host.resize_as(id, &writer, (100, 30)).await;
    let request = pb::AttachSessionRequest {
        session_id: id.to_owned(),
        read_only: true,
        ..Default::default()
    };
    let (looker, mut looking) = attach_with(&host, request).await.expect("attach");
    assert!(!looker.is_empty(), "a read-only stream is named too");

    let mut terminals = host.terminals.clone();
    let write = terminals
        .write_input(pb::WriteInputRequest {
            session_id: id.to_owned(),
            data: "typed\n".into(),
            attachment: looker.clone(),
        })
        .await;
    let status = expect_status(write, tonic::Code::PermissionDenied, "read-only");
    assert_eq!(
        error_details::reason_of(&status)
            .map(|(reason, _)| reason)
            .as_deref(),
        Some(Reason::AttachmentReadOnly.as_str_name())
    );
    let resize = terminals
        .resize_session(pb::ResizeSessionRequest {
            session_id: id.to_owned(),
            cols: 40,
            rows: 10,
            attachment: looker.clone(),
            ..Default::default()
        })
        .await;
    expect_status(resize, tonic::Code::PermissionDenied, "read-only");
    let first = pb::SendInputRequest {
        session_id: id.to_owned(),
        data: "streamed\n".into(),
        attachment: looker.clone(),
    };
    let sent = async {
        let mut answers = terminals
            .send_input(futures_util::stream::iter([first]))
            .await?
            .into_inner();
        answers.message().await
    };
    expect_status(sent.await, tonic::Code::PermissionDenied, "read-only");

    // It sees what others type; the session kept the writer's size.
    host.write_input(id, "from the writer\n").await;
    let seen = receive_host_text(&mut looking, "from the writer").await;
    assert!(
        !seen.contains("typed") && !seen.contains("streamed"),
        "{seen:?}"
    );
    assert_eq!(
        (
            host.get_session(id).await.cols,
            host.get_session(id).await.rows
        ),
        (100, 30)
    );
}

/// Lines that scrolled off the top are there to ask for, through the API
/// and `holdfast screen -S`.
#[tokio::test]
async fn the_lines_scrolled_off_are_there_to_ask_for() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("scrolled").await.workspace_id;
    let mut request = session_request(&workspace, &["sh", "-c", "seq 1 100; sleep 600"]);
    (request.cols, request.rows) = (COLS, ROWS);
    let session = host.create_session(request).await;
    let mut stream = host.attach(&session.session_id, None).await;
    receive_host_text(&mut stream, "100").await;
    let printed = Command::new(binary("holdfast"))
        .args([
            "--addr",
            &host.address,
            "screen",
            "-S",
            "3",
            &session.session_id,
        ])
        .output()
        .expect("run holdfast");
    let printed = stdout_of(&printed);
    let lines: Vec<&str> = printed.lines().collect();
    // 100 lines and the cursor's on a screen of 24: 77 scrolled off.
    assert_eq!(lines[..4], ["75", "76", "77", "78"]);
    assert_eq!(lines.last(), Some(&"100"));
}
