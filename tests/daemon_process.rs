//! The daemon as a process.
//!
//! These cover detaching, one daemon per socket, stale sockets, permissions,
//! other users, graceful stop, health and reflection.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use holdfast_api::proto::daemon::v1 as pb;
use holdfast_plumbing::daemon_client;
use holdfast_plumbing::proc_usage::open_fds;
use support::*;

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).expect("stat").permissions().mode() & 0o7777
}

#[tokio::test]
async fn socket_is_0600_in_a_0700_directory() {
    let daemon = Daemon::start().await;
    assert_eq!(mode(&daemon.socket), 0o600);
    assert_eq!(mode(daemon.socket.parent().expect("parent")), 0o700);
}

#[tokio::test]
async fn the_open_file_limit_is_raised_for_thousands_of_sessions() {
    let daemon = Daemon::start().await;
    let limits =
        std::fs::read_to_string(format!("/proc/{}/limits", daemon.child.id())).expect("limits");
    let line = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .expect("a Max open files line");
    let fields: Vec<&str> = line.split_whitespace().collect();
    // "Max open files <soft> <hard> files"
    assert_eq!(
        fields[3], fields[4],
        "soft limit raised to the hard limit: {line}"
    );
}

#[tokio::test]
async fn programs_get_the_open_file_limit_the_daemon_was_started_with() {
    let hard = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .maximum
        .expect("a finite hard limit");
    if hard <= 1024 {
        eprintln!("skipped: the hard open-file limit ({hard}) leaves nothing to raise");
        return;
    }
    let daemon =
        Daemon::start_under(&["sh", "-c", "ulimit -Sn 1024; exec \"$0\" \"$@\""], &[]).await;
    let mut client = daemon.client().await;
    // Read once Spawn has answered, when the limit is set for sure (a
    // program reading it first thing may, rarely, be quicker: spawn.rs).
    let session = spawn(
        &mut client,
        &[
            "sh",
            "-c",
            "read go; echo \"limits $(ulimit -Sn) $(ulimit -Hn)\"; sleep 1000",
        ],
    )
    .await;
    let mut stream = attach(&mut client, &session.session_id, Some(0)).await;
    write(&client, &session.session_id, "go\n").await;
    let mut received = Received::default();
    receive_text(&mut stream, &mut received, &format!(" {hard}")).await;
    assert!(
        received.text().contains(&format!("limits 1024 {hard}")),
        "the program's limits: {:?}",
        received.text()
    );
}

#[tokio::test]
async fn a_socket_directory_another_user_owns_is_refused() {
    if !rustix::process::getuid().is_root() {
        eprintln!("skipped: needs root to make a directory owned by `nobody`");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let theirs = dir.path().join("theirs");
    std::fs::create_dir(&theirs).expect("mkdir");
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).expect("chown");
    let output = Command::new(binary("pty-daemon"))
        .arg("--socket")
        .arg(theirs.join("ptyd.sock"))
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("another user owns"), "stderr: {stderr}");
    assert!(!theirs.join("ptyd.sock").exists());
}

#[tokio::test]
async fn a_second_daemon_on_the_same_socket_is_refused() {
    let daemon = Daemon::start().await;
    let output = Command::new(binary("pty-daemon"))
        .arg("--socket")
        .arg(&daemon.socket)
        .stdin(Stdio::null())
        .output()
        .expect("run a second daemon");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("already serving"), "stderr: {stderr}");
    // The first one keeps serving.
    let mut client = daemon.client().await;
    client
        .list(pb::ListRequest::default())
        .await
        .expect("the first daemon still answers");
}

