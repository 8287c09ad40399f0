//! `holdfast send` with key names and input of any size, `attach` with
//! input from a file, tables aligned by display width, and errors that
//! name a few sessions, not hundreds: the real CLI against the real
//! host-service.

#[path = "../../tests/support/mod.rs"]
mod support;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use support::host::*;
use support::*;

/// Runs `holdfast args` with `input` as its stdin; waits for it within the
/// tests' patience.
fn holdfast_fed(address: &str, args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(binary("holdfast"))
        .arg("--addr")
        .arg(address)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run holdfast");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    let feeding = std::thread::spawn(move || stdin.write_all(&input));
    let status = wait_with_deadline(&mut child);
    feeding.join().expect("feeding").expect("write the input");
    let read = |pipe: Option<std::process::ChildStdout>| {
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut pipe.expect("pipe"), &mut text).expect("read");
        text
    };
    let stdout = read(child.stdout.take());
    let mut stderr = Vec::new();
    std::io::Read::read_to_end(&mut child.stderr.take().expect("stderr"), &mut stderr)
        .expect("read");
    Output {
        status,
        stdout,
        stderr,
    }
}

/// Key names are keys (Enter, C-c), other words their text, `-l` all
/// text; `-` sends this command's input whole, past what the daemon holds
/// at once.
#[tokio::test]
async fn send_takes_key_names_and_input_of_any_size() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("send").await.workspace_id;
    let shell = host
        .create_session(session_request(&workspace, &["sh"]))
        .await;
    let id = shell.session_id.as_str();
    let mut output = host.attach(id, None).await;
    let sent = holdfast(
        &host.address,
        &["send", id, "sleep 600; echo after-$((6*7))", "Enter"],
    );
    assert!(sent.status.success(), "{sent:?}");
    // Interrupted, the shell goes on to its next line.
    let sent = holdfast(&host.address, &["send", id, "C-c"]);
    assert!(sent.status.success(), "{sent:?}");
    let sent = holdfast(
        &host.address,
        &["send", id, "echo", "Space", "typed-$((1+1))", "Enter"],
    );
    assert!(sent.status.success(), "{sent:?}");
    let shown = receive_host_text(&mut output, "typed-2").await;
    assert!(
        !shown.contains("after-42"),
        "C-c interrupted the sleep: {shown:?}"
    );
    let sent = holdfast(&host.address, &["send", "-l", id, "echo C-c", "Enter"]);
    assert!(sent.status.success(), "{sent:?}");
    receive_host_text(&mut output, "C-cEnter").await;

    // 3 MB from stdin: three times what the daemon holds for a program.
    let counter = host
        .create_session(session_request(
            &workspace,
            &["sh", "-c", "stty raw -echo; head -c 3000000 | wc -c"],
        ))
        .await;
    let mut counted = host.attach(&counter.session_id, None).await;
    let data = vec![b'x'; 3_000_000];
    let sent = holdfast_fed(&host.address, &["send", &counter.session_id, "-"], &data);
    assert!(sent.status.success(), "{sent:?}");
    receive_host_text(&mut counted, "3000000").await;
}

/// `attach ID < file` sends the file, shows what it caused, and detaches
/// once the session is quiet: the session keeps running.
#[tokio::test]
async fn attach_with_input_from_a_file_ends_when_it_is_done() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("fed").await.workspace_id;
    let shell = host
        .create_session(session_request(&workspace, &["sh"]))
        .await;
    let id = shell.session_id.as_str();
    let attached = holdfast_fed(
        &host.address,
        &["attach", id],
        b"echo from-the-$((2+3))-file\n",
    );
    assert!(attached.status.success(), "{attached:?}");
    let shown = String::from_utf8_lossy(&attached.stdout);
    assert!(shown.contains("from-the-5-file"), "{shown:?}");
    assert!(host.get_session(id).await.alive, "detached, not ended");
}

/// Columns line up however wide a name's characters are on a terminal.
#[tokio::test]
async fn ls_aligns_columns_by_display_width() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("wide").await.workspace_id;
    for name in ["🚀 构建 ビルド", "plain"] {
        let mut request = session_request(&workspace, &["sleep", "600"]);
        request.title = Some(name.to_owned());
        host.create_session(request).await;
    }
    let listed = stdout_of(&holdfast(&host.address, &["ls", "--workspace", "wide"]));
    let column = |line: &str, needle: &str| {
        let at = line.find(needle).expect("the column");
        unicode_width::UnicodeWidthStr::width(&line[..at])
    };
    let lines: Vec<&str> = listed.lines().collect();
    let attached_at = column(lines[0], "ATTACHED");
    for line in &lines[1..] {
        assert_eq!(column(line, " no ") + 1, attached_at, "{listed}");
    }
}

