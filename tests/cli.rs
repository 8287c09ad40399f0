//! The `holdfast` command line against the real host-service.

mod support;

use std::process::{Command, Output};

use support::host::*;
use support::*;

fn holdfast(address: &str, args: &[&str]) -> Output {
    Command::new(binary("holdfast"))
        .arg("--addr")
        .arg(address)
        .args(args)
        .output()
        .expect("run holdfast")
}

fn stdout_of(output: &Output) -> String {
    assert!(
        output.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test]
async fn new_ls_count_send_kill_through_the_cli() {
    let home = HostHome::new();
    let host = home.start(&[]).await;
    let address = host.address.clone();

    let id = stdout_of(&holdfast(
        &address,
        &[
            "new",
            "--title",
            "agent",
            "--",
            "sh",
            "-c",
            "read line; echo got:$line; exec sleep 1000",
        ],
    ))
    .trim()
    .to_owned();
    let hidden = stdout_of(&holdfast(
        &address,
        &["new", "--hidden", "--", "sleep", "1000"],
    ))
    .trim()
    .to_owned();
    let table = stdout_of(&holdfast(&address, &["ls"]));
    assert!(
        table
            .lines()
            .next()
            .is_some_and(|header| header.starts_with("ID")),
        "{table}"
    );
    assert!(
        table.contains(&id) && table.contains("agent") && table.contains("alive"),
        "{table}"
    );
    assert!(
        !table.contains(&hidden),
        "hidden sessions are not listed: {table}"
    );
    assert_eq!(stdout_of(&holdfast(&address, &["count"])).trim(), "1");

    stdout_of(&holdfast(&address, &["send", &id, "hello\n"]));
    let json: serde_json::Value =
        serde_json::from_str(&stdout_of(&holdfast(&address, &["ls", "--json"]))).expect("json");
    assert_eq!(json["source"], "complete");
    assert_eq!(json["sessions"][0]["session_id"], id.as_str());
    eventually("the input to be echoed", || {
        let address = address.clone();
        async move {
            let json: serde_json::Value =
                serde_json::from_str(&stdout_of(&holdfast(&address, &["ls", "--json"]))).ok()?;
            // "hello\r\n" echoed, then "got:hello\r\n": 7 + 11 bytes.
            (json["sessions"][0]["output_offset"].as_u64()? >= 18).then_some(())
        }
    })
    .await;

    assert!(stdout_of(&holdfast(&address, &["kill", &id])).contains("disposed"));
    let table = stdout_of(&holdfast(&address, &["ls"]));
    assert!(!table.contains(&id), "{table}");
    let workspaces = stdout_of(&holdfast(&address, &["workspace", "list"]));
    assert!(
        workspaces.contains("default") && workspaces.contains("open"),
        "{workspaces}"
    );
    assert!(
        stdout_of(&holdfast(&address, &["workspace", "close", "default"]))
            .contains("1 session(s) disposed")
    );
}

#[test]
fn errors_read_like_a_person_wrote_them() {
    // Nothing listens on port 9 of loopback.
    let output = holdfast("http://127.0.0.1:9", &["ls"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cannot reach the host-service") && stderr.contains("host-service"),
        "{stderr}"
    );
}

#[tokio::test]
async fn unknown_ids_are_reported_with_a_non_zero_exit() {
    let home = HostHome::new();
    let host = home.start(&[]).await;
    let output = holdfast(
        &host.address,
        &["kill", "00000000-0000-4000-8000-000000000000"],
    );
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("no session with id"));
    let output = holdfast(&host.address, &["ls", "--workspace", "nope"]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("no open workspace"));
}
