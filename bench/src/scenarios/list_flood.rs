//! Scenario 2: List under an output flood.
//!
//! Sessions run `yes`, each drained by its own attached client. Meanwhile
//! `ListSessions` runs, taking turns with the daemon's `List` and an empty
//! RPC. The floor is that empty RPC under the same flood, and the list before
//! the flood. The peer is tmux with one control-mode client per session
//! draining it, listed by another control client. The two floods run one
//! after the other (both at once would share the CPUs).

use std::io::{BufRead, BufReader};
use std::time::Duration;

use anyhow::{Result, ensure};
use holdfast_api::proto::daemon::v1 as daemon_pb;
use holdfast_api::proto::host::v1 as pb;
use holdfast_api::proto::host::v1::terminal_service_client::TerminalServiceClient;
use tonic::transport::Channel;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

use super::Ctx;
use crate::report::{Figure, Role, Row};
use crate::services::Home;
use crate::stats::{Samples, time, time_blocking};
use crate::streams::drain;
use crate::tmux::Tmux;

const NAME: &str = "2. list under an output flood";
const SCRIPT: &str = "read start; exec yes";

pub async fn run(ctx: &mut Ctx) -> Result<()> {
    let scale = ctx.scale.clone();
    let home = Home::new()?;
    let mut host = home.start_host(&ctx.bins, &[]).await?;
    let workspace = host.workspace("flood").await?;
    host.create_many(&workspace, &["sh", "-c", SCRIPT], scale.flood_sessions)
        .await?;
    let sessions = host.list(&workspace).await?.sessions;
    ensure!(
        sessions.len() == scale.flood_sessions,
        "listed {} sessions",
        sessions.len()
    );

    let mut idle = Samples::default();
    for _ in 0..scale.flood_samples {
        let (took, list) = time(host.list(&workspace)).await;
        list?;
        idle.push(took);
    }

    // Each drainer is its own client with its own connection, as separate
    // viewers would be.
    // The drainers run on a runtime of their own, as tmux's are processes
    // of their own: on the harness's one thread, the list's answer waited
    // behind 50 streams' output.
    let draining = Background(Some(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?,
    ));
    let mut drainers = Vec::new();
    for session in &sessions {
        let uri = host.uri.clone();
        let session_id = session.session_id.clone();
        let (attached, started) = tokio::sync::oneshot::channel();
        drainers.push(draining.handle().spawn(async move {
            let channel = Channel::from_shared(uri)?.connect().await?;
            let stream = TerminalServiceClient::new(channel)
                .attach_session(pb::AttachSessionRequest {
                    session_id,
                    from_offset: None,
                    ..Default::default()
                })
                .await?
                .into_inner();
            let _ = attached.send(());
            anyhow::Ok(drain(stream).await)
        }));
        if started.await.is_err() {
            let failed = drainers.pop().expect("just pushed");
            failed.await??;
            anyhow::bail!("an attach to {} ended before it began", session.session_id);
        }
        host.terminals
            .write_input(pb::WriteInputRequest {
                session_id: session.session_id.clone(),
                data: b"\n".to_vec().into(),
                ..Default::default()
            })
            .await?;
    }
    let mut health = HealthClient::new(host.channel.clone());
    let mut daemon = host.daemon().clone();
    let [mut flooded, mut bare, mut daemon_list] = std::array::from_fn(|_| Samples::default());
    let start = std::time::Instant::now();
    for _ in 0..scale.flood_samples {
        let (took, list) = time(host.list(&workspace)).await;
        ensure!(
            list?.sessions.len() == sessions.len(),
            "a flooded session went missing"
        );
        flooded.push(took);
        tokio::time::sleep(Duration::from_millis(2)).await;
        let (took, reply) = time(health.check(HealthCheckRequest::default())).await;
        reply?;
        bare.push(took);
        tokio::time::sleep(Duration::from_millis(2)).await;
        let (took, reply) = time(daemon.list(daemon_pb::ListRequest::default())).await;
        ensure!(
            reply?.into_inner().sessions.len() >= sessions.len(),
            "daemon list short"
        );
        daemon_list.push(took);
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let seconds = start.elapsed().as_secs_f64();
    host.workspaces
        .close_workspace(pb::CloseWorkspaceRequest {
            workspace_id: workspace.clone(),
        })
        .await?;
    let mut drained = 0;
    for drainer in drainers {
        drained += drainer.await??;
    }
    drop(draining);
    // The daemon hangs up the `yes` sessions before tmux floods.
    drop(host);
    drop(home);

    let (peer, peer_drained, peer_seconds) = tmux_flood(&scale)?;
    let report = &mut ctx.report;
    report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            "host ListSessions while flooding",
            Figure::latency(&flooded),
        )
        .target("p99 ≤ 10 ms", flooded.p99() <= Duration::from_millis(10))
        .note(format!(
            "{} sessions of `yes`, drained {:.0} MB/s in all",
            sessions.len(),
            drained as f64 / 1e6 / seconds
        )),
    );
    report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            "daemon List while flooding",
            Figure::latency(&daemon_list),
        )
        .note(format!(
            "the same {} sessions, from the daemon directly, on its unix socket",
            sessions.len()
        )),
    );
    report.add(
        Row::new(
            NAME,
            Role::Floor,
            "empty RPC: host health Check while flooding",
            Figure::latency(&bare),
        )
        .note("the floor of any request under the same flood"),
    );
    report.add(Row::new(
        NAME,
        Role::Floor,
        "host ListSessions before the flood",
        Figure::latency(&idle),
    ));
    report.add(
        Row::new(
            NAME,
            Role::Peer,
            "tmux list-sessions (control mode) while flooding",
            Figure::latency(&peer),
        )
        .note(format!(
            "control clients drained {:.0} MB/s in all",
            peer_drained as f64 / 1e6 / peer_seconds
        )),
    );
    Ok(())
}

