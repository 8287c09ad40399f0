//! A response whose big repeated field is assembled from bytes encoded
//! beforehand.
//!
//! The daemon's `List` and the host's `ListSessions` each keep the parts of
//! a session that rarely change encoded. They send them with the parts that
//! do change appended. Protobuf reads a message's fields in any order. So an
//! entry made of two encoded parts back to back is one message on the wire,
//! and clients decode the response as usual.
//!
//! A service's `build.rs` maps the generated response type to a
//! `Preencoded<generated type>` in its server trait. Clients, reflection
//! and the wire are unchanged. [`Heads`] keeps entries encoded but for the
//! one field that changes on every call. In both services, that field is an
//! output offset.

use prost::Message;
use prost::bytes::{Buf, BufMut};
use prost::encoding::{self, DecodeContext, WireType};

/// `M`, with entries of one repeated message field given encoded.
///
/// Read off the wire, it keeps the entries of field `KEEP` encoded (see
/// [`Kept`]); with `KEEP` 0, no field's, and it reads as `M`.
#[derive(Debug, Default)]
pub struct Preencoded<M, const KEEP: u32 = 0> {
    /// The entries.
    entries: Entries,
    /// Every other field (and any entries decoded into it).
    rest: M,
}

/// `M` as read off the wire, with the entries of its field `TAG` kept
/// encoded: to be sent on as they came (with [`Preencoded::extend`])
/// instead of decoded and encoded again.
pub type Kept<M, const TAG: u32> = Preencoded<M, TAG>;

impl<M, const KEEP: u32> Preencoded<M, KEEP> {
    /// `rest`, with room for about `entry_bytes` of entries.
    pub fn new(rest: M, entry_bytes: usize) -> Self {
        Self {
            entries: Entries {
                bytes: Vec::with_capacity(entry_bytes),
            },
            rest,
        }
    }

    /// Appends an entry of field `tag`.
    ///
    /// The entry is one message, encoded as `head` then `tail`.
    pub fn push(&mut self, tag: u32, head: &[u8], tail: &[u8]) {
        let entries = &mut self.entries.bytes;
        encoding::encode_key(tag, WireType::LengthDelimited, entries);
        encoding::encode_varint((head.len() + tail.len()) as u64, entries);
        entries.extend_from_slice(head);
        entries.extend_from_slice(tail);
    }

    /// Makes room for `additional` more bytes of entries.
    pub fn reserve(&mut self, additional: usize) {
        self.entries.bytes.reserve(additional);
    }

    /// Appends entries kept as they came (see [`Kept`]).
    pub fn extend(&mut self, entries: &Entries) {
        self.entries.extend(entries);
    }

    /// The entries.
    pub fn entries(&self) -> &Entries {
        &self.entries
    }

    /// Every other field.
    pub fn rest(&self) -> &M {
        &self.rest
    }

    /// The entries and every other field.
    pub fn into_parts(self) -> (Entries, M) {
        (self.entries, self.rest)
    }
}

/// Entries of one repeated message field, each with its key and length,
/// back to back: as they are on the wire.
#[derive(Debug, Default, Clone)]
pub struct Entries {
    bytes: Vec<u8>,
}

impl Entries {
    /// Appends an entry of field `tag`: `message`, encoded.
    pub fn push(&mut self, tag: u32, message: &impl Message) {
        encoding::message::encode(tag, message, &mut self.bytes);
    }

    /// Appends `other`'s entries.
    pub fn extend(&mut self, other: &Entries) {
        self.bytes.extend_from_slice(&other.bytes);
    }

    /// Each entry's message, encoded.
    pub fn messages(&self) -> impl Iterator<Item = &[u8]> {
        let mut rest = self.bytes.as_slice();
        std::iter::from_fn(move || {
            if rest.is_empty() {
                return None;
            }
            // Only ever holds what `push` or `Kept` wrote: whole entries.
            encoding::decode_key(&mut rest).ok()?;
            let len = usize::try_from(encoding::decode_varint(&mut rest).ok()?).ok()?;
            let (message, after) = rest.split_at_checked(len)?;
            rest = after;
            Some(message)
        })
    }

    /// How many bytes they take.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// The heads of a response's entries, back to back.
///
/// Each is a message encoded once, but for one `uint64` field that changes
/// on every call.
#[derive(Debug, Default)]
pub struct Heads {
    bytes: Vec<u8>,
    /// Where each head ends in `bytes`.
    ends: Vec<usize>,
}

impl Heads {
    /// Room for `count` heads of about `bytes_each`.
    pub fn with_capacity(count: usize, bytes_each: usize) -> Self {
        Self {
            bytes: Vec::with_capacity(count * bytes_each),
            ends: Vec::with_capacity(count),
        }
    }

    /// Appends one head, as `encode` writes it.
    pub fn push(&mut self, encode: impl FnOnce(&mut Vec<u8>)) {
        encode(&mut self.bytes);
        self.ends.push(self.bytes.len());
    }

