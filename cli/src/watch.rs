//! `holdfast ls --watch`: a workspace's list, kept up to date by the
//! host-service's `WatchSessions` stream instead of polling.
//!
//! At a terminal the table is redrawn in place at each change, as
//! `watch` does; piped, the table is printed again after each change
//! (with `--json`, one JSON list per line). When the stream breaks (the
//! host-service restarted), it is opened again from the last revision
//! seen, and the host-service resends the whole list if it must.

use std::io::IsTerminal;
use std::time::Duration;

use holdfast_api::proto::host::v1 as pb;
use pb::watch_sessions_response::Event;

use crate::clients::{Clients, refused};
use crate::shown;
use crate::stdout::{say, tell};

/// How long to wait before opening a broken stream again, at most.
const MOST_BACKOFF: Duration = Duration::from_secs(2);

/// Follows `workspace_id`'s list until interrupted.
pub async fn follow(clients: &mut Clients, workspace_id: String, json: bool) -> anyhow::Result<()> {
    let at_terminal = std::io::stdout().is_terminal() && !json;
    let mut list = pb::ListSessionsResponse::default();
    let mut since = None;
    let mut backoff = Duration::from_millis(100);
    let mut opened_once = false;
    loop {
        let request = pb::WatchSessionsRequest {
            workspace_id: workspace_id.clone(),
            since_revision: since,
        };
        let mut stream = match clients.terminals.watch_sessions(request).await {
            Ok(stream) => stream.into_inner(),
            // The first refusal (no such workspace, say) is the answer.
            Err(status) if !opened_once => return Err(refused(status)),
            Err(status) => {
                tell!(
                    "holdfast: watching again in {backoff:?}: {}\n",
                    status.message()
                );
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MOST_BACKOFF);
                continue;
            }
        };
        opened_once = true;
        loop {
            let message = match stream.message().await {
                Ok(Some(message)) => message,
                Ok(None) => break,
                Err(status) => {
                    tell!(
                        "holdfast: the watch broke ({}); opening it again\n",
                        status.message()
                    );
                    break;
                }
            };
            backoff = Duration::from_millis(100);
            since = Some(message.revision);
            apply(&mut list, message.event);
            show(&list, at_terminal, json)?;
        }
        tokio::time::sleep(backoff).await;
    }
}

/// Folds one event into `list`, as the proto's comments say a client does.
fn apply(list: &mut pb::ListSessionsResponse, event: Option<Event>) {
    match event {
        Some(Event::List(whole)) => {
            list.sessions = whole.sessions;
            list.source = whole.source;
            list.degraded_reason = whole.degraded_reason;
        }
        Some(Event::Added(session) | Event::Changed(session)) => {
            match list
                .sessions
                .iter_mut()
                .find(|s| s.session_id == session.session_id)
            {
                Some(held) => *held = session,
                None => list.sessions.push(session),
            }
        }
        Some(Event::Removed(removed)) => {
            list.sessions.retain(|s| s.session_id != removed.session_id);
        }
        Some(Event::Source(change)) => {
            list.source = change.source;
            list.degraded_reason = change.degraded_reason;
        }
        // The sessions a restart lost come as their own `removed`.
        Some(Event::Daemon(_)) | None => {}
    }
}

/// Shows `list`: redrawn in place at a terminal, else printed again.
fn show(list: &pb::ListSessionsResponse, at_terminal: bool, json: bool) -> anyhow::Result<()> {
    if json {
        say!("{}", serde_json::to_string(&shown::list_json(list))?);
        return Ok(());
    }
    if at_terminal {
        // Home, then clear to the end: the table is drawn over the last.
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(b"\x1b[H\x1b[J");
    } else {
        say!("");
    }
    shown::print_table(list, None, false);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(id: &str, name: &str) -> pb::Session {
        pb::Session {
            session_id: id.into(),
            name: name.into(),
            ..Default::default()
        }
    }

    /// Each kind of event folds into the list as the proto says.
    #[test]
    fn events_fold_into_the_list() {
        let mut list = pb::ListSessionsResponse::default();
        apply(
            &mut list,
            Some(Event::List(pb::WatchedList {
                sessions: vec![session("a", "one")],
                resync: true,
                ..Default::default()
            })),
        );
        apply(&mut list, Some(Event::Added(session("b", "two"))));
        apply(&mut list, Some(Event::Changed(session("a", "uno"))));
        apply(
            &mut list,
            Some(Event::Source(pb::SourceChange {
                source: pb::Source::MemoryOnly.into(),
                degraded_reason: "hung".into(),
            })),
        );
        apply(
            &mut list,
            Some(Event::Removed(pb::RemovedSession {
                session_id: "b".into(),
                ..Default::default()
            })),
        );
        assert_eq!(list.sessions, vec![session("a", "uno")]);
        assert_eq!(
            (list.source(), list.degraded_reason.as_str()),
            (pb::Source::MemoryOnly, "hung")
        );
    }
}
