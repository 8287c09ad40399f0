//! Which sessions of a workspace are live.
//!
//! This is the single derived function behind `ListSessions` and
//! `CountBackgroundSessions`.
//!
//! live = in-memory sessions ∪ (daemon-alive ⨝ active, listed, unstamped
//! rows of the workspace). The daemon is asked under a deadline. When it
//! does not answer in time, the memory view is returned, flagged.
//!
//! The daemon is asked on every call. What it says is joined with memory
//! once per change. While neither the daemon's list (its generation) nor
//! memory (its own) changed, a workspace's list is the last one with fresh
//! output offsets.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, SystemTime};
use tokio::time::Instant;

use holdfast_api::proto::daemon::v1 as daemon;
use holdfast_plumbing::daemon_client::DaemonClient;
use holdfast_plumbing::preencoded::Heads;

use crate::daemon::supervisor::DaemonHealth;
use crate::error::Result;
use crate::sessions::held_sessions::{HeldSession, HeldSessions};
use crate::store::{self, Store, StoreError};

/// How complete a list is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The daemon answered.
    ///
    /// Every live session is included.
    Complete,
    /// The daemon or the database did not answer in time.
    ///
    /// The list is only what memory holds. The string says why.
    MemoryOnly(String),
}

/// One live session, as lists show it (its output offset apart).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveSession {
    /// The session's id.
    pub session_id: String,
    /// Its workspace.
    pub workspace_id: String,
    /// OSC title from the daemon, else the last known or given title.
    pub title: String,
    /// The title given at creation, or by a rename since.
    pub name: String,
    /// Whether this process has an attach stream open to it.
    pub attached: bool,
    /// The program's pid.
    pub pid: u32,
    /// Terminal width.
    pub cols: u32,
    /// Terminal height.
    pub rows: u32,
    /// When it was created.
    pub created_at: SystemTime,
}

/// A workspace's live sessions, oldest first, as one daemon list and one
/// state of memory show them.
///
/// It holds everything a list shows but the output offsets. Lists that
/// find neither changed share it.
#[derive(Debug, Default)]
pub struct Rendered {
    /// Names this list for `ListSessionsRequest.if_generation`.
    ///
    /// It is 0 for a memory-only list, which no request may hold.
    pub generation: u64,
    /// The sessions.
    pub sessions: Vec<LiveSession>,
    /// Where each session is in the daemon's list, for its output offset.
    ///
    /// It is empty when only memory answered.
    slots: Vec<usize>,
    /// The sessions encoded for `ListSessions`, by the first list that
    /// needs them.
    pub encoded: OnceLock<Heads>,
}

impl Rendered {
    /// Sessions as memory alone shows them: in no daemon list.
    pub fn from_memory(sessions: Vec<LiveSession>) -> Self {
        Self {
            sessions,
            ..Default::default()
        }
    }
}

/// The answer to "which sessions of this workspace are live?".
#[derive(Debug)]
pub struct LiveSessions {
    /// Live, listed sessions, oldest first.
    pub rendered: Arc<Rendered>,
    /// What the daemon said, for the output offsets.
    ///
    /// There is none when only memory answered.
    daemon: Option<DaemonView>,
    /// How complete the list is.
    pub source: Source,
}

impl LiveSessions {
    /// Live, listed sessions, oldest first.
    pub fn sessions(&self) -> &[LiveSession] {
        &self.rendered.sessions
    }

    /// Each session's output bytes so far, in the same order (all 0 when
    /// only memory answered).
    ///
    /// Only lists read them. Counts need none.
    pub fn output_offsets(&self) -> Vec<u64> {
        match &self.daemon {
            Some(view) => {
                let slots = self.rendered.slots.iter();
                slots.map(|&slot| view.output_offset(slot)).collect()
            }
            None => vec![0; self.rendered.sessions.len()],
        }
    }

    /// Listed live sessions whose ids are not in `attached_session_ids`.
    pub fn background_count(&self, attached_session_ids: &[String]) -> usize {
        let attached: HashSet<&str> = attached_session_ids.iter().map(String::as_str).collect();
        self.sessions()
            .iter()
            .filter(|session| !attached.contains(session.session_id.as_str()))
            .count()
    }
}

