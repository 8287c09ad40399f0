//! The sessions this process holds: attachment plumbing.
//!
//! These are the sessions this host-service process has created, attached
//! to or adopted since it started. The map empties on every restart, which
//! is why lists never come from it alone (see `live_sessions.rs`).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use crate::sessions::input::SessionInput;

/// What this process knows of one session.
#[derive(Debug, Clone)]
pub struct HeldSession {
    /// The session's id.
    pub session_id: String,
    /// Its workspace.
    pub workspace_id: String,
    /// Whether lists show it.
    pub listed: bool,
    /// Last known title (from the daemon, else the row).
    pub title: String,
    /// The title given at creation, or by a rename since.
    ///
    /// The program's titles do not change it.
    pub name: String,
    /// The program's pid.
    pub pid: u32,
    /// Terminal width.
    pub cols: u32,
    /// Terminal height.
    pub rows: u32,
    /// When it was created.
    pub created_at: SystemTime,
    /// Open attach streams.
    pub attachments: u32,
    /// Set once the program is known to have exited: (code, signal).
    pub exit: Option<(Option<i32>, Option<i32>)>,
    /// Its input stream to the daemon, closed when the session is
    /// forgotten.
    pub input: Arc<SessionInput>,
}

impl HeldSession {
    /// Its new name, and title too while that is the old name (its
    /// program set none).
    fn rename(&mut self, name: &str) {
        if self.title == self.name {
            name.clone_into(&mut self.title);
        }
        name.clone_into(&mut self.name);
    }

    /// Records what the daemon last said of the session.
    pub fn refresh(&mut self, title: &str, pid: u32, cols: u32, rows: u32) {
        if !title.is_empty() && self.title != title {
            title.clone_into(&mut self.title);
        }
        self.pid = pid;
        self.cols = cols;
        self.rows = rows;
    }
}

#[derive(Default)]
struct Inner {
    /// Live sessions, and exited ones while something is still attached.
    sessions: HashMap<String, HeldSession>,
    /// Sessions on their way into `sessions`, by a creation or by an
    /// adoption, with what befell them meanwhile.
    pending: HashMap<String, Pending>,
    /// New names given to pending sessions, whose registrations may carry
    /// the names they read before.
    renamed: HashMap<String, String>,
    /// Counts changes to `sessions`, so a list made from them can tell
    /// whether it still holds.
    generation: u64,
    /// Tells watches of each change to `sessions` (its new generation).
    changes: Changes,
}

/// The sender of memory's changes.
struct Changes(tokio::sync::watch::Sender<u64>);

impl Default for Changes {
    fn default() -> Self {
        Self(tokio::sync::watch::channel(0).0)
    }
}

/// The registrations of one session under way.
///
/// They are its creation (rowed but maybe not yet spawned), or its
/// adoptions after a restart (one per request that found it restored).
/// What befalls the session meanwhile cannot touch `sessions`, which does
/// not hold it yet. So it is noted here, and decides whether the session
/// may be registered.
#[derive(Debug, Clone, Copy, Default)]
struct Pending {
    /// Whether its creation is under way.
    creating: bool,
    /// How many adoptions of it are under way.
    adoptions: u32,
    /// Its row was stamped (disposed, workspace closed).
    ///
    /// It must never be registered.
    stamped: bool,
    /// It exited.
    ///
    /// Registered, it would be listed alive.
    exited: bool,
}

impl Pending {
    /// Whether the session may be registered now.
    fn may_register(&self) -> bool {
        !self.stamped && !self.exited
    }
}

impl Inner {
    /// Ends one registration of a pending session.
    ///
    /// Forgets what befell it once none is left. Returns what befell it.
    fn settle(&mut self, session_id: &str, end: impl FnOnce(&mut Pending)) -> Option<Pending> {
        let pending = self.pending.get_mut(session_id)?;
        end(pending);
        let settled = *pending;
        if !pending.creating && pending.adoptions == 0 {
            self.pending.remove(session_id);
            self.renamed.remove(session_id);
        }
        Some(settled)
    }

    /// `sessions`, for a change.
    fn sessions_mut(&mut self) -> &mut HashMap<String, HeldSession> {
        self.generation += 1;
        // Under the lock: a watch woken by it reads memory after the
        // change, once the lock is let go.
        self.changes.0.send_replace(self.generation);
        &mut self.sessions
    }
}

