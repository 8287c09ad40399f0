//! One PTY session: the program, its output ring, its title, and the task
//! that drives it.
//!
//! There is no OS thread per session. The master fd and a pidfd are
//! registered with tokio, and one small task per session reads both.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use prost::bytes::Bytes;
use rustix::process::Pid;
use rustix::termios::Winsize;
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::sync::{Notify, broadcast, watch};
use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::generation::Generation;
use crate::input_queue::InputQueue;
use crate::scrollback::{ReadAt, Scrollback};
use crate::session_settings::SessionSettings;
use crate::spawn::Spawned;
use crate::title::TitleTracker;

mod driver;
mod input;
mod saved;

/// Most bytes read from a PTY per wakeup before other tasks get a turn.
const READ_BUFFER_BYTES: usize = 64 * 1024;
/// Reads per wakeup before yielding, so one flooding session cannot starve
/// the others on the same worker.
const READS_PER_WAKEUP: usize = 16;
/// Largest output chunk sent to an attacher in one event.
pub const MAX_CHUNK_BYTES: usize = 64 * 1024;
/// Most bytes read from a PTY after its program exits, before the terminal
/// is closed.
///
/// They are what the program left there, and what anything else still
/// holding the terminal writes meanwhile.
const FINAL_READ_BYTES: u64 = 1 << 20;

thread_local! {
    /// One read buffer per worker thread, not per session, so idle sessions
    /// cost no buffer memory.
    static READ_BUFFER: RefCell<Box<[u8]>> =
        RefCell::new(vec![0; READ_BUFFER_BYTES].into_boxed_slice());
}

/// How a session's program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitStatus {
    /// Exit code, when it exited normally.
    pub code: Option<i32>,
    /// Signal number, when a signal ended it.
    pub signal: Option<i32>,
    /// When the daemon observed the exit.
    pub at: SystemTime,
}

/// A session's exit, as broadcast to `WatchSessions` watchers.
#[derive(Debug, Clone)]
pub struct ExitNotice {
    /// The session that exited.
    pub session_id: String,
    /// How it ended.
    pub status: ExitStatus,
}

/// The parts of a session that change, behind one lock.
struct State {
    scrollback: Scrollback,
    titles: TitleTracker,
    /// The modes the output switched, with where; read when a screen
    /// starts over from the ring's oldest byte.
    mode_changes: crate::modes::ModeChanges,
    title: String,
    /// Bumped on every title change so attachers notice each one.
    title_version: u64,
    cols: u16,
    rows: u16,
    exit: Option<ExitStatus>,
    /// Where each attacher is, by its cursor's number, and whether reading
    /// waits for it.
    attachers: HashMap<u64, Attacher>,
    next_attacher: u64,
}

/// One attacher's place, as the terminal's reading sees it.
#[derive(Debug, Clone, Copy)]
struct Attacher {
    offset: u64,
    /// Cleared when reading gave up waiting for it; set again once it has
    /// caught up.
    waited_for: bool,
    /// When reading first paused for it, and where it was then.
    ///
    /// Patience counts from there until it has read half a ring more (or
    /// caught up). So one that keeps reading is waited for as long as it
    /// reads. One that moves on a little now and then is not.
    paused: Option<(Instant, u64)>,
}

impl State {
    /// The most unsent bytes of any attacher that reading waits for.
    fn lag(&self) -> Option<u64> {
        let end = self.scrollback.end_offset();
        self.attachers
            .values()
            .filter(|attacher| attacher.waited_for)
            .map(|attacher| end.saturating_sub(attacher.offset))
            .max()
    }

    /// Whether an attacher that reading waits for is over half the ring
    /// behind.
    ///
    /// Reading pauses until it is not.
    fn pacing(&self) -> bool {
        self.lag().is_some_and(|lag| lag > self.pause_bound())
    }

    fn pause_bound(&self) -> u64 {
        (self.scrollback.capacity() / 2) as u64
    }

    /// The attachers reading waits for that are over half the ring behind.
    fn laggards(&mut self) -> impl Iterator<Item = &mut Attacher> {
        let end = self.scrollback.end_offset();
        let bound = self.pause_bound();
        self.attachers.values_mut().filter(move |attacher| {
            attacher.waited_for && end.saturating_sub(attacher.offset) > bound
        })
    }