    /// `rest`, with one entry of field `tag` per head.
    ///
    /// Each entry is the head, then field `tail_tag` set to the matching
    /// value of `tails`. That field is left out when 0, as proto3 does.
    pub fn response<M>(
        &self,
        rest: M,
        tag: u32,
        tail_tag: u32,
        tails: impl IntoIterator<Item = u64>,
    ) -> Preencoded<M> {
        Preencoded {
            entries: self.entries(tag, tail_tag, tails),
            rest,
        }
    }

    /// One entry of field `tag` per head, each with field `tail_tag` set to
    /// the matching value of `tails` (left out when 0, as proto3 does).
    pub fn entries(
        &self,
        tag: u32,
        tail_tag: u32,
        tails: impl IntoIterator<Item = u64>,
    ) -> Entries {
        // A tail is a key and a varint: at most 12 bytes.
        let mut entries = Entries {
            bytes: Vec::with_capacity(self.bytes.len() + 12 * self.ends.len()),
        };
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        let mut tail = Vec::with_capacity(12);
        for ((start, &end), value) in starts.zip(&self.ends).zip(tails) {
            tail.clear();
            if value != 0 {
                encoding::uint64::encode(tail_tag, &value, &mut tail);
            }
            let head = &self.bytes[start..end];
            let bytes = &mut entries.bytes;
            encoding::encode_key(tag, WireType::LengthDelimited, bytes);
            encoding::encode_varint((head.len() + tail.len()) as u64, bytes);
            bytes.extend_from_slice(head);
            bytes.extend_from_slice(&tail);
        }
        entries
    }

    /// How many heads there are.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The heads of `entries`: each message without field `tail_tag`.
    ///
    /// `None` if an entry is not a well-formed message.
    pub fn of_entries(entries: &Entries, tail_tag: u32) -> Option<Heads> {
        let mut heads = Heads::with_capacity(0, 0);
        heads.bytes.reserve(entries.bytes.len());
        for message in entries.messages() {
            let mut rest = message;
            while !rest.is_empty() {
                let field = rest;
                let (tag, wire_type) = encoding::decode_key(&mut rest).ok()?;
                encoding::skip_field(wire_type, tag, &mut rest, DecodeContext::default()).ok()?;
                if tag != tail_tag {
                    heads
                        .bytes
                        .extend_from_slice(&field[..field.len() - rest.len()]);
                }
            }
            heads.ends.push(heads.bytes.len());
        }
        Some(heads)
    }
}

impl<M: Message + Default, const KEEP: u32> Message for Preencoded<M, KEEP> {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        buf.put_slice(&self.entries.bytes);
        self.rest.encode_raw(buf);
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        if KEEP == 0 || tag != KEEP {
            return self.rest.merge_field(tag, wire_type, buf, ctx);
        }
        // The whole field in one slice (as `SliceCodec` decodes): copied once.
        let mut peek = buf.chunk();
        if wire_type == WireType::LengthDelimited
            && let Ok(len) = encoding::decode_varint(&mut peek)
            && let Ok(len) = usize::try_from(len)
            && let Some(message) = peek.get(..len)
        {
            self.push(tag, message, &[]);
            let read = buf.chunk().len() - peek.len() + len;
            buf.advance(read);
            return Ok(());
        }
        // Otherwise prost's own reading of a length-delimited field, with
        // its checks of the wire type and of a length past the end.
        let mut message = Vec::new();
        encoding::bytes::merge(wire_type, &mut message, buf, ctx)?;
        self.push(tag, &message, &[]);
        Ok(())
    }

    fn encoded_len(&self) -> usize {
        self.entries.bytes.len() + self.rest.encoded_len()
    }