/// Everything the derived function reads.
#[derive(Clone)]
pub struct LiveSessionView {
    /// Session rows.
    pub store: Store,
    /// Attachment plumbing.
    pub memory: Arc<HeldSessions>,
    /// The daemon, connected lazily.
    pub daemon: DaemonClient,
    /// What the supervisor knows of the daemon.
    pub health: DaemonHealth,
    /// How long the daemon gets to answer, connecting included.
    pub deadline: Duration,
    /// The daemon's last full list, to ask "if still this generation".
    pub last_list: Arc<Mutex<Option<DaemonList>>>,
    /// Each workspace's last list, with what it was made from.
    pub renders: Arc<Renders>,
}

/// A full daemon list, indexed by session id once, and the generation it
/// belongs to.
///
/// Cloning shares it.
#[derive(Debug, Clone)]
pub struct DaemonList {
    daemon_pid: u32,
    generation: u64,
    sessions: Arc<Vec<daemon::Session>>,
    index: Arc<HashMap<String, usize>>,
}

impl DaemonList {
    fn new(daemon_pid: u32, generation: u64, sessions: Vec<daemon::Session>) -> Self {
        let index = sessions
            .iter()
            .enumerate()
            .map(|(at, session)| (session.session_id.clone(), at))
            .collect();
        Self {
            daemon_pid,
            generation,
            sessions: Arc::new(sessions),
            index: Arc::new(index),
        }
    }

    /// Where the session is in the list, and the session.
    fn find(&self, session_id: &str) -> Option<(usize, &daemon::Session)> {
        let at = *self.index.get(session_id)?;
        Some((at, &self.sessions[at]))
    }
}

/// The daemon's sessions for one request.
///
/// They are a full list, possibly shared with earlier requests, and fresh
/// output offsets when it was reused.
#[derive(Debug)]
struct DaemonView {
    list: DaemonList,
    fresh_offsets: Option<Vec<u64>>,
}

impl DaemonView {
    fn output_offset(&self, at: usize) -> u64 {
        match &self.fresh_offsets {
            Some(offsets) => offsets[at],
            None => self.list.sessions[at].output_offset,
        }
    }
}

/// Why the rows are missing from a list.
pub enum Rows<'a> {
    /// Reading them failed.
    Failed(&'a StoreError),
    /// They did not come within the time they were given.
    ///
    /// It holds what was left of the deadline when they were asked for.
    Late(Duration),
}

/// Each workspace's last list, kept while what it was made from stands.
#[derive(Debug, Default)]
pub struct Renders(Mutex<HashMap<String, Render>>);

/// A list and what it was made from.
#[derive(Debug)]
struct Render {
    /// The very daemon list it was made from.
    ///
    /// Its slots index that list. An "unchanged" answer reuses the list it
    /// confirms, so this holds while only output moves. Two full lists of
    /// one generation may still differ. A daemon too old to count
    /// generations says 0 for all, and a list may be read while a session
    /// is forgotten. So equal generations are not enough.
    daemon_sessions: Arc<Vec<daemon::Session>>,
    memory_generation: u64,
    rendered: Arc<Rendered>,
}

impl Render {
    fn made_from(&self, list: &DaemonList, memory_generation: u64) -> bool {
        Arc::ptr_eq(&self.daemon_sessions, &list.sessions)
            && self.memory_generation == memory_generation
    }
}

impl Renders {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Render>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The workspace's last list, if it was made from `list` and memory as
    /// it is at `memory_generation`.
    fn get(
        &self,
        workspace_id: &str,
        list: &DaemonList,
        memory_generation: u64,
    ) -> Option<Arc<Rendered>> {
        let renders = self.lock();
        let render = renders.get(workspace_id)?;
        render
            .made_from(list, memory_generation)
            .then(|| Arc::clone(&render.rendered))
    }

    /// Keeps `rendered` as the workspace's list.
    ///
    /// Lists made from any other daemon list or memory generation go. The
    /// newest is what is asked with, so they would never be used again.
    fn put(
        &self,
        workspace_id: &str,
        list: &DaemonList,
        memory_generation: u64,
        rendered: &Arc<Rendered>,
    ) {
        let mut renders = self.lock();
        renders.retain(|_, render| render.made_from(list, memory_generation));
        renders.insert(
            workspace_id.to_owned(),
            Render {
                daemon_sessions: Arc::clone(&list.sessions),
                memory_generation,
                rendered: Arc::clone(rendered),
            },
        );
    }
}