/// The in-memory session map.
#[derive(Default)]
pub struct HeldSessions {
    inner: Mutex<Inner>,
}

impl HeldSessions {
    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Notes that a session is being created, so the reaper leaves its row
    /// and daemon session alone until it is registered.
    pub fn begin_create(&self, session_id: &str) {
        self.inner()
            .pending
            .entry(session_id.to_owned())
            .or_default()
            .creating = true;
    }

    /// Ends a creation started with `begin_create`, registering the
    /// session if it started.
    ///
    /// Returns false when its row was stamped meanwhile
    /// ([`HeldSessions::remove`] during the creation). Then it is not
    /// registered and must never become visible.
    pub fn finish_create(&self, session_id: &str, session: Option<HeldSession>) -> bool {
        let mut inner = self.inner();
        let settled = inner
            .settle(session_id, |pending| pending.creating = false)
            .unwrap_or_default();
        if settled.stamped {
            return false;
        }
        if let Some(session) = session.filter(|_| settled.may_register()) {
            inner
                .sessions_mut()
                .insert(session.session_id.clone(), session);
        }
        true
    }

    /// The sessions whose creation is under way now.
    pub fn creating(&self) -> HashSet<String> {
        self.inner()
            .pending
            .iter()
            .filter(|(_, pending)| pending.creating)
            .map(|(session_id, _)| session_id.clone())
            .collect()
    }

    /// Whether a creation of this session is under way.
    pub fn is_creating(&self, session_id: &str) -> bool {
        self.inner()
            .pending
            .get(session_id)
            .is_some_and(|pending| pending.creating)
    }

    /// Begins adopting a session restored after a restart.
    ///
    /// It is taken before the session's row is read. So a stamp landing
    /// after the read, which the row could not show, still keeps the
    /// session out (see [`Adoption::register`]).
    pub fn begin_adopt(self: &Arc<Self>, session_id: &str) -> Adoption {
        self.inner()
            .pending
            .entry(session_id.to_owned())
            .or_default()
            .adoptions += 1;
        Adoption {
            memory: Arc::clone(self),
            session_id: session_id.to_owned(),
        }
    }

    /// The registered session's input stream.
    pub fn input(&self, session_id: &str) -> Option<Arc<SessionInput>> {
        let inner = self.inner();
        Some(Arc::clone(&inner.sessions.get(session_id)?.input))
    }

    /// Gives a session its new name, and the title too while it is the
    /// old name (its program set none).
    ///
    /// It counts as a change whether or not the session is registered,
    /// since a list may show it from its row.
    pub fn rename(&self, session_id: &str, name: &str) {
        let mut inner = self.inner();
        if inner.pending.contains_key(session_id) {
            inner.renamed.insert(session_id.to_owned(), name.to_owned());
        }
        if let Some(session) = inner.sessions_mut().get_mut(session_id) {
            session.rename(name);
        }
    }

    /// The session's last known title, if it is registered.
    pub fn title(&self, session_id: &str) -> Option<String> {
        Some(self.inner().sessions.get(session_id)?.title.clone())
    }

    /// What this process knows of the session, if it holds it.
    pub fn get(&self, session_id: &str) -> Option<HeldSession> {
        self.inner().sessions.get(session_id).cloned()
    }

    /// Whether this process has an attach stream open to the session.
    pub fn is_attached(&self, session_id: &str) -> bool {
        self.inner()
            .sessions
            .get(session_id)
            .is_some_and(|session| session.attachments > 0)
    }

    /// Whether the session is registered.
    pub fn contains(&self, session_id: &str) -> bool {
        self.inner().sessions.contains_key(session_id)
    }

    /// Forgets a session whose row was just stamped (disposed, or its
    /// workspace closed).
    ///
    /// A creation of it still under way will not register it. Stamping the
    /// row, then this, then the creation's [`HeldSessions::finish_create`]
    /// is the order that keeps it hidden.
    pub fn remove(&self, session_id: &str) -> Option<HeldSession> {
        let mut inner = self.inner();
        if let Some(pending) = inner.pending.get_mut(session_id) {
            pending.stamped = true;
        }
        inner.sessions_mut().remove(session_id)
    }

    /// The workspace's registered sessions, as they are now.
    pub fn snapshot(&self, workspace_id: &str) -> Vec<HeldSession> {
        self.inner()
            .sessions
            .values()
            .filter(|session| session.workspace_id == workspace_id)
            .cloned()
            .collect()
    }