    /// Reading pauses for the laggards.
    ///
    /// Returns the instant its patience with them runs out.
    fn pause(&mut self, patience: Duration) -> Instant {
        let now = Instant::now();
        self.laggards()
            .map(|attacher| attacher.paused.get_or_insert((now, attacher.offset)).0 + patience)
            .min()
            .unwrap_or(now)
    }

    /// Reading's patience with some laggards ran out.
    ///
    /// It no longer waits for those until they catch up. Each has its own
    /// patience, so one that stalled does not cost another, paused later,
    /// its turn.
    fn stop_waiting_for_laggards(&mut self, patience: Duration) {
        let now = Instant::now();
        for attacher in self.laggards() {
            if attacher
                .paused
                .is_some_and(|(since, _)| since + patience <= now)
            {
                attacher.waited_for = false;
                attacher.paused = None;
            }
        }
    }

    /// How many bytes may be read without lapping an attacher that reading
    /// waits for.
    fn room(&self) -> usize {
        match self.lag() {
            None => usize::MAX,
            Some(lag) => {
                usize::try_from(lag).map_or(0, |lag| self.scrollback.capacity().saturating_sub(lag))
            }
        }
    }
}

/// What a list shows of a session that changes, read under its lock.
///
/// All of it moves the generation. Output offsets, which do not, are read
/// apart.
#[derive(Debug, Clone, Copy)]
pub struct Changing<'a> {
    /// The last OSC title.
    pub title: &'a String,
    /// Terminal width.
    pub cols: u16,
    /// Terminal height.
    pub rows: u16,
    /// Set once the program has exited.
    pub exit: Option<ExitStatus>,
}

/// One event for an attacher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Output starting at `offset`.
    Output {
        /// Absolute offset of `data[0]`.
        offset: u64,
        /// The bytes.
        data: Bytes,
    },
    /// Output in `from_offset..to_offset` was evicted before it was sent.
    Truncated {
        /// First lost byte.
        from_offset: u64,
        /// Where output resumes.
        to_offset: u64,
    },
    /// The title is now this.
    Title(String),
    /// The program exited; nothing follows.
    Exited(ExitStatus),
}

/// Where one attacher is in a session's event history.
///
/// While it exists, reading the terminal pauses whenever it is over half
/// the scrollback behind, and never laps it. That holds as long as it reads
/// half a scrollback within the attacher patience. So an attacher that
/// keeps reading loses no output to the ring.
pub struct Cursor {
    session: Arc<Session>,
    number: u64,
    offset: u64,
    title_version: u64,
    finished: bool,
}

impl Cursor {
    /// The offset of the next byte this cursor reads.
    pub fn offset(&self) -> u64 {
        self.offset
    }
}

impl Drop for Cursor {
    fn drop(&mut self) {
        self.session.state().attachers.remove(&self.number);
        // Reading may have been waiting for this attacher.
        self.session.progress.notify_one();
    }
}

