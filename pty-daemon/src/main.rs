//! `pty-daemon`: claim the socket, optionally detach, then serve.

fn main() -> anyhow::Result<()> {
    pty_daemon::cli::main()
}
