//! The browser page (clients/web) in headless Chromium against the real
//! host-service, over grpc-web. CI installs Debian's chromium and the page's
//! npm packages and sets HOLDFAST_CHROMIUM; elsewhere the test says how and
//! skips.

mod support;

use std::process::Command;

use holdfast::proto::host::v1 as pb;
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
            argv: ["sh", "-c", "echo web page ready; exec cat"]
                .map(String::from)
                .into(),
            title: Some("from grpc".into()),
            ..Default::default()
        })
        .await;

    let address = host.address.clone();
    let args = [address, workspace.workspace_id, session.session_id.clone()];
    let output = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg(format!("{WEB}/test/browser.mjs"))
            .args(args)
            .arg(marker)
            .env("CHROMIUM", chromium)
            .output()
    })
    .await
    .expect("join")
    .expect("run node");
    let stdout = support::stdout_of(&output);
    let expected = format!(
        "listed {}\noutput {marker}\nechoed typed in the browser\nattached yes\n",
        session.session_id
    );
    assert_eq!(stdout, expected);
}
