//! The modes a session's program switched this terminal into (the
//! alternate screen, a hidden cursor, mouse reporting, bracketed paste,
//! application keys), followed in its output with a real VT parser, so
//! that detaching from, say, `vim` or `htop` switches them back: the shell
//! prompt then comes back on the normal screen, with a cursor, and clicks
//! do not type escape codes. A program that exits restores its own.

/// DEC private modes worth undoing, with the sequence that resets each.
const PRIVATE_MODES: &[(u16, &str)] = &[
    // The alternate screen, in its three spellings.
    (1049, "\x1b[?1049l"),
    (1047, "\x1b[?1047l"),
    (47, "\x1b[?47l"),
    // Mouse reporting and its encodings.
    (1000, "\x1b[?1000l"),
    (1002, "\x1b[?1002l"),
    (1003, "\x1b[?1003l"),
    (1006, "\x1b[?1006l"),
    (1015, "\x1b[?1015l"),
    (2004, "\x1b[?2004l"),
    // Focus reports, and output held back until told (synchronized).
    (1004, "\x1b[?1004l"),
    (2026, "\x1b[?2026l"),
    // Application cursor keys.
    (1, "\x1b[?1l"),
];

/// Follows output and knows which modes are switched on now.
pub struct TerminalModes {
    parser: vte::Parser,
    modes: Modes,
}

#[derive(Default)]
struct Modes {
    /// DEC private modes switched on (`CSI ? n h`) and not off since.
    on: Vec<u16>,
    /// The cursor was hidden (`CSI ? 25 l`).
    cursor_hidden: bool,
    /// The keypad sends application sequences (`ESC =`).
    keypad_application: bool,
}

impl vte::Perform for Modes {
    fn csi_dispatch(&mut self, params: &vte::Params, intermediates: &[u8], _: bool, action: char) {
        if intermediates != b"?" || !matches!(action, 'h' | 'l') {
            return;
        }
        let set = action == 'h';
        for param in params.iter() {
            let Some(&mode) = param.first() else {
                continue;
            };
            if mode == 25 {
                self.cursor_hidden = !set;
            } else if PRIVATE_MODES.iter().any(|(known, _)| *known == mode) {
                self.on.retain(|on| *on != mode);
                if set {
                    self.on.push(mode);
                }
            }
        }
    }

    fn esc_dispatch(&mut self, intermediates: &[u8], _: bool, byte: u8) {
        if intermediates.is_empty() {
            match byte {
                b'=' => self.keypad_application = true,
                b'>' => self.keypad_application = false,
                _ => {}
            }
        }
    }
}

impl TerminalModes {
    pub fn new() -> Self {
        Self {
            parser: vte::Parser::new(),
            modes: Modes::default(),
        }
    }

    /// Follows output shown on the terminal.
    pub fn follow(&mut self, output: &[u8]) {
        self.parser.advance(&mut self.modes, output);
    }

    /// What switches the modes now on back off, latest first (the
    /// alternate screen is left after the modes set in it).
    pub fn reset(&self) -> String {
        let mut reset: String = self
            .modes
            .on
            .iter()
            .rev()
            .filter_map(|mode| PRIVATE_MODES.iter().find(|(known, _)| known == mode))
            .map(|(_, sequence)| *sequence)
            .collect();
        if self.modes.keypad_application {
            reset.push_str("\x1b>");
        }
        if self.modes.cursor_hidden {
            reset.push_str("\x1b[?25h");
        }
        if !reset.is_empty() {
            // Colours and attributes left set, too; and first, CAN ends
            // any sequence the output stopped in the middle of, which
            // would swallow these.
            reset.insert(0, '\x18');
            reset.push_str("\x1b[0m");
        }
        reset
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_full_screen_program_switched_on_is_switched_off() {
        let mut modes = TerminalModes::new();
        assert_eq!(modes.reset(), "", "nothing to undo for plain output");
        // As vim starts: alternate screen, bracketed paste, keypad, mouse;
        // split across reads.
        modes.follow(b"\x1b[?1049h\x1b[?20");
        modes.follow(b"04h\x1b=\x1b[?1000;1006h\x1b[?25l");
        assert_eq!(
            modes.reset(),
            "\x18\x1b[?1006l\x1b[?1000l\x1b[?2004l\x1b[?1049l\x1b>\x1b[?25h\x1b[0m"
        );
        // As it exits: all switched back by the program itself.
        modes.follow(b"\x1b[?1000;1006l\x1b[?2004l\x1b>\x1b[?25h\x1b[?1049l");
        assert_eq!(modes.reset(), "");
    }
}
