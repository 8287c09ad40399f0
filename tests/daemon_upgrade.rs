//! The pty-daemon upgrading in place, against the real binary.
//!
//! Two copies of the daemon binary, `daemon-a` and `daemon-b`, report
//! different versions (`HOLDFAST_TEST_VERSION_FROM_EXE` appends the file
//! name), so each upgrade is a real switch of image that a client can see.

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use holdfast_api::proto::daemon::v1 as pb;
use holdfast_plumbing::daemon_client::DaemonClient;
use support::*;

/// Two named copies of the daemon binary in `dir`.
fn two_images(dir: &Path) -> (PathBuf, PathBuf) {
    let images = ["daemon-a", "daemon-b"].map(|name| {
        let path = dir.join(name);
        std::fs::copy(binary("pty-daemon"), &path).expect("copy the daemon");
        path
    });
    let [a, b] = images;
    (a, b)
}

/// A daemon started from `image`, its version naming the image.
async fn daemon_from(image: &Path, extra_env: &[(&str, &str)]) -> Daemon {
    let mut env = vec![("HOLDFAST_TEST_VERSION_FROM_EXE", "1")];
    env.extend_from_slice(extra_env);
    Daemon::start_from(image, &[], &[], &env).await
}

fn version_of(image: &Path) -> String {
    let name = image.file_name().expect("a file name").to_string_lossy();
    format!("{}+{name}", holdfast_api::VERSION)
}

async fn upgrade(client: &mut DaemonClient, image: &Path) -> pb::UpgradeResponse {
    client
        .upgrade(pb::UpgradeRequest {
            executable: image.to_string_lossy().into_owned(),
        })
        .await
        .expect("upgrade")
        .into_inner()
}

/// Waits until the daemon answers as `version`, and returns what it says
/// of itself.
async fn serving_as(daemon: &Daemon, version: &str) -> pb::DaemonInfo {
    eventually(&format!("the daemon to serve as {version}"), || async {
        let mut client = daemon_client_now(daemon).await?;
        let list = client.list(pb::ListRequest::default()).await.ok()?;
        list.into_inner()
            .daemon
            .filter(|info| info.version == version)
    })
    .await
}

/// What the daemon says of itself once it has been through `upgrades`.
async fn after_upgrades(daemon: &Daemon, upgrades: u32, what: &str) -> pb::DaemonInfo {
    eventually(what, || async {
        let mut client = daemon_client_now(daemon).await?;
        let list = client.list(pb::ListRequest::default()).await.ok()?;
        list.into_inner()
            .daemon
            .filter(|info| info.upgrades == upgrades)
    })
    .await
}

async fn daemon_client_now(daemon: &Daemon) -> Option<DaemonClient> {
    holdfast_plumbing::daemon_client::connect(&daemon.socket, Duration::from_secs(1))
        .await
        .ok()
}

/// Follows a session's output across upgrades: each stream an upgrade
/// ends is opened again from the offset after the last byte received.
async fn follow(socket: PathBuf, session_id: String, stop: Arc<AtomicBool>) -> (Vec<u8>, usize) {
    use pb::attach_response::Event;
    let mut output = Vec::new();
    let mut next = 0u64;
    let mut reattached = 0;
    while !stop.load(Ordering::Acquire) {
        let Ok(mut client) =
            holdfast_plumbing::daemon_client::connect(&socket, Duration::from_secs(5)).await
        else {
            continue;
        };
        let opened = client
            .attach(pb::AttachRequest {
                session_id: session_id.clone(),
                from_offset: Some(next),
                ..Default::default()
            })
            .await;
        let Ok(stream) = opened else {
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        };
        let mut stream = stream.into_inner();
        loop {
            let message = tokio::select! {
                message = stream.message() => message,
                () = tokio::time::sleep(Duration::from_millis(50)) => {
                    if stop.load(Ordering::Acquire) { break } else { continue }
                }
            };
            match message {
                Ok(Some(pb::AttachResponse {
                    event: Some(Event::Output(out)),
                })) => {
                    assert_eq!(out.offset, next, "output continues where it stopped");
                    next += out.data.len() as u64;
                    output.extend_from_slice(&out.data);
                }
                Ok(Some(pb::AttachResponse {
                    event: Some(Event::Truncated(truncated)),
                })) => panic!("output was lost: {truncated:?}"),
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(status) => {
                    // An upgrade ends the stream and says where to resume.
                    if status.message().contains("upgrading") {
                        assert!(
                            status.message().contains(&format!("from offset {next}")),
                            "{status:?} resumes at {next}"
                        );
                    }
                    reattached += 1;
                    break;
                }
            }
        }
    }
    (output, reattached)
}

