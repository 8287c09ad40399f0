//! The daemon's session API end to end.
//!
//! They use real PTYs, real processes, and the real binary over its unix
//! socket.

mod support;

use holdfast_api::proto::daemon::v1 as pb;
use holdfast_plumbing::daemon_client::DaemonClient;
use support::*;
use tonic::Streaming;

#[tokio::test]
async fn input_round_trips_through_cat_to_an_attacher() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let session = spawn(&mut client, &["cat"]).await;
    assert!(session.alive);
    assert!(session.pid > 0);
    let mut stream = attach(&mut client, &session.session_id, None).await;
    write(&client, &session.session_id, "ping\n").await;
    let mut received = Received::default();
    // The terminal echoes the line, then cat prints it again.
    receive_until(&mut stream, &mut received, |r| {
        r.text().matches("ping").count() >= 2
    })
    .await;
    assert_eq!(received.text(), "ping\r\nping\r\n");
}

#[tokio::test]
async fn input_streams_writes_in_order_and_ends_with_its_session() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let session = spawn(
        &mut client,
        &["sh", "-c", "while read line; do echo \"got $line\"; done"],
    )
    .await;
    let id = &session.session_id;
    let mut stream = attach(&mut client, id, None).await;
    let mut input = Input::new(&client);
    input.write(id, b"one\n").await.expect("the first write");
    input
        .write("", b"two\n")
        .await
        .expect("a write naming no session");
    input
        .write(id, b"three\n")
        .await
        .expect("a write naming its own");
    let mut received = Received::default();
    receive_text(&mut stream, &mut received, "got three").await;
    let text = received.text();
    let got: Vec<&str> = text.lines().filter(|l| l.starts_with("got")).collect();
    assert_eq!(got, ["got one", "got two", "got three"]);

    // A closed stream leaves the session running; a new one writes on.
    drop(input);
    let mut input = Input::new(&client);
    input
        .write(id, b"four\n")
        .await
        .expect("a write on a new stream");
    receive_text(&mut stream, &mut received, "got four").await;

    // Its session's end ends the stream, with nothing written.
    input
        .write("", &[0x04])
        .await
        .expect("end of input for `read`");
    let ended = input
        .answer()
        .await
        .expect_err("the stream ends with its session");
    assert_eq!(ended.code(), tonic::Code::FailedPrecondition, "{ended:?}");
    assert!(ended.message().contains("exited"), "{ended:?}");
}

#[tokio::test]
async fn an_input_stream_whose_write_was_dropped_takes_no_more() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let script = "stty raw -echo; echo ready; exec sleep 600";
    let session = spawn(&mut client, &["sh", "-c", script]).await;
    let id = &session.session_id;
    let mut stream = attach(&mut client, id, None).await;
    receive_text(&mut stream, &mut Received::default(), "ready").await;
    let mut input = Input::new(&client);
    input
        .write(id, b"")
        .await
        .expect("an empty write opens the stream");
    // A stopped daemon answers nothing; the caller gives up first.
    let daemon_pid = rustix::process::Pid::from_child(&daemon.child);
    rustix::process::kill_process(daemon_pid, rustix::process::Signal::STOP).expect("SIGSTOP");
    stopped(daemon_pid.as_raw_nonzero().get()).await;
    let dropped =
        tokio::time::timeout(std::time::Duration::from_millis(300), input.write(id, b"x")).await;
    assert!(dropped.is_err(), "no answer from a stopped daemon");
    rustix::process::kill_process(daemon_pid, rustix::process::Signal::CONT).expect("SIGCONT");
    // The answer on its way is the dropped write's: the stream refuses
    // rather than hand it to the next write.
    let refused = input
        .write("", b"y")
        .await
        .expect_err("a stream past a dropped write");
    assert_eq!(refused.code(), tonic::Code::Aborted, "{refused:?}");
}

#[tokio::test]
async fn a_write_larger_than_the_terminal_holds_waits_for_the_program() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let script = "stty raw -echo; echo ready; head -c 1048576 | wc -c";
    let session = spawn(&mut client, &["sh", "-c", script]).await;
    let mut stream = attach(&mut client, &session.session_id, None).await;
    let mut received = Received::default();
    receive_text(&mut stream, &mut received, "ready").await;
    // A terminal's input queue holds a few KiB, so this write fills it
    // many times over and must wait for `head` to read on.
    let data = "x".repeat(1 << 20);
    tokio::time::timeout(PATIENCE, write(&client, &session.session_id, &data))
        .await
        .expect("the write to finish once the program has read it all");
    receive_text(&mut stream, &mut received, "1048576").await;
}

/// Input a busy program has not read waits in the daemon, and the write is
/// answered at once; a write that does not fit beside it is refused whole
/// (so sending it again duplicates nothing), and what was taken reaches
/// the program in order once it reads.
#[tokio::test]
async fn input_waits_for_a_busy_program_and_a_write_that_does_not_fit_takes_nothing() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let go = daemon.dir.path().join("go");
    let script = format!(
        "stty raw -echo; echo ready; while [ ! -e '{}' ]; do sleep 0.05; done; \
         head -c 1048580 | tail -c 4; echo; echo read-all",
        go.display()
    );
    let session = spawn(&mut client, &["sh", "-c", &script]).await;
    let mut stream = attach(&mut client, &session.session_id, None).await;
    let mut received = Received::default();
    receive_text(&mut stream, &mut received, "ready").await;

    // Far more than a terminal holds, while the program reads nothing:
    // answered without waiting for it.
    tokio::time::timeout(
        PATIENCE,
        write(&client, &session.session_id, &"a".repeat(1 << 20)),
    )
    .await
    .expect("answered while the program has read nothing");
    assert!(!go.exists());
    let refused = client
        .write(pb::WriteRequest {
            session_id: session.session_id.clone(),
            data: "b".repeat(64 << 10).into(),
        })
        .await
        .expect_err("no room beside what waits");
    assert_eq!(
        refused.code(),
        tonic::Code::ResourceExhausted,
        "{refused:?}"
    );
    assert!(
        refused.message().contains("none of this write was taken"),
        "{refused:?}"
    );
    let waiting = refused
        .message()
        .split_once(": ")
        .and_then(|(_, rest)| rest.split_once(" bytes wait"))
        .map(|(bytes, _)| bytes.to_owned())
        .expect("the message says how much waits");
    expect_reason(
        &refused,
        Reason::InputFull,
        &[
            ("sessionId", &session.session_id),
            ("waitingBytes", &waiting),
        ],
    );
    // Still room for a little, after what the terminal itself took.
    write(&client, &session.session_id, "cccc").await;

    std::fs::write(&go, "").expect("let the program read");
    receive_text(&mut stream, &mut received, "read-all").await;
    let shown = received.text();
    assert!(
        shown.contains("cccc\nread-all"),
        "all of the first write, none of the refused one, then the last: {shown:?}"
    );
}

