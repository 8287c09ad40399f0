//! The detached daemon's log: its stdout and stderr, on a file at a path.
//!
//! The file can be removed under the running daemon. It goes with the
//! socket's directory at a user's last logout, or to a tmp cleaner, or it
//! is rotated away. The daemon would then write on into a file nobody can
//! read. So the path is looked at with the socket's (`kept_socket.rs`).
//! When another file or none is there, the log is opened again at the path
//! and put in place of stdout and stderr. That is what logrotate's `create`
//! method expects of a daemon, without anyone having to signal it.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use crate::file_id::FileId;

/// The log being kept; none for a daemon that is not detached.
static KEPT: Mutex<Option<Kept>> = Mutex::new(None);

struct Kept {
    path: PathBuf,
    /// The file stdout and stderr are on.
    file: FileId,
    /// Whether opening it again failed, reported once until it works.
    failing: bool,
}

/// Opens the log file of a daemon about to detach, for its stdout and
/// stderr, and keeps it at its path from now on.
pub fn open(path: &Path) -> io::Result<File> {
    let file = open_at(path)?;
    let id = FileId::of_file(&file)?;
    *kept() = Some(Kept {
        path: path.to_owned(),
        file: id,
        failing: false,
    });
    Ok(file)
}

/// Opens the log again if its file was removed or replaced.
///
/// There is nothing to do for a daemon that is not detached.
pub fn keep() {
    let mut kept = kept();
    let Some(log) = kept.as_mut() else {
        return;
    };
    // Followed if a link: the file written to is what must be there.
    if std::fs::metadata(&log.path).is_ok_and(|metadata| FileId::of(&metadata) == log.file) {
        return;
    }
    match reopen(&log.path) {
        Ok(file) => {
            log.file = file;
            log.failing = false;
            let path = log.path.clone();
            drop(kept);
            tracing::warn!(path = %path.display(), "the log file was removed or replaced; logging to a new one at its path");
        }
        Err(error) if !log.failing => {
            log.failing = true;
            let path = log.path.clone();
            drop(kept);
            tracing::error!(path = %path.display(), %error, "the log file was removed and cannot be opened again; logging on to the old one");
        }
        Err(_) => {}
    }
}

/// Opens the file at `path` and puts it in place of stdout and stderr.
fn reopen(path: &Path) -> io::Result<FileId> {
    let file = open_at(path)?;
    let id = FileId::of_file(&file)?;
    rustix::stdio::dup2_stdout(&file)?;
    rustix::stdio::dup2_stderr(&file)?;
    Ok(id)
}

/// Opens the log at `path` for appending, creating it 0600.
///
/// The log is the user's only: it may hold what programs were started.
/// Opened again after its directory was removed, the path may be one
/// another user made. So it is never opened through a link, and only a
/// file of ours that no other name reaches is taken.
fn open_at(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::MetadataExt;
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    let metadata = file.metadata()?;
    let ours = metadata.uid() == rustix::process::getuid().as_raw();
    if !metadata.is_file() || !ours || metadata.nlink() != 1 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a file of this user's alone (owner uid {}, {} names)",
                path.display(),
                metadata.uid(),
                metadata.nlink()
            ),
        ));
    }
    Ok(file)
}

fn kept() -> std::sync::MutexGuard<'static, Option<Kept>> {
    KEPT.lock().unwrap_or_else(PoisonError::into_inner)
}
