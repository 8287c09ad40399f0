//! Every session the daemon holds, by id.
//!
//! Each is forgotten once it has exited and its retention period is over.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use crate::error::{Error, Result};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{Notify, broadcast, watch};

use crate::generation::Generation;
use crate::listing;
use crate::session::{Cursor, ExitNotice, Session};
use crate::session_settings::SessionSettings;
use crate::spawn::{self, SpawnSpec};
use crate::upgrade::state::Rings;
use crate::upgrade::state::pb as saved;

#[derive(Default)]
struct Sessions {
    by_id: HashMap<String, Arc<Session>>,
    /// `by_id`'s sessions, oldest first.
    ///
    /// They are put in order on the first list after a session came or
    /// went, rather than sorted on every list.
    ordered: Option<Arc<[Arc<Session>]>>,
    /// Ids taken by spawns still in progress, so two spawns cannot both
    /// claim one id.
    reserved: HashSet<String>,
    /// Set as the daemon stops: no spawn starts after.
    refusing_spawns: bool,
}

/// Exit notices buffered per watcher before it is told it lagged.
const EXIT_NOTICE_BUFFER: usize = 4096;

/// All sessions of this daemon.
pub struct Registry {
    sessions: Mutex<Sessions>,
    settings: SessionSettings,
    exits: broadcast::Sender<ExitNotice>,
    /// Set once the daemon stops: exit watches end then.
    stopping: watch::Sender<bool>,
    /// Told whenever a spawn in progress has finished, either way.
    spawn_finished: Notify,
    generation: Generation,
    /// The runtime that reads the sessions' terminals and reaps their
    /// programs.
    terminals: tokio::runtime::Handle,
    /// True while the sessions are frozen for an upgrade.
    freeze: watch::Sender<bool>,
}

/// The terminals' thread, held: no session reads, reaps or is forgotten
/// while this lives.
///
/// Dropping it lets the thread go.
pub struct TerminalsHeld {
    _release: std::sync::mpsc::Sender<()>,
}

impl Registry {
    /// An empty registry whose sessions are driven on `terminals`.
    pub fn new(settings: SessionSettings, terminals: tokio::runtime::Handle) -> Self {
        Self {
            terminals,
            sessions: Mutex::default(),
            settings,
            exits: broadcast::Sender::new(EXIT_NOTICE_BUFFER),
            stopping: watch::Sender::new(false),
            spawn_finished: Notify::new(),
            generation: Generation::new(),
            freeze: watch::Sender::new(false),
        }
    }

    /// Changes whenever [`Registry::all`] would list something new, apart
    /// from output offsets.
    pub fn generation(&self) -> u64 {
        self.generation.current()
    }

    fn sessions(&self) -> MutexGuard<'_, Sessions> {
        self.sessions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Subscribes to every session's exit, and to every change `List`
    /// would show.
    pub fn watch_exits(&self) -> ExitWatch {
        ExitWatch {
            exits: self.exits.subscribe(),
            changes: self.generation.subscribe(),
            stopping: self.stopping.subscribe(),
        }
    }

    /// Ends every exit watch once it has had the exits before this.
    ///
    /// The daemon is stopping. Its watchers' streams must end cleanly,
    /// rather than hold the shutdown up until they are cut.
    pub fn end_exit_watches(&self) {
        self.stopping.send_replace(true);
    }

    /// The session with this id.
    pub fn get(&self, session_id: &str) -> Result<Arc<Session>> {
        self.sessions()
            .by_id
            .get(session_id)
            .cloned()
            .ok_or_else(|| Error::SessionNotFound(session_id.to_owned()))
    }

    /// Every session, oldest first.
    pub fn all(&self) -> Arc<[Arc<Session>]> {
        let mut sessions = self.sessions();
        if let Some(ordered) = &sessions.ordered {
            return Arc::clone(ordered);
        }
        let mut all: Vec<_> = sessions.by_id.values().cloned().collect();
        all.sort_by(|a, b| {
            a.created_at()
                .cmp(&b.created_at())
                .then_with(|| a.id().cmp(b.id()))
        });
        let all: Arc<[Arc<Session>]> = all.into();
        sessions.ordered = Some(Arc::clone(&all));
        all
    }

    /// Starts a program on a new PTY under `session_id`, or under a fresh
    /// id when none is given.
    ///
    /// Runs to completion even if the caller goes away. A started child is
    /// always registered (and so reaped), never dropped half-made.
    pub async fn spawn(
        self: &Arc<Self>,
        session_id: Option<String>,
        spec: SpawnSpec,
    ) -> Result<Arc<Session>> {
        // Nobody reads through this call: its cursor goes at once.
        let (session, _) = self.spawn_attached(session_id, spec).await?;
        Ok(session)
    }

