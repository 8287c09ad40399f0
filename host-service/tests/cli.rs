//! The host-service's command line.
//!
//! Being an integration test of this package also makes `cargo test` build
//! the binary the root `tests/` start.

use std::os::unix::process::CommandExt;
use std::process::Command;

fn host_service() -> Command {
    Command::new(env!("CARGO_BIN_EXE_host-service"))
}

#[test]
fn version_matches_the_workspace() {
    let output = host_service().arg("--version").output().expect("run");
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        format!("host-service {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn run_as_pty_daemon_it_is_the_daemon() {
    let output = host_service()
        .arg0("pty-daemon")
        .arg("--version")
        .output()
        .expect("run");
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        format!("pty-daemon {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn other_databases_are_refused_with_a_reason() {
    let output = host_service()
        .args([
            "--database-url",
            "mysql://app:s3cret@localhost/holdfast",
            "--listen",
            "127.0.0.1:0",
        ])
        .output()
        .expect("run");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unsupported database URL"), "{stderr}");
    assert!(!stderr.contains("s3cret"), "{stderr}");
}

/// A PostgreSQL server that does not answer stops the start, with the
/// database named and its password not.
#[test]
fn an_unreachable_database_fails_the_start_without_its_password() {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = host_service()
        .args([
            "--database-url",
            // Nothing listens on port 1.
            "postgres://app:s3cret@127.0.0.1:1/holdfast",
            "--listen",
            "127.0.0.1:0",
            "--no-launch-daemon",
            "--daemon-socket",
        ])
        .arg(dir.path().join("ptyd.sock"))
        .output()
        .expect("run");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("postgres://app:***@127.0.0.1:1/holdfast"),
        "{stderr}"
    );
    assert!(!stderr.contains("s3cret"), "{stderr}");
}

#[test]
fn a_taken_port_fails_with_its_address() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = taken.local_addr().expect("address").to_string();
    let dir = tempfile::tempdir().expect("temp dir");
    let output = host_service()
        .args([
            "--listen",
            &address,
            "--no-launch-daemon",
            "--daemon-socket",
        ])
        .arg(dir.path().join("ptyd.sock"))
        .arg("--database-url")
        .arg(dir.path().join("db"))
        .output()
        .expect("run");
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains(&format!("cannot listen on {address}"))
    );
}

/// A database another process holds locked (a backup, an sqlite3 shell)
/// delays the start instead of failing it.
#[test]
fn a_briefly_locked_database_delays_the_start() {
    use diesel::connection::SimpleConnection;
    use diesel::{Connection, SqliteConnection};
    use std::io::{BufRead, BufReader};

    let dir = tempfile::tempdir().expect("temp dir");
    let database = dir.path().join("holdfast.db");
    let mut holder =
        SqliteConnection::establish(database.to_str().expect("UTF-8")).expect("open database");
    holder
        .batch_execute("CREATE TABLE held (x); BEGIN EXCLUSIVE; INSERT INTO held VALUES (1);")
        .expect("lock");
    let mut host = host_service()
        .args([
            "--listen",
            "127.0.0.1:0",
            "--no-launch-daemon",
            "--daemon-socket",
        ])
        .arg(dir.path().join("ptyd.sock"))
        .arg("--database-url")
        .arg(&database)
        .env("RUST_LOG", "info")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start host-service");
    // Hold the lock while the host-service opens the file, then let go.
    std::thread::sleep(std::time::Duration::from_millis(500));
    holder.batch_execute("COMMIT;").expect("unlock");
    let stderr = BufReader::new(host.stderr.take().expect("piped"));
    let mut log = String::new();
    for line in stderr.lines() {
        let line = line.expect("log line");
        log.push_str(&line);
        log.push('\n');
        if line.contains("host-service serving") || line.contains("Error") {
            break;
        }
    }
    let _ = host.kill();
    let _ = host.wait();
    assert!(log.contains("host-service serving"), "{log}");
}
