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

use crate::sessions::fleet::{OUTPUT_OFFSET_TAG, Others, SESSIONS_TAG};
use crate::sessions::live_sessions::{LiveSession, LiveSessions, Rendered, Source};
use crate::sessions::session_view;
use crate::this_host::HostIdentity;

/// A list's sessions, on host `me`, encoded without their output offsets.
pub fn encode_sessions(sessions: &[LiveSession], me: &HostIdentity) -> Heads {
    let mut heads = Heads::with_capacity(sessions.len(), 96 + me.id.len() + me.name.len());
    for session in sessions {
        heads.push(|buf| session_view::listed(session, me).encode_raw(buf));
    }
    heads
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
    me: &HostIdentity,
) -> ListSessionsResponse {
    respond(
        &live.rendered,
        live.output_offsets(),
        &live.source,
        if_generation,
        me,
    )
}

/// The response of every host: `own`, this host's list, then the sessions
/// the `others` sent (as they sent them), then those of hosts that did not
/// answer. Its source is this host's own.
pub fn everywhere_response(
    own: &LiveSessions,
    others: &Others,
    me: &HostIdentity,
) -> ListSessionsResponse {
    let (source, degraded_reason) = source_to_proto(&own.source);
    let rest = pb::ListSessionsResponse {
        source: source.into(),
        degraded_reason,
        hosts: others.hosts.clone(),
        ..Default::default()
    };
    let rendered = &own.rendered;
    let heads = rendered
        .encoded
        .get_or_init(|| encode_sessions(&rendered.sessions, me));
    let offsets = own.output_offsets();
    let mut response = heads.response(rest, SESSIONS_TAG, OUTPUT_OFFSET_TAG, offsets);
    response.reserve(others.confirmed.len() + others.unconfirmed.len());
    response.extend(&others.confirmed);
    response.extend(&others.unconfirmed);
    response
}

/// The response for `rendered` with these output offsets.
fn respond(
    rendered: &Rendered,
    output_offsets: Vec<u64>,
    source: &Source,
    if_generation: Option<u64>,
    me: &HostIdentity,
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
        .get_or_init(|| encode_sessions(&rendered.sessions, me));
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
            let me = HostIdentity {
                id: "host-1".to_owned(),
                name: "box".to_owned(),
            };
            let response = respond(&rendered, offsets.clone(), &source, None, &me);
            let (source, degraded_reason) = source_to_proto(&source);
            let expected = pb::ListSessionsResponse {
                sessions: sessions
                    .iter()
                    .zip(&offsets)
                    .map(|(session, &output_offset)| pb::Session {
                        output_offset,
                        ..session_view::listed(session, &me)
                    })
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
            // comes last, after `host_name` (18), where a whole encoding
            // puts it before.
            assert_eq!(bytes.len(), expected.encoded_len());
        }
    }
}
