//! PostgreSQL going away under a running host-service, and coming back.
//!
//! The real server is stopped and started again (`pg_ctlcluster`), so this
//! file holds one test: test binaries run one at a time, and no other test
//! uses the server meanwhile. Lists answer from memory and name the
//! database; writes are refused `UNAVAILABLE` and change nothing; the pool
//! reconnects by itself; nothing acknowledged is lost.

mod support;

use std::process::Command;

use holdfast_api::error_details::Reason;
use holdfast_api::proto::daemon::v1 as daemon_pb;
use holdfast_api::proto::host::v1 as pb;
use support::host::*;
use support::*;

/// The local PostgreSQL cluster, as Debian's tools name it.
struct Cluster {
    version: String,
}

impl Cluster {
    /// The one cluster `pg_lsclusters` lists, if this machine has one and
    /// this user may stop it.
    fn find() -> Option<Self> {
        let version = std::fs::read_dir("/etc/postgresql")
            .ok()?
            .flatten()
            .next()?
            .file_name()
            .into_string()
            .ok()?;
        let may = rustix::process::getuid().is_root();
        may.then_some(Self { version })
    }

    fn ctl(&self, action: &str) -> std::process::ExitStatus {
        Command::new("pg_ctlcluster")
            .args(["--skip-systemctl-redirect", &self.version, "main", action])
            .args(if action == "stop" {
                &["-m", "fast"][..]
            } else {
                &[]
            })
            .status()
            .expect("run pg_ctlcluster")
    }

    /// Stops the server until the returned guard is dropped or told to
    /// start it: a failing test must not leave it down for the next.
    fn stop(&self) -> Stopped<'_> {
        let status = self.ctl("stop");
        assert!(status.success(), "pg_ctlcluster stop: {status}");
        Stopped(self)
    }
}

/// The server, stopped; started again when dropped.
struct Stopped<'a>(&'a Cluster);

impl Stopped<'_> {
    fn start(self) {}
}

impl Drop for Stopped<'_> {
    fn drop(&mut self) {
        let status = self.0.ctl("start");
        assert!(
            status.success() || std::thread::panicking(),
            "pg_ctlcluster start: {status}"
        );
    }
}

#[tokio::test]
async fn a_database_that_goes_away_and_comes_back_loses_nothing() {
    let home = HostHome::new();
    let cluster = Cluster::find();
    let (Some(_), Some(cluster)) = (&home.postgres, cluster) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs a local PostgreSQL cluster this user may restart"
        );
        eprintln!("skipped: no local PostgreSQL cluster this user may restart");
        return;
    };
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("outage").await.workspace_id;
    let [kept, ended] = host
        .create_sessions(&workspace, [&["sleep", "600"][..], &["sleep", "600"]])
        .await
        .map(|session| session.session_id);
    // Restored after a restart: only the rows say they may be listed.
    host.stop(rustix::process::Signal::KILL);
    let mut host = home.start(&[]).await;
    host.list_until("both restored", &workspace, |list| {
        is_complete(list) && ids(list).len() == 2
    })
    .await;

    let stopped = cluster.stop();
    // The sessions change while the rows cannot be read: the list must be
    // rendered anew, from memory.
    let mut daemon = holdfast_plumbing::daemon_client::connect(&home.socket(), PATIENCE)
        .await
        .expect("daemon");
    daemon
        .kill(daemon_pb::KillRequest {
            session_id: ended.clone(),
            signal: daemon_pb::Signal::Kill as i32,
            grace_ms: Some(0),
        })
        .await
        .expect("kill");
    let list = host
        .list_until("a list from memory", &workspace, |list| {
            list.source == pb::Source::MemoryOnly as i32
        })
        .await;
    assert!(
        list.degraded_reason.contains("database") && list.degraded_reason.contains("postgres://"),
        "the reason names the database: {}",
        list.degraded_reason
    );
    assert!(
        list.sessions.is_empty(),
        "memory knows nothing after a restart"
    );
    let refused = host
        .terminals
        .create_session(session_request(&workspace, &["sleep", "600"]))
        .await;
    let status = expect_status(refused, tonic::Code::Unavailable, "database");
    expect_reason(&status, Reason::DatabaseUnavailable, &[]);
    let password = support::postgres::PASSWORD;
    assert!(home.database_url().contains(password), "the URL has one");
    for shown in [&list.degraded_reason, status.message(), &host.log_text()] {
        assert!(!shown.contains(password), "the password shows: {shown}");
    }

    stopped.start();
    let added = eventually("a create once the database is back", || {
        let mut terminals = host.terminals.clone();
        let request = session_request(&workspace, &["sleep", "600"]);
        async move { terminals.create_session(request).await.ok() }
    })
    .await
    .into_inner()
    .session
    .expect("a session")
    .session_id;
    let mut expected = vec![kept.clone(), added.clone()];
    expected.sort();
    let listed = |list: &pb::ListSessionsResponse| {
        let mut listed: Vec<String> = ids(list).into_iter().map(str::to_owned).collect();
        listed.sort();
        is_complete(list) && listed == expected
    };
    host.list_until("a complete list again", &workspace, listed)
        .await;

    // Nothing acknowledged was lost: a new host-service lists both from
    // the rows.
    host.stop(rustix::process::Signal::KILL);
    let host = home.start(&[]).await;
    host.list_until("both listed after a restart", &workspace, listed)
        .await;
}