#[tokio::test]
async fn replay_from_zero_after_exit_then_exit_event() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let session = spawn(&mut client, &["sh", "-c", "printf 'one\\ntwo\\n'; exit 3"]).await;
    let gone = exited(&client, &session.session_id).await;
    assert_eq!(gone.exit_code, Some(3));
    assert_eq!(gone.output_offset, 10);
    assert!(gone.exited_at.is_some());

    let mut stream = attach(&mut client, &session.session_id, Some(0)).await;
    let received = receive_all(&mut stream).await;
    assert_eq!(received.text(), "one\r\ntwo\r\n");
    assert_eq!(received.first_offset, Some(0));
    assert_eq!(received.exited.and_then(|e| e.exit_code), Some(3));
    assert!(received.truncated.is_empty());
}

#[tokio::test]
async fn a_started_session_outlives_its_stream() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let (session, mut stream) = start(&mut client, &["cat"]).await;
    write(&client, &session.session_id, "one\n").await;
    receive_text(&mut stream, &mut Received::default(), "one\r\none").await;
    drop(stream);
    write(&client, &session.session_id, "two\n").await;
    let mut stream = attach(&mut client, &session.session_id, Some(0)).await;
    let mut received = Received::default();
    receive_text(&mut stream, &mut received, "two\r\ntwo\r\n").await;
    assert_eq!(received.text(), "one\r\none\r\ntwo\r\ntwo\r\n");
    assert!(
        find(&mut client, &session.session_id)
            .await
            .expect("listed")
            .alive
    );
}

#[tokio::test]
async fn resume_from_a_middle_offset_gives_exactly_the_rest() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let session = spawn(&mut client, &["sh", "-c", "printf 'abcdefghij'"]).await;
    exited(&client, &session.session_id).await;
    let mut stream = attach(&mut client, &session.session_id, Some(4)).await;
    let received = receive_all(&mut stream).await;
    assert_eq!(received.first_offset, Some(4));
    assert_eq!(received.output, b"efghij");
}

#[tokio::test]
async fn evicted_offset_gets_a_truncated_event_first() {
    let daemon = Daemon::start_with(&["--scrollback-bytes", "1024"]).await;
    let mut client = daemon.client().await;
    // 5000 bytes with no newline translation.
    let session = spawn(
        &mut client,
        &[
            "sh",
            "-c",
            "stty raw -echo; head -c 5000 /dev/zero | tr '\\0' x",
        ],
    )
    .await;
    let gone = exited(&client, &session.session_id).await;
    assert_eq!(gone.output_offset, 5000);

    let mut stream = attach(&mut client, &session.session_id, Some(0)).await;
    let received = receive_all(&mut stream).await;
    assert_eq!(received.truncated, vec![(0, 5000 - 1024)]);
    assert_eq!(received.first_offset, Some(5000 - 1024));
    assert_eq!(received.output, vec![b'x'; 1024]);

    // Without an offset, attach starts at the oldest byte held: no gap.
    let mut stream = attach(&mut client, &session.session_id, None).await;
    let received = receive_all(&mut stream).await;
    assert!(received.truncated.is_empty());
    assert_eq!(received.output.len(), 1024);
}

/// `seq 1 LINES` as the terminal shows it: ~12.4 MB, far more than the
/// 64 KiB ring below and the client's 4 MiB HTTP/2 window together.
const LINES: u32 = 1_500_000;

fn seq_output() -> Vec<u8> {
    (1..=LINES)
        .flat_map(|line| format!("{line}\r\n").into_bytes())
        .collect()
}

/// The echo of the `go` that starts the flood.
const GO_ECHO: &[u8] = b"go\r\n";

/// A daemon with the given ring and attacher patience, and an attacher
/// from byte 0 of a session just told to print `seq 1 LINES`.
async fn flood_with_an_attacher(
    ring: &str,
    patience_ms: &str,
) -> (Daemon, DaemonClient, String, Streaming<pb::AttachResponse>) {
    flood_with(ring, patience_ms, false).await
}

/// As [`flood_with_an_attacher`], the attach `unpaced` if asked.
async fn flood_with(
    ring: &str,
    patience_ms: &str,
    unpaced: bool,
) -> (Daemon, DaemonClient, String, Streaming<pb::AttachResponse>) {
    let daemon = Daemon::start_with(&[
        "--scrollback-bytes",
        ring,
        "--attacher-patience-ms",
        patience_ms,
    ])
    .await;
    let mut client = daemon.client().await;
    let script = format!("read go; seq 1 {LINES}");
    let session = spawn(&mut client, &["sh", "-c", &script]).await;
    let stream = client
        .attach(pb::AttachRequest {
            session_id: session.session_id.clone(),
            from_offset: Some(0),
            unpaced,
            ..Default::default()
        })
        .await
        .expect("attach")
        .into_inner();
    write(&client, &session.session_id, "go\n").await;
    (daemon, client, session.session_id, stream)
}

