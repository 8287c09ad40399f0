//! How sessions appear in `ListSessions`, encoded.
//!
//! A workspace's list is made once per change (see
//! `sessions/live_sessions.rs`). Its sessions are encoded once too, all but
//! their output offsets. Every list sends that encoding with each session's
//! fresh offset appended. Protobuf reads a message's fields in any order,
//! so this is the same `Session` on the wire. It spares building, encoding
//! and dropping a thousand messages (four strings each) per list.
//!
//! [`ListSessionsResponse`] stands in for the generated type of that name
//! in the host's server traits (see `build.rs` and
//! `holdfast_plumbing::preencoded`). Clients decode it as usual.

use holdfast_api::proto::host::v1 as pb;
use holdfast_plumbing::preencoded::{Heads, Preencoded};
use prost::Message;

use crate::sessions::live_sessions::{LiveSession, LiveSessions, Rendered, Source};

/// `ListSessionsResponse.sessions`.
const SESSIONS_TAG: u32 = 1;
/// `Session.output_offset`.
const OUTPUT_OFFSET_TAG: u32 = 12;

/// A list's sessions encoded without their output offsets.
pub fn encode_sessions(sessions: &[LiveSession]) -> Heads {
    let mut heads = Heads::with_capacity(sessions.len(), 96);
    for session in sessions {
        heads.push(|buf| session_message(session, 0).encode_raw(buf));
    }
    heads
}

/// `session`, as lists show it, with `output_offset`.
fn session_message(session: &LiveSession, output_offset: u64) -> pb::Session {
    pb::Session {
        session_id: session.session_id.clone(),
        workspace_id: session.workspace_id.clone(),
        title: session.title.clone(),
        name: session.name.clone(),
        attached: session.attached,
        alive: true,
        exit_code: None,
        signal: None,
        pid: session.pid,
        cols: session.cols,
        rows: session.rows,
        created_at: Some(session.created_at.into()),
        output_offset,
        ..Default::default()
    }
}

/// `live`'s sessions as whole messages, with their output offsets: for a
/// list of every host, which is assembled, not pre-encoded.
pub fn sessions_of(live: &LiveSessions) -> Vec<pb::Session> {
    live.rendered
        .sessions
        .iter()
        .zip(live.output_offsets())
        .map(|(session, offset)| session_message(session, offset))
        .collect()
}

/// `source` as `ListSessionsResponse` and `CountBackgroundSessionsResponse`
/// report it.
///
/// That is the enum, and the reason a list is degraded.
pub fn source_to_proto(source: &Source) -> (pb::Source, String) {
    match source {
        Source::Complete => (pb::Source::Complete, String::new()),
        Source::MemoryOnly(reason) => (pb::Source::MemoryOnly, reason.clone()),
    }
}

/// `holdfast.host.v1.ListSessionsResponse`, with its sessions pre-encoded.
pub type ListSessionsResponse = Preencoded<pb::ListSessionsResponse>;

/// The response for `live` to a caller holding the list of generation
/// `if_generation`.
///
/// While that list stands, it carries only the offsets. Otherwise it
/// carries the whole list (its sessions encoded if no list has yet).
pub fn list_sessions_response(
    live: &LiveSessions,
    if_generation: Option<u64>,
) -> ListSessionsResponse {
    respond(
        &live.rendered,
        live.output_offsets(),
        &live.source,
        if_generation,
    )
}

/// The response for `rendered` with these output offsets.
fn respond(
    rendered: &Rendered,
    output_offsets: Vec<u64>,
    source: &Source,
    if_generation: Option<u64>,
) -> ListSessionsResponse {
    let (source, degraded_reason) = source_to_proto(source);
    let rest = pb::ListSessionsResponse {
        source: source.into(),
        degraded_reason,
        generation: rendered.generation,
        ..Default::default()
    };
    let held = rendered.generation != 0 && if_generation == Some(rendered.generation);
    if held {
        let rest = pb::ListSessionsResponse {
            unchanged: true,
            output_offsets,
            ..rest
        };
        return ListSessionsResponse::new(rest, 0);
    }
    let heads = rendered
        .encoded
        .get_or_init(|| encode_sessions(&rendered.sessions));
    heads.response(rest, SESSIONS_TAG, OUTPUT_OFFSET_TAG, output_offsets)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use std::sync::Arc;

    use super::*;
    use crate::sessions::live_sessions::Rendered;

    fn live(id: &str, title: &str, attached: bool) -> LiveSession {
        LiveSession {
            session_id: id.to_owned(),
            workspace_id: "w".to_owned(),
            title: title.to_owned(),
            name: "given".to_owned(),
            attached,
            pid: 4321,
            cols: 120,
            rows: 40,
            created_at: SystemTime::UNIX_EPOCH + Duration::from_micros(1_700_000_000_123_456),
        }
    }

    /// The assembled response decodes, with the generated types, to the
    /// response built field by field, and is as long.
    ///
    /// A second response sharing the same encoding carries its own offsets.
    #[test]
    fn sessions_decode_as_if_encoded_whole() {
        let sessions = vec![
            live("a", "", false),
            live("b", "build · step 2", true),
            live("c", "x", false),
        ];
        let rendered = Arc::new(Rendered::from_memory(sessions.clone()));
        for (offsets, source) in [
            (vec![0, 7, 1 << 40], Source::Complete),
            (vec![300, 0, 1], Source::MemoryOnly("hung".to_owned())),
        ] {
            let response = respond(&rendered, offsets.clone(), &source, None);
            let (source, degraded_reason) = source_to_proto(&source);
            let expected = pb::ListSessionsResponse {
                sessions: sessions
                    .iter()
                    .zip(&offsets)
                    .map(|(session, &offset)| session_message(session, offset))
                    .collect(),
                source: source.into(),
                degraded_reason,
                ..Default::default()
            };
            let bytes = response.encode_to_vec();
            assert_eq!(bytes.len(), response.encoded_len());
            assert_eq!(
                pb::ListSessionsResponse::decode(bytes.as_slice()).expect("decodes"),
                expected
            );
            // The same bytes but for their order: each session's offset
            // comes last, after `name` (16), where a whole encoding puts
            // it before.
            assert_eq!(bytes.len(), expected.encoded_len());
        }
    }
}