#[tokio::test]
async fn a_socket_removed_under_the_daemon_is_bound_again() {
    // Launched with an open umask: the socket must still be 0600.
    let daemon = Daemon::start_under(&["sh", "-c", "umask 000; exec \"$0\" \"$@\""], &[]).await;
    assert_eq!(mode(&daemon.socket), 0o600);
    let mut before = daemon.client().await;
    let session = spawn(&mut before, &["sleep", "1000"]).await;
    // As logind removes $XDG_RUNTIME_DIR at a user's last logout: the
    // socket, its lock file and their directory.
    let run = daemon.socket.parent().expect("parent").to_path_buf();
    std::fs::remove_dir_all(&run).expect("remove the socket's directory");

    // A connection opened before keeps working meanwhile.
    assert!(find(&mut before, &session.session_id).await.is_some());
    // A new one reaches the same daemon, session and all, once it has
    // bound the socket again.
    let mut after = daemon.client().await;
    assert_eq!(
        daemon_pid(&mut after).await,
        daemon.child.id(),
        "the same daemon"
    );
    assert!(
        find(&mut after, &session.session_id).await.is_some(),
        "its session is still there"
    );
    assert_eq!(mode(&daemon.socket), 0o600);
    assert_eq!(mode(&run), 0o700);
    assert!(daemon.log().contains("bound it again"), "{}", daemon.log());

    // The lock was taken again too.
    let mut lock_path = daemon.socket.clone().into_os_string();
    lock_path.push(".lock");
    let lock = std::fs::File::open(&lock_path).expect("the lock file is back");
    assert!(
        matches!(lock.try_lock(), Err(std::fs::TryLockError::WouldBlock)),
        "the daemon holds the lock again"
    );
}

#[tokio::test]
async fn a_daemon_whose_socket_another_took_leaves_that_socket_alone() {
    let mut first = Daemon::start().await;
    let first_pid = rustix::process::Pid::from_child(&first.child);
    // Stopped, the first cannot bind its socket again before a second
    // daemon takes the path.
    rustix::process::kill_process(first_pid, rustix::process::Signal::STOP).expect("SIGSTOP");
    stopped(first_pid.as_raw_nonzero().get()).await;
    let run = first.socket.parent().expect("parent").to_path_buf();
    std::fs::remove_dir_all(&run).expect("remove the socket's directory");
    let second = Command::new(binary("pty-daemon"))
        .arg("--socket")
        .arg(&first.socket)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start a second daemon");
    let mut second = ChildGuard(second);
    let mut client = first.client().await;
    let pid = daemon_pid(&mut client).await;
    assert_eq!(pid, second.0.id(), "the second daemon serves the path");
    rustix::process::kill_process(first_pid, rustix::process::Signal::CONT).expect("SIGCONT");
    eventually("the first daemon to see its socket taken", || {
        let log = first.log();
        async move { log.contains("took the socket's place").then_some(()) }
    })
    .await;
    // The first stops without removing the second's socket.
    assert!(first.terminate().success());
    assert!(first.socket.exists(), "the second daemon's socket stays");
    daemon_client::connect(&first.socket, Duration::from_secs(1))
        .await
        .expect("the second daemon still answers");
    let _ = rustix::process::kill_process(
        rustix::process::Pid::from_child(&second.0),
        rustix::process::Signal::TERM,
    );
    assert!(wait_with_deadline(&mut second.0).success());
}

/// Kills a child left running by a failed assertion.
struct ChildGuard(std::process::Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn a_stale_socket_file_is_replaced() {
    let dir = tempfile::tempdir().expect("temp dir");
    let socket = dir.path().join("ptyd.sock");
    // A socket file nobody listens on, as a crashed daemon leaves behind.
    drop(std::os::unix::net::UnixListener::bind(&socket).expect("bind"));
    assert!(socket.exists());
    let mut child = Command::new(binary("pty-daemon"))
        .arg("--socket")
        .arg(&socket)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start");
    let mut client = eventually("the daemon to replace the stale socket", || {
        let socket = socket.clone();
        async move {
            daemon_client::connect(&socket, Duration::from_secs(1))
                .await
                .ok()
        }
    })
    .await;
    client.list(pb::ListRequest::default()).await.expect("list");
    let _ = rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::TERM,
    );
    assert!(wait_with_deadline(&mut child).success());
}

