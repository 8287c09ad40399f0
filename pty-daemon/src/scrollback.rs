//! A bounded ring of a session's most recent output.
//!
//! It is addressed by absolute byte offsets, so that a client can resume
//! exactly where it left off. The byte at offset `o` lives at `o % capacity`
//! of a memfd the daemon maps. The memfd outlives the program image: an
//! upgrade hands its descriptor to the next image, which maps the same
//! pages, so no ring is copied on either side of the switch.

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;

use memmap2::MmapMut;
use prost::bytes::Bytes;
use rustix::fs::MemfdFlags;

/// The most recent `capacity` bytes of output.
///
/// Offsets count every byte the session ever produced, so they stay valid
/// after older bytes are evicted.
#[derive(Debug)]
pub struct Scrollback {
    /// The memfd the ring lives in. Its pages are allocated as output
    /// arrives, so idle sessions cost a descriptor and no memory.
    file: File,
    /// `file`, mapped: `capacity` bytes.
    map: MmapMut,
    /// Absolute offset of the oldest byte held.
    start: u64,
    /// Absolute offset the next byte will get.
    end: u64,
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
    pub fn new(capacity: usize) -> io::Result<Self> {
        let capacity = capacity.max(1);
        let fd = rustix::fs::memfd_create("holdfast-scrollback", MemfdFlags::CLOEXEC)?;
        rustix::fs::ftruncate(&fd, capacity as u64)?;
        Self::mapped(fd.into(), capacity, 0, 0)
    }

    /// A ring of `capacity` bytes holding `bytes`, the first at `start`.
    ///
    /// Only the last `capacity` of them are kept, as pushing them would.
    pub fn restored(capacity: usize, start: u64, bytes: &[u8]) -> io::Result<Self> {
        let mut ring = Self::new(capacity)?;
        (ring.start, ring.end) = (start, start);
        ring.push(bytes);
        Ok(ring)
    }

    /// The ring a previous image kept in `fd`, `saved_capacity` bytes long,
    /// holding offsets `start..end`.
    ///
    /// With another capacity now, its bytes are copied into a new ring of
    /// `capacity`, as pushing them would.
    pub fn adopt(
        fd: OwnedFd,
        saved_capacity: usize,
        (start, end): (u64, u64),
        capacity: usize,
    ) -> io::Result<Self> {
        let file = File::from(fd);
        let size = file.metadata()?.len();
        let consistent = saved_capacity > 0
            && size == saved_capacity as u64
            && start <= end
            && end - start <= saved_capacity as u64;
        if !consistent {
            return Err(io::Error::other(format!(
                "a kept ring of {size} bytes cannot hold offsets {start}..{end} in {saved_capacity}"
            )));
        }
        let kept = Self::mapped(file, saved_capacity, start, end)?;
        if saved_capacity == capacity.max(1) {
            return Ok(kept);
        }
        let mut ring = Self::new(capacity)?;
        (ring.start, ring.end) = (start, start);
        let (front, back) = kept.as_slices();
        ring.push(front);
        ring.push(back);
        Ok(ring)
    }

    fn mapped(file: File, capacity: usize, start: u64, end: u64) -> io::Result<Self> {
        // SAFETY: the memfd is this ring's alone (made here, or handed over
        // by the previous image, which is gone), and it is never shrunk.
        let map = unsafe { memmap2::MmapOptions::new().len(capacity).map_mut(&file)? };
        Ok(Self {
            file,
            map,
            start,
            end,
            capacity,
        })
    }

    /// The memfd the ring lives in, to keep across an upgrade's exec.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// The held bytes, oldest first, in two pieces (the ring's wrap).
    pub fn as_slices(&self) -> (&[u8], &[u8]) {
        if self.is_empty() {
            return (&[], &[]);
        }
        let from = self.position(self.start);
        let to = self.position(self.end);
        if from < to {
            (&self.map[from..to], &[])
        } else {
            (&self.map[from..], &self.map[..to])
        }
    }