    /// As [`Registry::spawn`], with a cursor at the first byte.
    ///
    /// The cursor is made before anything is read from the terminal, so
    /// that none can be missed. Reading is paced to the cursor (see
    /// [`Cursor`]). Read from it, or drop it, promptly.
    pub async fn spawn_attached(
        self: &Arc<Self>,
        session_id: Option<String>,
        spec: SpawnSpec,
    ) -> Result<(Arc<Session>, Cursor)> {
        let registry = Arc::clone(self);
        tokio::spawn(async move { registry.spawn_detached(session_id, spec).await })
            .await
            .map_err(|error| Error::io("spawning", std::io::Error::other(error)))?
    }

    async fn spawn_detached(
        self: Arc<Self>,
        session_id: Option<String>,
        spec: SpawnSpec,
    ) -> Result<(Arc<Session>, Cursor)> {
        let session_id = self.reserve(session_id)?;
        let (cols, rows) = (spec.cols, spec.rows);
        let spawned = tokio::task::spawn_blocking(move || spawn::spawn(spec))
            .await
            .map_err(|error| Error::io("spawning", std::io::Error::other(error)));
        let started = spawned.and_then(|spawned| spawned).and_then(|mut spawned| {
            // Its descriptors join the reactor of the runtime that reads them.
            let _terminals = self.terminals.enter();
            let created_at = SystemTime::now();
            let fixed = listing::encode_fixed(
                &session_id,
                spawned.pid.as_raw_nonzero().get() as u32,
                std::mem::take(&mut spawned.argv),
                spawned.cwd.to_string_lossy().into_owned(),
                created_at,
            );
            Session::start(
                session_id.clone(),
                spawned,
                (fixed, created_at),
                (cols, rows),
                &self.settings,
                self.exits.clone(),
                (self.generation.clone(), self.freeze.subscribe()),
            )
        });
        // Made before the driver reads anything, and outside the registry's
        // lock (which is never held while taking a session's).
        let started = started.map(|(session, driver)| {
            let cursor = session.cursor(Some(0), true);
            (session, driver, cursor)
        });
        let mut sessions = self.sessions();
        sessions.reserved.remove(&session_id);
        let registered = match started {
            Ok((session, driver, cursor)) => {
                sessions.by_id.insert(session_id, Arc::clone(&session));
                self.changed(sessions);
                Ok((session, driver, cursor))
            }
            Err(error) => {
                drop(sessions);
                Err(error)
            }
        };
        // A stopping daemon waits for this before hanging up every session.
        self.spawn_finished.notify_waiters();
        let (session, driver, cursor) = registered?;
        // Spawned only now that the session is findable.
        self.run_driver(Arc::clone(&session), driver);
        Ok((session, cursor))
    }

    /// Runs a session's driver on the terminals' runtime, then forgets the
    /// session once its retention is over.
    ///
    /// With no retention, a session is forgotten the moment its exit is
    /// recorded.
    fn run_driver(
        self: &Arc<Self>,
        session: Arc<Session>,
        driver: impl Future<Output = ()> + Send + 'static,
    ) {
        let registry = Arc::downgrade(self);
        self.terminals.spawn(async move {
            driver.await;
            if let Some(registry) = registry.upgrade() {
                registry.forget_after_retention(session);
            }
        });
    }

    /// Forgets an exited session once its retention, counted from its
    /// exit, is over.
    fn forget_after_retention(self: &Arc<Self>, session: Arc<Session>) {
        let exited_at = session
            .exit_status()
            .map_or_else(SystemTime::now, |exit| exit.at);
        let left = (exited_at + self.settings.exit_retention)
            .duration_since(SystemTime::now())
            .unwrap_or_default();
        let registry = Arc::downgrade(self);
        self.terminals.spawn(async move {
            if !left.is_zero() {
                tokio::time::sleep(left).await;
            }
            if let Some(registry) = registry.upgrade() {
                registry.forget(&session);
            }
        });
    }

    /// Stops every session's input and output, for an upgrade.
    ///
    /// Spawns are refused until [`Registry::thaw`], and those under way
    /// are waited for, at most `patience`. Writes and resizes are refused.
    /// Output stops while the returned hold on the terminals' thread lives.
    pub async fn freeze(&self, patience: Duration) -> Result<TerminalsHeld> {
        self.sessions().refusing_spawns = true;
        self.freeze.send_replace(true);
        let settled = async {
            loop {
                let finished = self.spawn_finished.notified();
                if self.sessions().reserved.is_empty() {
                    break;
                }
                finished.await;
            }
        };
        tokio::time::timeout(patience, settled).await.map_err(|_| {
            Error::io(
                "freezing the sessions",
                std::io::Error::other("a spawn did not finish in time"),
            )
        })?;
        self.hold_terminals().await
    }

