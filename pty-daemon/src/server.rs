//! The daemon's gRPC surface, on its unix socket.
//!
//! It serves `holdfast.daemon.v1.PtyDaemon`, health and reflection.
//! Requests are validated here and handed to the registry. Errors become
//! statuses in `error.rs`.

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures_util::{Stream, StreamExt};
use holdfast_api::error_details::{Reason, Refusal};
use holdfast_api::proto::daemon::v1 as pb;
use holdfast_api::proto::with_live_offset;
use holdfast_plumbing::oversize::{OversizeLayer, relabelled};
use rustix::process::Signal;
use tokio::net::UnixStream;
use tokio::sync::watch;
use tonic::{Code, Request, Response, Status};

use crate::api::pty_daemon_server::{PtyDaemon, PtyDaemonServer};
use crate::error::Error;
use crate::kill;
use crate::limits;
use crate::listing::{self, ListCache, ListHeads, ListResponse};
use crate::peer_auth;
use crate::registry::Registry;
use crate::session::{Cursor, Event, ExitStatus, Session, became_true};
use crate::spawn::SpawnSpec;
use crate::upgrade::Upgrader;
use crate::validate;
use crate::version::version;

/// Largest request accepted on the wire.
///
/// It leaves room for a 1 MiB write plus framing. So an oversized write is
/// answered by `validate` with a clear message, rather than by the
/// transport.
const MAX_REQUEST_BYTES: usize = 16 << 20;

/// HTTP/2 flow-control window per stream.
const STREAM_WINDOW_BYTES: u32 = 4 << 20;
/// HTTP/2 flow-control window per connection.
const CONNECTION_WINDOW_BYTES: u32 = 16 << 20;

/// The `PtyDaemon` implementation.
pub struct DaemonService {
    registry: Arc<Registry>,
    /// Upgrades in place; refuses calls while one is under way.
    upgrader: Arc<Upgrader>,
    info: pb::DaemonInfo,
    /// The last full list's encoding, while its generation stands.
    lists: ListCache,
}

impl DaemonService {
    /// Serves `registry`, describing this process in `List` answers.
    pub fn new(registry: Arc<Registry>, started_at: SystemTime, upgrader: Arc<Upgrader>) -> Self {
        let history = upgrader.history();
        let info = pb::DaemonInfo {
            pid: std::process::id(),
            version: version().to_owned(),
            started_at: Some(started_at.into()),
            upgrades: history.upgrades,
            previous_version: history.previous_version.clone(),
            last_switch_micros: history.last_switch.map_or(0, |took| {
                u64::try_from(took.as_micros()).unwrap_or(u64::MAX)
            }),
        };
        Self {
            registry,
            upgrader,
            info,
            lists: ListCache::default(),
        }
    }
}

/// The stream type of `Attach`.
pub type AttachStream = Pin<Box<dyn Stream<Item = Result<pb::AttachResponse, Status>> + Send>>;

#[tonic::async_trait]
impl PtyDaemon for DaemonService {
    async fn spawn(
        &self,
        request: Request<pb::SpawnRequest>,
    ) -> Result<Response<pb::SpawnResponse>, Status> {
        self.upgrader.check_open()?;
        let (session_id, spec) = spawn_spec(request.into_inner())?;
        let session = self.registry.spawn(session_id, spec).await?;
        Ok(Response::new(pb::SpawnResponse {
            session: Some(started(&session)?),
        }))
    }

    type StartStream = StartStream;

    async fn start(
        &self,
        request: Request<pb::StartRequest>,
    ) -> Result<Response<StartStream>, Status> {
        self.upgrader.check_open()?;
        use pb::start_response::Event as E;
        let spawn = request
            .into_inner()
            .spawn
            .ok_or_else(|| Error::invalid("spawn", "spawn is required"))?;
        // Its fields are named as paths inside `spawn`.
        let inside = |error: Error| error.within("spawn");
        let (session_id, spec) = spawn_spec(spawn).map_err(inside)?;
        let (session, cursor) = self
            .registry
            .spawn_attached(session_id, spec)
            .await
            .map_err(inside)?;
        let first = pb::StartResponse {
            event: Some(E::Started(started(&session)?)),
        };
        let events = attach_events(session, cursor, self.upgrader.leaving()).map(|event| {
            event.map(|attach| pb::StartResponse {
                event: Some(E::Attach(attach)),
            })
        });
        let stream = futures_util::stream::once(async { Ok(first) }).chain(events);
        Ok(with_live_offset(Response::new(Box::pin(stream)), Some(0)))
    }

