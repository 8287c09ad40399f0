//! The host's shared state and the operations the gRPC services run on it.
//!
//! A [`Host`] holds the store, the daemon client, the sessions this process
//! holds and the sizes of attached clients. The handlers in `grpc/` validate
//! a request and call one of its operations: create, dispose, write, open
//! an attach stream, close a workspace.

mod ending;
mod streams;
mod watching;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures_util::StreamExt;
use holdfast_api::error_details::{Reason, Refusal};
use holdfast_api::proto::daemon::v1 as daemon;
use holdfast_api::proto::host::v1 as pb;
use holdfast_plumbing::daemon_client::DaemonClient;
use tonic::{Code, Request, Response, Status};

use crate::background::Background;
use crate::daemon::resume::DaemonEvents;
use crate::daemon::stream_connections::StreamConnections;
use crate::error::{Error, Result};
use crate::sessions::client_sizes::{AttachToken, ClientSizes};
use crate::sessions::fleet::Fleet;
use crate::sessions::held_sessions::{Adoption, HeldSession, HeldSessions};
use crate::sessions::live_sessions::{LiveSessionView, LiveSessions, Rows, pick_title};
use crate::sessions::new_session::NewSession;
use crate::sessions::session_view;
use crate::store::known_workspaces::KnownWorkspaces;
use crate::store::{self, Insert, SessionRow, Status as RowStatus, Store, WorkspaceRow};
use crate::validate;

pub(crate) use streams::or_the_recorded_exit;

/// How long a kill waits for a spawn that got no answer to show up in the
/// daemon.
///
/// It is far longer than a spawn takes, even on a loaded machine. It is
/// also longer than a daemon stalls short of being found dead.
const SPAWN_UNDER_WAY_PATIENCE: Duration = Duration::from_secs(30);

/// Whether a session may be used at once, or is to be adopted first.
// Lives on one request's stack, never in a collection. Boxing the row
// would buy nothing but an allocation.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Usable {
    /// This process holds it.
    Held,
    /// Restored after a restart and not held yet.
    ///
    /// It carries its row, and the adoption begun before the row was read.
    Restored {
        /// The session's row.
        row: SessionRow,
        /// Registers it in memory once the daemon has answered for it.
        adoption: Adoption,
    },
}

impl Usable {
    /// The row read for a restored session.
    pub(crate) fn row(&self) -> Option<&SessionRow> {
        match self {
            Usable::Held => None,
            Usable::Restored { row, .. } => Some(row),
        }
    }
}

/// Both services share this state; cloning is cheap.
#[derive(Clone)]
pub struct Host {
    pub(crate) store: Store,
    pub(crate) memory: Arc<HeldSessions>,
    pub(crate) daemon: DaemonClient,
    /// Separate connections for attach streams.
    ///
    /// Clients that stop reading then cannot exhaust the flow-control
    /// window that lists, writes and kills share.
    streams: Arc<StreamConnections>,
    live: LiveSessionView,
    /// Bound on daemon calls other than listing (spawn, write, kill...).
    operation_timeout: Duration,
    /// Workspaces seen to exist.
    pub(crate) workspaces: Arc<KnownWorkspaces>,
    /// The sizes attached clients show sessions at.
    pub(crate) sizes: Arc<ClientSizes>,
    /// Resizes take turns, across all sessions.
    ///
    /// They are rare, and a hung daemon holds them up anyway. Each keeps
    /// its turn until it is recorded in `sizes`. So the size a terminal is
    /// left at is the one recorded last.
    pub(crate) resizing: Arc<tokio::sync::Mutex<()>>,
    /// Clean-up spawned beside the requests, waited for at shutdown.
    pub(crate) background: Background,
    /// The other hosts sharing the database.
    pub(crate) fleet: Fleet,
    /// The watches of this host's workspaces.
    pub(crate) watches: Arc<crate::sessions::watch::Watches>,
}

impl Host {
    /// The services over these parts.
    pub fn new(
        live: LiveSessionView,
        streams: StreamConnections,
        operation_timeout: Duration,
        background: Background,
        fleet: Fleet,
    ) -> Self {
        Self {
            fleet,
            background,
            streams: Arc::new(streams),
            store: live.store.clone(),
            memory: Arc::clone(&live.memory),
            daemon: live.daemon.clone(),
            live,
            operation_timeout,
            workspaces: Arc::default(),
            sizes: Arc::default(),
            resizing: Arc::default(),
            watches: Arc::default(),
        }
    }

