//! `holdfast logs`: a session's output, as its program wrote it, without
//! attaching to it.
//!
//! It prints what the session has written so far (`AttachSession` with
//! `until_now`). With `--follow` it also prints what the session writes
//! next, to its exit, as `tail -f` does. Nothing is sent to the session,
//! and it is not resized. A look does not count it as attached.
//! `holdfast wait` follows a session the same way, as an onlooker
//! (`watch`), to tell how it ended.

use std::io::{ErrorKind, IsTerminal, StdoutLock, Write};
use std::time::{Duration, Instant};

use futures_util::{Stream, StreamExt};
use holdfast_api::proto::host::v1 as pb;
use pb::attach_session_response::Event;

use crate::attach::{REATTACH_PATIENCE, REATTACH_PAUSE_MAX, exit_status, is_verdict};
use crate::clients::{Clients, refused};
use crate::plain_text::PlainText;
use crate::stale_queries::History;
use crate::stdout::{say, tell};

/// What `logs` does with a session's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Print what it has written so far.
    SoFar,
    /// Print it and what it writes next, to its exit.
    Follow,
    /// Print nothing but how it ended, once it has.
    Wait,
}

/// Writes the session's output to stdout as `reading` says.
///
/// Following, it goes on from the last byte written across a host-service
/// restart. It returns the exit status for the process. That is 0, or for
/// `Wait` the session's own: its code, or 128 plus the signal that ended
/// it.
///
/// To a terminal, unless `raw`, only the text is printed: escape sequences
/// would change the terminal (switch it to the alternate screen, hide its
/// cursor) and its queries would be answered as typed keys. The output so
/// far of a full-screen program, which draws with the cursor rather than
/// in lines, is its screen, as text.
pub async fn logs(
    clients: &mut Clients,
    session_id: String,
    reading: Reading,
    raw: bool,
) -> anyhow::Result<u8> {
    let follow = reading != Reading::SoFar;
    let stdout = std::io::stdout();
    let as_text = stdout.is_terminal() && !raw;
    if as_text && reading == Reading::SoFar && print_full_screen(clients, &session_id).await? {
        return Ok(0);
    }
    let mut out = Copy {
        // Raw to a terminal, the queries are still left out: nothing but
        // this shell is there to take the answers, as typed keys.
        queries: (stdout.is_terminal() && raw).then(History::all),
        text: as_text.then(PlainText::new),
        stdout: stdout.lock(),
        written_to: None,
        print: reading != Reading::Wait,
    };
    // When the host-service went away, while it is away.
    let mut missed_since: Option<Instant> = None;
    let mut pause = Duration::from_millis(50);
    loop {
        let request = pb::AttachSessionRequest {
            session_id: session_id.clone(),
            from_offset: out.resume_from(),
            until_now: !follow,
            // Waiting is no reason to hold the program up, or to count it
            // as attached. Following to print it all is (nothing lost).
            watch: reading == Reading::Wait,
            ..Default::default()
        };
        if let Some(queries) = &mut out.queries {
            // What it held back comes again, from its first byte.
            queries.gap();
        }
        let failure = match clients.terminals.attach_session(request).await {
            Ok(events) => {
                if !follow
                    && events
                        .metadata()
                        .get(holdfast_api::proto::LOOK_METADATA)
                        .is_none()
                {
                    anyhow::bail!(
                        "this host-service is older than this holdfast and would follow the session \
                         instead of printing what it wrote so far: restart it, or use `holdfast logs -f`"
                    );
                }
                match out.events(events.into_inner(), follow).await? {
                    (Copied::Ended(exited), _) => {
                        return Ok(match (reading, exited) {
                            (Reading::Wait, Some(exited)) => ended(&exited),
                            _ => 0,
                        });
                    }
                    (Copied::Failed(status), received) => {
                        // Back, as far as a first event tells.
                        if received {
                            missed_since = None;
                            pause = Duration::from_millis(50);
                        }
                        status
                    }
                }
            }
            Err(status) => status,
        };
        if is_verdict(&failure) || !follow {
            return Err(refused(failure).context(format!("reading session {session_id}")));
        }
        // The host-service went away (an update, a crash). The session
        // runs on under the daemon. Follow it again once it is back.
        tracing::debug!(status = %failure, "following again");
        let since = *missed_since.get_or_insert_with(Instant::now);
        if since.elapsed() >= REATTACH_PATIENCE {
            anyhow::bail!(
                "the host-service did not come back within {} s ({}); session {session_id} may still be running",
                REATTACH_PATIENCE.as_secs(),
                failure.message()
            );
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(REATTACH_PAUSE_MAX);
    }
}

/// How long `new` watches a program it started for a failure at once
/// (a port in use, a typo in a flag).
const AT_ONCE: Duration = Duration::from_millis(300);

/// Says so if the session's program failed within its first moments,
/// with the last lines it wrote, and returns the exit status for `new`:
/// the program's, if it failed; 0 if it runs, or ended well.
pub async fn failed_at_once(clients: &mut Clients, session_id: &str) -> anyhow::Result<u8> {
    let until = Instant::now() + AT_ONCE;
    let session = loop {
        let session = clients
            .terminals
            .get_session(pb::GetSessionRequest {
                session_id: session_id.to_owned(),
            })
            .await
            .map_err(refused)?
            .into_inner()
            .session;
        match session {
            Some(session) if !session.alive => break session,
            _ if Instant::now() >= until => return Ok(0),
            _ => tokio::time::sleep(Duration::from_millis(25)).await,
        }
    };
    if session.exit_code == Some(0) {
        return Ok(0);
    }
    let request = pb::AttachSessionRequest {
        session_id: session_id.to_owned(),
        until_now: true,
        ..Default::default()
    };
    let mut output = Vec::new();
    if let Ok(events) = clients.terminals.attach_session(request).await {
        let mut events = events.into_inner();
        while let Ok(Some(event)) = events.message().await {
            if let Some(Event::Output(chunk)) = event.event {
                output.extend_from_slice(&chunk.data);
            }
        }
    }
    let text = String::from_utf8_lossy(&PlainText::new().text(&output)).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    tell!(
        "holdfast: session {session_id} ended at once: {}; its last output:\n",
        crate::shown::ending(session.exit_code, session.signal)
    );
    for line in &lines[lines.len().saturating_sub(10)..] {
        tell!("  {line}\n");
    }
    Ok(exit_status(session.exit_code, session.signal).max(1))
}

/// Prints the screen of a session in the alternate screen (a full-screen
/// program), as text; returns whether it was one.
async fn print_full_screen(clients: &mut Clients, session_id: &str) -> anyhow::Result<bool> {
    let screen = clients
        .terminals
        .get_screen(pb::GetScreenRequest {
            session_id: session_id.to_owned(),
            ..Default::default()
        })
        .await;
    // An ended session the daemon forgot has no screen: its output is
    // printed, as for any other.
    let Ok(screen) = screen.map(tonic::Response::into_inner) else {
        return Ok(false);
    };
    if !screen.alternate_screen {
        return Ok(false);
    }
    let used = screen.lines.iter().rposition(|line| !line.is_empty());
    for line in &screen.lines[..used.map_or(0, |last| last + 1)] {
        say!("{line}");
    }
    Ok(true)
}

/// Says how the session ended, as `docker wait` does, and returns the
/// exit status that tells it.
fn ended(exited: &pb::Exited) -> u8 {
    say!("{}", crate::shown::ending(exited.exit_code, exited.signal));
    exit_status(exited.exit_code, exited.signal)
}

/// Output written to stdout so far.
struct Copy {
    stdout: StdoutLock<'static>,
    /// Takes the terminal queries out of the output, printed raw to a
    /// terminal.
    queries: Option<History>,
    /// Keeps only the text, printed to a terminal.
    text: Option<PlainText>,
    /// Where it ends, to go on from there.
    written_to: Option<u64>,
    /// Whether the output is written, or only followed.
    print: bool,
}

/// How copying one stream ended.
enum Copied {
    /// All there was to write is written.
    ///
    /// The session exited (how, if the stream said), or the look is over.
    Ended(Option<pb::Exited>),
    /// The stream failed (or, followed, ended without the exit).
    Failed(tonic::Status),
}

impl Copy {
    /// Writes the output of `events` until they end.
    ///
    /// It says how they ended, and whether any event came.
    async fn events(
        &mut self,
        events: impl Stream<Item = Result<pb::AttachSessionResponse, tonic::Status>>,
        follow: bool,
    ) -> anyhow::Result<(Copied, bool)> {
        tokio::pin!(events);
        // Whether any event came.
        let mut received = false;
        let copied = loop {
            let event = match events.next().await {
                Some(Ok(message)) => {
                    received = true;
                    message.event
                }
                Some(Err(status)) => break Copied::Failed(status),
                None if follow => {
                    break Copied::Failed(tonic::Status::unavailable(
                        "the host-service ended the stream",
                    ));
                }
                None => break Copied::Ended(None),
            };
            match event {
                Some(Event::Output(output)) => {
                    self.written_to = Some(output.offset + output.data.len() as u64);
                    if self.print {
                        let shown = match (&mut self.text, &mut self.queries) {
                            (Some(text), _) => std::borrow::Cow::Owned(text.text(&output.data)),
                            (None, Some(queries)) => queries.shown(output.offset, &output.data),
                            (None, None) => std::borrow::Cow::Borrowed(&output.data[..]),
                        };
                        self.write(&shown)?;
                    }
                }
                Some(Event::Truncated(gap)) if !self.print => self.written_to = Some(gap.to_offset),
                Some(Event::Truncated(gap)) => {
                    self.written_to = Some(gap.to_offset);
                    if let Some(queries) = &mut self.queries {
                        queries.gap();
                    }
                    self.flush()?;
                    tell!(
                        "[holdfast: {} bytes of earlier output are no longer held]\n",
                        gap.to_offset - gap.from_offset
                    );
                }
                Some(Event::Exited(exited)) => break Copied::Ended(Some(exited)),
                Some(Event::Title(_) | Event::Screen(_)) | None => {}
            }
        };
        if let (Copied::Ended(_), Some(queries)) = (&copied, &mut self.queries) {
            // Nothing more comes. A sequence left open is printed as it is.
            let rest = queries.finish();
            self.write(&rest)?;
        }
        self.flush()?;
        Ok((copied, received))
    }

    /// Where to go on from.
    ///
    /// It is after the last byte written. If a sequence is held back
    /// unfinished, it is that sequence's first byte.
    fn resume_from(&self) -> Option<u64> {
        let held = self.queries.as_ref().map_or(0, History::held_back);
        self.written_to.map(|to| to - held)
    }

    fn write(&mut self, data: &[u8]) -> anyhow::Result<()> {
        quiet_on_closed(self.stdout.write_all(data))
    }

    fn flush(&mut self) -> anyhow::Result<()> {
        quiet_on_closed(self.stdout.flush())
    }
}

/// Stops, successfully, once nobody reads the output (`holdfast logs ID |
/// head`), as `say!` does.
fn quiet_on_closed(written: std::io::Result<()>) -> anyhow::Result<()> {
    match written {
        Err(error) if error.kind() == ErrorKind::BrokenPipe => std::process::exit(0),
        written => Ok(written?),
    }
}
