//! The terminal modes a session's output switched on, and where.
//!
//! A screen drawn from the scrollback alone starts where the ring starts.
//! Once older output is let go, a switch it held is gone with it: `top`,
//! after a megabyte of frames, would be drawn on the normal screen. The
//! title tracker's parser already reads every escape sequence of the
//! output as it arrives, so it notes these modes too, for nothing more
//! than a few comparisons per sequence; each change is kept with the
//! offset it took effect by, for as long as the ring holds output after
//! it. A screen that starts over from the ring's oldest byte first sets
//! the modes the output had switched on by then.

use std::collections::VecDeque;

/// The DEC private modes followed, by number, in the order their bits
/// take in [`Modes`].
const PRIVATE: &[u16] = &[
    1049, 1047, 47, 25, 1, 2004, 1000, 1002, 1003, 1005, 1006, 1015, 1004,
];

/// Most mode changes kept for one session: a program that toggles its
/// cursor on every frame must not grow the daemon.
const MAX_CHANGES: usize = 1024;

/// Which modes are switched on: one bit per entry of `PRIVATE`, and one
/// for the application keypad.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Modes(u32);

/// The bit of the application keypad (`ESC =`).
const KEYPAD: u32 = 1 << 31;

/// The bit of DEC private mode 25: the cursor shows.
const CURSOR_SHOWN: u32 = 1 << 3;

impl Default for Modes {
    /// A fresh terminal's: the cursor shows, nothing else is on.
    fn default() -> Self {
        Self(CURSOR_SHOWN)
    }
}

impl Modes {
    /// Notes a `CSI ? n h` or `CSI ? n l`.
    pub fn csi(&mut self, params: &vte::Params, intermediates: &[u8], action: char) {
        if intermediates != b"?" || !matches!(action, 'h' | 'l') {
            return;
        }
        for mode in params.iter().filter_map(|param| param.first()) {
            if let Some(bit) = PRIVATE.iter().position(|known| known == mode) {
                if action == 'h' {
                    self.0 |= 1 << bit;
                } else {
                    self.0 &= !(1 << bit);
                }
            }
        }
    }

    /// Notes an `ESC =` or `ESC >`.
    pub fn esc(&mut self, intermediates: &[u8], byte: u8) {
        match (intermediates, byte) {
            ([], b'=') => self.0 |= KEYPAD,
            ([], b'>') => self.0 &= !KEYPAD,
            _ => {}
        }
    }

    /// The sequences that switch a fresh terminal into these modes.
    pub fn switching_on(self) -> String {
        let mut on = String::new();
        for (bit, mode) in PRIVATE.iter().enumerate() {
            let set = self.0 & (1 << bit) != 0;
            let default = *mode == 25;
            if set != default {
                on.push_str(&format!("\x1b[?{mode}{}", if set { 'h' } else { 'l' }));
            }
        }
        if self.0 & KEYPAD != 0 {
            on.push_str("\x1b=");
        }
        on
    }
}

/// A session's mode changes, each with the output offset it held from.
#[derive(Debug, Default)]
pub struct ModeChanges {
    /// Oldest first; the first may be from before the ring's oldest byte.
    changes: VecDeque<(u64, Modes)>,
    /// Changes were dropped (too many): the modes before the oldest kept
    /// are not known.
    forgot: bool,
}

impl ModeChanges {
    /// Changes of output before this process: not known (the state handed
    /// on at an upgrade does not carry them).
    pub fn unknown() -> Self {
        Self {
            changes: VecDeque::new(),
            forgot: true,
        }
    }

    /// Notes `modes` as those in force from `offset` on, if they changed.
    ///
    /// Changes no longer needed for output from `held_from` on go.
    pub fn note(&mut self, offset: u64, modes: Modes, held_from: u64) {
        let last = self.changes.back().map_or(Modes::default(), |(_, m)| *m);
        if last != modes {
            self.changes.push_back((offset, modes));
        }
        // The change in force at `held_from` is the last at or before it.
        while self.changes.get(1).is_some_and(|(at, _)| *at <= held_from) {
            self.changes.pop_front();
        }
        if self.changes.len() > MAX_CHANGES {
            self.changes.pop_front();
            self.forgot = true;
        }
    }

    /// The modes in force at `offset`, if known.
    pub fn at(&self, offset: u64) -> Option<Modes> {
        match self.changes.iter().rev().find(|(at, _)| *at <= offset) {
            Some((_, modes)) => Some(*modes),
            None if self.forgot => None,
            None => Some(Modes::default()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fed(bytes: &[u8]) -> Modes {
        struct Follow(Modes);
        impl vte::Perform for Follow {
            fn csi_dispatch(&mut self, params: &vte::Params, i: &[u8], _: bool, action: char) {
                self.0.csi(params, i, action);
            }
            fn esc_dispatch(&mut self, i: &[u8], _: bool, byte: u8) {
                self.0.esc(i, byte);
            }
        }
        let mut follow = Follow(Modes::default());
        vte::Parser::new().advance(&mut follow, bytes);
        follow.0
    }

    #[test]
    fn what_was_switched_on_is_switched_on_again() {
        assert_eq!(Modes::default().switching_on(), "");
        let top = fed(b"\x1b[?1049h\x1b[?25l\x1b=\x1b[?1000;1006hframe");
        assert_eq!(
            top.switching_on(),
            "\x1b[?1049h\x1b[?25l\x1b[?1000h\x1b[?1006h\x1b="
        );
        assert_eq!(fed(top.switching_on().as_bytes()), top);
        let left = fed(b"\x1b[?1049h\x1b[?25l\x1b[?1049l\x1b[?25h");
        assert_eq!(left, Modes::default());
    }

    #[test]
    fn the_modes_at_an_offset_are_the_last_change_before_it() {
        let mut changes = ModeChanges::default();
        let alternate = fed(b"\x1b[?1049h");
        changes.note(10, alternate, 0);
        changes.note(20, alternate, 0);
        changes.note(30, Modes::default(), 0);
        assert_eq!(changes.at(5), Some(Modes::default()));
        assert_eq!(changes.at(15), Some(alternate));
        assert_eq!(changes.at(35), Some(Modes::default()));
        // The ring now holds output from 25: the change at 10 is still the
        // one in force there, and is kept.
        changes.note(40, alternate, 25);
        assert_eq!(changes.at(25), Some(alternate));
        assert_eq!(changes.changes.len(), 3);
        // Toggled without end: bounded, and then unknown before the oldest.
        let mut changes = ModeChanges::default();
        for at in 0..3000 {
            let modes = if at % 2 == 0 {
                alternate
            } else {
                Modes::default()
            };
            changes.note(at + 1, modes, 0);
        }
        assert_eq!(changes.changes.len(), MAX_CHANGES);
        assert_eq!(changes.at(0), None);
        assert_eq!(changes.at(3000), Some(Modes::default()));
    }
}