/// A runtime inside the harness's own: dropped from async code (also on an
/// early return), it must shut down in the background.
struct Background(Option<tokio::runtime::Runtime>);

impl Background {
    fn handle(&self) -> &tokio::runtime::Handle {
        self.0.as_ref().expect("present until dropped").handle()
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// The same flood in tmux; returns the list latencies, bytes drained and
/// the seconds they took.
fn tmux_flood(scale: &super::Scale) -> Result<(Samples, u64, f64)> {
    let tmux = Tmux::start()?;
    let mut drainers = Vec::new();
    for i in 0..scale.flood_sessions {
        let name = format!("yes{i}");
        tmux.new_session(&name, SCRIPT)?;
        let mut child = tmux
            .command()
            .args(["-C", "attach-session", "-t", &name])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()?;
        let stdout = child.stdout.take().expect("piped");
        let reader = std::thread::spawn(move || {
            BufReader::new(stdout)
                .split(b'\n')
                .map_while(Result::ok)
                .map(|line| line.len() as u64)
                .sum::<u64>()
        });
        drainers.push((child, reader));
        tmux.run(&["send-keys", "-t", &name, "Enter"])?;
    }
    let mut control = tmux.control("base")?;
    let mut samples = Samples::default();
    let start = std::time::Instant::now();
    for _ in 0..scale.flood_samples {
        let (took, names) = time_blocking(|| control.command("list-sessions -F '#{session_name}'"));
        ensure!(names?.len() > scale.flood_sessions, "tmux listed too few");
        samples.push(took);
        std::thread::sleep(Duration::from_millis(2));
    }
    let seconds = start.elapsed().as_secs_f64();
    drop(control);
    drop(tmux);
    let mut drained = 0;
    for (mut child, reader) in drainers {
        let _ = child.kill();
        let _ = child.wait();
        drained += reader.join().unwrap_or(0);
    }
    Ok((samples, drained, seconds))
}
