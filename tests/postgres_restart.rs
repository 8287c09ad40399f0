//! `host_restart.rs`'s tests again, with the host-service on PostgreSQL:
//! every guarantee across restarts holds on both backends.
//!
//! A test binary whose name starts with `postgres_` gives each `HostHome` a
//! PostgreSQL database of its own (`support::host::on_postgres`). Tests
//! that reach into the SQLite file itself stay on SQLite.

#[path = "host_restart.rs"]
mod cases;