/// A program on a PTY, owned by the daemon.
pub struct Session {
    id: String,
    pid: Pid,
    created_at: SystemTime,
    /// The fields that never change (these, argv and cwd) as `List` and
    /// `Spawn` send them, encoded once.
    listing: Bytes,
    /// The PTY's master side, until the terminal is closed.
    ///
    /// The terminal is closed once the program's exit is read, or on a
    /// hang-up. This is a leaf lock: nothing else is taken while it is
    /// held. Reading holds a clone of its own. Input waiting for the
    /// terminal holds one while it waits.
    master: Mutex<Option<Arc<AsyncFd<OwnedFd>>>>,
    /// Whether a process still had the terminal open when it was closed at
    /// the program's exit.
    ///
    /// Such a process is something the program left running. It tells Kill
    /// to look for leftovers.
    held_when_closed: AtomicBool,
    /// Input the terminal has not taken yet, in order.
    input: Mutex<InputQueue>,
    state: Mutex<State>,
    /// The screen's emulator, made at the first `GetScreen` and fed since
    /// only what it has not read; none for a session never looked at.
    /// Boxed: an emulator is about 1.5 KiB even before it draws, and most
    /// sessions are never looked at.
    emulator: Mutex<Option<Box<crate::screen::Emulator>>>,
    /// The scrollback's end offset, stored under the lock after each append.
    ///
    /// A list of a thousand sessions reads it without locking each of them.
    produced: AtomicU64,
    /// Pinged on new output, title or exit; attachers wait on it.
    changes: watch::Sender<()>,
    /// Pinged when an attacher moves on or leaves; paced reading waits on it.
    progress: Notify,
    /// How long reading waits for an attacher that lags; see [`Cursor`].
    patience: Duration,
    /// Becomes true once the program has exited and been reaped.
    exited: watch::Sender<bool>,
    /// Bumped after a change `List` shows (exit, title, size).
    generation: Generation,
    /// When the program was reaped, on the boot clock (process start
    /// times are on it).
    exited_at_boot: std::sync::OnceLock<Duration>,
    /// Set (under the state lock) once the program has exited, before
    /// what it left in the terminal is read.
    ///
    /// From then on the terminal is not hung up, which would lose that last
    /// output.
    leader_exited: AtomicBool,
    /// Becomes true when the daemon freezes its sessions for an upgrade.
    ///
    /// Input then stops: a write is refused and waiting input stays
    /// waiting, so the state handed on is whole. (Output stops because
    /// the terminals' thread is held, `Registry::hold_terminals`.)
    frozen: watch::Receiver<bool>,
}

impl Session {
    /// Wraps a freshly spawned program.
    ///
    /// The returned future reads its output and reaps it. It resolves once
    /// the exit is recorded. The caller must spawn it, after making the
    /// session findable, so whatever follows the exit finds it. Dropped,
    /// the program is never reaped. This must run inside the tokio runtime
    /// that is to read the terminal: its descriptors join that runtime's
    /// reactor.
    ///
    /// `listing` is its List entry's parts that never change, encoded by
    /// the caller (`listing::encode_fixed`) with `created_at` in them.
    pub fn start(
        id: String,
        spawned: Spawned,
        (listing, created_at): (Bytes, SystemTime),
        (cols, rows): (u16, u16),
        settings: &SessionSettings,
        exits: broadcast::Sender<ExitNotice>,
        (generation, frozen): (Generation, watch::Receiver<bool>),
    ) -> Result<(Arc<Self>, impl Future<Output = ()> + Send + 'static)> {
        let scrollback = Scrollback::new(settings.scrollback_bytes).map_err(|error| {
            crate::spawn::end_unwatched(spawned.pid);
            Error::io("making the session's scrollback", error)
        })?;
        let registered = register(spawned.master, Interest::READABLE | Interest::WRITABLE)
            .and_then(|master| Ok((master, register(spawned.pidfd, Interest::READABLE)?)));
        let (master, pidfd) = registered.map_err(|error| {
            crate::spawn::end_unwatched(spawned.pid);
            Error::io("registering the session's terminal and pidfd", error)
        })?;
        let master = Arc::new(master);
        let session = Arc::new(Self {
            id,
            pid: spawned.pid,
            created_at,
            listing,
            master: Mutex::new(Some(Arc::clone(&master))),
            held_when_closed: AtomicBool::new(false),
            input: Mutex::new(InputQueue::default()),
            emulator: Mutex::default(),
            state: Mutex::new(State {
                scrollback,
                titles: TitleTracker::new(),
                mode_changes: crate::modes::ModeChanges::default(),
                title: String::new(),
                title_version: 0,
                cols,
                rows,
                exit: None,
                attachers: HashMap::new(),
                next_attacher: 0,
            }),
            produced: AtomicU64::new(0),
            changes: watch::Sender::new(()),
            progress: Notify::new(),
            patience: settings.attacher_patience,
            exited: watch::Sender::new(false),
            generation,
            exited_at_boot: std::sync::OnceLock::new(),
            leader_exited: AtomicBool::new(false),
            frozen,
        });
        let driver = Arc::clone(&session).drive(Some(master), pidfd, exits);
        Ok((session, driver))
    }

