//! Attach streams that outlive a daemon upgrade.
//!
//! An upgrading daemon ends every attach stream with UNAVAILABLE, reason
//! `DAEMON_UPGRADING`, or, if that word did not get out before the exec,
//! its connection is cut. The host opens the stream again from the offset
//! after the last byte it relayed, so its client sees a pause, never a gap
//! or a byte twice. A stream cut because the daemon died cannot be opened
//! again (its sessions went with it) and ends with the first error.

use std::pin::Pin;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use holdfast_api::proto::daemon::v1 as daemon;
use tonic::Status;

/// A daemon session's events, as `Attach` streams them.
pub type DaemonEvents = Pin<Box<dyn Stream<Item = Result<daemon::AttachResponse, Status>> + Send>>;

/// How long the host tries to open a stream again after an upgrade ended
/// it: far longer than a switch takes.
const PATIENCE: Duration = Duration::from_secs(10);

/// How long the host tries to open a stream again after its connection
/// was cut without a word: enough for a switch whose goodbye did not get
/// out, short for a daemon that died (its client hears of it promptly).
const CUT_PATIENCE: Duration = Duration::from_secs(2);

/// Whether `status` ends a stream because the daemon upgrades.
pub fn is_upgrading(status: &Status) -> bool {
    holdfast_api::error_details::reason_of(status)
        .is_some_and(|(reason, _)| reason == "DAEMON_UPGRADING")
}

/// Whether `status` is the connection ending rather than the daemon's
/// word: every refusal of the daemon names its reason.
pub fn is_cut(status: &Status) -> bool {
    use tonic::Code;
    matches!(
        status.code(),
        Code::Unknown | Code::Unavailable | Code::Internal
    ) && holdfast_api::error_details::reason_of(status).is_none()
}

/// `events`, opened from `from`, continued by `reopen` (from an offset)
/// each time an upgrade ends them.
pub fn resuming<F, Fut>(events: DaemonEvents, from: Option<u64>, reopen: F) -> DaemonEvents
where
    F: Fn(Option<u64>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<DaemonEvents>> + Send,
{
    futures_util::stream::unfold(Some((events, from, reopen)), |state| async move {
        let (mut events, mut next, reopen) = state?;
        loop {
            match events.next().await? {
                Ok(event) => {
                    next = after(&event).or(next);
                    return Some((Ok(event), Some((events, next, reopen))));
                }
                Err(status) if is_upgrading(&status) || is_cut(&status) => {
                    let patience = if is_upgrading(&status) {
                        PATIENCE
                    } else {
                        CUT_PATIENCE
                    };
                    match reopen_within(&reopen, next, patience).await {
                        Some(reopened) => events = reopened,
                        None => return Some((Err(status), None)),
                    }
                }
                Err(status) => return Some((Err(status), None)),
            }
        }
    })
    .boxed()
}

/// The offset after `event`, if it moves the stream on.
fn after(event: &daemon::AttachResponse) -> Option<u64> {
    use daemon::attach_response::Event;
    match &event.event {
        Some(Event::Output(output)) => Some(output.offset + output.data.len() as u64),
        Some(Event::Truncated(truncated)) => Some(truncated.to_offset),
        Some(Event::Screen(screen)) => Some(screen.output_offset),
        _ => None,
    }
}

/// Tries `reopen` until it opens a stream or `patience` runs out.
async fn reopen_within<F, Fut>(
    reopen: &F,
    from: Option<u64>,
    patience: Duration,
) -> Option<DaemonEvents>
where
    F: Fn(Option<u64>) -> Fut,
    Fut: Future<Output = Option<DaemonEvents>>,
{
    let deadline = tokio::time::Instant::now() + patience;
    let mut pause = Duration::from_millis(5);
    loop {
        if let Some(events) = reopen(from).await {
            tracing::debug!(?from, "attached again after the daemon's upgrade");
            return Some(events);
        }
        if tokio::time::Instant::now() + pause > deadline {
            return None;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}
