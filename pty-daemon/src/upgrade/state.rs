//! The state format an image hands to the next in an upgrade.
//!
//! It is `holdfast.daemon.state.v1` (proto/holdfast/daemon/state/v1), in a
//! sealed memfd. Format N+1 reads format N; a reader refuses a format newer
//! than it knows, and the previous image then goes on.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use prost::Message;

/// The generated state messages.
pub mod pb {
    #![allow(missing_docs, clippy::all)]
    tonic::include_proto!("holdfast.daemon.state.v1");
}

/// The format this image writes.
pub const FORMAT: u32 = 1;

/// The formats this image reads, oldest first.
pub const READABLE_FORMATS: &[u32] = &[1];

/// Why a state cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// Not a state message at all.
    #[error("the state is not a holdfast daemon state: {0}")]
    Corrupt(#[from] prost::DecodeError),
    /// A format this image does not know.
    #[error("the state is format {0}; this daemon reads formats {READABLE_FORMATS:?}")]
    UnknownFormat(u32),
}

/// Reads a state, refusing a format this image does not know.
pub fn decode(bytes: &[u8]) -> Result<pb::DaemonState, StateError> {
    let state = pb::DaemonState::decode(bytes)?;
    if !READABLE_FORMATS.contains(&state.format) {
        return Err(StateError::UnknownFormat(state.format));
    }
    Ok(state)
}

/// `time` in microseconds since the Unix epoch.
pub fn micros(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |since| {
        i64::try_from(since.as_micros()).unwrap_or(i64::MAX)
    })
}

/// The time `micros` microseconds after the Unix epoch.
pub fn from_micros(micros: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_micros(u64::try_from(micros).unwrap_or(0))
}
