//! Claiming the daemon's socket: an owner-only directory, a lock so only one
//! daemon serves a path, stale-socket replacement, and a socket that is 0600
//! from the moment it exists.

use std::fs::{DirBuilder, File, OpenOptions, TryLockError};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use rustix::fs::Mode;

use crate::error::{Error, Result};

/// A bound, listening socket and the lock that makes it ours.
#[derive(Debug)]
pub struct ClaimedSocket {
    /// The listener, already accepting into its backlog.
    pub listener: UnixListener,
    /// Where it is bound.
    pub path: PathBuf,
    /// Held for the daemon's lifetime; the kernel drops it when we die.
    _lock: File,
}

impl ClaimedSocket {
    /// Removes the socket file; only the lock holder may, so a live socket
    /// of another daemon is never touched.
    pub fn remove(&self) {
        if let Err(error) = std::fs::remove_file(&self.path) {
            tracing::debug!(path = %self.path.display(), %error, "removing the socket failed");
        }
    }
}

/// The lock file beside a socket.
pub fn lock_path(socket: &Path) -> PathBuf {
    let mut name = socket.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Creates the socket's directory (0700), takes the lock, replaces a stale
/// socket file, and binds with a umask that leaves the socket 0600.
pub fn claim(path: &Path) -> Result<ClaimedSocket> {
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    private_directory(dir)?;

    let lock_path = lock_path(path);
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&lock_path)
        .map_err(|error| Error::io(format!("opening lock file {}", lock_path.display()), error))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Err(Error::AlreadyRunning(path.to_path_buf())),
        Err(TryLockError::Error(error)) => {
            return Err(Error::io(format!("locking {}", lock_path.display()), error));
        }
    }

    if path.exists() {
        // A listener without our lock would be a daemon of another build:
        // never steal a live socket.
        if UnixStream::connect(path).is_ok() {
            return Err(Error::AlreadyRunning(path.to_path_buf()));
        }
        tracing::info!(path = %path.display(), "replacing a stale socket");
        std::fs::remove_file(path).map_err(|error| {
            Error::io(format!("removing stale socket {}", path.display()), error)
        })?;
    }

    // The umask applies at bind, so the socket never exists with wider
    // permissions. This runs before any other thread starts.
    let previous = rustix::process::umask(Mode::from_raw_mode(0o177));
    let bound = UnixListener::bind(path);
    rustix::process::umask(previous);
    let listener =
        bound.map_err(|error| Error::io(format!("binding {}", path.display()), error))?;
    Ok(ClaimedSocket {
        listener,
        path: path.to_path_buf(),
        _lock: lock,
    })
}

/// Makes `dir` exist; directories it creates are 0700. An existing one is
/// left as it is (it may be `/tmp`), with a warning when others can enter it:
/// the socket's own 0600 mode and the peer check still keep them out.
fn private_directory(dir: &Path) -> Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|error| Error::io(format!("creating {}", dir.display()), error))?;
    let metadata = std::fs::metadata(dir)
        .map_err(|error| Error::io(format!("reading {}", dir.display()), error))?;
    // Another user who owns the directory (or may write to it without the
    // sticky bit) could swap the socket for their own: refuse it.
    let ours = metadata.uid() == rustix::process::getuid().as_raw();
    let sticky = metadata.mode() & 0o1000 != 0;
    let shared_safely = metadata.uid() == 0 && sticky;
    let others_may_replace = metadata.mode() & 0o022 != 0 && !sticky;
    if !(ours || shared_safely) || others_may_replace {
        return Err(Error::io(
            format!("using {}", dir.display()),
            std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                "another user owns or may write to this directory, and could replace the socket",
            ),
        ));
    }
    if metadata.mode() & 0o077 != 0 {
        tracing::warn!(
            dir = %dir.display(),
            mode = format!("{:o}", metadata.mode() & 0o7777),
            "the socket directory is open to other users; prefer an owner-only (0700) directory"
        );
    }
    Ok(())
}
