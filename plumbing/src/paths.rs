//! Default locations of the daemon socket and the database.
//!
//! They follow the XDG base directory conventions.

use std::path::PathBuf;

/// The daemon's socket when `--socket` is not given.
///
/// It is `$XDG_RUNTIME_DIR/holdfast/ptyd.sock`, or
/// `/tmp/holdfast-<uid>/ptyd.sock` where there is no runtime directory.
pub fn default_socket_path() -> PathBuf {
    runtime_dir().join("ptyd.sock")
}

/// The directory that holds the daemon's socket, lock and log by default.
pub fn runtime_dir() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|dir| !dir.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("holdfast"),
        None => PathBuf::from(format!(
            "/tmp/holdfast-{}",
            rustix::process::getuid().as_raw()
        )),
    }
}

/// The host-service's SQLite file when no database URL is given.
///
/// It is `$XDG_DATA_HOME/holdfast/holdfast.db`, or
/// `~/.local/share/holdfast/holdfast.db`, or `./holdfast/holdfast.db` when
/// `HOME` is not set either.
pub fn default_database_path() -> PathBuf {
    let data_home = std::env::var_os("XDG_DATA_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    data_home.join("holdfast").join("holdfast.db")
}
