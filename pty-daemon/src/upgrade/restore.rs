//! The new image's side of an upgrade: read the state, or go back.
//!
//! A state this image cannot read (corrupt, or a format it does not know)
//! and a failure while restoring both lead to the previous image: its
//! executable was kept open, and it is executed again with the same state.
//! An image that is itself such a rollback has nothing to go back to.

use std::ffi::OsString;
use std::fs::File;
use std::os::fd::{FromRawFd, RawFd};

use crate::upgrade::state::{self, Rings, pb::DaemonState};
use crate::upgrade::{ROLLBACK_FLAG, exec};

/// Where a restoring image finds what it takes over.
#[derive(Debug, Clone, Copy)]
pub struct Handover {
    /// The sealed state file.
    pub state_fd: RawFd,
    /// The previous image's executable, to go back to.
    pub previous_fd: RawFd,
    /// Whether this image is a rollback already.
    pub rollback: bool,
}

impl Handover {
    /// The state handed on, and the rings after it; goes back to the
    /// previous image if it cannot be read.
    pub fn read(self) -> (DaemonState, Rings) {
        let reading = std::time::Instant::now();
        // SAFETY: the previous image kept it open for this one, which owns
        // it now. It stays open while the rings are read, and so across a
        // rollback's exec.
        let file = unsafe { File::from_raw_fd(self.state_fd) };
        let read = state::read(file);
        tracing::debug!(took = ?reading.elapsed(), "read the state handed on");
        read.unwrap_or_else(|error| self.roll_back(&error.to_string()))
    }

    /// Goes back to the previous image with the same state. Never returns:
    /// if even that fails, the daemon exits (and its sessions are lost).
    pub fn roll_back(self, why: &str) -> ! {
        if self.rollback {
            tracing::error!(%why, "the rolled-back image cannot restore either; exiting");
            std::process::exit(70);
        }
        tracing::error!(%why, "cannot restore; going back to the previous image");
        let mut argv: Vec<OsString> = std::env::args_os().collect();
        argv[0] = OsString::from("pty-daemon");
        argv.push(ROLLBACK_FLAG.into());
        let error = exec::exec_fd(self.previous_fd, &argv);
        tracing::error!(%error, "going back to the previous image failed; exiting");
        std::process::exit(70)
    }

    /// Tests only: an image whose file name is `HOLDFAST_TEST_REFUSE_RESTORE`
    /// fails every restore at its very end, as one with a bug in its
    /// restore would: everything was taken over, and must go back whole.
    pub fn refused_for_tests(&self) -> bool {
        let Some(refused) = std::env::var_os("HOLDFAST_TEST_REFUSE_RESTORE") else {
            return false;
        };
        !self.rollback
            && std::env::current_exe()
                .ok()
                .and_then(|exe| exe.file_name().map(|name| name == refused.as_os_str()))
                .unwrap_or(false)
    }

    /// Ends the handover once the restore is done.
    ///
    /// It closes the previous image's executable, which only a rollback
    /// needed. Every descriptor kept across the exec (socket, terminals,
    /// rings) is closed on exec again, so no program spawned from now on
    /// inherits one. Until now a rollback's exec had to keep them. One
    /// call marks them all: no descriptor of the daemon's above stdio is
    /// meant for a child.
    pub fn finish(self) {
        // SAFETY: it was kept open for this image, which owns it.
        drop(unsafe { File::from_raw_fd(self.previous_fd) });
        exec::close_all_on_exec();
    }
}
