//! `holdfast.host.v1.TerminalService`: sessions, their streams and input.
//!
//! Requests are validated here, then handed to [`Host`]. Lists and counts
//! come from the derived function in `sessions/live_sessions.rs`. Errors
//! become statuses in `error.rs`.

use std::pin::Pin;
use std::time::SystemTime;

use futures_util::{Stream, StreamExt};
use holdfast_api::proto::daemon::v1 as daemon;
use holdfast_api::proto::host::v1 as pb;
use holdfast_api::proto::with_live_offset;
use holdfast_plumbing::oversize;
use tonic::{Request, Response, Status};

use crate::error::Error;
use crate::grpc::api::terminal_service_server::TerminalService;
use crate::grpc::listing::{self, ListSessionsResponse, source_to_proto};
use crate::host::{Host, ended_if_forgotten, or_the_recorded_exit};
use crate::store;
use crate::validate;

/// Most ended sessions one `ListEndedSessions` lists.
const MAX_ENDED_LISTED: u32 = 1000;

/// Most attached ids one count request may name.
const MAX_ATTACHED_IDS: usize = 10_000;

/// The stream type of `AttachSession`.
pub type AttachStream =
    Pin<Box<dyn Stream<Item = Result<pb::AttachSessionResponse, Status>> + Send>>;

/// The stream type of `StartSession`.
pub type StartStream = Pin<Box<dyn Stream<Item = Result<pb::StartSessionResponse, Status>> + Send>>;

/// Answers to the writes of a `SendInput` stream.
pub type SendInputStream =
    Pin<Box<dyn Stream<Item = Result<pb::SendInputResponse, Status>> + Send>>;

#[tonic::async_trait]
impl TerminalService for Host {
    async fn create_session(
        &self,
        request: Request<pb::CreateSessionRequest>,
    ) -> Result<Response<pb::CreateSessionResponse>, Status> {
        let host = self.clone();
        let (session, ()) = self
            .to_completion(async move {
                host.create(request.into_inner(), false, |spawn| host.spawn(spawn))
                    .await
            })
            .await?;
        Ok(Response::new(pb::CreateSessionResponse {
            session: Some(session),
        }))
    }

    type StartSessionStream = StartStream;

    async fn start_session(
        &self,
        request: Request<pb::StartSessionRequest>,
    ) -> Result<Response<StartStream>, Status> {
        use pb::start_session_response::Event;
        let create = request
            .into_inner()
            .create
            .ok_or_else(|| Error::invalid("create", "create is required"))?;
        let host = self.clone();
        let (session, events, guard) = self
            .to_completion(async move {
                let (session, events) = host
                    .create(create, true, |spawn| host.start(spawn))
                    .await
                    .map_err(|error| error.within("create"))?;
                let guard = host.memory.attachment(&session.session_id);
                Ok::<_, Error>((session, events, guard))
            })
            .await?;
        // Started at its client's size; all its output is live.
        let mut response = with_live_offset(Response::new(()), Some(0));
        let client = self.client_attachment(&session.session_id, guard, &mut response, false);
        self.sizes.resized(
            &session.session_id,
            Some(client.attachment),
            (session.cols, session.rows),
        );
        let rest = self
            .relay(session.session_id.clone(), events, Some(client))
            .map(|event| {
                event.map(|attach| pb::StartSessionResponse {
                    event: Some(Event::Attach(attach)),
                })
            });
        let started = pb::StartSessionResponse {
            event: Some(Event::Started(session)),
        };
        let stream = futures_util::stream::once(async { Ok(started) }).chain(rest);
        Ok(response.map(|()| -> StartStream { Box::pin(stream) }))
    }

