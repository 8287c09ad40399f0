//! Scenario 8: Deadline, with the daemon stopped by SIGSTOP.
//!
//! It measures how long `ListSessions` takes to answer from memory. The
//! figure is set against the configured deadline.

use std::time::Duration;

use anyhow::{Result, ensure};
use holdfast_api::proto::host::v1 as pb;
use rustix::process::{Pid, Signal, kill_process};

use super::Ctx;
use crate::report::{Figure, Role, Row};
use crate::services::{Home, daemon_pid, poll};
use crate::stats::{Samples, time};

const NAME: &str = "8. deadline with a hung daemon";
const DEADLINE_MS: u64 = 250;

pub async fn run(ctx: &mut Ctx) -> Result<()> {
    let home = Home::new()?;
    let mut host = home
        .start_host(&ctx.bins, &["--daemon-deadline-ms", "250"])
        .await?;
    let workspace = host.workspace("deadline").await?;
    host.create_many(&workspace, &["sleep", "86400"], 10)
        .await?;
    let pid = Pid::from_raw(daemon_pid(host.daemon()).await?).expect("pid");
    kill_process(pid, Signal::STOP)?;
    // kill() returns before the daemon has stopped; wait until it has.
    poll("the daemon to stop", || async {
        holdfast_plumbing::proc_stat::ProcStat::read(pid.as_raw_nonzero().get())
            .is_some_and(|stat| stat.is_stopped())
            .then_some(())
    })
    .await?;
    let mut samples = Samples::default();
    let mut outcome = Ok(());
    for _ in 0..ctx.scale.deadline_samples {
        let (took, list) = time(host.list(&workspace)).await;
        match list {
            Ok(list) if list.source() == pb::Source::MemoryOnly => samples.push(took),
            Ok(list) => {
                outcome = Err(anyhow::anyhow!(
                    "answered {:?} with the daemon stopped",
                    list.source()
                ))
            }
            Err(error) => outcome = Err(error),
        }
    }
    kill_process(pid, Signal::CONT)?;
    outcome?;
    ensure!(
        samples.len() == ctx.scale.deadline_samples,
        "missing samples"
    );
    let deadline = Duration::from_millis(DEADLINE_MS);
    let report = &mut ctx.report;
    report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            "ListSessions, daemon SIGSTOPped",
            Figure::latency(&samples),
        )
        .target(
            "p99 ≤ deadline + 10 ms",
            samples.p99() <= deadline + Duration::from_millis(10),
        ),
    );
    let mut floor = Samples::default();
    floor.push(deadline);
    report.add(Row::new(
        NAME,
        Role::Floor,
        "the configured deadline",
        Figure::latency(&floor),
    ));
    Ok(())
}
