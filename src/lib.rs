//! Shared pieces of holdfast: the generated protobuf and gRPC code, the
//! default filesystem locations, and a client for the pty-daemon's unix
//! socket.

pub mod accept_backoff;
pub mod admission;
pub mod answered_stream;
pub mod codec;
pub mod daemon_client;
pub mod error_details;
pub mod logging;
pub mod loopback_peer;
pub mod oversize;
pub mod paths;
pub mod preencoded;
pub mod proc_stat;
pub mod proc_usage;
pub mod proto;
pub mod reflection;
pub mod small_frames;
pub mod status_text;

/// The version every holdfast binary reports; daemon and host compare it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
