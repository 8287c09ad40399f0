//! Whether the daemon answers at all.
//!
//! A health check asks, within a patience, over the connection the daemon's
//! other calls use. A daemon stopped by a signal or held in a debugger
//! still accepts connections and keeps its streams open. So only a call
//! that waits for an answer tells.

use std::time::Duration;

use tonic::Request;
use tonic::transport::Channel;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

#[derive(Clone)]
pub struct Liveness {
    health: HealthClient<Channel>,
    patience: Duration,
}

impl Liveness {
    /// Checks over `channel`, which the daemon's other calls share.
    ///
    /// Each check is answered within `patience` or counted as unanswered.
    pub fn new(channel: Channel, patience: Duration) -> Self {
        Self {
            health: HealthClient::new(channel),
            patience,
        }
    }

    /// The same checks with another patience.
    pub fn with_patience(&self, patience: Duration) -> Self {
        Self {
            health: self.health.clone(),
            patience,
        }
    }

    /// Why the daemon is not to be called on now, if it is not.
    ///
    /// It does not answer within the patience, or it says it is not
    /// serving.
    pub async fn not_answering(&self) -> Option<String> {
        let request = Request::new(HealthCheckRequest::default());
        let checked = tokio::time::timeout(self.patience, self.health.clone().check(request)).await;
        match checked {
            Ok(Ok(answer)) if answer.get_ref().status() == ServingStatus::Serving => None,
            Ok(Ok(_)) => Some("it says it is not serving".to_owned()),
            Ok(Err(status)) if !crate::error::is_deadline(&status) => {
                Some(format!("it fails health checks: {}", status.message()))
            }
            Ok(Err(_)) | Err(_) => Some(format!(
                "it does not answer within {} ms",
                self.patience.as_millis()
            )),
        }
    }
}