/// Asserts that `received` is all of the flood, nothing lost to the ring.
fn assert_whole_flood(received: &Received) {
    assert_eq!(received.truncated, vec![], "output was lost to the ring");
    assert!(
        received.output == [GO_ECHO, &seq_output()].concat(),
        "output differs ({} bytes)",
        received.output.len()
    );
}

/// Asserts that a session's output stands still (the same offset for 20
/// polls in a row) past the 64 KiB ring but short of `total`: its program
/// is held for an attacher that has not read.
async fn assert_held_short_of(client: &mut DaemonClient, id: &str, total: u64) {
    let deadline = std::time::Instant::now() + PATIENCE;
    let (mut held, mut polls_unmoved) = (0, 0);
    while polls_unmoved < 20 {
        assert!(
            std::time::Instant::now() < deadline,
            "the output never stood still"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        let offset = find(client, id).await.expect("listed").output_offset;
        if offset == held {
            polls_unmoved += 1;
        } else {
            (held, polls_unmoved) = (offset, 0);
        }
    }
    assert!(held < total, "the program ran to the end ({held} bytes)");
    assert!(
        held > 65536,
        "the output stood still before filling the ring ({held} bytes)"
    );
}

#[tokio::test]
async fn start_streams_a_session_from_its_first_byte_to_its_exit() {
    let daemon = Daemon::start_with(&[
        "--scrollback-bytes",
        "65536",
        "--attacher-patience-ms",
        "600000",
    ])
    .await;
    let mut client = daemon.client().await;
    let lines = LINES.to_string();
    let (session, mut stream) = start(&mut client, &["seq", "1", &lines]).await;
    assert!(
        session.pid > 0 && !session.session_id.is_empty(),
        "{session:?}"
    );
    // Attached before anything was read: with nothing read from the
    // stream, the flood is held for it from its very first byte.
    assert_held_short_of(&mut client, &session.session_id, seq_output().len() as u64).await;
    let received = receive_all(&mut stream).await;
    assert_eq!(received.first_offset, Some(0));
    assert_eq!(received.truncated, vec![], "output was lost to the ring");
    assert!(
        received.output == seq_output(),
        "output differs ({} bytes)",
        received.output.len()
    );
    assert_eq!(received.exited.and_then(|exited| exited.exit_code), Some(0));
    assert!(next_message(&mut stream, "the end").await.is_none());
}

#[tokio::test]
async fn output_waits_for_an_attacher_that_has_not_read_it() {
    let (_daemon, mut client, id, mut stream) = flood_with_an_attacher("65536", "600000").await;
    let total = (GO_ECHO.len() + seq_output().len()) as u64;
    // Nothing read yet: once the window to the client is full, the program
    // must be held where it is, not run to the end through the ring.
    assert_held_short_of(&mut client, &id, total).await;
    // Then everything arrives, nothing lost to the ring.
    let received = receive_all(&mut stream).await;
    assert_whole_flood(&received);
}

/// An unpaced stream (a look) is never waited for: with nothing read from
/// it, and a patience that would hold the program for ten minutes for an
/// ordinary attacher, the program runs to its end; the stream is told what
/// the ring lapped.
#[tokio::test]
async fn an_unpaced_stream_never_holds_the_program() {
    let (_daemon, client, id, mut look) = flood_with("65536", "600000", true).await;
    let gone = exited(&client, &id).await;
    assert_eq!(
        gone.output_offset,
        (GO_ECHO.len() + seq_output().len()) as u64
    );
    let received = receive_all(&mut look).await;
    assert!(!received.truncated.is_empty(), "told of what it missed");
    assert!(received.exited.is_some());
}

#[tokio::test]
async fn an_attacher_slower_than_the_program_loses_nothing_while_it_reads() {
    // The default ring and patience; the reader takes ~3 s at 4 MB/s, far
    // longer than the patience, but reads far more than half a ring in it.
    let (_daemon, _client, _id, mut stream) = flood_with_an_attacher("1048576", "1000").await;
    let mut received = Received::default();
    let taken = std::cell::Cell::new(0);
    receive_until(&mut stream, &mut received, |received| {
        let new = received.output.len() - taken.replace(received.output.len());
        std::thread::sleep(std::time::Duration::from_nanos(new as u64 * 250));
        received.exited.is_some()
    })
    .await;
    assert_whole_flood(&received);
}

#[tokio::test]
async fn an_attacher_that_stops_reading_does_not_stop_the_program() {
    let (_daemon, client, id, mut stalled) = flood_with_an_attacher("65536", "200").await;
    // Never read until the program is done: the daemon waits for this
    // attacher a while, then reads on without it.
    let gone = exited(&client, &id).await;
    assert_eq!(
        gone.output_offset,
        (GO_ECHO.len() + seq_output().len()) as u64
    );
    let received = receive_all(&mut stalled).await;
    assert!(
        !received.truncated.is_empty(),
        "the stalled attacher was told of no loss"
    );
    assert!(received.exited.is_some());
}

/// Each laggard has its own patience. One attacher stalls; another,
/// attached later and far behind, must still be waited for when the first
/// one's patience runs out, and loses nothing once it reads. Reading used
/// to stop waiting for every laggard at once, the second one's output
/// then lost to the ring although it read.
#[tokio::test]
async fn an_attacher_that_stalls_does_not_use_up_another_attachers_patience() {
    use std::time::{Duration, Instant};
    // Long enough that a loaded machine still polls between the two
    // patiences' ends and leaves the late attacher time to read.
    const ATTACHER_PATIENCE: Duration = Duration::from_secs(6);
    let patience_ms = ATTACHER_PATIENCE.as_millis().to_string();
    let (daemon, mut client, id, _stalled) = flood_with_an_attacher("1048576", &patience_ms).await;
    let total = (GO_ECHO.len() + seq_output().len()) as u64;
    assert_held_short_of(&mut client, &id, total).await;
    let held_since = Instant::now();
    let held = find(&mut client, &id).await.expect("listed").output_offset;
    // Half way through the stalled one's patience, a second attacher from
    // the oldest byte held: with a narrow window it is the ring's length
    // behind, and it does not read yet.
    tokio::time::sleep(ATTACHER_PATIENCE / 2).await;
    let mut late = narrow_window_client(&daemon).await;
    let mut stream = attach(&mut late, &id, None).await;
    let attached = Instant::now();
    // Past the stalled one's patience, short of the late one's: the
    // program must still be held for the late one.
    let stalled_gone = held_since + ATTACHER_PATIENCE;
    let late_gone = attached + ATTACHER_PATIENCE;
    let mut told_apart = false;
    loop {
        let offset = find(&mut client, &id).await.expect("listed").output_offset;
        let now = Instant::now();
        // Two seconds left for it to read half a ring: plenty.
        if now >= late_gone - Duration::from_secs(2) {
            break;
        }
        // It may read on as far as the late one's room in the ring, no
        // further; without it, the flood runs on by megabytes.
        assert!(
            offset < held + 512 * 1024,
            "reading went on without the attacher that had not used its patience ({offset} bytes, held at {held})"
        );
        told_apart |= now > stalled_gone + Duration::from_millis(100);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        told_apart,
        "the test ran too slowly to look between the two patiences"
    );
    // It reads now: all of it from where it started, nothing lost.
    let received = receive_all(&mut stream).await;
    assert_eq!(received.truncated, vec![], "output was lost to the ring");
    let first = usize::try_from(received.first_offset.expect("some output")).expect("offset");
    let whole = [GO_ECHO, &seq_output()].concat();
    assert!(
        received.output == whole[first..],
        "output differs ({} bytes from offset {first})",
        received.output.len()
    );
}

#[tokio::test]
async fn what_a_program_leaves_in_a_small_ring_still_reaches_its_attacher() {
    let daemon = Daemon::start_with(&[
        "--scrollback-bytes",
        "1024",
        "--attacher-patience-ms",
        "600000",
    ])
    .await;
    let mut client = daemon.client().await;
    // 20,000 bytes, no newline translation: most of it is still in the
    // PTY when the program exits, far more than the ring holds.
    let script = "read go; stty raw -echo; head -c 20000 /dev/zero | tr '\\0' x";
    let session = spawn(&mut client, &["sh", "-c", script]).await;
    let mut stream = attach(&mut client, &session.session_id, Some(0)).await;
    write(&client, &session.session_id, "go\n").await;
    let received = receive_all(&mut stream).await;
    assert_eq!(received.truncated, vec![], "output was lost to the ring");
    assert!(
        received.output == [GO_ECHO, &[b'x'; 20_000]].concat(),
        "output differs ({} bytes)",
        received.output.len()
    );
}

#[tokio::test]
async fn two_attachers_get_identical_bytes() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let session = spawn(&mut client, &["sh", "-c", "read go; seq 1 20000"]).await;
    let mut first = attach(&mut client, &session.session_id, None).await;
    let mut second = attach(&mut client.clone(), &session.session_id, None).await;
    write(&client, &session.session_id, "go\n").await;
    let (a, b) = tokio::join!(receive_all(&mut first), receive_all(&mut second));
    assert!(
        a.text().ends_with("19999\r\n20000\r\n"),
        "got the tail {:?}",
        &a.text()[a.text().len() - 40..]
    );
    assert_eq!(a.output, b.output);
    assert_eq!(a.first_offset, Some(0));
    assert_eq!(b.first_offset, Some(0));
}