    /// Notes that the client of `attachment`, if any, typed in the session.
    ///
    /// If the session has another size, it gets that client's size before
    /// the keys it typed go. The program reads them at the size of the
    /// window they were typed in, as tmux resizes before it passes keys on.
    pub(crate) async fn typed_in(&self, session_id: &str, attachment: Option<AttachToken>) {
        if attachment.is_some_and(|attachment| self.sizes.typed(session_id, attachment)) {
            // On a task of its own, waited for. A caller that gives up
            // meanwhile does not cancel it. Cancelling would leave the size
            // recorded as given and never give it.
            if let Some(resized) = self.apply_size_soon(session_id.to_owned()) {
                let _ = resized.await;
            }
        }
    }

    /// [`Self::apply_size`] on a task of its own, which no caller giving up
    /// cancels.
    ///
    /// The stream's end that calls for it does not wait for it. Streams are
    /// dropped on the runtime; outside it there is nothing to resize for.
    pub(crate) fn apply_size_soon(
        &self,
        session_id: String,
    ) -> Option<tokio::task::JoinHandle<()>> {
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        let host = self.clone();
        Some(
            self.background
                .spawn_on(async move { host.apply_size(session_id).await }, &runtime),
        )
    }

    /// Gives a session, in its turn, the size it was last given.
    ///
    /// That is the size of the client it went back to when another
    /// detached, or of the client that typed. If a resize came since, it is
    /// that resize's size, already applied. A failure (the session gone
    /// meanwhile) is logged and leaves the size unknown. The next activity
    /// then gives one again.
    pub(crate) async fn apply_size(&self, session_id: String) {
        let _turn = self.resizing.lock().await;
        let Some((cols, rows)) = self.sizes.current(&session_id) else {
            return;
        };
        let mut client = self.daemon.clone();
        let resize = self.request(daemon::ResizeRequest {
            session_id: session_id.clone(),
            cols,
            rows,
            redraw: false,
        });
        match self.daemon_call("resize", client.resize(resize)).await {
            Ok(_) => tracing::debug!(%session_id, cols, rows, "sized to its latest client"),
            Err(error) => {
                self.sizes.unsure(&session_id);
                tracing::debug!(%session_id, %error, "could not size it to its latest client")
            }
        }
    }

    /// Runs a daemon call under the operation timeout.
    pub(crate) async fn daemon_call<T, F>(&self, what: &str, call: F) -> Result<T>
    where
        F: Future<Output = Result<tonic::Response<T>, Status>>,
    {
        self.daemon_up()?;
        match tokio::time::timeout(self.operation_timeout, call).await {
            Ok(Ok(response)) => Ok(response.into_inner()),
            // The request's own deadline (see `request`), met first. It is
            // the same lack of an answer, said the same way.
            Ok(Err(status)) if crate::error::is_deadline(&status) => {
                Err(Error::no_answer(what, self.operation_timeout))
            }
            Ok(Err(status)) => Err(Error::from_daemon(status)),
            Err(_) => Err(Error::no_answer(what, self.operation_timeout)),
        }
    }

    /// Refuses at once while the supervisor knows the daemon to be down.
    pub(crate) fn daemon_up(&self) -> Result<()> {
        match self.live.health.down_reason() {
            Some(reason) => Err(Error::DaemonDown(reason)),
            None => Ok(()),
        }
    }

    /// A request with the operation timeout as its gRPC deadline.
    pub(crate) fn request<T>(&self, message: T) -> Request<T> {
        let mut request = Request::new(message);
        request.set_timeout(self.operation_timeout);
        request
    }

    /// Writes a new session's row, unless its workspace is missing or
    /// closed.
    pub(crate) async fn record(&self, row: SessionRow) -> Result<()> {
        let workspace_id = row.workspace_id.clone();
        match self.store.insert_session(row).await? {
            Insert::Done => Ok(()),
            Insert::NoWorkspace => Err(Error::WorkspaceNotFound(workspace_id)),
            Insert::WorkspaceClosed => Err(Error::WorkspaceClosed(workspace_id)),
        }
    }

    /// Starts a new session's program.
    pub(crate) async fn spawn(&self, spawn: daemon::SpawnRequest) -> Result<(daemon::Session, ())> {
        let mut client = self.daemon.clone();
        let response = self
            .daemon_call("spawn", client.spawn(self.request(spawn)))
            .await?;
        Ok((response.session.unwrap_or_default(), ()))
    }

