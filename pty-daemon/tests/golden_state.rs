//! The upgrade state format stays readable.
//!
//! `golden/state-vN.bin` is a state of format N as a daemon of that format
//! writes it, committed. A later daemon must still restore each: a change
//! that breaks restoring an older daemon's state fails here. Each was
//! written by this test with `HOLDFAST_WRITE_GOLDEN=N`, once; never write
//! one again.
//!
//! Format 2 keeps each ring in a memfd named by the message. A file cannot
//! carry a descriptor, so the golden one has its rings after the message,
//! as format 2 also allows; the upgrade tests hand real memfds over.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use pty_daemon::registry::Registry;
use pty_daemon::session_settings::SessionSettings;
use pty_daemon::upgrade::state::{self, pb};

/// Each golden session's scrollback, after the message in the file.
const RING: &[u8] = b"hi\r\nthere\r\n";

fn golden_path(format: u32) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/golden/state-v{format}.bin"))
}

/// The state a golden file of `format` holds: two exited sessions (no
/// descriptors, so the file restores anywhere), one with input and output
/// of its own.
fn golden_state(format: u32) -> pb::DaemonState {
    let exited = |id: &str, code| pb::Session {
        session_id: id.into(),
        pid: 4242,
        argv: vec!["sh".into(), "-c".into(), "echo hi".into()],
        cwd: "/tmp".into(),
        created_at_unix_micros: 1_765_000_000_000_000,
        cols: 120,
        rows: 40,
        title: format!("title of {id}"),
        master_fd: -1,
        held_when_closed: false,
        leader_exited: true,
        scrollback_start: 1000,
        scrollback_len: RING.len() as u64,
        input_waiting: b"typed".to_vec(),
        exit: Some(pb::Exit {
            code: Some(code),
            signal: None,
            at_unix_micros: 1_765_000_001_000_000,
        }),
        exited_at_boot_micros: 5_000_000,
        scrollback_fd: None,
        scrollback_capacity: if format >= 2 { 1 << 20 } else { 0 },
    };
    pb::DaemonState {
        format,
        version: "0.1.0".into(),
        started_at_unix_micros: 1_764_999_000_000_000,
        generation: 77,
        listener_fd: 3,
        lock_fd: 4,
        socket_path: "/run/user/1000/holdfast/ptyd.sock".into(),
        previous_executable_fd: 5,
        previous_argv: Vec::new(),
        switch_started_at_unix_micros: 1_765_000_002_000_000,
        upgrades: 2,
        sessions: vec![exited("first", 0), exited("second", 3)],
    }
}

#[test]
fn the_format_1_golden_state_restores() {
    restores(1);
}

#[test]
fn the_format_2_golden_state_restores() {
    restores(2);
}

/// Restores the golden state of `format` and checks what it holds.
fn restores(format: u32) {
    let asked = std::env::var("HOLDFAST_WRITE_GOLDEN").ok();
    if asked.as_deref() == Some(format.to_string().as_str()) {
        let golden = golden_state(format);
        let mut file = state::header(&golden);
        for _ in &golden.sessions {
            file.extend_from_slice(RING);
        }
        std::fs::write(golden_path(format), file).expect("write the golden state");
    }
    let file = std::fs::File::open(golden_path(format)).expect("the golden state is committed");
    let (decoded, mut rings) = state::read(file).expect("the format is readable");
    assert_eq!(decoded, golden_state(format));

    let terminals = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let settings = SessionSettings {
        scrollback_bytes: 1 << 20,
        // Long enough that the golden exits are not forgotten during the test.
        exit_retention: Duration::from_secs(20 * 365 * 86_400),
        attacher_patience: Duration::from_secs(1),
    };
    let registry = Arc::new(Registry::new(settings, terminals.handle().clone()));
    terminals.block_on(async {
        // SAFETY: the golden sessions name no descriptor.
        unsafe { registry.restore(decoded.sessions, &mut rings, decoded.generation) }
            .expect("restore");
    });
    let all = registry.all();
    let ids: Vec<&str> = all.iter().map(|session| session.id()).collect();
    assert_eq!(ids, ["first", "second"]);
    let second = registry.get("second").expect("restored");
    assert_eq!(second.exit_status().and_then(|exit| exit.code), Some(3));
    assert_eq!(second.output_offset(), 1000 + 11);
    assert!(registry.generation() > 77);
    let listed = pty_daemon::listing::session_message(&second).expect("listed");
    assert_eq!(listed.argv, ["sh", "-c", "echo hi"]);
    assert_eq!(
        (listed.cols, listed.rows, listed.title.as_str()),
        (120, 40, "title of second")
    );
}
