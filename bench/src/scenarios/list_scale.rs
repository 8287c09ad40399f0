//! Scenario 1: List at scale.
//!
//! Live sessions sit in a workspace and ended rows in the database. It
//! measures `ListSessions`, the daemon's `List` and a bare RPC (the floor).
//! Beside them are tmux control-mode `list-sessions -F` and
//! `tmux list-sessions` (the peer).

use std::time::{Duration, SystemTime};

use anyhow::{Result, ensure};
use holdfast_api::proto::daemon::v1 as daemon_pb;
use holdfast_api::proto::host::v1 as host_pb;
use host_service::{SessionRow, Store, WorkspaceRow, micros};
use prost::Message;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

use super::Ctx;
use crate::report::{Figure, Role, Row};
use crate::services::{Home, poll};
use crate::stats::{Samples, time, time_blocking};
use crate::tmux::Tmux;

const NAME: &str = "1. list at scale";

/// How long the client's share of a list takes: decoding `answer`'s bytes
/// into messages (prost, as tonic does), p50 over 50 rounds.
fn decoding<M: Message + Default>(answer: Option<&M>) -> String {
    let Some(answer) = answer else {
        return "not measured".into();
    };
    let bytes = answer.encode_to_vec();
    let mut took = Samples::default();
    for _ in 0..50 {
        let (elapsed, decoded) = time_blocking(|| M::decode(bytes.as_slice()));
        drop(std::hint::black_box(decoded));
        took.push(elapsed);
    }
    format!(
        "{} µs p50 ({} KiB)",
        took.p50().as_micros(),
        bytes.len() / 1024
    )
}

/// Seeds ended rows, half in the measured workspace, half in nine others;
/// returns the measured workspace's id.
pub async fn seed(database_url: &str, rows: usize) -> Result<String> {
    // Rows of no host: the host-service started on them claims them.
    let store = Store::open(&host_service::Database::parse(database_url)?, "").await?;
    let now = micros(SystemTime::now());
    let mut workspaces = Vec::new();
    for i in 0..10 {
        let row = WorkspaceRow {
            id: uuid::Uuid::new_v4().to_string(),
            name: format!("bench-{i}"),
            created_at: now,
            closed_at: None,
        };
        workspaces.push(store.create_workspace(row).await?.id);
    }
    for i in 0..rows {
        let workspace_id = if i % 2 == 0 {
            &workspaces[0]
        } else {
            &workspaces[1 + i % 9]
        };
        store
            .insert_session(SessionRow {
                id: uuid::Uuid::new_v4().to_string(),
                workspace_id: workspace_id.clone(),
                status: "exited".into(),
                listed: true,
                title: format!("ended {i}"),
                argv: r#"["true"]"#.into(),
                cwd: "/".into(),
                created_at: now,
                last_attached_at: None,
                ended_at: Some(now),
                exit_code: Some(0),
                exit_signal: None,
                dispose_requested_at: None,
                dispose_signal: None,
                dispose_grace_ms: None,
                dispose_deadline: None,
                host_id: String::new(),
            })
            .await?;
    }
    Ok(workspaces.swap_remove(0))
}