    /// Starts a new session's program with its events streamed from the
    /// first byte (the daemon's `Start`).
    ///
    /// Only the start and its first message are bounded by the operation
    /// timeout, not the stream. The stream goes over a connection for
    /// output streams, as an `AttachSession`'s does, so it flows as one
    /// would.
    ///
    /// A daemon of an earlier version, kept running across an upgrade of
    /// the host-service, has no `Start`. Then it is `Spawn` and `Attach`.
    pub(crate) async fn start(
        &self,
        spawn: daemon::SpawnRequest,
    ) -> Result<(daemon::Session, DaemonEvents)> {
        use daemon::start_response::Event;
        let (mut client, slot) = self.streams.client();
        let start = daemon::StartRequest {
            spawn: Some(spawn.clone()),
        };
        let started = async move {
            let mut events = client.start(Request::new(start)).await?.into_inner();
            let Some(Event::Started(session)) = events.message().await?.and_then(|m| m.event)
            else {
                return Err(Status::internal(
                    "the daemon's Start stream did not begin with the session",
                ));
            };
            let events = events.map(|message| match message?.event {
                Some(Event::Attach(event)) => Ok(event),
                _ => Err(Status::internal(
                    "the daemon's Start stream sent something other than an attach event",
                )),
            });
            Ok(Response::new((session, slot.held_by(events).boxed())))
        };
        match self.daemon_call("start", started).await {
            Err(Error::Daemon(status)) if status.code() == tonic::Code::Unimplemented => {
                tracing::debug!(
                    "the pty-daemon has no Start (an earlier version): spawning, then attaching"
                );
                let (session, ()) = self.spawn(spawn).await?;
                match self
                    .open_stream(
                        &session.session_id,
                        Some(0),
                        false,
                        daemon::AttachStart::Unspecified,
                    )
                    .await
                {
                    Ok((events, _)) => Ok((session, events)),
                    Err(error) => {
                        // Nothing is acknowledged yet, and the program runs
                        // whatever the error says. So it ends here: `create`
                        // ends only what a failed spawn may have started.
                        tracing::warn!(session_id = %session.session_id, %error, "started a session but could not stream it");
                        self.end_unregistered(&session.session_id);
                        Err(error)
                    }
                }
            }
            Ok((session, events)) => {
                let events = self.resuming(
                    &session.session_id,
                    events,
                    Some(0),
                    false,
                    daemon::AttachStart::Unspecified,
                );
                Ok((session, events))
            }
            Err(error) => Err(error),
        }
    }

    pub(crate) async fn live(&self, workspace_id: &str) -> Result<LiveSessions> {
        let workspace_id = validate::id("workspace_id", workspace_id)?;
        let until = tokio::time::Instant::now() + self.live.deadline;
        if !self.workspaces.exists(workspace_id) {
            match tokio::time::timeout_at(until, self.store.workspace(workspace_id)).await {
                Ok(Ok(Some(_))) => self.workspaces.saw(workspace_id),
                Ok(Ok(None)) => return Err(Error::WorkspaceNotFound(workspace_id.to_owned())),
                Ok(Err(error)) => {
                    return Ok(self.live.without_rows(workspace_id, Rows::Failed(&error)));
                }
                Err(_) => {
                    let late = Rows::Late(self.live.deadline);
                    return Ok(self.live.without_rows(workspace_id, late));
                }
            }
        }
        Ok(self.live.list_live_sessions(workspace_id, until).await)
    }

    /// The live sessions of `workspace_id` on every host sharing the
    /// database: this host's by the derived function, and what the others
    /// answer for their own, at the same deadline.
    pub(crate) async fn live_everywhere(
        &self,
        workspace_id: &str,
    ) -> Result<(LiveSessions, crate::sessions::fleet::Others)> {
        let until = tokio::time::Instant::now() + self.live.deadline;
        let (own, others) = tokio::join!(
            self.live(workspace_id),
            self.fleet.others(workspace_id, until)
        );
        Ok((own?, others))
    }

    /// Makes sure a session may be used, and says whether it must be
    /// adopted.
    ///
    /// One not in memory (restored after a restart) has its row read. It
    /// is adopted once the daemon has answered for it.
    pub(crate) async fn usable(&self, session_id: &str) -> Result<Usable> {
        if self.memory.contains(session_id) {
            return Ok(Usable::Held);
        }
        // Begun before the row is read. A dispose stamping it after the
        // read then still keeps the session out of memory.
        let adoption = self.memory.begin_adopt(session_id);
        let row = self.undisposed_row(session_id).await?;
        tracing::debug!(%session_id, "adopting a restored session once the daemon answers for it");
        Ok(Usable::Restored { row, adoption })
    }

