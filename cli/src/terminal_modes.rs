//! The modes a session's program switched this terminal into.
//!
//! These are the alternate screen, a hidden cursor, mouse reporting,
//! bracketed paste, application keys, the kitty keyboard protocol, a
//! scroll region, origin mode, autowrap, insert mode, reverse video and
//! the line-drawing character set. A real VT parser follows them in the
//! program's output. So detaching from, say, `vim` or `htop` switches them
//! back. The shell prompt then comes back on the normal screen, with a
//! cursor, scrolling the whole terminal, and clicks do not type escape
//! codes. A program that exits restores its own. Output cut off inside a
//! string (`ESC X`, `ESC P`, `ESC ]` without its end) would swallow what
//! follows it: every reset begins by ending it.

/// DEC private modes worth undoing, with the sequence that resets each.
const PRIVATE_MODES: &[(u16, &str)] = &[
    // The alternate screen, in its three spellings.
    (1049, "\x1b[?1049l"),
    (1047, "\x1b[?1047l"),
    (47, "\x1b[?47l"),
    // Mouse reporting and its encodings, then bracketed paste (2004).
    (1000, "\x1b[?1000l"),
    (1002, "\x1b[?1002l"),
    (1003, "\x1b[?1003l"),
    (1006, "\x1b[?1006l"),
    (1015, "\x1b[?1015l"),
    (2004, "\x1b[?2004l"),
    // Focus reports, and output held back until told (synchronized).
    (1004, "\x1b[?1004l"),
    (2026, "\x1b[?2026l"),
    // Application cursor keys, reverse video, origin mode.
    (1, "\x1b[?1l"),
    (5, "\x1b[?5l"),
    (6, "\x1b[?6l"),
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
    /// A scroll region was set (`CSI top ; bottom r`).
    scroll_region: bool,
    /// Autowrap was switched off (`CSI ? 7 l`).
    wrap_off: bool,
    /// Insert mode is on (`CSI 4 h`).
    insert: bool,
    /// G0 is the line-drawing set (`ESC ( 0`).
    line_drawing: bool,
    /// Any output was followed: it may have ended inside a string.
    followed: bool,
    /// What the program did to the kitty keyboard flags of the main and
    /// the alternate screen.
    ///
    /// Each screen has a stack of its own.
    keyboard: [Keyboard; 2],
}

/// What a program did to one screen's stack of kitty keyboard flags.
#[derive(Default, Clone, Copy)]
struct Keyboard {
    /// Entries it pushed (`CSI > flags u`) and has not popped
    /// (`CSI < n u`).
    ///
    /// The shell's own lie beneath.
    pushed: u16,
    /// It set flags in place (`CSI = flags u`) with none of its own
    /// pushed, so changing the shell's.
    set: bool,
}

impl Keyboard {
    /// What undoes it, on its screen.
    fn reset(self) -> String {
        let mut reset = String::new();
        if self.pushed > 0 {
            reset.push_str(&format!("\x1b[<{}u", self.pushed));
        }
        if self.set {
            reset.push_str("\x1b[=0;1u");
        }
        reset
    }
}

impl Modes {
    /// Whether the alternate screen is shown, in any of its spellings.
    fn alternate(&self) -> bool {
        self.on.iter().any(|mode| matches!(mode, 1049 | 1047 | 47))
    }

    /// The kitty keyboard protocol, on the stack of the screen shown.
    ///
    /// `CSI > flags u` pushes. `CSI < n u` pops n (1 if not given).
    /// `CSI = flags ; mode u` changes the top.
    fn keyboard(&mut self, marker: u8, params: &vte::Params) {
        let first = params
            .iter()
            .next()
            .and_then(|param| param.first().copied());
        let keyboard = &mut self.keyboard[usize::from(self.alternate())];
        match marker {
            b'>' => keyboard.pushed = keyboard.pushed.saturating_add(1),
            b'<' => {
                let popped = first.filter(|n| *n > 0).unwrap_or(1);
                keyboard.pushed = keyboard.pushed.saturating_sub(popped);
            }
            b'=' if keyboard.pushed == 0 => keyboard.set = true,
            _ => {}
        }
    }
}