    /// Records an exit.
    ///
    /// An exited session is forgotten once nothing is attached to it, so
    /// memory holds live sessions only, however long the process runs.
    pub fn mark_exited(&self, session_id: &str, code: Option<i32>, signal: Option<i32>) {
        let mut inner = self.inner();
        if let Some(pending) = inner.pending.get_mut(session_id) {
            pending.exited = true;
        }
        let sessions = inner.sessions_mut();
        if let Some(session) = sessions.get_mut(session_id) {
            session.exit = Some((code, signal));
            if session.attachments == 0 {
                sessions.remove(session_id);
            }
        }
    }

    /// Records that every registered session died (its daemon died), and
    /// every session still being created or adopted.
    ///
    /// What the dead daemon said of them (started, alive) no longer holds.
    /// Registered, they would be listed alive for good, their rows settled
    /// already.
    pub fn mark_all_exited(&self) {
        let mut inner = self.inner();
        for pending in inner.pending.values_mut() {
            pending.exited = true;
        }
        let sessions = inner.sessions_mut();
        for session in sessions.values_mut() {
            session.exit.get_or_insert((None, None));
        }
        sessions.retain(|_, session| session.attachments > 0);
    }

    /// Each change to the registered sessions, as its new generation, and
    /// each change of the daemon's list (see [`Self::daemon_changed`]):
    /// what wakes the watches.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner().changes.0.subscribe()
    }

    /// Wakes the watches though memory did not change: the daemon says its
    /// list did (a title a program set, a size).
    pub fn daemon_changed(&self) {
        self.inner().changes.0.send_modify(|_| {});
    }

    /// Counts changes to the registered sessions.
    ///
    /// The same number means the same sessions, attachments and exits.
    pub fn generation(&self) -> u64 {
        self.inner().generation
    }

    /// Visits every registered session under the lock, and returns the
    /// generation they are at.
    ///
    /// So a list can read them and refresh what the daemon says of them
    /// without copying each first. What the daemon says is no change here.
    /// A list made from it knows the daemon's generation.
    pub fn visit(&self, mut visit: impl FnMut(&mut HeldSession)) -> u64 {
        let mut inner = self.inner();
        inner.sessions.values_mut().for_each(&mut visit);
        inner.generation
    }

    /// Counts an attach stream until the returned guard is dropped.
    ///
    /// A session not registered (its adoption failed) is not counted. The
    /// guard then uncounts nothing, even should the session be registered
    /// before it is dropped.
    pub fn attach(self: &Arc<Self>, session_id: &str) -> AttachGuard {
        let counted = match self.inner().sessions_mut().get_mut(session_id) {
            Some(session) => {
                session.attachments += 1;
                true
            }
            None => false,
        };
        AttachGuard {
            memory: Arc::clone(self),
            session_id: session_id.to_owned(),
            counted,
        }
    }

    /// Takes over an attachment already counted.
    ///
    /// It is the attachment of a session registered attached by the stream
    /// that started it. Dropping the guard ends it.
    pub fn attachment(self: &Arc<Self>, session_id: &str) -> AttachGuard {
        AttachGuard {
            memory: Arc::clone(self),
            session_id: session_id.to_owned(),
            counted: true,
        }
    }
}

/// An adoption under way, from before its session's row was read until
/// it registers the session or is dropped.
pub struct Adoption {
    memory: Arc<HeldSessions>,
    session_id: String,
}

impl Adoption {
    /// Registers the session, unless it is already known, or its row was
    /// stamped or it exited since the adoption began.
    ///
    /// In those last two cases it stays out of memory. A stamped session
    /// belongs out of every list. An exited one, registered, would be
    /// listed alive although it is not.
    /// Returns whether it is registered now.
    pub fn register(self, mut session: HeldSession) -> bool {
        let mut inner = self.memory.inner();
        if !inner
            .pending
            .get(&self.session_id)
            .is_none_or(Pending::may_register)
        {
            return false;
        }
        // Renamed since its row was read.
        if let Some(name) = inner.renamed.get(&self.session_id) {
            session.rename(name);
        }
        inner
            .sessions_mut()
            .entry(session.session_id.clone())
            .or_insert(session);
        true
    }
}

impl Drop for Adoption {
    fn drop(&mut self) {
        self.memory.inner().settle(&self.session_id, |pending| {
            pending.adoptions = pending.adoptions.saturating_sub(1);
        });
    }
}

