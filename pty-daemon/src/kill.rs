//! Ending a session.
//!
//! A signal goes to its process group. Then SIGKILL goes to whatever of it
//! is still alive when the grace period runs out.

use std::sync::Arc;
use std::time::Duration;

use holdfast_plumbing::proc_stat::{self, ProcStat};
use rustix::process::{Pid, Signal};

use crate::error::{Error, Result};
use crate::session::Session;

/// Grace period before SIGKILL when the caller gives none.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(1);
/// How long to wait for the reap after SIGKILL, which cannot be ignored.
const REAP_WAIT: Duration = Duration::from_secs(5);

/// Sends `signal` to the session's process group (its leader's).
///
/// A group that is already gone is not an error. A group this user may not
/// signal has its terminal hung up instead, as tmux's kill-session does.
/// That happens when its programs became another user (`sudo -i`, `su`).
/// The hang-up is SIGHUP to its leader, the only signal the kernel sends
/// there on our behalf. Once hung up, there is nothing more to send.
///
/// A leader reaped already is not signalled. Its pid, the group's id, may
/// be another's by now.
pub fn signal_group(session: &Session, signal: Signal) -> Result<()> {
    let pid = session.pid();
    let sent = session.while_running(|| rustix::process::kill_process_group(pid, signal));
    match sent.unwrap_or(Ok(())) {
        Ok(()) | Err(rustix::io::Errno::SRCH) => Ok(()),
        Err(rustix::io::Errno::PERM) if session.terminal_in_use() => {
            tracing::info!(
                session_id = %session.id(),
                signal = signal.as_raw(),
                "its programs run as another user; hanging up its terminal instead"
            );
            session
                .hang_up()
                .map(drop)
                .map_err(|error| Error::io("hanging up the terminal", error))
        }
        Err(rustix::io::Errno::PERM) => {
            tracing::warn!(
                session_id = %session.id(),
                signal = signal.as_raw(),
                "its programs run as another user, and its terminal is hung up or let go of: nothing more can be sent"
            );
            Ok(())
        }
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

/// Signals what is left of a session whose leader has exited.
///
/// That is every process still in its session: background jobs, children
/// that ignore the hang-up. The session's id was the leader's pid. While
/// any of them lives, the kernel cannot hand that pid out again. One of
/// them having started before the leader exited proves they are still this
/// session's. Each is signalled through a pidfd opened before its
/// membership is checked again, so a pid recycled meanwhile is never hit.
/// Returns how many were signalled.
pub fn signal_leftovers(session: &Session, signal: Signal) -> usize {
    match session.exited_at_boot() {
        Some(exited_at) => signal_session_members(session.pid(), exited_at, signal),
        None => 0,
    }
}

/// [`signal_leftovers`] of the session led by `leader`, reaped at
/// `exited_at` on the boot clock.
fn signal_session_members(leader: Pid, exited_at: Duration, signal: Signal) -> usize {
    let sid = leader.as_raw_nonzero().get();
    let member = |pid: i32| ProcStat::read(pid).filter(|stat| stat.session == sid);
    let members: Vec<(i32, ProcStat)> = proc_stat::pids()
        .filter_map(|pid| Some((pid, member(pid)?)))
        .collect();
    if !members.iter().any(|(_, stat)| stat.started <= exited_at) {
        // Nothing of ours is left; the id may be someone else's by now.
        return 0;
    }
    let mut signalled = 0;
    for (pid, _) in members {
        let Some(pid) = Pid::from_raw(pid) else {
            continue;
        };
        let Ok(pidfd) = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty())
        else {
            continue;
        };
        if member(pid.as_raw_nonzero().get()).is_some()
            && rustix::process::pidfd_send_signal(&pidfd, signal).is_ok()
        {
            signalled += 1;
        }
    }
    signalled
}

/// Signals the session's process group now, then SIGKILLs whatever is left
/// of it once `grace` has passed.
///
/// While the leader lives, SIGKILL goes to the group. Once the leader has
/// exited, SIGKILL goes to its leftovers: children that ignored the first
/// signal, background jobs. That holds whether it exited before this call
/// or within the grace period. Returns once the first signal is sent.
///
/// The scans of `/proc` for leftovers run on the blocking pool, never on a
/// request worker. They take a few milliseconds with a few hundred
/// processes.
pub async fn kill(session: &Arc<Session>, signal: Signal, grace: Duration) -> Result<()> {
    let leader_alive = session.exit_status().is_none();
    if leader_alive {
        signal_group(session, signal)?;
    } else {
        let exited = Arc::clone(session);
        let signalled = tokio::task::spawn_blocking(move || signal_leftovers(&exited, signal))
            .await
            .unwrap_or(0);
        if signalled == 0 {
            return Ok(());
        }
    }
    let deadline = tokio::time::Instant::now() + grace;
    let session = Arc::clone(session);
    tokio::spawn(async move {
        let leader = session.pid();
        if leader_alive
            && tokio::time::timeout_at(deadline, session.wait_exited())
                .await
                .is_err()
        {
            tracing::info!(session_id = %session.id(), ?grace, "still alive after the grace period; sending SIGKILL");
            if let Err(error) = signal_group(&session, Signal::KILL) {
                tracing::warn!(session_id = %session.id(), %error, "SIGKILL failed");
            }
            // Its leftovers can only be told apart once it has been reaped.
            if tokio::time::timeout(REAP_WAIT, session.wait_exited())
                .await
                .is_err()
            {
                tracing::warn!(session_id = %session.id(), "not reaped after SIGKILL");
                return;
            }
        }
        let Some(exited_at) = session.exited_at_boot() else {
            return;
        };
        // When the leader went at the first signal, what can be left is
        // in its group, or held the terminal when its exit closed it.
        // Neither is the usual end. Then this is done, without waiting out
        // the grace or scanning /proc.
        let group_left = || rustix::process::test_kill_process_group(leader).is_ok();
        let only_group = leader_alive && !session.terminal_in_use();
        if only_group && !group_left() {
            return;
        }
        let session_id = session.id().to_owned();
        // Not kept for the rest of the grace period. Its PTY and memory
        // go as soon as nothing else holds it.
        drop(session);
        tokio::time::sleep_until(deadline).await;
        // A live group may also be someone else's by now. The scan proves
        // membership before it signals.
        if only_group && !group_left() {
            return;
        }
        let killed = tokio::task::spawn_blocking(move || {
            signal_session_members(leader, exited_at, Signal::KILL)
        })
        .await
        .unwrap_or(0);
        if killed > 0 {
            tracing::info!(%session_id, killed, ?grace, "the leader is gone; sent SIGKILL to what it left running");
        }
    });
    Ok(())
}
