//! Accepting connections without spinning.
//!
//! A listener can fail to accept because the process is out of descriptors
//! (EMFILE), the system is (ENFILE), or buffers or memory are out (ENOBUFS,
//! ENOMEM). It then stays readable, and tonic's own accept loop retries at
//! once. So a service at its descriptor limit burns a whole CPU until one
//! frees. Here such a failure pauses accepting for a moment. It is logged
//! once per spell rather than once per try. A failure of one connection
//! (aborted before it was accepted) is only skipped.

use std::time::Duration;

/// The pause after a failed accept.
pub const PAUSE: Duration = Duration::from_millis(100);

/// Whether accepting is failing, to log a spell's start and end once.
#[derive(Debug, Default)]
pub struct AcceptBackoff {
    failing: bool,
}

impl AcceptBackoff {
    /// The accepted connection, or `None` when accepting failed.
    ///
    /// Before it gives `None` for a failure, it logs the failure and pauses
    /// for `PAUSE`.
    pub async fn accepted<T>(&mut self, result: std::io::Result<T>) -> Option<T> {
        match result {
            Ok(connection) => {
                if self.failing {
                    tracing::info!("accepting connections again");
                    self.failing = false;
                }
                Some(connection)
            }
            Err(error) if !is_resource_shortage(&error) => {
                tracing::debug!(%error, "a connection failed before it was accepted");
                None
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

/// Whether accepting failed for want of something only time frees, rather
/// than because of the one connection.
fn is_resource_shortage(error: &std::io::Error) -> bool {
    use rustix::io::Errno;
    error.raw_os_error().is_some_and(|raw| {
        [Errno::MFILE, Errno::NFILE, Errno::NOBUFS, Errno::NOMEM]
            .iter()
            .any(|errno| errno.raw_os_error() == raw)
    })
}
