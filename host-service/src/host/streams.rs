//! Attach streams: the daemon's events of a session, relayed to a client.
//!
//! A stream is opened on a connection of its own, resumed from its next
//! offset when a daemon upgrade ends it, cut at an offset for a look, and
//! counted as its client's while it is open.

use std::sync::Arc;

use futures_util::{Stream, StreamExt};
use holdfast_api::proto::daemon::v1 as daemon;
use holdfast_api::proto::host::v1 as pb;
use tonic::{Request, Response, Status};

use super::{Host, is_forgotten_end};
use crate::daemon::resume::{DaemonEvents, resuming};
use crate::error::{Error, Result};
use crate::sessions::attach_events::{event_to_proto, output_until};
use crate::sessions::client_sizes::AttachToken;
use crate::sessions::held_sessions::AttachGuard;
use crate::store::SessionRow;

impl Host {
    /// An attached client's hold on `session_id`, counted in memory by
    /// `counted`.
    ///
    /// The client's size (once it sets one) is its own until the returned
    /// value is dropped. `response` gets its token as metadata.
    ///
    /// A `read_only` client's token is refused by input and resizes: its
    /// keys go nowhere and its size is never the session's.
    pub(crate) fn client_attachment<T>(
        &self,
        session_id: &str,
        counted: AttachGuard,
        response: &mut Response<T>,
        read_only: bool,
    ) -> ClientAttachment {
        let attachment = if read_only {
            self.sizes.attach_read_only(session_id)
        } else {
            self.sizes.attach(session_id)
        };
        response.metadata_mut().insert(
            holdfast_api::proto::ATTACHMENT_METADATA,
            tonic::metadata::MetadataValue::from(attachment),
        );
        ClientAttachment {
            _counted: counted,
            host: self.clone(),
            session_id: session_id.to_owned(),
            attachment,
        }
    }

    /// Opens the daemon's attach stream of a session.
    ///
    /// For an onlooker (a look or a watch), the stream is unpaced. Only the
    /// opening is bounded by the operation timeout; the stream itself is
    /// not.
    ///
    /// With a `start` other than a replay, the stream begins with the
    /// session's screen (if the daemon chose to draw it), and output goes
    /// on from where it ends.
    pub(crate) async fn open_stream(
        &self,
        session_id: &str,
        from_offset: Option<u64>,
        onlooker: bool,
        start: daemon::AttachStart,
    ) -> Result<(DaemonEvents, Option<u64>)> {
        let (events, live_from) = self
            .open_stream_once(session_id, from_offset, onlooker, start)
            .await?;
        Ok((
            self.resuming(session_id, events, from_offset, onlooker, start),
            live_from,
        ))
    }

    /// `events` of `session_id`, opened again from where they stopped each
    /// time a daemon upgrade ends them.
    ///
    /// Once anything was relayed, they go on as a replay from the next
    /// offset; before, they start as `start` asked.
    pub(crate) fn resuming(
        &self,
        session_id: &str,
        events: DaemonEvents,
        from_offset: Option<u64>,
        onlooker: bool,
        start: daemon::AttachStart,
    ) -> DaemonEvents {
        let host = self.clone();
        let session_id = session_id.to_owned();
        resuming(events, from_offset, move |from| {
            let host = host.clone();
            let session_id = session_id.clone();
            let start = if from.is_some() {
                daemon::AttachStart::Unspecified
            } else {
                start
            };
            async move {
                let opened = host
                    .open_stream_once(&session_id, from, onlooker, start)
                    .await;
                opened.ok().map(|(events, _)| events)
            }
        })
    }

