//! The gRPC codec of every holdfast client and server.
//!
//! It is tonic's prost codec, except in two ways. A message is decoded from
//! one contiguous slice. It is encoded into a buffer grown once to its size.
//!
//! tonic hands a decoder the whole message in one buffer, but as a generic
//! `Buf` (`DecodeBuf` over a `BytesMut`). prost decodes through a generic
//! `Buf` much more slowly than from `&[u8]`. A daemon `List` of 1,000
//! sessions (85 KB) took 320 µs that way against 215 µs from the slice (see
//! BENCHMARKS.md). The one thing the slice gives up is sharing. A `bytes`
//! field is copied out of the receive buffer instead of referring to it.
//! That is one memcpy of what is at most a 64 KiB output chunk.
//!
//! tonic's encode buffer starts at 8 KiB and doubles as a message is written
//! into it. It copies what it holds each time. A list of 1,000 sessions
//! grows it four times. The encoder reserves the message's size first.

use std::marker::PhantomData;

use prost::Message;
use prost::bytes::Buf;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::{Code, Status};

use crate::error_details::{Reason, Refusal};

/// A prost [`Codec`] that decodes from a slice.
///
/// The generated code names it in place of `tonic_prost::ProstCodec`.
#[derive(Debug, Clone)]
pub struct SliceCodec<T, U> {
    _messages: PhantomData<(T, U)>,
}

impl<T, U> Default for SliceCodec<T, U> {
    fn default() -> Self {
        Self {
            _messages: PhantomData,
        }
    }
}

impl<T, U> Codec for SliceCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = SizedEncoder<T>;
    type Decoder = SliceDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        SizedEncoder {
            _message: PhantomData,
        }
    }

    fn decoder(&mut self) -> Self::Decoder {
        SliceDecoder {
            _message: PhantomData,
        }
    }
}

/// Encodes a `T` into a buffer reserved to its encoded length.
#[derive(Debug, Clone)]
pub struct SizedEncoder<T> {
    _message: PhantomData<T>,
}

impl<T: Message> Encoder for SizedEncoder<T> {
    type Item = T;
    type Error = Status;

    fn encode(&mut self, item: T, buf: &mut EncodeBuf<'_>) -> Result<(), Status> {
        // What `Message::encode` does, with room made first. It computes
        // the length anyway, and a `BytesMut` never lacks room.
        buf.reserve(item.encoded_len());
        item.encode_raw(buf);
        Ok(())
    }
}

/// Decodes a `U` from the contiguous bytes of one gRPC message.
#[derive(Debug, Clone)]
pub struct SliceDecoder<U> {
    _message: PhantomData<U>,
}

impl<U: Message + Default> Decoder for SliceDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        let len = buf.remaining();
        let decoded = if buf.chunk().len() == len {
            let decoded = U::decode(buf.chunk());
            buf.advance(len);
            decoded
        } else {
            // Not one slice after all (tonic's buffer is one). Decode
            // through the buffer, as tonic's own codec does.
            U::decode(buf)
        };
        // INTERNAL, as tonic's codec answers, per gRPC's status code guide.
        decoded.map(Some).map_err(|error| {
            Refusal::new(Code::Internal, Reason::MalformedMessage, error.to_string()).into()
        })
    }
}
