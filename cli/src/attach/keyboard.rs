//! This process's input while attached: keys, the detach key, and the
//! end of input that is not a terminal.

use anyhow::Context;
use tokio::io::AsyncReadExt;

use super::DetachKey;

/// What was read from the keyboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Keys {
    /// Keys, added to those to send.
    Typed,
    /// The detach key, after the keys before it were added.
    Detach,
    /// The input ended (it is not a terminal).
    Ended,
}

/// How this process's input is taken.
#[derive(Debug, Clone, Copy)]
pub(super) struct InputRules {
    /// The key that detaches, on a terminal.
    pub(super) detach_key: DetachKey,
    /// What the end of input that is not a terminal does.
    pub(super) end: InputEnd,
    /// Keys but the detach key go nowhere.
    pub(super) read_only: bool,
}

/// What the end of input that is not a terminal does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum InputEnd {
    /// Nothing: the session was there before, its input is not ours.
    Kept,
    /// The end-of-file key goes after it.
    ///
    /// This is for a new session's input, which its program reads to the
    /// end. `docker run -i` closes its input the same way.
    Passed,
}

/// This process's input, and keys typed while no session took them.
pub(super) struct Keyboard {
    stdin: tokio::io::Stdin,
    pub(super) buffer: Box<[u8; 4096]>,
    detach_key: DetachKey,
    /// Input that is not a terminal (a file, a pipe, /dev/null) may end
    /// long before the program does.
    ///
    /// The output is still shown to the end.
    pub(super) open: bool,
    /// Keys typed and not sent yet (attaching again, or refused).
    pub(super) typed: Vec<u8>,
    input_end: InputEnd,
    /// The last byte read.
    last: Option<u8>,
    /// Keys are dropped as read (a read-only attach).
    dropped: bool,
}

/// Most keys held while they cannot be sent: the most one write may carry.
///
/// Beyond it the keyboard is left unread, and the terminal holds what
/// comes.
pub(super) const MAX_HELD_KEYS: usize = 1 << 20;

impl Keyboard {
    /// Whether to read the keyboard now: while a whole read still fits
    /// beside the keys held.
    pub(super) fn takes_more(&self) -> bool {
        self.open && self.typed.len() + self.buffer.len() <= MAX_HELD_KEYS
    }

    pub(super) fn new(detach_key: DetachKey, input_end: InputEnd, dropped: bool) -> Self {
        Self {
            stdin: tokio::io::stdin(),
            buffer: Box::new([0; 4096]),
            detach_key,
            open: true,
            typed: Vec::new(),
            input_end,
            last: None,
            dropped,
        }
    }

    /// Reads the keyboard, adding what was typed (up to the detach key)
    /// to the keys to send.
    pub(super) async fn read(&mut self) -> anyhow::Result<Keys> {
        let read = self
            .stdin
            .read(&mut self.buffer[..])
            .await
            .context("reading the keyboard")?;
        if read == 0 {
            self.open = false;
            if self.input_end == InputEnd::Passed {
                self.typed.extend_from_slice(end_of_input(self.last));
            }
            return Ok(Keys::Ended);
        }
        let typed = &self.buffer[..read];
        self.last = typed.last().copied();
        let detach_at = self
            .detach_key
            .0
            .and_then(|key| typed.iter().position(|byte| *byte == key));
        if !self.dropped {
            self.typed
                .extend_from_slice(&typed[..detach_at.unwrap_or(read)]);
        }
        Ok(if detach_at.is_some() {
            Keys::Detach
        } else {
            Keys::Typed
        })
    }
}

/// The end-of-file key (Ctrl-D), as a terminal's user types it.
///
/// It ends input that ended after `last`. At the start of a line, it is the
/// end. After part of a line, it first hands over that part, so it goes
/// twice.
pub(super) fn end_of_input(last: Option<u8>) -> &'static [u8] {
    match last {
        None | Some(b'\n') => b"\x04",
        Some(_) => b"\x04\x04",
    }
}
