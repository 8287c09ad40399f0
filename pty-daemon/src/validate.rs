//! Checks on request fields, shared by every RPC.

use std::collections::HashSet;

use crate::error::{Error, Result};
use crate::limits::{
    MAX_CWD_BYTES, MAX_DIMENSION, MAX_LISTED_IDS, MAX_SESSION_ID_LEN, MAX_WRITE_BYTES,
};

/// A session id is 1 to 64 characters of `[A-Za-z0-9._-]`.
///
/// It starts with a letter or digit. So it is safe in paths, logs and URLs.
pub fn session_id(id: &str) -> Result<&str> {
    session_id_in("session_id", id)
}

/// [`session_id`] of the request field `field` (`session_ids[3]`).
fn session_id_in<'a>(field: &str, id: &'a str) -> Result<&'a str> {
    if id.is_empty() {
        return Err(Error::invalid(field, format!("{field} is required")));
    }
    if id.len() > MAX_SESSION_ID_LEN {
        return Err(Error::invalid(
            field,
            format!(
                "{field} is {} bytes long; the limit is {MAX_SESSION_ID_LEN}",
                id.len()
            ),
        ));
    }
    let mut chars = id.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric());
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !(first_ok && rest_ok) {
        return Err(Error::invalid(
            field,
            format!(
                "{field} {id:?} must start with a letter or digit and hold only letters, digits, '.', '_' and '-'"
            ),
        ));
    }
    Ok(id)
}

/// The sessions a `List` names: at most 1,000 valid ids.
///
/// They may not come together with `if_generation`, since offsets only make
/// sense for the whole list.
pub fn listed_ids(ids: &[String], if_generation: Option<u64>) -> Result<HashSet<&str>> {
    if ids.len() > MAX_LISTED_IDS {
        return Err(Error::invalid(
            "session_ids",
            format!(
                "session_ids names {} sessions; the limit is {MAX_LISTED_IDS}",
                ids.len()
            ),
        ));
    }
    if !ids.is_empty() && if_generation.is_some() {
        return Err(Error::invalid(
            "if_generation",
            "if_generation asks for the whole list's offsets; it cannot be combined with session_ids",
        ));
    }
    ids.iter()
        .enumerate()
        .map(|(at, id)| {
            // Named by its place only once it is found wrong. No string
            // is made for each of a list's ids.
            session_id(id).or_else(|_| session_id_in(&format!("session_ids[{at}]"), id))
        })
        .collect()
}

/// Terminal sizes are 1 to 10,000 cells each way.
pub fn size(cols: u32, rows: u32) -> Result<(u16, u16)> {
    for (name, value) in [("cols", cols), ("rows", rows)] {
        if value == 0 || value > MAX_DIMENSION {
            return Err(Error::invalid(
                name,
                format!("{name} must be between 1 and {MAX_DIMENSION}, got {value}"),
            ));
        }
    }
    // Both are at most 10,000, so they fit.
    Ok((cols as u16, rows as u16))
}

/// A later message of an `Input` stream names its stream's session, or
/// none.
pub fn same_session(stream_session: &str, named: &str) -> Result<()> {
    if !named.is_empty() && named != stream_session {
        return Err(Error::invalid(
            "session_id",
            format!(
                "this Input stream writes to session {stream_session:?}, not {named:?}; open a stream per session"
            ),
        ));
    }
    Ok(())
}

/// How an attach stream starts: a known `AttachStart`, and no
/// `from_offset` with a screen (output follows the screen's own end).
pub fn attach_start(
    start: i32,
    from_offset: Option<u64>,
) -> Result<holdfast_api::proto::daemon::v1::AttachStart> {
    use holdfast_api::proto::daemon::v1::AttachStart;
    let start = AttachStart::try_from(start).map_err(|_| {
        Error::invalid(
            "start",
            format!("start {start} is not a known AttachStart value"),
        )
    })?;
    let screen = !matches!(start, AttachStart::Unspecified | AttachStart::Replay);
    if screen && from_offset.is_some() {
        return Err(Error::invalid(
            "from_offset",
            format!(
                "from_offset cannot be given with start {}: output follows the screen from where it ends",
                start.as_str_name()
            ),
        ));
    }
    Ok(start)
}

