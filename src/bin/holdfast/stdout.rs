//! Printing to stdout. A reader that goes away (`holdfast ls | head -1`)
//! ends the program quietly, as it would `ls`, instead of the panic that
//! `println!` raises on a closed pipe.

use std::io::{ErrorKind, Write};

/// Prints a line, like `println!`.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::stdout::line(format_args!($($arg)*))
    };
}
pub(crate) use say;

/// Writes one line to stdout; exits when nobody reads it any more.
pub fn line(text: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    let written = out.write_fmt(text).and_then(|()| out.write_all(b"\n"));
    match written {
        Ok(()) => {}
        // The reader has what it wanted: stop, successfully, as ripgrep does.
        Err(error) if error.kind() == ErrorKind::BrokenPipe => std::process::exit(0),
        Err(error) => {
            eprintln!("holdfast: writing to stdout: {error}");
            std::process::exit(1);
        }
    }
}
