//! A bounded ring of a session's most recent output.
//!
//! It is addressed by absolute byte offsets, so that a client can resume
//! exactly where it left off.

use std::collections::VecDeque;

use prost::bytes::Bytes;

/// The most recent `capacity` bytes of output.
///
/// Offsets count every byte the session ever produced, so they stay valid
/// after older bytes are evicted.
#[derive(Debug)]
pub struct Scrollback {
    /// The held bytes; grows as output arrives, so idle sessions cost nothing.
    bytes: VecDeque<u8>,
    /// Absolute offset of `bytes[0]`.
    start: u64,
    /// The most bytes held at once.
    capacity: usize,
}

/// What a read at an offset finds.
#[derive(Debug, PartialEq, Eq)]
pub enum ReadAt {
    /// Bytes starting exactly at the requested offset.
    Data(Bytes),
    /// The requested offset was evicted; the oldest held byte is `to_offset`.
    Evicted {
        /// One past the last lost byte: where held output begins.
        to_offset: u64,
    },
    /// Nothing at or past the offset has been produced yet.
    Pending,
}

impl Scrollback {
    /// An empty ring that will hold at most `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        Self {
            bytes: VecDeque::new(),
            start: 0,
            capacity: capacity.max(1),
        }
    }

    /// A ring of `capacity` bytes holding `bytes`, the first at `start`.
    ///
    /// Only the last `capacity` of them are kept, as pushing them would.
    /// The bytes become the ring's buffer as they are, not copied.
    pub fn restored(capacity: usize, start: u64, mut bytes: Vec<u8>) -> Self {
        let capacity = capacity.max(1);
        let excess = bytes.len().saturating_sub(capacity);
        bytes.drain(..excess);
        Self {
            bytes: VecDeque::from(bytes),
            start: start + excess as u64,
            capacity,
        }
    }

    /// The held bytes, oldest first, in two pieces (the ring's wrap).
    pub fn as_slices(&self) -> (&[u8], &[u8]) {
        self.bytes.as_slices()
    }

    /// The most bytes it holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The offset of the oldest byte still held.
    pub fn start_offset(&self) -> u64 {
        self.start
    }

    /// The offset the next byte will get: the total ever produced.
    pub fn end_offset(&self) -> u64 {
        self.start + self.bytes.len() as u64
    }

    /// Bytes held now.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Appends output, evicting the oldest bytes beyond the capacity.
    pub fn push(&mut self, data: &[u8]) {
        let end = self.end_offset() + data.len() as u64;
        let kept = if data.len() >= self.capacity {
            self.bytes.clear();
            &data[data.len() - self.capacity..]
        } else {
            let overflow = (self.bytes.len() + data.len()).saturating_sub(self.capacity);
            self.bytes.drain(..overflow);
            data
        };
        self.bytes.extend(kept);
        self.start = end - self.bytes.len() as u64;
    }

    /// Up to `max` bytes starting at `offset`.
    pub fn read_at(&self, offset: u64, max: usize) -> ReadAt {
        if offset < self.start {
            return ReadAt::Evicted {
                to_offset: self.start,
            };
        }
        if offset >= self.end_offset() {
            return ReadAt::Pending;
        }
        // In range, so the difference is below `bytes.len()` and fits usize.
        let from = (offset - self.start) as usize;
        let to = self.bytes.len().min(from.saturating_add(max.max(1)));
        let (front, back) = self.bytes.as_slices();
        let mut chunk = Vec::with_capacity(to - from);
        if from < front.len() {
            chunk.extend_from_slice(&front[from..to.min(front.len())]);
        }
        if to > front.len() {
            chunk.extend_from_slice(&back[from.saturating_sub(front.len())..to - front.len()]);
        }
        ReadAt::Data(Bytes::from(chunk))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(read: ReadAt) -> Vec<u8> {
        match read {
            ReadAt::Data(bytes) => bytes.to_vec(),
            other => panic!("expected data, got {other:?}"),
        }
    }

    #[test]
    fn reads_from_any_held_offset() {
        let mut ring = Scrollback::new(16);
        ring.push(b"hello ");
        ring.push(b"world");
        assert_eq!(ring.end_offset(), 11);
        assert_eq!(data(ring.read_at(0, 100)), b"hello world");
        assert_eq!(data(ring.read_at(6, 100)), b"world");
        assert_eq!(data(ring.read_at(6, 2)), b"wo");
        assert_eq!(ring.read_at(11, 100), ReadAt::Pending);
        assert_eq!(ring.read_at(99, 100), ReadAt::Pending);
    }

    #[test]
    fn evicts_oldest_and_keeps_offsets() {
        let mut ring = Scrollback::new(8);
        ring.push(b"0123456789");
        assert_eq!(ring.start_offset(), 2);
        assert_eq!(ring.len(), 8);
        assert_eq!(ring.read_at(1, 4), ReadAt::Evicted { to_offset: 2 });
        assert_eq!(data(ring.read_at(2, 100)), b"23456789");
        ring.push(b"abc");
        assert_eq!(ring.start_offset(), 5);
        assert_eq!(data(ring.read_at(5, 100)), b"56789abc");
        assert_eq!(data(ring.read_at(9, 3)), b"9ab");
    }

    #[test]
    fn reads_across_the_wrap_point() {
        let mut ring = Scrollback::new(8);
        for chunk in [&b"abcde"[..], b"fgh", b"ijk", b"lm"] {
            ring.push(chunk);
        }
        assert_eq!(ring.end_offset(), 13);
        assert_eq!(data(ring.read_at(5, 100)), b"fghijklm");
        assert_eq!(data(ring.read_at(7, 4)), b"hijk");
    }

    #[test]
    fn idle_ring_allocates_nothing() {
        let ring = Scrollback::new(1 << 20);
        assert!(ring.is_empty());
        assert_eq!(ring.bytes.capacity(), 0);
    }
}
