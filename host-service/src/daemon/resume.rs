//! Attach streams that outlive a daemon upgrade.
//!
//! An upgrading daemon ends every attach stream with UNAVAILABLE, reason
//! `DAEMON_UPGRADING`. The host opens the stream again from the offset
//! after the last byte it relayed, so its client sees a pause, never a gap
//! or a byte twice.

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

/// Whether `status` ends a stream because the daemon upgrades.
pub fn is_upgrading(status: &Status) -> bool {
    holdfast_api::error_details::reason_of(status)
        .is_some_and(|(reason, _)| reason == "DAEMON_UPGRADING")
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
                Err(status) if is_upgrading(&status) => match reopen_within(&reopen, next).await {
                    Some(reopened) => events = reopened,
                    None => return Some((Err(status), None)),
                },
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
        _ => None,
    }
}

/// Tries `reopen` until it opens a stream or [`PATIENCE`] runs out.
async fn reopen_within<F, Fut>(reopen: &F, from: Option<u64>) -> Option<DaemonEvents>
where
    F: Fn(Option<u64>) -> Fut,
    Fut: Future<Output = Option<DaemonEvents>>,
{
    let deadline = tokio::time::Instant::now() + PATIENCE;
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
