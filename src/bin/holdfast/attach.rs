//! `holdfast attach`: a terminal client like `tmux attach`. Raw mode,
//! scrollback replayed first, then live output; keystrokes go to the
//! session; the window size follows SIGWINCH; Ctrl-] detaches and leaves
//! the session running. The terminal is restored on every way out.

use std::io::{IsTerminal, Write};

use anyhow::Context;
use futures_util::{Stream, StreamExt};
use holdfast::answered_stream::{self, AnsweredStream};
use holdfast::proto::host::v1 as pb;
use rustix::termios::{OptionalActions, Termios};
use tokio::io::AsyncReadExt;
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::{Clients, refused};

/// Ctrl-]: the byte that detaches, as in telnet.
pub const DETACH_KEY: u8 = 0x1d;

/// Puts the terminal in raw mode until dropped (on return, error or panic).
struct RawMode {
    saved: Termios,
}

impl RawMode {
    fn enter() -> anyhow::Result<Option<Self>> {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            return Ok(None);
        }
        let saved =
            rustix::termios::tcgetattr(&stdin).context("reading the terminal's settings")?;
        let mut raw = saved.clone();
        raw.make_raw();
        rustix::termios::tcsetattr(&stdin, OptionalActions::Flush, &raw)
            .context("entering raw mode")?;
        Ok(Some(Self { saved }))
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = rustix::termios::tcsetattr(std::io::stdin(), OptionalActions::Flush, &self.saved);
    }
}

/// How an attachment ended.
enum Ending {
    Exited(pb::Exited),
    Detached,
    StreamEnded,
}

/// Attaches to `session_id` until it exits or the user detaches; returns
/// the exit status for the process.
pub async fn attach(clients: &mut Clients, session_id: String) -> anyhow::Result<u8> {
    let window_changes = signal(SignalKind::window_change()).context("watching SIGWINCH")?;
    let stream = clients
        .terminals
        .attach_session(pb::AttachSessionRequest {
            session_id: session_id.clone(),
            from_offset: None,
        })
        .await
        .map_err(refused)?
        .into_inner();
    let raw = RawMode::enter()?;
    if raw.is_some() {
        resize_to_terminal(clients, &session_id).await;
    }
    relay(clients, session_id, raw, window_changes, stream).await
}

/// Starts a session sized to this terminal and attaches to it, in one call
/// (`StartSession`), as `tmux new-session` does.
pub async fn start(
    clients: &mut Clients,
    mut request: pb::CreateSessionRequest,
) -> anyhow::Result<u8> {
    use pb::start_session_response::Event;
    // Before the size is read, so no change of it goes unseen.
    let window_changes = signal(SignalKind::window_change()).context("watching SIGWINCH")?;
    if let Some((cols, rows)) = terminal_size() {
        (request.cols, request.rows) = (cols, rows);
    }
    let mut stream = clients
        .terminals
        .start_session(pb::StartSessionRequest {
            create: Some(request),
        })
        .await
        .map_err(refused)?
        .into_inner();
    let started = stream.message().await.map_err(refused)?;
    let Some(Event::Started(session)) = started.and_then(|message| message.event) else {
        anyhow::bail!("the host-service did not say which session it started");
    };
    let session_id = session.session_id;
    let events = stream.filter_map(|message| async move {
        match message {
            Ok(pb::StartSessionResponse {
                event: Some(Event::Attach(event)),
            }) => Some(Ok(event)),
            Ok(_) => None,
            Err(status) => Some(Err(status)),
        }
    });
    let shown = async {
        let raw = RawMode::enter()?;
        relay(clients, session_id.clone(), raw, window_changes, events).await
    };
    // It runs on whatever went wrong here: say which one it is.
    shown.await.with_context(|| {
        format!("session {session_id} keeps running; `holdfast attach {session_id}` shows it")
    })
}

