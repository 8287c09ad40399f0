//! How sessions appear in `List`, encoded.
//!
//! A session's fields that never change (id, pid, argv, cwd, start time)
//! are encoded once, at spawn.
//! What changes only with the generation (liveness, exit, size, title) is
//! encoded once per generation, for all sessions together ([`ListCache`]).
//! A list sends each session's encoding with its output offset appended.
//! Protobuf reads a message's fields in any order, so this is the same
//! `Session` on the wire, without building and dropping a thousand
//! messages (six allocations each) per list.
//!
//! [`ListResponse`] stands in for the generated type of that name in the
//! daemon's server trait (see `build.rs`). Clients decode it as usual.
//! `Spawn` answers with the same parts decoded into one message, so a
//! session is described in one place.

use std::sync::{Arc, Mutex, Weak};
use std::time::SystemTime;

use holdfast_api::proto::daemon::v1 as pb;
use holdfast_plumbing::preencoded::{Heads, Preencoded};
use prost::Message;
use prost::bytes::Bytes;
use prost::encoding;

use crate::session::{Changing, Session};

/// `ListResponse.sessions`.
const SESSIONS_TAG: u32 = 1;
/// `Session.title`.
const TITLE_TAG: u32 = 10;
/// `Session.output_offset`.
const OUTPUT_OFFSET_TAG: u32 = 13;

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

/// `session` as one message, as `Spawn` answers with it.
///
/// It is decoded from the same parts a list sends.
pub fn session_message(session: &Session) -> Result<pb::Session, prost::DecodeError> {
    let mut head = Vec::new();
    encode_head(session, &mut head);
    Ok(pb::Session {
        output_offset: session.output_offset(),
        ..pb::Session::decode(head.as_slice())?
    })
}

/// Appends a session's encoding but for its output offset to `buf`.
fn encode_head(session: &Session, buf: &mut Vec<u8>) {
    buf.extend_from_slice(session.listing());
    session.read_changing(|changing| encode_changing(changing, buf));
}

/// Appends the fields of a session that change with the generation,
/// encoded, to `buf`.
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
        ..Default::default()
    }
    .encode_raw(buf);
    if !changing.title.is_empty() {
        encoding::string::encode(TITLE_TAG, changing.title, buf);
    }
}

/// `holdfast.daemon.v1.ListResponse`, with its sessions pre-encoded.
pub type ListResponse = Preencoded<pb::ListResponse>;

/// Sessions encoded but for their output offsets, as of one generation.
#[derive(Debug)]
pub struct ListHeads {
    generation: u64,
    /// The list they were made from, by address only.
    ///
    /// Holding the sessions would keep forgotten ones (and their PTYs) open.
    made_from: Weak<[Arc<Session>]>,
    heads: Heads,
}

impl ListHeads {
    /// `sessions` as they are now; `generation` read before them.
    pub fn new(generation: u64, sessions: &Arc<[Arc<Session>]>) -> Self {
        // About what a session takes: its fixed part, size and title.
        let mut heads = Heads::with_capacity(sessions.len(), 128);
        for session in sessions.iter() {
            heads.push(|buf| encode_head(session, buf));
        }
        Self {
            generation,
            made_from: Arc::downgrade(sessions),
            heads,
        }
    }

    /// `rest`, with `sessions` (those these heads were made from) and their
    /// output offsets now.
    pub fn response(&self, rest: pb::ListResponse, sessions: &[Arc<Session>]) -> ListResponse {
        let offsets = sessions.iter().map(|session| session.output_offset());
        self.heads
            .response(rest, SESSIONS_TAG, OUTPUT_OFFSET_TAG, offsets)
    }
}

/// The heads of the last full list, reused while the generation and the
/// registry's list stand.
#[derive(Debug, Default)]
pub struct ListCache(Mutex<Option<Arc<ListHeads>>>);

impl ListCache {
    /// The heads of `all`, every session at `generation` (read before it).
    pub fn full(&self, generation: u64, all: &Arc<[Arc<Session>]>) -> Arc<ListHeads> {
        let mut last = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(heads) = last.as_ref().filter(|heads| {
            heads.generation == generation
                && std::ptr::addr_eq(heads.made_from.as_ptr(), Arc::as_ptr(all))
        }) {
            return Arc::clone(heads);
        }
        let heads = Arc::new(ListHeads::new(generation, all));
        *last = Some(Arc::clone(&heads));
        heads
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
                    exit: None,
                },
                0,
            ),
            (
                "b",
                vec!["vim".to_owned()],
                Changing {
                    title: &title,
                    cols: 200,
                    rows: 60,
                    exit: Some(ExitStatus {
                        code: Some(3),
                        signal: None,
                        at: exited_at,
                    }),
                },
                1 << 40,
            ),
            (
                "c",
                Vec::new(),
                Changing {
                    title: &title,
                    cols: 1,
                    rows: 1,
                    exit: Some(ExitStatus {
                        code: None,
                        signal: Some(9),
                        at: exited_at,
                    }),
                },
                7,
            ),
        ];
        let rest = pb::ListResponse {
            daemon: Some(pb::DaemonInfo {
                pid: 42,
                version: "1.2.3".into(),
                started_at: Some(created_at.into()),
                upgrades: 1,
                previous_version: "1.2.2".into(),
                last_switch_micros: 30_000,
            }),
            generation: 17,
            ..Default::default()
        };
        let mut heads = Heads::with_capacity(cases.len(), 128);
        let mut expected = rest.clone();
        for (id, argv, changing, output_offset) in &cases {
            // As ListHeads lays a session out: fixed part, changing part.
            let fixed = encode_fixed(id, 1234, argv.clone(), "/tmp/here".into(), created_at);
            heads.push(|buf| {
                buf.extend_from_slice(&fixed);
                encode_changing(*changing, buf);
            });
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
                output_offset: *output_offset,
            });
        }
        let offsets = cases.iter().map(|case| case.3);
        let response = heads.response(rest, SESSIONS_TAG, OUTPUT_OFFSET_TAG, offsets);
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
