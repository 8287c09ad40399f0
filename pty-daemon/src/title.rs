//! Window titles set by OSC 0 and OSC 2 sequences, and the terminal modes
//! the output switches (`modes.rs`).
//!
//! They are found with a real VT parser, so that sequences split across
//! reads are still recognised.
//!
//! Most output is plain text. Only an escape (`ESC`, 0x1b) can take the
//! parser out of its ground state, where text means nothing for titles. So
//! while the parser is known to be in ground, bytes up to the next escape
//! are skipped instead of fed. For `cat` of a large file, feeding them was
//! 15 % of the daemon's CPU.

const ESC: u8 = 0x1b;

/// Longest title kept, in bytes; longer ones are cut at a char boundary.
const MAX_TITLE_BYTES: usize = 1024;

/// Follows a session's output and remembers the last title it set.
pub struct TitleTracker {
    parser: vte::Parser,
    found: TitleFound,
    /// The parser is known to be in its ground state.
    in_ground: bool,
}

#[derive(Default)]
struct TitleFound {
    /// The most recent title seen since the last `take`.
    latest: Option<String>,
    /// Set by every callback that only happens in, or returns the parser
    /// to, the ground state.
    ///
    /// Fed no escape since, the parser stays there.
    grounded: bool,
    /// The modes the output switched on so far (see `modes.rs`).
    modes: crate::modes::Modes,
}

impl vte::Perform for TitleFound {
    fn print(&mut self, _: char) {
        self.grounded = true;
    }

    fn csi_dispatch(&mut self, params: &vte::Params, intermediates: &[u8], _: bool, action: char) {
        self.grounded = true;
        self.modes.csi(params, intermediates, action);
    }

    fn esc_dispatch(&mut self, intermediates: &[u8], _: bool, byte: u8) {
        self.grounded = true;
        self.modes.esc(intermediates, byte);
    }

    fn unhook(&mut self) {
        // Fed no escape, a DCS string ends only by returning to ground.
        self.grounded = true;
    }

    fn osc_dispatch(&mut self, params: &[&[u8]], _bell_terminated: bool) {
        // Fed no escape, an OSC string ends only by returning to ground.
        self.grounded = true;
        // OSC 0 sets icon name and title, OSC 2 the title alone.
        if let [b"0" | b"2", rest @ ..] = params {
            // The title may itself contain ';', which vte splits on.
            let title = rest.join(&b';');
            let mut title = String::from_utf8_lossy(&title).into_owned();
            if title.len() > MAX_TITLE_BYTES {
                let mut cut = MAX_TITLE_BYTES;
                while !title.is_char_boundary(cut) {
                    cut -= 1;
                }
                title.truncate(cut);
            }
            self.latest = Some(title);
        }
    }
}

impl Default for TitleTracker {
    fn default() -> Self {
        Self::new()
    }
}

impl TitleTracker {
    /// A tracker in the ground state.
    pub fn new() -> Self {
        Self {
            parser: vte::Parser::new(),
            found: TitleFound::default(),
            in_ground: true,
        }
    }

    /// Feeds output; returns the last title these bytes completed, if any.
    pub fn feed(&mut self, output: &[u8]) -> Option<String> {
        let output = if self.in_ground {
            match memchr::memchr(ESC, output) {
                Some(escape) => &output[escape..],
                None => return None,
            }
        } else {
            output
        };
        // Feed through the last escape, after which the parser is always
        // in its escape state. Then feed the rest with the ground marker
        // reset. With no escape in it, any callback that marks ground means
        // the parser ends there.
        let tail = match memchr::memrchr(ESC, output) {
            Some(last) => {
                self.parser.advance(&mut self.found, &output[..=last]);
                &output[last + 1..]
            }
            None => output,
        };
        self.found.grounded = false;
        self.parser.advance(&mut self.found, tail);
        self.in_ground = self.found.grounded;
        self.found.latest.take()
    }

    /// The modes the output fed so far switched on.
    pub fn modes(&self) -> crate::modes::Modes {
        self.found.modes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn osc_0_and_2_set_the_title() {
        let mut titles = TitleTracker::new();
        assert_eq!(titles.feed(b"\x1b]0;first\x07"), Some("first".into()));
        assert_eq!(
            titles.feed(b"text \x1b]2;second\x1b\\ more"),
            Some("second".into())
        );
        assert_eq!(titles.feed(b"plain output"), None);
    }

    #[test]
    fn other_osc_codes_are_ignored() {
        let mut titles = TitleTracker::new();
        assert_eq!(titles.feed(b"\x1b]1;icon\x07\x1b]7;file:///tmp\x07"), None);
    }

    #[test]
    fn sequences_split_across_reads_are_found() {
        let mut titles = TitleTracker::new();
        assert_eq!(titles.feed(b"\x1b]2;build"), None);
        assert_eq!(titles.feed(b"ing; step 2"), None);
        assert_eq!(titles.feed(b"\x07"), Some("building; step 2".into()));
    }

    #[test]
    fn the_last_title_in_a_chunk_wins() {
        let mut titles = TitleTracker::new();
        assert_eq!(titles.feed(b"\x1b]2;a\x07\x1b]2;b\x07"), Some("b".into()));
    }
}
