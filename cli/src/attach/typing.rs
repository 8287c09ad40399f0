//! Keystrokes on their way to the session: one `SendInput` stream, and
//! keys held while the program reads no input.

use std::time::{Duration, Instant};

use holdfast_api::proto::host::v1 as pb;
use holdfast_plumbing::answered_stream::{self, AnsweredStream};

use super::keyboard::Keyboard;
use super::{REATTACH_PATIENCE, REATTACH_PAUSE_MAX, is_verdict};
use crate::clients::{Clients, refused};
use crate::stdout::tell;

/// Whether a refusal is the program not reading its input.
///
/// That refusal is `INPUT_FULL`. From an older host-service, it is
/// `RESOURCE_EXHAUSTED` without a reason. From an older daemon through a
/// newer host, it is `DAEMON_REFUSED`. Another shortage is not, such as a
/// request over the size limit, which no retry mends.
pub(super) fn is_input_full(status: &tonic::Status) -> bool {
    use holdfast_api::error_details::Reason;
    status.code() == tonic::Code::ResourceExhausted
        && holdfast_api::error_details::reason_of(status).is_none_or(|(reason, _)| {
            [Reason::InputFull, Reason::DaemonRefused]
                .iter()
                .any(|input_full| reason == input_full.as_str_name())
        })
}

/// What became of keys sent.
pub(super) enum Sent {
    /// Taken, or dropped after a word (whether they arrived is unknown).
    Gone,
    /// Refused because the program has not read what it was sent.
    ///
    /// None of them were taken.
    Held,
    /// Refused because the session takes no input.
    ///
    /// Its program exited (the end is on its way to the screen) or let go
    /// of its terminal.
    NotTaken(String),
}

/// Sends keys.
///
/// A host-service going away meanwhile is no reason to stop. The attach
/// stream breaks too, and is opened again. But whether these keys reached
/// the session is then unknown, and the user is told.
pub(super) async fn send_keys(
    typing: &mut Typing,
    clients: &mut Clients,
    session_id: &str,
    keys: &[u8],
) -> anyhow::Result<Sent> {
    match typing.send(clients, session_id, keys).await {
        Ok(()) => Ok(Sent::Gone),
        // Either refusal ended the input stream.
        Err(status) if is_input_full(&status) => {
            typing.again();
            Ok(Sent::Held)
        }
        Err(status) if status.code() == tonic::Code::FailedPrecondition => {
            typing.again();
            Ok(Sent::NotTaken(status.message().to_owned()))
        }
        Err(status) if is_verdict(&status) => Err(refused(status)),
        Err(status) => {
            typing.again();
            tell!(
                "\r\n[holdfast: {} bytes of input may not have reached the session: {}]\r\n",
                keys.len(),
                status.message()
            );
            Ok(Sent::Gone)
        }
    }
}

/// Keys the session refused while its program read no input.
///
/// They are held, in order ahead of later keys, and sent again now and
/// then. Meanwhile output goes on being shown and the detach key still
/// works.
#[derive(Default)]
pub(super) struct HeldKeys {
    /// Since when, and when to try again.
    refused: Option<(Instant, Instant)>,
    pause: Duration,
    /// The user was told the session takes no input, and no key has been
    /// taken since.
    ///
    /// Keys typed meanwhile go without another word.
    told_not_taken: bool,
}

impl HeldKeys {
    pub(super) fn refused(&self) -> bool {
        self.refused.is_some()
    }

    pub(super) async fn retry(&self) {
        if let Some((_, at)) = self.refused {
            tokio::time::sleep_until(at.into()).await;
        }
    }

