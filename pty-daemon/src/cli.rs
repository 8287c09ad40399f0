//! The daemon's command line.
//!
//! The `pty-daemon` binary and the host-service binary share it. The
//! host-service binary uses it when it runs as the daemon.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use crate::listener::{self, ClaimedSocket};
use crate::session_settings::SessionSettings;
use crate::upgrade::restore::Handover;
use anyhow::Context;
use clap::Parser;

/// The holdfast PTY daemon: owns terminals and the programs in them, and
/// keeps them running when everything above it restarts.
#[derive(Debug, Parser)]
#[command(name = "pty-daemon", version, about)]
pub struct Args {
    /// Unix socket to serve on [default: $XDG_RUNTIME_DIR/holdfast/ptyd.sock,
    /// or /tmp/holdfast-<uid>/ptyd.sock].
    #[arg(long, env = "HOLDFAST_DAEMON_SOCKET")]
    socket: Option<PathBuf>,
    /// Detach from the launcher: new session, stdio to the log file. The
    /// launcher returns once the socket accepts connections.
    #[arg(long, env = "HOLDFAST_DAEMONIZE")]
    daemonize: bool,
    /// Log file when detached [default: the socket path with `.log`].
    #[arg(long, env = "HOLDFAST_DAEMON_LOG")]
    log_file: Option<PathBuf>,
    /// Scrollback kept per session, in bytes.
    #[arg(long, env = "HOLDFAST_SCROLLBACK_BYTES", default_value_t = 1 << 20,
          value_parser = clap::value_parser!(u64).range(1024..=(1 << 30)))]
    scrollback_bytes: u64,
    /// How long an exited session stays listed with its exit status, in
    /// seconds; 0 forgets it as soon as its exit is recorded (it can then
    /// no longer be attached to or listed).
    #[arg(long, env = "HOLDFAST_EXIT_RETENTION_SECS", default_value_t = 600)]
    exit_retention_secs: u64,
    /// How long reading a session's terminal waits for an attached client
    /// that has fallen over half the scrollback behind to read half a
    /// scrollback more, before reading on without it (it is then told what
    /// it missed). Until then the program's output is paced to that
    /// client, so a client that keeps reading loses nothing.
    #[arg(long, env = "HOLDFAST_ATTACHER_PATIENCE_MS", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(0..=600_000))]
    attacher_patience_ms: u64,
    /// Log format.
    #[arg(long, env = "HOLDFAST_LOG_FORMAT", value_enum, default_value_t = holdfast_plumbing::logging::LogFormat::Text)]
    log_format: holdfast_plumbing::logging::LogFormat,
    /// Print this daemon's version and the upgrade state formats it reads,
    /// and exit: how an upgrading daemon checks its candidate.
    #[arg(long = "upgrade-probe", hide = true)]
    upgrade_probe: bool,
    /// The state file an upgrading daemon handed on (set by the daemon).
    #[arg(long = "restore-state-fd", hide = true, requires = "previous_image_fd")]
    restore_state_fd: Option<i32>,
    /// The previous image's executable, to go back to (set by the daemon).
    #[arg(long = "previous-image-fd", hide = true)]
    previous_image_fd: Option<i32>,
    /// This image is a rollback (set by the daemon).
    #[arg(long, hide = true)]
    rollback: bool,
}

/// Parses the process's arguments and runs the daemon until it stops.
pub fn main() -> anyhow::Result<()> {
    run(Args::parse())
}

