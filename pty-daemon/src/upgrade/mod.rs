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
use std::os::fd::{AsFd, AsRawFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use tokio::sync::watch;

use crate::error::{Error, Result};
use crate::listener::ClaimedSocket;
use crate::registry::Registry;
use crate::version::version;

/// How long the streams' goodbyes get to leave before the sessions freeze.
const GOODBYE: Duration = Duration::from_millis(5);

/// How long a freeze waits for every session's reading to stop.
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
            busy: AtomicBool::new(false),
        }
    }

    /// What a restored image learned of its upgrade.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// Becomes true while the daemon upgrades.
    pub fn upgrading(&self) -> watch::Receiver<bool> {
        self.upgrading.subscribe()
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
        // A moment for the goodbyes to leave: each open stream's "attach
        // again from offset N", and the Upgrade call's own answer.
        tokio::time::sleep(GOODBYE).await;
        match self.freeze_and_write(checked.program, switch_started).await {
            Ok(prepared) => self.commit(prepared),
            Err(error) => {
                self.registry.thaw();
                self.upgrading.send_replace(false);
                self.busy.store(false, Ordering::Release);
                error
            }
        }
    }

    async fn freeze_and_write(
        &self,
        program: PathBuf,
        switch_started: SystemTime,
    ) -> Result<Prepared> {
        let freezing = std::time::Instant::now();
        self.registry.freeze(FREEZE_PATIENCE).await?;
        let frozen = freezing.elapsed();
        let previous = File::open("/proc/self/exe")
            .map_err(|error| Error::io("opening this image's executable", error))?;
        let (listener_fd, lock_fd, socket_path) = {
            let socket = self.socket.lock().unwrap_or_else(PoisonError::into_inner);
            let (listener, lock) = socket.raw_fds();
            (listener, lock, socket.path.clone())
        };
        let (held, sessions) = self.registry.snapshot();
        let mut kept = vec![listener_fd, lock_fd, previous.as_raw_fd()];
        kept.extend(
            sessions
                .iter()
                .map(|session| session.master_fd)
                .filter(|fd| *fd >= 0),
        );
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
        let state = write_state(&state, &held)
            .map_err(|error| Error::io("writing the upgrade state", error))?;
        tracing::info!(freeze = ?frozen, state_bytes = state.metadata().map_or(0, |meta| meta.len()), written = ?freezing.elapsed() - frozen, "state handed on");
        kept.push(state.as_raw_fd());
        for fd in &kept {
            // SAFETY: each is open for as long as the prepared switch lives.
            let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(*fd) };
            exec::keep_across_exec(fd, true)
                .map_err(|error| Error::io("keeping a descriptor across exec", error))?;
        }
        let mut argv = vec![OsString::from("pty-daemon")];
        argv.extend(self.args.iter().cloned());
        argv.extend([
            RESTORE_FLAG.into(),
            state.as_raw_fd().to_string().into(),
            PREVIOUS_FLAG.into(),
            previous.as_raw_fd().to_string().into(),
        ]);
        Ok(Prepared {
            program,
            argv,
            kept,
            _state: state,
            _previous: previous,
        })
    }

    /// Execs the prepared switch. Returns only if the exec failed: the
    /// sessions are then thawed and the daemon goes on as it was.
    fn commit(&self, prepared: Prepared) -> Error {
        let error = exec::exec(&prepared.program, &prepared.argv);
        tracing::error!(%error, program = %prepared.program.display(), "the exec failed; going on as before");
        for fd in &prepared.kept {
            // SAFETY: as in `freeze_and_write`; the switch still holds them.
            let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(*fd) };
            let _ = exec::keep_across_exec(fd.as_fd(), false);
        }
        self.registry.thaw();
        self.upgrading.send_replace(false);
        self.busy.store(false, Ordering::Release);
        Error::UpgradeRefused(format!("executing {}: {error}", prepared.program.display()))
    }
}

/// The sealed state file: the message, then every ring, in the order of
/// the message's sessions.
fn write_state(
    state: &state::pb::DaemonState,
    held: &[Arc<crate::session::Session>],
) -> std::io::Result<File> {
    use std::io::Write;
    let file = exec::state_file()?;
    let mut writer = std::io::BufWriter::with_capacity(1 << 16, &file);
    writer.write_all(&state::header(state))?;
    for session in held {
        session.write_scrollback(&mut writer)?;
    }
    writer.flush()?;
    drop(writer);
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
