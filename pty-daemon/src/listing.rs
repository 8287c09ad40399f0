//! How sessions appear in `List`, encoded. A session's fields that never
//! change (id, pid, argv, cwd, start time) are encoded once, at spawn; a
//! list encodes only what changes (liveness, exit, size, title, output
//! offset) and sends each session as the two parts back to back. Protobuf
//! reads a message's fields in any order, so this is the same `Session` on
//! the wire, without building and dropping a thousand messages (six
//! allocations each) per list.
//!
//! [`ListResponse`] stands in for the generated type of that name in the
//! daemon's server trait (see `build.rs`); clients decode it as usual.
//! `Spawn` answers with the same parts decoded into one message, so a
//! session is described in one place.

use std::sync::Arc;
use std::time::SystemTime;

use holdfast::preencoded::Preencoded;
use holdfast::proto::daemon::v1 as pb;
use prost::Message;
use prost::bytes::Bytes;
use prost::encoding;

use crate::session::{Changing, Session};

/// `ListResponse.sessions`.
const SESSIONS_TAG: u32 = 1;
/// `Session.title`.
const TITLE_TAG: u32 = 10;

/// The fields of a session that never change, encoded.
pub fn encode_fixed(
    session_id: &str,
    pid: u32,
    argv: Vec<String>,
    cwd: String,
    created_at: SystemTime,
) -> Bytes {
    pb::Session {
        session_id: session_id.to_owned(),
        pid,
        argv,
        cwd,
        created_at: Some(created_at.into()),
        ..Default::default()
    }
    .encode_to_vec()
    .into()
}

/// `session` as one message, as `Spawn` answers with it: decoded from the
/// same parts a list sends.
pub fn session_message(session: &Session) -> Result<pb::Session, prost::DecodeError> {
    let mut encoded = session.listing().to_vec();
    session.read_changing(|changing| encode_changing(changing, &mut encoded));
    pb::Session::decode(encoded.as_slice())
}

/// Appends the fields of a session that change, encoded, to `buf`.
fn encode_changing(changing: Changing<'_>, buf: &mut Vec<u8>) {
    let exit = changing.exit;
    // No strings or lists set: building this allocates nothing.
    pb::Session {
        alive: exit.is_none(),
        exit_code: exit.and_then(|exit| exit.code),
        signal: exit.and_then(|exit| exit.signal),
        cols: changing.cols.into(),
        rows: changing.rows.into(),
        exited_at: exit.map(|exit| exit.at.into()),
        output_offset: changing.output_offset,
        ..Default::default()
    }
    .encode_raw(buf);
    if !changing.title.is_empty() {
        encoding::string::encode(TITLE_TAG, changing.title, buf);
    }
}

/// `holdfast.daemon.v1.ListResponse`, with its sessions pre-encoded.
pub type ListResponse = Preencoded<pb::ListResponse>;

/// About what a session takes in a list: its fixed part, size, title and
/// offset.
const SESSION_BYTES: usize = 128;

/// `rest`, with `sessions` as they are now.
pub fn list_response(rest: pb::ListResponse, sessions: &[Arc<Session>]) -> ListResponse {
    let mut response = ListResponse::new(rest, sessions.len() * SESSION_BYTES);
    let mut changing = Vec::new();
    for session in sessions {
        changing.clear();
        session.read_changing(|now| encode_changing(now, &mut changing));
        response.push(SESSIONS_TAG, session.listing(), &changing);
    }
    response
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::session::ExitStatus;

    /// The assembled response decodes, with the generated types, to the
    /// response built field by field.
    #[test]
    fn sessions_decode_as_if_encoded_whole() {
        let created_at = SystemTime::UNIX_EPOCH + Duration::from_micros(1_700_000_000_123_456);
        let exited_at = created_at + Duration::from_millis(1500);
        let no_title = String::new();
        let title = "build · step 2".to_owned();
        let cases = [
            (
                "a",
                vec!["sh".to_owned(), "-c".to_owned(), "echo hi".to_owned()],
                Changing {
                    title: &no_title,
                    cols: 80,
                    rows: 24,
                    output_offset: 0,
                    exit: None,
                },
            ),
            (
                "b",
                vec!["vim".to_owned()],
                Changing {
                    title: &title,
                    cols: 200,
                    rows: 60,
                    output_offset: 1 << 40,
                    exit: Some(ExitStatus {
                        code: Some(3),
                        signal: None,
                        at: exited_at,
                    }),
                },
            ),
            (
                "c",
                Vec::new(),
                Changing {
                    title: &title,
                    cols: 1,
                    rows: 1,
                    output_offset: 7,
                    exit: Some(ExitStatus {
                        code: None,
                        signal: Some(9),
                        at: exited_at,
                    }),
                },
            ),
        ];
        let rest = pb::ListResponse {
            daemon: Some(pb::DaemonInfo {
                pid: 42,
                version: "1.2.3".into(),
                started_at: Some(created_at.into()),
            }),
            generation: 17,
            ..Default::default()
        };
        let mut response = ListResponse::new(rest.clone(), 0);
        let mut expected = rest;
        for (id, argv, changing) in &cases {
            let fixed = encode_fixed(id, 1234, argv.clone(), "/tmp/here".into(), created_at);
            let mut encoded = Vec::new();
            encode_changing(*changing, &mut encoded);
            response.push(SESSIONS_TAG, &fixed, &encoded);
            let exit = changing.exit;
            expected.sessions.push(pb::Session {
                session_id: (*id).to_owned(),
                pid: 1234,
                alive: exit.is_none(),
                exit_code: exit.and_then(|exit| exit.code),
                signal: exit.and_then(|exit| exit.signal),
                cols: changing.cols.into(),
                rows: changing.rows.into(),
                argv: argv.clone(),
                cwd: "/tmp/here".into(),
                title: changing.title.clone(),
                created_at: Some(created_at.into()),
                exited_at: exit.map(|exit| exit.at.into()),
                output_offset: changing.output_offset,
            });
        }
        let bytes = response.encode_to_vec();
        assert_eq!(bytes.len(), response.encoded_len());
        let decoded = pb::ListResponse::decode(bytes.as_slice()).expect("decodes");
        assert_eq!(decoded, expected);
    }

    #[test]
    fn an_unchanged_answer_carries_only_the_offsets() {
        let rest = pb::ListResponse {
            generation: 5,
            unchanged: true,
            output_offsets: vec![0, 10, 1 << 33],
            ..Default::default()
        };
        let bytes = ListResponse::new(rest.clone(), 0).encode_to_vec();
        assert_eq!(
            pb::ListResponse::decode(bytes.as_slice()).expect("decodes"),
            rest
        );
    }
}
