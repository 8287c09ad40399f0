//! The host-service upgrading its pty-daemon in place, through the real
//! binaries: at its start when the daemon runs another version, and when a
//! client asks; attach streams through it carry on without a gap.

mod support;

use std::process::{Command, Stdio};

use holdfast_api::proto::daemon::v1 as daemon;
use holdfast_api::proto::host::v1 as pb;
use holdfast_api::proto::host::v1::status_service_client::StatusServiceClient;
use support::host::*;
use support::*;

/// Versions name the executable, so the daemon's and the host's differ.
const NAMED: (&str, &str) = ("HOLDFAST_TEST_VERSION_FROM_EXE", "1");

/// The daemon's own account of itself.
async fn daemon_info(home: &HostHome) -> daemon::DaemonInfo {
    let mut client = holdfast_plumbing::daemon_client::connect(
        &home.socket(),
        std::time::Duration::from_secs(5),
    )
    .await
    .expect("connect to the daemon");
    daemon_list(&mut client).await.daemon.expect("info")
}

/// Reads host attach events until `lines` whole counter lines came,
/// checking offsets are contiguous; returns the text.
async fn counter_lines(
    stream: &mut tonic::Streaming<pb::AttachSessionResponse>,
    next: &mut u64,
    text: &mut String,
    lines: usize,
) {
    use pb::attach_session_response::Event;
    while text.matches("\r\n").count() < lines {
        let message = tokio::time::timeout(PATIENCE, stream.message())
            .await
            .expect("output in time")
            .expect("the stream carries on")
            .expect("the stream does not end");
        match message.event {
            Some(Event::Output(output)) => {
                assert_eq!(output.offset, *next, "no gap, no byte twice");
                *next += output.data.len() as u64;
                text.push_str(&String::from_utf8_lossy(&output.data));
            }
            Some(Event::Truncated(truncated)) => panic!("output lost: {truncated:?}"),
            _ => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_upgrades_an_older_daemon_and_its_streams_carry_on() {
    let home = HostHome::new();
    let images = tempfile::tempdir().expect("temp dir");
    let old = images.path().join("daemon-a");
    std::fs::copy(binary("pty-daemon"), &old).expect("copy");
    let old_daemon = Command::new(&old)
        .arg("--socket")
        .arg(home.socket())
        .env(NAMED.0, NAMED.1)
        .stdin(Stdio::null())
        .stderr(std::fs::File::create(images.path().join("daemon.log")).expect("log"))
        .spawn()
        .expect("start the old daemon");
    // Stopped however the test ends: upgraded, it is still this child.
    let _old_daemon = Stopped(old_daemon);
    let pid = eventually("the old daemon to serve", || async {
        home.serving_daemon_pid().await
    })
    .await;
    assert_eq!(
        daemon_info(&home).await.version,
        format!("{}+daemon-a", holdfast_api::VERSION)
    );

    // At its start, the host-service upgrades it to its own binary.
    let mut host = home.start_with_env(&[], &[NAMED]).await;
    let info = daemon_info(&home).await;
    assert_eq!(
        info.version,
        format!("{}+host-service", holdfast_api::VERSION)
    );
    assert_eq!(info.pid as i32, pid, "the same daemon process");
    assert_eq!(info.upgrades, 1);
    assert!(host.log_text().contains("upgraded the pty-daemon in place"));

    let workspace = host.create_workspace("upgrades").await;
    let counter = host
        .create_session(session_request(
            &workspace.workspace_id,
            &[
                "sh",
                "-c",
                "i=0; while :; do echo line$i; i=$((i+1)); sleep 0.002; done",
            ],
        ))
        .await;
    let mut stream = host.attach(&counter.session_id, Some(0)).await;
    let (mut next, mut text) = (0, String::new());
    counter_lines(&mut stream, &mut next, &mut text, 20).await;

    let mut status = StatusServiceClient::connect(host.address.clone())
        .await
        .expect("status client");
    let same = status
        .upgrade_daemon(pb::UpgradeDaemonRequest { force: false })
        .await
        .expect("upgrade")
        .into_inner();
    assert!(!same.upgraded, "the daemon runs the host's version already");
    for round in 0..3 {
        let upgraded = status
            .upgrade_daemon(pb::UpgradeDaemonRequest { force: true })
            .await
            .expect("upgrade")
            .into_inner();
        assert!(upgraded.upgraded);
        assert_eq!(upgraded.daemon_pid as i32, pid, "round {round}");
        assert!(upgraded.switch_micros > 0);
        let seen = text.matches("\r\n").count();
        counter_lines(&mut stream, &mut next, &mut text, seen + 20).await;
    }
    let lines: Vec<&str> = text.split("\r\n").collect();
    for (expected, line) in lines[..lines.len() - 1].iter().enumerate() {
        assert_eq!(
            *line,
            format!("line{expected}"),
            "every line once, in order"
        );
    }
    let listed = host
        .list_until(
            "a complete list of the counter",
            &workspace.workspace_id,
            |list| is_complete(list) && ids(list) == [counter.session_id.as_str()],
        )
        .await;
    assert_eq!(listed.sessions[0].pid, counter.pid);

    // The CLI asks the same, and is told there is nothing to do.
    let cli = Command::new(binary("holdfast"))
        .args([
            "--addr",
            host.address.trim_start_matches("http://"),
            "upgrade-daemon",
        ])
        .output()
        .expect("run holdfast");
    assert!(stdout_of(&cli).contains("already runs"), "{cli:?}");

    host.stop(rustix::process::Signal::TERM);
}

/// A child process stopped with SIGTERM (then waited for) when dropped.
struct Stopped(std::process::Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let pid = rustix::process::Pid::from_child(&self.0);
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        let _ = wait_with_deadline(&mut self.0);
    }
}
