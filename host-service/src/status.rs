//! `holdfast.host.v1.StatusService`: what `holdfast status` shows.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use holdfast::proto::host::v1 as pb;
use tonic::transport::Channel;
use tonic::{Request, Response, Status};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

use crate::api::status_service_server::StatusService;
use crate::supervisor::{DaemonHealth, DaemonState};

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
    /// The daemon's health service, asked whether a daemon that is up
    /// answers now.
    pub daemon: HealthClient<Channel>,
    /// How long it has to answer: the lists' deadline.
    pub deadline: Duration,
}

impl HostStatus {
    /// Why a daemon the supervisor knows as up is not to be called up:
    /// it does not answer (stopped, hung) within the deadline.
    async fn not_answering(&self) -> Option<String> {
        let request = Request::new(HealthCheckRequest::default());
        let checked = tokio::time::timeout(self.deadline, self.daemon.clone().check(request)).await;
        match checked {
            Ok(Ok(answer)) if answer.get_ref().status() == ServingStatus::Serving => None,
            Ok(Ok(_)) => Some("it says it is not serving".to_owned()),
            Ok(Err(status)) if !crate::error::is_deadline(&status) => {
                Some(format!("it fails health checks: {}", status.message()))
            }
            Ok(Err(_)) | Err(_) => Some(format!(
                "it does not answer within {} ms",
                self.deadline.as_millis()
            )),
        }
    }
}

#[tonic::async_trait]
impl StatusService for HostStatus {
    async fn get_status(
        &self,
        _request: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::GetStatusResponse>, Status> {
        let mut status = pb::GetStatusResponse {
            host_pid: std::process::id(),
            host_version: holdfast::VERSION.to_owned(),
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
                match self.not_answering().await {
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