#[tokio::test]
async fn resize_shows_in_stty_size() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let session = spawn(&mut client, &["sh"]).await;
    resize(&client, &session.session_id, 123, 45).await;
    let mut stream = attach(&mut client, &session.session_id, None).await;
    write(&client, &session.session_id, "stty size; exit\n").await;
    let received = receive_all(&mut stream).await;
    assert!(
        received.text().contains("45 123"),
        "stty printed {:?}",
        received.text()
    );
    let listed = find(&mut client, &session.session_id)
        .await
        .expect("still listed");
    assert_eq!((listed.cols, listed.rows), (123, 45));
}

/// `redraw` tells the program its size although it did not change
/// (SIGWINCH), so that a full-screen program draws its screen again for a
/// client that has just attached. It goes where the kernel sends a new
/// size: to the job in the foreground, here a program started from an
/// interactive shell (in a process group of its own), not to the shell.
#[tokio::test]
async fn a_resize_to_the_same_size_can_ask_for_a_redraw() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let session = spawn(&mut client, &["sh", "-i"]).await;
    let id = session.session_id.clone();
    let mut stream = attach(&mut client, &id, None).await;
    let mut received = Received::default();
    // The quotes keep the words whole only in what the program prints,
    // not in the shell's echo of the line.
    write(
        &client,
        &id,
        "sh -c 'trap \"echo re\"\"drawn\" WINCH; echo re\"\"ady; while :; do sleep 0.05; done'\n",
    )
    .await;
    receive_text(&mut stream, &mut received, "ready").await;
    client
        .clone()
        .resize(pb::ResizeRequest {
            session_id: id.clone(),
            cols: session.cols,
            rows: session.rows,
            redraw: true,
        })
        .await
        .expect("resize to the same size");
    receive_text(&mut stream, &mut received, "redrawn").await;
}