/// Keeps a session marked attached while an attach stream is open.
pub struct AttachGuard {
    memory: Arc<HeldSessions>,
    session_id: String,
    /// Whether the attachment was counted, so is to be uncounted.
    counted: bool,
}

impl Drop for AttachGuard {
    fn drop(&mut self) {
        if !self.counted {
            return;
        }
        let mut inner = self.memory.inner();
        let sessions = inner.sessions_mut();
        if let Some(session) = sessions.get_mut(&self.session_id) {
            session.attachments = session.attachments.saturating_sub(1);
            if session.attachments == 0 && session.exit.is_some() {
                sessions.remove(&self.session_id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(id: &str) -> HeldSession {
        HeldSession {
            session_id: id.into(),
            workspace_id: "w".into(),
            listed: true,
            title: String::new(),
            name: String::new(),
            pid: 1,
            cols: 80,
            rows: 24,
            created_at: SystemTime::now(),
            attachments: 0,
            exit: None,
            input: Default::default(),
        }
    }

    fn adopt(memory: &Arc<HeldSessions>, id: &str) {
        assert!(memory.begin_adopt(id).register(session(id)));
    }

    #[test]
    fn a_session_stamped_while_being_adopted_is_never_registered() {
        let memory = Arc::new(HeldSessions::default());
        // Its row read before the stamp, registered after it.
        let adoption = memory.begin_adopt("disposed");
        let other = memory.begin_adopt("disposed");
        assert!(memory.remove("disposed").is_none());
        assert!(!adoption.register(session("disposed")));
        assert!(!other.register(session("disposed")));
        assert!(!memory.contains("disposed"));
        // The mark goes with the adoptions: a later one (whose row read
        // would refuse a stamped session) is registered.
        adopt(&memory, "disposed");
        assert!(memory.contains("disposed"));
        assert!(memory.inner().pending.is_empty(), "nothing left behind");
    }

    #[test]
    fn exited_sessions_are_forgotten_once_detached() {
        let memory = Arc::new(HeldSessions::default());
        adopt(&memory, "a");
        adopt(&memory, "b");
        let attached = memory.attach("b");
        memory.mark_exited("a", Some(0), None);
        memory.mark_exited("b", None, Some(9));
        assert!(!memory.contains("a"), "nothing attached: forgotten at once");
        assert!(memory.contains("b"), "kept while its stream is open");
        drop(attached);
        assert!(!memory.contains("b"));
    }

    #[test]
    fn a_session_that_exits_while_being_adopted_is_never_registered() {
        let memory = Arc::new(HeldSessions::default());
        let adoption = memory.begin_adopt("s");
        // Its exit, reported after the daemon's answer said it was alive.
        memory.mark_exited("s", Some(0), None);
        assert!(!adoption.register(session("s")));
        assert!(!memory.contains("s"));
        // Forgotten once settled: a later adoption is judged afresh.
        adopt(&memory, "s");
    }

    #[test]
    fn a_session_that_exits_while_being_created_is_never_registered() {
        let memory = HeldSessions::default();
        memory.begin_create("quick");
        memory.mark_exited("quick", Some(0), None);
        memory.finish_create("quick", Some(session("quick")));
        assert!(!memory.contains("quick"));
        assert!(!memory.is_creating("quick"));
    }

    #[test]
    fn a_session_stamped_while_being_created_is_never_registered() {
        let memory = HeldSessions::default();
        memory.begin_create("closed");
        assert!(memory.remove("closed").is_none());
        assert!(!memory.finish_create("closed", Some(session("closed"))));
        assert!(!memory.contains("closed"));
        // The mark goes with the creation: a later one is registered.
        memory.begin_create("closed");
        assert!(memory.finish_create("closed", Some(session("closed"))));
        assert!(memory.contains("closed"));
    }

    #[test]
    fn every_change_a_list_shows_moves_the_generation() {
        let memory = Arc::new(HeldSessions::default());
        let mut last = memory.generation();
        let mut changed = |what: &str| {
            let now = memory.generation();
            assert!(now > last, "{what} left the generation at {now}");
            last = now;
        };
        adopt(&memory, "a");
        changed("adopting");
        memory.begin_create("b");
        memory.finish_create("b", Some(session("b")));
        changed("registering a creation");
        let attached = memory.attach("a");
        changed("attaching");
        drop(attached);
        changed("detaching");
        memory.rename("a", "renamed");
        changed("renaming");
        memory.rename("unknown", "renamed");
        changed("renaming a session only its row shows");
        memory.mark_exited("b", Some(0), None);
        changed("an exit");
        memory.remove("a");
        changed("forgetting");
        adopt(&memory, "c");
        memory.mark_all_exited();
        changed("the daemon dying");
        // What the daemon says is no change of memory's.
        let visited = memory.visit(|session| session.refresh("t", 2, 100, 30));
        assert_eq!(visited, last);
        assert_eq!(memory.generation(), last);
    }

    #[test]
    fn sessions_being_created_or_adopted_when_the_daemon_dies_stay_out() {
        let memory = Arc::new(HeldSessions::default());
        memory.begin_create("created");
        let adoption = memory.begin_adopt("adopted");
        memory.mark_all_exited();
        assert!(memory.finish_create("created", Some(session("created"))));
        assert!(!adoption.register(session("adopted")));
        assert!(!memory.contains("created") && !memory.contains("adopted"));
        // Once settled, a later creation of another session is not affected.
        memory.begin_create("later");
        assert!(memory.finish_create("later", Some(session("later"))));
        assert!(memory.contains("later"));
    }

    #[test]
    fn a_session_registered_attached_is_detached_by_its_guard() {
        let memory = Arc::new(HeldSessions::default());
        memory.begin_create("s");
        let attached = HeldSession {
            attachments: 1,
            ..session("s")
        };
        assert!(memory.finish_create("s", Some(attached)));
        let guard = memory.attachment("s");
        assert_eq!(memory.snapshot("w")[0].attachments, 1);
        memory.mark_exited("s", Some(0), None);
        assert!(memory.contains("s"), "kept while its stream is open");
        drop(guard);
        assert!(!memory.contains("s"));
    }

    #[test]
    fn a_session_renamed_while_being_adopted_is_registered_renamed() {
        let memory = Arc::new(HeldSessions::default());
        let adoption = memory.begin_adopt("a");
        // Its row was read with the old name; then it is renamed.
        memory.rename("a", "new");
        let read = HeldSession {
            name: "old".into(),
            title: "old".into(),
            ..session("a")
        };
        assert!(adoption.register(read));
        let inner = memory.inner();
        let registered = &inner.sessions["a"];
        assert_eq!((&*registered.name, &*registered.title), ("new", "new"));
        assert!(inner.renamed.is_empty(), "nothing left behind");
    }

    #[test]
    fn a_rename_changes_the_title_only_while_the_program_set_none() {
        let memory = Arc::new(HeldSessions::default());
        for (id, title) in [("given", "old"), ("own", "vim: main.rs")] {
            adopt(&memory, id);
            let mut inner = memory.inner();
            let session = inner.sessions_mut().get_mut(id).expect("adopted");
            session.name = "old".into();
            session.title = title.into();
        }
        memory.rename("given", "new");
        memory.rename("own", "new");
        let named = |id: &str| {
            let inner = memory.inner();
            let session = &inner.sessions[id];
            (session.name.clone(), session.title.clone())
        };
        assert_eq!(named("given"), ("new".into(), "new".into()));
        assert_eq!(named("own"), ("new".into(), "vim: main.rs".into()));
    }

    #[test]
    fn attachments_are_counted_per_stream() {
        let memory = Arc::new(HeldSessions::default());
        adopt(&memory, "a");
        let first = memory.attach("a");
        let second = memory.attach("a");
        assert_eq!(memory.snapshot("w")[0].attachments, 2);
        drop(first);
        assert_eq!(memory.snapshot("w")[0].attachments, 1);
        drop(second);
        assert_eq!(memory.snapshot("w")[0].attachments, 0);
    }

    #[test]
    fn a_stream_opened_before_its_session_was_adopted_uncounts_nothing() {
        let memory = Arc::new(HeldSessions::default());
        // Its adoption failed (the daemon's answer late): not counted.
        let early = memory.attach("a");
        // A later write adopts it; another client attaches.
        adopt(&memory, "a");
        let counted = memory.attach("a");
        drop(early);
        assert_eq!(
            memory.snapshot("w")[0].attachments,
            1,
            "still attached, so never listed as in the background"
        );
        drop(counted);
        assert_eq!(memory.snapshot("w")[0].attachments, 0);
    }
}
