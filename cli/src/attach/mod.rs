//! `holdfast attach`: a terminal client like `tmux attach`.
//!
//! The terminal goes into raw mode. The session's screen is drawn first
//! (or, with `--replay`, its scrollback replayed), then live output.
//! Keystrokes go to the session (`keyboard.rs`, `typing.rs`). The window size follows
//! SIGWINCH. Ctrl-] detaches and leaves the session running. The terminal
//! is restored on every way out.
//!
//! The host-service may go away under it, in an update or a crash. The
//! session runs on under the daemon meanwhile. Once the host-service is
//! back, this attaches again from where the output stopped.

use std::io::{IsTerminal, Write};
use std::pin::Pin;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures_util::{Stream, StreamExt};
use holdfast_api::proto::host::v1 as pb;
use rustix::termios::{OptionalActions, Termios};
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::clients::{Clients, refused};
use crate::stale_queries::History;
use crate::stdout::tell;
use crate::terminal_modes::TerminalModes;

mod keyboard;
mod typing;

use keyboard::{InputEnd, InputRules, Keyboard, Keys};
use typing::{HeldKeys, Typing};

/// The key that detaches, if any: Ctrl-] unless told (as in telnet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DetachKey(Option<u8>);

impl DetachKey {
    /// Parses `^X` (a control key: `^` and a letter or one of `@\]^_`; not `^[`, which is ESC)
    /// or `none`.
    pub fn parse(text: &str) -> Result<Self, String> {
        // `HOLDFAST_DETACH_KEY=` set empty counts as unset. It gives the
        // default, not an error in every command.
        if text.is_empty() {
            return Ok(Self(Some(0x1d)));
        }
        if text.eq_ignore_ascii_case("none") {
            return Ok(Self(None));
        }
        match text.as_bytes() {
            // Not ^[: that is ESC, which begins every arrow key.
            [b'^', key] if key.is_ascii_alphabetic() || b"@\\]^_".contains(key) => {
                Ok(Self(Some(key.to_ascii_uppercase() & 0x1f)))
            }
            _ => Err(format!(
                "{text:?} is no detach key: write it as ^ and a letter or one of @\\]^_ (e.g. ^]), or none"
            )),
        }
    }
}

/// How long a lost attachment is tried again before giving up.
///
/// It is well over what a host-service takes to start again after an
/// update or a crash.
pub const REATTACH_PATIENCE: Duration = Duration::from_secs(30);

/// The longest pause between two tries.
pub const REATTACH_PAUSE_MAX: Duration = Duration::from_secs(1);

/// A session's events, from whichever call opened them.
type Events = Pin<Box<dyn Stream<Item = Result<pb::AttachSessionResponse, tonic::Status>> + Send>>;

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

/// This terminal while a session is shown on it.
///
/// On every way out (return, error or panic), the modes the session's
/// program switched on are switched off. Then raw mode is left.
struct Screen {
    raw: Option<RawMode>,
    modes: TerminalModes,
}

impl Screen {
    fn new(raw: Option<RawMode>) -> Self {
        Self {
            raw,
            modes: TerminalModes::new(),
        }
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let mut stdout = std::io::stdout();
        if stdout.is_terminal() {
            let _ = stdout.write_all(self.modes.reset().as_bytes());
            let _ = stdout.flush();
        }
        drop(self.raw.take());
    }
}

/// How an attachment ended.
enum Ending {
    Exited(pb::Exited),
    Detached,
    /// The host-service did not come back in time, or refused to attach
    /// again (the session disposed meanwhile, say).
    Lost(tonic::Status),
}

/// How `holdfast attach` shows a session.
#[derive(Debug, Clone, Copy, Default)]
pub struct AttachMode {
    /// Replay the output held instead of drawing the screen first.
    pub replay: bool,
    /// Only look: keys (but the detach key) go nowhere, and this
    /// terminal's size is never the session's.
    pub read_only: bool,
}

