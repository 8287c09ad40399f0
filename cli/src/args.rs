//! The command line's arguments, as clap parses them.

use clap::{Parser, Subcommand};
use clap_complete::engine::ArgValueCandidates;
use holdfast_api::proto::host::v1 as pb;

use crate::attach;
use crate::clients::DEFAULT_ADDR;
use crate::completion;

/// Keep terminal sessions alive and visible across restarts.
#[derive(Debug, Clone, Parser)]
#[command(name = "holdfast", version)]
pub(crate) struct Cli {
    /// The host-service to talk to: host:port, as grpcurl takes it, or
    /// an http:// URL.
    #[arg(
        long,
        env = "HOLDFAST_ADDR",
        default_value = DEFAULT_ADDR,
        global = true
    )]
    pub(crate) addr: String,
    /// The host-service's bearer token, when it requires one.
    #[arg(
        long,
        env = "HOLDFAST_AUTH_TOKEN",
        hide_env_values = true,
        global = true
    )]
    pub(crate) auth_token: Option<String>,
    /// The key that detaches `attach` and `new --attach`: ^ and a letter
    /// or one of @\]^_, or `none`.
    #[arg(
        long,
        env = "HOLDFAST_DETACH_KEY",
        default_value = "^]",
        value_parser = attach::DetachKey::parse,
        global = true
    )]
    pub(crate) detach_key: attach::DetachKey,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Clone, Subcommand)]
