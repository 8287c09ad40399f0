//! Upgrading the daemon in place: a new program image takes over every
//! session, with the same pid.
//!
//! The daemon checks the candidate first (`probe.rs`). It then stops taking
//! work, freezes every session, writes its whole state to a sealed memfd
//! (`state.rs`), keeps the descriptors that matter open across exec (the
//! listening socket and its lock, every terminal, the state, its own
//! executable), and execs the candidate (`exec.rs`). The children stay its
//! children, so their exits are still reaped. The listening socket is never
//! closed: a client that connects meanwhile waits in its backlog. A new
//! image that cannot restore execs the previous one again with the same
//! state (`restore.rs`).

pub mod exec;
pub mod probe;
pub mod restore;
pub mod state;

use std::ffi::OsString;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use tokio::sync::watch;

use crate::error::{Error, Result};
use crate::listener::ClaimedSocket;
use crate::registry::Registry;
use crate::version::version;

/// How long the streams' goodbyes get to leave before the exec.
///
/// A goodbye lost in the exec costs a client nothing: its connection is
/// cut instead, and it attaches again from the same offset.
const GOODBYE: Duration = Duration::from_millis(2);

/// How long a freeze waits for spawns under way.
const FREEZE_PATIENCE: Duration = Duration::from_secs(2);

/// The flag naming the state file of a restoring image.
pub const RESTORE_FLAG: &str = "--restore-state-fd";
/// The flag naming the executable a restoring image goes back to.
pub const PREVIOUS_FLAG: &str = "--previous-image-fd";
/// The flag of an image that is itself a rollback: it has none to go back to.
pub const ROLLBACK_FLAG: &str = "--rollback";

/// What a restored image learned of the upgrade that started it.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// Upgrades this daemon process went through.
    pub upgrades: u32,
    /// The version before the last one, if there was an upgrade.
    pub previous_version: String,
    /// How long the last switch took, from the old image stopping work to
    /// this one being ready to serve.
    pub last_switch: Option<Duration>,
}

/// Upgrades of this daemon process.
pub struct Upgrader {
    registry: Arc<Registry>,
    socket: Arc<Mutex<ClaimedSocket>>,
    started_at: SystemTime,
    history: History,
    /// Where this image was started from: what SIGUSR2 execs.
    executable: PathBuf,
    /// This image's arguments, without the flags of a restore.
    args: Vec<OsString>,
    /// True from the moment work stops until the exec, or its failure.
    upgrading: watch::Sender<bool>,
    /// True once the state is written, until the exec or its failure: open
    /// streams then end, saying where to attach again.
    ///
    /// Not sooner: a client attaching again would only be refused, over
    /// and over, by the image that is busy handing on. Its streams stay
    /// open, quiet, while the sessions are frozen.
    leaving: watch::Sender<bool>,
    /// One upgrade at a time.
    busy: AtomicBool,
}

/// A candidate that passed its probe.
pub struct Checked {
    program: PathBuf,
    /// The version the candidate reported.
    pub new_version: String,
}

/// A switch ready to exec: everything is written and kept open.
struct Prepared {
    program: PathBuf,
    argv: Vec<OsString>,
    /// The descriptors whose close-on-exec was cleared, to set again if the
    /// exec fails.
    kept: Vec<std::os::fd::RawFd>,
    _state: File,
    _previous: File,
}

impl Upgrader {
    /// Upgrades for the daemon serving `registry` on `socket`.
    pub fn new(
        registry: Arc<Registry>,
        socket: Arc<Mutex<ClaimedSocket>>,
        started_at: SystemTime,
        history: History,
    ) -> Self {
        let executable =
            std::env::current_exe().unwrap_or_else(|_| PathBuf::from("/proc/self/exe"));
        Self {
            registry,
            socket,
            started_at,
            history,
            executable,
            args: own_args(),
            upgrading: watch::Sender::new(false),
            leaving: watch::Sender::new(false),
            busy: AtomicBool::new(false),
        }
    }

    /// What a restored image learned of its upgrade.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// True while the daemon upgrades: it then accepts no connection.
    pub fn upgrading(&self) -> watch::Receiver<bool> {
        self.upgrading.subscribe()
    }

    /// Becomes true when open streams are to end, just before the exec.
    pub fn leaving(&self) -> watch::Receiver<bool> {
        self.leaving.subscribe()
    }

    /// Refuses a call while the daemon upgrades.
    pub fn check_open(&self) -> Result<()> {
        if *self.upgrading.borrow() {
            return Err(Error::Upgrading {
                resume: String::new(),
            });
        }
        Ok(())
    }

    /// Checks `candidate` (this image's own executable if `None`) in probe
    /// mode. Nothing changes if it fails; on success, [`Upgrader::switch`]
    /// must follow, and no other upgrade starts meanwhile.
    pub async fn check(&self, candidate: Option<PathBuf>) -> Result<Checked> {
        if self.busy.swap(true, Ordering::AcqRel) {
            return Err(Error::UpgradeRefused("another upgrade is under way".into()));
        }
        let program = candidate.unwrap_or_else(|| self.executable.clone());
        let probed = program.clone();
        let probing = std::time::Instant::now();
        let checked = tokio::task::spawn_blocking(move || probe::check(&probed))
            .await
            .map_err(|error| Error::UpgradeRefused(error.to_string()))
            .and_then(|checked| checked.map_err(Error::UpgradeRefused));
        match checked {
            Ok(new_version) => {
                tracing::info!(from = version(), to = %new_version, program = %program.display(), probe = ?probing.elapsed(), "upgrading in place");
                Ok(Checked {
                    program,
                    new_version,
                })
            }
            Err(error) => {
                self.busy.store(false, Ordering::Release);
                Err(error)
            }
        }
    }

