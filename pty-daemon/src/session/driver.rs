//! The task that drives a session: it reads the terminal, paces itself to
//! slow attachers, and reaps the program.
//!
//! There is no thread per session: the master and a pidfd are registered
//! with the terminals' runtime, and this one task waits on both.

use std::io;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::SystemTime;

use rustix::process::{WaitId, WaitIdOptions};
use tokio::io::unix::AsyncFd;
use tokio::sync::broadcast;

use super::*;

impl Session {
    /// Reads output until the program exits, then reaps it.
    pub(super) async fn drive(
        self: Arc<Self>,
        master: Option<Arc<AsyncFd<OwnedFd>>>,
        pidfd: AsyncFd<OwnedFd>,
        exits: broadcast::Sender<ExitNotice>,
    ) {
        // A session resumed after its terminal was closed has none to read.
        let mut reading = master.is_some();
        // Set while reading waits for a slow attacher.
        let mut paused = false;
        loop {
            tokio::select! {
                ready = readable(master.as_deref()), if reading && !paused => match ready {
                    Ok(mut ready) => match self.read_some(ready.get_inner()) {
                        Ok(ReadOutcome::Drained) => ready.clear_ready(),
                        Ok(ReadOutcome::More) => tokio::task::yield_now().await,
                        Ok(ReadOutcome::Paced) => paused = true,
                        Ok(ReadOutcome::Closed) => reading = false,
                        Err(error) => {
                            tracing::warn!(session_id = %self.id, %error, "reading the PTY failed");
                            reading = false;
                        }
                    },
                    Err(error) => {
                        tracing::warn!(session_id = %self.id, %error, "polling the PTY failed");
                        reading = false;
                    }
                },
                () = self.wait_for_attachers(), if paused => paused = false,
                ready = pidfd.readable() => match ready {
                    Ok(_) => break,
                    Err(error) => {
                        tracing::error!(session_id = %self.id, %error, "polling the pidfd failed");
                        break;
                    }
                },
            }
        }
        {
            let _state = self.state();
            self.leader_exited.store(true, Ordering::Release);
        }
        if let (true, Some(master)) = (reading, &master) {
            self.read_what_is_left(master).await;
        }
        self.close_at_exit();
        drop(master);
        let exit = exit_status(&pidfd).await;
        tracing::debug!(session_id = %self.id, ?exit, "session exited");
        let _ = self
            .exited_at_boot
            .set(holdfast_plumbing::proc_stat::since_boot());
        {
            // Recorded before the pid is freed, under the lock that
            // signalling it by pid holds ([`Session::while_running`]). So
            // no signal meant for the program reaches a process that took
            // its pid after it.
            let mut state = self.state();
            state.exit = Some(exit);
            reap(&pidfd);
        }
        self.generation.bump();
        // Broadcast before `exited` wakes anyone. A stopping daemon ends
        // the exit watches once every session has exited, and each watch
        // must have had this exit by then. No watchers is fine: List
        // still reports the exit.
        let _ = exits.send(ExitNotice {
            session_id: self.id.clone(),
            status: exit,
        });
        self.exited.send_replace(true);
        self.changes.send_replace(());
    }

    /// Waits until no attacher that reading waits for is over half the ring
    /// behind.
    ///
    /// It waits for each laggard until it moves on or its own patience runs
    /// out. Then reading stops waiting for it.
    async fn wait_for_attachers(&self) {
        loop {
            let until = {
                let mut state = self.state();
                if !state.pacing() {
                    return;
                }
                state.pause(self.patience)
            };
            tokio::select! {
                () = self.progress.notified() => {}
                () = tokio::time::sleep_until(until) => {
                    self.state().stop_waiting_for_laggards(self.patience);
                    tracing::debug!(session_id = %self.id, "an attacher lags; reading on without it");
                }
            }
        }
    }

    /// Reads what the program left in the PTY when it exited.
    ///
    /// Reading is still paced to the attachers. It goes on until the PTY is
    /// empty or closed, or until [`FINAL_READ_BYTES`] have come. Something
    /// else holding the terminal may write on for ever.
    async fn read_what_is_left(&self, master: &AsyncFd<OwnedFd>) {
        let start = self.output_offset();
        while self.output_offset() - start < FINAL_READ_BYTES {
            match self.read_some(master.get_ref()) {
                Ok(ReadOutcome::More) => tokio::task::yield_now().await,
                Ok(ReadOutcome::Paced) => self.wait_for_attachers().await,
                Ok(ReadOutcome::Drained | ReadOutcome::Closed) | Err(_) => break,
            }
        }
    }