    async fn list(
        &self,
        request: Request<pb::ListRequest>,
    ) -> Result<Response<ListResponse>, Status> {
        self.upgrader.check_open()?;
        let request = request.into_inner();
        let named = validate::listed_ids(&request.session_ids, request.if_generation)?;
        // The generation before the state: see generation.rs.
        let generation = self.registry.generation();
        let all = self.registry.all();
        let rest = || pb::ListResponse {
            daemon: Some(self.info.clone()),
            generation,
            ..Default::default()
        };
        if !named.is_empty() {
            let picked: Arc<[_]> = all
                .iter()
                .filter(|session| named.contains(session.id()))
                .cloned()
                .collect();
            let heads = ListHeads::new(generation, &picked);
            return Ok(Response::new(heads.response(rest(), &picked)));
        }
        if request.if_generation == Some(generation) {
            let output_offsets = all.iter().map(|session| session.output_offset()).collect();
            // A spawn or exit while the offsets were read: answer in full.
            if self.registry.generation() == generation {
                let rest = pb::ListResponse {
                    unchanged: true,
                    output_offsets,
                    ..rest()
                };
                return Ok(Response::new(ListResponse::new(rest, 0)));
            }
        }
        let heads = self.lists.full(generation, &all);
        Ok(Response::new(heads.response(rest(), &all)))
    }

    async fn kill(
        &self,
        request: Request<pb::KillRequest>,
    ) -> Result<Response<pb::KillResponse>, Status> {
        self.upgrader.check_open()?;
        let request = request.into_inner();
        let session_id = validate::session_id(&request.session_id)?;
        let signal = signal_from_proto(request.signal)?;
        let grace = match request.grace_ms {
            None => kill::DEFAULT_GRACE,
            Some(ms) if ms <= limits::MAX_GRACE_MS => Duration::from_millis(ms.into()),
            Some(ms) => {
                return Err(Error::invalid(
                    "grace_ms",
                    format!("grace_ms is {ms}; the limit is {}", limits::MAX_GRACE_MS),
                )
                .into());
            }
        };
        // The request is checked whole first, as every call does. A bad
        // signal is a bad signal, whichever session it names.
        let session = self.registry.get(session_id)?;
        kill::kill(&session, signal, grace).await?;
        tracing::info!(session_id = %session.id(), signal = signal.as_raw(), ?grace, "kill requested");
        Ok(Response::new(pb::KillResponse {}))
    }

    type AttachStream = AttachStream;

    async fn attach(
        &self,
        request: Request<pb::AttachRequest>,
    ) -> Result<Response<AttachStream>, Status> {
        self.upgrader.check_open()?;
        let request = request.into_inner();
        let start = validate::attach_start(request.start, request.from_offset)?;
        let session = self
            .registry
            .get(validate::session_id(&request.session_id)?)?;
        // Taken first: output written meanwhile counts as live.
        let live_from = session.output_offset();
        let screen = match start {
            pb::AttachStart::Unspecified | pb::AttachStart::Replay => None,
            pb::AttachStart::Screen => Some(drawn(Arc::clone(&session), 0).await?),
            pb::AttachStart::Auto => Some(drawn(Arc::clone(&session), 0).await?)
                .filter(crate::screen::replay_falls_short),
        };
        // Output goes on from exactly the end of the screen drawn.
        let from_offset = screen
            .as_ref()
            .map_or(request.from_offset, |screen| Some(screen.output_offset));
        let cursor = session.cursor(from_offset, !request.unpaced);
        let first = screen.map(|screen| {
            Ok(pb::AttachResponse {
                event: Some(pb::attach_response::Event::Screen(screen)),
            })
        });
        let events = futures_util::stream::iter(first).chain(attach_events(
            session,
            cursor,
            self.upgrader.leaving(),
        ));
        Ok(with_live_offset(
            Response::new(Box::pin(events)),
            Some(live_from),
        ))
    }

    async fn write(
        &self,
        request: Request<pb::WriteRequest>,
    ) -> Result<Response<pb::WriteResponse>, Status> {
        self.upgrader.check_open()?;
        let request = request.into_inner();
        let session_id = validate::session_id(&request.session_id)?;
        validate::write_len(request.data.len())?;
        let session = self.registry.get(session_id)?;
        session.write(&request.data)?;
        Ok(Response::new(pb::WriteResponse {}))
    }

    type InputStream = InputStream;

