//! Ending sessions: kills through the daemon, disposals, and closing a
//! workspace (on every host).

use std::time::{Duration, SystemTime};

use holdfast_api::proto::daemon::v1 as daemon;
use holdfast_api::proto::host::v1 as pb;

use crate::error::{Error, Result};
use crate::host::{Host, SPAWN_UNDER_WAY_PATIENCE, timestamp, workspace_to_proto};
use crate::store::{self, DEFAULT_DISPOSE_GRACE};
use crate::validate;

impl Host {
    /// Has the daemon kill a session, with its default signal and grace.
    ///
    /// Every caller has stamped the row first (or has none), so the reaper
    /// ends the session if this fails.
    pub(crate) async fn kill(&self, session_id: &str) -> Result<()> {
        self.kill_with(
            session_id,
            daemon::Signal::Unspecified,
            DEFAULT_DISPOSE_GRACE,
        )
        .await
    }

    /// [`Self::kill`] with `signal` first, and SIGKILL after `grace`.
    pub(crate) async fn kill_with(
        &self,
        session_id: &str,
        signal: daemon::Signal,
        grace: Duration,
    ) -> Result<()> {
        let mut client = self.daemon.clone();
        let kill = self.request(daemon::KillRequest {
            session_id: session_id.to_owned(),
            signal: signal.into(),
            grace_ms: Some(validate::grace_ms(grace)),
        });
        self.daemon_call("kill", client.kill(kill)).await.map(drop)
    }

    /// Ends a session that started but must never become visible.
    ///
    /// It runs on a task of its own, so the refusal its creator gets does
    /// not wait on the daemon. If this fails, the reaper ends it: its row
    /// is stamped or missing.
    pub(crate) fn end_unregistered(&self, session_id: &str) {
        let host = self.clone();
        let session_id = session_id.to_owned();
        self.background.spawn(async move {
            if let Err(error) = host.kill(&session_id).await {
                tracing::warn!(%session_id, %error, "killing a session that must not be listed failed; the reaper will retry");
            }
        });
    }

    /// Ends a session whose spawn got no answer.
    ///
    /// The daemon may still start it. The spawn may be under way (in no
    /// list, so not to be killed yet), or not even read (a daemon hung for
    /// a while). So a kill that finds no such session, or gets no answer,
    /// is tried again for a while rather than leaving the program to the
    /// reaper's next pass.
    pub(crate) async fn end_if_started(&self, session_id: &str) {
        let give_up = tokio::time::Instant::now() + SPAWN_UNDER_WAY_PATIENCE;
        let mut pause = Duration::from_millis(20);
        loop {
            let missed = match self.kill(session_id).await {
                Ok(()) => return,
                Err(Error::Daemon(status)) if status.code() == tonic::Code::NotFound => {
                    "no such session yet".to_owned()
                }
                Err(Error::DaemonUnavailable(reason) | Error::DaemonDown(reason)) => reason,
                Err(error) => {
                    tracing::warn!(%session_id, %error, "killing a session whose spawn got no answer failed; the reaper will retry");
                    return;
                }
            };
            if tokio::time::Instant::now() + pause >= give_up {
                tracing::debug!(%session_id, %missed, "a session whose spawn got no answer was not found to kill");
                return;
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }

    /// Closes a workspace (`CloseWorkspace`): stamps it and its sessions,
    /// forgets them, and has the daemon kill them.
    pub(crate) async fn close(
        &self,
        workspace_id: String,
        relayed: bool,
    ) -> Result<pb::CloseWorkspaceResponse> {
        let now = store::micros(SystemTime::now());
        let (workspace, stamped) = self
            .store
            .close_workspace(&workspace_id, now)
            .await
            .map_err(Error::from)?
            .ok_or_else(|| Error::WorkspaceNotFound(workspace_id.clone()))?;
        // This host's sessions of the workspace: those it stamped, and those
        // it holds, which another host's close stamped. Stamped rows are
        // never listed again. Killing them is the reaper's job if the
        // daemon cannot be reached now.
        let me = &self.fleet.me().id;
        let mut own: std::collections::BTreeSet<String> = stamped
            .iter()
            .filter(|(_, host)| host == me)
            .map(|(session_id, _)| session_id.clone())
            .collect();
        own.extend(
            self.memory
                .snapshot(&workspace_id)
                .into_iter()
                .map(|session| session.session_id),
        );
        for session_id in &own {
            self.memory.remove(session_id);
        }
        let kills = own.iter().map(|session_id| async move {
            if let Err(error) = self.kill(session_id).await {
                tracing::warn!(%session_id, %error, "kill on close failed; the reaper will retry");
            }
        });
        // The other hosts kill theirs, told here unless this is one of them
        // being told: a close is never relayed twice.
        let relay = async {
            if !relayed {
                let until = tokio::time::Instant::now() + self.operation_timeout;
                self.fleet.close_elsewhere(&workspace_id, until).await;
            }
        };
        tokio::join!(futures_util::future::join_all(kills), relay);
        tracing::info!(%workspace_id, stamped = stamped.len(), killed = own.len(), "workspace closed");
        Ok(pb::CloseWorkspaceResponse {
            stamped: u32::try_from(stamped.len()).unwrap_or(u32::MAX),
            workspace: Some(workspace_to_proto(workspace)),
        })
    }

    /// Disposes of a session (`DisposeSession`): stamps its row, forgets
    /// it, and has the daemon kill it.
    pub(crate) async fn dispose(
        &self,
        session_id: String,
        signal: pb::Signal,
        grace: Duration,
    ) -> Result<pb::DisposeSessionResponse> {
        let sent = validate::daemon_signal(signal);
        let now = store::micros(SystemTime::now());
        // Stamp first: from here on it is never listed, whatever happens next.
        let stamp = match self
            .store
            .stamp_dispose(&session_id, now, sent.into(), grace)
            .await
            .map_err(Error::from)?
        {
            Some(stamp) => stamp,
            None => return Err(self.not_ours(&session_id).await),
        };
        self.memory.remove(&session_id);
        // Each disposal sends its own signal, as `docker kill` after a
        // `docker stop` does. A SIGKILL need not wait out an earlier grace.
        match self.kill_with(&session_id, sent, grace).await {
            // The exit, when the daemon reports it, marks the row disposed.
            Ok(_) => {}
            Err(Error::Daemon(status)) if status.code() == tonic::Code::NotFound => {
                let ending = store::Ending {
                    exit_code: None,
                    exit_signal: None,
                    ended_at: now,
                };
                self.store
                    .record_ending(&session_id, ending)
                    .await
                    .map_err(Error::from)?;
            }
            Err(error) => {
                tracing::warn!(%session_id, %error, "kill on dispose failed; the reaper will retry");
                // At its next pass, not once a grace that never began is over.
                if let Err(error) = self.store.set_dispose_deadline(&session_id, now).await {
                    tracing::warn!(%session_id, %error, "recording the failed kill failed");
                }
            }
        }
        tracing::info!(%session_id, ?signal, ?grace, "session disposed");
        Ok(pb::DisposeSessionResponse {
            dispose_requested_at: timestamp(store::from_micros(stamp)),
            signal: signal.into(),
            grace_ms: validate::grace_ms(grace),
        })
    }
}
