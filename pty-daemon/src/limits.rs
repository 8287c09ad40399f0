//! The daemon's limits on what a request may ask for.
//!
//! They live apart from the checks that apply them, so that the error
//! messages, the input queue and the checks can all name them without
//! importing one another.

/// Longest session id accepted.
pub const MAX_SESSION_ID_LEN: usize = 64;
/// Largest terminal dimension accepted, in cells.
pub const MAX_DIMENSION: u32 = 10_000;
/// Largest single input write, in bytes.
pub const MAX_WRITE_BYTES: usize = 1 << 20;
/// Longest grace period before SIGKILL, in milliseconds.
pub const MAX_GRACE_MS: u32 = 600_000;
/// Most session ids one `List` may name.
pub const MAX_LISTED_IDS: usize = 1000;

/// Longest working directory accepted.
///
/// It is the system's own limit on a path: PATH_MAX, which counts its
/// terminating NUL.
pub const MAX_CWD_BYTES: usize = 4095;

/// Most input that may wait for one program.
///
/// One largest write, so a write to a session with nothing waiting always
/// fits.
pub const MAX_WAITING_BYTES: usize = MAX_WRITE_BYTES;
