//! A session's input on its way to the daemon: its writes go as messages
//! on one daemon `Input` stream, opened at the first write and closed when
//! this process forgets the session. A message costs both processes far
//! less than a request of its own (BENCHMARKS.md, scenario 5).

use std::time::Duration;

use futures_util::StreamExt;
use holdfast::daemon_client::DaemonClient;
use holdfast::proto::daemon::v1 as daemon;
use prost::bytes::Bytes;
use tokio::sync::{Mutex, mpsc};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Status, Streaming};

use crate::error::{Error, Result};

/// One session's input stream to the daemon, opened at its first write.
/// Writes take turns: each is sent once the one before is acknowledged,
/// so they reach the terminal whole and in the order they were answered.
#[derive(Default)]
pub struct SessionInput {
    stream: Mutex<Option<Open>>,
}

/// An open `Input` stream.
struct Open {
    writes: mpsc::Sender<daemon::InputRequest>,
    answers: Streaming<daemon::InputResponse>,
}

impl std::fmt::Debug for SessionInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionInput").finish_non_exhaustive()
    }
}

impl SessionInput {
    /// Writes `data` to the session's terminal, answering once the daemon
    /// has queued all of it there. Waiting for its turn counts against
    /// `timeout`. A write that fails or times out closes the stream (the
    /// daemon then drops whatever of it was not yet written); the next
    /// write opens another.
    pub async fn write(
        &self,
        daemon: &DaemonClient,
        session_id: &str,
        data: Bytes,
        timeout: Duration,
    ) -> Result<()> {
        let deadline = tokio::time::Instant::now() + timeout;
        let timed_out = || {
            Error::DaemonUnavailable(format!(
                "write got no answer within {} ms",
                timeout.as_millis()
            ))
        };
        let Ok(mut stream) = tokio::time::timeout_at(deadline, self.stream.lock()).await else {
            return Err(timed_out());
        };
        match tokio::time::timeout_at(deadline, send(&mut stream, daemon, session_id, data)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(status)) => {
                *stream = None;
                Err(Error::from_daemon(status))
            }
            Err(_) => {
                *stream = None;
                Err(timed_out())
            }
        }
    }
}

/// Sends one write on the stream, opening it first if need be, and waits
/// for its answer.
async fn send(
    stream: &mut Option<Open>,
    daemon: &DaemonClient,
    session_id: &str,
    data: Bytes,
) -> Result<(), Status> {
    let open = match stream {
        Some(open) => {
            let write = daemon::InputRequest {
                session_id: String::new(),
                data,
            };
            if open.writes.send(write).await.is_err() {
                // The daemon ended the stream (its session exited, say):
                // nothing was sent, and how it ended is the answer.
                return match open.answers.message().await {
                    Err(status) => Err(status),
                    Ok(_) => Err(Status::unavailable("the daemon closed the input stream")),
                };
            }
            open
        }
        None => {
            let (writes, queued) = mpsc::channel(1);
            let first = daemon::InputRequest {
                session_id: session_id.to_owned(),
                data,
            };
            // The first write leaves with the request's headers: opening
            // costs no round trip of its own.
            let requests = futures_util::stream::iter([first]).chain(ReceiverStream::new(queued));
            let answers = daemon.clone().input(requests).await?.into_inner();
            stream.insert(Open { writes, answers })
        }
    };
    match open.answers.message().await? {
        Some(_) => Ok(()),
        None => Err(Status::unavailable(
            "the daemon ended the input stream without answering",
        )),
    }
}
