//! Scenario 5: Keystroke echo: one byte in until it comes back on the attach stream,
//! from `stty raw -echo; cat`; through the daemon and the host-service,
//! beside a raw PTY (floor) and tmux `send-keys` → `%output` (peer).

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use holdfast::proto::daemon::v1 as daemon_pb;

use super::Ctx;
use crate::floor::RawPty;
use crate::report::{Figure, Role, Row};
use crate::services::{Home, attach_daemon, spawn_request, write_daemon};
use crate::stats::{Samples, time_blocking};
use crate::streams::until_contains;
use crate::tmux::Tmux;

const NAME: &str = "5. keystroke echo";
const ARGV: [&str; 3] = ["sh", "-c", "stty raw -echo; echo ready; exec cat"];

pub async fn run(ctx: &mut Ctx) -> Result<()> {
    let home = Home::new()?;
    let mut host = home.start_host(&ctx.bins, &[]).await?;
    let workspace = host.workspace("echo").await?;
    let session = host.create(&workspace, &ARGV).await?.session_id;
    let mut host_stream = host.attach(&session).await?;
    until_contains(&mut host_stream, b"ready").await?;

    let mut daemon = host.daemon().clone();
    daemon.spawn(spawn_request("echo", &ARGV)).await?;
    let mut daemon_stream = attach_daemon(&mut daemon, "echo").await?;
    until_contains(&mut daemon_stream, b"ready").await?;
    let (inputs, queued) = tokio::sync::mpsc::channel(1);
    let mut answers = daemon
        .input(tokio_stream::wrappers::ReceiverStream::new(queued))
        .await?
        .into_inner();

    let mut pty = RawPty::spawn(&ARGV)?;
    pty.read_until(b"ready")?;

    let tmux = Tmux::start()?;
    // tmux output before a client attaches is not sent to it: wait for one.
    let script = format!("read go; {}", ARGV[2]);
    tmux.new_session("echo", &script)?;
    let mut control = tmux.control("echo")?;
    control.command("send-keys -t echo Enter")?;
    loop {
        if control.line()?.contains("ready") {
            break;
        }
    }

    let [
        mut via_host,
        mut via_daemon,
        mut via_input,
        mut floor,
        mut peer,
    ] = std::array::from_fn(|_| Samples::default());
    for i in 0..ctx.scale.echo_samples {
        let key = [b'a' + (i % 26) as u8];
        let start = Instant::now();
        write_daemon(&mut daemon, "echo", &key).await?;
        until_contains(&mut daemon_stream, &key).await?;
        via_daemon.push(start.elapsed());

        let start = Instant::now();
        let write = daemon_pb::InputRequest {
            session_id: "echo".into(),
            data: key.to_vec().into(),
        };
        inputs.send(write).await?;
        answers
            .message()
            .await?
            .context("the daemon's Input stream ended")?;
        until_contains(&mut daemon_stream, &key).await?;
        via_input.push(start.elapsed());

        let start = Instant::now();
        host.write(&session, &key).await?;
        until_contains(&mut host_stream, &key).await?;
        via_host.push(start.elapsed());

        let (took, echoed) = time_blocking(|| -> Result<()> {
            pty.writer.write_all(&key)?;
            let mut byte = [0u8; 1];
            pty.reader.read_exact(&mut byte)?;
            if byte != key {
                bail!("raw PTY echoed {byte:?}, not {key:?}");
            }
            Ok(())
        });
        echoed?;
        floor.push(took);

        let (took, echoed) = time_blocking(|| -> Result<()> {
            control.send(&format!("send-keys -t echo {}", key[0] as char))?;
            loop {
                let line = control.line()?;
                if line.starts_with("%output ") && line.ends_with(key[0] as char) {
                    return Ok(());
                }
            }
        });
        echoed?;
        peer.push(took);
    }
    let report = &mut ctx.report;
    report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            "daemon Write → Attach echo",
            Figure::latency(&via_daemon),
        )
        .target(
            "p50 ≤ 150 µs",
            via_daemon.p50() <= Duration::from_micros(150),
        ),
    );
    report.add(Row::new(
        NAME,
        Role::Holdfast,
        "daemon Input message → Attach echo",
        Figure::latency(&via_input),
    ));
    report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            "host WriteInput → AttachSession echo",
            Figure::latency(&via_host),
        )
        .target("p50 ≤ 400 µs", via_host.p50() <= Duration::from_micros(400)),
    );
    report.add(Row::new(
        NAME,
        Role::Floor,
        "raw PTY write → read",
        Figure::latency(&floor),
    ));
    report.add(Row::new(
        NAME,
        Role::Peer,
        "tmux send-keys → %output (control mode)",
        Figure::latency(&peer),
    ));
    Ok(())
}