#[tokio::test]
async fn kill_reports_the_signal_and_keeps_the_session_listed() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let session = spawn(&mut client, &["sleep", "1000"]).await;
    let mut stream = attach(&mut client, &session.session_id, None).await;
    client
        .kill(pb::KillRequest {
            session_id: session.session_id.clone(),
            ..Default::default()
        })
        .await
        .expect("kill");
    let gone = exited(&client, &session.session_id).await;
    assert_eq!(gone.signal, Some(rustix::process::Signal::HUP.as_raw()));
    assert_eq!(gone.exit_code, None);
    let received = receive_all(&mut stream).await;
    assert_eq!(received.exited.and_then(|e| e.signal), Some(1));
    // Reaped: the pid no longer names a process (no zombie left behind).
    let pid = rustix::process::Pid::from_raw(gone.pid as i32).expect("pid");
    assert!(
        rustix::process::test_kill_process(pid).is_err(),
        "pid {} still exists",
        gone.pid
    );
}

#[tokio::test]
async fn a_program_that_ignores_sighup_is_killed_by_escalation() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let script = "trap '' HUP; echo ready; while :; do sleep 1; done";
    let session = spawn_ready(&mut client, &["sh", "-c", script]).await;
    kill_with(&mut client, &session.session_id, pb::Signal::Hup, 200).await;
    let gone = exited(&client, &session.session_id).await;
    assert_eq!(gone.signal, Some(rustix::process::Signal::KILL.as_raw()));
}

/// A session whose programs became another user (`sudo -i`, `su`) cannot
/// be signalled by this user's daemon: its Kill hangs up the terminal
/// instead, as tmux's kill-session does, and the kernel's SIGHUP ends the
/// leader, though SIGTERM was asked for (it would be refused). Here the
/// daemon is root without CAP_KILL and the program becomes `nobody`, which
/// is how a user's daemon stands to a root shell; so the test needs root.
/// Before, the Kill failed INTERNAL, and a disposal left the program
/// running, listed nowhere.
#[tokio::test]
async fn kill_hangs_up_a_session_whose_programs_became_another_user() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: needs root, to run the daemon without CAP_KILL");
        return;
    }
    let daemon = Daemon::start_under(
        &["setpriv", "--bounding-set=-kill", "--inh-caps=-kill"],
        &[],
    )
    .await;
    let mut client = daemon.client().await;
    let nobody = [
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
    ];
    let script = "trap '' TERM; echo ready; exec sleep 1000";
    let session = spawn_ready(&mut client, &[&nobody[..], &["sh", "-c", script]].concat()).await;
    kill_with(&mut client, &session.session_id, pb::Signal::Term, 60_000).await;
    let gone = exited(&client, &session.session_id).await;
    assert_eq!(gone.signal, Some(rustix::process::Signal::HUP.as_raw()));
}

#[tokio::test]
async fn sessions_hear_sighup_even_when_the_daemon_was_started_under_nohup() {
    // nohup leaves SIGHUP ignored, and ignored signals survive exec.
    let daemon = Daemon::start_under(&["nohup"], &[]).await;
    let mut client = daemon.client().await;
    let session = spawn(&mut client, &["sleep", "1000"]).await;
    client
        .kill(pb::KillRequest {
            session_id: session.session_id.clone(),
            signal: pb::Signal::Hup.into(),
            grace_ms: Some(60_000),
        })
        .await
        .expect("kill");
    let gone = exited(&client, &session.session_id).await;
    assert_eq!(gone.signal, Some(rustix::process::Signal::HUP.as_raw()));
}

/// A launcher that leaves SIGCHLD ignored would have the kernel reap the
/// programs, and their exit statuses would be lost.
#[tokio::test]
async fn exit_statuses_survive_a_launcher_that_ignores_sigchld() {
    // (A shell's `trap '' CHLD` does not survive its exec; Python's does.)
    let ignoring = "import os, signal, sys; signal.signal(signal.SIGCHLD, signal.SIG_IGN); os.execv(sys.argv[1], sys.argv[1:])";
    let daemon = Daemon::start_under(&["python3", "-c", ignoring], &[]).await;
    let mut client = daemon.client().await;
    for code in [7, 0, 42] {
        let script = format!("sleep 0.1; exit {code}");
        let session = spawn(&mut client, &["sh", "-c", &script]).await;
        let gone = exited(&client, &session.session_id).await;
        assert_eq!(gone.exit_code, Some(code), "{}", daemon.log());
    }
    let quick = spawn(&mut client, &["sh", "-c", "exit 3"]).await;
    assert_eq!(exited(&client, &quick.session_id).await.exit_code, Some(3));
}

