//! The peer: a private tmux server.
//!
//! Its commands run as processes. A control-mode client (`tmux -C`) speaks
//! the line protocol.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use holdfast_plumbing::proc_stat::ProcStat;

pub struct Tmux {
    _dir: tempfile::TempDir,
    socket: PathBuf,
}

impl Tmux {
    /// Installs tmux from Debian's packages when it is missing (as root).
    pub fn ensure_installed() -> Result<()> {
        if Command::new("tmux").arg("-V").output().is_ok() {
            return Ok(());
        }
        let status = Command::new("apt-get")
            .args(["install", "-y", "-qq", "tmux"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null())
            .status()
            .context("tmux is missing and apt-get could not run")?;
        if !status.success() {
            bail!("tmux is missing and `apt-get install tmux` failed");
        }
        Ok(())
    }

    pub fn version() -> String {
        Command::new("tmux")
            .arg("-V")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default()
    }

    /// A new server with one idle session, `base`.
    pub fn start() -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("holdfast-bench-tmux")
            .tempdir()?;
        let tmux = Self {
            socket: dir.path().join("tmux.sock"),
            _dir: dir,
        };
        tmux.new_session("base", "sleep 86400")?;
        Ok(tmux)
    }

    pub fn command(&self) -> Command {
        let mut command = Command::new("tmux");
        command
            .arg("-S")
            .arg(&self.socket)
            .args(["-f", "/dev/null"]);
        command
    }

    /// Runs one tmux command as a process, as a script would.
    pub fn run(&self, args: &[&str]) -> Result<String> {
        let output = self.command().args(args).output()?;
        if !output.status.success() {
            bail!("tmux {args:?}: {}", String::from_utf8_lossy(&output.stderr));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// A detached 80×24 session running `command` (a shell command line).
    pub fn new_session(&self, name: &str, command: &str) -> Result<()> {
        self.run(&[
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            "80",
            "-y",
            "24",
            command,
        ])?;
        Ok(())
    }

    /// Waits, up to 100 ms, until the server is no longer running on a
    /// CPU: tmux goes on working after it has answered (a client's exit, a
    /// new session's shell), and on two CPUs that work would otherwise be
    /// timed as part of the next subject's request. Polls every 100 µs,
    /// asleep in between so the wait itself takes no CPU from tmux.
    pub fn settle(&self, server_pid: i32) {
        let deadline = Instant::now() + Duration::from_millis(100);
        let mut idle_reads = 0;
        while idle_reads < 3 && Instant::now() < deadline {
            let running = ProcStat::read(server_pid).is_some_and(|stat| stat.state == 'R');
            idle_reads = if running { 0 } else { idle_reads + 1 };
            std::thread::sleep(Duration::from_micros(100));
        }
    }

    pub fn server_pid(&self) -> Result<i32> {
        Ok(self
            .run(&["display-message", "-p", "-t", "base", "#{pid}"])?
            .trim()
            .parse()?)
    }

    /// A control-mode client attached to `session`.
    pub fn control(&self, session: &str) -> Result<Control> {
        let mut child = self
            .command()
            .args(["-C", "attach-session", "-t", session])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let mut control = Control {
            stdin: child.stdin.take().context("stdin")?,
            lines: BufReader::new(child.stdout.take().context("stdout")?),
            child,
        };
        // The attach itself is answered with an empty block.
        control.reply(false)?;
        Ok(control)
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.command().arg("kill-server").output();
    }
}

pub struct Control {
    child: Child,
    stdin: ChildStdin,
    lines: BufReader<ChildStdout>,
}

impl Control {
    pub fn send(&mut self, command: &str) -> Result<()> {
        self.stdin.write_all(command.as_bytes())?;
        self.stdin.write_all(b"\n")?;
        self.stdin.flush()?;
        Ok(())
    }

    pub fn line(&mut self) -> Result<String> {
        let mut line = String::new();
        if self.lines.read_line(&mut line)? == 0 {
            bail!("tmux control client ended");
        }
        line.truncate(line.trim_end_matches('\n').len());
        Ok(line)
    }

    /// Reads up to the end of the next reply block (skipping notifications)
    /// and returns its lines; `mine` skips blocks not caused by this client.
    pub fn reply(&mut self, mine: bool) -> Result<Vec<String>> {
        loop {
            let line = self.line()?;
            let Some(rest) = line.strip_prefix("%begin ") else {
                continue;
            };
            let from_me = rest.ends_with(" 1");
            let mut body = Vec::new();
            loop {
                let line = self.line()?;
                if line.starts_with("%end ") || line.starts_with("%error ") {
                    if line.starts_with("%error ") {
                        bail!("tmux: {}", body.join("\n"));
                    }
                    break;
                }
                body.push(line);
            }
            if from_me || !mine {
                return Ok(body);
            }
        }
    }

    /// Sends a command and waits for its reply.
    pub fn command(&mut self, command: &str) -> Result<Vec<String>> {
        self.send(command)?;
        self.reply(true)
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The bytes an `%output` line carries (tmux escapes some as octal `\ooo`).
pub fn output_bytes(line: &str) -> usize {
    let Some(data) = line
        .strip_prefix("%output ")
        .and_then(|rest| rest.split_once(' ').map(|(_, data)| data))
    else {
        return 0;
    };
    let escapes = data.matches('\\').count();
    data.len() - 3 * escapes
}
