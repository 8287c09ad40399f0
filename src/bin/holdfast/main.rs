//! `holdfast`: the command line for people at a terminal. It talks to the
//! host-service, like every other client.

use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use clap_complete::engine::ArgValueCandidates;
use holdfast::proto::host::v1 as pb;
use holdfast::proto::host::v1::status_service_client::StatusServiceClient;
use holdfast::proto::host::v1::terminal_service_client::TerminalServiceClient;
use holdfast::proto::host::v1::workspace_service_client::WorkspaceServiceClient;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::{Interceptor, interceptor::InterceptedService};
use tonic::transport::Channel;

use crate::stdout::{say, tell};

/// Keep terminal sessions alive and visible across restarts.
#[derive(Debug, Parser)]
#[command(name = "holdfast", version)]
struct Cli {
    /// The host-service to talk to: host:port, as grpcurl takes it, or
    /// an http:// URL.
    #[arg(
        long,
        env = "HOLDFAST_ADDR",
        default_value = DEFAULT_ADDR,
        global = true
    )]
    addr: String,
    /// The host-service's bearer token, when it requires one.
    #[arg(
        long,
        env = "HOLDFAST_AUTH_TOKEN",
        hide_env_values = true,
        global = true
    )]
    auth_token: Option<String>,
    /// The key that detaches `attach` and `new --attach`: ^ and a letter
    /// or one of @\]^_, or `none`.
    #[arg(
        long,
        env = "HOLDFAST_DETACH_KEY",
        default_value = "^]",
        value_parser = attach::DetachKey::parse,
        global = true
    )]
    detach_key: attach::DetachKey,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
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
    /// Send text to a session's input, as if typed (`\n` is not added).
    Send {
        /// The session: its id, a unique start of it, its name or its title.
        #[arg(add = ArgValueCandidates::new(completion::sessions))]
        id: String,
        /// The text.
        text: String,
    },
    /// Attach this terminal to a session: output (scrollback first) and
    /// keystrokes; Ctrl-] detaches and leaves it running.
    Attach {
        /// The session: its id, a unique start of it, its name or its title
        /// [default: the only live session, as `tmux attach` finds it].
        #[arg(add = ArgValueCandidates::new(completion::sessions))]
        id: Option<String>,
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
    /// Give a session a new name, as `tmux rename-session` does; lists
    /// show it and commands find the session by it.
    Rename {
        /// The session: its id, a unique start of it, its name or its title.
        #[arg(add = ArgValueCandidates::new(completion::sessions))]
        id: String,
        /// Its new name.
        name: String,
    },
    /// Print a session's output so far, as its program wrote it (to a
    /// terminal, without the queries a terminal would answer), without
    /// attaching to it; `-f` follows it to its exit.
    Logs {
        /// The session: its id, a unique start of it, its name or its title.
        #[arg(add = ArgValueCandidates::new(completion::sessions))]
        id: String,
        /// Go on printing what it writes next, until it exits, as `tail
        /// -f` does (this counts it as attached).
        #[arg(long, short)]
        follow: bool,
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

#[derive(Debug, Subcommand)]
enum WorkspaceCommand {
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

/// The largest answer the CLI takes from the host-service.
const MAX_ANSWER_BYTES: usize = 256 << 20;

/// The host-service's address when none is given: its default.
const DEFAULT_ADDR: &str = "127.0.0.1:7077";

/// The workspace used when none is named.
const DEFAULT_WORKSPACE: &str = "default";

mod attach;
mod completion;
mod environment;
mod logs;
mod naming;
mod own_server;
mod shown;
mod stale_queries;
mod stdout;
mod terminal_modes;

/// The channel, with the bearer token (if any) on every request.
type Transport = InterceptedService<Channel, Bearer>;

struct Clients {
    status: StatusServiceClient<Transport>,
    workspaces: WorkspaceServiceClient<Transport>,
    terminals: TerminalServiceClient<Transport>,
}

/// Adds `authorization: Bearer <token>` when a token is set.
#[derive(Clone)]
struct Bearer(Option<MetadataValue<Ascii>>);

impl Interceptor for Bearer {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(value) = &self.0 {
            request
                .metadata_mut()
                .insert("authorization", value.clone());
        }
        Ok(request)
    }
}

fn main() {
    // Before anything is printed, and with no runtime running: completing
    // asks the host-service on a runtime of its own.
    completion::complete_if_asked();
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let code = match runtime.map_err(anyhow::Error::from).map(|runtime| {
        let ran =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runtime.block_on(run(cli))));
        // Never dropped, not even by a panic: dropping a runtime waits for
        // its blocking threads, and one may be reading the keyboard
        // (attach), which only a key would end.
        std::mem::forget(runtime);
        ran.unwrap_or_else(|_| std::process::exit(101))
    }) {
        Ok(Ok(code)) => code,
        Ok(Err(error)) | Err(error) => {
            tell!("holdfast: {error:#}\n");
            1
        }
    };
    std::process::exit(code.into());
}

