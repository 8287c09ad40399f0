//! Code generated from `proto/` by `build.rs`.
//!
//! Beside it are the metadata keys and the environment variable that the
//! services and their clients share.

/// The encoded `FileDescriptorSet` of every holdfast proto, for reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/holdfast_descriptor.bin"));

/// `holdfast.daemon.v1`: the pty-daemon's API.
pub mod daemon {
    /// Version 1 of the daemon API.
    pub mod v1 {
        #![allow(missing_docs, clippy::all)]
        tonic::include_proto!("holdfast.daemon.v1");
    }
}

/// `holdfast.errors.v1`: the reasons both services give for a refusal.
pub mod errors {
    /// Version 1 of the reasons.
    pub mod v1 {
        #![allow(missing_docs, clippy::all)]
        tonic::include_proto!("holdfast.errors.v1");
    }
}

/// Response metadata of an `AttachSession` that honours `until_now`.
///
/// A host-service older than the field follows the session instead. With
/// this, a client that asked for a look can tell.
pub const LOOK_METADATA: &str = "holdfast-until-now";

/// Response metadata of an `AttachSession` or `StartSession` stream that
/// counts as attached.
///
/// It is the token that names the stream in the `attachment` field of
/// `ResizeSession`, `WriteInput` and `SendInput` requests. So its client's
/// size and keys are known as its own (see
/// `host-service/src/sessions/client_sizes.rs`).
pub const ATTACHMENT_METADATA: &str = "holdfast-attachment";

/// `ATTACHMENT_METADATA` of a response.
///
/// It is empty if the response carries none: from a host-service older than
/// it, or on a stream that names no client.
pub fn attachment_token(metadata: &tonic::metadata::MetadataMap) -> String {
    metadata
        .get(ATTACHMENT_METADATA)
        .and_then(|token| token.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// Response metadata of every attach stream that follows its session.
///
/// These streams are the daemon's `Attach` and `Start`, and the host's
/// `AttachSession` and `StartSession`. The value is the session's output
/// offset when the stream opened. What was written before it was written
/// before this client was there. A terminal that shows it must not answer
/// the queries in it, such as a device attributes or cursor position
/// request (`ESC [ c`, `ESC [ 6 n`). Their program has long stopped
/// waiting, so the answers would arrive as typed keys. Output from the
/// offset on is live. The metadata is absent from services older than it.
pub const LIVE_OFFSET_METADATA: &str = "holdfast-live-offset";

/// `LIVE_OFFSET_METADATA` of a response, if it carries one.
pub fn live_offset(metadata: &tonic::metadata::MetadataMap) -> Option<u64> {
    metadata
        .get(LIVE_OFFSET_METADATA)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// `response` with `LIVE_OFFSET_METADATA` set to `live_from`, if it is
/// known.
pub fn with_live_offset<T>(
    mut response: tonic::Response<T>,
    live_from: Option<u64>,
) -> tonic::Response<T> {
    if let Some(live_from) = live_from {
        response.metadata_mut().insert(
            LIVE_OFFSET_METADATA,
            tonic::metadata::MetadataValue::from(live_from),
        );
    }
    response
}

/// The environment variable that names the session a program runs in.
///
/// The host-service sets it at every spawn, over any value a client names,
/// as tmux sets `TMUX`. So `holdfast attach` run in a session does not
/// attach that very session to itself.
pub const SESSION_ID_VARIABLE: &str = "HOLDFAST_SESSION_ID";

/// `holdfast.host.v1`: the host-service's API.
pub mod host {
    /// Version 1 of the host API.
    pub mod v1 {
        #![allow(missing_docs, clippy::all)]
        tonic::include_proto!("holdfast.host.v1");
    }
}