/// Attaches to `session_id` until it exits or the user detaches.
///
/// On a terminal the session's screen is drawn first, then its output
/// from there on, as tmux re-attaches: a full-screen program comes back
/// whole, and the terminal's scrollback gets one screen, not the whole
/// history again. `mode.replay` replays the output held instead. It
/// returns the exit status for the process.
pub async fn attach(
    clients: &mut Clients,
    session_id: String,
    detach_key: DetachKey,
    mode: AttachMode,
) -> anyhow::Result<u8> {
    let window_changes = signal(SignalKind::window_change()).context("watching SIGWINCH")?;
    let start = if mode.replay || !std::io::stdout().is_terminal() {
        pb::AttachStart::Replay
    } else {
        pb::AttachStart::Screen
    };
    let answer = clients
        .terminals
        .attach_session(pb::AttachSessionRequest {
            session_id: session_id.clone(),
            from_offset: None,
            start: start.into(),
            read_only: mode.read_only,
            ..Default::default()
        })
        .await
        .map_err(refused)?;
    let attachment = attachment_of(&answer);
    let history = History::of(&answer);
    let stream = answer.into_inner();
    let raw = RawMode::enter()?;
    if raw.is_some() && !mode.read_only {
        // A replay may begin mid-screen, and a screen drawn at the
        // session's size may not be this terminal's. A full-screen program
        // draws its screen again after it, as under tmux attach.
        resize_to_terminal(clients, &session_id, &attachment, true).await;
    }
    relay(
        clients,
        session_id,
        (attachment, history),
        raw,
        InputRules {
            detach_key,
            end: InputEnd::Kept,
            read_only: mode.read_only,
        },
        window_changes,
        stream,
    )
    .await
}

/// The token an attach stream's answer names it by, for its resizes and
/// keys (their requests' `attachment`).
fn attachment_of<T>(answer: &tonic::Response<T>) -> String {
    holdfast_api::proto::attachment_token(answer.metadata())
}

/// Starts a session sized to this terminal and attaches to it, in one call
/// (`StartSession`), as `tmux new-session` does.
pub async fn start(
    clients: &mut Clients,
    mut request: pb::CreateSessionRequest,
    detach_key: DetachKey,
) -> anyhow::Result<u8> {
    use pb::start_session_response::Event;
    // Before the size is read, so no change of it goes unseen.
    let window_changes = signal(SignalKind::window_change()).context("watching SIGWINCH")?;
    if let Some((cols, rows)) = terminal_size() {
        (request.cols, request.rows) = (cols, rows);
    }
    let answer = clients
        .terminals
        .start_session(pb::StartSessionRequest {
            create: Some(request),
        })
        .await
        .map_err(refused)?;
    let attachment = attachment_of(&answer);
    let history = History::of(&answer);
    let mut stream = answer.into_inner();
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
        relay(
            clients,
            session_id.clone(),
            (attachment, history),
            raw,
            InputRules {
                detach_key,
                end: InputEnd::Passed,
                read_only: false,
            },
            window_changes,
            events,
        )
        .await
    };
    // It runs on whatever went wrong here, so say which one it is.
    shown.await.with_context(|| {
        format!("session {session_id} keeps running; `holdfast attach {session_id}` shows it")
    })
}