// Multi-threaded: the client's connection must answer the daemon's
// goodbye while the test blocks waiting for the daemon to exit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_hangs_up_sessions_removes_the_socket_and_exits_cleanly() {
    let mut daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let plain = spawn(&mut client, &["sleep", "1000"]).await;
    let stubborn = spawn(
        &mut client,
        &[
            "sh",
            "-c",
            "trap '' HUP; echo ready; while :; do sleep 1; done",
        ],
    )
    .await;
    receive_text(
        &mut attach(&mut client, &stubborn.session_id, None).await,
        &mut Received::default(),
        "ready",
    )
    .await;
    let mut watch = client
        .watch_sessions(pb::WatchSessionsRequest {})
        .await
        .expect("watch")
        .into_inner();
    let status = daemon.terminate();
    assert!(
        status.success(),
        "exit status {status:?}; log:\n{}",
        daemon.log()
    );
    assert!(!daemon.socket.exists(), "the socket is removed");
    // A watcher (the host-service) had both exits, then a clean end: it
    // did not hold the stop up until its connection was cut.
    let mut exits = Vec::new();
    while let Some(event) = watch.message().await.expect("a clean end of the watch") {
        if let Some(pb::watch_sessions_response::Event::Exited(exit)) = event.event {
            exits.push(exit.session_id);
        }
    }
    exits.sort();
    let mut expected = vec![plain.session_id.clone(), stubborn.session_id.clone()];
    expected.sort();
    assert_eq!(exits, expected);
    assert!(
        !daemon.log().contains("still open at shutdown"),
        "{}",
        daemon.log()
    );
    for session in [plain, stubborn] {
        let pid = rustix::process::Pid::from_raw(session.pid as i32).expect("pid");
        assert!(
            rustix::process::test_kill_process(pid).is_err(),
            "session pid {} survived",
            session.pid
        );
    }
}

#[tokio::test]
async fn a_daemonized_daemon_survives_its_launchers_sigkill() {
    let dir = tempfile::tempdir().expect("temp dir");
    let socket = dir.path().join("ptyd.sock");
    // The launcher starts the daemon, then lingers like a host process would.
    let script = format!(
        "umask 022; '{}' --daemonize --socket '{}' && echo launched && exec sleep 1000",
        binary("pty-daemon").display(),
        socket.display()
    );
    let mut launcher = Command::new("sh")
        .args(["-c", &script])
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("launcher");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(launcher.stdout.take().expect("stdout")),
        &mut line,
    )
    .expect("read");
    assert_eq!(
        line, "launched\n",
        "the launcher returns once the daemon is ready"
    );

    let mut client = daemon_client::connect(&socket, Duration::from_secs(5))
        .await
        .expect("the socket accepts once --daemonize returns");
    let session = spawn(&mut client, &["sleep", "1000"]).await;
    let daemon_pid = daemon_pid(&mut client).await;
    // Its programs get the launcher's umask, as from a terminal.
    let umask = spawn(
        &mut client,
        &["sh", "-c", "echo \"umask $(umask)\"; exec sleep 1000"],
    )
    .await;
    let mut received = Received::default();
    receive_until(
        &mut attach(&mut client, &umask.session_id, Some(0)).await,
        &mut received,
        |received| {
            let text = received.text();
            text.split("umask ")
                .nth(1)
                .is_some_and(|rest| rest.contains('\n'))
        },
    )
    .await;
    assert!(
        received.text().contains("umask 0022"),
        "{:?}",
        received.text()
    );

    // SIGKILL the launcher's whole process group.
    let group = rustix::process::Pid::from_child(&launcher);
    rustix::process::kill_process_group(group, rustix::process::Signal::KILL)
        .expect("kill the launcher");
    wait_with_deadline(&mut launcher);

    let mut client = daemon_client::connect(&socket, Duration::from_secs(5))
        .await
        .expect("the daemon is still there");
    let listed = daemon_list(&mut client).await;
    assert_eq!(listed.daemon.expect("info").pid, daemon_pid);
    let still = listed
        .sessions
        .iter()
        .find(|s| s.session_id == session.session_id)
        .expect("session kept");
    assert!(still.alive);
    assert!(
        dir.path().join("ptyd.log").exists(),
        "detached stdio goes to the log next to the socket"
    );

    // Clean up: stop the detached daemon and wait for its socket to go.
    let daemon = rustix::process::Pid::from_raw(daemon_pid as i32).expect("pid");
    rustix::process::kill_process(daemon, rustix::process::Signal::TERM).expect("stop the daemon");
    eventually("the detached daemon to stop", || {
        let gone = rustix::process::test_kill_process(daemon).is_err();
        async move { gone.then_some(()) }
    })
    .await;
}

/// A detached daemon, stopped (SIGTERM) when dropped.
struct Detached(rustix::process::Pid);

impl Drop for Detached {
    fn drop(&mut self) {
        let _ = rustix::process::kill_process(self.0, rustix::process::Signal::TERM);
    }
}

