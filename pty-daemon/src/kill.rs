//! Ending a session: a signal to its process group, then SIGKILL if it is
//! still alive when the grace period runs out.

use std::sync::Arc;
use std::time::Duration;

use rustix::process::{Pid, Signal};

use crate::error::{Error, Result};
use crate::session::Session;

/// Grace period before SIGKILL when the caller gives none.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(1);

/// Sends `signal` to the process group led by `pid`. A group that is
/// already gone is not an error.
pub fn signal_group(pid: Pid, signal: Signal) -> Result<()> {
    match rustix::process::kill_process_group(pid, signal) {
        Ok(()) | Err(rustix::io::Errno::SRCH) => Ok(()),
        Err(error) => Err(Error::io(
            format!(
                "sending signal {} to process group {}",
                signal.as_raw(),
                pid.as_raw_nonzero()
            ),
            error,
        )),
    }
}

/// Signals the session's process group now and, unless it exits within
/// `grace`, sends SIGKILL to the group. Returns once the first signal is sent.
pub fn kill(session: &Arc<Session>, signal: Signal, grace: Duration) -> Result<()> {
    if session.exit_status().is_some() {
        return Ok(());
    }
    signal_group(session.pid(), signal)?;
    if signal == Signal::KILL {
        return Ok(());
    }
    let session = Arc::clone(session);
    tokio::spawn(async move {
        if tokio::time::timeout(grace, session.wait_exited())
            .await
            .is_err()
        {
            tracing::info!(session_id = %session.id(), ?grace, "still alive after the grace period; sending SIGKILL");
            if let Err(error) = signal_group(session.pid(), Signal::KILL) {
                tracing::warn!(session_id = %session.id(), %error, "SIGKILL failed");
            }
        }
    });
    Ok(())
}