/// Shows `events` on this terminal and sends it keystrokes.
///
/// It goes on until the session exits or the user detaches. `opened` is
/// what the stream's answer said: its attachment's token, and where its
/// history ends.
async fn relay(
    clients: &mut Clients,
    session_id: String,
    opened: (String, History),
    raw: Option<RawMode>,
    input: InputRules,
    mut window_changes: Signal,
    events: impl Stream<Item = Result<pb::AttachSessionResponse, tonic::Status>> + Send + 'static,
) -> anyhow::Result<u8> {
    // Input that is not a terminal is data, sent whole. A byte that
    // happens to be the detach key is no key.
    let (detach_key, input_end) = if raw.is_some() {
        (input.detach_key, InputEnd::Kept)
    } else {
        (DetachKey(None), input.end)
    };
    let (mut attachment, mut history) = opened;
    let mut screen = Screen::new(raw);
    let mut stream: Events = Box::pin(events);
    let mut ends = Ends::watch()?;
    let mut keyboard = Keyboard::new(detach_key, input_end, input.read_only);
    let mut stdout = std::io::stdout();
    let mut typing = Typing::new(attachment.clone());
    let mut held = HeldKeys::default();
    // Where the output shown so far ends, to attach again from there.
    let mut shown_to: Option<u64> = None;
    // Input that is not a terminal, kept from the session's own end (an
    // attach, not `new`): once it has ended and been sent, the output it
    // caused is shown until the session goes quiet, then this detaches,
    // as a script's `holdfast attach ID < commands` expects.
    let ends_when_quiet = raw_input_ends(&screen, input_end);
    let mut quiet_from = tokio::time::Instant::now();
    let ending = loop {
        let input_done = ends_when_quiet && !keyboard.open && !held.refused();
        tokio::select! {
            () = tokio::time::sleep_until(quiet_from + QUIET), if input_done => {
                break Ending::Detached;
            }
            message = stream.next() => {
                let lost = match message {
                    Some(Ok(message)) => match message.event {
                        Some(pb::attach_session_response::Event::Output(output)) => {
                            let data = if shown_to.is_none() && output.offset > 0 {
                                // The scrollback lost its oldest bytes.
                                clean_start(&output.data)
                            } else {
                                &output.data[..]
                            };
                            shown_to = Some(output.offset + output.data.len() as u64);
                            quiet_from = tokio::time::Instant::now();
                            let skipped = (output.data.len() - data.len()) as u64;
                            let data = history.shown(output.offset + skipped, data);
                            let data = &data[..];
                            screen.modes.follow(data);
                            stdout.write_all(data)?;
                            stdout.flush()?;
                            continue;
                        }
                        Some(pb::attach_session_response::Event::Truncated(gap)) => {
                            shown_to = Some(gap.to_offset);
                            history.gap();
                            write!(stdout, "\r\n[holdfast: {} bytes of earlier output are no longer held]\r\n", gap.to_offset - gap.from_offset)?;
                            continue;
                        }
                        Some(pb::attach_session_response::Event::Screen(drawn)) => {
                            // Drawn as it is; output goes on from its end.
                            shown_to = Some(drawn.output_offset);
                            screen.modes.follow(&drawn.rendering);
                            stdout.write_all(&drawn.rendering)?;
                            stdout.flush()?;
                            continue;
                        }
                        Some(pb::attach_session_response::Event::Exited(exited)) => break Ending::Exited(exited),
                        Some(pb::attach_session_response::Event::Title(_)) | None => continue,
                    },
                    Some(Err(status)) if is_verdict(&status) => {
                        drop(screen);
                        return Err(refused(status).context("the attach stream failed"));
                    }
                    Some(Err(status)) => status.message().to_owned(),
                    None => "the host-service ended the stream".to_owned(),
                };
                // The host-service went away (an update, a crash). The
                // session runs on under the daemon.
                tracing::debug!(%lost, "attaching again");
                tell!(
                    "\r\n[holdfast: lost the host-service ({lost}); attaching again for up to {} s; \
                     keys typed meanwhile are held and sent once it is back]\r\n",
                    REATTACH_PATIENCE.as_secs()
                );
                // From the first byte not shown. A sequence held back is
                // read again whole.
                let from = shown_to.map(|to| to - history.held_back());
                match reattach(clients, &session_id, from, &mut keyboard, &mut ends, input.read_only).await? {
                    Reattached::Events(events, token) => {
                        stream = events;
                        attachment = token;
                        // This terminal was here all along. What the
                        // program wrote meanwhile is live to it.
                        history = History::new(None);
                        typing = Typing::new(attachment.clone());
                        let typed = keyboard.typed.len();
                        tell!("[holdfast: attached again; {typed} bytes typed meanwhile are sent now]\r\n");
                        if !input.read_only {
                            // Drawn again over the notices.
                            resize_to_terminal(clients, &session_id, &attachment, true).await;
                        }
                        // Keys typed meanwhile, in order.
                        held.flush(&mut typing, clients, &session_id, &mut keyboard).await?;
                    }
                    Reattached::Detached => break Ending::Detached,
                    Reattached::GaveUp(why) => break Ending::Lost(why),
                }
            }
            read = keyboard.read(), if keyboard.takes_more() => {
                let read = read?;
                if !held.refused() {
                    held.flush(&mut typing, clients, &session_id, &mut keyboard).await?;
                }
                if read == Keys::Detach {
                    break Ending::Detached;
                }
                // Quiet is counted from the last key sent.
                quiet_from = tokio::time::Instant::now();
            }
            () = held.retry(), if held.refused() => {
                held.flush(&mut typing, clients, &session_id, &mut keyboard).await?;
            }
            _ = window_changes.recv(), if !input.read_only => {
                resize_to_terminal(clients, &session_id, &attachment, false).await;
            }
            () = ends.recv() => break Ending::Detached,
        }
    };
    drop(screen);
    Ok(match ending {
        Ending::Exited(exited) => {
            match (exited.exit_code, exited.signal) {
                (Some(code), _) => tell!("\r\n[holdfast: session exited with code {code}]\n"),
                (None, Some(signal)) => {
                    tell!("\r\n[holdfast: session ended by signal {signal}]\n")
                }
                (None, None) => tell!("\r\n[holdfast: session ended]\n"),
            }
            exit_status(exited.exit_code, exited.signal)
        }
        Ending::Detached => {
            tell!("\r\n[holdfast: detached from {session_id}; it keeps running]\n");
            0
        }
        Ending::Lost(status) if is_verdict(&status) => {
            tell!(
                "\r\n[holdfast: session {session_id} cannot be attached again: {}]\n",
                status.message()
            );
            1
        }
        Ending::Lost(status) => {
            tell!(
                "\r\n[holdfast: the host-service did not come back within {} s ({}); session {session_id} may still be running: `holdfast attach {session_id}`]\n",
                REATTACH_PATIENCE.as_secs(),
                status.message()
            );
            1
        }
    })
}

