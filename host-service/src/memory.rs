//! Attachment plumbing: the sessions this host-service process has created,
//! attached to or adopted since it started. It empties on every restart,
//! which is why lists never come from it alone (see `live_sessions`).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use crate::input::SessionInput;

/// What this process knows of one session.
#[derive(Debug, Clone)]
pub struct MemorySession {
    /// The session's id.
    pub session_id: String,
    /// Its workspace.
    pub workspace_id: String,
    /// Whether lists show it.
    pub listed: bool,
    /// Last known title (from the daemon, else the row).
    pub title: String,
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

impl MemorySession {
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
    sessions: HashMap<String, MemorySession>,
    /// Sessions whose creation is under way: rowed but maybe not yet spawned.
    creating: HashSet<String>,
    /// Sessions that exited before their creation finished registering.
    exited_while_creating: HashSet<String>,
    /// Sessions whose rows were stamped (disposed, workspace closed) before
    /// their creation finished registering.
    stamped_while_creating: HashSet<String>,
    /// Sessions being adopted after a restart, with what befell them
    /// meanwhile.
    adopting: HashMap<String, Adoptions>,
    /// Counts changes to `sessions`, so a list made from them can tell
    /// whether it still holds.
    generation: u64,
}

/// The adoptions of one session under way.
#[derive(Default)]
struct Adoptions {
    /// How many.
    under_way: u32,
    /// Whether its row was stamped (disposed, workspace closed) since the
    /// first began.
    stamped: bool,
}

impl Inner {
    /// `sessions`, for a change.
    fn sessions_mut(&mut self) -> &mut HashMap<String, MemorySession> {
        self.generation += 1;
        &mut self.sessions
    }
}

/// The in-memory session map.
#[derive(Default)]
pub struct Memory {
    inner: Mutex<Inner>,
}

impl Memory {
    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Notes that a session is being created, so the reaper leaves its row
    /// and daemon session alone until it is registered.
    pub fn begin_create(&self, session_id: &str) {
        self.inner().creating.insert(session_id.to_owned());
    }

    /// Ends a creation started with `begin_create`, registering the
    /// session if it started. False when its row was stamped meanwhile
    /// ([`Memory::remove`] during the creation): then it is not registered
    /// and must never become visible.
    pub fn finish_create(&self, session_id: &str, session: Option<MemorySession>) -> bool {
        let mut inner = self.inner();
        inner.creating.remove(session_id);
        let exited = inner.exited_while_creating.remove(session_id);
        if inner.stamped_while_creating.remove(session_id) {
            return false;
        }
        if let Some(session) = session.filter(|_| !exited) {
            inner
                .sessions_mut()
                .insert(session.session_id.clone(), session);
        }
        true
    }

    /// The sessions whose creation is under way now.
    pub fn creating(&self) -> HashSet<String> {
        self.inner().creating.clone()
    }

    /// Whether a creation of this session is under way.
    pub fn is_creating(&self, session_id: &str) -> bool {
        self.inner().creating.contains(session_id)
    }

