//! Starting a program on a new PTY.
//!
//! This covers the environment it gets, its working directory, and the
//! file descriptors the daemon keeps.

use std::collections::{BTreeMap, HashMap};
use std::ffi::CString;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use portable_pty::{PtySize, native_pty_system};
use rustix::process::{Pid, PidfdFlags, Resource, Rlimit};

use crate::error::{Error, Result};
use crate::posix_spawn;

/// Held to open a PTY, whose descriptors are inheritable for a moment.
///
/// The spawns hold it shared, since they must not start a program in that
/// moment.
static PTY_OPENING: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// The open-file limit the daemon was started with, when it raised its own.
///
/// Its programs get this limit. Software written for the usual soft limit
/// of 1024 may `select()` on any descriptor it gets. Beyond 1023 that
/// corrupts memory instead of failing. systemd resets the limit for the
/// same reason.
static PROGRAMS_FD_LIMIT: std::sync::OnceLock<Rlimit> = std::sync::OnceLock::new();

/// Records the open-file limit to give programs: the daemon's own, from
/// before it raised it.
pub fn give_programs_fd_limit(limit: Rlimit) {
    let _ = PROGRAMS_FD_LIMIT.set(limit);
}

/// What to run and on what terminal, already validated.
#[derive(Debug, Clone)]
pub struct SpawnSpec {
    /// Program and arguments; empty starts the login shell.
    pub argv: Vec<String>,
    /// Working directory; `None` means the user's home.
    pub cwd: Option<PathBuf>,
    /// Variables merged over the clean base environment.
    pub env: HashMap<String, String>,
    /// Terminal width in cells.
    pub cols: u16,
    /// Terminal height in cells.
    pub rows: u16,
}

/// A running program and the descriptors the daemon drives it with.
pub struct Spawned {
    /// The program's pid; it leads its own session and process group.
    pub pid: Pid,
    /// The PTY's master side, close-on-exec and non-blocking.
    pub master: OwnedFd,
    /// A pidfd for the program, readable once it has exited.
    pub pidfd: OwnedFd,
    /// argv as started (the login shell's path when argv was empty).
    pub argv: Vec<String>,
    /// The directory it started in.
    pub cwd: PathBuf,
}

