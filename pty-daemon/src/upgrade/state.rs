//! The state format an image hands to the next in an upgrade.
//!
//! It is `holdfast.daemon.state.v1` (proto/holdfast/daemon/state/v1), in a
//! sealed memfd: the message's length, then the message. Each session's
//! scrollback stays in its own memfd (format 2); format 1 put the rings raw
//! after the message. Format N+1 reads format N; a reader refuses a format
//! newer than it knows, and the previous image then goes on.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use std::fs::File;
use std::os::unix::fs::FileExt;

use prost::Message;

/// The generated state messages.
pub mod pb {
    #![allow(missing_docs, clippy::all)]
    tonic::include_proto!("holdfast.daemon.state.v1");
}

/// The format this image writes.
pub const FORMAT: u32 = 2;

/// The formats this image reads, oldest first.
pub const READABLE_FORMATS: &[u32] = &[1, 2];

/// Why a state cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// Not a state message at all.
    #[error("the state is not a holdfast daemon state: {0}")]
    Corrupt(#[from] prost::DecodeError),
    /// A format this image does not know.
    #[error("the state is format {0}; this daemon reads formats {READABLE_FORMATS:?}")]
    UnknownFormat(u32),
    /// The file could not be read whole.
    #[error("reading the state file: {0}")]
    Io(#[from] std::io::Error),
    /// A message length no file of this machine can hold.
    #[error("the state claims a message of {0} bytes")]
    TooLarge(u64),
}

/// The file's beginning: the message's length, then the message.
pub fn header(state: &pb::DaemonState) -> Vec<u8> {
    let message = state.encode_to_vec();
    let mut header = (message.len() as u64).to_le_bytes().to_vec();
    header.extend_from_slice(&message);
    header
}

/// Reads a state file: its message, and a reader of the rings after it.
pub fn read(file: File) -> Result<(pb::DaemonState, Rings), StateError> {
    let mut length = [0; 8];
    file.read_exact_at(&mut length, 0)?;
    let length = u64::from_le_bytes(length);
    let mut message = vec![0; usize::try_from(length).map_err(|_| StateError::TooLarge(length))?];
    file.read_exact_at(&mut message, 8)?;
    let state = decode(&message)?;
    Ok((
        state,
        Rings {
            file,
            position: 8 + length,
        },
    ))
}

/// The rings after a state's message, read in session order: those of
/// sessions whose ring is not in a memfd of its own.
pub struct Rings {
    file: File,
    position: u64,
}

impl Rings {
    /// The next session's ring, `len` bytes.
    pub fn next(&mut self, len: u64) -> std::io::Result<Vec<u8>> {
        let mut ring = vec![0; usize::try_from(len).map_err(std::io::Error::other)?];
        self.file.read_exact_at(&mut ring, self.position)?;
        self.position += len;
        Ok(ring)
    }
}

/// Reads a state message, refusing a format this image does not know.
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