/// A program leads a session of its own with the PTY as its controlling
/// terminal (Ctrl-C reaches it), and inherits no ignored or blocked signal:
/// not the SIGHUP a nohup launcher leaves ignored, nor the SIGPIPE Rust
/// ignores in the daemon.
#[tokio::test]
async fn programs_lead_their_terminal_with_default_signals() {
    let daemon = Daemon::start_under(&["nohup"], &[]).await;
    let mut client = daemon.client().await;
    let session = spawn(
        &mut client,
        &["cat", "/proc/self/stat", "/proc/self/status"],
    )
    .await;
    let mut stream = attach(&mut client, &session.session_id, Some(0)).await;
    let received = receive_all(&mut stream).await;
    let text = received.text();
    // After "pid (comm)": state ppid pgrp session tty_nr tpgid ...
    let stat: Vec<&str> = text
        .rsplit_once(") ")
        .map(|(_, rest)| rest.split_whitespace().take(6).collect())
        .unwrap_or_default();
    let pid = session.pid.to_string();
    assert_eq!(stat.get(2), Some(&&*pid), "its own process group: {text}");
    assert_eq!(stat.get(3), Some(&&*pid), "its own session: {text}");
    assert_ne!(stat.get(4), Some(&"0"), "a controlling terminal: {text}");
    assert_eq!(stat.get(5), Some(&&*pid), "in the foreground: {text}");
    let mask = |field: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(field))
            .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
            .unwrap_or_else(|| panic!("no {field} in {text}"))
    };
    assert_eq!(mask("SigBlk:"), 0, "no signal blocked");
    // Signals 1–31. glibc's posix_spawn leaves its two internal signals
    // (32, 33) ignored, as for every program started with it (Rust's
    // Command, Python's subprocess); glibc programs take them back.
    assert_eq!(
        mask("SigIgn:") & 0x7fff_ffff,
        0,
        "no standard signal ignored"
    );

    // The terminal's line discipline signals its foreground group.
    let session = spawn(&mut client, &["sleep", "1000"]).await;
    write(&client, &session.session_id, "\x03").await;
    let gone = exited(&client, &session.session_id).await;
    assert_eq!(gone.signal, Some(rustix::process::Signal::INT.as_raw()));
}

/// A title sequence that never ends (an `ESC ]` in a binary file `cat`
/// to the terminal, say) is kept to its first KiB: the program's output
/// after it cannot grow the daemon.
#[tokio::test]
async fn an_unterminated_title_does_not_grow_the_daemon() {
    const BYTES: u64 = 32 << 20;
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let pid = i32::try_from(daemon.child.id()).expect("pid");
    let before = holdfast_plumbing::proc_usage::rss_kib(pid);
    let script = format!("printf '\\033]0;'; head -c {BYTES} /dev/zero | tr '\\000' y; sleep 1000");
    let session = spawn(&mut client, &["sh", "-c", &script]).await;
    eventually("the program's output to be read", || {
        let mut client = client.clone();
        let id = session.session_id.clone();
        async move {
            let listed = find(&mut client, &id).await?;
            (listed.output_offset >= BYTES).then_some(())
        }
    })
    .await;
    let grown_kib = holdfast_plumbing::proc_usage::rss_kib(pid).saturating_sub(before);
    assert!(
        grown_kib < 12 << 10,
        "the daemon grew by {grown_kib} KiB reading {} MiB of an open title",
        BYTES >> 20
    );
}

#[tokio::test]
async fn osc_titles_are_tracked_and_streamed() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let session = spawn(&mut client, &["sh", "-c", "printf '\\033]0;first\\007'; printf '\\033]2;build: 3/7\\033\\\\'; echo done; sleep 1000"]).await;
    let mut stream = attach(&mut client, &session.session_id, None).await;
    let mut received = Received::default();
    receive_text(&mut stream, &mut received, "done").await;
    assert_eq!(
        received.titles.last().map(String::as_str),
        Some("build: 3/7")
    );
    let listed = find(&mut client, &session.session_id)
        .await
        .expect("listed");
    assert_eq!(listed.title, "build: 3/7");
    // A late attacher is told the current title first.
    let mut late = attach(&mut client, &session.session_id, None).await;
    let mut received = Received::default();
    receive_until(&mut late, &mut received, |r| !r.titles.is_empty()).await;
    assert_eq!(received.titles, vec!["build: 3/7".to_owned()]);
}

#[tokio::test]
async fn all_256_byte_values_survive_the_output_path() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let all: Vec<u8> = (0..=255).collect();
    let file = daemon.dir.path().join("bytes");
    std::fs::write(&file, &all).expect("write the byte file");
    let script = format!("stty raw -echo; cat '{}'", file.display());
    let session = spawn(&mut client, &["sh", "-c", &script]).await;
    let mut stream = attach(&mut client, &session.session_id, Some(0)).await;
    let received = receive_all(&mut stream).await;
    assert_eq!(received.output, all);
}

#[tokio::test]
async fn empty_argv_starts_the_login_shell_with_a_clean_environment() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let mut request = spawn_request(&[]);
    request.env.insert("SHELL".into(), "/bin/sh".into());
    request
        .env
        .insert("HOLDFAST_TEST_VAR".into(), "from-request".into());
    request.cwd = "/".into();
    let session = client
        .spawn(request)
        .await
        .expect("spawn")
        .into_inner()
        .session
        .expect("session");
    assert_eq!(session.argv, vec!["/bin/sh".to_owned()]);
    assert_eq!(session.cwd, "/");
    let mut stream = attach(&mut client, &session.session_id, None).await;
    write(&client, &session.session_id, "echo \"0=$0 term=$TERM color=$COLORTERM var=$HOLDFAST_TEST_VAR leak=$RUST_LOG pwd=$(pwd)\"; exit\n").await;
    let received = receive_all(&mut stream).await;
    let text = received.text();
    // A login shell's $0 starts with '-'; RUST_LOG is set on the daemon only.
    assert!(
        text.contains("0=-sh term=xterm-256color color=truecolor var=from-request leak= pwd=/\r\n"),
        "got {text:?}"
    );
}

#[tokio::test]
async fn exited_sessions_are_dropped_after_the_retention_period() {
    let daemon = Daemon::start_with(&["--exit-retention-secs", "1"]).await;
    let mut client = daemon.client().await;
    let session = spawn(&mut client, &["true"]).await;
    let gone = exited(&client, &session.session_id).await;
    assert_eq!(gone.exit_code, Some(0));
    eventually("the exited session to be dropped", || {
        let mut client = client.clone();
        let id = session.session_id.clone();
        async move { find(&mut client, &id).await.is_none().then_some(()) }
    })
    .await;
}