    async fn list_sessions(
        &self,
        request: Request<pb::ListSessionsRequest>,
    ) -> Result<Response<ListSessionsResponse>, Status> {
        let request = request.into_inner();
        let me = self.fleet.me();
        if request.scope() == pb::Scope::AllHosts {
            let (own, others) = self.live_everywhere(&request.workspace_id).await?;
            let response = listing::everywhere_response(&own, &others, me);
            return Ok(Response::new(response));
        }
        let live = self.live(&request.workspace_id).await?;
        Ok(Response::new(listing::list_sessions_response(
            &live,
            request.if_generation,
            me,
        )))
    }

    type WatchSessionsStream = crate::sessions::watch::WatchStream;

    async fn watch_sessions(
        &self,
        request: Request<pb::WatchSessionsRequest>,
    ) -> Result<Response<Self::WatchSessionsStream>, Status> {
        let request = request.into_inner();
        let workspace_id = validate::id("workspace_id", &request.workspace_id)?;
        let watches = std::sync::Arc::clone(&self.watches);
        let stream = watches
            .watch(self, workspace_id, request.since_revision)
            .await?;
        Ok(Response::new(stream))
    }

    async fn count_background_sessions(
        &self,
        request: Request<pb::CountBackgroundSessionsRequest>,
    ) -> Result<Response<pb::CountBackgroundSessionsResponse>, Status> {
        let request = request.into_inner();
        if request.attached_session_ids.len() > MAX_ATTACHED_IDS {
            return Err(Error::invalid(
                "attached_session_ids",
                format!(
                    "attached_session_ids names {} sessions; the limit is {MAX_ATTACHED_IDS}",
                    request.attached_session_ids.len()
                ),
            )
            .into());
        }
        // A misspelt id would silently not be subtracted: a wrong count.
        for (at, session_id) in request.attached_session_ids.iter().enumerate() {
            // Named only when refused: up to 10,000 of them.
            if validate::id("", session_id).is_err() {
                validate::id(&format!("attached_session_ids[{at}]"), session_id)?;
            }
        }
        if request.scope() == pb::Scope::AllHosts {
            // Each host's list, counted as each host counts its own.
            let (own, others) = self.live_everywhere(&request.workspace_id).await?;
            let attached: std::collections::HashSet<&str> = request
                .attached_session_ids
                .iter()
                .map(String::as_str)
                .collect();
            let count = own.background_count(&request.attached_session_ids)
                + others.background_count(&attached);
            let (source, degraded_reason) = source_to_proto(&own.source);
            return Ok(Response::new(pb::CountBackgroundSessionsResponse {
                count: u32::try_from(count).unwrap_or(u32::MAX),
                source: source.into(),
                degraded_reason,
                hosts: others.hosts,
            }));
        }
        let live = self.live(&request.workspace_id).await?;
        let (source, degraded_reason) = source_to_proto(&live.source);
        Ok(Response::new(pb::CountBackgroundSessionsResponse {
            count: u32::try_from(live.background_count(&request.attached_session_ids))
                .unwrap_or(u32::MAX),
            source: source.into(),
            degraded_reason,
            hosts: Vec::new(),
        }))
    }

    type AttachSessionStream = AttachStream;

