//! `holdfast.host.v1.StatusService`: what `holdfast status` shows.

use std::path::PathBuf;
use std::time::SystemTime;

use holdfast_api::proto::host::v1 as pb;
use tonic::{Request, Response, Status};

use crate::daemon::liveness::Liveness;
use crate::daemon::supervisor::{DaemonHealth, DaemonState};
use crate::grpc::api::status_service_server::StatusService;

/// Answers status requests from what the supervisor knows.
pub struct HostStatus {
    /// The daemon's state, kept by the supervisor.
    pub health: DaemonHealth,
    /// The SQLite file.
    pub database: PathBuf,
    /// The daemon's socket.
    pub daemon_socket: PathBuf,
    /// When this process started serving.
    pub started_at: SystemTime,
    /// Asks whether a daemon that is up answers now, within the lists'
    /// deadline.
    pub daemon: Liveness,
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
            database_path: self.database.display().to_string(),
            daemon_socket: self.daemon_socket.display().to_string(),
            ..Default::default()
        };
        let state = match self.health.state() {
            DaemonState::Starting => pb::DaemonState::Starting,
            DaemonState::Up { pid, version } => {
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
        Ok(Response::new(status))
    }
}