/// Connects over and over while the daemon upgrades; counts refusals.
async fn keep_connecting(socket: PathBuf, stop: Arc<AtomicBool>, refused: Arc<AtomicUsize>) {
    while !stop.load(Ordering::Acquire) {
        if let Err(error) = tokio::net::UnixStream::connect(&socket).await {
            eprintln!("refused: {error}");
            refused.fetch_add(1, Ordering::AcqRel);
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_upgrades_keep_every_session_its_pid_and_every_byte() {
    let images = tempfile::tempdir().expect("temp dir");
    let (a, b) = two_images(images.path());
    let daemon = daemon_from(&a, &[]).await;
    let mut client = daemon.client().await;
    let pid = daemon_pid(&mut client).await;

    let counter = spawn(
        &mut client,
        &[
            "sh",
            "-c",
            "i=0; while :; do echo line$i; i=$((i+1)); sleep 0.002; done",
        ],
    )
    .await;
    let mut sessions = vec![counter.clone()];
    for _ in 0..6 {
        sessions.push(spawn(&mut client, &["cat"]).await);
    }
    for _ in 0..6 {
        sessions.push(spawn(&mut client, &["sleep", "1000"]).await);
    }
    for _ in 0..6 {
        sessions.push(spawn(&mut client, &["yes"]).await);
    }
    let quitter = spawn(&mut client, &["sh", "-c", "sleep 0.4; exit 7"]).await;
    resize(&client, &sessions[1].session_id, 100, 30).await;

    let stop = Arc::new(AtomicBool::new(false));
    let refused = Arc::new(AtomicUsize::new(0));
    let following = tokio::spawn(follow(
        daemon.socket.clone(),
        counter.session_id.clone(),
        Arc::clone(&stop),
    ));
    let connecting = tokio::spawn(keep_connecting(
        daemon.socket.clone(),
        Arc::clone(&stop),
        Arc::clone(&refused),
    ));

    for round in 0..10 {
        let (from, to) = if round % 2 == 0 { (&a, &b) } else { (&b, &a) };
        let mut client = daemon.client().await;
        let answer = upgrade(&mut client, to).await;
        assert_eq!(answer.old_version, version_of(from));
        assert_eq!(answer.new_version, version_of(to));
        let info = serving_as(&daemon, &version_of(to)).await;
        assert_eq!(info.pid, pid, "the same process, round {round}");
        assert_eq!(info.upgrades, round + 1);
        assert_eq!(info.previous_version, version_of(from));
        assert!(info.last_switch_micros > 0);

        let mut client = daemon.client().await;
        let listed = daemon_list(&mut client).await.sessions;
        for session in &sessions {
            let now = listed
                .iter()
                .find(|listed| listed.session_id == session.session_id)
                .unwrap_or_else(|| panic!("{} is listed after round {round}", session.session_id));
            assert_eq!(now.pid, session.pid);
            assert!(now.alive, "{} runs on", session.session_id);
        }
        let resized = listed
            .iter()
            .find(|listed| listed.session_id == sessions[1].session_id)
            .expect("listed");
        assert_eq!((resized.cols, resized.rows), (100, 30));
        // cat still echoes.
        let cat = &sessions[1 + round as usize % 6];
        let from_offset = find(&mut client, &cat.session_id)
            .await
            .expect("listed")
            .output_offset;
        let mut stream = attach(&mut client, &cat.session_id, Some(from_offset)).await;
        write(&client, &cat.session_id, &format!("ping{round}\n")).await;
        receive_text(
            &mut stream,
            &mut Received::default(),
            &format!("ping{round}"),
        )
        .await;
    }

    let ended = exited(&daemon.client().await, &quitter.session_id).await;
    assert_eq!(
        ended.exit_code,
        Some(7),
        "an exit during the upgrades is reported"
    );

    stop.store(true, Ordering::Release);
    connecting.await.expect("connecting");
    let (output, reattached) = following.await.expect("following");
    assert_eq!(
        refused.load(Ordering::Acquire),
        0,
        "no connection was refused"
    );
    assert!(
        reattached >= 10,
        "each upgrade ended the stream ({reattached})"
    );
    let text = String::from_utf8_lossy(&output);
    let lines: Vec<&str> = text.split("\r\n").filter(|line| !line.is_empty()).collect();
    let complete = &lines[..lines.len() - 1];
    for (expected, line) in complete.iter().enumerate() {
        assert_eq!(*line, format!("line{expected}"), "no line lost or repeated");
    }
    assert!(complete.len() > 10, "the counter ran through the upgrades");
}

#[tokio::test]
async fn an_image_that_cannot_restore_gives_way_to_the_previous_one() {
    let images = tempfile::tempdir().expect("temp dir");
    let (a, b) = two_images(images.path());
    let daemon = daemon_from(&a, &[("HOLDFAST_TEST_REFUSE_RESTORE", "daemon-b")]).await;
    let mut client = daemon.client().await;
    let pid = daemon_pid(&mut client).await;
    let cat = spawn(&mut client, &["cat"]).await;
    write(&client, &cat.session_id, "before\n").await;

    let answer = upgrade(&mut client, &b).await;
    assert_eq!(answer.new_version, version_of(&b), "the probe passed");
    // b refuses the state and executes a again, which restores it.
    let info = after_upgrades(&daemon, 1, "the previous image to serve again").await;
    assert_eq!(info.version, version_of(&a));
    assert_eq!(info.pid, pid);
    assert!(
        daemon.log().contains("going back to the previous image"),
        "{}",
        daemon.log()
    );
    let mut client = daemon.client().await;
    let session = find(&mut client, &cat.session_id)
        .await
        .expect("still listed");
    assert_eq!(session.pid, cat.pid);
    assert!(session.alive);
    let mut stream = attach(&mut client, &cat.session_id, Some(0)).await;
    write(&client, &cat.session_id, "after\n").await;
    let mut received = Received::default();
    receive_text(&mut stream, &mut received, "after").await;
    assert!(received.text().contains("before"), "{:?}", received.text());
}

#[tokio::test]
async fn a_candidate_that_is_not_a_daemon_is_refused_and_nothing_changes() {
    let images = tempfile::tempdir().expect("temp dir");
    let (a, _) = two_images(images.path());
    let daemon = daemon_from(&a, &[]).await;
    let mut client = daemon.client().await;
    let cat = spawn(&mut client, &["cat"]).await;
    let slow = images.path().join("slow");
    std::fs::write(&slow, "#!/bin/sh\nsleep 5\n").expect("write");
    std::fs::set_permissions(&slow, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    for (candidate, says) in [
        (images.path().join("missing"), "cannot be run"),
        (PathBuf::from("/bin/true"), "did not answer the probe"),
        (slow, "did not answer the probe within"),
    ] {
        let status = client
            .upgrade(pb::UpgradeRequest {
                executable: candidate.to_string_lossy().into_owned(),
            })
            .await
            .expect_err("refused");
        assert_eq!(status.code(), tonic::Code::FailedPrecondition, "{status:?}");
        assert!(status.message().contains(says), "{status:?}");
        expect_reason(&status, Reason::DaemonUpgrading, &[]);
    }
    let status = client
        .upgrade(pb::UpgradeRequest {
            executable: "relative/daemon".into(),
        })
        .await
        .expect_err("refused");
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    let info = daemon_list(&mut client).await.daemon.expect("info");
    assert_eq!((info.version, info.upgrades), (version_of(&a), 0));
    let mut stream = attach(&mut client, &cat.session_id, Some(0)).await;
    write(&client, &cat.session_id, "still here\n").await;
    receive_text(&mut stream, &mut Received::default(), "still here").await;
}

#[tokio::test]
async fn sigusr2_upgrades_to_the_file_installed_over_the_old_one() {
    let images = tempfile::tempdir().expect("temp dir");
    let (a, b) = two_images(images.path());
    let daemon = daemon_from(&a, &[]).await;
    let mut client = daemon.client().await;
    let pid = daemon_pid(&mut client).await;
    let sleeper = spawn(&mut client, &["sleep", "1000"]).await;
    // As install(1) does: a new file renamed over the old one.
    std::fs::rename(&b, &a).expect("install over");
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid as i32).expect("pid"),
        rustix::process::Signal::USR2,
    )
    .expect("signal");
    let info = after_upgrades(&daemon, 1, "the upgrade by signal").await;
    assert_eq!(info.pid, pid);
    let mut client = daemon.client().await;
    let session = find(&mut client, &sleeper.session_id)
        .await
        .expect("listed");
    assert_eq!((session.pid, session.alive), (sleeper.pid, true));
}
