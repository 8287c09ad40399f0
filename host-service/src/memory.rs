//! Attachment plumbing: the sessions this host-service process has created,
//! attached to or adopted since it started. It empties on every restart,
//! which is why lists never come from it alone (see `live_sessions`).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

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
}

#[derive(Default)]
struct Inner {
    sessions: HashMap<String, MemorySession>,
    /// Sessions whose creation is under way: rowed but maybe not yet spawned.
    creating: HashSet<String>,
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
    /// session if it started.
    pub fn finish_create(&self, session_id: &str, session: Option<MemorySession>) {
        let mut inner = self.inner();
        inner.creating.remove(session_id);
        if let Some(session) = session {
            inner.sessions.insert(session.session_id.clone(), session);
        }
    }

    /// Whether a creation of this session is under way.
    pub fn is_creating(&self, session_id: &str) -> bool {
        self.inner().creating.contains(session_id)
    }

    /// Registers a session restored after a restart (adopted on demand),
    /// unless it is already known.
    pub fn adopt(&self, session: MemorySession) {
        self.inner()
            .sessions
            .entry(session.session_id.clone())
            .or_insert(session);
    }

    /// Whether the session is registered.
    pub fn contains(&self, session_id: &str) -> bool {
        self.inner().sessions.contains_key(session_id)
    }

    /// Forgets a session (it was disposed).
    pub fn remove(&self, session_id: &str) -> Option<MemorySession> {
        self.inner().sessions.remove(session_id)
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
    pub fn mark_exited(&self, session_id: &str, code: Option<i32>, signal: Option<i32>) {
        if let Some(session) = self.inner().sessions.get_mut(session_id) {
            session.exit = Some((code, signal));
        }
    }

    /// Records that every registered session died (its daemon died).
    pub fn mark_all_exited(&self) {
        for session in self.inner().sessions.values_mut() {
            session.exit.get_or_insert((None, None));
        }
    }

    /// Refreshes what the daemon last said of a session.
    pub fn refresh(&self, session_id: &str, title: &str, pid: u32, cols: u32, rows: u32) {
        if let Some(session) = self.inner().sessions.get_mut(session_id) {
            if !title.is_empty() && session.title != title {
                session.title = title.to_owned();
            }
            session.pid = pid;
            session.cols = cols;
            session.rows = rows;
        }
    }

    /// Counts an attach stream until the returned guard is dropped.
    pub fn attach(self: &Arc<Self>, session_id: &str) -> AttachGuard {
        if let Some(session) = self.inner().sessions.get_mut(session_id) {
            session.attachments += 1;
        }
        AttachGuard {
            memory: Arc::clone(self),
            session_id: session_id.to_owned(),
        }
    }
}

/// Keeps a session marked attached while an attach stream is open.
pub struct AttachGuard {
    memory: Arc<Memory>,
    session_id: String,
}

impl Drop for AttachGuard {
    fn drop(&mut self) {
        if let Some(session) = self.memory.inner().sessions.get_mut(&self.session_id) {
            session.attachments = session.attachments.saturating_sub(1);
        }
    }
}
