//! What a session's terminal shows (`GetScreen`, and attach streams that
//! start with the screen).
//!
//! A terminal emulator (vt100) reads the output the scrollback holds, at
//! the session's size, when a screen is asked for: nothing is spent on it
//! while nobody asks, and output is never slowed by it. The screen is
//! exact while the scrollback holds the output from its first byte. Once
//! older output has been let go, it is said not to be (`complete: false`);
//! the emulator then starts from the oldest byte held, in the modes the
//! output had switched on by then (`modes.rs`), so a full-screen program
//! that redraws is drawn right, on the alternate screen if it is there.

use holdfast_api::proto::daemon::v1 as pb;

use crate::modes::Modes;

/// Most lines the emulator keeps of what scrolled off the top: 200 rows
/// of 200 columns are 1.3 MB, and only for a session that was looked at.
pub const SCROLLBACK_LINES: usize = 200;

/// Output to read, with the session's size and title at that moment.
pub struct HeldOutput {
    /// Output the emulator has not read (all the scrollback holds, if it
    /// has to start again), oldest first.
    pub bytes: prost::bytes::Bytes,
    /// The offset of `bytes[0]` in the session's output.
    pub start: u64,
    /// The modes the output had switched on by `start`, if known.
    pub modes_at_start: Option<Modes>,
    /// The terminal's width.
    pub cols: u16,
    /// The terminal's height.
    pub rows: u16,
    /// The last title the program set.
    pub title: String,
}

/// A session's terminal emulator, and how far it has read.
pub struct Emulator {
    parser: vt100::Parser,
    /// The offset it started reading at: 0 if it read every byte.
    origin: u64,
    /// The offset after the last byte it read.
    read_to: u64,
    /// The size it draws at.
    size: (u16, u16),
}

impl Emulator {
    /// The offset after the last byte it read.
    pub fn read_to(&self) -> u64 {
        self.read_to
    }
}

/// The screen after `held`, read by the session's `emulator` (made, or
/// made again, when it has none, missed output, or has another size),
/// with up to `scrollback_lines` lines that scrolled off its top.
pub fn screen(
    emulator: &mut Option<Box<Emulator>>,
    held: HeldOutput,
    scrollback_lines: usize,
) -> pb::GetScreenResponse {
    let (Some(rows), Some(cols)) = (
        std::num::NonZeroU16::new(held.rows),
        std::num::NonZeroU16::new(held.cols),
    ) else {
        return pb::GetScreenResponse::default();
    };
    let size = (held.cols, held.rows);
    let emulator = match emulator {
        Some(emulator) if emulator.read_to == held.start && emulator.size == size => emulator,
        // None yet, output it missed, or another size: it starts again from
        // what is held, in the modes switched on before it.
        _ => {
            let mut parser = vt100::Parser::new(rows, cols, SCROLLBACK_LINES);
            if held.start > 0
                && let Some(modes) = held.modes_at_start
            {
                parser.process(modes.switching_on().as_bytes());
            }
            emulator.insert(Box::new(Emulator {
                parser,
                origin: held.start,
                read_to: held.start,
                size,
            }))
        }
    };
    emulator.parser.process(&held.bytes);
    emulator.read_to = held.start + held.bytes.len() as u64;
    let scrollback = scrolled_off(&mut emulator.parser, scrollback_lines, held.cols);
    let screen = emulator.parser.screen();
    let lines = screen
        .rows(0, held.cols)
        .map(|row| row.trim_end().to_owned())
        .collect();
    let (cursor_row, cursor_col) = screen.cursor_position();
    pb::GetScreenResponse {
        lines,
        cursor_row: cursor_row.into(),
        cursor_col: cursor_col.into(),
        cursor_visible: !screen.hide_cursor(),
        title: held.title,
        alternate_screen: screen.alternate_screen(),
        cols: held.cols.into(),
        rows: held.rows.into(),
        output_offset: emulator.read_to,
        rendering: rendering(screen).into_bytes().into(),
        complete: emulator.origin == 0,
        scrollback,
    }
}

/// Whether a replay of the held output would not draw `screen` right, so
/// an attach that may choose starts with the screen.
pub fn replay_falls_short(screen: &pb::GetScreenResponse) -> bool {
    screen.alternate_screen || !screen.complete
}

/// Escape sequences that draw `screen` on a terminal: on the alternate
/// screen if it is there, with no scroll region (a program that set one
/// sets it again as it redraws), then its text, attributes, cursor and
/// input modes.
fn rendering(screen: &vt100::Screen) -> String {
    let mut drawn = String::new();
    if screen.alternate_screen() {
        drawn.push_str("\x1b[?1049h");
    }
    drawn.push_str("\x1b[r");
    drawn.push_str(&screen.state_formatted());
    drawn
}