    fn clear(&mut self) {
        self.entries.bytes.clear();
        self.rest.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use holdfast_api::proto::daemon::v1 as pb;

    /// Entries given in two parts decode, with the generated type, as the
    /// messages encoded whole, beside the other fields.
    #[test]
    fn entries_in_two_parts_decode_as_whole_messages() {
        let sessions = [
            pb::Session {
                session_id: "a".into(),
                argv: vec!["sh".into()],
                output_offset: 1 << 40,
                ..Default::default()
            },
            pb::Session {
                session_id: "b".into(),
                title: "t".into(),
                cols: 80,
                ..Default::default()
            },
        ];
        let rest = pb::ListResponse {
            generation: 9,
            ..Default::default()
        };
        let mut response = Preencoded::<pb::ListResponse>::new(rest.clone(), 0);
        for session in &sessions {
            let head = pb::Session {
                session_id: session.session_id.clone(),
                argv: session.argv.clone(),
                ..Default::default()
            };
            let tail = pb::Session {
                session_id: String::new(),
                argv: Vec::new(),
                ..session.clone()
            };
            response.push(1, &head.encode_to_vec(), &tail.encode_to_vec());
        }
        let bytes = response.encode_to_vec();
        assert_eq!(bytes.len(), response.encoded_len());
        let expected = pb::ListResponse {
            sessions: sessions.to_vec(),
            ..rest
        };
        assert_eq!(pb::ListResponse::decode(bytes.as_slice()), Ok(expected));
    }

    /// Heads with tails appended decode as the whole messages; a zero tail
    /// is left out, as proto3 leaves it.
    #[test]
    fn heads_take_their_tails() {
        let sessions = [
            pb::Session {
                session_id: "a".into(),
                output_offset: 0,
                ..Default::default()
            },
            pb::Session {
                session_id: "b".into(),
                title: "t".into(),
                output_offset: 1 << 40,
                ..Default::default()
            },
        ];
        let mut heads = Heads::with_capacity(2, 16);
        for session in &sessions {
            let head = pb::Session {
                output_offset: 0,
                ..session.clone()
            };
            heads.push(|buf| head.encode_raw(buf));
        }
        let offsets = sessions.iter().map(|session| session.output_offset);
        // `Session.output_offset` is field 13.
        let response = heads.response(pb::ListResponse::default(), 1, 13, offsets);
        let bytes = response.encode_to_vec();
        let expected = pb::ListResponse {
            sessions: sessions.to_vec(),
            ..Default::default()
        };
        assert_eq!(bytes, expected.encode_to_vec());
    }

    /// Entries kept from one response and spliced into another decode as
    /// the messages sent, after the receiver's own; each reads back alone.
    #[test]
    fn kept_entries_splice_into_another_response() {
        let theirs = pb::ListResponse {
            sessions: vec![
                pb::Session {
                    session_id: "x".into(),
                    output_offset: 7,
                    ..Default::default()
                },
                pb::Session {
                    session_id: "y".into(),
                    argv: vec!["cat".into()],
                    ..Default::default()
                },
            ],
            generation: 3,
            ..Default::default()
        };
        let kept = Kept::<pb::ListResponse, 1>::decode(theirs.encode_to_vec().as_slice())
            .expect("decodes");
        assert_eq!(kept.rest().generation, 3);
        assert!(kept.rest().sessions.is_empty(), "kept, not decoded");
        let read: Vec<pb::Session> = kept
            .entries()
            .messages()
            .map(|bytes| pb::Session::decode(bytes).expect("an entry decodes"))
            .collect();
        assert_eq!(read, theirs.sessions);

        let mine = pb::Session {
            session_id: "a".into(),
            ..Default::default()
        };
        let mut response = Preencoded::<pb::ListResponse>::new(Default::default(), 0);
        response.push(1, &mine.encode_to_vec(), &[]);
        response.extend(kept.entries());
        let mut unconfirmed = Entries::default();
        unconfirmed.push(1, &mine);
        response.extend(&unconfirmed);
        let decoded = pb::ListResponse::decode(response.encode_to_vec().as_slice());
        let mut expected = vec![mine.clone()];
        expected.extend(theirs.sessions);
        expected.push(mine);
        assert_eq!(decoded.map(|list| list.sessions), Ok(expected));
    }

    /// Heads taken back out of kept entries, given fresh tails, decode as
    /// the messages with those tails.
    #[test]
    fn heads_come_back_out_of_entries() {
        let sessions = vec![
            pb::Session {
                session_id: "x".into(),
                output_offset: 7,
                cols: 80,
                ..Default::default()
            },
            pb::Session {
                session_id: "y".into(),
                argv: vec!["cat".into()],
                ..Default::default()
            },
        ];
        let mut entries = Entries::default();
        for session in &sessions {
            entries.push(1, session);
        }
        // `Session.output_offset` is field 13.
        let heads = Heads::of_entries(&entries, 13).expect("well-formed");
        assert_eq!(heads.len(), 2);
        let fresh = heads.response(pb::ListResponse::default(), 1, 13, [9, 1 << 33]);
        let decoded = pb::ListResponse::decode(fresh.encode_to_vec().as_slice()).expect("decodes");
        let offsets: Vec<u64> = decoded.sessions.iter().map(|s| s.output_offset).collect();
        assert_eq!(offsets, [9, 1 << 33]);
        assert_eq!(decoded.sessions[0].cols, 80);
        assert_eq!(decoded.sessions[1].argv, ["cat"]);
        assert!(
            Heads::of_entries(
                &Entries {
                    bytes: vec![10, 1, 0xff]
                },
                13
            )
            .is_none()
        );
    }

    /// A kept entry longer than what is left is refused, not read past.
    #[test]
    fn a_truncated_entry_is_refused() {
        let theirs = pb::ListResponse {
            sessions: vec![pb::Session {
                session_id: "x".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let bytes = theirs.encode_to_vec();
        let cut = &bytes[..bytes.len() - 1];
        assert!(Kept::<pb::ListResponse, 1>::decode(cut).is_err());
    }
}
