//! Scenario 13: A session's screen (`GetScreen`).
//!
//! A daemon of its own holds one 200×50 session that has printed 1 MiB of
//! text (base64 lines). Timed: the first `GetScreen` of it (its emulator
//! reads all the scrollback holds), then each later one (only what is
//! new). The floor beside them, from the same run: a `List` of that one
//! session, the same round trip without drawing anything.

use std::time::{Duration, Instant};

use anyhow::Result;
use holdfast_api::proto::daemon::v1 as daemon_pb;

use super::Ctx;
use crate::report::{Figure, Role, Row};
use crate::services::{Home, poll, spawn_request};
use crate::stats::Samples;

const NAME: &str = "13. a session's screen";

/// How much output the session has printed before it is looked at.
const OUTPUT: u64 = 1 << 20;

pub async fn run(ctx: &mut Ctx) -> Result<()> {
    let home = Home::new()?;
    let daemon = home.start_daemon(&ctx.bins).await?;
    let mut client = daemon.client.clone();
    // 768 KiB of random bytes are 1 MiB of base64 text, in 76-column lines.
    let script = format!(
        "head -c {} /dev/urandom | base64; exec sleep 86400",
        OUTPUT * 3 / 4
    );
    let mut request = spawn_request("screen", &["sh", "-c", &script]);
    (request.cols, request.rows) = (200, 50);
    client.spawn(request).await?;
    let only = || daemon_pb::ListRequest {
        session_ids: vec!["screen".into()],
        ..Default::default()
    };
    poll("the session's 1 MiB of output", || {
        let mut client = client.clone();
        async move {
            let list = client.list(only()).await.ok()?.into_inner();
            let printed = list.sessions.first()?.output_offset;
            (printed >= OUTPUT).then_some(())
        }
    })
    .await?;
    // The first look reads all the scrollback holds; later ones only
    // what is new.
    let started = Instant::now();
    client
        .get_screen(daemon_pb::GetScreenRequest {
            session_id: "screen".into(),
            ..Default::default()
        })
        .await?;
    let first = started.elapsed();
    let (mut screens, mut lists) = (Samples::default(), Samples::default());
    let mut complete = true;
    for _ in 0..ctx.scale.screen_samples {
        let started = Instant::now();
        let screen = client
            .get_screen(daemon_pb::GetScreenRequest {
                session_id: "screen".into(),
                ..Default::default()
            })
            .await?
            .into_inner();
        screens.push(started.elapsed());
        complete &= screen.complete;
        let started = Instant::now();
        client.list(only()).await?;
        lists.push(started.elapsed());
    }
    let floor = "List of the one session";
    let p50 = screens.p50();
    ctx.report.add(
        Row::new(NAME, Role::Holdfast, "GetScreen, 200×50 after 1 MiB", Figure::latency(&screens))
            .against(floor)
            .target("p50 ≤ 2 ms", p50 <= Duration::from_millis(2))
            .note(format!(
                "after the first look, which read the whole scrollback in {:.1} ms (it {} the whole output)",
                first.as_secs_f64() * 1e3,
                if complete { "holds" } else { "no longer holds" }
            )),
    );
    ctx.report
        .add(Row::new(NAME, Role::Floor, floor, Figure::latency(&lists)));
    Ok(())
}
