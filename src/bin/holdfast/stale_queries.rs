//! Queries a program wrote to its terminal before this client attached
//! are left out of what this terminal is shown of that output. A device
//! attributes or cursor position request (`ESC [ c`, `ESC [ 6 n`) in the
//! scrollback was answered, or given up on, long ago; shown again to a
//! real terminal it would be answered again, and the answer would reach
//! the program as typed keys (`^[[?1;2c` in a shell, commands in `vim`'s
//! normal mode). tmux never replays raw output, so never meets this; a
//! client that replays it has to. Output from the stream's live offset on
//! (`holdfast-live-offset`) is shown whole: a program asking now gets its
//! answer. The escape sequences are read with a real VT parser (vte).

use std::borrow::Cow;

/// Follows one attach stream's output up to where it turns live.
pub struct History {
    /// The offset live output begins at; `None` once reached, or if the
    /// host-service did not say (everything is then shown).
    live_from: Option<u64>,
    parser: vte::Parser,
    seen: Seen,
    /// History not shown yet: an escape sequence a chunk ended inside.
    held: Vec<u8>,
    /// Where, in the bytes being built, the escape sequence being read
    /// began.
    start: Option<usize>,
    /// A query ended by the `ESC` of a string terminator (`ESC \`) was
    /// just left out: its `\` goes too.
    terminator_left: bool,
}

impl History {
    pub fn new(live_from: Option<u64>) -> Self {
        Self {
            live_from,
            parser: vte::Parser::new(),
            seen: Seen::default(),
            held: Vec::new(),
            start: None,
            terminator_left: false,
        }
    }

    /// Output all of which is taken as history: for a terminal that takes
    /// no keys for the session (`holdfast logs`).
    pub fn all() -> Self {
        Self::new(Some(u64::MAX))
    }

    /// The history of the stream `answer` opened, from its metadata.
    pub fn of<T>(answer: &tonic::Response<T>) -> Self {
        Self::new(holdfast::proto::live_offset(answer.metadata()))
    }

    /// `data`, output at `offset`, as this terminal is to be shown it.
    pub fn shown<'a>(&mut self, offset: u64, data: &'a [u8]) -> Cow<'a, [u8]> {
        let Some(live_from) = self.live_from else {
            return Cow::Borrowed(data);
        };
        let before_live = usize::try_from(live_from.saturating_sub(offset)).unwrap_or(usize::MAX);
        let (history, live) = data.split_at(before_live.min(data.len()));
        let mut shown = std::mem::take(&mut self.held);
        for &byte in history {
            self.read(byte, &mut shown);
        }
        if offset.saturating_add(data.len() as u64) >= live_from {
            // Live from here on: a sequence still open ends in live output.
            self.live_from = None;
            shown.extend_from_slice(live);
        } else if let Some(start) = self.start {
            self.held = shown.split_off(start);
            self.start = Some(0);
        }
        Cow::Owned(shown)
    }

    /// Adds `byte` of history to `shown`, and takes out the query it ends.
    fn read(&mut self, byte: u8, shown: &mut Vec<u8>) {
        // An ESC begins a sequence, and may end a string (OSC, DCS) as
        // the first byte of its terminator.
        let ended_by_it = if byte == 0x1b { self.start } else { None };
        if byte == 0x1b {
            self.start = Some(shown.len());
        }
        shown.push(byte);
        self.seen.ended = false;
        self.seen.query = false;
        self.seen.after_query = std::mem::take(&mut self.terminator_left);
        self.parser.advance(&mut self.seen, &[byte]);
        if !self.seen.ended {
            return;
        }
        match ended_by_it {
            // A string this ESC ended: it goes, the ESC stays.
            Some(began) => {
                if self.seen.query {
                    shown.drain(began..shown.len() - 1);
                    self.start = Some(began);
                    self.terminator_left = true;
                }
            }
            None => {
                if self.seen.query
                    && let Some(began) = self.start
                {
                    shown.truncate(began);
                }
                self.start = None;
            }
        }
    }
}

/// What the parser saw in the last byte (and a DCS query it is inside).
#[derive(Default)]
struct Seen {
    /// A sequence (or a string) ended, or a character was printed.
    ended: bool,
    /// What ended was a query.
    query: bool,
    /// The byte before ended a query on the `ESC` of a terminator.
    after_query: bool,
    /// A DCS query (`DCS $ q`, `DCS + q`) is being read, since an
    /// earlier byte.
    dcs_query: bool,
}

impl vte::Perform for Seen {
    fn print(&mut self, _: char) {
        self.ended = true;
    }

    fn execute(&mut self, byte: u8) {
        // CAN and SUB abandon a sequence.
        if matches!(byte, 0x18 | 0x1a) {
            self.ended = true;
        }
    }