    /// Holds the terminals' runtime's only thread.
    ///
    /// Every session's driver, and whatever forgets it, runs there. Once
    /// held, none is half way through a read or a reap, and none runs
    /// again until the hold is dropped. So the state of every session
    /// stands still without a thousand drivers woken and stopped one by
    /// one, which took 8 ms with 1,000 sessions.
    async fn hold_terminals(&self) -> Result<TerminalsHeld> {
        let workers = self.terminals.metrics().num_workers();
        if workers != 1 {
            return Err(Error::io(
                "freezing the sessions",
                std::io::Error::other(format!(
                    "the terminals' runtime has {workers} threads; holding them needs one"
                )),
            ));
        }
        let (held, holding) = tokio::sync::oneshot::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        self.terminals.spawn(async move {
            let _ = held.send(());
            // Blocking the thread is the point: until released (or the
            // exec), nothing else runs on it.
            let _ = released.recv();
        });
        holding.await.map_err(|_| {
            Error::io(
                "freezing the sessions",
                std::io::Error::other("the terminals' thread is gone"),
            )
        })?;
        Ok(TerminalsHeld { _release: release })
    }

    /// Undoes [`Registry::freeze`]: the upgrade did not happen.
    ///
    /// The hold on the terminals' thread is dropped by its owner.
    pub fn thaw(&self) {
        self.freeze.send_replace(false);
        self.sessions().refusing_spawns = false;
    }

    /// Every session as the state format holds it. Call while frozen.
    pub fn snapshot(&self) -> Vec<saved::Session> {
        self.all()
            .iter()
            .map(|session| session.snapshot())
            .collect()
    }

    /// Takes over the sessions a previous image handed on.
    ///
    /// They are listed at once, and driven once [`Registry::resume`] is
    /// called. The daemon serves in between: a list needs no driver, and
    /// its first answer then waits for none.
    ///
    /// # Safety
    ///
    /// Each terminal descriptor the sessions name must be open and owned by
    /// nothing else.
    pub unsafe fn restore(
        self: &Arc<Self>,
        saved: Vec<saved::Session>,
        rings: &mut Rings,
        generation: u64,
    ) -> Result<()> {
        self.generation.at_least(generation);
        // Rings that follow the message (format 1) are read in order first.
        let mut work = Vec::with_capacity(saved.len());
        for saved in saved {
            let trailing = match saved.scrollback_fd {
                Some(_) => None,
                None => Some(
                    rings
                        .next(saved.scrollback_len)
                        .map_err(|error| Error::io("reading a session's scrollback", error))?,
                ),
            };
            work.push((saved, trailing));
        }
        // Mostly system calls (registering each terminal with the reactor,
        // mapping each ring), so two threads do it in about half the time.
        let second = work.split_off(work.len() / 2);
        let restored = std::thread::scope(|scope| {
            // SAFETY (both halves): as the caller promises.
            let other = scope.spawn(|| unsafe { self.restore_sessions(second) });
            let first = unsafe { self.restore_sessions(work) };
            let other = other.join().unwrap_or_else(|_| {
                Err(Error::io(
                    "restoring sessions",
                    std::io::Error::other("a restoring thread panicked"),
                ))
            });
            first.and_then(|mut first| {
                first.extend(other?);
                Ok(first)
            })
        })?;
        let mut sessions = self.sessions();
        for session in restored {
            sessions.by_id.insert(session.id().to_owned(), session);
        }
        self.changed(sessions);
        Ok(())
    }

    /// The sessions `work` describes, each with the ring that followed the
    /// message, if any.
    ///
    /// # Safety
    ///
    /// As for [`Registry::restore`].
    unsafe fn restore_sessions(
        &self,
        work: Vec<(saved::Session, Option<Vec<u8>>)>,
    ) -> Result<Vec<Arc<Session>>> {
        let _terminals = self.terminals.enter();
        work.into_iter()
            .map(|(saved, trailing)| {
                // SAFETY: as the caller promises.
                unsafe {
                    Session::restore(
                        saved,
                        trailing,
                        &self.settings,
                        (self.generation.clone(), self.freeze.subscribe()),
                    )
                }
            })
            .collect()
    }

    /// Drives every restored session whose program has not exited, and
    /// schedules the forgetting of those that have.
    ///
    /// It runs as one task on the terminals' runtime, which then spawns
    /// each driver locally rather than waking its thread once per session.
    pub fn resume(self: &Arc<Self>) {
        let registry = Arc::clone(self);
        self.terminals.spawn(async move {
            for session in registry.all().iter() {
                match session.resume(registry.exits.clone()) {
                    Ok(Some(driver)) => registry.run_driver(Arc::clone(session), driver),
                    Ok(None) => registry.forget_after_retention(Arc::clone(session)),
                    Err(error) => {
                        tracing::error!(session_id = %session.id(), %error, "cannot watch a restored session");
                    }
                }
            }
        });
    }

