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
#[derive(Debug, Default)]
pub struct Preencoded<M> {
    /// The entries, each with its key and length, back to back.
    entries: Vec<u8>,
    /// Every other field (and any entries decoded into it).
    rest: M,
}

impl<M> Preencoded<M> {
    /// `rest`, with room for about `entry_bytes` of entries.
    pub fn new(rest: M, entry_bytes: usize) -> Self {
        Self {
            entries: Vec::with_capacity(entry_bytes),
            rest,
        }
    }

    /// Appends an entry of field `tag`.
    ///
    /// The entry is one message, encoded as `head` then `tail`.
    pub fn push(&mut self, tag: u32, head: &[u8], tail: &[u8]) {
        let entries = &mut self.entries;
        encoding::encode_key(tag, WireType::LengthDelimited, entries);
        encoding::encode_varint((head.len() + tail.len()) as u64, entries);
        entries.extend_from_slice(head);
        entries.extend_from_slice(tail);
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
        // A tail is a key and a varint: at most 12 bytes.
        let mut response = Preencoded::new(rest, self.bytes.len() + 12 * self.ends.len());
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        let mut tail = Vec::with_capacity(12);
        for ((start, &end), value) in starts.zip(&self.ends).zip(tails) {
            tail.clear();
            if value != 0 {
                encoding::uint64::encode(tail_tag, &value, &mut tail);
            }
            response.push(tag, &self.bytes[start..end], &tail);
        }
        response
    }
}

impl<M: Message + Default> Message for Preencoded<M> {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        buf.put_slice(&self.entries);
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
        self.entries.len() + self.rest.encoded_len()
    }

    fn clear(&mut self) {
        self.entries.clear();
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
        let mut response = Preencoded::new(rest.clone(), 0);
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
}
