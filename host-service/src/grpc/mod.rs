//! The gRPC surface: the three services, their server and its layers.
//!
//! Each service has a file: `terminal.rs`, `workspace.rs`, `status.rs`.
//! `server.rs` puts them on one port with reflection, health, grpc-web,
//! the access check (`access.rs`, `peer_owner.rs`) and the guard that
//! keeps plain HTTP/1.1 off (`grpc_only.rs`). Nothing below this folder
//! knows it.

pub mod access;
pub mod api;
pub mod grpc_only;
pub mod listing;
pub mod paging;
pub mod peer_owner;
pub mod server;
pub mod status;
mod terminal;
mod workspace;
