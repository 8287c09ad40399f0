//! The host as the source of its watches' lists (`sessions/watch.rs`).

use holdfast_api::proto::host::v1 as pb;

use crate::daemon::supervisor::DaemonState;
use crate::error::Result;
use crate::host::Host;
use crate::sessions::live_sessions::Source;
use crate::sessions::session_view;
use crate::sessions::watch::{DaemonSeen, Lists, Observed};

impl Lists for Host {
    async fn observe(&self, workspace_id: &str) -> Result<Observed> {
        let live = self.live(workspace_id).await?;
        let me = self.fleet.me();
        let sessions = live
            .sessions()
            .iter()
            .map(|session| session_view::listed(session, me))
            .collect();
        let (source, degraded_reason) = match &live.source {
            Source::Complete => (pb::Source::Complete, String::new()),
            Source::MemoryOnly(reason) => (pb::Source::MemoryOnly, reason.clone()),
        };
        let daemon = match self.live.health.state() {
            DaemonState::Up {
                pid,
                version,
                upgrades,
            } => Some(DaemonSeen {
                pid,
                version,
                upgrades,
            }),
            _ => None,
        };
        Ok(Observed {
            sessions,
            source,
            degraded_reason,
            daemon,
        })
    }

    /// A disposal first (its program then ended by the signal sent), then
    /// an exit, as the daemon (fresher) or the row recorded it.
    async fn why_gone(&self, session_id: &str) -> pb::RemovedSession {
        let row = self.store.session(session_id).await.ok().flatten();
        let now = self.daemon_session(session_id).await.ok().flatten();
        let ended = now.as_ref().filter(|session| !session.alive);
        let (exit_code, signal) = match (ended, &row) {
            (Some(session), _) => (session.exit_code, session.signal),
            (None, Some(row)) => (row.exit_code, row.exit_signal),
            (None, None) => (None, None),
        };
        let reason = match &row {
            Some(row) if row.dispose_requested_at.is_some() => pb::Removal::Disposed,
            _ if ended.is_some() || exit_code.is_some() || signal.is_some() => pb::Removal::Exited,
            _ => pb::Removal::Unspecified,
        };
        pb::RemovedSession {
            session_id: session_id.to_owned(),
            reason: reason.into(),
            exit_code,
            signal,
        }
    }

    fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.memory.changes()
    }
}