impl vte::Perform for Modes {
    fn csi_dispatch(&mut self, params: &vte::Params, intermediates: &[u8], _: bool, action: char) {
        if let ([marker @ (b'>' | b'<' | b'=')], 'u') = (intermediates, action) {
            return self.keyboard(*marker, params);
        }
        match (intermediates, action) {
            ([], 'r') => {
                // With no parameters (or 0), the region is the whole screen.
                self.scroll_region = params
                    .iter()
                    .any(|param| param.first().is_some_and(|n| *n > 0));
                return;
            }
            ([], 'h' | 'l') => {
                if params.iter().any(|param| param.first() == Some(&4)) {
                    self.insert = action == 'h';
                }
                return;
            }
            _ => {}
        }
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
            } else if mode == 7 {
                self.wrap_off = !set;
            } else if PRIVATE_MODES.iter().any(|(known, _)| *known == mode) {
                self.on.retain(|on| *on != mode);
                if set {
                    self.on.push(mode);
                }
            }
        }
    }

    fn esc_dispatch(&mut self, intermediates: &[u8], _: bool, byte: u8) {
        match (intermediates, byte) {
            ([], b'=') => self.keypad_application = true,
            ([], b'>') => self.keypad_application = false,
            // RIS: a terminal reset undoes it all.
            ([], b'c') => *self = Self::default(),
            ([b'('], set) => self.line_drawing = set == b'0',
            _ => {}
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
        self.modes.followed |= !output.is_empty();
    }

    /// What switches the modes now on back off, latest first.
    ///
    /// The alternate screen is left after the modes set in it. The keyboard
    /// flags of each screen are undone while it is shown.
    pub fn reset(&self) -> String {
        let [main, alternate] = self.modes.keyboard;
        let alternate_shown = self.modes.alternate();
        let mut reset = if alternate_shown {
            alternate.reset()
        } else {
            main.reset()
        };
        reset.extend(
            self.modes
                .on
                .iter()
                .rev()
                .filter_map(|mode| PRIVATE_MODES.iter().find(|(known, _)| known == mode))
                .map(|(_, sequence)| *sequence),
        );
        if alternate_shown {
            reset.push_str(&main.reset());
        }
        if self.modes.keypad_application {
            reset.push_str("\x1b>");
        }
        if self.modes.cursor_hidden {
            reset.push_str("\x1b[?25h");
        }
        if self.modes.scroll_region {
            // Setting it homes the cursor: the cursor is kept.
            reset.push_str("\x1b7\x1b[r\x1b8");
        }
        if self.modes.wrap_off {
            reset.push_str("\x1b[?7h");
        }
        if self.modes.insert {
            reset.push_str("\x1b[4l");
        }
        if self.modes.line_drawing {
            reset.push_str("\x1b(B");
        }
        if self.modes.followed {
            // First, CAN ends any sequence the output stopped in the middle
            // of (ST, a string: `ESC X` swallows even CAN on some
            // terminals), which would swallow these. Colours and attributes
            // left set are reset too.
            reset.insert_str(0, "\x18\x1b\\");
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
        assert_eq!(modes.reset(), "", "nothing to undo for no output");
        modes.follow(b"plain");
        assert_eq!(
            modes.reset(),
            "\x18\x1b\\\x1b[0m",
            "plain output may have ended inside a string"
        );
        // As vim starts: alternate screen, bracketed paste, keypad, mouse;
        // split across reads.
        modes.follow(b"\x1b[?1049h\x1b[?20");
        modes.follow(b"04h\x1b=\x1b[?1000;1006h\x1b[?25l");
        assert_eq!(
            modes.reset(),
            "\x18\x1b\\\x1b[?1006l\x1b[?1000l\x1b[?2004l\x1b[?1049l\x1b>\x1b[?25h\x1b[0m"
        );
        // As it exits: all switched back by the program itself.
        modes.follow(b"\x1b[?1000;1006l\x1b[?2004l\x1b>\x1b[?25h\x1b[?1049l");
        assert_eq!(modes.reset(), "\x18\x1b\\\x1b[0m");
    }

    #[test]
    fn a_scroll_region_and_the_other_screen_modes_are_undone() {
        // As vim at 80x24 sets its scroll region, with line drawing,
        // insert mode and no autowrap; then output cut inside a string.
        let mut modes = TerminalModes::new();
        modes.follow(b"\x1b[1;24r\x1b(0q\x1b[4h\x1b[?7l\x1b[?6h\x1bXunended");
        assert_eq!(
            modes.reset(),
            "\x18\x1b\\\x1b[?6l\x1b7\x1b[r\x1b8\x1b[?7h\x1b[4l\x1b(B\x1b[0m"
        );
        // Set back by the program, or by a terminal reset: nothing left.
        modes.follow(b"\x1b\\\x1b[r\x1b(B\x1b[4l\x1b[?7h\x1b[?6l");
        assert_eq!(modes.reset(), "\x18\x1b\\\x1b[0m");
        modes.follow(b"\x1b[5;9r\x1bc");
        assert_eq!(modes.reset(), "\x18\x1b\\\x1b[0m");
    }

    #[test]
    fn kitty_keyboard_flags_pushed_are_popped_and_those_set_cleared() {
        // As helix or neovim start: alternate screen, then flags pushed,
        // twice over; one popped again.
        let mut modes = TerminalModes::new();
        modes.follow(b"\x1b[?1049h\x1b[>1u\x1b[>3u\x1b[<u");
        assert_eq!(modes.reset(), "\x18\x1b\\\x1b[<1u\x1b[?1049l\x1b[0m");
        modes.follow(b"\x1b[<5u");
        assert_eq!(
            modes.reset(),
            "\x18\x1b\\\x1b[?1049l\x1b[0m",
            "popped past its own"
        );
        // Flags changed in place with none pushed are the shell's: cleared.
        let mut modes = TerminalModes::new();
        modes.follow(b"\x1b[=1;1u\x1b[?u");
        assert_eq!(modes.reset(), "\x18\x1b\\\x1b[=0;1u\x1b[0m");
        // Changed in place on top of its own push: popping undoes it.
        let mut modes = TerminalModes::new();
        modes.follow(b"\x1b[>1u\x1b[=5u");
        assert_eq!(modes.reset(), "\x18\x1b\\\x1b[<1u\x1b[0m");
        // Each screen has its own stack: pushed on the main screen, then
        // once more on the alternate one; each popped while it is shown.
        let mut modes = TerminalModes::new();
        modes.follow(b"\x1b[>1u\x1b[?1049h\x1b[>3u");
        assert_eq!(
            modes.reset(),
            "\x18\x1b\\\x1b[<1u\x1b[?1049l\x1b[<1u\x1b[0m"
        );
        // Left the alternate screen with its push still there: that stack
        // is not the shell's to touch.
        modes.follow(b"\x1b[?1049l");
        assert_eq!(modes.reset(), "\x18\x1b\\\x1b[<1u\x1b[0m");
    }
}
