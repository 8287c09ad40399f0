//! The pty-daemon as the host sees it.
//!
//! The supervisor starts or adopts a daemon and notices when it dies. The
//! liveness check answers whether it is up. The reaper settles rows with
//! what the daemon holds. Attach streams get connections of their own.

pub mod liveness;
pub mod reaper;
pub mod resume;
pub mod stream_connections;
pub mod supervisor;
pub mod upgrade;
