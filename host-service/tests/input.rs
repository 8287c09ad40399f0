//! A session's input stream (`host_service::input`) against the real
//! daemon: this binary run as `pty-daemon`, on a socket in a temp dir.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use holdfast::daemon_client::{self, DaemonClient};
use holdfast::proto::daemon::v1 as daemon;
use host_service::input::SessionInput;

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
