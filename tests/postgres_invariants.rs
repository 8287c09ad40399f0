//! `host_invariants.rs`'s property test again, with the host-service on
//! PostgreSQL (see `postgres_restart.rs`).

#[path = "host_invariants.rs"]
mod cases;