/// Input writes are at most 1 MiB.
pub fn write_len(len: usize) -> Result<()> {
    if len > MAX_WRITE_BYTES {
        return Err(Error::invalid(
            "data",
            format!("data is {len} bytes; one write may carry at most {MAX_WRITE_BYTES}"),
        ));
    }
    Ok(())
}

/// A working directory asked for: absolute, without NUL, no longer than
/// a path may be.
pub fn cwd(cwd: &str) -> Result<&str> {
    // Quoted at most in part: the whole may be long.
    let shown: String = cwd.chars().take(64).collect();
    if cwd.contains('\0') {
        return Err(Error::invalid(
            "cwd",
            format!("cwd {shown:?} contains a NUL byte"),
        ));
    }
    if cwd.len() > MAX_CWD_BYTES {
        return Err(Error::invalid(
            "cwd",
            format!(
                "cwd is {} bytes long; a path may be at most {MAX_CWD_BYTES}",
                cwd.len()
            ),
        ));
    }
    if !cwd.starts_with('/') {
        return Err(Error::invalid(
            "cwd",
            format!("cwd {shown:?} must be an absolute path"),
        ));
    }
    Ok(cwd)
}

/// Strings passed to exec may not hold NUL; env names may not hold '='.
pub fn spawn_strings<'a>(
    argv: &[String],
    env: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> Result<()> {
    if let Some(arg) = argv.iter().position(|arg| arg.contains('\0')) {
        return Err(Error::invalid(
            format!("argv[{arg}]"),
            format!("argv[{arg}] contains a NUL byte"),
        ));
    }
    if argv.first().is_some_and(String::is_empty) {
        return Err(Error::invalid("argv[0]", "argv[0] is empty"));
    }
    for (name, value) in env {
        if name.is_empty() || name.contains(['=', '\0']) {
            return Err(Error::invalid(
                "env",
                format!("env name {name:?} must be non-empty and hold neither '=' nor NUL"),
            ));
        }
        if value.contains('\0') {
            return Err(Error::invalid(
                "env",
                format!("env value of {name} contains a NUL byte"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn working_directories() {
        assert!(cwd("/tmp").is_ok());
        assert!(cwd(&format!("/{}", "x".repeat(MAX_CWD_BYTES - 1))).is_ok());
        for (bad, why) in [
            ("tmp", "absolute"),
            ("/tmp\0x", "NUL"),
            (&format!("/{}", "x".repeat(MAX_CWD_BYTES)), "at most"),
        ] {
            let refused = cwd(bad).expect_err(bad).to_string();
            assert!(refused.contains(why), "{refused}");
        }
    }

    #[test]
    fn session_ids() {
        assert!(session_id("a").is_ok());
        assert!(session_id("build-1.log_x").is_ok());
        assert!(session_id(&"x".repeat(64)).is_ok());
        for bad in [
            "",
            "-lead",
            ".hidden",
            "a b",
            "a/b",
            "é",
            "a\0b",
            &"x".repeat(65),
        ] {
            assert!(session_id(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(size(80, 24).unwrap(), (80, 24));
        assert_eq!(size(10_000, 1).unwrap(), (10_000, 1));
        for (cols, rows) in [(0, 24), (80, 0), (10_001, 24), (80, u32::MAX)] {
            assert!(size(cols, rows).is_err());
        }
    }

    #[test]
    fn write_lengths() {
        assert!(write_len(MAX_WRITE_BYTES).is_ok());
        assert!(write_len(MAX_WRITE_BYTES + 1).is_err());
    }
}
