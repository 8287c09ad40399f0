//! What a session's terminal shows (`GetScreen`).
//!
//! A terminal emulator (vt100) reads the output the scrollback holds, at
//! the session's size, when a screen is asked for: nothing is spent on it
//! while nobody asks, and output is never slowed by it. The screen is
//! exact while the scrollback holds the output from its first byte, and
//! said not to be (`complete: false`) once older output has been let go.

use holdfast_api::proto::daemon::v1 as pb;

/// Output to read, with the session's size and title at that moment.
pub struct HeldOutput {
    /// Output the emulator has not read (all the scrollback holds, if it
    /// has to start again), oldest first.
    pub bytes: prost::bytes::Bytes,
    /// The offset of `bytes[0]` in the session's output.
    pub start: u64,
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
/// made again, when it has none, missed output, or has another size).
pub fn screen(emulator: &mut Option<Emulator>, held: HeldOutput) -> pb::GetScreenResponse {
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
        // what is held. No scrollback of its own: only the screen is asked
        // for, and the memory stays that of one screen.
        _ => emulator.insert(Emulator {
            parser: vt100::Parser::new(rows, cols, 0),
            origin: held.start,
            read_to: held.start,
            size,
        }),
    };
    emulator.parser.process(&held.bytes);
    emulator.read_to = held.start + held.bytes.len() as u64;
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
        rendering: screen.state_formatted().into_bytes().into(),
        complete: emulator.origin == 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(bytes: &[u8], start: u64) -> HeldOutput {
        HeldOutput {
            bytes: prost::bytes::Bytes::copy_from_slice(bytes),
            start,
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
        let shown = screen(&mut emulator, held(drawn, 0));
        assert_eq!(
            shown.lines,
            ["", "", "", ""],
            "the alternate screen is blank"
        );
        assert!(shown.alternate_screen && !shown.cursor_visible && shown.complete);
        let mut emulator = None;
        let shown = screen(&mut emulator, held(b"one\r\ntwo\x1b[4;3Hx", 7));
        assert_eq!(shown.lines, ["one", "two", "", "  x"]);
        assert_eq!((shown.cursor_row, shown.cursor_col), (3, 3));
        assert_eq!(shown.output_offset, 7 + 15);
        assert!(!shown.complete, "output before offset 7 is not held");
        // The rendering, read by another emulator, draws the same screen.
        let again = screen(&mut None, held(&shown.rendering, 0));
        assert_eq!(again.lines, shown.lines);
        // Fed on from where it stopped, it reads only what is new.
        let more = screen(&mut emulator, held(b"\x1b[1;1HONE", 22));
        assert_eq!(more.lines, ["ONE", "two", "", "  x"]);
        // Output it missed: it starts again from what is held.
        let gap = screen(&mut emulator, held(b"fresh", 100));
        assert_eq!(gap.lines, ["fresh", "", "", ""]);
        assert_eq!(gap.output_offset, 105);
    }
}