    /// Adopts the session `usable` describes, if it was restored.
    pub(crate) async fn adopt_if_restored(&self, usable: Usable) {
        if let Usable::Restored { row, adoption } = usable {
            self.adopt(row, adoption).await;
        }
    }

    /// What the daemon says of one session, if it knows it.
    pub(crate) async fn daemon_session(&self, session_id: &str) -> Result<Option<daemon::Session>> {
        let mut client = self.daemon.clone();
        let list = self
            .daemon_call(
                "listing the session",
                client.list(self.request(daemon::ListRequest {
                    session_ids: vec![session_id.to_owned()],
                    ..Default::default()
                })),
            )
            .await?;
        // A daemon older than `session_ids` answers with every session.
        Ok(list
            .sessions
            .into_iter()
            .find(|session| session.session_id == session_id))
    }

    /// What the session's terminal shows, as its daemon draws it.
    pub(crate) async fn screen(
        &self,
        session_id: &str,
        scrollback_lines: u32,
    ) -> Result<pb::GetScreenResponse> {
        let mut client = self.daemon.clone();
        let screen = self
            .daemon_call(
                "drawing the session's screen",
                client.get_screen(self.request(daemon::GetScreenRequest {
                    session_id: session_id.to_owned(),
                    scrollback_lines,
                })),
            )
            .await?;
        Ok(crate::sessions::attach_events::screen_to_proto(screen))
    }

    /// Refuses input and resizes named by a read-only attach stream.
    pub(crate) fn refuse_read_only(
        &self,
        session_id: &str,
        attachment: Option<AttachToken>,
    ) -> Result<()> {
        match attachment {
            Some(attachment) if self.sizes.is_read_only(session_id, attachment) => {
                Err(Error::ReadOnly {
                    session_id: session_id.to_owned(),
                    attachment,
                })
            }
            _ => Ok(()),
        }
    }

    /// Whether a session may be looked at: in memory, or with a row that
    /// is not disposed (then returned).
    pub(crate) async fn lookable(&self, session_id: &str) -> Result<Option<SessionRow>> {
        if self.memory.contains(session_id) {
            return Ok(None);
        }
        Ok(Some(self.undisposed_row(session_id).await?))
    }

    /// The session's row, unless it is missing or disposed.
    pub(crate) async fn undisposed_row(&self, session_id: &str) -> Result<SessionRow> {
        let row = self
            .store
            .session(session_id)
            .await?
            .ok_or_else(|| Error::SessionNotFound(session_id.to_owned()))?;
        if row.host_id != self.store.host_id() {
            return Err(self.elsewhere(row).await);
        }
        if row.is_stamped() || row.status() == RowStatus::Disposed {
            return Err(Error::SessionDisposed(session_id.to_owned()));
        }
        Ok(row)
    }

    /// The refusal of an operation on `row`'s session, which another host
    /// runs: where to send it instead.
    async fn elsewhere(&self, row: SessionRow) -> Error {
        let host = match self.store.host(&row.host_id).await {
            Ok(host) => host,
            Err(error) => return error.into(),
        };
        Error::OnAnotherHost {
            session_id: row.id,
            host_name: host
                .as_ref()
                .map(|host| host.name.clone())
                .unwrap_or_default(),
            address: host.map(|host| host.address).unwrap_or_default(),
            host_id: row.host_id,
        }
    }

    /// Why this host has no session `session_id`: another runs it, or
    /// there is none.
    async fn not_ours(&self, session_id: &str) -> Error {
        match self.store.session(session_id).await {
            Ok(Some(row)) if row.host_id != self.store.host_id() => self.elsewhere(row).await,
            Ok(_) => Error::SessionNotFound(session_id.to_owned()),
            Err(error) => error.into(),
        }
    }

