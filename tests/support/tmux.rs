//! tmux as the oracle and as the user's terminal: a server of its own, one
//! pane the whole window (no status line), read with `capture-pane` and
//! `display -p`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// tmux, if installed; under CI it must be (`.ci/run` installs it).
pub fn tmux() -> Option<PathBuf> {
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

/// A tmux server of its own with one window of `cols` × `rows`.
pub struct Tmux {
    tmux: PathBuf,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmux {
    /// Runs `argv` (as it is, no shell) in a new pane, with `env` set.
    pub fn start(
        tmux: &Path,
        (cols, rows): (u32, u32),
        env: &[(&str, &str)],
        argv: &[&str],
    ) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = dir.path().join("tmux.conf");
        // Output a program sends to the terminal it runs in is what is
        // tested: nothing of tmux's own may change it.
        std::fs::write(&config, "set -g status off\nset -g history-limit 10000\n").expect("config");
        let socket = dir.path().join("socket");
        let mut command = Command::new(tmux);
        command.arg("-S").arg(&socket).arg("-f").arg(&config).args([
            "new-session",
            "-d",
            "-x",
            &cols.to_string(),
            "-y",
            &rows.to_string(),
        ]);
        for (name, value) in env {
            command.args(["-e", &format!("{name}={value}")]);
        }
        let status = command.args(argv).status().expect("run tmux");
        assert!(status.success(), "tmux new-session");
        Self {
            tmux: tmux.to_path_buf(),
            socket,
            _dir: dir,
        }
    }

    fn run(&self, args: &[&str]) -> String {
        let output = Command::new(&self.tmux)
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("run tmux");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// What the pane shows, without the blank rows below the last used.
    pub fn capture(&self) -> Vec<String> {
        trimmed(
            self.run(&["capture-pane", "-p"])
                .lines()
                .map(|line| line.trim_end().to_owned())
                .collect(),
        )
    }

    /// The pane's history and screen, every line.
    pub fn history(&self) -> String {
        self.run(&["capture-pane", "-p", "-S", "-"])
    }

    /// A pane format (`#{alternate_on}`), as tmux expands it.
    pub fn display(&self, format: &str) -> String {
        self.run(&["display", "-p", format]).trim_end().to_owned()
    }

    /// Types `keys` (tmux key names: `C-]`, `Enter`), or text with `-l`.
    pub fn send_keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    /// Resizes the window.
    pub fn resize(&self, (cols, rows): (u32, u32)) {
        self.run(&[
            "resize-window",
            "-x",
            &cols.to_string(),
            "-y",
            &rows.to_string(),
        ]);
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
pub fn trimmed(mut lines: Vec<String>) -> Vec<String> {
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines
}