    /// Reads what the PTY has, up to a few buffers' worth.
    ///
    /// It never reads so much that it laps an attacher. It stops once one is
    /// over half the ring behind.
    fn read_some(&self, master: &OwnedFd) -> io::Result<ReadOutcome> {
        READ_BUFFER.with_borrow_mut(|buffer| {
            for _ in 0..READS_PER_WAKEUP {
                let room = self.state().room();
                if room == 0 {
                    return Ok(ReadOutcome::Paced);
                }
                let limit = buffer.len().min(room);
                match rustix::io::read(master, &mut buffer[..limit]) {
                    Ok(0) => return Ok(ReadOutcome::Closed),
                    Ok(read) => {
                        if self.append(&buffer[..read]) {
                            return Ok(ReadOutcome::Paced);
                        }
                    }
                    Err(rustix::io::Errno::AGAIN) => return Ok(ReadOutcome::Drained),
                    Err(rustix::io::Errno::INTR) => {}
                    // Linux answers EIO once every slave descriptor is closed.
                    Err(rustix::io::Errno::IO) => return Ok(ReadOutcome::Closed),
                    Err(error) => return Err(error.into()),
                }
            }
            Ok(ReadOutcome::More)
        })
    }

    /// Records output.
    ///
    /// Returns true when an attacher that reading waits for is over half the
    /// ring behind after this output.
    fn append(&self, output: &[u8]) -> bool {
        let (retitled, pacing) = {
            let mut state = self.state();
            state.scrollback.push(output);
            self.produced
                .store(state.scrollback.end_offset(), Ordering::Release);
            let retitled = match state.titles.feed(output) {
                Some(title) if title != state.title => {
                    state.title = title;
                    state.title_version += 1;
                    true
                }
                _ => false,
            };
            // In force by the end of this chunk, as near as is known.
            let (modes, end, start) = (
                state.titles.modes(),
                state.scrollback.end_offset(),
                state.scrollback.start_offset(),
            );
            state.mode_changes.note(end, modes, start);
            (retitled, state.pacing())
        };
        if retitled {
            self.generation.bump();
        }
        self.changes.send_replace(());
        pacing
    }
}

enum ReadOutcome {
    /// The PTY has nothing more for now.
    Drained,
    /// There may be more; yield and come back.
    More,
    /// An attacher is over half the ring behind. Wait for it before
    /// reading on.
    Paced,
    /// No process holds the slave side any more.
    Closed,
}

/// Waits until `master` is readable; never, without one.
async fn readable(
    master: Option<&AsyncFd<OwnedFd>>,
) -> io::Result<tokio::io::unix::AsyncFdReadyGuard<'_, OwnedFd>> {
    match master {
        Some(master) => master.readable().await,
        None => std::future::pending().await,
    }
}

/// The exit status of a program that has exited, through its pidfd.
///
/// It leaves the program to be reaped ([`reap`]). Until then its pid is not
/// free.
async fn exit_status(pidfd: &AsyncFd<OwnedFd>) -> ExitStatus {
    loop {
        match wait(pidfd, WaitIdOptions::NOWAIT) {
            Ok(Some(status)) => {
                return ExitStatus {
                    code: status.exit_status(),
                    signal: status.terminating_signal(),
                    at: SystemTime::now(),
                };
            }
            Ok(None) => {
                // Not exited after all; wait for the pidfd again.
                if let Ok(mut ready) = pidfd.readable().await {
                    ready.clear_ready();
                }
            }
            Err(error) => {
                tracing::error!(%error, "reading a session's exit status failed");
                return ExitStatus {
                    code: None,
                    signal: None,
                    at: SystemTime::now(),
                };
            }
        }
    }
}

/// Reaps a program whose exit [`exit_status`] has read, freeing its pid.
fn reap(pidfd: &AsyncFd<OwnedFd>) {
    if let Err(error) = wait(pidfd, WaitIdOptions::empty()) {
        tracing::error!(%error, "reaping a session failed");
    }
}

/// `waitid` for the exit of the program behind `pidfd`, without waiting
/// for it (`NOHANG`).
///
/// `options` are added besides. It is tried again if a signal interrupts
/// it.
fn wait(
    pidfd: &AsyncFd<OwnedFd>,
    options: WaitIdOptions,
) -> rustix::io::Result<Option<rustix::process::WaitIdStatus>> {
    loop {
        match rustix::process::waitid(
            WaitId::PidFd(pidfd.get_ref().as_fd()),
            WaitIdOptions::EXITED | WaitIdOptions::NOHANG | options,
        ) {
            Err(rustix::io::Errno::INTR) => {}
            answer => return answer,
        }
    }
}