    /// The session's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The program's pid, which is also its process group id.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// When it was spawned.
    pub fn created_at(&self) -> SystemTime {
        self.created_at
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the ring inconsistent
        // in a way worth dying for. The daemon keeps serving.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// How the program ended, once it has.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        self.state().exit
    }

    /// Runs `signal` while the program has not been reaped.
    ///
    /// `signal` is something done to the program by its pid. Until the
    /// reap, the pid is still the program's own. Returns `None` once it has
    /// exited.
    pub fn while_running<T>(&self, signal: impl FnOnce() -> T) -> Option<T> {
        let state = self.state();
        state.exit.is_none().then(signal)
    }

    /// When the program was reaped, on the boot clock.
    pub fn exited_at_boot(&self) -> Option<Duration> {
        self.exited_at_boot.get().copied()
    }

    /// Hangs up the terminal, as closing a terminal window or killing a
    /// tmux session does.
    ///
    /// The kernel sends SIGHUP and SIGCONT to the session's leader, whoever's
    /// it is. No signal from this user reaches the leader once its programs
    /// became another user (`sudo -i`). What the terminal held unread goes
    /// with it, and so does the input waiting for it. Input and resizes are
    /// refused from then on, as for a program that let go of its terminal.
    ///
    /// Nothing is done once the program has exited (its last output is
    /// being read), or once the terminal is hung up already. Returns
    /// whether it was hung up by this call.
    ///
    /// Reading holds a clone of the master for as long as it reads. So the
    /// descriptor number is kept, and becomes /dev/null's. Reading meets an
    /// end of file instead of the next file this process opens under that
    /// number. Its registration with the reactor is left behind when the
    /// last clone goes: a few dozen bytes, once per session hung up so.
    pub fn hang_up(&self) -> io::Result<bool> {
        use std::os::fd::AsRawFd;
        let null = rustix::fs::open(
            "/dev/null",
            rustix::fs::OFlags::RDWR | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )?;
        // Under both locks, in the order writes take them. No write or
        // resize is half way through when the terminal goes.
        let mut input = self.input();
        let _state = self.state();
        if *self.frozen.borrow() {
            // The state handed on names this terminal's descriptor.
            return Err(io::Error::other("the daemon is upgrading; try again"));
        }
        if self.leader_exited.load(Ordering::Acquire) {
            return Ok(false);
        }
        let Some(master) = self.master().take() else {
            return Ok(false);
        };
        // SAFETY: both descriptors are open and owned (the master by
        // `master`, which reading's clone keeps alive). dup3 closes the
        // master's reference to the terminal and puts /dev/null at its
        // number. The last clone goes on owning that number, and closes it.
        let result = unsafe {
            libc::dup3(
                null.as_raw_fd(),
                master.get_ref().as_raw_fd(),
                libc::O_CLOEXEC,
            )
        };
        if result == -1 {
            let error = io::Error::last_os_error();
            *self.master() = Some(master);
            return Err(error);
        }
        input.clear();
        Ok(true)
    }

    /// Closes the terminal once the program's exit and what it left there
    /// are read, as tmux closes a dead pane.
    ///
    /// Anything still running on it meets an end of file and fails its
    /// writes (EIO). Otherwise it would block once the terminal's buffer is
    /// full, until the session is forgotten. Whether anything was still
    /// running on it is kept for Kill.
    fn close_at_exit(&self) {
        // Under the input lock: no write is half way through.
        let _input = self.input();
        let mut slot = self.master();
        let Some(master) = slot.as_deref() else {
            return;
        };
        // Stored before the slot empties. No one sees it closed and not
        // held.
        self.held_when_closed
            .store(in_use(master), Ordering::Release);
        *slot = None;
        // Reading's clone goes when reading ends, and with the last the
        // terminal closes.
    }

    /// Whether any process still has the terminal open.
    ///
    /// Once it is closed, whether one had when the program exited (none,
    /// for a hang-up).
    pub fn terminal_in_use(&self) -> bool {
        match self.master().as_deref() {
            Some(master) => in_use(master),
            None => self.held_when_closed.load(Ordering::Acquire),
        }
    }

    fn master(&self) -> MutexGuard<'_, Option<Arc<AsyncFd<OwnedFd>>>> {
        self.master.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Bytes of output produced so far.
    pub fn output_offset(&self) -> u64 {
        self.produced.load(Ordering::Acquire)
    }