    /// The session of `row` as `GetSession` describes it, with what the
    /// daemon and memory say of it now.
    pub(crate) async fn describe(&self, row: SessionRow) -> Result<pb::Session> {
        let now = match self.daemon_session(&row.id).await {
            Ok(now) => now,
            // Its row holds the whole of an ended session.
            Err(Error::DaemonDown(_) | Error::DaemonUnavailable(_))
                if row.status() == RowStatus::Exited =>
            {
                None
            }
            // One this process holds is as it last knew it, as lists
            // show it while the daemon cannot be asked.
            Err(error @ (Error::DaemonDown(_) | Error::DaemonUnavailable(_))) => {
                match self.memory.get(&row.id) {
                    Some(remembered) => Some(as_last_known(remembered)),
                    None => return Err(error),
                }
            }
            Err(error) => return Err(error),
        };
        let remembered = self.memory.title(&row.id);
        let attached = self.memory.is_attached(&row.id);
        let me = self.fleet.me();
        Ok(pb::Session {
            host_id: me.id.clone(),
            host_name: me.name.clone(),
            ..session_view::describe(row, now, remembered, attached)
        })
    }

    /// Registers a restored session in memory, with what the daemon says of
    /// it, unless it was disposed or exited meanwhile.
    async fn adopt(&self, row: SessionRow, adoption: Adoption) {
        if row.status() != RowStatus::Active {
            return;
        }
        let listed = self.daemon_session(&row.id).await.ok().flatten();
        let Some(session) = listed.filter(|session| session.alive) else {
            return;
        };
        let session_id = row.id.clone();
        let registered = adoption.register(HeldSession {
            title: pick_title(&session.title, &row.title),
            name: row.title,
            pid: session.pid,
            cols: session.cols,
            rows: session.rows,
            created_at: store::from_micros(row.created_at),
            attachments: 0,
            exit: None,
            input: Default::default(),
            listed: row.listed,
            workspace_id: row.workspace_id,
            session_id: row.id,
        });
        if registered {
            tracing::info!(%session_id, "adopted a restored session");
        } else {
            tracing::info!(%session_id, "not adopting a restored session disposed or exited meanwhile");
        }
    }

    /// Records and starts a session (`CreateSession`).
    ///
    /// Its program is started by `launch`: [`Host::spawn`] or
    /// [`Host::start`], whose second part it returns too. When `attached`,
    /// it is registered with one attachment, which the caller takes over
    /// with [`HeldSessions::attachment`]. So no list ever shows it detached.
    pub(crate) async fn create<L, E>(
        &self,
        request: pb::CreateSessionRequest,
        attached: bool,
        launch: impl FnOnce(daemon::SpawnRequest) -> L,
    ) -> Result<(pb::Session, E)>
    where
        L: Future<Output = Result<(daemon::Session, E)>>,
    {
        let (new, row, spawn) = NewSession::validate(request, attached)?;
        // The reaper leaves the session alone until it is registered.
        self.memory.begin_create(&new.id);
        // Not polled, so nothing starts, until `record_and_launch` says so.
        let launched = self.record_and_launch(row, launch(spawn)).await;
        let (spawned, events) = match launched {
            Ok(launched) => launched,
            Err(error) => {
                self.memory.finish_create(&new.id, None);
                return Err(error);
            }
        };
        let registered = self
            .memory
            .finish_create(&new.id, spawned.alive.then(|| new.in_memory(&spawned)));
        if !registered {
            // Its workspace was closed, or it was disposed, while it was
            // starting. The disposer may be its own program, say, which
            // knows its id at once. It never becomes visible. The row's
            // stamp makes the reaper's kill stick if this one fails.
            self.end_unregistered(&new.id);
            // Unread, it was most likely the close.
            let closed = match self.store.workspace(&new.workspace_id).await {
                Ok(Some(workspace)) => workspace.closed_at.is_some(),
                Ok(None) | Err(_) => true,
            };
            return Err(if closed {
                Error::WorkspaceClosed(new.workspace_id)
            } else {
                Error::SessionDisposed(new.id)
            });
        }
        tracing::info!(session_id = %new.id, workspace_id = %new.workspace_id, pid = spawned.pid, listed = new.listed, attached, "session created");
        Ok((new.into_proto(spawned), events))
    }

