//! The browser page (clients/web) in headless Chromium.
//!
//! It runs against the real host-service, over grpc-web. CI installs
//! Debian's chromium and the page's npm packages, and sets
//! HOLDFAST_CHROMIUM. Elsewhere the test says how and skips.

mod support;

use std::process::Command;

use holdfast_api::proto::host::v1 as pb;
use support::host::*;

const WEB: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/clients/web");

fn npm(args: &[&str]) -> std::process::Output {
    Command::new("npm")
        .args(["--prefix", WEB])
        .args(args)
        .output()
        .expect("run npm")
}

#[tokio::test]
async fn the_web_page_lists_a_session_and_streams_its_output() {
    let Some(chromium) = support::outside_tool(
        "HOLDFAST_CHROMIUM",
        "install Debian's chromium and run `npm ci --prefix clients/web`",
    ) else {
        return;
    };
    // Build from the current sources: generated stubs, type check, bundle.
    let build = tokio::task::spawn_blocking(|| npm(&["run", "build"]))
        .await
        .expect("join");
    support::stdout_of(&build);

    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("web").await;
    let marker = "web page ready";
    let session = host
        .create_session(pb::CreateSessionRequest {
            workspace_id: workspace.workspace_id.clone(),
            // With queries in its history, which the page must not answer.
            argv: [
                "sh",
                "-c",
                "printf 'web page ready\\033[c\\033[6n\\033]11;?\\007\\033[?1000h\\n'; exec cat",
            ]
            .map(String::from)
            .into(),
            title: Some("from grpc".into()),
            // Smaller than the page's terminal will be, so its size shows.
            cols: 20,
            rows: 5,
            ..Default::default()
        })
        .await;

    // A full-screen program started smaller than the page: attached, the
    // page must show all of it, redrawn at its own size.
    let file = home.dir.path().join("notes.txt");
    let text: String = (1..=100).map(|n| format!("note {n}\n")).collect();
    std::fs::write(&file, text).expect("write the file");
    let vim = host
        .create_session(pb::CreateSessionRequest {
            workspace_id: workspace.workspace_id.clone(),
            argv: ["vim", "-u", "NONE", "-n", "-c", "set laststatus=2"]
                .into_iter()
                .map(String::from)
                .chain([file.to_string_lossy().into_owned()])
                .collect(),
            env: [("TERM".to_owned(), "xterm-256color".to_owned())].into(),
            cols: 80,
            rows: 24,
            ..Default::default()
        })
        .await;

    let address = host.address.clone();
    let args = [address, workspace.workspace_id, session.session_id.clone()];
    let vim_id = vim.session_id.clone();
    let output = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg(format!("{WEB}/test/browser.mjs"))
            .args(args)
            .arg(marker)
            .arg(vim_id)
            .env("CHROMIUM", chromium)
            .output()
    })
    .await
    .expect("join")
    .expect("run node");
    let stdout = support::stdout_of(&output);
    let mut lines = stdout.lines();
    let mut next = |what: &str| -> String {
        let line = lines.next().unwrap_or_default();
        line.strip_prefix(what)
            .unwrap_or_else(|| panic!("expected {what:?}, got {line:?} in:\n{stdout}"))
            .to_owned()
    };
    assert_eq!(next("listed "), session.session_id);
    assert_eq!(next("output "), marker);
    let attached_size = size_of(&next("size "));
    assert_eq!(next("echoed "), "typed in the browser");
    assert_eq!(next("attached "), "yes");
    let resized = size_of(&next("resized "));
    assert_eq!(next("clicked"), "");
    let vim_size = size_of(&next("full screen "));
    let vim_now = host.get_session(&vim.session_id).await;
    assert_eq!(
        (vim_now.cols, vim_now.rows),
        vim_size,
        "vim has the page's size"
    );
    assert_ne!(vim_size, (80, 24), "the page's terminal is another size");
    assert!(
        attached_size.0 > 20 && attached_size.1 > 5,
        "attaching gave the session the page's terminal size, not {attached_size:?}"
    );
    assert!(
        resized.0 < attached_size.0 && resized.1 < attached_size.1,
        "the smaller window gave a smaller size: {resized:?} after {attached_size:?}"
    );
    let now = host.get_session(&session.session_id).await;
    assert_eq!(
        (now.cols, now.rows),
        resized,
        "the session has the page's size"
    );

    // Answered, the queries would have reached `cat` as typed keys, and
    // its terminal would have echoed them after the first line.
    let (text, _) = look(&host, &session.session_id, None).await.expect("look");
    let text = String::from_utf8_lossy(&text);
    let (_, after) = text.split_once('\n').expect("the first line");
    assert!(
        after.contains("typed in the browser")
            && !after.contains("[?")
            && !after.contains("rgb:")
            && !after.contains('R'),
        "the page answered queries from the session's history: {after:?}"
    );
}

/// `COLSxROWS` as the page records a size it gave.
fn size_of(text: &str) -> (u32, u32) {
    let (cols, rows) = text.split_once('x').expect("COLSxROWS");
    (cols.parse().expect("cols"), rows.parse().expect("rows"))
}
