//! The scenarios of BENCHMARKS.md, one file each, and the sizes they run at.

pub mod deadline;
pub mod echo;
pub mod footprint;
pub mod leaks;
pub mod list_flood;
pub mod list_scale;
pub mod postgres;
pub mod recovery;
pub mod screen;
pub mod spawn;
pub mod throughput;
pub mod upgrade;
pub mod watch;

use crate::report::Report;
use crate::services::Bins;

/// How big each scenario is: the full run of BENCHMARKS.md, or `--quick`,
/// which only proves the harness still works.
#[derive(Debug, Clone)]
pub struct Scale {
    pub list_sessions: usize,
    pub ended_rows: usize,
    pub list_samples: usize,
    pub flood_sessions: usize,
    pub flood_samples: usize,
    pub spawn_samples: usize,
    pub throughput_bytes: u64,
    pub throughput_rounds: usize,
    pub echo_samples: usize,
    pub idle_sessions: usize,
    pub recovery_sessions: usize,
    pub recovery_rounds: usize,
    pub deadline_samples: usize,
    pub leak_cycles: usize,
    pub stop_sessions: usize,
    pub upgrade_sessions: usize,
    pub upgrade_flooding: usize,
    pub upgrade_rounds: usize,
    pub watch_samples: usize,
    pub watchers: usize,
    pub watch_churn: usize,
    pub screen_samples: usize,
}

impl Scale {
    pub fn full() -> Self {
        Self {
            list_sessions: 1000,
            ended_rows: 10_000,
            list_samples: 500,
            flood_sessions: 50,
            flood_samples: 300,
            spawn_samples: 200,
            throughput_bytes: 256 << 20,
            throughput_rounds: 3,
            echo_samples: 2000,
            idle_sessions: 1000,
            recovery_sessions: 1000,
            recovery_rounds: 5,
            deadline_samples: 20,
            leak_cycles: 10_000,
            stop_sessions: 1000,
            upgrade_sessions: 1000,
            upgrade_flooding: 10,
            upgrade_rounds: 20,
            watch_samples: 300,
            watchers: 1000,
            watch_churn: 100,
            screen_samples: 100,
        }
    }

    pub fn quick() -> Self {
        Self {
            list_sessions: 40,
            ended_rows: 400,
            list_samples: 20,
            flood_sessions: 4,
            flood_samples: 20,
            spawn_samples: 10,
            throughput_bytes: 2 << 20,
            throughput_rounds: 1,
            echo_samples: 50,
            idle_sessions: 40,
            recovery_sessions: 40,
            recovery_rounds: 1,
            deadline_samples: 3,
            leak_cycles: 100,
            stop_sessions: 40,
            upgrade_sessions: 40,
            upgrade_flooding: 2,
            upgrade_rounds: 2,
            watch_samples: 10,
            watchers: 20,
            watch_churn: 5,
            screen_samples: 5,
        }
    }
}

/// What every scenario needs.
pub struct Ctx {
    pub bins: Bins,
    pub scale: Scale,
    pub report: Report,
}

/// The scenarios in order, by the names `--only` takes.
pub const ALL: [&str; 13] = [
    "list-scale",
    "list-flood",
    "spawn",
    "throughput",
    "echo",
    "footprint",
    "recovery",
    "deadline",
    "leaks",
    "upgrade",
    "postgres",
    "watch",
    "screen",
];

pub async fn run(name: &str, ctx: &mut Ctx) -> anyhow::Result<()> {
    match name {
        "list-scale" => list_scale::run(ctx).await,
        "list-flood" => list_flood::run(ctx).await,
        "spawn" => spawn::run(ctx).await,
        "throughput" => throughput::run(ctx).await,
        "echo" => echo::run(ctx).await,
        "footprint" => footprint::run(ctx).await,
        "recovery" => recovery::run(ctx).await,
        "deadline" => deadline::run(ctx).await,
        "leaks" => leaks::run(ctx).await,
        "upgrade" => upgrade::run(ctx).await,
        "postgres" => postgres::run(ctx).await,
        "watch" => watch::run(ctx).await,
        "screen" => screen::run(ctx).await,
        other => anyhow::bail!("no scenario {other:?}; the scenarios are {ALL:?}"),
    }
}