pub(crate) enum Command {
    /// Create, list or close workspaces.
    #[command(subcommand)]
    Workspace(WorkspaceCommand),
    /// Start a session (the login shell, or the command after `--`).
    New {
        /// Workspace name or id [default: "default", created if missing].
        #[arg(long, short, add = ArgValueCandidates::new(completion::workspaces))]
        workspace: Option<String>,
        /// Name to find it by and show it under, one no live session has;
        /// titles the program sets do not change it [default: the
        /// command].
        #[arg(long, short, visible_alias = "title", visible_short_alias = 't')]
        name: Option<String>,
        /// Keep it out of lists (e.g. a teardown runner).
        #[arg(long)]
        hidden: bool,
        /// Attach this terminal to it at once, from its first byte, as
        /// `holdfast attach` does (one call: `StartSession`).
        #[arg(long, short)]
        attach: bool,
        /// Set NAME in the session's environment; a bare NAME passes on
        /// its value here. The session gets this shell's environment
        /// anyway, but for the variables of this terminal (TERM and the
        /// like: the session has a terminal of its own).
        #[arg(long = "env", short, value_name = "NAME=VALUE")]
        env: Vec<String>,
        /// Start from the daemon's clean environment (PATH, HOME, USER,
        /// SHELL, LANG, TERM) instead of this shell's, plus any --env.
        #[arg(long)]
        clean_env: bool,
        /// Working directory, relative to this one [default: this one],
        /// as tmux's `new-session -c` takes it.
        #[arg(long, short = 'c', value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
        cwd: Option<std::path::PathBuf>,
        /// The command and its arguments.
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// List a workspace's live sessions, attached or not.
    Ls {
        /// Workspace name or id [default: "default"].
        #[arg(long, short, add = ArgValueCandidates::new(completion::workspaces))]
        workspace: Option<String>,
        /// The sessions of every open workspace, with their workspace's
        /// name.
        #[arg(long, short, conflicts_with = "workspace")]
        all: bool,
        /// The sessions of every host-service sharing this one's database,
        /// with a HOST column; a host that does not answer is named, and
        /// its sessions shown as last recorded. With --all, of every open
        /// workspace.
        #[arg(long)]
        all_hosts: bool,
        /// Keep the list on screen and up to date, told of each change by
        /// the host-service (as `kubectl get -w`); Ctrl-C ends it.
        #[arg(long, conflicts_with_all = ["all", "all_hosts"])]
        watch: bool,
        /// The sessions that ended on their own instead, the most recent
        /// first: how each ended, when, and how long it ran (kept as long
        /// as their rows are; a disposed one is gone).
        #[arg(long, short, conflicts_with_all = ["watch", "all_hosts"])]
        ended: bool,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Count a workspace's sessions that nothing is attached to.
    Count {
        /// Workspace name or id [default: "default"].
        #[arg(long, short, add = ArgValueCandidates::new(completion::workspaces))]
        workspace: Option<String>,
    },
    /// Send keys and text to a session's input, as if typed, as tmux's
    /// `send-keys` does: a word that names a key (`C-c`, `M-x`, `Enter`,
    /// `Escape`, `Tab`, `Up`, `PageDown`, `F1`…) is that key, any other
    /// word its text (`\n` is not added); `-` alone sends this command's
    /// input, to its end (any size).
    Send {
        /// The session: its id, a unique start of it, its name or its title.
        #[arg(add = ArgValueCandidates::new(completion::sessions))]
        id: String,
        /// Keys and text, in order; or `-` for this command's input.
        #[arg(required = true, allow_hyphen_values = true)]
        keys: Vec<String>,
        /// Send every word as its text: no key names.
        #[arg(long, short)]
        literal: bool,
    },
    /// Attach this terminal to a session: its screen as it is, then its
    /// output and your keystrokes; Ctrl-] detaches and leaves it running.
    Attach {
        /// The session: its id, a unique start of it, its name or its title
        /// [default: the only live session, as `tmux attach` finds it].
        #[arg(add = ArgValueCandidates::new(completion::sessions))]
        id: Option<String>,
        /// Replay the output held (scrollback first) instead of drawing
        /// the screen as it is.
        #[arg(long)]
        replay: bool,
        /// Only look: keys (but the detach key) go nowhere, and this
        /// terminal's size never becomes the session's.
        #[arg(long, short)]
        read_only: bool,
    },
    /// Describe a session, running or ended: its command, directory,
    /// state (exit status once it ended), size and times.
    Show {
        /// The session: its id, a unique start of it, its name or its title.
        #[arg(add = ArgValueCandidates::new(completion::sessions))]
        id: String,
        /// Print JSON instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Print what a session's terminal shows now, as text (as tmux's
    /// `capture-pane -p` does), for scripts and agents; `--ansi` prints the
    /// escape sequences that draw it, colours and modes included.
    Screen {
        /// The session: its id, a unique start of it, its name or its title.
        #[arg(add = ArgValueCandidates::new(completion::sessions))]
        id: String,
        /// Print the escape sequences that draw the screen instead of text.
        #[arg(long)]
        ansi: bool,
        /// Print up to this many lines that scrolled off the top first
        /// (the daemon keeps 200), as `capture-pane -S -N` does.
        #[arg(long, short = 'S', value_name = "LINES", conflicts_with = "ansi")]
        scrollback: Option<u32>,
    },
    /// Give a session a new name, as `tmux rename-session` does; lists
    /// show it and commands find the session by it.
    Rename {
        /// The session: its id, a unique start of it, its name or its title.
        #[arg(add = ArgValueCandidates::new(completion::sessions))]
        id: String,
        /// Its new name.
        name: String,
    },
    /// Print a session's output so far without attaching to it; `-f`
    /// follows it to its exit. Piped, the bytes are as its program wrote
    /// them; to a terminal, the text, which cannot change the terminal
    /// (or, for a full-screen program, its screen as text).
    Logs {
        /// The session: its id, a unique start of it, its name or its title.
        #[arg(add = ArgValueCandidates::new(completion::sessions))]
        id: String,
        /// Go on printing what it writes next, until it exits, as `tail
        /// -f` does (this counts it as attached).
        #[arg(long, short)]
        follow: bool,
        /// Print the bytes as the program wrote them, escape sequences and
        /// all, even to a terminal (which they may change).
        #[arg(long)]
        raw: bool,
    },
    /// Wait for a session to end; print how (`exit 0`, `signal 15`) and
    /// exit as it did (128 + the signal), as `docker wait` does. Waiting
    /// does not count it as attached or hold its program up.
    Wait {
        /// The session: its id, a unique start of it, its name or its title.
        #[arg(add = ArgValueCandidates::new(completion::sessions))]
        id: String,
    },
    /// Show whether the host-service and its daemon are up, with versions,
    /// pids and paths.
    Status,
    /// List the host-services sharing this one's database (a fleet on one
    /// PostgreSQL): name, id, address, and whether each is alive.
    Hosts,
    /// Upgrade the pty-daemon in place to the host-service's own version:
    /// same daemon pid, every session kept, attached clients see a pause.
    UpgradeDaemon {
        /// Upgrade even a daemon that runs that version already.
        #[arg(long)]
        force: bool,
    },
    /// Print the completion script for a shell, e.g.
    /// `source <(holdfast completions bash)` in ~/.bashrc, or
    /// `holdfast completions fish > ~/.config/fish/completions/holdfast.fish`.
    /// It completes commands and flags, and the names of live sessions and
    /// open workspaces, asked of the host-service at each TAB.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Dispose of a session: it is killed and never listed again. Its
    /// programs get SIGHUP (as when a terminal closes), then SIGKILL for
    /// what is left after 1 s, unless told otherwise (`-s TERM -t 30`, as
    /// `docker stop -t 30` gives). A root shell in it (`sudo -i`) has its
    /// terminal hung up instead, as tmux's kill-session does.
    Kill {
        /// The session: its id, a unique start of it, its name or its title.
        #[arg(add = ArgValueCandidates::new(completion::sessions))]
        id: String,
        /// The signal to send first: HUP, INT, QUIT, TERM or KILL (a
        /// number or a SIG name works too).
        #[arg(long, short, value_parser = parse_signal, default_value = "HUP")]
        signal: pb::Signal,
        /// Seconds its programs have to exit before SIGKILL (up to 600).
        #[arg(long = "time", short = 't', value_name = "SECONDS",
              value_parser = clap::value_parser!(u32).range(0..=600))]
        time: Option<u32>,
    },
}

#[derive(Debug, Clone, Subcommand)]
pub(crate) enum WorkspaceCommand {
    /// Create a workspace; refused while an open one has the name.
    Create {
        /// Its name.
        name: String,
    },
    /// List workspaces.
    List,
    /// Close a workspace, disposing of its sessions.
    Close {
        /// Workspace name or id.
        #[arg(add = ArgValueCandidates::new(completion::workspaces))]
        workspace: String,
    },
}

/// A signal a disposal sends, as people write it: `TERM`, `SIGTERM`,
/// `term` or `15`.
pub(crate) fn parse_signal(text: &str) -> Result<pb::Signal, String> {
    let upper = text.to_ascii_uppercase();
    let name = upper.strip_prefix("SIG").unwrap_or(&upper);
    let signal = match name {
        "HUP" | "1" => pb::Signal::Hup,
        "INT" | "2" => pb::Signal::Int,
        "QUIT" | "3" => pb::Signal::Quit,
        "KILL" | "9" => pb::Signal::Kill,
        "TERM" | "15" => pb::Signal::Term,
        _ => return Err(format!("{text:?} is not HUP, INT, QUIT, TERM or KILL")),
    };
    Ok(signal)
}
