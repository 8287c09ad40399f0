//! Claiming the daemon's socket.
//!
//! The socket gets an owner-only directory, and a lock so only one daemon
//! serves a path. A stale socket is replaced. The new socket is 0600 from
//! the moment it exists. A claimed socket can be claimed again after its
//! file was removed under the running daemon (`kept_socket.rs`).

use std::fs::{DirBuilder, File, OpenOptions, TryLockError};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use rustix::fs::Mode;
use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};

use crate::error::{Error, Result};
use crate::file_id::FileId;

/// A bound, listening socket and the lock that makes it ours.
#[derive(Debug)]
pub struct ClaimedSocket {
    /// The listener, already accepting into its backlog.
    pub listener: UnixListener,
    /// Where it is bound.
    pub path: PathBuf,
    /// The bound socket file, to tell it from a file put in its place.
    file: FileId,
    /// Held for the daemon's lifetime; the kernel drops it when we die.
    lock: File,
}

/// What is at the socket's path now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketFile {
    /// The socket this daemon bound.
    Ours,
    /// Nothing: the file (or its directory) was removed.
    Missing,
    /// Another file: another daemon's socket, or anything else.
    Replaced,
}

impl ClaimedSocket {
    /// The listening socket's and the lock's descriptors, to keep open
    /// across an upgrade's exec.
    pub fn raw_fds(&self) -> (std::os::fd::RawFd, std::os::fd::RawFd) {
        use std::os::fd::AsRawFd;
        (self.listener.as_raw_fd(), self.lock.as_raw_fd())
    }

    /// The socket a previous image of this daemon claimed, from the
    /// descriptors it kept open: never bound again, never closed.
    ///
    /// # Safety
    ///
    /// Both must be open, the listener a listening unix socket bound at
    /// `path` and the lock its locked lock file, owned by nothing else.
    pub unsafe fn inherited(
        listener: std::os::fd::RawFd,
        lock: std::os::fd::RawFd,
        path: PathBuf,
    ) -> Result<Self> {
        use std::os::fd::FromRawFd;
        // SAFETY: as the caller promises.
        // Both stay open across exec until the restore is done: a rollback
        // hands them to the previous image again (`Handover::finish`).
        let (listener, lock) =
            unsafe { (UnixListener::from_raw_fd(listener), File::from_raw_fd(lock)) };
        let file = FileId::of_path(&path)
            .map_err(|error| Error::io(format!("reading {}", path.display()), error))?;
        Ok(Self {
            listener,
            path,
            file,
            lock,
        })
    }

    /// What is at the socket's path now.
    pub fn file(&self) -> SocketFile {
        match FileId::of_path(&self.path) {
            Ok(file) if file == self.file => SocketFile::Ours,
            Ok(_) => SocketFile::Replaced,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => SocketFile::Missing,
            // Unreadable (a directory made inaccessible): not provably ours.
            Err(_) => SocketFile::Replaced,
        }
    }

    /// Binds anew at the path after its file was removed.
    ///
    /// The directory is made again. The lock is kept if its file is still
    /// there, or taken again if not. Taking it fails with `AlreadyRunning`
    /// if another daemon took it meanwhile. The new listener replaces the
    /// old. Returns a handle to the new listener.
    pub fn claim_again(&mut self) -> Result<UnixListener> {
        private_directory(directory_of(&self.path))?;
        let lock_path = lock_path(&self.path);
        let lock_is_ours = FileId::of_path(&lock_path)
            .is_ok_and(|file| FileId::of_file(&self.lock).is_ok_and(|ours| ours == file));
        if !lock_is_ours {
            self.lock = take_lock(&self.path)?;
        }
        let listener = bind_owner_only(&self.path)?;
        let bound = FileId::of_path(&self.path)
            .map_err(|error| Error::io(format!("reading {}", self.path.display()), error))
            .and_then(|file| {
                let handle = listener
                    .try_clone()
                    .map_err(|error| Error::io("cloning the listener", error))?;
                Ok((file, handle))
            });
        match bound {
            Ok((file, handle)) => {
                self.listener = listener;
                self.file = file;
                Ok(handle)
            }
            Err(error) => {
                // Not left bound with nothing to accept on it. Found
                // missing again, it is bound again at the next look.
                let _ = std::fs::remove_file(&self.path);
                Err(error)
            }
        }
    }