/// How long the output of an attach whose input ended must be quiet
/// before it detaches.
const QUIET: Duration = Duration::from_millis(500);

/// Whether an attach ends once its input has (input that is not a
/// terminal, of an existing session: `new`'s ends with the session).
fn raw_input_ends(screen: &Screen, input_end: InputEnd) -> bool {
    screen.raw.is_none() && input_end == InputEnd::Kept
}

/// Whether a failed call is the host-service's answer to it (the session
/// is gone, the request is wrong), not the host-service going away.
pub fn is_verdict(status: &tonic::Status) -> bool {
    use tonic::Code;
    matches!(
        status.code(),
        Code::InvalidArgument
            | Code::NotFound
            | Code::AlreadyExists
            | Code::PermissionDenied
            | Code::ResourceExhausted
            | Code::FailedPrecondition
            | Code::OutOfRange
            | Code::Unimplemented
            | Code::Unauthenticated
    )
}

/// How attaching again ended.
enum Reattached {
    /// The stream, and its attachment's token.
    Events(Events, String),
    Detached,
    GaveUp(tonic::Status),
}

/// Attaches again from `from_offset`.
///
/// If nothing was shown, it attaches from the whole scrollback. It tries
/// while the host-service does not answer, for up to [`REATTACH_PATIENCE`].
/// Keys typed meanwhile are kept, to be sent once attached. The detach key
/// and the signals that end an attachment end this too.
async fn reattach(
    clients: &mut Clients,
    session_id: &str,
    from_offset: Option<u64>,
    keyboard: &mut Keyboard,
    ends: &mut Ends,
    read_only: bool,
) -> anyhow::Result<Reattached> {
    let give_up = Instant::now() + REATTACH_PATIENCE;
    let mut pause = Duration::from_millis(50);
    loop {
        let request = pb::AttachSessionRequest {
            session_id: session_id.to_owned(),
            from_offset,
            read_only,
            ..Default::default()
        };
        let mut terminals = clients.terminals.clone();
        let Some(answer) = keeping_keys(terminals.attach_session(request), keyboard, ends).await?
        else {
            return Ok(Reattached::Detached);
        };
        match answer {
            Ok(events) => {
                let attachment = attachment_of(&events);
                return Ok(Reattached::Events(
                    Box::pin(events.into_inner()),
                    attachment,
                ));
            }
            Err(status) if !is_verdict(&status) && Instant::now() < give_up => {}
            Err(status) => return Ok(Reattached::GaveUp(status)),
        }
        if keeping_keys(tokio::time::sleep(pause), keyboard, ends)
            .await?
            .is_none()
        {
            return Ok(Reattached::Detached);
        }
        pause = (pause * 2).min(REATTACH_PAUSE_MAX);
    }
}

