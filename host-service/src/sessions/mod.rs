//! Sessions as this process knows them.
//!
//! The heart of the service is `live_sessions.rs`. It holds the one derived
//! function every list and count comes from. Around it are the sessions
//! this process holds (`held_sessions.rs`), the sizes of attached clients,
//! a new session's row, a session's description, and its input and attach
//! events.

pub mod attach_events;
pub mod client_sizes;
pub mod fleet;
pub mod held_sessions;
pub mod input;
pub mod live_sessions;
pub mod new_session;
pub mod session_view;
pub mod watch;
