//! A service out of file descriptors idles until one frees, then accepts again.
//!
//! A listener that cannot accept stays readable. Retrying at once (as tonic's
//! own accept loop does) spins a CPU for as long as that lasts.

mod support;

use std::time::Duration;

use holdfast_api::proto::host::v1 as pb;
use holdfast_api::proto::host::v1::workspace_service_client::WorkspaceServiceClient;
use holdfast_plumbing::proc_stat::ProcStat;
use rustix::process::{Pid, Resource, Rlimit};
use support::host::*;
use support::*;

/// Sets `pid`'s soft open-file limit to the descriptors it has open now,
/// so it can open no more; returns its limit from before.
fn squeeze(pid: u32) -> Rlimit {
    let pid_number = pid as i32;
    let open = holdfast_plumbing::proc_usage::open_fds(pid_number) as u64;
    let hard = rustix::process::getrlimit(Resource::Nofile).maximum;
    rustix::process::prlimit(
        Pid::from_raw(pid_number),
        Resource::Nofile,
        Rlimit {
            current: Some(open),
            maximum: hard,
        },
    )
    .expect("lower the open-file limit")
}

fn restore(pid: u32, limit: Rlimit) {
    rustix::process::prlimit(Pid::from_raw(pid as i32), Resource::Nofile, limit)
        .expect("restore the open-file limit");
}

/// Leaves `pid` no descriptor to spare, opens connections it cannot
/// accept, waits until its `log` says so, and checks that it idles
/// meanwhile. Returns its limit from before and the connections.
async fn starve<C>(
    pid: u32,
    log: impl Fn() -> String,
    connect: impl Fn() -> C,
) -> (Rlimit, Vec<C>) {
    let limit = squeeze(pid);
    let waiting: Vec<C> = (0..20).map(|_| connect()).collect();
    let deadline = std::time::Instant::now() + PATIENCE;
    while !log().contains("accepting a connection failed") {
        assert!(
            std::time::Instant::now() < deadline,
            "the service never reported failing accepts; {} descriptors open; {}; log:\n{}",
            holdfast_plumbing::proc_usage::open_fds(pid as i32),
            std::fs::read_to_string(format!("/proc/{pid}/limits"))
                .unwrap_or_default()
                .lines()
                .find(|line| line.starts_with("Max open files"))
                .unwrap_or("no limits"),
            log()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // A spinning accept loop uses the whole second; a pausing one next to
    // nothing. The bound is generous, for a loaded machine; the second is
    // a measuring window, not a wait for a condition.
    let used = || ProcStat::read(pid as i32).expect("the service runs").cpu;
    let before = used();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let cpu = used() - before;
    eprintln!("CPU used in a second out of descriptors: {cpu:?}");
    assert!(
        cpu < Duration::from_millis(300),
        "used {cpu:?} of CPU in a second, out of descriptors"
    );
    (limit, waiting)
}

#[tokio::test]
async fn a_host_service_out_of_descriptors_idles_and_then_serves_again() {
    let home = HostHome::new();
    let host = home.start(&[]).await;
    let pid = host.child.id();
    let address = host.address.trim_start_matches("http://").to_owned();
    let (limit, waiting) = starve(
        pid,
        || host.log_text(),
        || std::net::TcpStream::connect(&address).expect("connect"),
    )
    .await;

    restore(pid, limit);
    drop(waiting);
    // A new connection is accepted and served.
    let mut fresh = WorkspaceServiceClient::connect(host.address.clone())
        .await
        .expect("a new connection");
    fresh
        .create_workspace(pb::CreateWorkspaceRequest {
            name: "after".into(),
        })
        .await
        .expect("served");
    assert!(host.log_text().contains("accepting connections again"));
}

#[tokio::test]
async fn a_daemon_out_of_descriptors_idles_and_then_serves_again() {
    let daemon = Daemon::start().await;
    let pid = daemon.child.id();
    let (limit, waiting) = starve(
        pid,
        || daemon.log(),
        || std::os::unix::net::UnixStream::connect(&daemon.socket).expect("connect"),
    )
    .await;

    restore(pid, limit);
    drop(waiting);
    let mut client = daemon.client().await;
    assert_eq!(daemon_pid(&mut client).await, pid);
    assert!(daemon.log().contains("accepting connections again"));
}

/// A spawn the daemon has no descriptor left for (its terminal, a
/// pidfd) is refused with RESOURCE_EXHAUSTED, to be tried again later, as
/// when the system has no process to spare; it was `INTERNAL`, a daemon
/// fault. Then, with descriptors again, the same spawn starts.
#[tokio::test]
async fn a_spawn_out_of_descriptors_is_resource_exhausted() {
    let daemon = Daemon::start().await;
    let pid = daemon.child.id();
    let mut client = daemon.client().await;
    // Its connection accepted and in use before the squeeze.
    daemon_list(&mut client).await;
    let limit = squeeze(pid);
    let refused = tokio::time::timeout(PATIENCE, client.spawn(spawn_request(&["true"]))).await;
    restore(pid, limit);
    let refused = refused.expect("the daemon answered");
    // Where it runs short depends on what the daemon had open just then.
    let refused = expect_status(
        refused,
        tonic::Code::ResourceExhausted,
        "Too many open files",
    );
    expect_reason(&refused, Reason::NoResources, &[("program", "true")]);
    spawn(&mut client, &["true"]).await;
}
