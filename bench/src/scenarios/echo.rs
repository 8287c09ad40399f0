//! Scenario 5: Keystroke echo.
//!
//! It times one byte in until it comes back on the attach stream, from
//! `stty raw -echo; cat`. The byte goes through the daemon and the
//! host-service. Beside them are a raw PTY (the floor) and tmux `send-keys` →
//! `%output` (the peer).

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use holdfast_api::proto::daemon::v1 as daemon_pb;
use holdfast_api::proto::host::v1 as pb;
use holdfast_plumbing::answered_stream::{self, AnsweredStream};
use tonic::Streaming;

use super::Ctx;
use crate::floor::RawPty;
use crate::report::{Figure, Role, Row};
use crate::services::{Home, attach_daemon, spawn_request, write_daemon};
use crate::stats::{Samples, time_blocking};
use crate::streams::{AttachEvent, until_contains};
use crate::tmux::Tmux;

const NAME: &str = "5. keystroke echo";
/// The paths timed: the daemon's two, the host-service's two, the floor, the peer.
const PATHS: usize = 6;
const ARGV: [&str; 3] = ["sh", "-c", "stty raw -echo; echo ready; exec cat"];

pub async fn run(ctx: &mut Ctx) -> Result<()> {
    let home = Home::new()?;
    let mut host = home.start_host(&ctx.bins, &[]).await?;
    let workspace = host.workspace("echo").await?;
    let session = host.create(&workspace, &ARGV).await?.session_id;
    let mut host_stream = host.attach(&session).await?;
    until_contains(&mut host_stream, b"ready").await?;
    // Opened by an empty write, so the timed ones find it open.
    let (writes, requests) = answered_stream::requests(pb::SendInputRequest {
        session_id: session.clone(),
        data: Default::default(),
        ..Default::default()
    });
    let answers = host.terminals.send_input(requests).await?.into_inner();
    let mut host_input = AnsweredStream::opened(writes, answers).await?;

    let mut daemon = host.daemon().clone();
    daemon.spawn(spawn_request("echo", &ARGV)).await?;
    let mut daemon_stream = attach_daemon(&mut daemon, "echo").await?;
    until_contains(&mut daemon_stream, b"ready").await?;
    let (writes, requests) = answered_stream::requests(daemon_pb::InputRequest {
        session_id: "echo".into(),
        data: Default::default(),
    });
    let answers = daemon.input(requests).await?.into_inner();
    let mut daemon_input = AnsweredStream::opened(writes, answers).await?;

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
        mut via_host_stream,
        mut via_daemon,
        mut via_input,
        mut floor,
        mut peer,
    ] = std::array::from_fn(|_| Samples::default());
    // Each round times every path once, in an order shuffled afresh: a
    // path's echo depends on what ran just before it (a daemon `Write` echo
    // alone, in a loop: 86–143 µs p50; after any of the other paths: 190–210
    // µs, most likely for the caches they leave), so in a fixed order
    // each path had one predecessor for every round (the daemon's `Input`
    // always followed its `Write`, on the same session: 127 µs p50 there,
    // about 145 µs after the others).
    let mut order: [usize; PATHS] = std::array::from_fn(|path| path);
    let mut shuffler = fastrand::Rng::with_seed(5);
    for i in 0..ctx.scale.echo_samples {
        let key = [b'a' + (i % 26) as u8];
        shuffler.shuffle(&mut order);
        for path in order {
            match path {
                0 => {
                    let write = write_daemon(&mut daemon, "echo", &key);
                    via_daemon.push(echo(write, &mut daemon_stream, &key).await?);
                }
                1 => {
                    let write = daemon_input.send(daemon_pb::InputRequest {
                        session_id: String::new(),
                        data: key.to_vec().into(),
                    });
                    via_input.push(echo(write, &mut daemon_stream, &key).await?);
                }
                2 => {
                    let write = host.write(&session, &key);
                    via_host.push(echo(write, &mut host_stream, &key).await?);
                }
                3 => {
                    let write = host_input.send(pb::SendInputRequest {
                        session_id: String::new(),
                        data: key.to_vec().into(),
                        ..Default::default()
                    });
                    via_host_stream.push(echo(write, &mut host_stream, &key).await?);
                }
                4 => {
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
                }
                _ => {
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
            }
        }
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
    report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            "daemon Input message → Attach echo",
            Figure::latency(&via_input),
        )
        .target(
            "p50 ≤ 150 µs",
            via_input.p50() <= Duration::from_micros(150),
        ),
    );
    report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            "host WriteInput → AttachSession echo",
            Figure::latency(&via_host),
        )
        .target("p50 ≤ 400 µs", via_host.p50() <= Duration::from_micros(400)),
    );
    report.add(
        Row::new(
            NAME,
            Role::Holdfast,
            "host SendInput message → AttachSession echo",
            Figure::latency(&via_host_stream),
        )
        .target(
            "p50 ≤ 400 µs",
            via_host_stream.p50() <= Duration::from_micros(400),
        ),
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

/// How long `write` takes until `key` has come back on `stream`.
async fn echo<T: AttachEvent, E: Into<anyhow::Error>>(
    write: impl Future<Output = Result<(), E>>,
    stream: &mut Streaming<T>,
    key: &[u8],
) -> Result<Duration> {
    let start = Instant::now();
    write.await.map_err(Into::into)?;
    until_contains(stream, key).await?;
    Ok(start.elapsed())
}