impl LiveSessionView {
    /// The workspace's live sessions.
    ///
    /// It is read-only, and never spawns, kills or attaches. It never fails
    /// because of the daemon or the database. It never waits much past
    /// `until` for either. `until` is the configured deadline, counted from
    /// the request's start.
    pub async fn list_live_sessions(&self, workspace_id: &str, until: Instant) -> LiveSessions {
        let view = match self.ask_daemon(until).await {
            Ok(view) => view,
            Err(reason) => {
                tracing::warn!(workspace_id, %reason, "daemon did not answer; listing from memory only");
                return self.memory_only(workspace_id, reason, None);
            }
        };
        // This runs after the daemon answered. A session disposed meanwhile
        // has left memory by now and is not returned.
        let rendered = match self
            .renders
            .get(workspace_id, &view.list, self.memory.generation())
        {
            Some(rendered) => rendered,
            // Which background sessions may be listed only the rows tell.
            // Without them memory is all there is. Rows wait for a pooled
            // connection, which writers stuck on another process's lock
            // may hold for seconds. So they are not waited for past the
            // deadline either.
            None => {
                let given = until.saturating_duration_since(Instant::now());
                match tokio::time::timeout_at(until, self.render(workspace_id, &view)).await {
                    Ok(Ok(rendered)) => rendered,
                    Ok(Err(error)) => {
                        return self.without_rows_of(
                            workspace_id,
                            Rows::Failed(&error),
                            Some(&view),
                        );
                    }
                    Err(_) => {
                        return self.without_rows_of(workspace_id, Rows::Late(given), Some(&view));
                    }
                }
            }
        };
        LiveSessions {
            rendered,
            daemon: Some(view),
            source: Source::Complete,
        }
    }

    /// The memory view, when the rows cannot be had.
    ///
    /// Only the rows tell which background sessions may be listed.
    pub fn without_rows(&self, workspace_id: &str, rows: Rows<'_>) -> LiveSessions {
        self.without_rows_of(workspace_id, rows, None)
    }

    /// The memory view for want of rows, with `daemon`'s word, if it came,
    /// on which sessions are alive.
    fn without_rows_of(
        &self,
        workspace_id: &str,
        rows: Rows<'_>,
        daemon: Option<&DaemonView>,
    ) -> LiveSessions {
        let reason = match rows {
            Rows::Failed(error) => format!("the database could not be read: {error}"),
            Rows::Late(given) => format!(
                "the database did not answer within {} ms",
                given.as_millis()
            ),
        };
        tracing::warn!(workspace_id, %reason, "listing from memory only");
        self.memory_only(workspace_id, reason, daemon)
    }

    /// The sessions `HeldSessions` holds.
    ///
    /// When the daemon answered, only the ones it lists alive are kept. Its
    /// word on liveness is fresher than memory's, as an exit may not have
    /// reached memory yet.
    fn memory_only(
        &self,
        workspace_id: &str,
        reason: String,
        daemon: Option<&DaemonView>,
    ) -> LiveSessions {
        let mut memory = self.memory.snapshot(workspace_id);
        if let Some(daemon) = daemon {
            memory.retain(|session| {
                daemon
                    .list
                    .find(&session.session_id)
                    .is_some_and(|(_, listed)| listed.alive)
            });
        }
        memory_only(memory, reason)
    }