/// The environment every session starts from.
///
/// It is just enough for a login-like terminal, and nothing else of the
/// daemon's (no tokens, no sockets).
pub fn base_environment() -> BTreeMap<String, String> {
    let inherited = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let mut env = BTreeMap::new();
    env.insert(
        "PATH".into(),
        inherited("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into()),
    );
    for name in ["HOME", "USER", "LOGNAME", "SHELL"] {
        if let Some(value) = inherited(name) {
            env.insert(name.into(), value);
        }
    }
    env.entry("SHELL".into())
        .or_insert_with(|| "/bin/sh".into());
    let lang = inherited("LANG")
        .filter(|lang| lang.to_ascii_lowercase().replace('-', "").contains("utf8"))
        .unwrap_or_else(|| "C.UTF-8".into());
    env.insert("LANG".into(), lang);
    env.insert("TERM".into(), "xterm-256color".into());
    env.insert("COLORTERM".into(), "truecolor".into());
    env
}

/// Opens a PTY and starts the program on it as a session leader, with the
/// PTY as its controlling terminal.
///
/// It blocks, but briefly: it does not fork.
///
/// The program is started with `posix_spawn`, which glibc implements with
/// `clone(CLONE_VM | CLONE_VFORK)`. The daemon's memory is shared with the
/// child until it execs, instead of copied. So a spawn costs the same
/// whatever the daemon holds. A fork copies the page tables of every byte
/// of scrollback (measured in BENCHMARKS.md).
///
/// Nothing runs in the child but glibc's own steps. In order, they are: a
/// new session; every signal at its default action and none blocked; the
/// working directory; the PTY opened as stdin, stdout and stderr; exec.
/// The PTY is the session leader's first terminal, so it becomes its
/// controlling one. The daemon opens every descriptor close-on-exec, so
/// the child needs no sweep of stray ones.
pub fn spawn(spec: SpawnSpec) -> Result<Spawned> {
    let mut env = base_environment();
    env.extend(spec.env);
    let cwd = match spec.cwd {
        Some(cwd) => cwd,
        None => PathBuf::from(env.get("HOME").map(String::as_str).unwrap_or("/")),
    };
    if !Path::new(&cwd).is_dir() {
        return Err(Error::CwdNotFound(cwd));
    }
    // A directory without search permission would fail the child's chdir,
    // which posix_spawn reports as the program's EACCES.
    if rustix::fs::access(&cwd, rustix::fs::Access::EXEC_OK) == Err(rustix::io::Errno::ACCESS) {
        return Err(Error::CwdNotPermitted(cwd));
    }
    let (program, arg0, argv) = match spec.argv.split_first() {
        None => {
            let shell = env
                .get("SHELL")
                .cloned()
                .unwrap_or_else(|| "/bin/sh".into());
            // A leading '-' in argv[0] tells a shell it is a login shell.
            let name = Path::new(&shell)
                .file_name()
                .map_or(shell.as_str().into(), |name| name.to_string_lossy());
            (shell.clone(), format!("-{name}"), vec![shell])
        }
        Some((program, _)) => (program.clone(), program.clone(), spec.argv.clone()),
    };
    let not_found = |reason: String| Error::ProgramNotFound {
        program: program.clone(),
        reason,
    };
    // As execvp would, but in the session's PATH rather than the daemon's.
    let path = if program.contains('/') {
        PathBuf::from(&program)
    } else {
        which::which_in(&program, env.get("PATH"), &cwd)
            .map_err(|error| not_found(format!("no such program in PATH ({error})")))?
    };

    let size = PtySize {
        rows: spec.rows,
        cols: spec.cols,
        pixel_width: 0,
        pixel_height: 0,
    };
    // openpty opens both sides inheritable, and marks them close-on-exec
    // only after. A program started by another thread meanwhile would keep
    // this terminal open: no hang-up for its session, ever.
    let pair = {
        let _alone = PTY_OPENING
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        native_pty_system().openpty(size)
    };
    // A system call of the spawn that failed: a shortage the caller may
    // retry, or a fault.
    let failed = |what: &str, error: std::io::Error| {
        if is_shortage(error.raw_os_error()) {
            Error::NoResources {
                program: program.clone(),
                reason: format!("{what}: {error}"),
            }
        } else {
            Error::io(what, error)
        }
    };
    // portable-pty keeps only the text of openpty's error, which shows the
    // errno (`Os { code: 24, .. }`).
    let pair = pair.map_err(|error| {
        let text = format!("{error:#}");
        match os_code(&text) {
            Some(code) if is_shortage(Some(code)) => {
                failed("opening a PTY", std::io::Error::from_raw_os_error(code))
            }
            _ => Error::io("opening a PTY", std::io::Error::other(text)),
        }
    })?;
    let tty = pair
        .master
        .tty_name()
        .ok_or_else(|| Error::io("naming the PTY", std::io::ErrorKind::NotFound))?;
    let master_raw = pair
        .master
        .as_raw_fd()
        .ok_or_else(|| Error::io("reading the PTY master", std::io::ErrorKind::NotFound))?;
    // SAFETY: `pair.master` owns this descriptor and outlives the borrow.
    let master = rustix::io::fcntl_dupfd_cloexec(unsafe { BorrowedFd::borrow_raw(master_raw) }, 0)
        .map_err(|error| failed("duplicating the PTY master", error.into()))?;
    rustix::io::ioctl_fionbio(&master, true)
        .map_err(|error| Error::io("making the PTY master non-blocking", error))?;

    let args = std::iter::once(arg0.as_str())
        .chain(argv.iter().skip(1).map(String::as_str))
        .map(c_string)
        .collect::<Result<Vec<_>>>()?;
    let vars = env
        .iter()
        .map(|(name, value)| c_string(&format!("{name}={value}")))
        .collect::<Result<Vec<_>>>()?;
    let program_error = |error: std::io::Error| match error.raw_os_error() {
        Some(libc::E2BIG) => Error::invalid(
            "argv",
            format!(
                "the arguments and environment of {program:?} are longer than the system takes ({error})"
            ),
        ),
        errno if is_shortage(errno) => Error::NoResources {
            program: program.clone(),
            reason: error.to_string(),
        },
        // Not executable, a directory, or on a noexec mount.
        Some(libc::EACCES | libc::EPERM) => Error::ProgramNotPermitted {
            program: program.clone(),
            reason: error.to_string(),
        },
        _ => not_found(match error.kind() {
            std::io::ErrorKind::NotFound => format!("no such program on disk ({error})"),
            _ => error.to_string(),
        }),
    };
    let started = {
        let _no_pty_opening = PTY_OPENING
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        posix_spawn::Spawn {
            path: &c_string(&path.to_string_lossy())?,
            args: &args,
            vars: &vars,
            cwd: &c_string(&cwd.to_string_lossy())?,
            terminal: &c_string(&tty.to_string_lossy())?,
        }
        .run()
    };
    let pid = started.map_err(program_error)?;
    // posix_spawn has no step that sets a limit, so it is set from here,
    // right after the exec. That is microseconds into the program's start,
    // as a rule before its dynamic loader is done. A program that read its
    // limit first thing while this thread waited for a CPU would still see
    // the raised one. One that exited at once is gone already (ESRCH).
    if let Some(limit) = PROGRAMS_FD_LIMIT.get()
        && let Err(error) = rustix::process::prlimit(Some(pid), Resource::Nofile, *limit)
    {
        tracing::debug!(%pid, %error, "could not give the program its open-file limit");
    }
    // The child is ours and unreaped, so its pid cannot have been reused.
    let pidfd = match rustix::process::pidfd_open(pid, PidfdFlags::NONBLOCK) {
        Ok(pidfd) => pidfd,
        Err(error) => {
            end_unwatched(pid);
            return Err(failed("opening a pidfd", error.into()));
        }
    };
    // Closing the daemon's copy of the slave lets reads see EOF once the
    // program and its children are gone. The pidfd reaps the child.
    drop(pair);
    Ok(Spawned {
        pid,
        master,
        pidfd,
        argv,
        cwd,
    })
}

fn c_string(text: &str) -> Result<CString> {
    // Validation refuses NULs in argv, env and cwd before they get here, so
    // this is the daemon's own fault. The text is not echoed: it may be an
    // environment variable's value, perhaps a secret.
    CString::new(text).map_err(|error| Error::io("passing a string to exec", error))
}

/// Ends a program just started that nothing could watch.
///
/// Its pidfd or terminal could not be opened or registered. Left running,
/// it would go unseen and, once it exits, unreaped. It leads its own
/// process group, and has had no time to start others of its own.
pub fn end_unwatched(pid: Pid) {
    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty());
}

/// Whether an errno says the system (or this process) is short of what a
/// spawn takes.
///
/// A spawn takes processes, memory, descriptors and terminals. The caller
/// may try again later (`RESOURCE_EXHAUSTED`), unlike for a daemon fault.
fn is_shortage(errno: Option<i32>) -> bool {
    matches!(
        errno,
        Some(libc::EAGAIN | libc::ENOMEM | libc::EMFILE | libc::ENFILE | libc::ENOSPC)
    )
}

/// The errno in an error's text, as `std::io::Error`'s `Debug` shows it.
fn os_code(text: &str) -> Option<i32> {
    let (_, after) = text.split_once("code: ")?;
    let digits = after.split(|c: char| !c.is_ascii_digit()).next()?;
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_errno_is_read_from_portable_ptys_text() {
        let text = r#"failed to openpty: Os { code: 24, kind: Uncategorized, message: "Too many open files" }"#;
        assert_eq!(os_code(text), Some(libc::EMFILE));
        assert!(is_shortage(os_code(text)));
        assert_eq!(os_code("failed to openpty: something else"), None);
        assert_eq!(os_code("code: "), None);
    }
}
