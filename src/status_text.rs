//! Error messages bound for a gRPC status.
//!
//! The message travels in a response header (`grpc-message`). One that
//! echoes a huge request field would exceed the client's header limit. It
//! would tear down the client's connection instead of telling it what was
//! wrong.

/// Longest message sent, in bytes.
///
/// It travels twice. It goes in `grpc-message`, percent-encoded: up to 3×
/// for text that is not ASCII. It goes in the details too
/// (`grpc-status-details-bin`, base64: 4/3×), once more as a bad field's
/// description (see `error_details`). At 512 bytes a refusal's trailers stay
/// under 4 KiB, half the soft limit of gRPC's C-core clients (Python's among
/// them). 1 KiB in `grpc-message` alone, without details, stays under it
/// too.
pub const MAX_STATUS_MESSAGE_BYTES: usize = 512;

/// `message`, cut at a character boundary to at most
/// [`MAX_STATUS_MESSAGE_BYTES`].
///
/// It ends with "…" when cut.
pub fn bounded(message: String) -> String {
    cut_to(message, MAX_STATUS_MESSAGE_BYTES)
}

/// `text`, cut at a character boundary to at most `max` bytes.
///
/// It ends with "…" when cut, if `max` has room for it.
pub fn cut_to(mut text: String, max: usize) -> String {
    if text.len() > max {
        let ellipsis = if max >= '…'.len_utf8() { "…" } else { "" };
        let mut cut = max - ellipsis.len();
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str(ellipsis);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_are_cut_on_a_character_boundary() {
        assert_eq!(bounded("short".into()), "short");
        let cut = bounded("é".repeat(5000));
        assert!(cut.len() <= MAX_STATUS_MESSAGE_BYTES, "{}", cut.len());
        assert!(cut.ends_with('…'));
        let exact = "x".repeat(MAX_STATUS_MESSAGE_BYTES);
        assert_eq!(bounded(exact.clone()), exact);
        assert_eq!(cut_to("éé".into(), 1), "");
        assert_eq!(cut_to("abcdef".into(), 4), "a…");
    }
}