    /// Joins memory and, for what memory does not know, the database with
    /// the daemon's list.
    async fn render(
        &self,
        workspace_id: &str,
        view: &DaemonView,
    ) -> Result<Arc<Rendered>, StoreError> {
        let daemon_sessions = view.list.sessions.as_slice();
        // Which daemon sessions memory knows, by position in the list.
        let mut seen = vec![false; daemon_sessions.len()];
        // Each live session with its place in the daemon's list.
        let mut live = Vec::new();
        // A session this process is creating is not in the background. Its
        // creation registers it in memory (attached, if it was started with
        // its stream) once the daemon has answered. This set is taken
        // before memory is read. One registered in between is then seen
        // there, and one registered after is left for the next list.
        let creating = self.memory.creating();
        let memory_generation = self.memory.visit(|remembered| {
            let Some((index, session)) = view.list.find(&remembered.session_id) else {
                return;
            };
            seen[index] = true;
            // The daemon's word on liveness is fresher than memory's.
            if remembered.workspace_id != workspace_id
                || !session.alive
                || !remembered.listed
                || remembered.exit.is_some()
            {
                return;
            }
            // A reused list changed in nothing memory keeps.
            if view.fresh_offsets.is_none() {
                remembered.refresh(&session.title, session.pid, session.cols, session.rows);
            }
            let live_session = LiveSession {
                title: pick_title(&session.title, &remembered.title),
                name: remembered.name.clone(),
                attached: remembered.attachments > 0,
                pid: session.pid,
                cols: session.cols,
                rows: session.rows,
                session_id: remembered.session_id.clone(),
                workspace_id: remembered.workspace_id.clone(),
                created_at: remembered.created_at,
            };
            live.push((live_session, index));
        });

        // Sessions alive in the daemon that this process has not seen since
        // it started are background sessions. Only the database can say
        // which workspace they belong to and whether they may be listed.
        let unseen_alive = daemon_sessions
            .iter()
            .zip(&seen)
            .any(|(session, seen)| session.alive && !seen);
        if unseen_alive {
            for row in self.store.listable_sessions(workspace_id).await? {
                let Some((index, session)) = view.list.find(&row.id) else {
                    continue;
                };
                if seen[index] || !session.alive || creating.contains(&row.id) {
                    continue;
                }
                let live_session = LiveSession {
                    title: pick_title(&session.title, &row.title),
                    name: row.title,
                    attached: false,
                    pid: session.pid,
                    cols: session.cols,
                    rows: session.rows,
                    created_at: store::from_micros(row.created_at),
                    session_id: row.id,
                    workspace_id: row.workspace_id,
                };
                live.push((live_session, index));
            }
        }
        live.sort_unstable_by(|(a, _), (b, _)| oldest_first(a, b));
        let (sessions, slots) = live.into_iter().unzip();
        let rendered = Arc::new(Rendered {
            generation: next_list_generation(),
            sessions,
            slots,
            encoded: OnceLock::new(),
        });
        // Rows may change without memory or the daemon noticing (another
        // process's stamp, say). So a list read from them is not kept.
        if !unseen_alive {
            self.renders
                .put(workspace_id, &view.list, memory_generation, &rendered);
        }
        Ok(rendered)
    }

    /// The daemon's sessions, or why they could not be had in time.
    ///
    /// When nothing but output changed since the last full list, the
    /// daemon sends only the offsets and the last list is reused.
    async fn ask_daemon(&self, until: Instant) -> Result<DaemonView, String> {
        if let Some(reason) = self.health.down_reason() {
            return Err(reason);
        }
        let last = self.last_list().clone();
        let known = last.as_ref().map(|last| last.generation);
        let left = || until.saturating_duration_since(Instant::now());
        // What was left of the deadline. It is less than all of it when the
        // workspace's row was read first.
        let given = left();
        let timed_out = || {
            format!(
                "the pty-daemon did not answer within {} ms",
                given.as_millis()
            )
        };
        let answer = match self.list(known, given).await? {
            Some(response) => self.remember(last, response),
            None => return Err(timed_out()),
        };
        if let Some(view) = answer {
            return Ok(view);
        }
        // "Unchanged" from a generation we do not hold (a daemon that
        // restarted in between). Ask again in full, within what is left.
        match self.list(None, left()).await? {
            Some(response) => self.remember(None, response).ok_or_else(timed_out),
            None => Err(timed_out()),
        }
    }

    /// One `List` call under `deadline`.
    ///
    /// Returns `None` when the deadline ran out.
    async fn list(
        &self,
        if_generation: Option<u64>,
        deadline: Duration,
    ) -> Result<Option<daemon::ListResponse>, String> {
        let mut request = tonic::Request::new(daemon::ListRequest {
            if_generation,
            ..Default::default()
        });
        // Tells the daemon to give up too. The timer below also bounds
        // connecting, which the gRPC timeout does not cover.
        request.set_timeout(deadline);
        let mut client = self.daemon.clone();
        match tokio::time::timeout(deadline, client.list(request)).await {
            Ok(Ok(response)) => Ok(Some(response.into_inner())),
            // The gRPC timeout fired first. It is the same deadline.
            Ok(Err(status))
                if matches!(
                    status.code(),
                    tonic::Code::Cancelled | tonic::Code::DeadlineExceeded
                ) =>
            {
                Ok(None)
            }
            Ok(Err(status)) => Err(format!(
                "the pty-daemon failed to list sessions: {}",
                status.message()
            )),
            Err(_) => Ok(None),
        }
    }
}