/// Watchers hear of each exit, with its status, and of the list's changes
/// by a newer generation.
#[tokio::test]
async fn watchers_are_told_of_every_exit() {
    use pb::watch_sessions_response::Event;
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let mut watch = client
        .watch_sessions(pb::WatchSessionsRequest {})
        .await
        .expect("watch")
        .into_inner();
    let before = client
        .list(pb::ListRequest::default())
        .await
        .expect("list")
        .into_inner()
        .generation;
    let session = spawn(&mut client, &["sh", "-c", "exit 5"]).await;
    // Exits go out first; changes are coalesced, so the spawn's may come
    // as one with the exit's, after it.
    let (mut exited, mut changed) = (None, Vec::new());
    while exited.is_none() || !changed.iter().any(|&generation| generation > before) {
        let event = next_message(&mut watch, "exit and change events")
            .await
            .expect("an event");
        match event.event {
            Some(Event::Exited(exit)) => exited = Some(exit),
            Some(Event::Changed(change)) => changed.push(change.generation),
            other => panic!("expected an exit or a change, got {other:?}"),
        }
    }
    let exited = exited.expect("the exit");
    assert_eq!(exited.session_id, session.session_id);
    assert_eq!(exited.exit_code, Some(5));
    assert!(exited.exited_at.is_some());
}

#[tokio::test]
async fn list_reports_every_session_and_the_daemon() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let mut request = spawn_request(&["sleep", "1000"]);
    request.session_id = "chosen-id.1".into();
    let chosen = client
        .spawn(request)
        .await
        .expect("spawn")
        .into_inner()
        .session
        .expect("session");
    assert_eq!(chosen.session_id, "chosen-id.1");
    let other = spawn(&mut client, &["sleep", "1000"]).await;
    let listed = client
        .list(pb::ListRequest::default())
        .await
        .expect("list")
        .into_inner();
    let ids: Vec<_> = listed
        .sessions
        .iter()
        .map(|s| s.session_id.as_str())
        .collect();
    assert_eq!(ids, vec!["chosen-id.1", other.session_id.as_str()]);
    let info = listed.daemon.expect("daemon info");
    assert_eq!(info.pid, daemon.child.id());
    assert_eq!(info.version, holdfast_api::VERSION);
    assert!(info.started_at.is_some());
    assert_eq!(listed.sessions[0].argv, vec!["sleep", "1000"]);
}

/// `List` "if still generation G": only offsets while nothing but output
/// changed; the full list after a spawn, a title, a resize or an exit.
/// Full lists reuse their encoding while the generation stands: each one
/// must still show fresh offsets, and every change once it happens.
#[tokio::test]
async fn full_lists_show_every_change() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let id = spawn(&mut client, &["cat"]).await.session_id;
    let lister = client.clone();
    let until = |what: &'static str, accept: fn(&pb::Session) -> bool| {
        let lister = lister.clone();
        let id = id.clone();
        async move {
            eventually(what, || {
                let mut client = lister.clone();
                let id = id.clone();
                async move {
                    let list = client.list(pb::ListRequest::default()).await.ok()?;
                    let session = list
                        .into_inner()
                        .sessions
                        .into_iter()
                        .find(|s| s.session_id == id)?;
                    accept(&session).then_some(session)
                }
            })
            .await
        }
    };
    until("the session listed", |s| s.alive && s.output_offset == 0).await;
    write(&client, &id, "hello\n").await;
    until("output counted", |s| s.output_offset >= 12).await;
    write(&client, &id, "more\n").await;
    until("more output counted", |s| s.output_offset >= 22).await;
    resize(&client, &id, 132, 43).await;
    until("the new size", |s| s.cols == 132 && s.rows == 43).await;
    write(&client, &id, "\x1b]2;renamed\x07\n").await;
    until("the new title", |s| s.title == "renamed").await;
    client
        .kill(pb::KillRequest {
            session_id: id.clone(),
            signal: pb::Signal::Kill.into(),
            grace_ms: None,
        })
        .await
        .expect("kill");
    until("the exit", |s| !s.alive && s.signal.is_some()).await;
}

/// `List` of named sessions returns just those, in creation order, and
/// leaves out ids it does not hold.
#[tokio::test]
async fn list_of_named_sessions_returns_only_those() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(spawn(&mut client, &["sleep", "1000"]).await.session_id);
    }
    let listed = client
        .list(pb::ListRequest {
            session_ids: vec![ids[2].clone(), "not-a-session".into(), ids[0].clone()],
            ..Default::default()
        })
        .await
        .expect("list")
        .into_inner();
    let listed: Vec<&str> = listed
        .sessions
        .iter()
        .map(|session| session.session_id.as_str())
        .collect();
    assert_eq!(listed, [ids[0].as_str(), ids[2].as_str()]);
}