pub async fn run(ctx: &mut Ctx) -> Result<()> {
    let scale = ctx.scale.clone();
    let sessions = scale.list_sessions;
    let home = Home::new()?;
    let workspace = seed(&home.database_url(), scale.ended_rows).await?;
    let mut host = home.start_host(&ctx.bins, &[]).await?;
    host.create_many(&workspace, &["sleep", "86400"], sessions)
        .await?;
    poll("every session listed", || {
        let mut terminals = host.terminals.clone();
        let workspace = workspace.clone();
        async move {
            let list = terminals
                .list_sessions(host_pb::ListSessionsRequest {
                    workspace_id: workspace,
                    ..Default::default()
                })
                .await
                .ok()?
                .into_inner();
            (list.sessions.len() == sessions).then_some(())
        }
    })
    .await?;

    let tmux = Tmux::start()?;
    let tmux_server = tmux.server_pid()?;
    let mut control = tmux.control("base")?;
    for i in 0..sessions {
        control.send(&format!("new-session -d -s s{i} sleep 86400"))?;
    }
    for _ in 0..sessions {
        control.reply(true)?;
    }

    let mut health = HealthClient::new(host.channel.clone());
    let mut daemon = host.daemon().clone();
    let mut daemon_health = HealthClient::new(
        holdfast_plumbing::daemon_client::connect_channel(&home.socket(), Duration::from_secs(5))
            .await?,
    );
    let [
        mut listed,
        mut polled,
        mut daemon_list,
        mut bare,
        mut bare_daemon,
        mut control_list,
        mut process_list,
    ] = std::array::from_fn(|_| Samples::default());
    let mut last_list = None;
    let mut last_daemon_list = None;
    for i in 0..scale.list_samples {
        let (took, list) = time(host.list(&workspace)).await;
        let list = list?;
        ensure!(
            list.sessions.len() == sessions,
            "listed {} of {sessions}",
            list.sessions.len()
        );
        listed.push(took);
        let mut terminals = host.terminals.clone();
        let unchanged = terminals.list_sessions(host_pb::ListSessionsRequest {
            workspace_id: workspace.clone(),
            if_generation: Some(list.generation),
            ..Default::default()
        });
        let (took, reply) = time(unchanged).await;
        let reply = reply?.into_inner();
        ensure!(
            reply.unchanged && reply.output_offsets.len() == sessions,
            "a list asked if still generation {} was not answered unchanged",
            list.generation
        );
        polled.push(took);
        last_list = Some(list);
        let (took, reply) = time(daemon.list(daemon_pb::ListRequest::default())).await;
        let reply = reply?.into_inner();
        ensure!(reply.sessions.len() >= sessions, "daemon list short");
        daemon_list.push(took);
        last_daemon_list = Some(reply);
        let (took, reply) = time(health.check(HealthCheckRequest::default())).await;
        reply?;
        bare.push(took);
        let (took, reply) = time(daemon_health.check(HealthCheckRequest::default())).await;
        reply?;
        bare_daemon.push(took);
        let (took, names) = time_blocking(|| control.command("list-sessions -F '#{session_name}'"));
        ensure!(names?.len() > sessions, "tmux listed too few");
        control_list.push(took);
        if i % 5 == 0 {
            let (took, out) = time_blocking(|| tmux.run(&["list-sessions"]));
            ensure!(out?.lines().count() > sessions, "tmux listed too few");
            process_list.push(took);
        }
        tmux.settle(tmux_server);
    }
    let setting = format!("{sessions} live sessions, {} ended rows", scale.ended_rows);
    let report = &mut ctx.report;
    report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            "host ListSessions (TCP)",
            Figure::latency(&listed),
        )
        .target(
            "p50 ≤ 1 ms, p99 ≤ 2 ms",
            listed.p50() <= Duration::from_millis(1) && listed.p99() <= Duration::from_millis(2),
        )
        .note(format!(
            "{setting}; of that, decoding the answer in the client: {}",
            decoding(last_list.as_ref())
        )),
    );
    report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            "host ListSessions, unchanged (TCP)",
            Figure::latency(&polled),
        )
        .note("a polling client's list: if_generation of the list it holds, answered with offsets only"),
    );
    report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            "daemon List (unix socket)",
            Figure::latency(&daemon_list),
        )
        .target(
            "p50 ≤ 0.5 ms",
            daemon_list.p50() <= Duration::from_micros(500),
        )
        .note(format!(
            "of that, decoding the answer in the client: {}",
            decoding(last_daemon_list.as_ref())
        )),
    );
    report.add(Row::new(
        NAME,
        Role::Floor,
        "empty RPC: health Check (TCP)",
        Figure::latency(&bare),
    ));
    report.add(Row::new(
        NAME,
        Role::Floor,
        "empty RPC: the daemon's health Check (unix socket)",
        Figure::latency(&bare_daemon),
    ));
    report.add(Row::new(
        NAME,
        Role::Peer,
        "tmux control mode list-sessions -F",
        Figure::latency(&control_list),
    ));
    report.add(Row::new(
        NAME,
        Role::Peer,
        "`tmux list-sessions` (a process)",
        Figure::latency(&process_list),
    ));
    drop(control);
    Ok(())
}
