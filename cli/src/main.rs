//! `holdfast`: the command line for people at a terminal.
//!
//! It talks to the host-service, like every other client. This file runs
//! one command. The arguments are in `args.rs`, the connection in
//! `clients.rs`, and workspaces in `workspaces.rs`.

use anyhow::{Context, bail};
use clap::Parser;
use holdfast_api::proto::host::v1 as pb;

use crate::args::{Cli, Command, WorkspaceCommand};
use crate::clients::{Moved, connect, is_on_this_machine, refused};
use crate::stdout::{say, tell};
use crate::workspaces::{
    create_workspace, every_open_list, find_workspace, list_sessions, list_sessions_of,
    list_workspaces, merged, open_named, workspace_or_default,
};

mod args;
mod attach;
mod clients;
mod completion;
mod environment;
mod keys;
mod logs;
mod naming;
mod own_server;
mod plain_text;
mod send;
mod shown;
mod stale_queries;
mod stdout;
mod terminal_modes;
mod watch;
mod workspaces;

fn main() {
    // Before anything is printed, and with no runtime running. Completing
    // asks the host-service on a runtime of its own.
    completion::complete_if_asked(<Cli as clap::CommandFactory>::command);
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let code = match runtime.map_err(anyhow::Error::from).map(|runtime| {
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            runtime.block_on(run_following(cli))
        }));
        // Never dropped, not even by a panic. Dropping a runtime waits for
        // its blocking threads. One may be reading the keyboard (attach),
        // which only a key would end.
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