#[tokio::test]
async fn list_if_generation_sends_only_offsets_until_something_else_changes() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let session = spawn(&mut client, &["cat"]).await;
    let id = session.session_id.clone();
    let lister = client.clone();
    let list = |if_generation| {
        let mut client = lister.clone();
        async move {
            client
                .list(pb::ListRequest {
                    if_generation,
                    ..Default::default()
                })
                .await
                .expect("list")
                .into_inner()
        }
    };
    let full = list(None).await;
    assert!(!full.unchanged);
    assert_eq!(full.sessions.len(), 1);
    let generation = full.generation;

    // Output alone: unchanged, with the offset moving.
    let mut stream = attach(&mut client, &id, None).await;
    let mut received = Received::default();
    write(&client, &id, "more output\n").await;
    receive_text(&mut stream, &mut received, "more output\r\nmore output").await;
    let offsets = list(Some(generation)).await;
    assert!(offsets.unchanged, "{offsets:?}");
    assert!(offsets.sessions.is_empty());
    assert_eq!(offsets.generation, generation);
    assert_eq!(offsets.output_offsets.len(), 1);
    assert!(offsets.output_offsets[0] > full.sessions[0].output_offset);

    // A title, a resize, a spawn, an exit: each answers in full.
    let mut generation = generation;
    write(&client, &id, "\x1b]2;retitled\x07\n").await;
    receive_text(&mut stream, &mut received, "retitled").await;
    let after_title = eventually("a new generation after the title", || {
        let list = list(Some(generation));
        async move { Some(list.await).filter(|l| !l.unchanged) }
    })
    .await;
    assert_eq!(after_title.sessions[0].title, "retitled");
    generation = after_title.generation;

    resize(&client, &id, 100, 30).await;
    let after_resize = list(Some(generation)).await;
    assert!(!after_resize.unchanged);
    assert_eq!(after_resize.sessions[0].cols, 100);
    generation = after_resize.generation;

    spawn(&mut client, &["sleep", "60"]).await;
    let after_spawn = list(Some(generation)).await;
    assert!(!after_spawn.unchanged);
    assert_eq!(after_spawn.sessions.len(), 2);
    generation = after_spawn.generation;

    client
        .kill(pb::KillRequest {
            session_id: id.clone(),
            ..Default::default()
        })
        .await
        .expect("kill");
    exited(&client, &id).await;
    let after_exit = list(Some(generation)).await;
    assert!(!after_exit.unchanged);
    assert!(
        after_exit
            .sessions
            .iter()
            .any(|s| s.session_id == id && !s.alive)
    );
}

/// Starts `sh -c script`, where the script prints `leftover <pid> done`
/// for a child it leaves; returns the session and that pid, and the
/// output so far.
async fn spawn_with_leftover(
    client: &mut DaemonClient,
    script: &str,
) -> (pb::Session, i32, String) {
    let session = spawn(client, &["sh", "-c", script]).await;
    let mut stream = attach(client, &session.session_id, Some(0)).await;
    let mut received = Received::default();
    receive_text(&mut stream, &mut received, " done").await;
    let text = received.text();
    let leftover = text
        .split("leftover ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {text:?}"));
    (session, leftover, text)
}

/// Kills with the default signal (SIGHUP) and `grace_ms`.
async fn kill_with(client: &mut DaemonClient, session_id: &str, signal: pb::Signal, grace_ms: u32) {
    client
        .kill(pb::KillRequest {
            session_id: session_id.to_owned(),
            signal: signal.into(),
            grace_ms: Some(grace_ms),
        })
        .await
        .expect("kill");
}

/// A session of `argv`, once its program has said `ready`.
async fn spawn_ready(client: &mut DaemonClient, argv: &[&str]) -> pb::Session {
    let session = spawn(client, argv).await;
    let mut stream = attach(client, &session.session_id, None).await;
    receive_text(&mut stream, &mut Received::default(), "ready").await;
    session
}

/// Kill after the leader has exited still ends what it left running on the
/// PTY: here a child that ignores the hang-up (as `nohup` would make it),
/// so SIGKILL after the grace period.
#[tokio::test]
async fn kill_after_the_leader_exited_ends_its_leftovers() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let script = "trap '' HUP; sleep 1000 & echo leftover $! done";
    let (session, leftover, text) = spawn_with_leftover(&mut client, script).await;
    exited(&client, &session.session_id).await;
    assert!(
        running(leftover),
        "the sleep outlives its shell: {:?} {text:?}",
        std::fs::read_to_string(format!("/proc/{leftover}/stat"))
    );

    kill_with(&mut client, &session.session_id, pb::Signal::Hup, 100).await;
    eventually("the leftover to be killed", || async move {
        (!running(leftover)).then_some(())
    })
    .await;
}

/// The terminal is closed once the leader's exit and what it left there
/// are read, as tmux closes a dead pane: something it left running that
/// writes on meets EIO and can end, where it blocked once the terminal's
/// buffer was full, with no one reading it, until the session was
/// forgotten (here never: it is kept for the whole test).
#[tokio::test]
async fn what_the_leader_leaves_writing_is_not_blocked_for_good() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let ended = daemon.dir.path().join("ended");
    let script = format!(
        "trap '' HUP; (sleep 0.2; while echo 0123456789abcdef; do :; done; echo ended > {}) & echo leftover $! done",
        ended.display()
    );
    let (session, leftover, _) = spawn_with_leftover(&mut client, &script).await;
    exited(&client, &session.session_id).await;
    eventually("the leftover's writes to fail and it to end", || {
        let ended = ended.clone();
        async move {
            std::fs::read_to_string(&ended)
                .ok()
                .filter(|text| text == "ended\n")
        }
    })
    .await;
    eventually("the leftover to be gone", || async move {
        (!running(leftover)).then_some(())
    })
    .await;
}

/// Kill of a live session escalates to whatever is left of it once the
/// grace period ends, even when the leader went at the first signal: the
/// shell dies of the hang-up, its child ignores it and would otherwise run
/// on. Once in the shell's process group; once as a job in a group of its
/// own (`set -m`, as an interactive shell runs `server &`), which only the
/// terminal it still holds ties to the session.
#[tokio::test]
async fn kill_escalates_to_what_the_leader_leaves_behind_within_the_grace() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    for job_control in ["", "set -m; "] {
        let script =
            format!("{job_control}(trap '' HUP; exec sleep 1000) & echo leftover $! done; wait");
        let (session, leftover, _) = spawn_with_leftover(&mut client, &script).await;
        kill_with(&mut client, &session.session_id, pb::Signal::Hup, 200).await;
        exited(&client, &session.session_id).await;
        eventually(
            &format!("the child that ignored the hang-up to be killed ({script})"),
            || async move { (!running(leftover)).then_some(()) },
        )
        .await;
    }
}
