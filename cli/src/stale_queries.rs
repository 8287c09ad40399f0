//! Leaves out the queries in output written before this client attached.
//!
//! Queries a program wrote to its terminal before this client attached are
//! left out of what this terminal is shown of that output. A device
//! attributes or cursor position request (`ESC [ c`, `ESC [ 6 n`) in the
//! scrollback was answered, or given up on, long ago. Shown again to a real
//! terminal, it would be answered again. The answer would reach the program
//! as typed keys (`^[[?1;2c` in a shell, commands in `vim`'s normal mode).
//!
//! tmux never replays raw output, so never meets this. A client that
//! replays it has to. Output from the stream's live offset on
//! (`holdfast-live-offset`) is shown whole: a program asking now gets its
//! answer. The escape sequences are read with a real VT parser (vte).

use std::borrow::Cow;

/// Follows one attach stream's output up to where it turns live.
pub struct History {
    /// The offset live output begins at.
    ///
    /// It is `None` once reached, or if the host-service did not say.
    /// Everything is then shown.
    live_from: Option<u64>,
    parser: vte::Parser,
    seen: Seen,
    /// History not shown yet: an escape sequence a chunk ended inside.
    held: Vec<u8>,
    /// Where, in the bytes being built, the escape sequence being read
    /// began.
    start: Option<usize>,
    /// A query ended by the `ESC` of a string terminator (`ESC \`) was
    /// just left out.
    ///
    /// Its `\` goes too.
    terminator_left: bool,
    /// Control characters (a line feed, a carriage return) read inside the
    /// sequence begun at `start`.
    ///
    /// A terminal carries them out where they come, even inside a sequence.
    /// So they stay when a query goes.
    controls: Vec<u8>,
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
            controls: Vec::new(),
        }
    }

    /// Output all of which is taken as history.
    ///
    /// It is for a terminal that takes no keys for the session
    /// (`holdfast logs`).
    pub fn all() -> Self {
        Self::new(Some(u64::MAX))
    }

    /// The history of the stream `answer` opened, from its metadata.
    pub fn of<T>(answer: &tonic::Response<T>) -> Self {
        Self::new(holdfast_api::proto::live_offset(answer.metadata()))
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
            // Live from here on. A sequence still open ends in live output.
            self.live_from = None;
            shown.extend_from_slice(live);
        } else if let Some(start) = self.start {
            self.held = shown.split_off(start);
            self.start = Some(0);
        }
        Cow::Owned(shown)
    }

    /// Bytes of history taken in but not shown yet.
    ///
    /// They are an escape sequence open at the end of the last chunk. Where
    /// to attach again from is that many bytes before the end of what came.
    pub fn held_back(&self) -> u64 {
        self.held.len() as u64
    }

    /// Output was lost between the last chunk and the next.
    ///
    /// What was read of a sequence it cut is dropped, and reading starts
    /// afresh.
    pub fn gap(&mut self) {
        *self = Self::new(self.live_from);
    }

    /// What is still held back, once no more output will come.
    pub fn finish(&mut self) -> Vec<u8> {
        self.start = None;
        std::mem::take(&mut self.held)
    }

    /// Adds `byte` of history to `shown`, and takes out the query it ends.
    fn read(&mut self, byte: u8, shown: &mut Vec<u8>) {
        // ENQ asks for the terminal's answerback (PuTTY answers it).
        if byte == 0x05 && self.start.is_none() {
            return;
        }
        let at = shown.len();
        shown.push(byte);
        self.seen.ended = false;
        self.seen.query = false;
        self.seen.terminator = false;
        self.seen.after_query = std::mem::take(&mut self.terminator_left);
        self.seen.executed = false;
        self.parser.advance(&mut self.seen, &[byte]);
        // ENQ inside a query goes with it, as it goes anywhere (above).
        if self.seen.executed && self.start.is_some() && byte != 0x05 {
            self.controls.push(byte);
        }
        if byte == 0x1b {
            match (self.start, self.seen.ended) {
                // It ended a string (OSC, DCS) begun at `began`, as the
                // first byte of its terminator. A query goes, the ESC
                // stays, and its `\` goes after it.
                (Some(began), true) => {
                    if self.seen.query {
                        // The controls of a sequence it cut short stay.
                        let kept = self.controls.len();
                        shown.splice(began..at, self.controls.drain(..));
                        self.start = Some(began + kept);
                        self.terminator_left = true;
                    } else {
                        self.start = Some(at);
                        self.controls.clear();
                    }
                }
                // It cut a sequence short. What was read of that one
                // does nothing, and goes with the next if that is a query.
                (Some(_), false) => {}
                (None, _) => {
                    self.start = Some(at);
                    self.controls.clear();
                }
            }
            return;
        }
        if !self.seen.ended {
            return;
        }
        if let Some(began) = self.start
            && (self.seen.query
                || (self.seen.terminator && is_kitty_graphics_query(&shown[began..])))
        {
            shown.truncate(began);
            shown.append(&mut self.controls);
        }
        self.start = None;
        self.controls.clear();
    }
}

/// Whether `apc` (`ESC _ G control ; payload ESC \`) is a kitty graphics
/// query (`a=q`).
///
/// Image tools send it to probe the terminal. vte reads APC strings
/// without telling.
fn is_kitty_graphics_query(apc: &[u8]) -> bool {
    let Some(control) = apc.strip_prefix(b"\x1b_G") else {
        return false;
    };
    let control = control
        .split(|&byte| byte == b';')
        .next()
        .unwrap_or_default();
    control.split(|&byte| byte == b',').any(|key| key == b"a=q")
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
    /// What ended was a string terminator (`ESC \`).
    terminator: bool,
    /// A DCS query (`DCS $ q`, `DCS + q`) is being read, since an
    /// earlier byte.
    dcs_query: bool,
    /// The byte was a control character the terminal carries out.
    executed: bool,
}