    async fn input(
        &self,
        request: Request<tonic::Streaming<pb::InputRequest>>,
    ) -> Result<Response<InputStream>, Status> {
        self.upgrader.check_open()?;
        let writes = request.into_inner();
        let answers = futures_util::stream::try_unfold(
            (writes, None::<Arc<Session>>, Arc::clone(&self.registry)),
            |(mut writes, session, registry)| async move {
                let write = match &session {
                    None => writes.message().await.map_err(relabelled)?,
                    // The stream ends when its session does, so it
                    // never holds an exited session open.
                    Some(session) => tokio::select! {
                        write = writes.message() => write.map_err(relabelled)?,
                        () = session.wait_exited() => {
                            return Err(Error::SessionExited(session.id().to_owned()).into());
                        }
                    },
                };
                let Some(write) = write else {
                    return Ok(None);
                };
                validate::write_len(write.data.len())?;
                let session = match session {
                    None => registry.get(validate::session_id(&write.session_id)?)?,
                    Some(session) => {
                        validate::same_session(session.id(), &write.session_id)?;
                        session
                    }
                };
                session.write(&write.data)?;
                Ok(Some((
                    pb::InputResponse {},
                    (writes, Some(session), registry),
                )))
            },
        );
        Ok(Response::new(Box::pin(answers)))
    }

    type WatchSessionsStream = WatchSessionsStream;

    async fn watch_sessions(
        &self,
        _request: Request<pb::WatchSessionsRequest>,
    ) -> Result<Response<WatchSessionsStream>, Status> {
        self.upgrader.check_open()?;
        use pb::watch_sessions_response::Event as E;
        let exits = self.registry.watch_exits();
        let events = futures_util::stream::unfold(exits, |mut exits| async move {
            use crate::registry::Watched;
            let event = match exits.next().await? {
                Watched::Exit(notice) => E::Exited(pb::SessionExited {
                    session_id: notice.session_id,
                    exit_code: notice.status.code,
                    signal: notice.status.signal,
                    exited_at: Some(notice.status.at.into()),
                }),
                Watched::Lagged(missed) => E::Lagged(pb::Lagged { missed }),
                Watched::Changed(generation) => E::Changed(pb::ListChanged { generation }),
            };
            Some((Ok(pb::WatchSessionsResponse { event: Some(event) }), exits))
        });
        Ok(Response::new(Box::pin(events)))
    }

    async fn get_screen(
        &self,
        request: Request<pb::GetScreenRequest>,
    ) -> Result<Response<pb::GetScreenResponse>, Status> {
        self.upgrader.check_open()?;
        let request = request.into_inner();
        let session_id = validate::session_id(&request.session_id)?;
        let session = self.registry.get(session_id)?;
        let lines = usize::try_from(request.scrollback_lines).unwrap_or(usize::MAX);
        Ok(Response::new(drawn(session, lines).await?))
    }

    async fn resize(
        &self,
        request: Request<pb::ResizeRequest>,
    ) -> Result<Response<pb::ResizeResponse>, Status> {
        self.upgrader.check_open()?;
        let request = request.into_inner();
        let session_id = validate::session_id(&request.session_id)?;
        let (cols, rows) = validate::size(request.cols, request.rows)?;
        self.registry
            .get(session_id)?
            .resize(cols, rows, request.redraw)?;
        Ok(Response::new(pb::ResizeResponse {}))
    }

    async fn upgrade(
        &self,
        request: Request<pb::UpgradeRequest>,
    ) -> Result<Response<pb::UpgradeResponse>, Status> {
        self.upgrader.check_open()?;
        let executable = match request.into_inner().executable.as_str() {
            "" => None,
            path if path.starts_with('/') => Some(PathBuf::from(path)),
            path => {
                return Err(Error::invalid(
                    "executable",
                    format!("executable must be an absolute path, got {path:?}"),
                )
                .into());
            }
        };
        let checked = self.upgrader.check(executable).await?;
        let response = pb::UpgradeResponse {
            old_version: version().to_owned(),
            new_version: checked.new_version.clone(),
        };
        // The switch runs on: the answer goes out while the sessions
        // freeze and the state is written, before the image that sent it
        // is replaced.
        let upgrader = Arc::clone(&self.upgrader);
        tokio::spawn(async move {
            let error = upgrader.switch(checked).await;
            tracing::error!(%error, "the upgrade did not happen");
        });
        Ok(Response::new(response))
    }
}

/// The stream type of `Start`.
pub type StartStream = Pin<Box<dyn Stream<Item = Result<pb::StartResponse, Status>> + Send>>;

/// Validates what `Spawn` and `Start` take: the id asked for, if any, and
/// what to run.
fn spawn_spec(request: pb::SpawnRequest) -> Result<(Option<String>, SpawnSpec), Error> {
    let session_id = match request.session_id.as_str() {
        "" => None,
        id => Some(validate::session_id(id)?.to_owned()),
    };
    let (cols, rows) = validate::size(request.cols, request.rows)?;
    validate::spawn_strings(&request.argv, &request.env)?;
    let cwd = match request.cwd.as_str() {
        "" => None,
        cwd => Some(PathBuf::from(validate::cwd(cwd)?)),
    };
    let spec = SpawnSpec {
        argv: request.argv,
        cwd,
        env: request.env,
        cols,
        rows,
    };
    Ok((session_id, spec))
}