/// An error about many sessions names a few and says how to list them.
#[tokio::test]
async fn an_error_about_many_sessions_names_a_few() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("many").await.workspace_id;
    for _ in 0..12 {
        host.create_session(session_request(&workspace, &["sleep", "600"]))
            .await;
    }
    let refused = holdfast(&host.address, &["attach"]);
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("there are 12 live sessions")
            && said.contains("and 7 more (`holdfast ls` lists them all)"),
        "{said}"
    );
    assert!(said.len() < 1000, "one short line: {said}");
}

/// A session that ends at once is still found by its name (the most
/// recent of that name) and listed with `ls --ended`; `new` says when its
/// program failed at once, with its last output, and exits as it did.
#[tokio::test]
async fn sessions_that_ended_are_listed_and_found_by_name() {
    let home = HostHome::new();
    let host = home.start(&[]).await;
    let address = host.address.as_str();
    let fast = holdfast(address, &["new", "--name", "fast", "--", "true"]);
    assert!(fast.status.success(), "{fast:?}");
    let waited = holdfast(address, &["wait", "fast"]);
    assert_eq!(stdout_of(&waited), "exit 0\n");

    let script = "echo 'OSError: [Errno 98] Address already in use' >&2; exit 3";
    let web = holdfast(address, &["new", "--name", "web", "--", "sh", "-c", script]);
    assert_eq!(web.status.code(), Some(3), "{web:?}");
    let said = String::from_utf8_lossy(&web.stderr);
    assert!(
        said.contains("ended at once: exit 3") && said.contains("Address already in use"),
        "{said}"
    );
    let logs = stdout_of(&holdfast(address, &["logs", "web"]));
    assert!(logs.contains("Address already in use"), "{logs}");

    let ended = stdout_of(&holdfast(address, &["ls", "--ended"]));
    let lines: Vec<&str> = ended.lines().collect();
    assert!(
        lines[0].starts_with("ID") && lines[0].contains("ENDED"),
        "{ended}"
    );
    assert!(
        lines[1].contains("web") && lines[1].contains("exit 3"),
        "{ended}"
    );
    assert!(
        lines[2].contains("fast") && lines[2].contains("exit 0"),
        "{ended}"
    );
    let live = stdout_of(&holdfast(address, &["ls"]));
    assert!(
        !live.contains("web"),
        "the live list keeps its meaning: {live}"
    );

    // Through the API: bounded, and of a workspace that exists.
    let mut terminals = host.terminals.clone();
    let too_many = terminals
        .list_ended_sessions(holdfast_api::proto::host::v1::ListEndedSessionsRequest {
            workspace_id: uuid::Uuid::new_v4().to_string(),
            limit: 5000,
        })
        .await;
    expect_status(too_many, tonic::Code::InvalidArgument, "limit");
    let unknown = terminals
        .list_ended_sessions(holdfast_api::proto::host::v1::ListEndedSessionsRequest {
            workspace_id: uuid::Uuid::new_v4().to_string(),
            limit: 0,
        })
        .await;
    expect_status(unknown, tonic::Code::NotFound, "workspace");
}

/// A pty-daemon that died is told by `status` (how many died, when the
/// last did), and the sessions lost with it are listed as ended.
#[tokio::test]
async fn status_tells_of_a_daemon_that_died() {
    let home = HostHome::new();
    let host = home.start(&[]).await;
    let address = host.address.as_str();
    let before = stdout_of(&holdfast(address, &["status"]));
    assert!(!before.contains("died"), "{before}");
    let id = stdout_of(&holdfast(
        address,
        &["new", "--name", "lost", "--", "sleep", "600"],
    ));
    let killed = home.kill_daemon().await;
    home.relaunched_after(killed).await;
    let status = eventually("the death told", || async {
        let status = stdout_of(&holdfast(address, &["status"]));
        status.contains("died        1 time(s)").then_some(status)
    })
    .await;
    assert!(status.contains("holdfast ls --ended"), "{status}");
    let ended = stdout_of(&holdfast(address, &["ls", "--ended"]));
    assert!(ended.contains(id.trim()), "{ended}");
}