#[tokio::test]
async fn a_detached_daemons_log_removed_with_its_directory_is_opened_again() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = dir.path().join("run");
    let socket = run.join("ptyd.sock");
    let log = run.join("ptyd.log");
    let launched = Command::new(binary("pty-daemon"))
        .arg("--daemonize")
        .arg("--socket")
        .arg(&socket)
        .stdin(Stdio::null())
        .status()
        .expect("launch");
    assert!(launched.success(), "{launched}");
    let mut client = daemon_client::connect(&socket, Duration::from_secs(5))
        .await
        .expect("connect");
    let pid = daemon_pid(&mut client).await;
    let daemon = Detached(rustix::process::Pid::from_raw(pid as i32).expect("pid"));
    assert!(log.exists());

    // As logind removes $XDG_RUNTIME_DIR at a user's last logout.
    std::fs::remove_dir_all(&run).expect("remove the directory");
    let text = eventually("the log file to be back, telling what happened", || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        async move { text.contains("bound it again").then_some(text) }
    })
    .await;
    assert!(text.contains("logging to a new one"), "{text}");
    assert_eq!(mode(&log), 0o600);

    // Rotated away (logrotate's `create`): a new file at the path is
    // written to, not the one moved aside.
    let rotated = dir.path().join("ptyd.log.1");
    std::fs::rename(&log, &rotated).expect("rotate");
    std::fs::write(&log, "").expect("create");
    eventually("the daemon to log into the new file", || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        async move { text.contains("logging to a new one").then_some(()) }
    })
    .await;

    // Another user's doing (a link put at the path, here to a file of
    // ours): never followed; the daemon says so in the file it has.
    let moved = dir.path().join("ptyd.log.2");
    let target = dir.path().join("elsewhere");
    std::fs::write(&target, "").expect("a file to point at");
    std::fs::rename(&log, &moved).expect("move the log");
    std::os::unix::fs::symlink(&target, &log).expect("plant a link");
    eventually("the daemon to refuse the link", || {
        let text = std::fs::read_to_string(&moved).unwrap_or_default();
        async move { text.contains("cannot be opened again").then_some(()) }
    })
    .await;
    assert_eq!(std::fs::read_to_string(&target).expect("target"), "");
    std::fs::remove_file(&log).expect("remove the link");
    std::fs::rename(&moved, &log).expect("put the log back");
    rustix::process::kill_process(daemon.0, rustix::process::Signal::TERM).expect("stop");
    process_gone(pid).await;
    assert!(
        std::fs::read_to_string(&log)
            .expect("log")
            .contains("stopped"),
        "the stop is logged in the new file: {}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    assert!(
        !std::fs::read_to_string(&rotated)
            .expect("rotated log")
            .contains("pty-daemon stopped")
    );
}

#[tokio::test]
async fn health_and_reflection_are_served() {
    let daemon = Daemon::start().await;
    let channel = channel_to(
        &daemon,
        tonic::transport::Endpoint::from_static("http://localhost"),
    )
    .await;
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
    let status = health
        .check(tonic_health::pb::HealthCheckRequest {
            service: "holdfast.daemon.v1.PtyDaemon".into(),
        })
        .await
        .expect("health check")
        .into_inner()
        .status;
    assert_eq!(
        status,
        tonic_health::pb::health_check_response::ServingStatus::Serving as i32
    );

    // grpcurl asks v1alpha, buf and newer tools v1: both must answer.
    macro_rules! list_services {
        ($version:ident) => {{
            use tonic_reflection::pb::$version::{
                ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
                server_reflection_request::MessageRequest,
                server_reflection_response::MessageResponse,
            };
            let request = ServerReflectionRequest {
                host: String::new(),
                message_request: Some(MessageRequest::ListServices(String::new())),
            };
            let mut responses = ServerReflectionClient::new(channel.clone())
                .server_reflection_info(tokio_stream::iter([request]))
                .await
                .expect("reflection")
                .into_inner();
            let response = responses
                .message()
                .await
                .expect("reflection answer")
                .expect("one answer");
            let Some(MessageResponse::ListServicesResponse(list)) = response.message_response
            else {
                panic!("unexpected reflection answer {response:?}");
            };
            list.service.into_iter().map(|s| s.name).collect::<Vec<_>>()
        }};
    }
    for names in [list_services!(v1), list_services!(v1alpha)] {
        for expected in ["holdfast.daemon.v1.PtyDaemon", "grpc.health.v1.Health"] {
            assert!(
                names.iter().any(|n| n == expected),
                "{expected} missing from {names:?}"
            );
        }
    }
}