/// Waits for `waited`, holding the keys typed meanwhile.
///
/// It gives `None` when the detach key or a signal that ends the attachment
/// came first.
async fn keeping_keys<T>(
    waited: impl Future<Output = T>,
    keyboard: &mut Keyboard,
    ends: &mut Ends,
) -> anyhow::Result<Option<T>> {
    tokio::pin!(waited);
    loop {
        tokio::select! {
            done = &mut waited => return Ok(Some(done)),
            read = keyboard.read(), if keyboard.takes_more() => {
                if read? == Keys::Detach {
                    return Ok(None);
                }
            }
            () = ends.recv() => return Ok(None),
        }
    }
}

/// The signals that end an attachment, leaving the session running.
///
/// They are SIGTERM, SIGHUP (the terminal closed), and SIGINT and SIGQUIT
/// from outside. Raw mode keeps Ctrl-C and Ctrl-\ for the session. They
/// are handled, so the terminal is restored. Left to their default, they
/// would kill the command in raw mode.
struct Ends {
    terminate: Signal,
    hangup: Signal,
    interrupt: Signal,
    quit: Signal,
}

impl Ends {
    fn watch() -> anyhow::Result<Self> {
        Ok(Self {
            terminate: signal(SignalKind::terminate()).context("watching SIGTERM")?,
            hangup: signal(SignalKind::hangup()).context("watching SIGHUP")?,
            interrupt: signal(SignalKind::interrupt()).context("watching SIGINT")?,
            quit: signal(SignalKind::quit()).context("watching SIGQUIT")?,
        })
    }

    async fn recv(&mut self) {
        tokio::select! {
            _ = self.terminate.recv() => {}
            _ = self.hangup.recv() => {}
            _ = self.interrupt.recv() => {}
            _ = self.quit.recv() => {}
        }
    }
}

/// This terminal's size as (cols, rows), when it has one.
fn terminal_size() -> Option<(u32, u32)> {
    let size = rustix::termios::tcgetwinsize(std::io::stdout()).ok()?;
    (size.ws_col != 0 && size.ws_row != 0).then(|| (size.ws_col.into(), size.ws_row.into()))
}

/// Sizes the session to this terminal, as this `attachment`'s client.
///
/// So the session goes back to another client's size when this one
/// detaches. With `redraw`, its program is told even if the size is the
/// same (see `ResizeSessionRequest.redraw`).
async fn resize_to_terminal(
    clients: &mut Clients,
    session_id: &str,
    attachment: &str,
    redraw: bool,
) {
    let Some((cols, rows)) = terminal_size() else {
        return;
    };
    let _ = clients
        .terminals
        .resize_session(pb::ResizeSessionRequest {
            session_id: session_id.to_owned(),
            cols,
            rows,
            redraw,
            attachment: attachment.to_owned(),
        })
        .await;
}

/// `replay` from its first clean start.
///
/// Scrollback that has lost its oldest bytes may begin inside an escape
/// sequence or a character. That would show as stray text or, worse, be
/// taken as the rest of a sequence. So it is shown from the first line's
/// end or the first escape, if either comes soon (a line or a screen
/// update). Otherwise it is shown as it is.
fn clean_start(replay: &[u8]) -> &[u8] {
    const LOOK: usize = 4096;
    let soon = &replay[..replay.len().min(LOOK)];
    match soon.iter().position(|&byte| byte == b'\n' || byte == 0x1b) {
        Some(at) if soon[at] == b'\n' => &replay[at + 1..],
        Some(at) => &replay[at..],
        None => replay,
    }
}