    /// Stops taking work, freezes every session, writes the state and execs
    /// the checked candidate. Returns only if the upgrade did not happen:
    /// everything then goes on as before.
    pub async fn switch(&self, checked: Checked) -> Error {
        let switch_started = SystemTime::now();
        self.upgrading.send_replace(true);
        let error = match self.freeze_and_write(checked.program, switch_started).await {
            Ok((prepared, _held)) => {
                // A moment for the goodbyes to leave: each open stream's
                // "attach again from offset N". The terminals stay held
                // until the exec.
                let leaving = std::time::Instant::now();
                self.leaving.send_replace(true);
                match prepared.keep_across_exec() {
                    Ok(()) => {
                        tokio::time::sleep(GOODBYE.saturating_sub(leaving.elapsed())).await;
                        self.commit(prepared)
                    }
                    Err(error) => error,
                }
            }
            Err(error) => error,
        };
        self.registry.thaw();
        self.leaving.send_replace(false);
        self.upgrading.send_replace(false);
        self.busy.store(false, Ordering::Release);
        error
    }

    async fn freeze_and_write(
        &self,
        program: PathBuf,
        switch_started: SystemTime,
    ) -> Result<(Prepared, crate::registry::TerminalsHeld)> {
        let freezing = std::time::Instant::now();
        let terminals = self.registry.freeze(FREEZE_PATIENCE).await?;
        let frozen = freezing.elapsed();
        let previous = File::open("/proc/self/exe")
            .map_err(|error| Error::io("opening this image's executable", error))?;
        let (listener_fd, lock_fd, socket_path) = {
            let socket = self.socket.lock().unwrap_or_else(PoisonError::into_inner);
            let (listener, lock) = socket.raw_fds();
            (listener, lock, socket.path.clone())
        };
        let sessions = self.registry.snapshot();
        let mut kept = vec![listener_fd, lock_fd, previous.as_raw_fd()];
        kept.extend(sessions.iter().flat_map(|session| {
            let master = (session.master_fd >= 0).then_some(session.master_fd);
            master.into_iter().chain(session.scrollback_fd)
        }));
        let state = state::pb::DaemonState {
            format: state::FORMAT,
            version: version().to_owned(),
            started_at_unix_micros: state::micros(self.started_at),
            generation: self.registry.generation(),
            listener_fd,
            lock_fd,
            socket_path: socket_path.to_string_lossy().into_owned(),
            previous_executable_fd: previous.as_raw_fd(),
            previous_argv: Vec::new(),
            switch_started_at_unix_micros: state::micros(switch_started),
            upgrades: self.history.upgrades + 1,
            sessions,
        };
        let state =
            write_state(&state).map_err(|error| Error::io("writing the upgrade state", error))?;
        tracing::info!(freeze = ?frozen, state_bytes = state.metadata().map_or(0, |meta| meta.len()), written = ?freezing.elapsed() - frozen, "state handed on");
        kept.push(state.as_raw_fd());
        let mut argv = vec![OsString::from("pty-daemon")];
        argv.extend(self.args.iter().cloned());
        argv.extend([
            RESTORE_FLAG.into(),
            state.as_raw_fd().to_string().into(),
            PREVIOUS_FLAG.into(),
            previous.as_raw_fd().to_string().into(),
        ]);
        Ok((
            Prepared {
                program,
                argv,
                kept,
                _state: state,
                _previous: previous,
            },
            terminals,
        ))
    }

    /// Execs the prepared switch. Returns only if the exec failed, with the
    /// descriptors closed on exec again.
    fn commit(&self, prepared: Prepared) -> Error {
        let error = exec::exec(&prepared.program, &prepared.argv);
        tracing::error!(%error, program = %prepared.program.display(), "the exec failed; going on as before");
        prepared.close_on_exec();
        Error::UpgradeRefused(format!("executing {}: {error}", prepared.program.display()))
    }
}

impl Prepared {
    /// Clears close-on-exec on every descriptor the next image takes over;
    /// sets it again on all of them if one fails.
    fn keep_across_exec(&self) -> Result<()> {
        for fd in &self.kept {
            // SAFETY: each is open for as long as the prepared switch lives.
            let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(*fd) };
            if let Err(error) = exec::keep_across_exec(fd, true) {
                self.close_on_exec();
                return Err(Error::io("keeping a descriptor across exec", error));
            }
        }
        Ok(())
    }

    /// Sets close-on-exec again on every descriptor: no exec follows.
    fn close_on_exec(&self) {
        for fd in &self.kept {
            // SAFETY: as in `keep_across_exec`.
            let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(*fd) };
            let _ = exec::keep_across_exec(fd, false);
        }
    }
}

/// The sealed state file. Every ring stays in its own memfd, so it holds
/// the message alone.
fn write_state(state: &state::pb::DaemonState) -> std::io::Result<File> {
    use std::io::Write;
    let mut file = exec::state_file()?;
    file.write_all(&state::header(state))?;
    exec::seal(&file)?;
    Ok(file)
}

/// This image's arguments, without the flags of a restore.
///
/// `--daemonize` stays: a restoring image ignores it (it is detached
/// already), and the host-service finds a daemon of its socket by it.
fn own_args() -> Vec<OsString> {
    let mut args = std::env::args_os().skip(1);
    let mut own = Vec::new();
    while let Some(arg) = args.next() {
        if arg == RESTORE_FLAG || arg == PREVIOUS_FLAG {
            args.next();
        } else if arg != ROLLBACK_FLAG {
            own.push(arg);
        }
    }
    own
}
