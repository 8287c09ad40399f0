//! Scenario 11: PostgreSQL beside SQLite.
//!
//! The same host-service twice in one run: once on an SQLite file (the
//! floor), once on a database of the local PostgreSQL server. Each holds
//! the same ended rows, then gets the same live sessions, made one
//! `CreateSession` at a time (timed). Then `ListSessions` of that
//! workspace, and a restart's first `SOURCE_COMPLETE` list of them all,
//! which reads every row the list needs.
//!
//! Then a fleet: three host-services on one PostgreSQL database, each with
//! its own daemon and as many sessions in one shared workspace. Timed:
//! `ListSessions` of every host (`SCOPE_ALL_HOSTS`) beside the same host's
//! list of its own.

use std::time::Instant;

use anyhow::Result;
use holdfast_api::proto::host::v1 as pb;

use super::Ctx;
use super::list_scale::seed;
use crate::report::{Figure, Role, Row};
use crate::services::{Home, Host, free_port};
use crate::stats::Samples;

const NAME: &str = "11. PostgreSQL beside SQLite";

/// One backend's figures.
struct Figures {
    creates: Samples,
    lists: Samples,
    restarts: Samples,
}

pub async fn run(ctx: &mut Ctx) -> Result<()> {
    let sqlite = measure(ctx, Home::new()?).await?;
    let postgres = measure(ctx, Home::on_postgres()?).await?;
    let sessions = ctx.scale.list_sessions;
    let rows = ctx.scale.ended_rows;
    let report = &mut ctx.report;
    for (subject, figures, floor, target) in [
        (
            "CreateSession",
            &postgres.creates,
            &sqlite.creates,
            None::<f64>,
        ),
        ("ListSessions", &postgres.lists, &sqlite.lists, Some(1.5)),
        (
            "restart → first COMPLETE ListSessions",
            &postgres.restarts,
            &sqlite.restarts,
            None,
        ),
    ] {
        let on_sqlite = format!("{subject} on SQLite");
        let mut row = Row::new(
            NAME,
            Role::Holdfast,
            format!("{subject} on PostgreSQL"),
            Figure::latency(figures),
        )
        .against(on_sqlite.clone())
        .note(format!(
            "{sessions} live sessions, {rows} ended rows; the local server over TCP loopback"
        ));
        if let Some(most) = target {
            let ratio = figures.p50().as_secs_f64() / floor.p50().as_secs_f64().max(1e-9);
            row = row.target(format!("p50 ≤ {most}× SQLite"), ratio <= most);
        }
        report.add(row);
        report.add(Row::new(
            NAME,
            Role::Floor,
            on_sqlite,
            Figure::latency(floor),
        ));
    }
    fleet(ctx).await
}

/// Three hosts on one database: a list of every host beside one host's.
async fn fleet(ctx: &mut Ctx) -> Result<()> {
    const HOSTS: usize = 3;
    let count = ctx.scale.list_sessions;
    let first = Home::on_postgres()?;
    let mut homes = vec![first];
    for index in 1..HOSTS {
        let home = Home::sharing(&homes[0], &format!("bench-host-{index}"))?;
        homes.push(home);
    }
    let mut hosts = Vec::new();
    for home in &homes {
        hosts.push(home.start_host(&ctx.bins, &[]).await?);
    }
    let workspace = hosts[0].workspace("fleet").await?;
    for host in &mut hosts {
        host.create_many(&workspace, &["sleep", "86400"], count)
            .await?;
    }
    let (mut own, mut everywhere) = (Samples::default(), Samples::default());
    let host = &mut hosts[0];
    for _ in 0..ctx.scale.list_samples {
        let started = Instant::now();
        let list = host.list(&workspace).await?;
        own.push(started.elapsed());
        anyhow::ensure!(list.sessions.len() == count, "this host's sessions");
        let started = Instant::now();
        let list = host
            .terminals
            .list_sessions(pb::ListSessionsRequest {
                workspace_id: workspace.clone(),
                scope: pb::Scope::AllHosts.into(),
                ..Default::default()
            })
            .await?
            .into_inner();
        everywhere.push(started.elapsed());
        anyhow::ensure!(
            list.sessions.len() == HOSTS * count && list.hosts.iter().all(|h| h.answered),
            "every host's sessions, every host answering"
        );
    }
    let ratio = everywhere.p50().as_secs_f64() / own.p50().as_secs_f64().max(1e-9);
    let own_subject = format!("ListSessions of one host ({count} sessions)");
    ctx.report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            format!("ListSessions of every host ({HOSTS} × {count} sessions)"),
            Figure::latency(&everywhere),
        )
        .against(own_subject.clone())
        .target("p50 ≤ 3× one host's", ratio <= 3.0)
        .note("three host-services on one PostgreSQL database, each with its own daemon"),
    );
    ctx.report.add(Row::new(
        NAME,
        Role::Floor,
        own_subject,
        Figure::latency(&own),
    ));
    Ok(())
}

/// The figures of a host-service on `home`'s database.
async fn measure(ctx: &Ctx, home: Home) -> Result<Figures> {
    let count = ctx.scale.list_sessions;
    seed(&home.database_url(), ctx.scale.ended_rows).await?;
    let mut host = home.start_host(&ctx.bins, &[]).await?;
    let workspace = host.workspace("backends").await?;
    let mut creates = Samples::default();
    for _ in 0..count {
        let request = pb::CreateSessionRequest {
            workspace_id: workspace.clone(),
            argv: vec!["sleep".into(), "86400".into()],
            ..Default::default()
        };
        let started = Instant::now();
        host.terminals.create_session(request).await?;
        creates.push(started.elapsed());
    }
    let mut lists = Samples::default();
    for _ in 0..ctx.scale.list_samples {
        let started = Instant::now();
        let list = host.list(&workspace).await?;
        lists.push(started.elapsed());
        anyhow::ensure!(list.sessions.len() == count, "every session listed");
    }
    host.crash();
    let mut restarts = Samples::default();
    for _ in 0..ctx.scale.recovery_rounds {
        let listen = free_port()?;
        let started = Instant::now();
        let child = home.spawn_host(&ctx.bins, &listen, &[])?;
        let mut host = Host::connect(child, &listen).await?;
        host.until_complete(&workspace, count).await?;
        restarts.push(started.elapsed());
        host.crash();
    }
    Ok(Figures {
        creates,
        lists,
        restarts,
    })
}