    async fn open_stream_once(
        &self,
        session_id: &str,
        from_offset: Option<u64>,
        onlooker: bool,
        start: daemon::AttachStart,
    ) -> Result<(DaemonEvents, Option<u64>)> {
        let (mut client, slot) = self.streams.client();
        let attach = daemon::AttachRequest {
            session_id: session_id.to_owned(),
            from_offset,
            // A look or a watch must not hold the program up (a daemon
            // older than the field paces it, within its patience).
            unpaced: onlooker,
            start: start.into(),
        };
        // Where its live output begins, from the daemon's answer.
        let opened =
            futures_util::TryFutureExt::map_ok(client.attach(Request::new(attach)), |response| {
                let live_from = holdfast_api::proto::live_offset(response.metadata());
                Response::new((response.into_inner(), live_from))
            });
        let (events, live_from) = self.daemon_call("attach", opened).await?;
        Ok((slot.held_by(events).boxed(), live_from))
    }

    /// A look at a session.
    ///
    /// It is the events of `open` (its attach stream from `from_offset`) up
    /// to the output written by now, and its exit if it has exited. Nothing
    /// is registered or counted as attached: a look changes nothing, as a
    /// list does not. The host cuts the stream itself, at the offset the
    /// daemon lists. So any daemon serves it, one that outlived an update
    /// included.
    pub(crate) async fn look(
        &self,
        session_id: &str,
        from_offset: Option<u64>,
        open: impl Future<Output = Result<DaemonEvents>>,
    ) -> Result<DaemonEvents> {
        let (row, listed, events) = tokio::join!(
            self.lookable(session_id),
            self.daemon_session(session_id),
            open
        );
        let row = row?;
        let events = match events {
            Ok(events) => events,
            Err(error) => return or_the_recorded_exit(error, row.as_ref()),
        };
        // Not listed though its stream opened: forgotten in between, which
        // only an exited session is. Its stream ends with the exit.
        let Some(listed) = listed? else {
            return Ok(events);
        };
        let end = listed.output_offset;
        Ok(if !listed.alive {
            // Its output is all there: the stream ends with the exit.
            events
        } else if from_offset.map_or(end == 0, |from| from >= end) {
            futures_util::stream::empty().boxed()
        } else {
            output_until(events, end).boxed()
        })
    }

    /// Relays a daemon attach stream as the host's, for as long as it is
    /// open holding `client`'s attachment (`None` for an onlooker).
    pub(crate) fn relay<S>(
        &self,
        session_id: String,
        events: S,
        client: Option<ClientAttachment>,
    ) -> impl Stream<Item = Result<pb::AttachSessionResponse, Status>> + Send + use<S>
    where
        S: Stream<Item = Result<daemon::AttachResponse, Status>> + Send + 'static,
    {
        let memory = Arc::clone(&self.memory);
        events.map(move |event| {
            // The attachment lives as long as the stream.
            let _attached = &client;
            let event = event.map_err(|status| Status::from(Error::from_daemon(status)))?;
            Ok(event_to_proto(&memory, &session_id, event))
        })
    }
}

/// An attach stream that failed to open as `error`.
///
/// For a session whose row says it exited and that the daemon forgot, its
/// output is gone. The stream is then its exit, as its row recorded it.
pub(crate) fn or_the_recorded_exit(error: Error, row: Option<&SessionRow>) -> Result<DaemonEvents> {
    let Some(row) = row.filter(|row| is_forgotten_end(&error, row)) else {
        return Err(error);
    };
    let exited = daemon::AttachResponse {
        event: Some(daemon::attach_response::Event::Exited(daemon::Exited {
            exit_code: row.exit_code,
            signal: row.exit_signal,
        })),
    };
    Ok(futures_util::stream::once(std::future::ready(Ok(exited))).boxed())
}

/// An attached client's hold on its session while its stream is open.
///
/// The session counts as attached (in memory), and the size its client
/// sets is its own. Once dropped, if the session still has that size, it
/// goes back to the size of a client still attached (see
/// `sessions/client_sizes.rs`).
pub(crate) struct ClientAttachment {
    _counted: AttachGuard,
    host: Host,
    session_id: String,
    pub(crate) attachment: AttachToken,
}

impl Drop for ClientAttachment {
    fn drop(&mut self) {
        let sizes = &self.host.sizes;
        if sizes.detach(&self.session_id, self.attachment).is_some() {
            self.host
                .apply_size_soon(std::mem::take(&mut self.session_id));
        }
    }
}
