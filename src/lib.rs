//! holdfast's API: the generated protobuf and gRPC code of both services.
//!
//! This is the crate every Rust client depends on, the two services
//! included. Besides the generated code, it holds what the wire contract
//! needs. That is the codec the generated code names, the refusal reasons
//! with their details, and the metadata keys.

pub mod codec;
pub mod error_details;
pub mod proto;
pub mod status_text;

/// The version every holdfast binary reports.
///
/// The daemon and the host-service compare it to tell an older peer.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