/// The CLI's exit status for a session's ending, as a shell gives for a
/// command.
///
/// It is the session's code, or 128 plus the signal that ended it.
pub fn exit_status(code: Option<i32>, signal: Option<i32>) -> u8 {
    match (code, signal) {
        (Some(code), _) => u8::try_from(code).unwrap_or(1),
        (None, Some(signal)) => signal
            .checked_add(128)
            .and_then(|status| u8::try_from(status).ok())
            .unwrap_or(1),
        (None, None) => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::{DetachKey, clean_start};

    /// Held keys never outgrow one write, which the host-service would
    /// refuse as invalid.
    ///
    /// A read is taken only while a whole one fits. Otherwise they could
    /// reach 1 MiB and most of a read more.
    #[tokio::test]
    async fn keys_held_fit_one_write() {
        let mut keyboard = super::Keyboard::new(DetachKey(None), super::InputEnd::Kept, false);
        let read = keyboard.buffer.len();
        keyboard.typed = vec![b'x'; super::keyboard::MAX_HELD_KEYS - read];
        assert!(keyboard.takes_more());
        keyboard.typed.push(b'x');
        assert!(!keyboard.takes_more(), "a read could take it past 1 MiB");
    }

    #[test]
    fn only_input_the_program_has_not_read_is_held_for_again() {
        use holdfast_api::error_details::{Reason, Refusal};
        use tonic::{Code, Status};

        let refusal = |reason| Status::from(Refusal::new(Code::ResourceExhausted, reason, "x"));
        assert!(super::typing::is_input_full(&refusal(Reason::InputFull)));
        assert!(super::typing::is_input_full(&Status::resource_exhausted(
            "older"
        )));
        assert!(super::typing::is_input_full(&refusal(
            Reason::DaemonRefused
        )));
        assert!(!super::typing::is_input_full(&refusal(
            Reason::RequestTooLarge
        )));
        assert!(!super::typing::is_input_full(&Status::failed_precondition(
            "x"
        )));
    }

    #[test]
    fn any_ending_the_server_reports_is_an_exit_status() {
        use super::exit_status;
        assert_eq!(exit_status(Some(7), None), 7);
        assert_eq!(exit_status(None, Some(15)), 143);
        assert_eq!(exit_status(None, Some(i32::MAX)), 1);
        assert_eq!(exit_status(Some(-1), None), 1);
        assert_eq!(exit_status(None, None), 1);
    }

    #[test]
    fn replays_that_lost_their_start_are_shown_from_a_clean_one() {
        assert_eq!(
            clean_start(b"0m partial\r\nwhole line\r\n"),
            b"whole line\r\n"
        );
        assert_eq!(clean_start(b"5;10H\x1b[2Jscreen"), b"\x1b[2Jscreen");
        assert_eq!(clean_start(b"\x80\x81 tail\x1b[m"), b"\x1b[m");
        assert_eq!(clean_start(b"no boundary at all"), b"no boundary at all");
        let far = [b"x".repeat(5000), b"\nrest".to_vec()].concat();
        assert_eq!(clean_start(&far), &far[..], "none soon: shown as it is");
    }

    #[test]
    fn detach_keys_are_control_keys_or_none() {
        assert_eq!(DetachKey::parse("^]"), Ok(DetachKey(Some(0x1d))));
        assert_eq!(DetachKey::parse("^q"), Ok(DetachKey(Some(0x11))));
        assert_eq!(DetachKey::parse("^@"), Ok(DetachKey(Some(0))));
        assert_eq!(DetachKey::parse("none"), Ok(DetachKey(None)));
        assert_eq!(DetachKey::parse(""), Ok(DetachKey(Some(0x1d))), "as unset");
        for bad in ["]", "^", "^1", "^]]", "ctrl-]", "^["] {
            assert!(DetachKey::parse(bad).is_err(), "{bad:?}");
        }
    }
}