/// Flow-control windows of the connection to the host-service. An output
/// stream whose reader stops (`holdfast logs -f ID | less`, a paused
/// terminal) must be held back by flow control before h2 drops the whole
/// connection for the small frames it holds unread (see
/// `holdfast::small_frames`): with hyper's defaults (2 MiB a stream, 5 MiB
/// the connection) `logs -f` of a program writing a byte at a time ended
/// with "h2 protocol error" once about 10,000 frames were waiting. The
/// connection's window is HTTP/2's largest, which costs nothing (only the
/// streams' windows bound what is held), so a stream's can stay wide
/// enough for a host-service across a network.
const STREAM_WINDOW: u32 = 1 << 20;
const CONNECTION_WINDOW: u32 = (1 << 31) - 1;
// An output stream and a look, both stopped.
const _: () = assert!(holdfast::small_frames::stalled_streams_fit(
    2,
    STREAM_WINDOW,
    CONNECTION_WINDOW
));

/// `addr` as a URL: a bare `host:port` (how grpcurl, buf and the README's
/// examples take `HOLDFAST_ADDR`) is plaintext HTTP/2 there.
fn with_scheme(addr: &str) -> String {
    if addr.contains("://") {
        addr.to_owned()
    } else {
        format!("http://{addr}")
    }
}

