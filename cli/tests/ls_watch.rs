//! `holdfast ls --watch`: the list kept up to date from the host-service's
//! watch, through the real binaries.

#[path = "../../tests/support/mod.rs"]
mod support;

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::sync::mpsc;

use support::host::*;
use support::*;

/// Session ids of one `--json` line.
fn ids_of(line: &str) -> Vec<String> {
    let list: serde_json::Value = serde_json::from_str(line).expect("a JSON list per line");
    list["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|session| session["session_id"].as_str().expect("id").to_owned())
        .collect()
}

#[tokio::test]
async fn ls_watch_prints_the_list_again_at_each_change() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("watched").await.workspace_id;
    let mut child = Command::new(binary("holdfast"))
        .args([
            "--addr",
            &host.address,
            "ls",
            "--watch",
            "--json",
            "-w",
            "watched",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run holdfast");
    let (lines, read) = mpsc::channel();
    let stdout = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if lines.send(line).is_err() {
                return;
            }
        }
    });
    let next = || read.recv_timeout(PATIENCE).expect("a line in time");
    assert!(ids_of(&next()).is_empty(), "the empty list first");

    let session = host
        .create_session(session_request(&workspace, &["cat"]))
        .await;
    assert_eq!(ids_of(&next()), [session.session_id.as_str()]);
    host.dispose(&session.session_id).await;
    // Every line after is a whole list; the last says it is gone.
    let mut last = next();
    while !ids_of(&last).is_empty() {
        last = next();
    }
    let _ = child.kill();
    let _ = child.wait();
}
