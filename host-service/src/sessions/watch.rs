//! Watches of a workspace's live sessions (`WatchSessions`).
//!
//! One hub per watched workspace makes the list with the derived function,
//! the very call `ListSessions` makes, whenever memory changes (a session
//! created, attached, renamed, exited, disposed) or the daemon says its
//! list did (a title a program set, a size), and at least every [`POLL`]
//! (a daemon that stops answering says nothing). It compares each list with the last and
//! gives every difference a revision. So a watch folds to the list, never
//! to something a list would not say.
//!
//! Watchers share the hub's events through a bounded channel: a watcher
//! that falls behind is sent the whole list again (a resync) rather than
//! held in memory or allowed to hold anyone up. The last [`HISTORY`]
//! events are kept, so a client that reconnects resumes from its revision.
//! A hub ends with its last watcher.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use futures_util::Stream;
use holdfast_api::proto::host::v1 as pb;
use pb::watch_sessions_response::Event;
use tokio::sync::broadcast;

/// How often a hub lists when nothing told it of a change: for a daemon
/// that stops answering, and rows other processes change.
/// `HOLDFAST_WATCH_POLL_MS` overrides it (tests, to show that changes are
/// pushed).
const POLL: Duration = Duration::from_millis(250);

/// How many events a hub keeps for watchers that resume.
const HISTORY: usize = 1024;

/// How many events a watcher may be behind before it is resynced.
const BEHIND: usize = 256;

/// A list as the derived function gave it, for a watch.
pub struct Observed {
    /// The live, listed sessions, oldest first.
    pub sessions: Vec<pb::Session>,
    /// Whether the list is complete, and why not.
    pub source: pb::Source,
    /// Why it is memory-only; empty when complete.
    pub degraded_reason: String,
    /// The daemon serving, when it is up.
    pub daemon: Option<DaemonSeen>,
}

/// Which pty-daemon serves a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonSeen {
    /// Its pid: another after a restart.
    pub pid: u32,
    /// Its version.
    pub version: String,
    /// Its upgrades in place: one more after each.
    pub upgrades: u32,
}

/// Where hubs get their lists: the host.
pub trait Lists: Clone + Send + Sync + 'static {
    /// The workspace's list, as `ListSessions` makes it.
    fn observe(
        &self,
        workspace_id: &str,
    ) -> impl Future<Output = crate::error::Result<Observed>> + Send;

    /// Why a session left the list.
    fn why_gone(&self, session_id: &str) -> impl Future<Output = pb::RemovedSession> + Send;

    /// Each change to memory's sessions.
    fn changes(&self) -> tokio::sync::watch::Receiver<u64>;
}

/// Every hub of this host.
pub struct Watches {
    hubs: Mutex<HashMap<String, Arc<Hub>>>,
    /// The last revision given. It starts at the host's start time in
    /// microseconds, so revisions grow across restarts too.
    revision: AtomicU64,
    /// How often hubs list unprompted.
    poll: Duration,
}

impl Default for Watches {
    fn default() -> Self {
        let started = crate::store::micros(SystemTime::now());
        Self {
            hubs: Mutex::default(),
            revision: AtomicU64::new(u64::try_from(started).unwrap_or(0)),
            poll: std::env::var("HOLDFAST_WATCH_POLL_MS")
                .ok()
                .and_then(|ms| ms.parse().ok())
                .map_or(POLL, Duration::from_millis),
        }
    }
}

/// One workspace's hub.
struct Hub {
    state: Mutex<State>,
    events: broadcast::Sender<Arc<pb::WatchSessionsResponse>>,
    /// Set once the first list is made.
    ready: tokio::sync::watch::Sender<bool>,
}

/// What a hub last listed, and the events that led there.
#[derive(Default)]
struct State {
    sessions: Vec<pb::Session>,
    source: pb::Source,
    degraded_reason: String,
    /// The revision of the last event, or of the first list.
    revision: u64,
    /// The last daemon seen up.
    daemon: Option<DaemonSeen>,
    /// The last events, oldest first.
    history: VecDeque<Arc<pb::WatchSessionsResponse>>,
}

impl State {
    /// The whole list, at the last revision.
    fn list(&self) -> pb::WatchSessionsResponse {
        pb::WatchSessionsResponse {
            revision: self.revision,
            event: Some(Event::List(pb::WatchedList {
                sessions: self.sessions.clone(),
                source: self.source.into(),
                degraded_reason: self.degraded_reason.clone(),
                resync: true,
            })),
        }
    }

