//! Printing to stdout and stderr.
//!
//! A reader of stdout may go away (`holdfast ls | head -1`). That ends the
//! program quietly, as it would `ls`, instead of the panic that `println!`
//! raises on a closed pipe. Words for a stderr nobody reads any more are
//! dropped. `eprintln!` would panic there, and exit 101 instead of the
//! command's own status.

use std::io::{ErrorKind, Write};

/// Prints a line, like `println!`.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::stdout::line(format_args!($($arg)*))
    };
}
pub(crate) use say;

/// Prints to stderr, like `eprint!`.
///
/// What a closed stderr refuses is dropped.
macro_rules! tell {
    ($($arg:tt)*) => {
        $crate::stdout::to_stderr(format_args!($($arg)*))
    };
}
pub(crate) use tell;

/// Writes to stderr.
///
/// What it refuses is dropped.
pub fn to_stderr(text: std::fmt::Arguments<'_>) {
    let _ = std::io::stderr().lock().write_fmt(text);
}

/// Writes one line to stdout.
///
/// It exits when nobody reads it any more.
pub fn line(text: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    let written = out.write_fmt(text).and_then(|()| out.write_all(b"\n"));
    match written {
        Ok(()) => {}
        // The reader has what it wanted: stop, successfully, as ripgrep does.
        Err(error) if error.kind() == ErrorKind::BrokenPipe => std::process::exit(0),
        Err(error) => {
            tell!("holdfast: writing to stdout: {error}\n");
            std::process::exit(1);
        }
    }
}