/// Logs a new session and describes it.
fn started(session: &Session) -> Result<pb::Session, Status> {
    tracing::info!(session_id = %session.id(), pid = session.pid().as_raw_nonzero(), "spawned");
    listing::session_message(session).map_err(|error| {
        Refusal::new(
            Code::Internal,
            Reason::InternalFailure,
            format!("describing the new session: {error}"),
        )
        .into()
    })
}

/// A session's events from `cursor` on, as `Attach` streams them.
///
/// An upgrade ends the stream with UNAVAILABLE, saying where to attach
/// again: the offset after the last byte sent. It ends once the sessions
/// are frozen, so a client that keeps up has had every byte before the
/// switch.
/// What `session`'s terminal shows, with up to `scrollback_lines` lines
/// that scrolled off.
///
/// Reading up to a scrollback's worth of output is CPU work: off the
/// runtime's threads.
async fn drawn(
    session: Arc<Session>,
    scrollback_lines: usize,
) -> Result<pb::GetScreenResponse, Status> {
    tokio::task::spawn_blocking(move || session.screen(scrollback_lines))
        .await
        .map_err(|error| Status::internal(format!("drawing the screen: {error}")))
}

fn attach_events(
    session: Arc<Session>,
    cursor: Cursor,
    leaving: watch::Receiver<bool>,
) -> impl Stream<Item = Result<pb::AttachResponse, Status>> + Send + use<> {
    let changes = session.changes();
    futures_util::stream::unfold(
        Some((session, cursor, changes, leaving)),
        |state| async move {
            let (session, mut cursor, mut changes, mut leaving) = state?;
            let event = tokio::select! {
                biased;
                event = session.next_event(&mut cursor, &mut changes) => event?,
                true = became_true(&mut leaving) => {
                    let resume = format!("; attach again from offset {}", cursor.offset());
                    return Some((Err(Error::Upgrading { resume }.into()), None));
                }
            };
            Some((
                Ok(event_to_proto(event)),
                Some((session, cursor, changes, leaving)),
            ))
        },
    )
}

/// Answers to the writes of an `Input` stream.
pub type InputStream = Pin<Box<dyn Stream<Item = Result<pb::InputResponse, Status>> + Send>>;

/// The stream type of `WatchSessions`.
pub type WatchSessionsStream =
    Pin<Box<dyn Stream<Item = Result<pb::WatchSessionsResponse, Status>> + Send>>;

fn signal_from_proto(raw: i32) -> Result<Signal, Error> {
    let signal = pb::Signal::try_from(raw).map_err(|_| {
        Error::invalid(
            "signal",
            format!("signal {raw} is not a known Signal value"),
        )
    })?;
    Ok(match signal {
        pb::Signal::Unspecified | pb::Signal::Hup => Signal::HUP,
        pb::Signal::Int => Signal::INT,
        pb::Signal::Quit => Signal::QUIT,
        pb::Signal::Kill => Signal::KILL,
        pb::Signal::Usr1 => Signal::USR1,
        pb::Signal::Usr2 => Signal::USR2,
        pb::Signal::Term => Signal::TERM,
    })
}

fn event_to_proto(event: Event) -> pb::AttachResponse {
    use pb::attach_response::Event as E;
    let event = match event {
        Event::Output { offset, data } => E::Output(pb::Output { offset, data }),
        Event::Truncated {
            from_offset,
            to_offset,
        } => E::Truncated(pb::Truncated {
            from_offset,
            to_offset,
        }),
        Event::Title(title) => E::Title(pb::TitleChanged { title }),
        Event::Exited(ExitStatus { code, signal, .. }) => E::Exited(pb::Exited {
            exit_code: code,
            signal,
        }),
    };
    pb::AttachResponse { event: Some(event) }
}

/// Serves the daemon, health and reflection on `listener` until `shutdown`
/// resolves.
pub async fn serve(
    incoming: impl Stream<Item = std::io::Result<UnixStream>> + Send + 'static,
    service: DaemonService,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), tonic::transport::Error> {
    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<PtyDaemonServer<DaemonService>>().await;
    let (reflection_v1, reflection_v1alpha) =
        holdfast_plumbing::reflection::services(&["holdfast.daemon.v1.PtyDaemon"]);
    let uid = rustix::process::getuid().as_raw();
    tonic::transport::Server::builder()
        // Wide HTTP/2 windows. A List of a thousand sessions or a burst of
        // output goes out without waiting on WINDOW_UPDATE round trips.
        .initial_stream_window_size(Some(STREAM_WINDOW_BYTES))
        .initial_connection_window_size(Some(CONNECTION_WINDOW_BYTES))
        .layer(peer_auth::layer(uid))
        .layer(OversizeLayer)
        .add_service(PtyDaemonServer::new(service).max_decoding_message_size(MAX_REQUEST_BYTES))
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
}