/// Whether the host-service at `addr` is on this machine: a loopback
/// address or `localhost`.
fn is_on_this_machine(addr: &str) -> bool {
    let Ok(uri) = with_scheme(addr).parse::<http::Uri>() else {
        return false;
    };
    let Some(host) = uri.host() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

async fn connect(addr: &str, token: Option<&str>) -> anyhow::Result<Clients> {
    // The host-service speaks plain HTTP/2; an address that asks for TLS
    // would get none, and its token would cross the network in the clear.
    if let Some((scheme, _)) = addr.split_once("://")
        && !scheme.eq_ignore_ascii_case("http")
    {
        bail!(
            "{addr:?}: the host-service is reached over plain http (`http://HOST:PORT` or `HOST:PORT`); \
             for another machine, put a TLS proxy or an SSH tunnel in front of it"
        );
    }
    let bearer = Bearer(
        token
            .map(|token| {
                format!("Bearer {token}")
                    .parse()
                    .context("the auth token must be printable ASCII")
            })
            .transpose()?,
    );
    let endpoint = Channel::from_shared(with_scheme(addr))
        .with_context(|| format!("{addr:?} is not a valid address (try 127.0.0.1:7077)"))?
        .connect_timeout(Duration::from_secs(3))
        .initial_stream_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        // Each call's answer (a stream's first), so a host-service that
        // hangs (stopped, or not a host-service at all) cannot hold the
        // command for ever; creates and disposals take well under this.
        .timeout(Duration::from_secs(15));
    let channel = endpoint
        .connect_with_connector(tower::service_fn(own_server::connect))
        .await
        .map_err(|error| {
            let causes: Vec<&(dyn std::error::Error + 'static)> = std::iter::successors(
                Some(&error as &(dyn std::error::Error + 'static)),
                |error| error.source(),
            )
            .collect();
            // Another user's program on the port is said as such.
            let refusal = causes
                .iter()
                .filter_map(|error| error.downcast_ref::<std::io::Error>())
                .find(|error| error.kind() == std::io::ErrorKind::PermissionDenied);
            if let Some(refusal) = refusal {
                return anyhow::anyhow!("refusing the host-service at {addr}: {refusal}");
            }
            // The first cause of all (refused, timed out, no such host).
            let cause = causes.last().map(ToString::to_string).unwrap_or_default();
            anyhow::anyhow!(
                "cannot reach the host-service at {addr} ({cause}); is it running? Start it with `host-service` \
                 (or `cargo run --release -p host-service` in a checkout), or point --addr / HOLDFAST_ADDR at it"
            )
        })?;
    // Answers grow with what the host holds (every workspace ever made, a
    // list of thousands of sessions): well past tonic's default 4 MiB.
    Ok(Clients {
        status: StatusServiceClient::with_interceptor(channel.clone(), bearer.clone())
            .max_decoding_message_size(MAX_ANSWER_BYTES),
        workspaces: WorkspaceServiceClient::with_interceptor(channel.clone(), bearer.clone())
            .max_decoding_message_size(MAX_ANSWER_BYTES),
        terminals: TerminalServiceClient::with_interceptor(channel, bearer)
            .max_decoding_message_size(MAX_ANSWER_BYTES),
    })
}

/// A server's refusal, in words.
fn refused(status: tonic::Status) -> anyhow::Error {
    let message = status.message();
    // A new session's `title` in the API is `--name` here.
    let field = holdfast::error_details::field_of(&status);
    if matches!(field.as_deref(), Some("title" | "create.title"))
        && let Some(rest) = message.strip_prefix("title ")
    {
        return anyhow::anyhow!("--name {rest}");
    }
    anyhow::anyhow!("{message}")
}

async fn run(cli: Cli) -> anyhow::Result<u8> {
    if let Command::Completions { shell } = cli.command {
        // Needs no host-service until a TAB asks for names.
        // Written as `say!` writes, so `| head` ends it quietly.
        say!("{}", completion::registration(shell)?);
        return Ok(0);
    }
    let mut clients = connect(&cli.addr, cli.auth_token.as_deref()).await?;
    match cli.command {
        Command::Workspace(WorkspaceCommand::Create { name }) => {
            let workspaces = list_workspaces(&mut clients, true).await?;
            if let Some(taken) = open_named(&workspaces, &name).next() {
                bail!(
                    "an open workspace is already named {name:?} ({}): `--workspace {name}` uses it",
                    taken.workspace_id
                );
            }
            let workspace = create_workspace(&mut clients, &name).await?;
            say!("{}", workspace.workspace_id);
        }
        Command::Workspace(WorkspaceCommand::List) => {
            let workspaces = list_workspaces(&mut clients, false).await?;
            say!("{:<36}  {:<8}  {:<10}  NAME", "ID", "STATE", "AGE");
            for workspace in workspaces {
                let state = if workspace.closed_at.is_some() {
                    "closed"
                } else {
                    "open"
                };
                say!(
                    "{:<36}  {:<8}  {:<10}  {}",
                    workspace.workspace_id,
                    state,
                    shown::age(workspace.created_at),
                    workspace.name
                );
            }
        }
        Command::Workspace(WorkspaceCommand::Close { workspace }) => {
            let workspace_id = find_workspace(&mut clients, &workspace).await?.workspace_id;
            let closed = clients
                .workspaces
                .close_workspace(pb::CloseWorkspaceRequest { workspace_id })
                .await
                .map_err(refused)?
                .into_inner();
            say!("closed; {} session(s) disposed", closed.stamped);
        }
        Command::New {
            workspace,
            name,
            hidden,
            attach,
            env,
            clean_env,
            cwd,
            command,
        } => {
            let local = is_on_this_machine(&cli.addr);
            if !local && !clean_env {
                tell!(
                    "note: the host-service is on another machine: the session gets its clean \
                     environment and what --env names, none of this shell's\n"
                );
            }
            let env = environment::for_session(clean_env || !local, &env)?;
            if let Some(name) = &name {
                if name.is_empty() {
                    bail!(
                        "--name may not be empty (without it, the session is named by its command)"
                    );
                }
                naming::refuse_taken(&mut clients, name, None).await?;
            }
            let title = name.or_else(|| naming::title_of(&command));
            let workspace_id =
                workspace_or_default(&mut clients, workspace.as_deref(), true).await?;
            let request = pb::CreateSessionRequest {
                workspace_id,
                argv: command,
                cwd: working_directory(cwd.as_deref())?,
                env,
                title,
                listed: Some(!hidden),
                ..Default::default()
            };
            if attach {
                return attach::start(&mut clients, request, cli.detach_key).await;
            }
            let session = clients
                .terminals
                .create_session(request)
                .await
                .map_err(refused)?
                .into_inner()
                .session
                .context("the host-service returned no session")?;
            say!("{}", session.session_id);
        }
        Command::Ls {
            workspace,
            all,
            json,
        } => {
            let (list, names) = if all {
                let lists = every_open_list(&mut clients).await?;
                let names = lists
                    .iter()
                    .map(|(workspace, _)| (workspace.workspace_id.clone(), workspace.name.clone()))
                    .collect();
                (merged(lists.into_iter().map(|(_, list)| list)), Some(names))
            } else {
                let workspace_id =
                    workspace_or_default(&mut clients, workspace.as_deref(), false).await?;
                (list_sessions(&mut clients, workspace_id).await?, None)
            };
            if json {
                say!(
                    "{}",
                    serde_json::to_string_pretty(&shown::list_json(&list))?
                );
            } else {
                shown::print_table(&list, names.as_ref());
            }
        }
        Command::Count { workspace } => {
            let workspace_id =
                workspace_or_default(&mut clients, workspace.as_deref(), false).await?;
            // Nothing attached from anywhere, as the list says of each
            // (`CountBackgroundSessions` leaves out only what its caller
            // says it has attached, and this command attaches nothing).
            let list = list_sessions(&mut clients, workspace_id).await?;
            say!("{}", list.sessions.iter().filter(|s| !s.attached).count());
            if list.source == pb::Source::MemoryOnly as i32 {
                tell!("note: memory-only count ({})\n", list.degraded_reason);
            }
        }
        Command::Send { id, text } => {
            let id = naming::session_id(&mut clients, &id).await?;
            clients
                .terminals
                .write_input(pb::WriteInputRequest {
                    session_id: id,
                    data: text.into_bytes().into(),
                    ..Default::default()
                })
                .await
                .map_err(refused)?;
        }
        // Printed above, before connecting.
        Command::Completions { .. } => {}
        Command::Status => {
            let status = clients
                .status
                .get_status(pb::GetStatusRequest {})
                .await
                .map_err(refused)?
                .into_inner();
            say!(
                "host-service  up, version {}, pid {}, up {}",
                status.host_version,
                status.host_pid,
                shown::age(status.host_started_at)
            );
            say!("  listening   {}", cli.addr);
            say!("  database    {}", status.database_path);
            let daemon = match pb::DaemonState::try_from(status.daemon_state).unwrap_or_default() {
                pb::DaemonState::Up => format!(
                    "up, version {}, pid {}",
                    status.daemon_version, status.daemon_pid
                ),
                pb::DaemonState::Starting | pb::DaemonState::Unspecified => "starting".to_owned(),
                pb::DaemonState::Down => format!("DOWN: {}", status.daemon_reason),
                pb::DaemonState::GaveUp => {
                    format!("DOWN, not relaunched: {}", status.daemon_reason)
                }
            };
            say!("pty-daemon    {daemon}");
            say!("  socket      {}", status.daemon_socket);
            if status.daemon_state != pb::DaemonState::Up as i32 {
                return Ok(1);
            }
        }
        Command::Attach { id } => {
            let id = match id {
                Some(id) => naming::session_id(&mut clients, &id).await?,
                None => naming::the_only_session(&mut clients).await?,
            };
            if naming::this_session().is_some_and(|this_one| this_one == id) {
                bail!(
                    "this terminal is session {id}: attached to itself, it would show its own output back to itself for ever"
                );
            }
            return attach::attach(&mut clients, id, cli.detach_key).await;
        }
        Command::Show { id, json } => {
            let id = naming::session_id(&mut clients, &id).await?;
            let session = clients
                .terminals
                .get_session(pb::GetSessionRequest { session_id: id })
                .await
                .map_err(refused)?
                .into_inner()
                .session
                .context("the host-service returned no session")?;
            shown::print_session(&session, json)?;
        }
        Command::Rename { id, name } => {
            let id = naming::session_id(&mut clients, &id).await?;
            // An empty one the host-service refuses, saying so.
            if !name.is_empty() {
                naming::refuse_taken(&mut clients, &name, Some(&id)).await?;
            }
            let renamed = clients
                .terminals
                .rename_session(pb::RenameSessionRequest {
                    session_id: id.clone(),
                    name,
                })
                .await
                .map_err(refused)?
                .into_inner()
                .session
                .context("the host-service returned no session")?;
            say!("renamed {id} {}", renamed.name);
        }
        Command::Logs { id, follow } => {
            let reading = if follow {
                logs::Reading::Follow
            } else {
                logs::Reading::SoFar
            };
            let id = naming::session_id(&mut clients, &id).await?;
            return logs::logs(&mut clients, id, reading).await;
        }
        Command::Wait { id } => {
            let id = naming::session_id(&mut clients, &id).await?;
            return logs::logs(&mut clients, id, logs::Reading::Wait).await;
        }
        Command::Kill { id, signal, time } => {
            let id = naming::session_id(&mut clients, &id).await?;
            let disposed = clients
                .terminals
                .dispose_session(pb::DisposeSessionRequest {
                    session_id: id.clone(),
                    signal: signal.into(),
                    grace_ms: time.map(|seconds| seconds * 1000),
                })
                .await
                .map_err(refused)?
                .into_inner();
            say!("disposed {id}");
            let asked_more = signal != pb::Signal::Hup || time.is_some();
            if asked_more && disposed.signal == pb::Signal::Unspecified as i32 {
                tell!(
                    "note: this host-service did not say it read -s or -t: one that predates them \
                     sends SIGHUP, then SIGKILL after 1 s\n"
                );
            }
        }
    }
    Ok(0)
}

async fn create_workspace(clients: &mut Clients, name: &str) -> anyhow::Result<pb::Workspace> {
    clients
        .workspaces
        .create_workspace(pb::CreateWorkspaceRequest {
            name: name.to_owned(),
        })
        .await
        .map_err(refused)?
        .into_inner()
        .workspace
        .context("the host-service returned no workspace")
}

/// Every workspace, oldest first, a page at a time (a host-service from
/// before pages answers all at once, without a next page); only the open
/// ones if `open_only`, but for a host-service from before that filter,
/// so callers that want open ones still look.
async fn list_workspaces(
    clients: &mut Clients,
    open_only: bool,
) -> anyhow::Result<Vec<pb::Workspace>> {
    const PAGE_SIZE: i32 = 1000;
    let mut workspaces = Vec::new();
    let mut page_token = String::new();
    loop {
        let page = clients
            .workspaces
            .list_workspaces(pb::ListWorkspacesRequest {
                page_size: PAGE_SIZE,
                page_token: page_token.clone(),
                open_only,
            })
            .await
            .map_err(refused)?
            .into_inner();
        if page.next_page_token.is_empty() {
            workspaces.extend(page.workspaces);
            return Ok(workspaces);
        }
        // Each page goes on from the last: one that gave nothing or its own
        // token again would be answered the same for ever.
        if page.workspaces.is_empty() || page.next_page_token == page_token {
            bail!("the host-service's ListWorkspaces pages do not go forward");
        }
        workspaces.extend(page.workspaces);
        page_token = page.next_page_token;
    }
}

/// The directory a new session starts in, as the API takes it (absolute):
/// `given` taken from this directory, or this directory; empty (the
/// daemon's home) if this one is gone and none is given.
fn working_directory(given: Option<&std::path::Path>) -> anyhow::Result<String> {
    let dir = match given {
        Some(given) => std::path::absolute(given)
            .with_context(|| format!("finding the directory {}", given.display()))?,
        None => match std::env::current_dir() {
            Ok(dir) => dir,
            Err(_) => return Ok(String::new()),
        },
    };
    Ok(dir.to_string_lossy().into_owned())
}

/// The open workspaces named `name`, oldest first as `workspaces` are.
fn open_named<'a>(
    workspaces: &'a [pb::Workspace],
    name: &'a str,
) -> impl Iterator<Item = &'a pb::Workspace> {
    workspaces
        .iter()
        .filter(move |w| w.name == name && w.closed_at.is_none())
}

/// A workspace by id, or the one open workspace with that name. Open ones
/// are looked at first: a closed one only for a whole id none has.
async fn find_workspace(clients: &mut Clients, name_or_id: &str) -> anyhow::Result<pb::Workspace> {
    let by_id = |workspaces: &[pb::Workspace]| {
        workspaces
            .iter()
            .find(|w| w.workspace_id == name_or_id)
            .cloned()
    };
    let workspaces = list_workspaces(clients, true).await?;
    if let Some(workspace) = by_id(&workspaces) {
        return Ok(workspace);
    }
    let named: Vec<&pb::Workspace> = open_named(&workspaces, name_or_id).collect();
    match named.len() {
        0 => {
            if uuid::Uuid::try_parse(name_or_id).is_ok()
                && let Some(closed) = by_id(&list_workspaces(clients, false).await?)
            {
                return Ok(closed);
            }
            bail!(
                "no open workspace is named or has the id {name_or_id:?} (see `holdfast workspace list`)"
            )
        }
        1 => Ok(named[0].clone()),
        // The API lets two have one name; a guess could put sessions
        // where the user never looks.
        count => bail!(
            "{count} open workspaces are named {name_or_id:?} ({}): name one by its id",
            named
                .iter()
                .map(|w| w.workspace_id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A signal a disposal sends, as people write it: `TERM`, `SIGTERM`,
/// `term` or `15`.
fn parse_signal(text: &str) -> Result<pb::Signal, String> {
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

/// The named workspace's id, or the default workspace's (made if `create`).
async fn workspace_or_default(
    clients: &mut Clients,
    named: Option<&str>,
    create: bool,
) -> anyhow::Result<String> {
    if let Some(name) = named {
        return Ok(find_workspace(clients, name).await?.workspace_id);
    }
    if let Some(default) = oldest_default(clients).await? {
        return Ok(default);
    }
    if !create {
        bail!(
            "there is no open {DEFAULT_WORKSPACE:?} workspace: `holdfast new` makes one (see `holdfast workspace list`)"
        );
    }
    let made = create_workspace(clients, DEFAULT_WORKSPACE)
        .await?
        .workspace_id;
    // Commands run at once on a fresh database may each make one: all
    // then use the oldest, and the others close theirs, unused, so no
    // session ends up where `holdfast ls` does not look.
    let oldest = oldest_default(clients)
        .await?
        .unwrap_or_else(|| made.clone());
    if oldest != made {
        let close = pb::CloseWorkspaceRequest {
            workspace_id: made.clone(),
        };
        if let Err(status) = clients.workspaces.close_workspace(close).await {
            tracing::debug!(%status, "closing a default workspace made twice failed");
        }
    }
    Ok(oldest)
}

/// The id of the oldest open workspace named [`DEFAULT_WORKSPACE`].
async fn oldest_default(clients: &mut Clients) -> anyhow::Result<Option<String>> {
    // Listed oldest first.
    let workspaces = list_workspaces(clients, true).await?;
    Ok(open_named(&workspaces, DEFAULT_WORKSPACE)
        .next()
        .map(|w| w.workspace_id.clone()))
}

/// A workspace's live sessions.
async fn list_sessions(
    clients: &mut Clients,
    workspace_id: String,
) -> anyhow::Result<pb::ListSessionsResponse> {
    Ok(clients
        .terminals
        .list_sessions(pb::ListSessionsRequest {
            workspace_id,
            ..Default::default()
        })
        .await
        .map_err(refused)?
        .into_inner())
}

/// Every open workspace, oldest first, with its live sessions.
async fn every_open_list(
    clients: &mut Clients,
) -> anyhow::Result<Vec<(pb::Workspace, pb::ListSessionsResponse)>> {
    let mut lists = Vec::new();
    for workspace in list_workspaces(clients, true).await? {
        if workspace.closed_at.is_none() {
            let list = list_sessions(clients, workspace.workspace_id.clone()).await?;
            lists.push((workspace, list));
        }
    }
    Ok(lists)
}

/// Lists as one: their sessions in order, memory-only if any was.
fn merged(lists: impl Iterator<Item = pb::ListSessionsResponse>) -> pb::ListSessionsResponse {
    lists.fold(pb::ListSessionsResponse::default(), |mut all, list| {
        all.sessions.extend(list.sessions);
        if list.source == pb::Source::MemoryOnly as i32 {
            all.source = list.source;
            all.degraded_reason = list.degraded_reason;
        }
        all
    })
}

#[cfg(test)]
mod tests {
    use super::is_on_this_machine;

    #[test]
    fn only_loopback_addresses_are_this_machine() {
        for local in [
            "127.0.0.1:7077",
            "http://127.0.0.1:7077",
            "localhost:7077",
            "http://[::1]:7077",
            "127.1.2.3:80",
        ] {
            assert!(is_on_this_machine(local), "{local}");
        }
        for remote in [
            "10.0.0.5:7077",
            "http://example.com:7077",
            "[::2]:7077",
            "::",
        ] {
            assert!(!is_on_this_machine(remote), "{remote}");
        }
    }
}