    /// Drops `session` from the registry, its retention over.
    fn forget(&self, session: &Arc<Session>) {
        let mut sessions = self.sessions();
        let held = sessions.by_id.get(session.id());
        if !held.is_some_and(|held| Arc::ptr_eq(held, session)) {
            return;
        }
        sessions.by_id.remove(session.id());
        self.changed(sessions);
        tracing::debug!(session_id = %session.id(), "forgot an exited session past its retention");
    }

    /// Marks that a session came or went.
    ///
    /// The ordered list is stale, and lists have a new generation. The
    /// generation is bumped before the lock is let go. So a list which sees
    /// the new set of sessions cannot read the old generation after it and
    /// answer "unchanged".
    fn changed(&self, mut sessions: MutexGuard<'_, Sessions>) {
        sessions.ordered = None;
        self.generation.bump();
        drop(sessions);
    }

    fn reserve(&self, session_id: Option<String>) -> Result<String> {
        let mut sessions = self.sessions();
        if sessions.refusing_spawns {
            return Err(Error::Stopping);
        }
        let session_id = match session_id {
            Some(id) => {
                if sessions.by_id.contains_key(&id) || sessions.reserved.contains(&id) {
                    return Err(Error::SessionExists(id));
                }
                id
            }
            None => uuid::Uuid::new_v4().to_string(),
        };
        sessions.reserved.insert(session_id.clone());
        Ok(session_id)
    }
}

impl Registry {
    /// Ends every live session.
    ///
    /// SIGHUP goes to each process group, as a closing terminal would send
    /// it. SIGKILL goes to whatever is left after `grace`. Returns once all
    /// have been reaped or a second `grace` has passed. No spawn starts
    /// from the call on. Those under way are waited for (within `grace`),
    /// so each program started is hung up too.
    pub async fn hang_up_all(&self, grace: Duration) {
        self.sessions().refusing_spawns = true;
        let under_way = async {
            loop {
                let finished = self.spawn_finished.notified();
                if self.sessions().reserved.is_empty() {
                    return;
                }
                finished.await;
            }
        };
        if tokio::time::timeout(grace, under_way).await.is_err() {
            tracing::warn!("spawns still under way at shutdown; not waiting for them");
        }
        let live: Vec<_> = self
            .all()
            .iter()
            .filter(|session| session.exit_status().is_none())
            .cloned()
            .collect();
        if live.is_empty() {
            return;
        }
        tracing::info!(sessions = live.len(), "hanging up every session");
        let all_exited =
            || futures_util::future::join_all(live.iter().map(|session| session.wait_exited()));
        for session in &live {
            let _ = crate::kill::signal_group(session, rustix::process::Signal::HUP);
        }
        if tokio::time::timeout(grace, all_exited()).await.is_ok() {
            return;
        }
        for session in live
            .iter()
            .filter(|session| session.exit_status().is_none())
        {
            tracing::warn!(session_id = %session.id(), "still alive after SIGHUP; sending SIGKILL");
            let _ = crate::kill::signal_group(session, rustix::process::Signal::KILL);
        }
        if tokio::time::timeout(grace, all_exited()).await.is_err() {
            tracing::error!("some sessions were not reaped before shutdown");
        }
    }
}

/// One subscription to every session's exit, and to every change `List`
/// would show.
pub struct ExitWatch {
    exits: broadcast::Receiver<ExitNotice>,
    changes: watch::Receiver<u64>,
    stopping: watch::Receiver<bool>,
}

/// What an [`ExitWatch`] hears.
pub enum Watched {
    /// A session's exit.
    Exit(ExitNotice),
    /// How many exits this watcher fell behind by.
    Lagged(u64),
    /// `List` would answer differently now, at this generation. Several
    /// changes while the watcher was busy are told as the last.
    Changed(u64),
}

impl ExitWatch {
    /// The next exit or change.
    ///
    /// `None` once the daemon stops, after every exit before that.
    pub async fn next(&mut self) -> Option<Watched> {
        tokio::select! {
            // Exits already sent go out before the end.
            biased;
            notice = self.exits.recv() => match notice {
                Ok(notice) => Some(Watched::Exit(notice)),
                Err(RecvError::Lagged(missed)) => Some(Watched::Lagged(missed)),
                Err(RecvError::Closed) => None,
            },
            changed = self.changes.changed() => match changed {
                Ok(()) => Some(Watched::Changed(*self.changes.borrow_and_update())),
                // The registry is gone: nothing more changes.
                Err(_) => None,
            },
            _ = self.stopping.wait_for(|stopping| *stopping) => None,
        }
    }
}
