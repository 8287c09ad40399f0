//! Accepting connections without spinning. A listener that cannot accept
//! (the process is out of descriptors: EMFILE; the system is: ENFILE)
//! stays readable, and tonic's own accept loop retries at once, so a
//! service at its descriptor limit burned a whole CPU until one freed.
//! Here a failure pauses accepting for a moment, and is logged once per
//! spell rather than once per try.

use std::time::Duration;

/// The pause after a failed accept.
pub const PAUSE: Duration = Duration::from_millis(100);

/// Whether accepting is failing, to log a spell's start and end once.
#[derive(Debug, Default)]
pub struct AcceptBackoff {
    failing: bool,
}

impl AcceptBackoff {
    /// The accepted connection; or, when accepting failed, `None` after
    /// logging the failure and pausing for `PAUSE`.
    pub async fn accepted<T>(&mut self, result: std::io::Result<T>) -> Option<T> {
        match result {
            Ok(connection) => {
                if self.failing {
                    tracing::info!("accepting connections again");
                    self.failing = false;
                }
                Some(connection)
            }
            Err(error) => {
                if !self.failing {
                    tracing::warn!(%error, pause_ms = PAUSE.as_millis(), "accepting a connection failed; pausing between tries until it works");
                    self.failing = true;
                }
                tokio::time::sleep(PAUSE).await;
                None
            }
        }
    }
}
