//! The pty-daemon as the host sees it.
//!
//! The supervisor starts or adopts a daemon and notices when it dies; the
//! liveness check answers whether it is up; the reaper settles rows with
//! what the daemon holds; attach streams get connections of their own.

pub mod liveness;
pub mod reaper;
pub mod stream_connections;
pub mod supervisor;
