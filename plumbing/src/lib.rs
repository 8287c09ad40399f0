//! Plumbing the holdfast binaries share.
//!
//! It holds the pieces below the gRPC surface that the pty-daemon, the
//! host-service and the CLI each need. These are the daemon's unix-socket
//! client, admission and size limits for servers, and the accept loop's
//! back-off. There are also reflection and logging set-up, default paths,
//! and readers of `/proc`.

pub mod accept_backoff;
pub mod admission;
pub mod answered_stream;
pub mod daemon_client;
pub mod logging;
pub mod loopback_peer;
pub mod oversize;
pub mod paths;
pub mod preencoded;
pub mod proc_stat;
pub mod proc_usage;
pub mod reflection;
pub mod small_frames;