    /// The fields that never change, encoded as `List` sends them.
    pub fn listing(&self) -> &Bytes {
        &self.listing
    }

    /// What the session's terminal shows now.
    ///
    /// Its emulator reads only the output it has not read yet, taken with
    /// the size and title under the session's lock; all the scrollback
    /// holds the first time, or when it missed some or the size changed.
    ///
    /// With it come up to `scrollback_lines` lines that scrolled off its
    /// top.
    pub fn screen(
        &self,
        scrollback_lines: usize,
    ) -> holdfast_api::proto::daemon::v1::GetScreenResponse {
        let mut emulator = self.emulator.lock().unwrap_or_else(PoisonError::into_inner);
        let read_to = emulator.as_ref().map(|emulator| emulator.read_to());
        let held = {
            let state = self.state();
            let start = state.scrollback.start_offset();
            let from = read_to.filter(|&read| read >= start).unwrap_or(start);
            let modes_at_start = state.mode_changes.at(from);
            // Pending (nothing new) or, never here, evicted: nothing to read.
            let bytes = match state.scrollback.read_at(from, usize::MAX) {
                ReadAt::Data(bytes) => bytes,
                ReadAt::Pending | ReadAt::Evicted { .. } => Bytes::new(),
            };
            crate::screen::HeldOutput {
                bytes,
                start: from,
                modes_at_start,
                cols: state.cols,
                rows: state.rows,
                title: state.title.clone(),
            }
        };
        crate::screen::screen(&mut emulator, held, scrollback_lines)
    }