/// Run as another user by `a_client_with_another_uid_is_refused`: connects
/// to the socket in HOLDFAST_TEST_PEER_SOCKET and prints what happened.
#[tokio::test]
#[ignore = "helper process for a_client_with_another_uid_is_refused"]
async fn peer_helper() {
    let socket = std::env::var_os("HOLDFAST_TEST_PEER_SOCKET")
        .expect("run by a_client_with_another_uid_is_refused");
    let socket = std::path::PathBuf::from(socket);
    // A bare connection, as any program could make, to see what the
    // daemon answers; our own client checks the daemon's uid first.
    let raw = tonic::transport::Endpoint::from_static("http://localhost")
        .connect_with_connector(tower::service_fn({
            let socket = socket.clone();
            move |_| {
                let socket = socket.clone();
                async move {
                    tokio::net::UnixStream::connect(socket)
                        .await
                        .map(hyper_util::rt::TokioIo::new)
                }
            }
        }))
        .await;
    let outcome = match raw {
        Err(error) => format!("connect-error: {error}"),
        Ok(channel) => {
            match holdfast_api::proto::daemon::v1::pty_daemon_client::PtyDaemonClient::new(channel)
                .list(pb::ListRequest::default())
                .await
            {
                Ok(_) => "allowed".to_owned(),
                Err(status) => format!("status: {:?}: {}", status.code(), status.message()),
            }
        }
    };
    println!("PEER-OUTCOME {outcome}");
    let client = match daemon_client::connect(&socket, Duration::from_secs(5)).await {
        Err(error) => format!("refused: {:?}", anyhow_chain(&error)),
        Ok(_) => "connected".to_owned(),
    };
    println!("CLIENT-OUTCOME {client}");
}