impl vte::Perform for Seen {
    fn print(&mut self, _: char) {
        self.ended = true;
    }

    fn execute(&mut self, byte: u8) {
        // CAN and SUB abandon a sequence.
        if matches!(byte, 0x18 | 0x1a) {
            self.ended = true;
        } else {
            self.executed = true;
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
        self.ended = true;
        let Some((number, rest)) = params.split_first() else {
            return;
        };
        self.query = match *number {
            // Colours (OSC 4 ; n ; ?, OSC 10 ; ?, ...) and the clipboard
            // (OSC 52 ; c ; ?).
            b"4" | b"5" | b"10" | b"11" | b"12" | b"13" | b"14" | b"15" | b"16" | b"17" | b"18"
            | b"19" | b"52" => rest.iter().any(|param| *param == b"?"),
            // kitty's colours (OSC 21 ; key=? ...).
            b"21" => rest.iter().any(|param| param.ends_with(b"=?")),
            // iTerm2's reports.
            b"1337" => rest
                .first()
                .is_some_and(|param| param.starts_with(b"Report")),
            _ => false,
        };
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
            // DECREQTPARM; DECRQCRA (a checksum of a rectangle);
            // DECRQPSR and DECRQTSR (presentation and terminal state).
            (b"", 'x') | (b"*", 'y') | (b"$", 'w') | (b"$", 'u') => true,
            // XTSMGRAPHICS, reading (sixel colours and sizes).
            (b"?", 'S') => {
                let action = params
                    .iter()
                    .nth(1)
                    .and_then(|param| param.first().copied());
                matches!(action, Some(1 | 4))
            }
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
        self.terminator = intermediates.is_empty() && byte == b'\\';
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
    fn what_is_no_query_stays_and_what_a_cut_sequence_left_goes_with_the_query() {
        let cases: &[(&[u8], &[u8])] = &[
            // A CSI cut short by the query: both go, the text stays.
            (b"a\x1b[1\x1b[6nbc", b"abc"),
            (b"\x1b\x1b[6nX", b"X"),
            // A query passed through tmux to the terminal outside.
            (b"\x1bPtmux;\x1b\x1b[c\x1b\\", b"\x1bPtmux;\x1b\\"),
            // Titles that happen to be "?" are no queries.
            (b"\x1b]2;?\x07", b"\x1b]2;?\x07"),
            // kitty graphics: a query goes, an image stays.
            (b"<\x1b_Gi=31,a=q;AAAA\x1b\\>", b"<>"),
            (
                b"<\x1b_Ga=T,f=100;AAAA\x1b\\>",
                b"<\x1b_Ga=T,f=100;AAAA\x1b\\>",
            ),
            // ENQ; sixel colours read and set.
            (b"a\x05b", b"ab"),
            (b"\x1b[?1;1;0S\x1b[?1;3;256S", b"\x1b[?1;3;256S"),
            // A partial UTF-8 character before a query.
            (b"\xe2\x1b[6n!", b"\xe2!"),
        ];
        for (history, expected) in cases {
            assert_eq!(
                shown(history.len() as u64, &[history]),
                *expected,
                "{:?}",
                String::from_utf8_lossy(history)
            );
        }
    }

    #[test]
    fn what_is_held_back_is_counted_and_given_up_at_the_end() {
        let mut history = History::all();
        assert_eq!(&*history.shown(0, b"text\x1b[38;5"), b"text");
        assert_eq!(history.held_back(), 6);
        assert_eq!(history.finish(), b"\x1b[38;5");
        // After a gap, nothing of before is held or read on.
        assert_eq!(&*history.shown(10, b"\x1b]11"), b"");
        history.gap();
        assert_eq!(history.held_back(), 0);
        assert_eq!(&*history.shown(20, b"2c"), b"2c");
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

    /// A terminal carries out a line feed or a carriage return where it
    /// comes, even inside a sequence: they stay when the query goes, in a
    /// chunk or across two.
    #[test]
    fn control_characters_inside_a_query_stay_when_it_goes() {
        let history: &[u8] = b"a\x1b[6\r\nnb\x1b[1\n;31mc";
        assert_eq!(
            shown(history.len() as u64, &[history]),
            b"a\r\nb\x1b[1\n;31mc"
        );
        // Once each: kept in a title that stays, kept from a sequence cut
        // short by a query that goes; ENQ goes with its query.
        let history: &[u8] = b"<\x1b[\n\x1b]0;t\x1b\\\x1b[6n|\x1b[\r\x1b]11;?\x1b\\|\x1b[\x056n>";
        assert_eq!(
            shown(history.len() as u64, &[history]),
            b"<\x1b[\n\x1b]0;t\x1b\\|\r|>"
        );
        // A string query ended by the ESC of a sequence that stays.
        let history: &[u8] = b"|\x1b[\r\x1b]11;?\x1b[1m|";
        assert_eq!(shown(history.len() as u64, &[history]), b"|\r\x1b[1m|");
        // A title ended by the ESC of the query after it.
        let history: &[u8] = b"<\x1b[\n\x1b]0;t\x1b[6n|";
        assert_eq!(
            shown(history.len() as u64, &[history]),
            b"<\x1b[\n\x1b]0;t|"
        );
        let chunks: [&[u8]; 2] = [b"a\x1b[\n", b"\x08cb"];
        assert_eq!(shown(8, &chunks), b"a\n\x08b");
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
