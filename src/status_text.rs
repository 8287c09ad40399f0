//! Error messages bound for a gRPC status. The message travels in a
//! response header (`grpc-message`); one that echoes a huge request field
//! would exceed the client's header limit and tear down its connection
//! instead of telling it what was wrong.

/// Longest message sent, in bytes.
pub const MAX_STATUS_MESSAGE_BYTES: usize = 1024;

/// `message`, cut at a character boundary to at most
/// [`MAX_STATUS_MESSAGE_BYTES`] (with "…" when cut).
pub fn bounded(mut message: String) -> String {
    if message.len() > MAX_STATUS_MESSAGE_BYTES {
        let mut cut = MAX_STATUS_MESSAGE_BYTES - '…'.len_utf8();
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        message.truncate(cut);
        message.push('…');
    }
    message
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
    }
}
