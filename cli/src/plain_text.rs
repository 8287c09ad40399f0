//! Output as text, for a terminal that must not be changed by it.
//!
//! `holdfast logs` to a terminal prints what the program wrote without
//! its escape sequences and control characters: nothing it prints can
//! switch the terminal to the alternate screen, hide its cursor, set a
//! scroll region or leave it inside an unterminated string. A real VT
//! parser (vte) tells text from sequences, across reads.

/// Follows output and keeps only its text.
pub struct PlainText {
    parser: vte::Parser,
    text: Text,
}

#[derive(Default)]
struct Text(Vec<u8>);

impl vte::Perform for Text {
    fn print(&mut self, c: char) {
        let mut utf8 = [0; 4];
        self.0
            .extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
    }

    fn execute(&mut self, byte: u8) {
        // Line ends and tabs are text; a carriage return alone (a progress
        // bar's) and every other control character are not.
        if matches!(byte, b'\n' | b'\t') {
            self.0.push(byte);
        }
    }
}

impl PlainText {
    pub fn new() -> Self {
        Self {
            parser: vte::Parser::new(),
            text: Text::default(),
        }
    }

    /// The text of `output`, a sequence split across reads included once
    /// whole.
    pub fn text(&mut self, output: &[u8]) -> Vec<u8> {
        self.parser.advance(&mut self.text, output);
        std::mem::take(&mut self.text.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_text_and_line_ends_are_kept() {
        let mut plain = PlainText::new();
        let shown =
            plain.text(b"\x1b[?1049h\x1b[1;24r\x1b[31mred\x1b[0m\r\nnext\tcol\x1b[?25l\x1bX");
        assert_eq!(shown, b"red\nnext\tcol");
        // The unterminated string swallows what follows until it ends, as
        // on a terminal, but never reaches one.
        assert_eq!(plain.text(b"random \x07bytes"), b"");
        assert_eq!(plain.text(b"\x1b\\after \xc3"), b"after ");
        assert_eq!(
            plain.text(b"\xa9"),
            "é".as_bytes(),
            "a character split across reads"
        );
    }
}