    /// Writes a new session's row, then starts its program.
    ///
    /// A create refused for its workspace (closed meanwhile, by this process
    /// or another) or for the database never runs its program, not even for
    /// a moment. Doing both at once, where the workspace is known to be
    /// open, saves 0.1–0.3 ms of a ~2 ms spawn (BENCHMARKS.md).
    ///
    /// On failure nothing is left behind: no row, and no program that may
    /// have started.
    pub(crate) async fn record_and_launch<L, E>(
        &self,
        row: SessionRow,
        launch: L,
    ) -> Result<(daemon::Session, E)>
    where
        L: Future<Output = Result<(daemon::Session, E)>>,
    {
        let session_id = row.id.clone();
        self.record(row).await?;
        match launch.await {
            Ok(launched) => Ok(launched),
            Err(error) => {
                // Nothing was acknowledged, so the row goes. Without an
                // answer the program may have started all the same. It is
                // ended now rather than left to the reaper, without holding
                // up the answer.
                if error.may_have_started() {
                    let host = self.clone();
                    let session_id = session_id.clone();
                    self.background
                        .spawn(async move { host.end_if_started(&session_id).await });
                }
                if let Err(store_error) = self.store.delete_session(&session_id).await {
                    tracing::error!(%session_id, %store_error, "removing the row of a failed spawn failed; the reaper will settle it");
                }
                Err(error)
            }
        }
    }

    /// Sends input to a session's terminal (`WriteInput`, `SendInput`).
    ///
    /// While this process knows the session, the input goes on its input
    /// stream to the daemon. Otherwise it goes as a request of its own,
    /// adopting a restored session.
    pub(crate) async fn write(&self, session_id: &str, data: prost::bytes::Bytes) -> Result<()> {
        validate::write_len(data.len())?;
        if let Some(input) = self.memory.input(session_id) {
            self.daemon_up()?;
            return input
                .write(&self.daemon, session_id, data, self.operation_timeout)
                .await;
        }
        // Restored and not adopted yet, or forgotten (its row says whether
        // it may still be used, the daemon's answer why not).
        let usable = self.usable(session_id).await?;
        let mut client = self.daemon.clone();
        let write = self.request(daemon::WriteRequest {
            session_id: session_id.to_owned(),
            data,
        });
        self.daemon_call("write", client.write(write))
            .await
            .map_err(|error| ended_if_forgotten(error, &usable))?;
        self.adopt_if_restored(usable).await;
        Ok(())
    }

    /// Runs `work` on a task of its own, to its end, even should the
    /// request that asked for it be dropped on the way.
    ///
    /// Its client may be gone, or its deadline passed. A create, a dispose
    /// or a close then finishes what it began (a row written, a program
    /// started, sessions forgotten) instead of leaving it half done. Half
    /// done would be a creation the reaper waits on forever, or a stamped
    /// session still listed. Shutdown waits for it too.
    pub(crate) async fn to_completion<T: Send + 'static>(
        &self,
        work: impl Future<Output = Result<T>> + Send + 'static,
    ) -> Result<T, Status> {
        match self.background.spawn(work).await {
            Ok(done) => done.map_err(Status::from),
            Err(failed) => Err(Refusal::new(
                Code::Internal,
                Reason::InternalFailure,
                format!("the operation failed: {failed}"),
            )
            .into()),
        }
    }
}

/// `time` as a protobuf timestamp.
pub(crate) fn timestamp(time: SystemTime) -> Option<prost_types::Timestamp> {
    Some(time.into())
}

/// A workspace row as the API shows it.
pub(crate) fn workspace_to_proto(row: WorkspaceRow) -> pb::Workspace {
    pb::Workspace {
        workspace_id: row.id,
        name: row.name,
        created_at: timestamp(store::from_micros(row.created_at)),
        closed_at: row.closed_at.map(|at| store::from_micros(at).into()),
    }
}

/// A session as this process last knew it, in the daemon's terms.
fn as_last_known(remembered: HeldSession) -> daemon::Session {
    let (exit_code, signal) = remembered.exit.unwrap_or_default();
    daemon::Session {
        alive: remembered.exit.is_none(),
        exit_code,
        signal,
        pid: remembered.pid,
        cols: remembered.cols,
        rows: remembered.rows,
        title: remembered.title,
        session_id: remembered.session_id,
        ..Default::default()
    }
}

/// Whether `error` is the daemon not knowing a session whose row says it
/// exited: forgotten past its retention, or its daemon died.
fn is_forgotten_end(error: &Error, row: &SessionRow) -> bool {
    matches!(error, Error::Daemon(status) if status.code() == tonic::Code::NotFound)
        && row.status() == RowStatus::Exited
}

/// A write or resize refused by the daemon as `error`.
///
/// For a session whose row says it exited, the exit is why, as the daemon
/// says of an exited session it still holds. It is not that there is no
/// such session.
pub(crate) fn ended_if_forgotten(error: Error, usable: &Usable) -> Error {
    match usable.row() {
        Some(row) if is_forgotten_end(&error, row) => Error::SessionExited(row.id.clone()),
        _ => error,
    }
}