/// Up to `wanted` lines that scrolled off the top, oldest first.
fn scrolled_off(parser: &mut vt100::Parser, wanted: usize, cols: u16) -> Vec<String> {
    let screen = parser.screen_mut();
    let rows = usize::from(screen.size().0.get());
    let mut back = wanted.min(screen.scrollback_len());
    let mut lines = Vec::with_capacity(back);
    // Scrolled `back` lines up, the screen's first row is the line `back`
    // above its top.
    while back > 0 {
        screen.set_scrollback(back);
        let take = back.min(rows);
        lines.extend(
            screen
                .rows(0, cols)
                .take(take)
                .map(|row| row.trim_end().to_owned()),
        );
        back -= take;
    }
    screen.set_scrollback(0);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(bytes: &[u8], start: u64) -> HeldOutput {
        HeldOutput {
            bytes: prost::bytes::Bytes::copy_from_slice(bytes),
            start,
            modes_at_start: None,
            cols: 20,
            rows: 4,
            title: "t".into(),
        }
    }

    /// Text lands where the program put it; the cursor and modes are read.
    #[test]
    fn the_screen_is_what_the_output_drew() {
        let mut emulator = None;
        let drawn = b"one\r\ntwo\x1b[4;3Hx\x1b[?25l\x1b[?1049h";
        let shown = screen(&mut emulator, held(drawn, 0), 0);
        assert_eq!(
            shown.lines,
            ["", "", "", ""],
            "the alternate screen is blank"
        );
        assert!(shown.alternate_screen && !shown.cursor_visible && shown.complete);
        assert!(shown.rendering.starts_with(b"\x1b[?1049h"));
        let mut emulator = None;
        let shown = screen(&mut emulator, held(b"one\r\ntwo\x1b[4;3Hx", 7), 0);
        assert_eq!(shown.lines, ["one", "two", "", "  x"]);
        assert_eq!((shown.cursor_row, shown.cursor_col), (3, 3));
        assert_eq!(shown.output_offset, 7 + 15);
        assert!(!shown.complete, "output before offset 7 is not held");
        // The rendering, read by another emulator, draws the same screen.
        let again = screen(&mut None, held(&shown.rendering, 0), 0);
        assert_eq!(again.lines, shown.lines);
        // Fed on from where it stopped, it reads only what is new.
        let more = screen(&mut emulator, held(b"\x1b[1;1HONE", 22), 0);
        assert_eq!(more.lines, ["ONE", "two", "", "  x"]);
        // Output it missed: it starts again from what is held.
        let gap = screen(&mut emulator, held(b"fresh", 100), 0);
        assert_eq!(gap.lines, ["fresh", "", "", ""]);
        assert_eq!(gap.output_offset, 105);
    }

    /// Starting over after output was let go, the modes it switched on
    /// before still hold: a full-screen program stays on its screen.
    #[test]
    fn a_screen_started_over_keeps_the_modes_let_go() {
        let mut frame = held(b"\x1b[Hframe 9", 1 << 20);
        let mut modes = Modes::default();
        modes.esc(b"", b'=');
        let alternate = {
            let mut follow = ModesOf(modes);
            vte::Parser::new().advance(&mut follow, b"\x1b[?1049h\x1b[?25l");
            follow.0
        };
        frame.modes_at_start = Some(alternate);
        let shown = screen(&mut None, frame, 0);
        assert!(shown.alternate_screen && !shown.cursor_visible && !shown.complete);
        assert_eq!(shown.lines[0], "frame 9");
        assert!(replay_falls_short(&shown));
    }

    struct ModesOf(Modes);
    impl vte::Perform for ModesOf {
        fn csi_dispatch(&mut self, params: &vte::Params, i: &[u8], _: bool, action: char) {
            self.0.csi(params, i, action);
        }
    }

    /// Lines scrolled off the top are there to ask for, oldest first.
    #[test]
    fn scrolled_off_lines_are_kept_to_a_bound() {
        let lines: String = (1..=300).map(|n| format!("line {n}\r\n")).collect();
        let shown = screen(&mut None, held(lines.as_bytes(), 0), 7);
        assert_eq!(shown.lines, ["line 298", "line 299", "line 300", ""]);
        let expected: Vec<String> = (291..=297).map(|n| format!("line {n}")).collect();
        assert_eq!(shown.scrollback, expected);
        let all = screen(&mut None, held(lines.as_bytes(), 0), 10_000);
        assert_eq!(all.scrollback.len(), SCROLLBACK_LINES);
        assert_eq!(all.scrollback.last().map(String::as_str), Some("line 297"));
        assert!(!replay_falls_short(&all));
    }
}