impl LiveSessionView {
    fn last_list(&self) -> std::sync::MutexGuard<'_, Option<DaemonList>> {
        self.last_list
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Turns a daemon answer into a view, keeping a full list for next
    /// time.
    ///
    /// Returns `None` for "unchanged" from a list we do not hold.
    fn remember(
        &self,
        last: Option<DaemonList>,
        response: daemon::ListResponse,
    ) -> Option<DaemonView> {
        let daemon_pid = response.daemon.as_ref().map_or(0, |daemon| daemon.pid);
        if response.unchanged
            && let Some(last) = last.filter(|last| {
                last.daemon_pid == daemon_pid
                    && last.generation == response.generation
                    && last.sessions.len() == response.output_offsets.len()
            })
        {
            return Some(DaemonView {
                list: last,
                fresh_offsets: Some(response.output_offsets),
            });
        }
        if response.unchanged {
            *self.last_list() = None;
            return None;
        }
        let list = DaemonList::new(daemon_pid, response.generation, response.sessions);
        *self.last_list() = Some(list.clone());
        Some(DaemonView {
            list,
            fresh_offsets: None,
        })
    }
}

/// A new list's generation, unique in this process.
///
/// It is counted from the clock's nanoseconds at its first list. So it is
/// not one an earlier process of the host-service could have handed out.
/// That would take more than one list per nanosecond.
fn next_list_generation() -> u64 {
    static NEXT: OnceLock<AtomicU64> = OnceLock::new();
    NEXT.get_or_init(|| {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        AtomicU64::new(u64::try_from(now.as_nanos()).unwrap_or(u64::MAX / 2).max(1))
    })
    .fetch_add(1, Ordering::Relaxed)
}

/// A session's title as every view shows it.
///
/// It is the program's own, once it set one, else the last one known
/// (remembered, or given at creation).
pub fn pick_title(from_daemon: &str, known: &str) -> String {
    if from_daemon.is_empty() {
        known
    } else {
        from_daemon
    }
    .to_owned()
}

/// Oldest first; ties by id, so a list's order is stable.
fn oldest_first(a: &LiveSession, b: &LiveSession) -> std::cmp::Ordering {
    a.created_at
        .cmp(&b.created_at)
        .then_with(|| a.session_id.cmp(&b.session_id))
}

fn memory_only(memory: Vec<HeldSession>, reason: String) -> LiveSessions {
    let mut sessions: Vec<_> = memory
        .into_iter()
        .filter(|session| session.listed && session.exit.is_none())
        .map(|session| LiveSession {
            attached: session.attachments > 0,
            session_id: session.session_id,
            workspace_id: session.workspace_id,
            title: session.title,
            name: session.name,
            pid: session.pid,
            cols: session.cols,
            rows: session.rows,
            created_at: session.created_at,
        })
        .collect();
    sessions.sort_unstable_by(oldest_first);
    LiveSessions {
        rendered: Arc::new(Rendered::from_memory(sessions)),
        daemon: None,
        source: Source::MemoryOnly(reason),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(id: &str) -> daemon::Session {
        daemon::Session {
            session_id: id.to_owned(),
            alive: true,
            ..Default::default()
        }
    }

    #[test]
    fn a_list_is_reused_only_with_the_daemon_list_it_was_made_from() {
        let renders = Renders::default();
        // A daemon too old to count generations says 0 for every list;
        // here a session was forgotten between two of them.
        let before = DaemonList::new(7, 0, vec![session("a"), session("b"), session("c")]);
        let after = DaemonList::new(7, 0, vec![session("b"), session("c")]);
        let rendered = Arc::new(Rendered {
            generation: next_list_generation(),
            sessions: Vec::new(),
            slots: vec![1, 2],
            encoded: OnceLock::new(),
        });
        renders.put("w", &before, 3, &rendered);
        assert!(
            renders.get("w", &before.clone(), 3).is_some(),
            "the same list, confirmed unchanged"
        );
        assert!(
            renders.get("w", &after, 3).is_none(),
            "its slots would index another list"
        );
        assert!(renders.get("w", &before, 4).is_none(), "memory changed");
    }
}