    /// Where offset `offset` lives in the mapping.
    fn position(&self, offset: u64) -> usize {
        // Below `capacity`, a usize.
        (offset % self.capacity as u64) as usize
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
        self.end
    }

    /// Bytes held now.
    pub fn len(&self) -> usize {
        // At most `capacity`, a usize.
        (self.end - self.start) as usize
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }

    /// Appends output, evicting the oldest bytes beyond the capacity.
    pub fn push(&mut self, data: &[u8]) {
        let end = self.end + data.len() as u64;
        // Only the last `capacity` bytes can be held.
        let kept = &data[data.len().saturating_sub(self.capacity)..];
        let at = self.position(end - kept.len() as u64);
        let first = kept.len().min(self.capacity - at);
        self.map[at..at + first].copy_from_slice(&kept[..first]);
        self.map[..kept.len() - first].copy_from_slice(&kept[first..]);
        self.end = end;
        self.start = self.start.max(end.saturating_sub(self.capacity as u64));
    }

    /// Up to `max` bytes starting at `offset`.
    pub fn read_at(&self, offset: u64, max: usize) -> ReadAt {
        if offset < self.start {
            return ReadAt::Evicted {
                to_offset: self.start,
            };
        }
        if offset >= self.end {
            return ReadAt::Pending;
        }
        // In range, so the difference is below `len()` and fits usize.
        let from = (offset - self.start) as usize;
        let to = self.len().min(from.saturating_add(max.max(1)));
        let (front, back) = self.as_slices();
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
        let mut ring = Scrollback::new(16).expect("ring");
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
        let mut ring = Scrollback::new(8).expect("ring");
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
        let mut ring = Scrollback::new(8).expect("ring");
        for chunk in [&b"abcde"[..], b"fgh", b"ijk", b"lm"] {
            ring.push(chunk);
        }
        assert_eq!(ring.end_offset(), 13);
        assert_eq!(data(ring.read_at(5, 100)), b"fghijklm");
        assert_eq!(data(ring.read_at(7, 4)), b"hijk");
    }

    #[test]
    fn idle_ring_allocates_nothing() {
        let mut ring = Scrollback::new(1 << 20).expect("ring");
        assert!(ring.is_empty());
        let blocks = |ring: &Scrollback| {
            use std::os::unix::fs::MetadataExt;
            ring.file().metadata().expect("metadata").blocks()
        };
        assert_eq!(blocks(&ring), 0);
        ring.push(b"x");
        assert!(blocks(&ring) > 0, "a written ring holds pages");
    }

    #[test]
    fn an_adopted_ring_holds_the_same_bytes() {
        let mut ring = Scrollback::new(8).expect("ring");
        ring.push(b"0123456789ab");
        let fd = OwnedFd::from(ring.file().try_clone().expect("dup"));
        let (start, end) = (ring.start_offset(), ring.end_offset());
        let same = Scrollback::adopt(fd, 8, (start, end), 8).expect("adopt");
        assert_eq!(data(same.read_at(4, 100)), b"456789ab");
        let fd = OwnedFd::from(ring.file().try_clone().expect("dup"));
        let smaller = Scrollback::adopt(fd, 8, (start, end), 3).expect("adopt");
        assert_eq!(smaller.start_offset(), 9);
        assert_eq!(data(smaller.read_at(9, 100)), b"9ab");
        let fd = OwnedFd::from(ring.file().try_clone().expect("dup"));
        assert!(
            Scrollback::adopt(fd, 8, (0, 12), 8).is_err(),
            "more than it holds"
        );
    }

    #[test]
    fn a_push_longer_than_the_ring_keeps_its_tail() {
        let mut ring = Scrollback::new(4).expect("ring");
        ring.push(b"ab");
        ring.push(b"0123456");
        assert_eq!((ring.start_offset(), ring.end_offset()), (5, 9));
        assert_eq!(data(ring.read_at(5, 100)), b"3456");
    }
}
