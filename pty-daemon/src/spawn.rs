//! Starting a program on a new PTY: the environment it gets, its working
//! directory, and the file descriptors the daemon keeps.

use std::collections::{BTreeMap, HashMap};
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use portable_pty::{PtySize, native_pty_system};
use rustix::process::{Pid, PidfdFlags};

use crate::error::{Error, Result};

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

/// The environment every session starts from: just enough for a login-like
/// terminal, and nothing else of the daemon's (no tokens, no sockets).
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

/// Opens a PTY and starts the program on it as a session leader with the
/// PTY as its controlling terminal. Blocking: it forks.
///
/// portable-pty opens the pair; the program is started here rather than by
/// `SlavePty::spawn_command`, whose child enumerates `/proc/self/fd` to close
/// stray descriptors. With a thousand sessions that is thousands of closes
/// per spawn, and the /proc entries it creates make every later reap cost
/// milliseconds of kernel time. The daemon opens every descriptor
/// close-on-exec, so the child needs no such sweep.
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

    let (mut command, argv) = match spec.argv.split_first() {
        None => {
            let shell = env
                .get("SHELL")
                .cloned()
                .unwrap_or_else(|| "/bin/sh".into());
            let mut command = Command::new(&shell);
            // A leading '-' in argv[0] tells a shell it is a login shell.
            let name = Path::new(&shell)
                .file_name()
                .map_or(shell.as_str().into(), |name| name.to_string_lossy());
            command.arg0(format!("-{name}"));
            (command, vec![shell])
        }
        Some((program, args)) => {
            let mut command = Command::new(program);
            command.args(args);
            (command, spec.argv.clone())
        }
    };
    command.env_clear().envs(&env).current_dir(&cwd);

    let size = PtySize {
        rows: spec.rows,
        cols: spec.cols,
        pixel_width: 0,
        pixel_height: 0,
    };
    let pair = native_pty_system()
        .openpty(size)
        .map_err(|error| Error::io("opening a PTY", std::io::Error::other(format!("{error:#}"))))?;
    let tty = pair
        .master
        .tty_name()
        .ok_or_else(|| Error::io("naming the PTY", std::io::ErrorKind::NotFound))?;
    let slave = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY)
        .open(&tty)
        .map_err(|error| Error::io(format!("opening {}", tty.display()), error))?;
    let stdio = |slave: &std::fs::File| {
        slave
            .try_clone()
            .map(Stdio::from)
            .map_err(|error| Error::io("duplicating the PTY slave", error))
    };
    command
        .stdin(stdio(&slave)?)
        .stdout(stdio(&slave)?)
        .stderr(stdio(&slave)?);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        command.pre_exec(|| {
            // Ignored dispositions survive exec; a launcher's nohup must not
            // leave sessions deaf to hang-ups.
            for signal in [
                libc::SIGHUP,
                libc::SIGINT,
                libc::SIGQUIT,
                libc::SIGTERM,
                libc::SIGALRM,
                libc::SIGCHLD,
            ] {
                libc::signal(signal, libc::SIG_DFL);
            }
            rustix::process::setsid()?;
            // stdin is the slave: make it the controlling terminal.
            rustix::process::ioctl_tiocsctty(std::io::stdin())?;
            Ok(())
        });
    }
    // Everything fallible that does not need the child comes first, so a
    // failure after the fork is rare and still cleans up after itself.
    let master_raw = pair
        .master
        .as_raw_fd()
        .ok_or_else(|| Error::io("reading the PTY master", std::io::ErrorKind::NotFound))?;
    // SAFETY: `pair.master` owns this descriptor and outlives the borrow.
    let master = rustix::io::fcntl_dupfd_cloexec(unsafe { BorrowedFd::borrow_raw(master_raw) }, 0)
        .map_err(|error| Error::io("duplicating the PTY master", error))?;
    rustix::io::ioctl_fionbio(&master, true)
        .map_err(|error| Error::io("making the PTY master non-blocking", error))?;
    let mut child = command.spawn().map_err(|error| Error::ProgramNotFound {
        program: argv.first().cloned().unwrap_or_default(),
        reason: match error.kind() {
            std::io::ErrorKind::NotFound => format!("no such program in PATH or on disk ({error})"),
            _ => error.to_string(),
        },
    })?;
    let pid = Pid::from_child(&child);
    // The child is ours and unreaped, so its pid cannot have been reused.
    let pidfd = match rustix::process::pidfd_open(pid, PidfdFlags::NONBLOCK) {
        Ok(pidfd) => pidfd,
        Err(error) => {
            // Nothing could watch it: end it now rather than leak it.
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::io("opening a pidfd", error));
        }
    };
    // Closing the daemon's copies of the slave lets reads see EOF once the
    // program and its children are gone. Dropping `child` neither waits nor
    // kills; the pidfd reaps it.
    drop((pair, slave, command, child));
    Ok(Spawned {
        pid,
        master,
        pidfd,
        argv,
        cwd,
    })
}
