//! Reconciles the daemon with the database, at start and periodically.
//!
//! It kills daemon sessions whose rows are stamped for disposal, and
//! orphans that have no row at all. It records rows whose process is gone
//! as ended. It never kills a session whose row is active and unstamped.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use holdfast_api::proto::daemon::v1 as daemon;
use holdfast_plumbing::daemon_client::DaemonClient;

use crate::error::{Error, Result};
use crate::sessions::held_sessions::HeldSessions;
use crate::store::{self, DEFAULT_DISPOSE_GRACE, Ending, Revival, Store};

/// How long the reaper waits for the daemon's answers.
const DAEMON_PATIENCE: Duration = Duration::from_secs(5);

/// What one pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReapReport {
    /// Daemon sessions killed because their rows are stamped.
    pub killed_stamped: usize,
    /// Daemon sessions killed because no row names them.
    pub killed_orphans: usize,
    /// Rows recorded as ended because their process is gone.
    pub settled: usize,
    /// Rows recorded as ended whose process runs, made active again.
    pub revived: usize,
}

/// The reconciler.
pub struct Reaper {
    store: Store,
    memory: Arc<HeldSessions>,
    daemon: DaemonClient,
}

impl Reaper {
    /// A reaper over this store and daemon.
    pub fn new(store: Store, memory: Arc<HeldSessions>, daemon: DaemonClient) -> Self {
        Self {
            store,
            memory,
            daemon,
        }
    }

    /// One pass, logging its outcome.
    pub async fn pass_logged(&self) {
        match self.pass().await {
            Ok(report) if report != ReapReport::default() => tracing::info!(?report, "reaper pass"),
            Ok(_) => tracing::debug!("reaper pass: nothing to do"),
            Err(error) => tracing::warn!(%error, "reaper pass failed"),
        }
    }

    /// Runs a pass every `every` until `stopped` resolves.
    ///
    /// A pass under way when it does runs to its end first.
    pub async fn run_every(self: Arc<Self>, every: Duration, stopped: impl Future<Output = ()>) {
        let mut ticker = tokio::time::interval(every);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.tick().await;
        let mut stopped = std::pin::pin!(stopped);
        loop {
            // Between passes only. A pass is never cut half way.
            tokio::select! {
                _ = ticker.tick() => self.pass_logged().await,
                () = &mut stopped => return,
            }
        }
    }

    /// One reconciliation pass.
    pub async fn pass(&self) -> Result<ReapReport> {
        // Rows first, then the daemon. A session created in between has a
        // row the snapshot lacks. It is re-checked before it is killed.
        let rows = self.store.unsettled_sessions().await?;
        // Creations under way when the rows were read. Their spawn may land
        // after the daemon's answer below, so neither loop may judge them.
        let creating = self.memory.creating();
        let in_creation = |id: &str| creating.contains(id) || self.memory.is_creating(id);
        // Whatever the daemon lists as running ran at least until now.
        let listed_at = store::micros(SystemTime::now());
        let mut client = self.daemon.clone();
        let mut request = tonic::Request::new(daemon::ListRequest::default());
        request.set_timeout(DAEMON_PATIENCE);
        let sessions = tokio::time::timeout(DAEMON_PATIENCE, client.list(request))
            .await
            .map_err(|_| Error::DaemonUnavailable("the reaper's List timed out".into()))?
            .map_err(Error::from_daemon)?
            .into_inner()
            .sessions;
        let rows_by_id: HashMap<&str, &store::SessionRow> =
            rows.iter().map(|row| (row.id.as_str(), row)).collect();
        let daemon_by_id: HashMap<&str, &daemon::Session> = sessions
            .iter()
            .map(|session| (session.session_id.as_str(), session))
            .collect();
        let mut report = ReapReport::default();

        for session in sessions.iter().filter(|session| session.alive) {
            let id = session.session_id.as_str();
            if in_creation(id) {
                continue;
            }
            let revived;
            let (row, condemned) = match rows_by_id.get(id) {
                Some(row) => (*row, false),
                // Not in the snapshot. The row is settled (ended, or
                // disposed), made since, or truly absent. An ended row
                // whose program runs was settled wrongly. A pass read the
                // rows while its spawn was still under way, which no list
                // shows. That spawn was begun by a host-service that died.
                // Such a row is listed again.
                None => match self.store.revive(id, listed_at).await? {
                    Revival::Revived => {
                        tracing::warn!(
                            session_id = id,
                            "a session recorded as ended is running; listed again"
                        );
                        report.revived += 1;
                        continue;
                    }
                    Revival::Active | Revival::EndedSince => continue,
                    // Stamped since the rows were read, say. It is judged
                    // as any row.
                    Revival::Condemned(row) => {
                        revived = row;
                        (&*revived, true)
                    }
                    Revival::NoRow => {
                        tracing::info!(
                            session_id = id,
                            "killing an orphan daemon session with no row"
                        );
                        self.kill(id, daemon::Signal::Hup, DEFAULT_DISPOSE_GRACE)
                            .await;
                        report.killed_orphans += 1;
                        continue;
                    }
                },
            };
            // A disposal under way is the daemon's to finish: its grace
            // period, then the daemon's SIGKILL. A second kill would cut a
            // long grace short. An active, unstamped row is never killed.
            let unstamped_but_condemned = condemned && !row.is_stamped();
            if !unstamped_but_condemned && !row.is_overdue(listed_at) {
                continue;
            }
            // Past it, or its kill failed. It is ended as it asked.
            tracing::info!(session_id = id, "killing a session stamped for disposal");
            let signal = row
                .dispose_signal
                .and_then(|raw| daemon::Signal::try_from(raw).ok())
                .unwrap_or(daemon::Signal::Hup);
            let grace = row.dispose_grace();
            if self.kill(id, signal, grace).await && row.is_stamped() {
                let deadline = listed_at.saturating_add(store::duration_micros(grace));
                self.store.set_dispose_deadline(id, deadline).await?;
            }
            report.killed_stamped += 1;
        }

        for row in &rows {
            if in_creation(&row.id) {
                continue;
            }
            let session = daemon_by_id.get(row.id.as_str());
            if session.is_some_and(|session| session.alive) {
                continue;
            }
            let ending = Ending {
                exit_code: session.and_then(|s| s.exit_code),
                exit_signal: session.and_then(|s| s.signal),
                ended_at: session
                    .and_then(|s| s.exited_at)
                    .and_then(|at| SystemTime::try_from(at).ok())
                    .map_or_else(|| store::micros(SystemTime::now()), store::micros),
            };
            if self.store.record_ending(&row.id, ending).await? {
                self.memory
                    .mark_exited(&row.id, ending.exit_code, ending.exit_signal);
                report.settled += 1;
            }
        }
        Ok(report)
    }

    /// Has the daemon send `signal`, then SIGKILL after `grace`.
    ///
    /// Says whether the daemon took the kill.
    async fn kill(&self, session_id: &str, signal: daemon::Signal, grace: Duration) -> bool {
        let mut client = self.daemon.clone();
        let request = daemon::KillRequest {
            session_id: session_id.to_owned(),
            signal: signal.into(),
            grace_ms: Some(crate::validate::grace_ms(grace)),
        };
        match tokio::time::timeout(DAEMON_PATIENCE, client.kill(request)).await {
            Ok(Ok(_)) => true,
            Ok(Err(status)) if status.code() == tonic::Code::NotFound => false,
            Ok(Err(status)) => {
                tracing::warn!(session_id, %status, "the reaper's kill failed");
                false
            }
            Err(_) => {
                tracing::warn!(session_id, "the reaper's kill timed out");
                false
            }
        }
    }
}
