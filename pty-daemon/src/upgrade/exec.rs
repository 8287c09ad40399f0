//! The system calls of an upgrade: the sealed state file, descriptors kept
//! across exec, and the exec itself.

use std::ffi::{CString, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{MemfdFlags, SealFlags};
use rustix::io::FdFlags;

/// A new, empty state file (a memfd that can be sealed).
pub fn state_file() -> io::Result<File> {
    let fd = rustix::fs::memfd_create(
        "holdfast-daemon-state",
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
    )?;
    Ok(File::from(fd))
}

/// Seals the state file, so that nothing can change it any more.
pub fn seal(file: &File) -> io::Result<()> {
    rustix::fs::fcntl_add_seals(
        file,
        SealFlags::SHRINK | SealFlags::GROW | SealFlags::WRITE | SealFlags::SEAL,
    )?;
    Ok(())
}

/// Sets close-on-exec on every descriptor above stdio.
pub fn close_all_on_exec() {
    // SAFETY: it only sets a flag on descriptors, closing none.
    let marked = unsafe { libc::close_range(3, libc::c_uint::MAX, libc::CLOSE_RANGE_CLOEXEC as _) };
    if marked == 0 {
        return;
    }
    // Before Linux 5.11: one at a time.
    let Ok(open) = std::fs::read_dir("/proc/self/fd") else {
        tracing::error!("cannot list this process's descriptors to close them on exec");
        return;
    };
    for fd in open
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<RawFd>().ok())
    {
        if fd > 2 {
            // SAFETY: only a flag is set, on a descriptor that may have
            // closed since it was listed (the call then fails harmlessly).
            let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
            let _ = rustix::io::fcntl_setfd(fd, FdFlags::CLOEXEC);
        }
    }
}

/// Keeps `fd` open across exec (`keep`), or closes it there again.
pub fn keep_across_exec(fd: impl AsFd, keep: bool) -> io::Result<()> {
    let flags = if keep {
        FdFlags::empty()
    } else {
        FdFlags::CLOEXEC
    };
    rustix::io::fcntl_setfd(fd, flags)?;
    Ok(())
}

/// Replaces this program image with `program`, run as `argv`, with this
/// environment. Returns only on failure.
pub fn exec(program: &Path, argv: &[OsString]) -> io::Error {
    let Ok(program) = CString::new(program.as_os_str().as_bytes()) else {
        return io::Error::other("the path has a NUL byte");
    };
    let Some(argv) = c_strings(argv) else {
        return io::Error::other("an argument has a NUL byte");
    };
    let mut pointers: Vec<*const libc::c_char> = argv.iter().map(|arg| arg.as_ptr()).collect();
    pointers.push(std::ptr::null());
    // SAFETY: both are NUL-terminated arrays of NUL-terminated strings that
    // outlive the call; `environ` is the process's own environment.
    unsafe { libc::execv(program.as_ptr(), pointers.as_ptr()) };
    io::Error::last_os_error()
}

/// As [`exec`], of the open executable `fd` (the image to go back to).
pub fn exec_fd(fd: RawFd, argv: &[OsString]) -> io::Error {
    let Some(argv) = c_strings(argv) else {
        return io::Error::other("an argument has a NUL byte");
    };
    let mut pointers: Vec<*const libc::c_char> = argv.iter().map(|arg| arg.as_ptr()).collect();
    pointers.push(std::ptr::null());
    unsafe extern "C" {
        static environ: *const *const libc::c_char;
    }
    // SAFETY: as in `exec`; `environ` is read as the process's own.
    unsafe { libc::fexecve(fd, pointers.as_ptr(), environ) };
    io::Error::last_os_error()
}

fn c_strings(args: &[OsString]) -> Option<Vec<CString>> {
    args.iter()
        .map(|arg| CString::new(arg.as_bytes()).ok())
        .collect()
}