    /// Begins adopting a session restored after a restart: taken before
    /// its row is read, so that a stamp landing after the read, which the
    /// row could not show, still keeps the session out (see
    /// [`Adoption::register`]).
    pub fn begin_adopt(self: &Arc<Self>, session_id: &str) -> Adoption {
        self.inner()
            .adopting
            .entry(session_id.to_owned())
            .or_default()
            .under_way += 1;
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

    /// Whether the session is registered.
    pub fn contains(&self, session_id: &str) -> bool {
        self.inner().sessions.contains_key(session_id)
    }

    /// Forgets a session whose row was just stamped (disposed, or its
    /// workspace closed). A creation of it still under way will not
    /// register it: stamping the row, then this, then the creation's
    /// [`Memory::finish_create`] is the order that keeps it hidden.
    pub fn remove(&self, session_id: &str) -> Option<MemorySession> {
        let mut inner = self.inner();
        if inner.creating.contains(session_id) {
            inner.stamped_while_creating.insert(session_id.to_owned());
        }
        if let Some(adoptions) = inner.adopting.get_mut(session_id) {
            adoptions.stamped = true;
        }
        inner.sessions_mut().remove(session_id)
    }

    /// The workspace's registered sessions, as they are now.
    pub fn snapshot(&self, workspace_id: &str) -> Vec<MemorySession> {
        self.inner()
            .sessions
            .values()
            .filter(|session| session.workspace_id == workspace_id)
            .cloned()
            .collect()
    }

    /// Records an exit.
    /// An exited session is forgotten once nothing is attached to it, so
    /// memory holds live sessions only, however long the process runs.
    pub fn mark_exited(&self, session_id: &str, code: Option<i32>, signal: Option<i32>) {
        let mut inner = self.inner();
        if inner.creating.contains(session_id) {
            inner.exited_while_creating.insert(session_id.to_owned());
        }
        let sessions = inner.sessions_mut();
        if let Some(session) = sessions.get_mut(session_id) {
            session.exit = Some((code, signal));
            if session.attachments == 0 {
                sessions.remove(session_id);
            }
        }
    }

    /// Records that every registered session died (its daemon died).
    pub fn mark_all_exited(&self) {
        let mut inner = self.inner();
        let sessions = inner.sessions_mut();
        for session in sessions.values_mut() {
            session.exit.get_or_insert((None, None));
        }
        sessions.retain(|_, session| session.attachments > 0);
    }

    /// Counts changes to the registered sessions: the same number means
    /// the same sessions, attachments and exits.
    pub fn generation(&self) -> u64 {
        self.inner().generation
    }

    /// Visits every registered session under the lock, so a list can read
    /// them and refresh what the daemon says of them without copying each
    /// first; returns the generation they are at. What the daemon says is
    /// no change here: a list made from it knows the daemon's generation.
    pub fn visit(&self, mut visit: impl FnMut(&mut MemorySession)) -> u64 {
        let mut inner = self.inner();
        inner.sessions.values_mut().for_each(&mut visit);
        inner.generation
    }

    /// Counts an attach stream until the returned guard is dropped. A
    /// session not registered (its adoption failed) is not counted, and
    /// the guard then uncounts nothing, even should the session be
    /// registered before it is dropped.
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

    /// Takes over an attachment already counted: that of a session
    /// registered attached by the stream that started it. Dropping the
    /// guard ends it.
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
    memory: Arc<Memory>,
    session_id: String,
}

impl Adoption {
    /// Registers the session, unless it is already known or its row was
    /// stamped since the adoption began (then it stays out of memory, and
    /// so out of every list). Whether it is registered now.
    pub fn register(self, session: MemorySession) -> bool {
        let mut inner = self.memory.inner();
        if inner
            .adopting
            .get(&self.session_id)
            .is_some_and(|adoptions| adoptions.stamped)
        {
            return false;
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
        let mut inner = self.memory.inner();
        if let Some(adoptions) = inner.adopting.get_mut(&self.session_id) {
            adoptions.under_way -= 1;
            if adoptions.under_way == 0 {
                inner.adopting.remove(&self.session_id);
            }
        }
    }
}

/// Keeps a session marked attached while an attach stream is open.
pub struct AttachGuard {
    memory: Arc<Memory>,
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

    fn session(id: &str) -> MemorySession {
        MemorySession {
            session_id: id.into(),
            workspace_id: "w".into(),
            listed: true,
            title: String::new(),
            pid: 1,
            cols: 80,
            rows: 24,
            created_at: SystemTime::now(),
            attachments: 0,
            exit: None,
            input: Default::default(),
        }
    }

    fn adopt(memory: &Arc<Memory>, id: &str) {
        assert!(memory.begin_adopt(id).register(session(id)));
    }

    #[test]
    fn a_session_stamped_while_being_adopted_is_never_registered() {
        let memory = Arc::new(Memory::default());
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
        assert!(memory.inner().adopting.is_empty(), "nothing left behind");
    }

    #[test]
    fn exited_sessions_are_forgotten_once_detached() {
        let memory = Arc::new(Memory::default());
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
    fn a_session_that_exits_while_being_created_is_never_registered() {
        let memory = Memory::default();
        memory.begin_create("quick");
        memory.mark_exited("quick", Some(0), None);
        memory.finish_create("quick", Some(session("quick")));
        assert!(!memory.contains("quick"));
        assert!(!memory.is_creating("quick"));
    }

    #[test]
    fn a_session_stamped_while_being_created_is_never_registered() {
        let memory = Memory::default();
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
        let memory = Arc::new(Memory::default());
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
    fn a_session_registered_attached_is_detached_by_its_guard() {
        let memory = Arc::new(Memory::default());
        memory.begin_create("s");
        let attached = MemorySession {
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
    fn attachments_are_counted_per_stream() {
        let memory = Arc::new(Memory::default());
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
        let memory = Arc::new(Memory::default());
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