fn joined_outcome(stdout: &str) -> String {
    stdout
        .lines()
        .filter_map(|line| {
            line.strip_prefix("PEER-OUTCOME ")
                .or_else(|| line.strip_prefix("CLIENT-OUTCOME "))
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

fn anyhow_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[tokio::test]
async fn a_client_with_another_uid_is_refused() {
    if !rustix::process::getuid().is_root() {
        eprintln!("skipped: needs root to run a client as `nobody`");
        return;
    }
    let daemon = Daemon::start().await;
    let nobody = 65534;
    // The helper is this test binary, copied where `nobody` can run it.
    let helper_dir = tempfile::tempdir().expect("temp dir");
    std::fs::set_permissions(helper_dir.path(), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    let helper = helper_dir.path().join("peer-helper");
    std::fs::copy(std::env::current_exe().expect("exe"), &helper).expect("copy the helper");
    let run_as_nobody = || {
        let output = Command::new(&helper)
            .args(["--ignored", "--exact", "peer_helper", "--nocapture"])
            .env("HOLDFAST_TEST_PEER_SOCKET", &daemon.socket)
            .uid(nobody)
            .gid(nobody)
            .current_dir("/")
            .output()
            .expect("run the helper as nobody");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        Some(joined_outcome(&stdout))
            .filter(|joined| !joined.is_empty())
            .unwrap_or_else(|| {
                panic!(
                    "helper printed no outcome: {stdout} {}",
                    String::from_utf8_lossy(&output.stderr)
                )
            })
    };

    // As created, the directory and socket keep other users out entirely.
    let outcome = run_as_nobody();
    assert!(outcome.starts_with("connect-error"), "got {outcome}");

    // Even with the permissions opened by hand, the peer check refuses them.
    std::fs::set_permissions(daemon.dir.path(), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    std::fs::set_permissions(
        daemon.socket.parent().expect("dir"),
        std::fs::Permissions::from_mode(0o755),
    )
    .expect("chmod");
    std::fs::set_permissions(&daemon.socket, std::fs::Permissions::from_mode(0o666))
        .expect("chmod");
    let outcome = run_as_nobody();
    assert!(
        outcome.starts_with("status: PermissionDenied"),
        "got {outcome}"
    );
    assert!(
        outcome.contains("uid 65534"),
        "the message names the caller: {outcome}"
    );
    // And our client will not talk to a daemon of another user at all.
    assert!(
        outcome.contains("refused") && outcome.contains("served by uid 0"),
        "got {outcome}"
    );
}

/// 1,000 spawn/kill cycles leave no zombies and no more open fds than
/// before them (sessions exit and are forgotten at once: retention 0).
#[tokio::test]
async fn spawn_kill_cycles_leak_no_fds_and_no_zombies() {
    let daemon = Daemon::start_with(&["--exit-retention-secs", "0"]).await;
    let pid = daemon.child.id() as i32;
    let mut client = daemon.client().await;
    let mut exits = client
        .watch_sessions(pb::WatchSessionsRequest {})
        .await
        .expect("watch")
        .into_inner();
    let mut cycle = async |i: usize| {
        let id = format!("cycle-{i}");
        client
            .spawn(pb::SpawnRequest {
                session_id: id.clone(),
                argv: vec!["sleep".into(), "60".into()],
                cols: 80,
                rows: 24,
                ..Default::default()
            })
            .await
            .expect("spawn");
        client
            .kill(pb::KillRequest {
                session_id: id.clone(),
                ..Default::default()
            })
            .await
            .expect("kill");
        loop {
            let event = exits.message().await.expect("watch").expect("open");
            if let Some(pb::watch_sessions_response::Event::Exited(exit)) = event.event
                && exit.session_id == id
            {
                break;
            }
        }
    };
    for i in 0..20 {
        cycle(i).await;
    }
    let settled = |limit: usize| async move {
        eventually("the daemon to let go of exited sessions", || async move {
            (open_fds(pid) <= limit).then_some(())
        })
        .await
    };
    let baseline = open_fds(pid);
    for i in 20..1020 {
        cycle(i).await;
    }
    settled(baseline).await;
    assert_eq!(
        holdfast_plumbing::proc_stat::zombie_children(pid),
        0,
        "zombies left behind"
    );
}

/// Pids of processes whose command line is `argv`.
fn processes_running(argv: &[&str]) -> Vec<i32> {
    let wanted: Vec<u8> = argv
        .iter()
        .flat_map(|arg| [arg.as_bytes(), b"\0"].concat())
        .collect();
    holdfast_plumbing::proc_stat::pids()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|line| line == wanted)
        })
        .filter(|pid| running(*pid))
        .collect()
}

/// Kills, when dropped, every `sleep MARKER` still running: none is left
/// behind when the test fails.
struct KilledOnDrop(String);

impl Drop for KilledOnDrop {
    fn drop(&mut self) {
        for pid in processes_running(&["sleep", &self.0]) {
            if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    }
}

/// A daemon told to stop starts no more sessions, and ends every program
/// it started, those spawned while it stopped too. It used to serve
/// spawns through its whole stop (a second here, for a program that
/// ignores SIGHUP), and never hung those up: a program that ignores
/// SIGHUP outlived it, in no list.
#[tokio::test]
async fn a_stopping_daemon_starts_nothing_it_does_not_end() {
    let mut daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    // A duration no other process here sleeps for.
    let marker = format!("1000.{}", daemon.child.id());
    let _strays = KilledOnDrop(marker.clone());
    let script = format!("trap '' HUP; exec sleep {marker}");
    // Ignoring SIGHUP, it makes the stop wait its grace before SIGKILL.
    spawn(&mut client, &["sh", "-c", &script]).await;
    let spawning = {
        let mut client = client.clone();
        let script = script.clone();
        tokio::spawn(async move {
            loop {
                if let Err(status) = client.spawn(spawn_request(&["sh", "-c", &script])).await {
                    return status;
                }
            }
        })
    };
    let pid = rustix::process::Pid::from_child(&daemon.child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
    let refusal = spawning.await.expect("the spawning task");
    assert_eq!(refusal.code(), tonic::Code::Unavailable, "{refusal:?}");
    assert!(refusal.message().contains("stopping"), "{refusal:?}");
    assert!(
        wait_with_deadline(&mut daemon.child).success(),
        "log:\n{}",
        daemon.log()
    );
    eventually("every program of the daemon's to be gone", || {
        let left = processes_running(&["sleep", &marker]);
        async move { left.is_empty().then_some(()) }
    })
    .await;
}