/// Runs the command; if the session it names runs on another host-service
/// sharing the database, runs it again there, once, as Redis Cluster
/// clients follow MOVED.
async fn run_following(cli: Cli) -> anyhow::Result<u8> {
    let again = cli.clone();
    let error = match run(cli).await {
        Err(error) => error,
        done => return done,
    };
    let Some(moved) = Moved::in_error(&error) else {
        return Err(error);
    };
    tell!(
        "holdfast: the session runs on host {} ({}); asking it there\n",
        moved.host_name,
        moved.address
    );
    let mut again = again;
    again.addr = moved.address;
    run(again).await
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
            return logs::failed_at_once(&mut clients, &session.session_id).await;
        }
        Command::Ls {
            workspace,
            all,
            all_hosts,
            watch,
            ended,
            json,
        } => {
            if ended {
                let workspaces = if all {
                    every_open_list(&mut clients, pb::Scope::ThisHost)
                        .await?
                        .into_iter()
                        .map(|(workspace, _)| (workspace.workspace_id, workspace.name))
                        .collect()
                } else {
                    let id =
                        workspace_or_default(&mut clients, workspace.as_deref(), false).await?;
                    vec![(id, String::new())]
                };
                let mut sessions = Vec::new();
                for (workspace_id, _) in &workspaces {
                    let ended = clients
                        .terminals
                        .list_ended_sessions(pb::ListEndedSessionsRequest {
                            workspace_id: workspace_id.clone(),
                            limit: 0,
                        })
                        .await
                        .map_err(refused)?
                        .into_inner();
                    sessions.extend(ended.sessions);
                }
                let list = pb::ListSessionsResponse {
                    sessions,
                    ..Default::default()
                };
                if json {
                    say!(
                        "{}",
                        serde_json::to_string_pretty(&shown::list_json(&list))?
                    );
                } else {
                    let names = all.then(|| workspaces.into_iter().collect());
                    shown::print_ended(&list.sessions, names.as_ref());
                }
                return Ok(0);
            }
            if watch {
                let workspace_id =
                    workspace_or_default(&mut clients, workspace.as_deref(), false).await?;
                watch::follow(&mut clients, workspace_id, json).await?;
                return Ok(0);
            }
            let (list, names) = if all {
                let scope = match all_hosts {
                    true => pb::Scope::AllHosts,
                    false => pb::Scope::ThisHost,
                };
                let lists = every_open_list(&mut clients, scope).await?;
                let names = lists
                    .iter()
                    .map(|(workspace, _)| (workspace.workspace_id.clone(), workspace.name.clone()))
                    .collect();
                (merged(lists.into_iter().map(|(_, list)| list)), Some(names))
            } else {
                let workspace_id =
                    workspace_or_default(&mut clients, workspace.as_deref(), false).await?;
                let scope = match all_hosts {
                    true => pb::Scope::AllHosts,
                    false => pb::Scope::ThisHost,
                };
                (
                    list_sessions_of(&mut clients, workspace_id, scope).await?,
                    None,
                )
            };
            if json {
                say!(
                    "{}",
                    serde_json::to_string_pretty(&shown::list_json(&list))?
                );
            } else {
                shown::print_table(&list, names.as_ref(), all_hosts);
            }
        }
        Command::Count { workspace } => {
            let workspace_id =
                workspace_or_default(&mut clients, workspace.as_deref(), false).await?;
            // Nothing attached from anywhere, as the list says of each.
            // `CountBackgroundSessions` leaves out only what its caller
            // says it has attached, and this command attaches nothing.
            let list = list_sessions(&mut clients, workspace_id).await?;
            say!("{}", list.sessions.iter().filter(|s| !s.attached).count());
            if list.source == pb::Source::MemoryOnly as i32 {
                tell!("note: memory-only count ({})\n", list.degraded_reason);
            }
        }
        Command::Send { id, keys, literal } => {
            let id = naming::session_id(&mut clients, &id).await?;
            let data = if keys == ["-"] {
                let mut data = Vec::new();
                std::io::Read::read_to_end(&mut std::io::stdin(), &mut data)
                    .context("reading this command's input")?;
                data
            } else {
                keys::to_send(&keys, literal)
            };
            send::send(&mut clients, &id, &data).await?;
        }
        // Printed above, before connecting.
        Command::Completions { .. } => {}
        Command::UpgradeDaemon { force } => {
            let upgraded = clients
                .status
                .upgrade_daemon(pb::UpgradeDaemonRequest { force })
                .await
                .map_err(refused)?
                .into_inner();
            if upgraded.upgraded {
                say!(
                    "pty-daemon    upgraded in place, {} -> {}, pid {}, switch {:.1} ms",
                    upgraded.old_version,
                    upgraded.new_version,
                    upgraded.daemon_pid,
                    upgraded.switch_micros as f64 / 1000.0
                );
            } else {
                say!(
                    "pty-daemon    already runs {} (pid {}); nothing to do (--force upgrades anyway)",
                    upgraded.new_version,
                    upgraded.daemon_pid
                );
            }
        }
        Command::Hosts => {
            let hosts = clients
                .status
                .list_hosts(pb::ListHostsRequest {})
                .await
                .map_err(refused)?
                .into_inner()
                .hosts;
            say!(
                "{:<20}  {:<36}  {:<22}  {:<9}  {}",
                "NAME",
                "ID",
                "ADDRESS",
                "STATE",
                "HEARTBEAT"
            );
            for host in hosts {
                let state = if host.alive { "alive" } else { "silent" };
                let name = if host.this_host {
                    format!("{} *", host.name)
                } else {
                    host.name
                };
                say!(
                    "{:<20}  {:<36}  {:<22}  {:<9}  {} ago",
                    name,
                    host.host_id,
                    host.address,
                    state,
                    shown::age(host.heartbeat_at)
                );
            }
        }
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
            if status.daemon_deaths > 0 {
                say!(
                    "  died        {} time(s) under this host-service, the last {} ago, and was relaunched; \
                     its sessions were lost with it (`holdfast ls --ended`)",
                    status.daemon_deaths,
                    shown::age(status.daemon_last_death_at)
                );
            }
            if status.daemon_state != pb::DaemonState::Up as i32 {
                return Ok(1);
            }
        }
        Command::Attach {
            id,
            replay,
            read_only,
        } => {
            let id = match id {
                Some(id) => naming::session_id(&mut clients, &id).await?,
                None => naming::the_only_session(&mut clients).await?,
            };
            if naming::this_session().is_some_and(|this_one| this_one == id) {
                bail!(
                    "this terminal is session {id}: attached to itself, it would show its own output back to itself for ever"
                );
            }
            let mode = attach::AttachMode { replay, read_only };
            return attach::attach(&mut clients, id, cli.detach_key, mode).await;
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
        Command::Screen {
            id,
            ansi,
            scrollback,
        } => {
            let id = naming::session_id(&mut clients, &id).await?;
            let screen = clients
                .terminals
                .get_screen(pb::GetScreenRequest {
                    session_id: id,
                    scrollback_lines: scrollback.unwrap_or(0),
                })
                .await
                .map_err(refused)?
                .into_inner();
            if ansi {
                use std::io::Write;
                let mut out = std::io::stdout().lock();
                out.write_all(&screen.rendering)?;
                out.flush()?;
            } else {
                for line in &screen.scrollback {
                    say!("{line}");
                }
                // Without the blank rows below the last one written.
                let used = screen.lines.iter().rposition(|line| !line.is_empty());
                for line in &screen.lines[..used.map_or(0, |last| last + 1)] {
                    say!("{line}");
                }
            }
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
        Command::Logs { id, follow, raw } => {
            let reading = if follow {
                logs::Reading::Follow
            } else {
                logs::Reading::SoFar
            };
            let id = naming::session_id(&mut clients, &id).await?;
            return logs::logs(&mut clients, id, reading, raw).await;
        }
        Command::Wait { id } => {
            let id = naming::session_id(&mut clients, &id).await?;
            return logs::logs(&mut clients, id, logs::Reading::Wait, false).await;
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

/// The directory a new session starts in, as the API takes it (absolute).
///
/// It is `given` taken from this directory, or else this directory. It is
/// empty (the daemon's home) if this one is gone and none is given.
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
