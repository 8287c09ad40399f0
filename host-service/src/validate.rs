//! Checks on request fields.

use std::time::Duration;

use holdfast_api::proto::daemon::v1 as daemon;
use holdfast_api::proto::host::v1 as pb;

use crate::error::{Error, Result};
use crate::store::DEFAULT_DISPOSE_GRACE;

/// Longest workspace name or session title accepted, in characters.
pub const MAX_NAME_CHARS: usize = 200;
/// Largest single input write, in bytes (the daemon's limit too).
pub const MAX_WRITE_BYTES: usize = 1 << 20;
/// Largest terminal dimension, in cells.
pub const MAX_DIMENSION: u32 = 10_000;

/// Longest grace period a disposal may give, in milliseconds (the
/// daemon's limit: ten minutes).
pub const MAX_GRACE_MS: u32 = 600_000;

/// Longest id considered (and echoed in an error); a UUID is 36 characters.
const MAX_ID_BYTES: usize = 64;

/// Ids are UUIDs made by this service; anything else cannot name one.
pub fn id<'a>(field: &str, value: &'a str) -> Result<&'a str> {
    if value.is_empty() {
        return Err(Error::invalid(field, format!("{field} is required")));
    }
    // Never echo a huge value back: it would travel in a response header.
    if value.len() > MAX_ID_BYTES {
        return Err(Error::invalid(
            field,
            format!(
                "{field} is {} bytes long; an id is a 36-character UUID",
                value.len()
            ),
        ));
    }
    let uuid = uuid::Uuid::try_parse(value).map_err(|_| {
        Error::invalid(
            field,
            format!("{field} {value:?} is not a valid id (a UUID)"),
        )
    })?;
    // Ids are stored and compared as written at creation: lower case,
    // hyphenated. Another spelling of the same UUID would not be found.
    let mut spelt = uuid::Uuid::encode_buffer();
    let canonical = uuid.hyphenated().encode_lower(&mut spelt);
    if value != canonical {
        return Err(Error::invalid(
            field,
            format!(
                "{field} {value:?} is not a valid id: write it as {canonical:?} (lower case, hyphenated)"
            ),
        ));
    }
    Ok(value)
}