    async fn attach_session(
        &self,
        request: Request<pb::AttachSessionRequest>,
    ) -> Result<Response<AttachStream>, Status> {
        let request = request.into_inner();
        let session_id = validate::id("session_id", &request.session_id)?.to_owned();
        let start = validate::attach_start(&request)?;
        let onlooker = request.until_now || request.watch;
        let open = self.open_stream(&session_id, request.from_offset, onlooker, start);
        if request.until_now {
            let open = async { open.await.map(|(events, _)| events) };
            let events = self.look(&session_id, request.from_offset, open).await?;
            let mut response: Response<AttachStream> =
                Response::new(Box::pin(self.relay(session_id, events, None)));
            response.metadata_mut().insert(
                holdfast_api::proto::LOOK_METADATA,
                tonic::metadata::MetadataValue::from_static("1"),
            );
            return Ok(response);
        }
        // A session that is not in memory (restored after a restart, or
        // exited) has its row read while the stream opens. Opening one
        // changes nothing, so a refusal has nothing to undo but to drop it.
        let (usable, events) = tokio::join!(self.usable(&session_id), open);
        let usable = usable?;
        let (events, live_from) = match events {
            Ok(opened) => opened,
            Err(error) => (or_the_recorded_exit(error, usable.row())?, None),
        };
        self.adopt_if_restored(usable).await;
        if request.watch {
            let watched: AttachStream = Box::pin(self.relay(session_id, events, None));
            return Ok(with_live_offset(Response::new(watched), live_from));
        }
        let guard = self.memory.attach(&session_id);
        let store = self.store.clone();
        let touched = session_id.clone();
        self.background.spawn(async move {
            if let Err(error) = store
                .touch_attached(&touched, store::micros(SystemTime::now()))
                .await
            {
                tracing::warn!(session_id = %touched, %error, "recording the attach failed");
            }
        });
        let mut response = with_live_offset(Response::new(()), live_from);
        let client = self.client_attachment(&session_id, guard, &mut response, request.read_only);
        let relayed = self.relay(session_id, events, Some(client));
        Ok(response.map(|()| -> AttachStream { Box::pin(relayed) }))
    }

    async fn write_input(
        &self,
        request: Request<pb::WriteInputRequest>,
    ) -> Result<Response<pb::WriteInputResponse>, Status> {
        let request = request.into_inner();
        let session_id = validate::id("session_id", &request.session_id)?;
        let attachment = validate::attachment(&request.attachment)?;
        self.refuse_read_only(session_id, attachment)?;
        self.typed_in(session_id, attachment).await;
        self.write(session_id, request.data).await?;
        Ok(Response::new(pb::WriteInputResponse {}))
    }

    type SendInputStream = SendInputStream;

    async fn send_input(
        &self,
        request: Request<tonic::Streaming<pb::SendInputRequest>>,
    ) -> Result<Response<SendInputStream>, Status> {
        let writes = request.into_inner();
        let answers = futures_util::stream::try_unfold(
            (writes, String::new(), None, self.clone()),
            |(mut writes, mut session_id, mut attachment, host)| async move {
                let Some(write) = writes.message().await.map_err(oversize::relabelled)? else {
                    return Ok(None);
                };
                // The first write names the session; a later one only if it
                // names another. Its client, likewise.
                if session_id.is_empty()
                    || (!write.session_id.is_empty() && write.session_id != session_id)
                {
                    session_id = validate::id("session_id", &write.session_id)?.to_owned();
                }
                if !write.attachment.is_empty() {
                    attachment = validate::attachment(&write.attachment)?;
                }
                host.refuse_read_only(&session_id, attachment)?;
                host.typed_in(&session_id, attachment).await;
                host.write(&session_id, write.data).await?;
                Ok(Some((
                    pb::SendInputResponse {},
                    (writes, session_id, attachment, host),
                )))
            },
        );
        Ok(Response::new(Box::pin(answers)))
    }

    async fn resize_session(
        &self,
        request: Request<pb::ResizeSessionRequest>,
    ) -> Result<Response<pb::ResizeSessionResponse>, Status> {
        let request = request.into_inner();
        let session_id = validate::id("session_id", &request.session_id)?.to_owned();
        validate::size(request.cols, request.rows)?;
        let attachment = validate::attachment(&request.attachment)?;
        self.refuse_read_only(&session_id, attachment)?;
        let usable = self.usable(&session_id).await?;
        let mut client = self.daemon.clone();
        let resize = self.request(daemon::ResizeRequest {
            session_id: session_id.clone(),
            cols: request.cols,
            rows: request.rows,
            redraw: request.redraw,
        });
        {
            let _turn = self.resizing.lock().await;
            self.daemon_call("resize", client.resize(resize))
                .await
                .map_err(|error| ended_if_forgotten(error, &usable))?;
            self.sizes
                .resized(&session_id, attachment, (request.cols, request.rows));
        }
        self.adopt_if_restored(usable).await;
        Ok(Response::new(pb::ResizeSessionResponse {}))
    }

