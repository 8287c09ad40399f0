//! A daemon session's attach events as the host's clients get them.
//!
//! An exit seen on the way is noted in memory, so lists show it at once.

use futures_util::{Stream, StreamExt};
use holdfast_api::proto::daemon::v1 as daemon;
use holdfast_api::proto::host::v1 as pb;
use tonic::Status;

use crate::sessions::held_sessions::HeldSessions;

/// `events` up to output offset `end`, of a session still running.
///
/// Output and truncation are cut there. The stream ends at once, without
/// waiting for what the program writes next.
pub fn output_until<S>(events: S, end: u64) -> impl Stream<Item = S::Item> + Send + use<S>
where
    S: Stream<Item = Result<daemon::AttachResponse, Status>> + Send + Unpin,
{
    use daemon::attach_response::Event as D;
    futures_util::stream::unfold(Some(events), move |events| async move {
        let mut events = events?;
        let mut event = events.next().await?;
        let mut reached = false;
        if let Ok(response) = &mut event {
            match &mut response.event {
                Some(D::Output(output)) => {
                    let left = end.saturating_sub(output.offset);
                    if left == 0 {
                        return None;
                    }
                    if left <= output.data.len() as u64 {
                        // At most the length, so it fits usize.
                        output.data.truncate(left as usize);
                        reached = true;
                    }
                }
                Some(D::Truncated(truncated)) if truncated.to_offset >= end => {
                    truncated.to_offset = end;
                    reached = true;
                }
                _ => {}
            }
        }
        Some((event, (!reached).then_some(events)))
    })
}

/// A daemon attach event as the host relays it; an exit is noted in
/// `memory`.
pub fn event_to_proto(
    memory: &HeldSessions,
    session_id: &str,
    event: daemon::AttachResponse,
) -> pb::AttachSessionResponse {
    use daemon::attach_response::Event as D;
    use pb::attach_session_response::Event as H;
    let event = event.event.map(|event| match event {
        D::Output(output) => H::Output(pb::Output {
            offset: output.offset,
            data: output.data,
        }),
        D::Truncated(truncated) => H::Truncated(pb::Truncated {
            from_offset: truncated.from_offset,
            to_offset: truncated.to_offset,
        }),
        D::Title(title) => H::Title(pb::TitleChanged { title: title.title }),
        D::Screen(screen) => H::Screen(screen_to_proto(screen)),
        D::Exited(exited) => {
            memory.mark_exited(session_id, exited.exit_code, exited.signal);
            H::Exited(pb::Exited {
                exit_code: exited.exit_code,
                signal: exited.signal,
            })
        }
    });
    pb::AttachSessionResponse { event }
}

/// The daemon's drawing of a session's screen, as the host's clients get it.
pub fn screen_to_proto(screen: daemon::GetScreenResponse) -> pb::GetScreenResponse {
    pb::GetScreenResponse {
        lines: screen.lines,
        cursor_row: screen.cursor_row,
        cursor_col: screen.cursor_col,
        cursor_visible: screen.cursor_visible,
        title: screen.title,
        alternate_screen: screen.alternate_screen,
        cols: screen.cols,
        rows: screen.rows,
        output_offset: screen.output_offset,
        rendering: screen.rendering,
        complete: screen.complete,
        scrollback: screen.scrollback,
    }
}
