//! The daemon's command line.
//!
//! Being an integration test of this package also makes `cargo test` build
//! the binary the root `tests/` start.

use std::process::Command;

fn pty_daemon() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pty-daemon"))
}

#[test]
fn version_matches_the_workspace() {
    let output = pty_daemon().arg("--version").output().expect("run");
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        format!("pty-daemon {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn bad_flags_are_refused_with_a_reason() {
    let output = pty_daemon()
        .args(["--scrollback-bytes", "12"])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--scrollback-bytes"));
}

#[test]
fn an_unusable_socket_path_fails_with_its_name() {
    let output = pty_daemon()
        .args(["--socket", "/proc/holdfast/ptyd.sock"])
        .output()
        .expect("run");
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("/proc/holdfast"));
}