/// Names and titles: at most 200 characters.
///
/// None of them may be a control character, or one that changes how the
/// text around it shows (see [`is_hidden_or_reordering`]). Names are also
/// non-blank.
pub fn text(field: &str, value: &str, required: bool) -> Result<()> {
    if required && value.trim().is_empty() {
        return Err(Error::invalid(field, format!("{field} is required")));
    }
    // Bytes first: a huge value is not walked.
    if value.len() > MAX_NAME_CHARS * 4 || value.chars().count() > MAX_NAME_CHARS {
        return Err(Error::invalid(
            field,
            format!("{field} is more than {MAX_NAME_CHARS} characters long"),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(Error::invalid(
            field,
            format!("{field} may not contain control characters"),
        ));
    }
    if let Some(hidden) = value.chars().find(|c| is_hidden_or_reordering(*c)) {
        return Err(Error::invalid(
            field,
            format!(
                "{field} may not contain U+{:04X}, which shows nothing or reorders the text around it",
                u32::from(hidden)
            ),
        ));
    }
    Ok(())
}

/// Characters that would let a name or title pass for another in a list.
///
/// They are the bidirectional controls (the ones rustc warns of in source
/// code), invisible ones (zero-width space, word joiner, the byte-order
/// mark, soft hyphen) and the line and paragraph separators. The
/// zero-width (non-)joiners stay: emoji sequences and Persian or Indic
/// text use them.
fn is_hidden_or_reordering(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{061C}'
            | '\u{180E}'
            | '\u{200B}'
            | '\u{200E}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
    )
}

/// A disposal's first signal and its grace period.
///
/// The signal is SIGHUP if none is given. The grace period is the default
/// if none is given, and none for SIGKILL, which leaves nothing to wait
/// for.
pub fn disposal(signal: i32, grace_ms: Option<u32>) -> Result<(pb::Signal, Duration)> {
    let signal = pb::Signal::try_from(signal).map_err(|_| {
        Error::invalid("signal", format!(
            "signal {signal} is not one a disposal sends: SIGNAL_HUP (the default), SIGNAL_INT, \
             SIGNAL_QUIT, SIGNAL_TERM or SIGNAL_KILL"
        ))
    })?;
    let grace = match grace_ms {
        None => DEFAULT_DISPOSE_GRACE,
        Some(ms) if ms <= MAX_GRACE_MS => Duration::from_millis(ms.into()),
        Some(ms) => {
            return Err(Error::invalid(
                "grace_ms",
                format!("grace_ms is {ms}; the limit is {MAX_GRACE_MS} (ten minutes)"),
            ));
        }
    };
    Ok(match signal {
        pb::Signal::Unspecified => (pb::Signal::Hup, grace),
        pb::Signal::Kill => (pb::Signal::Kill, Duration::ZERO),
        signal => (signal, grace),
    })
}

/// A disposal's signal as the daemon's API names it.
pub fn daemon_signal(signal: pb::Signal) -> daemon::Signal {
    match signal {
        pb::Signal::Unspecified | pb::Signal::Hup => daemon::Signal::Hup,
        pb::Signal::Int => daemon::Signal::Int,
        pb::Signal::Quit => daemon::Signal::Quit,
        pb::Signal::Kill => daemon::Signal::Kill,
        pb::Signal::Term => daemon::Signal::Term,
    }
}

/// A grace period as the APIs carry it, in milliseconds (a disposal's is
/// at most [`MAX_GRACE_MS`]).
pub fn grace_ms(grace: Duration) -> u32 {
    u32::try_from(grace.as_millis()).unwrap_or(u32::MAX)
}

/// Terminal sizes: 1 to 10,000 each way.
pub fn size(cols: u32, rows: u32) -> Result<()> {
    for (name, value) in [("cols", cols), ("rows", rows)] {
        if value == 0 || value > MAX_DIMENSION {
            return Err(Error::invalid(
                name,
                format!("{name} must be between 1 and {MAX_DIMENSION}, got {value}"),
            ));
        }
    }
    Ok(())
}

/// The `attachment` of a resize or of input (`ResizeSessionRequest`,
/// `WriteInputRequest`, `SendInputRequest`).
///
/// It is empty, or a token from a `holdfast-attachment` header (a number).
pub fn attachment(value: &str) -> Result<Option<crate::sessions::client_sizes::AttachToken>> {
    if value.is_empty() {
        return Ok(None);
    }
    value.parse().map(Some).map_err(|_| {
        let shown: String = value.chars().take(32).collect();
        Error::invalid(
            "attachment",
            format!(
                "attachment {shown:?} is not a holdfast-attachment token: pass the header's value unchanged, or nothing"
            ),
        )
    })
}

/// How an attach stream starts, as the daemon is asked: a known
/// `AttachStart`; with a screen, no `from_offset` (output follows the
/// screen) and no `until_now` (a look is at output, `GetScreen` at the
/// screen).
pub fn attach_start(
    request: &holdfast_api::proto::host::v1::AttachSessionRequest,
) -> Result<holdfast_api::proto::daemon::v1::AttachStart> {
    use holdfast_api::proto::daemon::v1::AttachStart as Daemon;
    use holdfast_api::proto::host::v1::AttachStart;
    let start = AttachStart::try_from(request.start).map_err(|_| {
        Error::invalid(
            "start",
            format!("start {} is not a known AttachStart value", request.start),
        )
    })?;
    let start = match start {
        // Unset on the wire: any daemon replays.
        AttachStart::Unspecified | AttachStart::Replay => return Ok(Daemon::Unspecified),
        AttachStart::Screen => Daemon::Screen,
        AttachStart::Auto => Daemon::Auto,
    };
    let clash = if request.from_offset.is_some() {
        Some("from_offset")
    } else if request.until_now {
        Some("until_now")
    } else {
        None
    };
    if let Some(field) = clash {
        return Err(Error::invalid(
            field,
            format!(
                "{field} cannot be given with start {}: the stream goes on from where the screen ends",
                start.as_str_name()
            ),
        ));
    }
    Ok(start)
}

/// Input writes: at most 1 MiB.
pub fn write_len(len: usize) -> Result<()> {
    if len > MAX_WRITE_BYTES {
        return Err(Error::invalid(
            "data",
            format!("data is {len} bytes; one write may carry at most {MAX_WRITE_BYTES}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_must_be_uuids() {
        assert!(id("session_id", "9b2f3f4e-2a59-4a8e-9d59-0b8a3e5f6c7d").is_ok());
        for bad in ["", "x", "../etc", "9b2f3f4e-2a59-4a8e-9d59-0b8a3e5f6c7"] {
            assert!(id("session_id", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn names() {
        assert!(text("name", "dev", true).is_ok());
        assert!(text("name", "  ", true).is_err());
        assert!(text("title", "", false).is_ok());
        assert!(text("name", &"x".repeat(201), true).is_err());
        assert!(text("name", "a\nb", true).is_err());
        // Characters, not bytes.
        assert!(text("name", &"é".repeat(200), true).is_ok());
        assert!(text("name", &"é".repeat(201), true).is_err());
        for spoof in [
            "evil\u{202E}txt.exe",
            "a\u{200B}b",
            "\u{FEFF}",
            "a\u{2028}b",
        ] {
            let refused = text("name", spoof, true).expect_err(spoof).to_string();
            assert!(refused.contains("U+"), "{refused}");
        }
        assert!(text("name", "Zürich 東京 🚀 👩\u{200D}💻", true).is_ok());
    }
}
