//! The client half of holdfast's input streams.
//!
//! These are the daemon's `Input` and the host-service's `SendInput`. Writes
//! go out as messages on one request stream. Each is answered in order on
//! the response stream.

use futures_util::{Stream, StreamExt};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Status, Streaming};

/// The request stream to open an input stream with, and a sender of writes.
///
/// The request stream is for a generated client's call. The sender carries
/// the writes after `first`. `first` leaves with the request's headers, so
/// opening costs no round trip of its own.
pub fn requests<Req: Send + 'static>(
    first: Req,
) -> (mpsc::Sender<Req>, impl Stream<Item = Req> + Send + 'static) {
    let (writes, queued) = mpsc::channel(1);
    let requests = futures_util::stream::iter([first]).chain(ReceiverStream::new(queued));
    (writes, requests)
}

/// An open input stream, one write in flight at a time.
///
/// A `send` dropped before its answer leaves the stream unusable. The answer
/// still on its way belongs to that write. Later sends are refused, and the
/// caller opens another stream.
pub struct AnsweredStream<Req, Resp> {
    writes: mpsc::Sender<Req>,
    answers: Streaming<Resp>,
    /// A write was sent and its answer not yet read.
    awaiting: bool,
}

impl<Req: Send + 'static, Resp> AnsweredStream<Req, Resp> {
    /// The stream opened with [`requests`], once `first` is answered.
    pub async fn opened(
        writes: mpsc::Sender<Req>,
        answers: Streaming<Resp>,
    ) -> Result<Self, Status> {
        let mut stream = Self {
            writes,
            answers,
            awaiting: true,
        };
        stream.answer().await?;
        Ok(stream)
    }

    /// Sends one write and waits for its answer.
    pub async fn send(&mut self, write: Req) -> Result<(), Status> {
        if self.awaiting {
            return Err(Status::aborted(
                "an earlier write on this input stream was dropped before its answer; open another stream",
            ));
        }
        self.awaiting = true;
        if self.writes.send(write).await.is_err() {
            // The server ended the stream. Nothing was sent, and how the
            // stream ended is the answer.
            return match self.answers.message().await {
                Err(status) => Err(status),
                Ok(_) => Err(Status::unavailable("the server closed the input stream")),
            };
        }
        self.answer().await
    }

    /// The next answer, or the status that ended the stream.
    pub async fn answer(&mut self) -> Result<(), Status> {
        let answer = self.answers.message().await;
        self.awaiting = false;
        match answer? {
            Some(_) => Ok(()),
            None => Err(Status::unavailable(
                "the server ended the input stream without answering",
            )),
        }
    }
}
