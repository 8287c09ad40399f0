//! A session handed from one daemon image to the next.
//!
//! The old image freezes every session (its driver stops before another
//! read), writes each as a state message, and execs. The new image builds
//! the same session from the message and the descriptors it kept, and
//! resumes it: reading the terminal again, watching the program through a
//! new pidfd, draining the input that waited.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use prost::Message;
use rustix::process::{Pid, PidfdFlags};

use super::*;
use crate::upgrade::state::{self, pb as saved};

impl Session {
    /// The session as the state format holds it.
    ///
    /// Call only while frozen. Its terminal's and its ring's descriptors are
    /// named, not closed: the caller keeps them open across the exec.
    pub fn snapshot(&self) -> saved::Session {
        let fixed = holdfast_api::proto::daemon::v1::Session::decode(self.listing.as_ref())
            .unwrap_or_default();
        let state = self.state();
        let master_fd = self
            .master()
            .as_ref()
            .map_or(-1, |master| master.get_ref().as_raw_fd());
        saved::Session {
            session_id: self.id.clone(),
            pid: self.pid.as_raw_nonzero().get(),
            argv: fixed.argv,
            cwd: fixed.cwd,
            created_at_unix_micros: state::micros(self.created_at),
            cols: state.cols.into(),
            rows: state.rows.into(),
            title: state.title.clone(),
            master_fd,
            held_when_closed: self.held_when_closed.load(Ordering::Acquire),
            leader_exited: self.leader_exited.load(Ordering::Acquire),
            scrollback_start: state.scrollback.start_offset(),
            scrollback_len: state.scrollback.len() as u64,
            scrollback_fd: Some(state.scrollback.file().as_raw_fd()),
            scrollback_capacity: state.scrollback.capacity() as u64,
            input_waiting: self.input().contents(),
            exit: state.exit.map(|exit| saved::Exit {
                code: exit.code,
                signal: exit.signal,
                at_unix_micros: state::micros(exit.at),
            }),
            exited_at_boot_micros: self
                .exited_at_boot
                .get()
                .map_or(0, |at| u64::try_from(at.as_micros()).unwrap_or(u64::MAX)),
        }
    }

    /// The session `saved` describes, its terminal the descriptor it names.
    ///
    /// Its scrollback is the memfd it names, or else `trailing`, the bytes
    /// that followed the message. Must run inside the runtime that is to
    /// read the terminal. Call [`Session::resume`] once the session is
    /// findable.
    ///
    /// # Safety
    ///
    /// `saved.master_fd`, unless -1, and `saved.scrollback_fd`, if set,
    /// must be open descriptors that nothing else owns: the session takes
    /// them over.
    pub unsafe fn restore(
        saved: saved::Session,
        trailing: Option<Vec<u8>>,
        settings: &SessionSettings,
        (generation, frozen): (Generation, watch::Receiver<bool>),
    ) -> Result<Arc<Self>> {
        let pid = Pid::from_raw(saved.pid)
            .ok_or_else(|| Error::io("restoring a session", io::Error::other("no pid")))?;
        let master = match saved.master_fd {
            -1 => None,
            fd => {
                // SAFETY: the caller hands the descriptor over. It stays
                // open across exec until the restore is done
                // (`Handover::finish`).
                let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
                let master = register(fd, Interest::READABLE | Interest::WRITABLE)
                    .map_err(|error| Error::io("registering a restored terminal", error))?;
                Some(Arc::new(master))
            }
        };
        let created_at = state::from_micros(saved.created_at_unix_micros);
        let listing = crate::listing::encode_fixed(
            &saved.session_id,
            pid.as_raw_nonzero().get() as u32,
            saved.argv,
            saved.cwd,
            created_at,
        );
        let exit = saved.exit.map(|exit| ExitStatus {
            code: exit.code,
            signal: exit.signal,
            at: state::from_micros(exit.at_unix_micros),
        });
        let start = saved.scrollback_start;
        let scrollback = match (saved.scrollback_fd, trailing) {
            (_, Some(bytes)) => Scrollback::restored(settings.scrollback_bytes, start, &bytes),
            (Some(fd), None) => {
                // SAFETY: the caller hands the descriptor over; as the
                // terminal's, it stays open across exec for now.
                let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
                let capacity = usize::try_from(saved.scrollback_capacity).unwrap_or(0);
                let end = start.saturating_add(saved.scrollback_len);
                Scrollback::adopt(fd, capacity, (start, end), settings.scrollback_bytes)
            }
            (None, None) => Scrollback::new(settings.scrollback_bytes),
        }
        .map_err(|error| Error::io("restoring a session's scrollback", error))?;
        let produced = scrollback.end_offset();
        let mut input = InputQueue::default();
        // At most what was admitted before, so it fits.
        let _ = input.admit(&saved.input_waiting);
        let exited_at_boot = std::sync::OnceLock::new();
        if saved.exited_at_boot_micros != 0 {
            let _ = exited_at_boot.set(Duration::from_micros(saved.exited_at_boot_micros));
        }
        Ok(Arc::new(Self {
            id: saved.session_id,
            pid,
            created_at,
            listing,
            master: Mutex::new(master),
            held_when_closed: AtomicBool::new(saved.held_when_closed),
            input: Mutex::new(input),
            emulator: Mutex::default(),
            state: Mutex::new(State {
                scrollback,
                // A title sequence cut by the switch is lost; the next one
                // is read whole.
                titles: TitleTracker::new(),
                // Not handed on: a screen that starts over after the
                // switch draws without the modes of output let go before.
                mode_changes: crate::modes::ModeChanges::unknown(),
                title: saved.title,
                title_version: 0,
                cols: u16::try_from(saved.cols).unwrap_or(80),
                rows: u16::try_from(saved.rows).unwrap_or(24),
                exit,
                attachers: HashMap::new(),
                next_attacher: 0,
            }),
            produced: AtomicU64::new(produced),
            changes: watch::Sender::new(()),
            progress: Notify::new(),
            patience: settings.attacher_patience,
            exited: watch::Sender::new(exit.is_some()),
            generation,
            exited_at_boot,
            leader_exited: AtomicBool::new(saved.leader_exited),
            frozen,
        }))
    }

    /// Reads the terminal and watches the program again, after a restore or
    /// a freeze that did not end in an upgrade.
    ///
    /// The returned driver must be spawned, as [`Session::start`]'s is.
    /// None once the program's exit is recorded: there is nothing to
    /// drive. Input that waited is drained again.
    pub fn resume(
        self: &Arc<Self>,
        exits: broadcast::Sender<ExitNotice>,
    ) -> Result<Option<impl Future<Output = ()> + Send + 'static>> {
        if self.exit_status().is_some() {
            return Ok(None);
        }
        // Still our child, whether it runs or waits to be reaped.
        let pidfd =
            rustix::process::pidfd_open(self.pid, PidfdFlags::NONBLOCK).map_err(|error| {
                Error::io("opening a restored session's pidfd", io::Error::from(error))
            })?;
        let pidfd = register(pidfd, Interest::READABLE)
            .map_err(|error| Error::io("registering a restored session's pidfd", error))?;
        let master = self.master().clone();
        {
            let mut input = self.input();
            input.draining = input.front().is_some();
            if input.draining {
                tokio::spawn(Arc::clone(self).drain_input());
            }
        }
        Ok(Some(Arc::clone(self).drive(master, pidfd, exits)))
    }
}
