//! A session's input on its way to the daemon.
//!
//! Its writes go as messages on one daemon `Input` stream. The stream opens
//! at the first write and closes when this process forgets the session. A
//! message costs both processes far less than a request of its own
//! (BENCHMARKS.md, scenario 5).

use std::time::Duration;

use holdfast_api::proto::daemon::v1 as daemon;
use holdfast_plumbing::answered_stream::{self, AnsweredStream};
use holdfast_plumbing::daemon_client::DaemonClient;
use prost::bytes::Bytes;
use tokio::sync::Mutex;
use tonic::{Request, Status};

use crate::error::{Error, Result};

/// One session's input stream to the daemon, opened at its first write.
///
/// Writes take turns. Each is sent once the one before is answered, so
/// they reach the terminal whole and in the order they were answered.
#[derive(Default)]
pub struct SessionInput {
    stream: Mutex<Stream>,
}

/// Where the session's writes go.
#[derive(Default)]
enum Stream {
    /// Nowhere yet.
    ///
    /// The next write opens the stream.
    #[default]
    Closed,
    Open(Box<AnsweredStream<daemon::InputRequest, daemon::InputResponse>>),
    /// A `Write` request for each write.
    ///
    /// The daemon has no `Input`. It is an earlier version, kept running
    /// across an upgrade of the host-service.
    Requests,
}

impl std::fmt::Debug for SessionInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionInput").finish_non_exhaustive()
    }
}

impl SessionInput {
    /// Writes `data` to the session's terminal, answering once the daemon
    /// holds all of it.
    ///
    /// What the terminal did not take waits there for the program. A write
    /// that does not fit beside what waits is refused whole. Waiting for
    /// its turn counts against `timeout`. A write that fails, times out or
    /// is dropped closes the stream. The next write opens another.
    pub async fn write(
        &self,
        daemon: &DaemonClient,
        session_id: &str,
        data: Bytes,
        timeout: Duration,
    ) -> Result<()> {
        let deadline = tokio::time::Instant::now() + timeout;
        let exchange = async {
            let mut stream = self.stream.lock().await;
            // Taken out for the exchange and put back only once it is
            // answered. This write may time out or be dropped on the way (a
            // client gone, a deadline of its own). Then the stream goes with
            // it, and no later write can take this one's answer for its own.
            let taken = std::mem::take(&mut *stream);
            let (after, answered) = send(taken, daemon, session_id, data, deadline).await;
            *stream = after;
            answered.map_err(Error::from_daemon)
        };
        tokio::time::timeout_at(deadline, exchange)
            .await
            .unwrap_or_else(|_| Err(Error::no_answer("write", timeout)))
    }
}

/// Sends one write on the stream, opening it with this write if need be.
///
/// Returns where the session's next write goes, and the answer. A write
/// sent as a request of its own carries what is left until `deadline` as
/// its gRPC deadline. So the daemon gives up on it when this process does.
async fn send(
    stream: Stream,
    daemon: &DaemonClient,
    session_id: &str,
    data: Bytes,
    deadline: tokio::time::Instant,
) -> (Stream, Result<(), Status>) {
    let by_request = |data| {
        let mut request = Request::new(daemon::WriteRequest {
            session_id: session_id.to_owned(),
            data,
        });
        request.set_timeout(deadline.saturating_duration_since(tokio::time::Instant::now()));
        let mut client = daemon.clone();
        async move { client.write(request).await.map(drop) }
    };
    match stream {
        Stream::Open(mut open) => {
            let write = daemon::InputRequest {
                session_id: String::new(),
                data,
            };
            match open.send(write).await {
                Ok(()) => (Stream::Open(open), Ok(())),
                Err(status) => (Stream::Closed, Err(status)),
            }
        }
        Stream::Requests => (Stream::Requests, by_request(data).await),
        Stream::Closed => {
            let first = daemon::InputRequest {
                session_id: session_id.to_owned(),
                data: data.clone(),
            };
            let (writes, requests) = answered_stream::requests(first);
            let answers = match daemon.clone().input(requests).await {
                Ok(answers) => answers.into_inner(),
                // Refused before reading anything. The write goes as a
                // request, and so will the session's next ones.
                Err(status) if status.code() == tonic::Code::Unimplemented => {
                    tracing::debug!(%session_id, "the pty-daemon has no Input (an earlier version): writing with Write");
                    return (Stream::Requests, by_request(data).await);
                }
                Err(status) => return (Stream::Closed, Err(status)),
            };
            match AnsweredStream::opened(writes, answers).await {
                Ok(open) => (Stream::Open(Box::new(open)), Ok(())),
                Err(status) => (Stream::Closed, Err(status)),
            }
        }
    }
}
