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

use std::time::SystemTime;

use holdfast::proto::daemon::v1 as pb;
use prost::Message;
use prost::bytes::{Buf, BufMut, Bytes};
use prost::encoding::{self, DecodeContext, WireType};

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
#[derive(Debug, Default)]
pub struct ListResponse {
    /// Each session's fixed part.
    fixed: Vec<Bytes>,
    /// Every session's changing part, back to back.
    changing: Vec<u8>,
    /// Where each session's changing part ends in `changing`.
    ends: Vec<usize>,
    /// Every other field (and any sessions decoded into it).
    rest: pb::ListResponse,
}

impl ListResponse {
    /// A response with `rest`'s fields and room for `sessions` sessions.
    pub fn new(rest: pb::ListResponse, sessions: usize) -> Self {
        Self {
            fixed: Vec::with_capacity(sessions),
            // About what size, title and offsets take.
            changing: Vec::with_capacity(sessions * 32),
            ends: Vec::with_capacity(sessions),
            rest,
        }
    }

    /// Adds `session` as it is now.
    pub fn push(&mut self, session: &Session) {
        session.read_changing(|changing| self.push_parts(session.listing(), changing));
    }

    fn push_parts(&mut self, fixed: &Bytes, changing: Changing<'_>) {
        self.fixed.push(fixed.clone());
        encode_changing(changing, &mut self.changing);
        self.ends.push(self.changing.len());
    }

    /// Each session's encoding, as its two parts.
    fn parts(&self) -> impl Iterator<Item = (&Bytes, &[u8])> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        self.fixed
            .iter()
            .zip(starts.zip(&self.ends))
            .map(|(fixed, (start, &end))| (fixed, &self.changing[start..end]))
    }
}

impl Message for ListResponse {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        for (fixed, changing) in self.parts() {
            encoding::encode_key(SESSIONS_TAG, WireType::LengthDelimited, buf);
            encoding::encode_varint((fixed.len() + changing.len()) as u64, buf);
            buf.put_slice(fixed);
            buf.put_slice(changing);
        }
        self.rest.encode_raw(buf);
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        // Only ever sent; should one be read, it reads as the generated type.
        self.rest.merge_field(tag, wire_type, buf, ctx)
    }

    fn encoded_len(&self) -> usize {
        let sessions: usize = self
            .parts()
            .map(|(fixed, changing)| {
                let len = fixed.len() + changing.len();
                encoding::key_len(SESSIONS_TAG) + encoding::encoded_len_varint(len as u64) + len
            })
            .sum();
        sessions + self.rest.encoded_len()
    }

    fn clear(&mut self) {
        *self = Self::default();
    }
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
        let mut response = ListResponse::new(rest.clone(), cases.len());
        let mut expected = rest;
        for (id, argv, changing) in &cases {
            let fixed = encode_fixed(id, 1234, argv.clone(), "/tmp/here".into(), created_at);
            response.push_parts(&fixed, *changing);
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