    async fn get_session(
        &self,
        request: Request<pb::GetSessionRequest>,
    ) -> Result<Response<pb::GetSessionResponse>, Status> {
        let session_id = validate::id("session_id", &request.get_ref().session_id)?;
        // The row first: an unknown id is answered without the daemon.
        let row = self.undisposed_row(session_id).await?;
        Ok(Response::new(pb::GetSessionResponse {
            session: Some(self.describe(row).await?),
        }))
    }

    async fn list_ended_sessions(
        &self,
        request: Request<pb::ListEndedSessionsRequest>,
    ) -> Result<Response<pb::ListEndedSessionsResponse>, Status> {
        let request = request.into_inner();
        let workspace_id = validate::id("workspace_id", &request.workspace_id)?;
        let limit = match request.limit {
            0 => 50,
            limit @ 1..=MAX_ENDED_LISTED => limit,
            limit => {
                return Err(Error::invalid(
                    "limit",
                    format!("limit is {limit}; the most is {MAX_ENDED_LISTED}"),
                )
                .into());
            }
        };
        if self
            .store
            .workspace(workspace_id)
            .await
            .map_err(Error::from)?
            .is_none()
        {
            return Err(Error::WorkspaceNotFound(workspace_id.to_owned()).into());
        }
        let rows = self
            .store
            .ended_sessions(workspace_id, limit.into())
            .await
            .map_err(Error::from)?;
        let me = self.fleet.me();
        let sessions = rows
            .into_iter()
            .map(|row| {
                let mut session = crate::sessions::session_view::describe(row, None, None, false);
                session.host_id.clone_from(&me.id);
                session.host_name.clone_from(&me.name);
                session
            })
            .collect();
        Ok(Response::new(pb::ListEndedSessionsResponse { sessions }))
    }

    async fn get_screen(
        &self,
        request: Request<pb::GetScreenRequest>,
    ) -> Result<Response<pb::GetScreenResponse>, Status> {
        let session_id = validate::id("session_id", &request.get_ref().session_id)?;
        // The row first: an unknown id, or another host's, is answered
        // without the daemon.
        self.undisposed_row(session_id).await?;
        let lines = request.get_ref().scrollback_lines;
        Ok(Response::new(self.screen(session_id, lines).await?))
    }

    async fn rename_session(
        &self,
        request: Request<pb::RenameSessionRequest>,
    ) -> Result<Response<pb::RenameSessionResponse>, Status> {
        let request = request.into_inner();
        let session_id = validate::id("session_id", &request.session_id)?.to_owned();
        validate::text("name", &request.name, true)?;
        let mut row = self.undisposed_row(&session_id).await?;
        // Row and memory both, even should the client give up between.
        let host = self.clone();
        let name = request.name.clone();
        self.to_completion(async move {
            host.store.rename(&session_id, &name).await?;
            host.memory.rename(&session_id, &name);
            Ok(())
        })
        .await?;
        row.title = request.name;
        let session = self.describe(row).await.map_err(|error| match error {
            // The name is kept all the same: say so.
            Error::DaemonDown(why) | Error::DaemonUnavailable(why) => Error::DaemonUnavailable(
                format!("the new name is kept, but the session cannot be described: {why}"),
            ),
            error => error,
        })?;
        Ok(Response::new(pb::RenameSessionResponse {
            session: Some(session),
        }))
    }

    async fn dispose_session(
        &self,
        request: Request<pb::DisposeSessionRequest>,
    ) -> Result<Response<pb::DisposeSessionResponse>, Status> {
        let request = request.into_inner();
        let session_id = validate::id("session_id", &request.session_id)?.to_owned();
        let (signal, grace) = validate::disposal(request.signal, request.grace_ms)?;
        let host = self.clone();
        let disposed = self
            .to_completion(async move { host.dispose(session_id, signal, grace).await })
            .await?;
        Ok(Response::new(disposed))
    }
}
