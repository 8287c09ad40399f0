//! Upgrading the pty-daemon in place to this service's own daemon binary.
//!
//! The daemon does the work (pty-daemon's `upgrade/`): it checks the
//! candidate, hands every session to the new image and keeps its pid. This
//! side decides when: at start, when the adopted daemon runs another
//! version than the binary this service launches daemons with, and when a
//! client asks (`UpgradeDaemon`). It never takes a path from a client.

use std::path::PathBuf;
use std::time::Duration;

use holdfast_api::proto::daemon::v1 as daemon;
use holdfast_plumbing::daemon_client;

/// How long the new image gets to answer after the daemon accepted the
/// upgrade: far longer than a switch takes.
const SWITCH_PATIENCE: Duration = Duration::from_secs(10);

/// What an upgrade did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upgraded {
    /// False when the daemon ran the target version already.
    pub upgraded: bool,
    /// The daemon's version before.
    pub old_version: String,
    /// Its version now.
    pub new_version: String,
    /// Its pid, the same before and after.
    pub pid: u32,
    /// How long the switch took inside the daemon.
    pub switch: Duration,
}

/// Why an upgrade did not happen.
#[derive(Debug, thiserror::Error)]
pub enum UpgradeError {
    /// This service launches no daemon, so it has no binary to offer.
    #[error("this host-service launches no pty-daemon (--no-launch-daemon), so it upgrades none")]
    NoBinary,
    /// No daemon answers.
    #[error("no pty-daemon answers: {0}")]
    NoDaemon(String),
    /// The daemon refused, or the switch did not complete.
    #[error("{0}")]
    Refused(tonic::Status),
    /// The new image did not answer in time.
    #[error("the upgraded pty-daemon did not answer within {SWITCH_PATIENCE:?}")]
    NotBack,
}

/// Upgrades the daemon at one socket.
#[derive(Debug, Clone)]
pub struct DaemonUpgrade {
    /// The daemon's socket.
    pub socket: PathBuf,
    /// The binary this service launches daemons with, if it launches any.
    pub program: Option<PathBuf>,
}

impl DaemonUpgrade {
    /// The version `program` reports when run as the daemon.
    async fn target_version(&self, program: PathBuf) -> Result<String, UpgradeError> {
        tokio::task::spawn_blocking(move || pty_daemon::upgrade::probe::check(&program))
            .await
            .map_err(|error| UpgradeError::Refused(tonic::Status::internal(error.to_string())))?
            .map_err(|why| UpgradeError::Refused(tonic::Status::failed_precondition(why)))
    }

    /// What the daemon says of itself.
    async fn info(&self) -> Result<daemon::DaemonInfo, String> {
        let mut client = daemon_client::connect(&self.socket, Duration::from_secs(1))
            .await
            .map_err(|error| error.to_string())?;
        let list = client
            .list(daemon::ListRequest::default())
            .await
            .map_err(|status| status.message().to_owned())?;
        list.into_inner()
            .daemon
            .ok_or_else(|| "the pty-daemon did not identify itself".to_owned())
    }

    /// Upgrades the daemon to this service's daemon binary if it runs
    /// another version (or always, with `force`), and waits for the new
    /// image to answer.
    pub async fn run(&self, force: bool) -> Result<Upgraded, UpgradeError> {
        let program = self.program.clone().ok_or(UpgradeError::NoBinary)?;
        let target = self.target_version(program.clone()).await?;
        let before = self.info().await.map_err(UpgradeError::NoDaemon)?;
        if before.version == target && !force {
            return Ok(Upgraded {
                upgraded: false,
                old_version: before.version.clone(),
                new_version: before.version,
                pid: before.pid,
                switch: Duration::ZERO,
            });
        }
        let mut client = daemon_client::connect(&self.socket, Duration::from_secs(1))
            .await
            .map_err(|error| UpgradeError::NoDaemon(error.to_string()))?;
        let answer = client
            .upgrade(daemon::UpgradeRequest {
                executable: program.to_string_lossy().into_owned(),
            })
            .await;
        let old_version = match answer {
            Ok(answer) => answer.into_inner().old_version,
            // The switch may have cut the connection before its answer
            // left: whether it happened shows in the upgrades count.
            Err(status) if crate::daemon::resume::is_cut(&status) => before.version.clone(),
            Err(status) => return Err(UpgradeError::Refused(status)),
        };
        let deadline = tokio::time::Instant::now() + SWITCH_PATIENCE;
        loop {
            if let Ok(after) = self.info().await
                && after.upgrades > before.upgrades
            {
                tracing::info!(from = %old_version, to = %after.version, pid = after.pid, switch_micros = after.last_switch_micros, "upgraded the pty-daemon in place");
                return Ok(Upgraded {
                    upgraded: true,
                    old_version,
                    new_version: after.version,
                    pid: after.pid,
                    switch: Duration::from_micros(after.last_switch_micros),
                });
            }
            if tokio::time::Instant::now() > deadline {
                return Err(UpgradeError::NotBack);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}
