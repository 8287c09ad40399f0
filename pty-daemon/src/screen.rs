//! What a session's terminal shows (`GetScreen`).
//!
//! A terminal emulator (vt100) reads the output the scrollback holds, at
//! the session's size, when a screen is asked for: nothing is spent on it
//! while nobody asks, and output is never slowed by it. The screen is
//! exact while the scrollback holds the output from its first byte, and
//! said not to be (`complete: false`) once older output has been let go.

use holdfast_api::proto::daemon::v1 as pb;

/// What the screen is drawn from: the session's held output and state.
pub struct HeldOutput {
    /// The output the scrollback holds, oldest first.
    pub bytes: Vec<u8>,
    /// The offset of `bytes[0]` in the session's output.
    pub start: u64,
    /// The terminal's size.
    pub cols: u16,
    /// The terminal's height.
    pub rows: u16,
    /// The last title the program set.
    pub title: String,
}

/// The screen `held` draws.
pub fn screen(held: &HeldOutput) -> pb::GetScreenResponse {
    let (Some(rows), Some(cols)) = (
        std::num::NonZeroU16::new(held.rows),
        std::num::NonZeroU16::new(held.cols),
    ) else {
        return pb::GetScreenResponse::default();
    };
    // No scrollback of the emulator's own: only the screen is asked for.
    let mut parser = vt100::Parser::new(rows, cols, 0);
    parser.process(&held.bytes);
    let screen = parser.screen();
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
        title: held.title.clone(),
        alternate_screen: screen.alternate_screen(),
        cols: held.cols.into(),
        rows: held.rows.into(),
        output_offset: held.start + held.bytes.len() as u64,
        rendering: screen.state_formatted().into_bytes().into(),
        complete: held.start == 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(bytes: &[u8], start: u64) -> HeldOutput {
        HeldOutput {
            bytes: bytes.to_vec(),
            start,
            cols: 20,
            rows: 4,
            title: "t".into(),
        }
    }

    /// Text lands where the program put it; the cursor and modes are read.
    #[test]
    fn the_screen_is_what_the_output_drew() {
        let screen = screen(&held(b"one\r\ntwo\x1b[4;3Hx\x1b[?25l\x1b[?1049h", 0));
        assert_eq!(
            screen.lines,
            ["", "", "", ""],
            "the alternate screen is blank"
        );
        assert!(screen.alternate_screen && !screen.cursor_visible);
        let screen = super::screen(&held(b"one\r\ntwo\x1b[4;3Hx", 7));
        assert_eq!(screen.lines, ["one", "two", "", "  x"]);
        assert_eq!((screen.cursor_row, screen.cursor_col), (3, 3));
        assert_eq!(screen.output_offset, 7 + 15);
        assert!(!screen.complete, "output before offset 7 is not held");
        // The rendering, read by another emulator, draws the same screen.
        let again = super::screen(&held(&screen.rendering, 0));
        assert_eq!(again.lines, screen.lines);
    }
}
