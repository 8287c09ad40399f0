//! Input a session's program has not read yet.
//!
//! A terminal's input queue holds a few KiB. Take a paste larger than that,
//! into a program busy with something else. Its `Write` would wait until
//! the program reads. A caller with a deadline would give up half way, not
//! knowing how much was written. The host-service has a deadline for every
//! daemon call.
//!
//! So the daemon takes input as tmux does. What the terminal does not take
//! at once waits here, in order, to be written as the program reads. The
//! write is answered at once. The queue is bounded. A write that does not
//! fit is refused whole, so a refused write took nothing and may be sent
//! again.

use std::collections::VecDeque;

use prost::bytes::Bytes;

use crate::limits::MAX_WAITING_BYTES;

/// A write refused for want of room: this many bytes wait already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full {
    /// Bytes waiting for the program.
    pub waiting: usize,
}

/// The input waiting for one program, oldest first.
#[derive(Debug, Default)]
pub struct InputQueue {
    chunks: VecDeque<Bytes>,
    waiting: usize,
    /// Whether a task is writing the waiting input to the terminal.
    ///
    /// While one is, every write joins the queue, to keep the order.
    pub draining: bool,
}

impl InputQueue {
    /// Takes all of `data` to wait its turn, or none of it.
    pub fn admit(&mut self, data: &[u8]) -> Result<(), Full> {
        if self.waiting + data.len() > MAX_WAITING_BYTES {
            return Err(Full {
                waiting: self.waiting,
            });
        }
        if !data.is_empty() {
            self.waiting += data.len();
            self.chunks.push_back(Bytes::copy_from_slice(data));
        }
        Ok(())
    }

    /// The oldest bytes waiting.
    pub fn front(&self) -> Option<&[u8]> {
        self.chunks.front().map(|chunk| &chunk[..])
    }

    /// Notes that the terminal took `written` bytes from the front.
    pub fn consume(&mut self, written: usize) {
        let Some(front) = self.chunks.front_mut() else {
            return;
        };
        let written = written.min(front.len());
        self.waiting -= written;
        if written == front.len() {
            self.chunks.pop_front();
        } else {
            let _ = front.split_to(written);
        }
    }

    /// Drops what waits (the program is gone) and stops draining.
    /// Every byte waiting, in order.
    pub fn contents(&self) -> Vec<u8> {
        self.chunks
            .iter()
            .flat_map(|chunk| chunk.iter().copied())
            .collect()
    }

    pub fn clear(&mut self) {
        self.chunks.clear();
        self.waiting = 0;
        self.draining = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_waits_in_order_and_a_write_that_does_not_fit_takes_nothing() {
        let mut queue = InputQueue::default();
        queue.admit(b"abc").unwrap();
        queue.admit(b"de").unwrap();
        queue.consume(2);
        assert_eq!(queue.front(), Some(&b"c"[..]));
        queue.consume(1);
        assert_eq!(queue.front(), Some(&b"de"[..]));

        let big = vec![b'x'; MAX_WAITING_BYTES - 2];
        queue.admit(&big).unwrap();
        assert_eq!(
            queue.admit(b"y"),
            Err(Full {
                waiting: MAX_WAITING_BYTES
            })
        );
        queue.consume(2);
        queue.admit(b"y").unwrap();
        queue.clear();
        assert_eq!(queue.front(), None);
        assert!(
            queue.admit(&vec![0; MAX_WAITING_BYTES]).is_ok(),
            "one largest write fits"
        );
    }
}