    /// Sends what the keyboard holds.
    ///
    /// If refused, it holds the keys and tries again later. It drops them,
    /// with a word, after [`REATTACH_PATIENCE`].
    pub(super) async fn flush(
        &mut self,
        typing: &mut Typing,
        clients: &mut Clients,
        session_id: &str,
        keyboard: &mut Keyboard,
    ) -> anyhow::Result<()> {
        if keyboard.typed.is_empty() {
            self.refused = None;
            return Ok(());
        }
        let keys = std::mem::take(&mut keyboard.typed);
        match send_keys(typing, clients, session_id, &keys).await? {
            Sent::Held => {}
            Sent::Gone => {
                self.refused = None;
                self.told_not_taken = false;
                return Ok(());
            }
            Sent::NotTaken(why) => {
                if !self.told_not_taken {
                    tell!("\r\n[holdfast: keys not taken: {why}]\r\n");
                    self.told_not_taken = true;
                }
                self.refused = None;
                return Ok(());
            }
        }
        let now = Instant::now();
        let since = self.refused.map_or(now, |(since, _)| since);
        if now.duration_since(since) >= REATTACH_PATIENCE {
            tell!(
                "\r\n[holdfast: the program has not read its input for {} s; {} bytes typed were dropped]\r\n",
                REATTACH_PATIENCE.as_secs(),
                keys.len()
            );
            self.refused = None;
            return Ok(());
        }
        self.pause = if self.refused.is_some() {
            (self.pause * 2).min(REATTACH_PAUSE_MAX)
        } else {
            Duration::from_millis(20)
        };
        self.refused = Some((since, now + self.pause));
        keyboard.typed = keys;
        Ok(())
    }
}

/// An open `SendInput` stream.
pub(super) type KeyStream = AnsweredStream<pb::SendInputRequest, pb::SendInputResponse>;

/// Keystrokes on their way, from the client of one attach stream.
///
/// The client is named by its `holdfast-attachment` token. Typing is
/// activity, which gives the session this terminal's size, as under tmux.
pub(super) struct Typing {
    attachment: String,
    to: KeysTo,
}

/// Where keystrokes go.
///
/// They go on one `SendInput` stream, opened at the first. A host-service
/// that has no `SendInput` (an earlier version, still running) gets a
/// `WriteInput` for each.
pub(super) enum KeysTo {
    NotYet,
    Stream(Box<KeyStream>),
    Requests,
}

impl Typing {
    /// Keys typed in the client of the stream `attachment` names.
    pub(super) fn new(attachment: String) -> Self {
        Self {
            attachment,
            to: KeysTo::NotYet,
        }
    }

    /// The next keys open a stream of their own.
    pub(super) fn again(&mut self) {
        self.to = KeysTo::NotYet;
    }

    /// Sends keys, answering once they reached the session's terminal.
    pub(super) async fn send(
        &mut self,
        clients: &mut Clients,
        session_id: &str,
        keys: &[u8],
    ) -> Result<(), tonic::Status> {
        let data = prost::bytes::Bytes::copy_from_slice(keys);
        loop {
            match &mut self.to {
                // The stream's first write named the session and client.
                KeysTo::Stream(stream) => {
                    let write = pb::SendInputRequest {
                        data,
                        ..Default::default()
                    };
                    return stream.send(write).await;
                }
                KeysTo::Requests => {
                    let write = pb::WriteInputRequest {
                        session_id: session_id.to_owned(),
                        data,
                        attachment: self.attachment.clone(),
                    };
                    return clients.terminals.write_input(write).await.map(drop);
                }
                KeysTo::NotYet => {
                    let first = pb::SendInputRequest {
                        session_id: session_id.to_owned(),
                        data: data.clone(),
                        attachment: self.attachment.clone(),
                    };
                    let (writes, requests) = answered_stream::requests(first);
                    match clients.terminals.send_input(requests).await {
                        Ok(answers) => {
                            let stream = KeyStream::opened(writes, answers.into_inner()).await?;
                            self.to = KeysTo::Stream(Box::new(stream));
                            return Ok(());
                        }
                        // Refused before reading anything. These keys go
                        // as a request, and so will the next ones.
                        Err(status) if status.code() == tonic::Code::Unimplemented => {
                            self.to = KeysTo::Requests;
                        }
                        Err(status) => return Err(status),
                    }
                }
            }
        }
    }
}