    /// The events after `since`, if every one of them is still held.
    fn after(&self, since: u64) -> Option<Vec<Arc<pb::WatchSessionsResponse>>> {
        if since > self.revision {
            return None;
        }
        let oldest = self
            .history
            .front()
            .map_or(self.revision, |e| e.revision - 1);
        if since < oldest {
            return None;
        }
        Some(
            self.history
                .iter()
                .filter(|event| event.revision > since)
                .cloned()
                .collect(),
        )
    }
}

/// A watcher's stream.
pub type WatchStream =
    std::pin::Pin<Box<dyn Stream<Item = Result<pb::WatchSessionsResponse, tonic::Status>> + Send>>;

impl Watches {
    /// A watch of `workspace_id`, from after `since` if this host still
    /// holds every event since, else from the whole list.
    pub async fn watch<L: Lists>(
        self: &Arc<Self>,
        lists: &L,
        workspace_id: &str,
        since: Option<u64>,
    ) -> crate::error::Result<WatchStream> {
        // The workspace must exist: the first list says so.
        lists.observe(workspace_id).await?;
        let (hub, mut events) = self.hub(lists, workspace_id);
        let mut ready = hub.ready.subscribe();
        // Fails only if the hub's task ended, which it does only without a
        // watcher; this one has subscribed.
        let _ = ready.wait_for(|ready| *ready).await;
        // Events sent from here on are also in the history or the list
        // taken now: those up to `last` are skipped below.
        let first: Vec<pb::WatchSessionsResponse> = {
            let state = hub.state.lock().unwrap_or_else(PoisonError::into_inner);
            match since.and_then(|since| state.after(since)) {
                Some(missed) => missed.iter().map(|e| (**e).clone()).collect(),
                None => vec![state.list()],
            }
        };
        let mut last = first
            .last()
            .map_or(since.unwrap_or(0), |event| event.revision);
        let stream = async_stream(move |out| async move {
            for event in first {
                if !out.send(event).await {
                    return;
                }
            }
            loop {
                let event = match events.recv().await {
                    Ok(event) if event.revision <= last => continue,
                    Ok(event) => (*event).clone(),
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let state = hub.state.lock().unwrap_or_else(PoisonError::into_inner);
                        state.list()
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                last = event.revision;
                if !out.send(event).await {
                    return;
                }
            }
        });
        Ok(stream)
    }

    /// `workspace_id`'s hub, started if it has none, and a subscription to
    /// its events: taken under the map's lock, so the hub cannot end in
    /// between.
    fn hub<L: Lists>(
        self: &Arc<Self>,
        lists: &L,
        workspace_id: &str,
    ) -> (
        Arc<Hub>,
        broadcast::Receiver<Arc<pb::WatchSessionsResponse>>,
    ) {
        let mut hubs = self.hubs.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(hub) = hubs.get(workspace_id) {
            return (Arc::clone(hub), hub.events.subscribe());
        }
        let hub = Arc::new(Hub {
            state: Mutex::default(),
            events: broadcast::channel(BEHIND).0,
            ready: tokio::sync::watch::channel(false).0,
        });
        let events = hub.events.subscribe();
        hubs.insert(workspace_id.to_owned(), Arc::clone(&hub));
        let task = Self::run(
            Arc::clone(self),
            Arc::clone(&hub),
            lists.clone(),
            workspace_id.to_owned(),
        );
        tokio::spawn(task);
        (hub, events)
    }

    /// A hub's task: lists on every change of memory, and every [`POLL`],
    /// until it has no watcher.
    async fn run<L: Lists>(self: Arc<Self>, hub: Arc<Hub>, lists: L, workspace_id: String) {
        let mut changes = lists.changes();
        loop {
            if let Ok(observed) = lists.observe(&workspace_id).await {
                self.update(&hub, &lists, observed).await;
                hub.ready.send_replace(true);
            }
            // Ends with its last watcher. Checked under the map's lock, so
            // a watcher finds either this hub running or none.
            {
                let mut hubs = self.hubs.lock().unwrap_or_else(PoisonError::into_inner);
                if hub.events.receiver_count() == 0 && *hub.ready.borrow() {
                    hubs.remove(&workspace_id);
                    return;
                }
            }
            let _ = tokio::time::timeout(self.poll, changes.changed()).await;
        }
    }

    /// Compares `observed` with what `hub` last listed, and sends each
    /// difference as an event.
    async fn update<L: Lists>(&self, hub: &Hub, lists: &L, observed: Observed) {
        if !*hub.ready.borrow() {
            let mut state = hub.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.revision = self.revision.fetch_add(1, Ordering::Relaxed) + 1;
            state.sessions = observed.sessions;
            state.source = observed.source;
            state.degraded_reason = observed.degraded_reason;
            state.daemon = observed.daemon;
            return;
        }
        let (previous, complete, daemon) = {
            let state = hub.state.lock().unwrap_or_else(PoisonError::into_inner);
            let complete = state.source == pb::Source::Complete;
            (state.sessions.clone(), complete, state.daemon.clone())
        };
        let mut events = Vec::new();
        // First, so a client reads the sessions lost with a daemon after
        // the word that it restarted.
        if let (Some(was), Some(now)) = (&daemon, &observed.daemon)
            && was != now
        {
            let kind = if was.pid == now.pid {
                pb::DaemonChangeKind::Upgraded
            } else {
                pb::DaemonChangeKind::Restarted
            };
            events.push(Event::Daemon(pb::DaemonChange {
                kind: kind.into(),
                pid: now.pid,
                version: now.version.clone(),
            }));
        }
        let daemon_now = observed.daemon.clone().or(daemon);
        let now_complete = observed.source == pb::Source::Complete;
        if now_complete != complete {
            events.push(Event::Source(pb::SourceChange {
                source: observed.source.into(),
                degraded_reason: observed.degraded_reason.clone(),
            }));
        }
        let before: HashMap<&str, &pb::Session> = previous
            .iter()
            .map(|session| (session.session_id.as_str(), session))
            .collect();
        for session in &observed.sessions {
            match before.get(session.session_id.as_str()) {
                None => events.push(Event::Added(session.clone())),
                Some(was) if *was != session => events.push(Event::Changed(session.clone())),
                Some(_) => {}
            }
        }
        // A memory-only list lacks the background sessions: missing from
        // it is no reason to leave. They stay until a complete list.
        let now: std::collections::HashSet<&str> = observed
            .sessions
            .iter()
            .map(|session| session.session_id.as_str())
            .collect();
        let missing = previous
            .iter()
            .filter(|s| !now.contains(s.session_id.as_str()));
        let mut kept = Vec::new();
        if now_complete {
            for gone in missing {
                events.push(Event::Removed(lists.why_gone(&gone.session_id).await));
            }
        } else {
            kept.extend(missing.cloned());
        }
        let mut state = hub.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.daemon = daemon_now;
        if events.is_empty() {
            return;
        }
        state.sessions = kept;
        state.sessions.extend(observed.sessions);
        state.sessions.sort_by(|a, b| {
            let at = |s: &pb::Session| s.created_at.map(|t| (t.seconds, t.nanos));
            at(a)
                .cmp(&at(b))
                .then_with(|| a.session_id.cmp(&b.session_id))
        });
        state.source = observed.source;
        state.degraded_reason = observed.degraded_reason;
        for event in events {
            let revision = self.revision.fetch_add(1, Ordering::Relaxed) + 1;
            let event = Arc::new(pb::WatchSessionsResponse {
                revision,
                event: Some(event),
            });
            state.revision = revision;
            if state.history.len() == HISTORY {
                state.history.pop_front();
            }
            state.history.push_back(Arc::clone(&event));
            // Sent under the lock: a watcher subscribing meanwhile gets
            // each event once, from the history or from the channel.
            let _ = hub.events.send(event);
        }
    }
}

/// A stream of what `body` sends. A send answers false once the watcher
/// has gone.
fn async_stream<F, Fut>(body: F) -> WatchStream
where
    F: FnOnce(Yielder) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (sender, receiver) = tokio::sync::mpsc::channel(1);
    tokio::spawn(body(Yielder { sender }));
    Box::pin(tokio_stream::wrappers::ReceiverStream::new(receiver))
}

/// Hands one message at a time to a watcher's stream.
struct Yielder {
    sender: tokio::sync::mpsc::Sender<Result<pb::WatchSessionsResponse, tonic::Status>>,
}

impl Yielder {
    /// Sends `event`, waiting while the watcher has not read the last.
    async fn send(&self, event: pb::WatchSessionsResponse) -> bool {
        self.sender.send(Ok(event)).await.is_ok()
    }
}
