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
    let deadline = Instant::now() + PATIENCE;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) | Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{} did not answer the probe within {PATIENCE:?}",
                    candidate.display()
                ));
            }
        }
    };
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
