//! Property tests: random inputs, checked against a model.
//!
//! They cover the parts that read untrusted bytes or do offset arithmetic:
//! the OSC title parser, the scrollback ring, and request validation. CI runs
//! proptest's default 256 cases each. The long run is
//! `PROPTEST_CASES=100000 cargo test -p pty-daemon --test properties`.

use proptest::prelude::*;
use pty_daemon::scrollback::{ReadAt, Scrollback};
use pty_daemon::title::TitleTracker;
use pty_daemon::{limits, validate};

/// Output that is mostly escape-sequence material, so the parser's states
/// are all visited, mixed with arbitrary bytes.
fn terminal_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"\x1b]0;".to_vec()),
        Just(b"\x1b]2;".to_vec()),
        Just(b"\x1b]1;".to_vec()),
        Just(b"\x07".to_vec()),
        Just(b"\x1b\\".to_vec()),
        Just(b"\x1b[".to_vec()),
        Just(b";".to_vec()),
        "[a-z \u{e9}\u{1f600}]{0,8}".prop_map(String::into_bytes),
        proptest::collection::vec(any::<u8>(), 0..8),
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

/// The model: every byte through vte, titles from OSC 0 and 2, cut as the
/// tracker cuts them.
#[derive(Default)]
struct EveryByte {
    latest: Option<String>,
}

impl vte::Perform for EveryByte {
    fn osc_dispatch(&mut self, params: &[&[u8]], _bell_terminated: bool) {
        if let [b"0" | b"2", rest @ ..] = params {
            let mut title = String::from_utf8_lossy(&rest.join(&b';')).into_owned();
            let mut cut = title.len().min(1024);
            while !title.is_char_boundary(cut) {
                cut -= 1;
            }
            title.truncate(cut);
            self.latest = Some(title);
        }
    }
}

proptest! {
    /// Any bytes, in any chunks: no panic, titles are bounded, and how the
    /// output was split never changes the title it ends with.
    #[test]
    fn titles_do_not_depend_on_chunking(bytes in terminal_bytes(), cuts in proptest::collection::vec(any::<usize>(), 0..6)) {
        let mut whole = TitleTracker::new();
        let expected = whole.feed(&bytes);

        let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
        points.sort_unstable();
        let mut chunked = TitleTracker::new();
        let mut last = None;
        let mut from = 0;
        for point in points.into_iter().chain([bytes.len()]) {
            if let Some(title) = chunked.feed(&bytes[from..point]) {
                prop_assert!(title.len() <= 1024);
                last = Some(title);
            }
            from = point;
        }
        prop_assert_eq!(last, expected);
    }

    /// Skipping plain text while the parser rests in its ground state finds
    /// exactly the titles a parser fed every byte finds, chunk by chunk.
    #[test]
    fn skipping_plain_text_finds_the_same_titles(bytes in terminal_bytes(), cuts in proptest::collection::vec(any::<usize>(), 0..6)) {
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
        points.sort_unstable();
        let mut tracker = TitleTracker::new();
        let mut model = EveryByte::default();
        let mut parser = vte::Parser::new();
        let mut from = 0;
        for point in points.into_iter().chain([bytes.len()]) {
            let chunk = &bytes[from..point];
            parser.advance(&mut model, chunk);
            prop_assert_eq!(tracker.feed(chunk), model.latest.take(), "chunk {:?}", chunk);
            from = point;
        }
    }

    /// The ring against a model that keeps every byte ever pushed: offsets,
    /// eviction and every read agree.
    #[test]
    fn the_scrollback_ring_matches_a_model(
        capacity in 1usize..64,
        ops in proptest::collection::vec(
            prop_oneof![
                proptest::collection::vec(any::<u8>(), 0..150).prop_map(Ok),
                (any::<u64>(), 0usize..100).prop_map(Err),
            ],
            0..60,
        ),
    ) {
        let mut ring = Scrollback::new(capacity).expect("a ring");
        let mut history: Vec<u8> = Vec::new();
        for op in ops {
            match op {
                Ok(data) => {
                    ring.push(&data);
                    history.extend_from_slice(&data);
                }
                Err((raw_offset, max)) => {
                    // Offsets around the held window, and some far off.
                    let offset = raw_offset % (history.len() as u64 + 10);
                    let start = history.len().saturating_sub(capacity) as u64;
                    match ring.read_at(offset, max) {
                        ReadAt::Evicted { to_offset } => {
                            prop_assert!(offset < start);
                            prop_assert_eq!(to_offset, start);
                        }
                        ReadAt::Pending => prop_assert!(offset >= history.len() as u64),
                        ReadAt::Data(bytes) => {
                            prop_assert!(offset >= start && offset < history.len() as u64);
                            let from = offset as usize;
                            let to = history.len().min(from + max.max(1));
                            prop_assert_eq!(&bytes[..], &history[from..to]);
                        }
                    }
                }
            }
            prop_assert_eq!(ring.end_offset(), history.len() as u64);
            prop_assert_eq!(ring.start_offset(), history.len().saturating_sub(capacity) as u64);
            prop_assert!(ring.len() <= capacity);
        }
    }

    /// Validation never panics, and accepts exactly the documented ids.
    #[test]
    fn session_ids_are_accepted_exactly_by_the_rule(id in "\\PC{0,70}|[A-Za-z0-9][A-Za-z0-9._-]{0,70}") {
        let rule = !id.is_empty()
            && id.len() <= limits::MAX_SESSION_ID_LEN
            && id.starts_with(|c: char| c.is_ascii_alphanumeric())
            && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        prop_assert_eq!(validate::session_id(&id).is_ok(), rule);
    }

    /// Sizes: accepted exactly within 1..=10,000, never truncated.
    #[test]
    fn sizes_are_accepted_exactly_in_range(cols in any::<u32>(), rows in any::<u32>()) {
        let in_range = |v: u32| (1..=limits::MAX_DIMENSION).contains(&v);
        match validate::size(cols, rows) {
            Ok((c, r)) => {
                prop_assert!(in_range(cols) && in_range(rows));
                prop_assert_eq!((u32::from(c), u32::from(r)), (cols, rows));
            }
            Err(_) => prop_assert!(!(in_range(cols) && in_range(rows))),
        }
    }
}