/// Shows `events` on this terminal and sends it keystrokes until the
/// session exits or the user detaches.
async fn relay(
    clients: &mut Clients,
    session_id: String,
    raw: Option<RawMode>,
    mut window_changes: Signal,
    events: impl Stream<Item = Result<pb::AttachSessionResponse, tonic::Status>>,
) -> anyhow::Result<u8> {
    let mut stream = std::pin::pin!(events);
    let mut terminate = signal(SignalKind::terminate()).context("watching SIGTERM")?;
    let mut hangup = signal(SignalKind::hangup()).context("watching SIGHUP")?;
    let mut stdin = tokio::io::stdin();
    let mut stdout = std::io::stdout();
    let mut keys = [0u8; 4096];
    // Input that is not a terminal (a file, a pipe, /dev/null) may end long
    // before the program does: the output is still shown to the end.
    let mut stdin_open = true;
    let mut typing = Typing::NotYet;
    let ending = loop {
        tokio::select! {
            message = stream.next() => match message.transpose() {
                Ok(Some(message)) => match message.event {
                    Some(pb::attach_session_response::Event::Output(output)) => {
                        stdout.write_all(&output.data)?;
                        stdout.flush()?;
                    }
                    Some(pb::attach_session_response::Event::Truncated(gap)) => {
                        write!(stdout, "\r\n[holdfast: {} bytes of earlier output are no longer held]\r\n", gap.to_offset - gap.from_offset)?;
                    }
                    Some(pb::attach_session_response::Event::Exited(exited)) => break Ending::Exited(exited),
                    Some(pb::attach_session_response::Event::Title(_)) | None => {}
                },
                Ok(None) => break Ending::StreamEnded,
                Err(status) => {
                    drop(raw);
                    return Err(refused(status).context("the attach stream failed"));
                }
            },
            read = stdin.read(&mut keys), if stdin_open => {
                let read = read.context("reading the keyboard")?;
                if read == 0 {
                    stdin_open = false;
                    continue;
                }
                let typed = &keys[..read];
                let detach_at = typed.iter().position(|byte| *byte == DETACH_KEY);
                let input = &typed[..detach_at.unwrap_or(read)];
                if !input.is_empty() {
                    typing.send(clients, &session_id, input).await.map_err(refused)?;
                }
                if detach_at.is_some() {
                    break Ending::Detached;
                }
            },
            _ = window_changes.recv() => resize_to_terminal(clients, &session_id).await,
            _ = terminate.recv() => break Ending::Detached,
            _ = hangup.recv() => break Ending::Detached,
        }
    };
    drop(raw);
    Ok(match ending {
        Ending::Exited(exited) => {
            match (exited.exit_code, exited.signal) {
                (Some(code), _) => eprintln!("\r\n[holdfast: session exited with code {code}]"),
                (None, Some(signal)) => {
                    eprintln!("\r\n[holdfast: session ended by signal {signal}]")
                }
                (None, None) => eprintln!("\r\n[holdfast: session ended]"),
            }
            exit_status(exited.exit_code, exited.signal)
        }
        Ending::Detached => {
            eprintln!("\r\n[holdfast: detached from {session_id}; it keeps running]");
            0
        }
        Ending::StreamEnded => {
            eprintln!(
                "\r\n[holdfast: the host-service closed the stream; session {session_id} may still be running]"
            );
            1
        }
    })
}

/// An open `SendInput` stream.
type KeyStream = AnsweredStream<pb::SendInputRequest, pb::SendInputResponse>;

/// Where keystrokes go: one `SendInput` stream, opened at the first, or
/// a `WriteInput` each to a host-service that has no `SendInput` (an
/// earlier version, still running).
enum Typing {
    NotYet,
    Stream(Box<KeyStream>),
    Requests,
}

impl Typing {
    /// Sends keys, answering once they reached the session's terminal.
    async fn send(
        &mut self,
        clients: &mut Clients,
        session_id: &str,
        keys: &[u8],
    ) -> Result<(), tonic::Status> {
        let data = prost::bytes::Bytes::copy_from_slice(keys);
        loop {
            match self {
                // The stream's first write named the session.
                Self::Stream(stream) => {
                    let write = pb::SendInputRequest {
                        session_id: String::new(),
                        data,
                    };
                    return stream.send(write).await;
                }
                Self::Requests => {
                    let write = pb::WriteInputRequest {
                        session_id: session_id.to_owned(),
                        data,
                    };
                    return clients.terminals.write_input(write).await.map(drop);
                }
                Self::NotYet => {
                    let first = pb::SendInputRequest {
                        session_id: session_id.to_owned(),
                        data: data.clone(),
                    };
                    let (writes, requests) = answered_stream::requests(first);
                    match clients.terminals.send_input(requests).await {
                        Ok(answers) => {
                            let stream = KeyStream::opened(writes, answers.into_inner()).await?;
                            *self = Self::Stream(Box::new(stream));
                            return Ok(());
                        }
                        // Refused before reading anything: these keys go
                        // as a request, and so will the next ones.
                        Err(status) if status.code() == tonic::Code::Unimplemented => {
                            *self = Self::Requests;
                        }
                        Err(status) => return Err(status),
                    }
                }
            }
        }
    }
}

/// This terminal's size as (cols, rows), when it has one.
fn terminal_size() -> Option<(u32, u32)> {
    let size = rustix::termios::tcgetwinsize(std::io::stdout()).ok()?;
    (size.ws_col != 0 && size.ws_row != 0).then(|| (size.ws_col.into(), size.ws_row.into()))
}

/// Gives the session this terminal's size.
async fn resize_to_terminal(clients: &mut Clients, session_id: &str) {
    let Some((cols, rows)) = terminal_size() else {
        return;
    };
    let _ = clients
        .terminals
        .resize_session(pb::ResizeSessionRequest {
            session_id: session_id.to_owned(),
            cols,
            rows,
        })
        .await;
}

/// The CLI's exit status for a session's ending, as a shell gives for a
/// command: its code, or 128 plus the signal that ended it.
fn exit_status(code: Option<i32>, signal: Option<i32>) -> u8 {
    match (code, signal) {
        (Some(code), _) => u8::try_from(code).unwrap_or(1),
        (None, Some(signal)) => u8::try_from(128 + signal).unwrap_or(1),
        (None, None) => 1,
    }
}
