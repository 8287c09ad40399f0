//! `GetScreen` and `holdfast screen` against tmux as the oracle: the same
//! program, at the same size, in a holdfast session and in a tmux pane;
//! the screen holdfast draws must be the text `tmux capture-pane -p` shows.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use holdfast_api::proto::host::v1 as pb;
use support::host::*;
use support::*;

const COLS: u32 = 80;
const ROWS: u32 = 24;

/// tmux, if installed; under CI it must be (`.ci/run` installs it).
fn tmux() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("tmux"))
            .find(|candidate| candidate.is_file())
    });
    if found.is_none() {
        assert!(std::env::var_os("CI").is_none(), "CI must install tmux");
        eprintln!("skipped: install tmux (Debian's tmux), as .ci/run does");
    }
    found
}

/// A tmux server of its own, with no status line, so a pane is the whole
/// window.
struct Tmux {
    tmux: PathBuf,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmux {
    fn start(tmux: PathBuf, argv: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = dir.path().join("tmux.conf");
        std::fs::write(&config, "set -g status off\n").expect("config");
        let socket = dir.path().join("socket");
        let status = Command::new(&tmux)
            .arg("-S")
            .arg(&socket)
            .arg("-f")
            .arg(&config)
            .args([
                "new-session",
                "-d",
                "-x",
                &COLS.to_string(),
                "-y",
                &ROWS.to_string(),
            ])
            // Several arguments: tmux runs them as they are, no shell.
            .args(argv)
            .status()
            .expect("run tmux");
        assert!(status.success(), "tmux new-session");
        Self {
            tmux,
            socket,
            _dir: dir,
        }
    }

    /// What the pane shows, without the blank rows below the last used.
    fn capture(&self) -> Vec<String> {
        let output = Command::new(&self.tmux)
            .arg("-S")
            .arg(&self.socket)
            .args(["capture-pane", "-p"])
            .output()
            .expect("capture-pane");
        trimmed(
            String::from_utf8_lossy(&output.stdout)
                .lines()
                .map(|line| line.trim_end().to_owned())
                .collect(),
        )
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new(&self.tmux)
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .status();
    }
}

/// `lines` without the blank ones at the end.
fn trimmed(mut lines: Vec<String>) -> Vec<String> {
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines
}

/// Runs `argv` in holdfast and in tmux, and waits until holdfast's screen
/// is what tmux shows (both settle as the program draws).
async fn same_screen_as_tmux(
    host: &mut HostService,
    workspace: &str,
    tmux: &Path,
    argv: &[&str],
) -> (pb::GetScreenResponse, Vec<String>) {
    let mut request = session_request(workspace, argv);
    (request.cols, request.rows) = (COLS, ROWS);
    let session = host.create_session(request).await;
    let oracle = Tmux::start(tmux.to_path_buf(), argv);
    let terminals = host.terminals.clone();
    eventually("holdfast's screen to be tmux's", || {
        let mut terminals = terminals.clone();
        let request = pb::GetScreenRequest {
            session_id: session.session_id.clone(),
        };
        let oracle = &oracle;
        async move {
            let screen = terminals.get_screen(request).await.ok()?.into_inner();
            let shown = oracle.capture();
            (!shown.is_empty() && trimmed(screen.lines.clone()) == shown).then_some((screen, shown))
        }
    })
    .await
}

#[tokio::test]
async fn the_screen_is_what_tmux_shows() {
    let Some(tmux) = tmux() else { return };
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("screens").await.workspace_id;

    // Text placed by cursor moves, attributes, a cleared line.
    let script = "printf '\\033[2J\\033[3;5Hhello\\033[10;1Hworld \\033[1mbold\\033[0m\\033[12;1Hgone\\033[12;1H\\033[K\\033[7;40Hend'; sleep 600";
    let (screen, shown) =
        same_screen_as_tmux(&mut host, &workspace, &tmux, &["sh", "-c", script]).await;
    assert_eq!(shown[2], "    hello");
    assert!(screen.complete && !screen.alternate_screen);
    assert_eq!((screen.cols, screen.rows), (COLS, ROWS));

    // A full-screen program: less on a long file, in the alternate screen.
    let file = home.dir.path().join("long.txt");
    let text: String = (1..=200)
        .map(|n| format!("line {n} of the file\n"))
        .collect();
    std::fs::write(&file, text).expect("write the file");
    let file = file.to_str().expect("utf-8");
    let less = ["env", "TERM=xterm-256color", "LESSHISTFILE=-", "less", file];
    let (screen, shown) = same_screen_as_tmux(&mut host, &workspace, &tmux, &less).await;
    assert!(
        screen.alternate_screen,
        "less draws in the alternate screen"
    );
    assert_eq!(shown[0], "line 1 of the file");

    // `holdfast screen` prints that text; `--ansi` draws it.
    let session = host.list(&workspace).await.sessions.pop().expect("less");
    let printed = Command::new(binary("holdfast"))
        .args(["--addr", &host.address, "screen", &session.session_id])
        .output()
        .expect("run holdfast");
    let printed = stdout_of(&printed);
    assert_eq!(printed.lines().collect::<Vec<_>>(), shown);
    let drawn = Command::new(binary("holdfast"))
        .args([
            "--addr",
            &host.address,
            "screen",
            "--ansi",
            &session.session_id,
        ])
        .output()
        .expect("run holdfast");
    assert!(drawn.status.success());
    assert!(drawn.stdout.starts_with(b"\x1b["), "escape sequences");
}

#[tokio::test]
async fn a_screen_of_a_missing_session_is_refused() {
    let home = HostHome::new();
    let host = home.start(&[]).await;
    let refused = host
        .terminals
        .clone()
        .get_screen(pb::GetScreenRequest {
            session_id: uuid::Uuid::new_v4().to_string(),
        })
        .await;
    expect_status(refused, tonic::Code::NotFound, "session");
    let refused = host
        .terminals
        .clone()
        .get_screen(pb::GetScreenRequest {
            session_id: "no".into(),
        })
        .await;
    expect_status(refused, tonic::Code::InvalidArgument, "session_id");
}
