//! The settings that shape every session the daemon starts.

use std::time::Duration;

/// Settings that shape every session.
#[derive(Debug, Clone)]
pub struct SessionSettings {
    /// Scrollback ring size per session, in bytes.
    pub scrollback_bytes: usize,
    /// How long an exited session stays listed.
    pub exit_retention: Duration,
    /// How long reading a terminal waits for an attacher that lags.
    ///
    /// An attacher lags when it is over half the scrollback behind. If it
    /// has not read half a scrollback more in this time, reading goes on
    /// without it.
    pub attacher_patience: Duration,
}