    /// Reads what a list shows that changes, under the session's lock.
    pub fn read_changing<R>(&self, read: impl FnOnce(Changing<'_>) -> R) -> R {
        let state = self.state();
        read(Changing {
            title: &state.title,
            cols: state.cols,
            rows: state.rows,
            exit: state.exit,
        })
    }

    /// Resolves once the program has exited and been reaped.
    pub async fn wait_exited(&self) {
        let mut exited = self.exited.subscribe();
        // The sender lives as long as `self`, so this cannot fail.
        let _ = exited.wait_for(|exited| *exited).await;
    }

    /// Changes the terminal size.
    ///
    /// The kernel sends SIGWINCH to the program if the size changed. With
    /// `redraw` it is sent anyway.
    pub fn resize(&self, cols: u16, rows: u16, redraw: bool) -> Result<()> {
        let mut state = self.state();
        if *self.frozen.borrow() {
            // Under the state lock, as the state handed on is read.
            return Err(Error::Upgrading {
                resume: String::new(),
            });
        }
        if state.exit.is_some() {
            return Err(Error::SessionExited(self.id.clone()));
        }
        let Some(master) = self.master().clone() else {
            return Err(Error::TerminalClosed(self.id.clone()));
        };
        let unchanged = (state.cols, state.rows) == (cols, rows);
        let size = Winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let master = master.get_ref();
        if redraw && unchanged {
            // The kernel signals the terminal's foreground process group
            // on any change of size, through the group it holds. So no
            // other process is ever signalled. (A group number read with
            // tcgetpgrp may have passed to another group by now.) A pixel
            // width of 1 instead of the 0 holdfast keeps is such a change,
            // and nothing else. Setting the size back is a second one. So
            // the program may draw twice, the last time at its true size.
            let nudge = Winsize {
                ws_xpixel: 1,
                ..size
            };
            rustix::termios::tcsetwinsize(master, nudge)
                .map_err(|error| Error::io("resizing the PTY", error))?;
        }
        rustix::termios::tcsetwinsize(master, size)
            .map_err(|error| Error::io("resizing the PTY", error))?;
        state.cols = cols;
        state.rows = rows;
        drop(state);
        self.generation.bump();
        Ok(())
    }

    /// A cursor at `from_offset`, or at the oldest byte held.
    ///
    /// If `paced`, reading is paced to it until it is dropped. Otherwise it
    /// is never waited for, and the ring may lap it.
    pub fn cursor(self: &Arc<Self>, from_offset: Option<u64>, paced: bool) -> Cursor {
        let mut state = self.state();
        let offset = from_offset.unwrap_or(state.scrollback.start_offset());
        let number = state.next_attacher;
        state.next_attacher += 1;
        // Reading looks only at the attachers registered here.
        if paced {
            state.attachers.insert(
                number,
                Attacher {
                    offset,
                    waited_for: true,
                    paused: None,
                },
            );
        }
        drop(state);
        Cursor {
            session: Arc::clone(self),
            number,
            offset,
            title_version: 0,
            finished: false,
        }
    }

    /// Subscribes to change pings, for use with [`Session::next_event`].
    pub fn changes(&self) -> watch::Receiver<()> {
        self.changes.subscribe()
    }

    /// The next event for `cursor`, waiting for one if need be.
    ///
    /// `None` once the exit has been delivered.
    pub async fn next_event(
        &self,
        cursor: &mut Cursor,
        changes: &mut watch::Receiver<()>,
    ) -> Option<Event> {
        loop {
            if cursor.finished {
                return None;
            }
            changes.borrow_and_update();
            if let Some(event) = self.poll_event(cursor) {
                return Some(event);
            }
            // The sender lives as long as `self`. A closed channel would mean
            // the session is gone, so the stream ends.
            if changes.changed().await.is_err() {
                return None;
            }
        }
    }

    fn poll_event(&self, cursor: &mut Cursor) -> Option<Event> {
        let mut state = self.state();
        let event = Self::next_of(&state, cursor);
        let end = state.scrollback.end_offset();
        let bound = state.pause_bound();
        if let Some(attacher) = state.attachers.get_mut(&cursor.number) {
            attacher.offset = cursor.offset;
            if cursor.offset >= end {
                attacher.waited_for = true;
            }
            if cursor.offset >= end
                || attacher
                    .paused
                    .is_some_and(|(_, from)| cursor.offset.saturating_sub(from) >= bound)
            {
                attacher.paused = None;
            }
        }
        drop(state);
        if matches!(event, Some(Event::Output { .. } | Event::Truncated { .. })) {
            self.progress.notify_one();
        }
        event
    }

    fn next_of(state: &State, cursor: &mut Cursor) -> Option<Event> {
        if cursor.title_version != state.title_version {
            cursor.title_version = state.title_version;
            return Some(Event::Title(state.title.clone()));
        }
        match state.scrollback.read_at(cursor.offset, MAX_CHUNK_BYTES) {
            ReadAt::Data(data) => {
                let offset = cursor.offset;
                cursor.offset += data.len() as u64;
                Some(Event::Output { offset, data })
            }
            ReadAt::Evicted { to_offset } => {
                let from_offset = cursor.offset;
                cursor.offset = to_offset;
                Some(Event::Truncated {
                    from_offset,
                    to_offset,
                })
            }
            ReadAt::Pending => {
                let exit = state.exit?;
                cursor.finished = true;
                Some(Event::Exited(exit))
            }
        }
    }
}

/// Whether any process still has the terminal of `master` open.
///
/// The master reports a hang-up once every descriptor of the slave side is
/// closed.
fn in_use(master: &AsyncFd<OwnedFd>) -> bool {
    let mut fds = [rustix::event::PollFd::new(
        master.get_ref(),
        rustix::event::PollFlags::empty(),
    )];
    match rustix::event::poll(&mut fds, Some(&rustix::event::Timespec::default())) {
        Ok(_) => !fds[0].revents().contains(rustix::event::PollFlags::HUP),
        // Cannot tell: assume it is, so callers look closer.
        Err(_) => true,
    }
}

/// Waits until `flag` is true; false if it can never become so.
pub async fn became_true(flag: &mut watch::Receiver<bool>) -> bool {
    flag.wait_for(|flag| *flag).await.is_ok()
}

/// Registers an owned descriptor with the runtime's reactor.
fn register(fd: OwnedFd, interest: Interest) -> io::Result<AsyncFd<OwnedFd>> {
    // SAFETY: an `OwnedFd` is open, owned, and always reports the same
    // descriptor for as long as it lives inside the `AsyncFd`.
    unsafe { AsyncFd::register_with_interest(fd, interest) }.map_err(io::Error::from)
}
