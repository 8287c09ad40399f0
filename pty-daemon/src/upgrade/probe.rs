//! Checks a candidate binary before the daemon commits to it.
//!
//! The candidate runs in probe mode: it prints its version and the state
//! formats it reads, and exits. A file that is missing, is not a holdfast
//! daemon, does not answer within a second, or cannot read this image's
//! state format is refused, and nothing changes.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::upgrade::state;

/// How long a candidate gets to answer the probe.
pub const PATIENCE: Duration = Duration::from_secs(1);

/// The flag that puts a daemon in probe mode.
pub const FLAG: &str = "--upgrade-probe";

/// The first word of a probe's answer.
const MAGIC: &str = "holdfast-pty-daemon";

/// What the probe prints: `holdfast-pty-daemon VERSION formats 1,2`.
pub fn answer(version: &str) -> String {
    let formats: Vec<String> = state::READABLE_FORMATS.iter().map(u32::to_string).collect();
    format!("{MAGIC} {version} formats {}", formats.join(","))
}

/// Whether `child` exits within `patience`.
///
/// It waits on a pidfd, so the answer comes the moment the child exits;
/// polling would add half its interval to every upgrade.
fn exits_within(child: &std::process::Child, patience: Duration) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec};
    use rustix::process::{Pid, PidfdFlags};
    let Some(pid) = i32::try_from(child.id()).ok().and_then(Pid::from_raw) else {
        return false;
    };
    let Ok(pidfd) = rustix::process::pidfd_open(pid, PidfdFlags::empty()) else {
        return false;
    };
    let deadline = Instant::now() + patience;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let timeout = Timespec::try_from(left).unwrap_or(Timespec {
            tv_sec: 1,
            tv_nsec: 0,
        });
        let mut fds = [PollFd::new(&pidfd, PollFlags::IN)];
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(0) => return false,
            Ok(_) => return true,
            Err(rustix::io::Errno::INTR) if !left.is_zero() => {}
            Err(_) => return false,
        }
    }
}

/// Runs `candidate` in probe mode; its version, if it can take over.
pub fn check(candidate: &Path) -> Result<String, String> {
    let mut child = Command::new(candidate)
        // The host-service's binary is the daemon when called so.
        .arg0("pty-daemon")
        .arg(FLAG)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|error| format!("{} cannot be run: {error}", candidate.display()))?;
    if !exits_within(&child, PATIENCE) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(format!(
            "{} did not answer the probe within {PATIENCE:?}",
            candidate.display()
        ));
    }
    let status = child
        .wait()
        .map_err(|error| format!("waiting for the probe of {}: {error}", candidate.display()))?;
    let mut output = String::new();
    if let Some(stdout) = child.stdout.take() {
        let _ = stdout.take(4096).read_to_string(&mut output);
    }
    let refused = |why: &str| {
        format!(
            "{} is not a holdfast daemon that can take over: {why}",
            candidate.display()
        )
    };
    if !status.success() {
        return Err(refused(&format!("its probe exited {status}")));
    }
    let mut words = output.split_whitespace();
    if words.next() != Some(MAGIC) {
        return Err(refused("it did not answer the probe"));
    }
    let version = words
        .next()
        .ok_or_else(|| refused("no version"))?
        .to_owned();
    let formats = (words.next() == Some("formats"))
        .then(|| words.next())
        .flatten()
        .ok_or_else(|| refused("no state formats"))?;
    let readable = formats
        .split(',')
        .filter_map(|format| format.parse::<u32>().ok())
        .any(|format| format == state::FORMAT);
    if !readable {
        return Err(refused(&format!(
            "it reads state formats {formats}, not format {}",
            state::FORMAT
        )));
    }
    Ok(version)
}
