//! The Python example (clients/python) against the real host-service.
//!
//! CI makes a virtual environment with grpcio, grpcio-tools and grpcio-status.
//! It points HOLDFAST_PYTHON at that environment's python. Elsewhere the test
//! says how and skips.

mod support;

use std::process::Command;

use support::host::*;

#[tokio::test]
async fn the_python_example_runs_against_the_host_service() {
    let Some(python) = support::outside_tool(
        "HOLDFAST_PYTHON",
        "make a virtual environment with grpcio, grpcio-tools and grpcio-status",
    ) else {
        return;
    };
    let home = HostHome::new();
    let host = home.start(&[]).await;
    let address = host.address.trim_start_matches("http://").to_owned();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/clients/python/example.py");
    let output =
        tokio::task::spawn_blocking(move || Command::new(python).arg(script).arg(address).output())
            .await
            .expect("join")
            .expect("run python");
    let stdout = support::stdout_of(&output);
    for expected in [
        "watch list 1 resync True",
        "listed 1 SOURCE_COMPLETE",
        "background 1",
        r"output 'ready\r\nhello\r\nhello\r\n'",
        "after dispose 0",
        "watch removed REMOVAL_DISPOSED after revision True",
        "bad id INVALID_ARGUMENT",
        "reason holdfast INVALID_FIELD",
        "field session_id",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
}