/// Runs the daemon with parsed arguments.
///
/// It claims the socket, optionally detaches, then serves until SIGTERM.
pub fn run(args: Args) -> anyhow::Result<()> {
    if args.upgrade_probe {
        println!(
            "{}",
            crate::upgrade::probe::answer(crate::version::version())
        );
        return Ok(());
    }
    let handover = args.restore_state_fd.map(|state_fd| Handover {
        state_fd,
        previous_fd: args.previous_image_fd.unwrap_or(-1),
        rollback: args.rollback,
    });
    // An image restoring after an upgrade is detached already.
    let daemonize = args.daemonize && handover.is_none();
    // Colour only for a person at a terminal, never into the detached log.
    let ansi = !daemonize && std::io::stderr().is_terminal();
    holdfast_plumbing::logging::init(args.log_format, ansi);
    let socket_path = args
        .socket
        .unwrap_or_else(holdfast_plumbing::paths::default_socket_path);
    let restoring = handover.map(|handover| {
        let (state, rings) = handover.read();
        (handover, state, rings)
    });
    let socket = match &restoring {
        // SAFETY: the previous image kept both open for this one.
        Some((handover, state, _)) => unsafe {
            ClaimedSocket::inherited(
                state.listener_fd,
                state.lock_fd,
                state.socket_path.clone().into(),
            )
        }
        .unwrap_or_else(|error| handover.roll_back(&error.to_string())),
        // Claimed before detaching, so "already running" and permission
        // errors reach the launcher's terminal and exit status.
        None => listener::claim(&socket_path)
            .with_context(|| format!("cannot serve on {}", socket_path.display()))?,
    };
    if daemonize {
        let log_path = args
            .log_file
            .unwrap_or_else(|| socket_path.with_extension("log"));
        detach(&log_path)?;
    }
    raise_fd_limit();
    reap_children_ourselves();
    let settings = SessionSettings {
        // Bounded to 1 GiB by the parser, so it fits.
        scrollback_bytes: args.scrollback_bytes as usize,
        exit_retention: Duration::from_secs(args.exit_retention_secs),
        attacher_patience: Duration::from_millis(args.attacher_patience_ms),
    };
    // Two small fixed pools. Sessions are tasks, not threads. The terminals
    // are read on a thread of their own, so output, however much of it
    // there is, never queues ahead of a request. With fifty sessions
    // flooding, a `List` waited 30 ms (p50) behind their reads when both
    // shared one pool. With the pools apart it waited 0.2 ms (BENCHMARKS.md,
    // scenario 2).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(4)
        .thread_name("ptyd")
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let terminals = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(1)
        .thread_name("ptyd-terminals")
        .enable_all()
        .build()
        .context("starting the terminals' runtime")?;
    runtime.block_on(crate::run(
        socket,
        settings,
        terminals.handle().clone(),
        restoring,
    ))?;
    // What is left of the connections goes first, then the terminals.
    drop(runtime);
    drop(terminals);
    Ok(())
}

/// Double-forks into a new session with stdio on the log file.
///
/// It runs before the runtime starts, because forking a multi-threaded
/// process is unsafe.
fn detach(log_path: &std::path::Path) -> anyhow::Result<()> {
    let log = crate::log_file::open(log_path)
        .with_context(|| format!("opening log file {}", log_path.display()))?;
    let stderr = log.try_clone().context("duplicating the log file")?;
    // Programs inherit the daemon's umask. They must get the one they would
    // from a terminal, which is the launcher's. Daemonize would set 0o027
    // unless told. The socket and the log do not depend on it: both are
    // 0600 as made (listener.rs, log_file.rs). The umask is read by setting
    // it, then put back at once.
    let launchers = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
    rustix::process::umask(launchers);
    daemonize::Daemonize::new()
        .working_directory("/")
        .umask(launchers.as_raw_mode())
        .stdout(log)
        .stderr(stderr)
        .start()
        .context("detaching")?;
    Ok(())
}

/// Restores SIGCHLD's default disposition.
///
/// A launcher may leave SIGCHLD ignored, and an ignored signal stays
/// ignored across exec. The kernel would then reap the programs itself,
/// and their exit statuses would be lost. The daemon reaps them, through
/// their pidfds.
fn reap_children_ourselves() {
    // SAFETY: restoring a signal's default disposition, before the
    // runtime's threads start; no handler of ours is replaced.
    let previous = unsafe { libc::signal(libc::SIGCHLD, libc::SIG_DFL) };
    if previous == libc::SIG_ERR {
        tracing::warn!(error = %std::io::Error::last_os_error(), "could not restore SIGCHLD's default disposition");
    }
}

/// Raises the open-file soft limit to the hard limit.
///
/// Each session holds two descriptors (PTY master, pidfd). The usual soft
/// limit of 1024 would cap the daemon near 500 sessions. The programs get
/// back the limit the daemon was started with (`spawn.rs`).
fn raise_fd_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        let raised = rustix::process::Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        match setrlimit(Resource::Nofile, raised) {
            Ok(()) => {
                tracing::debug!(limit = ?limit.maximum, "raised the open-file limit");
                crate::spawn::give_programs_fd_limit(limit);
            }
            Err(error) => tracing::warn!(%error, "could not raise the open-file limit"),
        }
    }
}
