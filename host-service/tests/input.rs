//! A session's input stream against the real daemon.
//!
//! The stream is `host_service::SessionInput`. The daemon is this binary run
//! as `pty-daemon`, on a socket in a temp dir.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use holdfast_api::proto::daemon::v1 as daemon;
use holdfast_plumbing::daemon_client::{self, DaemonClient};
use host_service::SessionInput;

const PATIENCE: Duration = Duration::from_secs(20);

/// The daemon process, killed when dropped.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn start_daemon(dir: &std::path::Path) -> (Daemon, DaemonClient) {
    let socket = dir.join("ptyd.sock");
    let child = Command::new(env!("CARGO_BIN_EXE_host-service"))
        .arg0("pty-daemon")
        .arg("--socket")
        .arg(&socket)
        .spawn()
        .expect("start the daemon");
    let daemon = Daemon(child);
    let deadline = Instant::now() + PATIENCE;
    loop {
        match daemon_client::connect(&socket, Duration::from_secs(1)).await {
            Ok(client) => return (daemon, client),
            Err(error) if Instant::now() > deadline => panic!("the daemon never answered: {error}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

#[tokio::test]
async fn a_write_after_the_daemon_ended_the_stream_is_refused_for_its_reason() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_daemon, mut client) = start_daemon(dir.path()).await;
    let spawn = daemon::SpawnRequest {
        session_id: "reader".into(),
        argv: ["sh", "-c", "read line; exit 3"].map(String::from).into(),
        cols: 80,
        rows: 24,
        ..Default::default()
    };
    client.spawn(spawn).await.expect("spawn");
    let input = SessionInput::default();
    input
        .write(&client, "reader", "go\n".into(), PATIENCE)
        .await
        .expect("a write to a running session");

    // The program exits; the daemon ends the session's input stream.
    let deadline = Instant::now() + PATIENCE;
    loop {
        let listed = client
            .list(daemon::ListRequest {
                session_ids: vec!["reader".into()],
                ..Default::default()
            })
            .await
            .expect("list")
            .into_inner();
        if listed.sessions.first().is_some_and(|s| !s.alive) {
            break;
        }
        assert!(Instant::now() < deadline, "the session never exited");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // The next write meets the ended stream: the answer is why it ended.
    let refused = input
        .write(&client, "reader", "more\n".into(), PATIENCE)
        .await
        .expect_err("a write to an exited session");
    let status = tonic::Status::from(refused);
    assert_eq!(status.code(), tonic::Code::FailedPrecondition, "{status:?}");
    assert!(status.message().contains("exited"), "{status:?}");
}

#[tokio::test]
async fn input_a_program_has_not_read_is_answered_at_once_and_kept_in_order() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_daemon, mut client) = start_daemon(dir.path()).await;
    // The program reads nothing until the test says so through a FIFO.
    let gate = dir.path().join("gate");
    let made = Command::new("mkfifo").arg(&gate).status().expect("mkfifo");
    assert!(made.success());
    let script = format!(
        "stty raw -echo; echo ready; read go < '{}'; exec cat",
        gate.display()
    );
    let spawn = daemon::SpawnRequest {
        session_id: "gated".into(),
        argv: vec!["sh".into(), "-c".into(), script],
        cols: 80,
        rows: 24,
        ..Default::default()
    };
    client.spawn(spawn).await.expect("spawn");
    let mut output = client
        .attach(daemon::AttachRequest {
            session_id: "gated".into(),
            from_offset: Some(0),
            ..Default::default()
        })
        .await
        .expect("attach")
        .into_inner();
    let mut text = String::new();
    receive(&mut output, &mut text, "ready").await;

    // 1 MiB, far more than the terminal's input queue (a few KiB), while
    // the program reads nothing: the daemon holds what the terminal does
    // not take, and answers at once, so no caller's deadline cuts the
    // write in half.
    let input = SessionInput::default();
    let big = prost::bytes::Bytes::from(vec![b'x'; 1 << 20]);
    input
        .write(&client, "gated", big, PATIENCE)
        .await
        .expect("answered while the program reads nothing");
    input
        .write(&client, "gated", "<end>".into(), PATIENCE)
        .await
        .expect("the next write");

    // The program reads on: all of the first write, then the next.
    std::fs::write(&gate, "go\n").expect("open the gate");
    let before = text.len();
    receive(&mut output, &mut text, "<end>").await;
    let echoed = &text[before..];
    let xs = echoed.bytes().filter(|b| *b == b'x').count();
    assert_eq!(xs, 1 << 20, "all of the first write");
    assert!(echoed.trim_end().ends_with("x<end>"), "in order");
}

/// Reads output into `text` until it holds `needle`.
async fn receive(
    output: &mut tonic::Streaming<daemon::AttachResponse>,
    text: &mut String,
    needle: &str,
) {
    while !text.contains(needle) {
        let message = tokio::time::timeout(PATIENCE, output.message())
            .await
            .expect("output within the patience")
            .expect("the attach stream")
            .expect("output before the end");
        if let Some(daemon::attach_response::Event::Output(chunk)) = message.event {
            text.push_str(&String::from_utf8_lossy(&chunk.data));
        }
    }
}
