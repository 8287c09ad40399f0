//! Scenario 7: Restart recovery.
//!
//! Background sessions run, and the host-service is killed. It times from
//! starting a new host-service process to its first `SOURCE_COMPLETE`
//! `ListSessions` holding them all. The floor is the same process's first
//! answer to anything (a health check).

use std::time::{Duration, Instant};

use anyhow::Result;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

use super::Ctx;
use crate::report::{Figure, Role, Row};
use crate::services::{Home, Host, free_port, poll};
use crate::stats::Samples;

const NAME: &str = "7. restart recovery";

pub async fn run(ctx: &mut Ctx) -> Result<()> {
    let count = ctx.scale.recovery_sessions;
    let home = Home::new()?;
    let mut host = home.start_host(&ctx.bins, &[]).await?;
    let workspace = host.workspace("recovery").await?;
    host.create_many(&workspace, &["sleep", "86400"], count)
        .await?;
    drop(host);

    let (mut complete, mut first_answer) = (Samples::default(), Samples::default());
    for _ in 0..ctx.scale.recovery_rounds {
        let listen = free_port()?;
        let start = Instant::now();
        let child = home.spawn_host(&ctx.bins, &listen, &[])?;
        let mut host = Host::connect(child, &listen).await?;
        let health = HealthClient::new(host.channel.clone());
        poll("a health answer", || {
            let mut health = health.clone();
            async move { health.check(HealthCheckRequest::default()).await.ok() }
        })
        .await?;
        first_answer.push(start.elapsed());
        host.until_complete(&workspace, count).await?;
        complete.push(start.elapsed());
        host.crash();
    }
    let report = &mut ctx.report;
    report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            "start → first COMPLETE ListSessions",
            Figure::latency(&complete),
        )
        .target(
            "≤ 200 ms",
            complete.quantile(1.0) <= Duration::from_millis(200),
        )
        .note(format!(
            "{count} background sessions; target checked on the slowest round"
        )),
    );
    report.add(Row::new(
        NAME,
        Role::Floor,
        "start → first answer (health)",
        Figure::latency(&first_answer),
    ));
    Ok(())
}