    /// Removes the socket file if it is still ours.
    ///
    /// A socket another daemon bound in its place is never touched.
    pub fn remove(&self) {
        if self.file() != SocketFile::Ours {
            return;
        }
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

/// Whether a daemon holds the lock beside a socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lock {
    /// A daemon holds it: it is alive, whether or not its socket answers.
    Held,
    /// Nobody holds it: no daemon serves this path.
    Free,
    /// No lock file (its directory was removed, or no daemon ever ran).
    Absent,
}

/// Whether a daemon holds the lock beside `socket`.
///
/// It takes the lock shared for a moment when it is free. So a daemon
/// starting in that very moment would be refused as if another were
/// running.
pub fn lock_state(socket: &Path) -> std::io::Result<Lock> {
    let file = match File::open(lock_path(socket)) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Lock::Absent),
        Err(error) => return Err(error),
    };
    match file.try_lock_shared() {
        Ok(()) => Ok(Lock::Free),
        Err(TryLockError::WouldBlock) => Ok(Lock::Held),
        Err(TryLockError::Error(error)) => Err(error),
    }
}

/// Creates the socket's directory (0700), takes the lock, replaces a stale
/// socket file, and binds a socket that is 0600 from the start.
pub fn claim(path: &Path) -> Result<ClaimedSocket> {
    private_directory(directory_of(path))?;
    let lock = take_lock(path)?;

    if path.exists() {
        // A listener without our lock would be a daemon of another build.
        // A live socket is never stolen.
        if UnixStream::connect(path).is_ok() {
            return Err(Error::AlreadyRunning(path.to_path_buf()));
        }
        tracing::info!(path = %path.display(), "replacing a stale socket");
        std::fs::remove_file(path).map_err(|error| {
            Error::io(format!("removing stale socket {}", path.display()), error)
        })?;
    }

    let listener = bind_owner_only(path)?;
    let file = FileId::of_path(path)
        .map_err(|error| Error::io(format!("reading {}", path.display()), error))?;
    Ok(ClaimedSocket {
        listener,
        path: path.to_path_buf(),
        file,
        lock,
    })
}

fn directory_of(socket: &Path) -> &Path {
    socket
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Opens (creating it 0600) and locks the lock file beside `socket`.
fn take_lock(socket: &Path) -> Result<File> {
    let lock_path = lock_path(socket);
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&lock_path)
        .map_err(|error| Error::io(format!("opening lock file {}", lock_path.display()), error))?;
    match lock.try_lock() {
        Ok(()) => Ok(lock),
        Err(TryLockError::WouldBlock) => Err(Error::AlreadyRunning(socket.to_path_buf())),
        Err(TryLockError::Error(error)) => {
            Err(Error::io(format!("locking {}", lock_path.display()), error))
        }
    }
}

/// Binds and listens at `path` with a socket file that is 0600 from the
/// moment it exists.
///
/// Linux gives the file its socket's mode less the umask. So the mode is
/// set on the socket before it is bound, and the process-wide umask stays
/// untouched. That matters once other threads run: programs spawned
/// meanwhile would inherit a narrowed umask.
fn bind_owner_only(path: &Path) -> Result<UnixListener> {
    let binding =
        |error: rustix::io::Errno| Error::io(format!("binding {}", path.display()), error);
    let socket = rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(binding)?;
    rustix::fs::fchmod(&socket, Mode::from_raw_mode(0o600)).map_err(binding)?;
    let address = SocketAddrUnix::new(path).map_err(binding)?;
    rustix::net::bind(&socket, &address).map_err(binding)?;
    rustix::net::listen(&socket, libc::SOMAXCONN).map_err(binding)?;
    Ok(UnixListener::from(socket))
}

/// Makes `dir` exist; directories it creates are 0700.
///
/// An existing one is left as it is (it may be `/tmp`). A warning is logged
/// when others can enter it. The socket's own 0600 mode and the peer check
/// still keep them out.
fn private_directory(dir: &Path) -> Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|error| Error::io(format!("creating {}", dir.display()), error))?;
    let metadata = std::fs::metadata(dir)
        .map_err(|error| Error::io(format!("reading {}", dir.display()), error))?;
    // Another user who owns the directory (or may write to it without the
    // sticky bit) could swap the socket for their own. Such a directory is
    // refused.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_tells_a_live_daemon_from_a_gone_one() {
        let dir = tempfile::tempdir().expect("temp dir");
        let socket = dir.path().join("run").join("ptyd.sock");
        assert_eq!(lock_state(&socket).expect("state"), Lock::Absent);
        let claimed = claim(&socket).expect("claim");
        assert_eq!(lock_state(&socket).expect("state"), Lock::Held);
        // Looking does not take it: a second look, and a second claim,
        // still find it held.
        assert_eq!(lock_state(&socket).expect("state"), Lock::Held);
        assert!(matches!(claim(&socket), Err(Error::AlreadyRunning(_))));
        drop(claimed);
        assert_eq!(lock_state(&socket).expect("state"), Lock::Free);
        // Nor does a look at a free lock keep it.
        claim(&socket).expect("claim after the first daemon is gone");
    }
}
