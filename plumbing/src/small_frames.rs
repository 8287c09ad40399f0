//! h2's guard against floods of small DATA frames, and the windows that keep
//! a stopped reader clear of it.
//!
//! h2 (from 0.4.16) drops a connection once the small DATA frames it holds
//! unread cost more than a budget. The budget is half the connection's
//! window. Each frame under 256 bytes costs 256 less its size until the
//! application reads it. The drop is a GOAWAY ENHANCE_YOUR_CALM
//! "too_many_data_frames".
//!
//! Terminal output comes in many small frames. A keystroke's echo is a frame
//! of a dozen bytes. A reader may stop reading: `holdfast logs -f ID | less`,
//! a paused terminal, a tab in the background whose stream the host relays.
//! Its whole connection could then be dropped, with every other stream on it,
//! before flow control held the sender back. The flow-control windows must be
//! such that flow control comes first.

/// Frames of fewer bytes than this count against h2's budget.
const SMALL_FRAME_BYTES: u64 = 256;

/// The smallest frame an output stream of either service carries.
///
/// It is taken over any run of frames. The smallest is one byte of output at
/// offset 0: gRPC's 5-byte prefix, the event's tag and length, the output's,
/// and the byte. At offset 128 or more, it is 13. A title or an exit event
/// can be a few bytes less. But a title changes only with output between,
/// and an exit or a truncation comes once.
const SMALLEST_OUTPUT_FRAME_BYTES: u64 = 10;

/// Whether `streams` stalled output streams stay within h2's budget.
///
/// All their readers have stopped, and each stream's window is full of the
/// smallest frames. The connection's window is `connection_window`.
pub const fn stalled_streams_fit(streams: u64, stream_window: u32, connection_window: u32) -> bool {
    let frames = stream_window as u64 / SMALLEST_OUTPUT_FRAME_BYTES;
    let cost = frames * (SMALL_FRAME_BYTES - SMALLEST_OUTPUT_FRAME_BYTES);
    streams * cost < connection_window as u64 / 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hypers_default_windows_do_not_fit_one_stalled_stream() {
        // hyper's client defaults: 2 MiB a stream, 5 MiB the connection.
        assert!(!stalled_streams_fit(1, 2 << 20, 5 << 20));
    }

    #[test]
    fn a_stream_fits_with_under_a_fiftieth_of_the_connections_window() {
        // 246 of budget for every 10 bytes of window, against half the
        // connection's window: 1/49.2.
        assert!(stalled_streams_fit(1, (16 << 20) / 50, 16 << 20));
        assert!(!stalled_streams_fit(1, (16 << 20) / 49, 16 << 20));
    }

    /// The arithmetic is h2 0.4.20's.
    ///
    /// The guard came in 0.4.16 and was tuned until 0.4.20. Another version
    /// is to be read again before this list grows.
    #[test]
    fn the_h2_in_use_is_the_one_this_was_worked_out_for() {
        let lock = include_str!("../../Cargo.lock");
        let versions: Vec<&str> = lock
            .split("[[package]]")
            .filter(|package| package.contains("\nname = \"h2\"\n"))
            .filter_map(|package| package.split("\nversion = \"").nth(1))
            .filter_map(|rest| rest.split('"').next())
            .collect();
        assert_eq!(versions, ["0.4.20"], "h2 in Cargo.lock");
    }
}
