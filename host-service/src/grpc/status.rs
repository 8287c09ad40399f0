//! `holdfast.host.v1.StatusService`: what `holdfast status` shows.

use std::path::PathBuf;
use std::time::SystemTime;

use holdfast_api::error_details::{Reason, Refusal};
use holdfast_api::proto::host::v1 as pb;
use tonic::{Code, Request, Response, Status};

use crate::daemon::liveness::Liveness;
use crate::daemon::supervisor::{DaemonHealth, DaemonState};
use crate::daemon::upgrade::{DaemonUpgrade, UpgradeError};
use crate::grpc::api::status_service_server::StatusService;

/// Answers status requests from what the supervisor knows.
pub struct HostStatus {
    /// The daemon's state, kept by the supervisor.
    pub health: DaemonHealth,
    /// The database.
    pub database: crate::store::database::Database,
    /// The daemon's socket.
    pub daemon_socket: PathBuf,
    /// When this process started serving.
    pub started_at: SystemTime,
    /// Asks whether a daemon that is up answers now, within the lists'
    /// deadline.
    pub daemon: Liveness,
    /// Upgrades the daemon to this service's daemon binary.
    pub upgrade: DaemonUpgrade,
    /// The database, for the hosts sharing it.
    pub store: crate::store::Store,
}

#[tonic::async_trait]
impl StatusService for HostStatus {
    async fn get_status(
        &self,
        _request: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::GetStatusResponse>, Status> {
        let mut status = pb::GetStatusResponse {
            host_pid: std::process::id(),
            host_version: holdfast_api::VERSION.to_owned(),
            host_started_at: Some(self.started_at.into()),
            database_path: self.database.to_string(),
            daemon_socket: self.daemon_socket.display().to_string(),
            ..Default::default()
        };
        let state = match self.health.state() {
            DaemonState::Starting => pb::DaemonState::Starting,
            DaemonState::Up { pid, version, .. } => {
                status.daemon_pid = pid;
                status.daemon_version = version;
                match self.daemon.not_answering().await {
                    None => pb::DaemonState::Up,
                    Some(reason) => {
                        status.daemon_reason = reason;
                        pb::DaemonState::Down
                    }
                }
            }
            DaemonState::Down(reason) => {
                status.daemon_reason = reason;
                pb::DaemonState::Down
            }
            DaemonState::GaveUp(reason) => {
                status.daemon_reason = reason;
                pb::DaemonState::GaveUp
            }
        };
        status.daemon_state = state.into();
        let (deaths, last) = self.health.deaths();
        status.daemon_deaths = deaths;
        status.daemon_last_death_at = last.map(Into::into);
        Ok(Response::new(status))
    }

    async fn list_hosts(
        &self,
        _request: Request<pb::ListHostsRequest>,
    ) -> Result<Response<pb::ListHostsResponse>, Status> {
        let rows = self
            .store
            .hosts()
            .await
            .map_err(|error| Status::from(crate::error::Error::from(error)))?;
        let now = crate::store::micros(std::time::SystemTime::now());
        let stale = crate::store::duration_micros(3 * crate::this_host::HEARTBEAT);
        let hosts = rows
            .into_iter()
            .map(|row| pb::Host {
                alive: now.saturating_sub(row.heartbeat_at) <= stale,
                this_host: row.id == self.store.host_id(),
                started_at: Some(crate::store::from_micros(row.started_at).into()),
                heartbeat_at: Some(crate::store::from_micros(row.heartbeat_at).into()),
                host_id: row.id,
                name: row.name,
                address: row.address,
            })
            .collect();
        Ok(Response::new(pb::ListHostsResponse { hosts }))
    }

    async fn upgrade_daemon(
        &self,
        request: Request<pb::UpgradeDaemonRequest>,
    ) -> Result<Response<pb::UpgradeDaemonResponse>, Status> {
        let upgraded = self
            .upgrade
            .run(request.into_inner().force)
            .await
            .map_err(|error| match error {
                UpgradeError::NoBinary => Refusal::new(
                    Code::FailedPrecondition,
                    Reason::DaemonUpgrading,
                    error.to_string(),
                )
                .into(),
                UpgradeError::NoDaemon(_) | UpgradeError::NotBack => Refusal::new(
                    Code::Unavailable,
                    Reason::DaemonUnavailable,
                    error.to_string(),
                )
                .into(),
                UpgradeError::Refused(status) => status,
            })?;
        Ok(Response::new(pb::UpgradeDaemonResponse {
            upgraded: upgraded.upgraded,
            old_version: upgraded.old_version,
            new_version: upgraded.new_version,
            daemon_pid: upgraded.pid,
            switch_micros: u64::try_from(upgraded.switch.as_micros()).unwrap_or(u64::MAX),
        }))
    }
}