    fn hook(&mut self, _: &vte::Params, intermediates: &[u8], _: bool, action: char) {
        self.dcs_query = action == 'q' && matches!(intermediates, b"$" | b"+");
    }

    fn unhook(&mut self) {
        self.ended = true;
        self.query = std::mem::take(&mut self.dcs_query);
    }

    fn osc_dispatch(&mut self, params: &[&[u8]], _: bool) {
        // OSC 4 ; n ; ?, OSC 10 ; ?, OSC 52 ; c ; ?: any `?` after the number.
        self.ended = true;
        self.query = params.iter().skip(1).any(|param| *param == b"?");
    }

    fn csi_dispatch(&mut self, params: &vte::Params, intermediates: &[u8], _: bool, action: char) {
        self.ended = true;
        let first = params
            .iter()
            .next()
            .and_then(|param| param.first().copied());
        self.query = match (intermediates, action) {
            // Device attributes, primary, secondary, tertiary.
            (b"" | b">" | b"=", 'c') => true,
            // Device status and cursor position reports.
            (b"" | b"?", 'n') => true,
            // DECRQM: is a mode set.
            (b"$" | b"?$", 'p') => true,
            // XTVERSION; the kitty keyboard flags; xterm's key modifiers.
            (b">", 'q') | (b"?", 'u') | (b"?", 'm') => true,
            // XTWINOPS reports: sizes, positions, state, titles.
            (b"", 't') => matches!(first, Some(11 | 13 | 14 | 15 | 16 | 18 | 19 | 20 | 21)),
            _ => false,
        };
    }

    fn esc_dispatch(&mut self, intermediates: &[u8], _: bool, byte: u8) {
        self.ended = true;
        self.query = intermediates.is_empty()
            && match byte {
                // DECID, the oldest way to ask for device attributes.
                b'Z' => true,
                // The terminator of a query left out just before.
                b'\\' => self.after_query,
                _ => false,
            };
    }
}

#[cfg(test)]
mod tests {
    use super::History;

    /// What a terminal is shown of `chunks`, whose live output begins at
    /// `live_from`.
    fn shown(live_from: u64, chunks: &[&[u8]]) -> Vec<u8> {
        let mut history = History::new(Some(live_from));
        let mut offset = 0;
        let mut shown = Vec::new();
        for chunk in chunks {
            shown.extend_from_slice(&history.shown(offset, chunk));
            offset += chunk.len() as u64;
        }
        shown
    }

    #[test]
    fn queries_in_history_are_left_out_and_the_rest_kept() {
        let history: &[u8] = b"a\x1b[cb\x1b[>0c\x1b[6nc\x1b[?6n\x1b[1;31md\x1b[?2004$p\x1b[?u\x1b[14te\x1b[8;24;80tf\x1bZ";
        assert_eq!(
            shown(history.len() as u64, &[history]),
            b"abc\x1b[1;31mde\x1b[8;24;80tf"
        );
    }

    #[test]
    fn string_queries_go_with_their_terminators() {
        let history: &[u8] =
            b"<\x1b]11;?\x07|\x1b]10;?\x1b\\|\x1bP$qm\x1b\\|\x1bP+q544e\x1b\\|\x1b]0;title\x07|\x1b]52;c;?\x1b\\>";
        assert_eq!(
            shown(history.len() as u64, &[history]),
            b"<||||\x1b]0;title\x07|>".as_slice()
        );
    }

    #[test]
    fn a_query_split_across_chunks_is_left_out_and_nothing_else_delayed() {
        let chunks: &[&[u8]] = &[b"one\x1b[", b"6", b"ntwo\x1b]11", b";?\x1b", b"\\three"];
        let total: usize = chunks.iter().map(|chunk| chunk.len()).sum();
        assert_eq!(shown(total as u64, chunks), b"onetwothree");
        // Text before an open sequence is shown at once.
        let mut history = History::new(Some(100));
        assert_eq!(&*history.shown(0, b"text\x1b["), b"text");
        assert_eq!(&*history.shown(6, b"1mmore"), b"\x1b[1mmore");
    }

    #[test]
    fn live_output_is_shown_whole() {
        let history: &[u8] = b"old\x1b[c";
        let live: &[u8] = b"new\x1b[c\x1b[6n";
        let both = [history, live].concat();
        assert_eq!(
            shown(history.len() as u64, &[&both]),
            b"oldnew\x1b[c\x1b[6n"
        );
        // A sequence the history ends inside is finished by live output.
        assert_eq!(shown(3, &[b"ab\x1b", b"[6n"]), b"ab\x1b[6n");
        // A host-service that does not say: all is shown.
        assert_eq!(&*History::new(None).shown(0, b"\x1b[c"), b"\x1b[c");
    }
}
