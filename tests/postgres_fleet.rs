//! Several host-services on one PostgreSQL database, each with its own
//! daemon: each acts on its own session rows only.
//!
//! A host that joined, reaped or ended the rows of sessions its own daemon
//! does not hold would hide or end every other machine's sessions. Here
//! three hosts share a workspace; each lists only its own sessions, and no
//! reaper pass, restart or daemon death of one touches another's rows. An
//! operation on another host's session is refused with that host's name
//! and address.

mod support;

use std::time::Duration;

use holdfast_api::error_details::Reason;
use holdfast_api::proto::host::v1 as pb;
use rustix::process::Signal;
use support::host::*;
use support::*;

/// A's reaper comes by every second; B's and C's only at their start, so
/// that nothing of theirs would put right what A did to their rows.
const REAPING: [&str; 2] = ["--reap-interval-secs", "1"];

/// The status of session `id`'s row, read from the database itself.
fn row_status(database_url: &str, id: &str) -> String {
    use diesel::{Connection, QueryableByName, RunQueryDsl};
    #[derive(QueryableByName)]
    struct Status {
        #[diesel(sql_type = diesel::sql_types::Text)]
        status: String,
    }
    let mut db = diesel::PgConnection::establish(database_url).expect("connect");
    diesel::sql_query("SELECT status FROM terminal_sessions WHERE id = $1")
        .bind::<diesel::sql_types::Text, _>(id)
        .get_result::<Status>(&mut db)
        .expect("the row")
        .status
}

/// The ids a list holds.
fn listed(list: &pb::ListSessionsResponse) -> Vec<String> {
    ids(list).into_iter().map(str::to_owned).collect()
}

#[tokio::test]
async fn hosts_sharing_a_database_keep_to_their_own_sessions() {
    let a = HostHome::new();
    if a.postgres.is_none() {
        eprintln!("skipped: no PostgreSQL (see tests/support/postgres.rs)");
        return;
    }
    let (b, c) = (HostHome::sharing(&a), HostHome::sharing(&a));
    let mut host_a = a.start(&REAPING).await;
    let mut host_b = b.start(&[]).await;
    let mut host_c = c.start(&[]).await;
    // Each knows the others: `holdfast hosts`, asked of A.
    let listed_hosts = std::process::Command::new(binary("holdfast"))
        .args(["--addr", host_a.address.as_str(), "hosts"])
        .output()
        .expect("run holdfast");
    let table = String::from_utf8_lossy(&listed_hosts.stdout);
    assert!(listed_hosts.status.success(), "{table}");
    for home in [&a, &b, &c] {
        let id = home.host_id.as_deref().expect("an id");
        let line = table
            .lines()
            .find(|line| line.contains(id))
            .unwrap_or_else(|| panic!("{id} in {table}"));
        assert!(line.contains("alive"), "{line}");
        assert_eq!(line.contains(" * "), std::ptr::eq(home, &a), "{line}");
    }

    // Workspaces are shared: one made on A is B's and C's too.
    let workspace = host_a.create_workspace("shared").await.workspace_id;
    let mut session_of = Vec::new();
    for host in [&mut host_a, &mut host_b, &mut host_c] {
        let session = host
            .create_session(session_request(&workspace, &["sleep", "600"]))
            .await;
        session_of.push(session.session_id);
    }
    let only = |index: usize| {
        let id = session_of[index].clone();
        move |list: &pb::ListSessionsResponse| is_complete(list) && listed(list) == [id.clone()]
    };
    host_a
        .list_until("A lists its own", &workspace, only(0))
        .await;
    host_b
        .list_until("B lists its own", &workspace, only(1))
        .await;
    host_c
        .list_until("C lists its own", &workspace, only(2))
        .await;

    // Every host's sessions at once, asked of A: each host answers for
    // its own.
    let everywhere = |host: &HostService| {
        let mut terminals = host.terminals.clone();
        let request = pb::ListSessionsRequest {
            workspace_id: workspace.clone(),
            scope: pb::Scope::AllHosts.into(),
            ..Default::default()
        };
        async move {
            terminals
                .list_sessions(request)
                .await
                .expect("list every host")
                .into_inner()
        }
    };
    let on_host = |list: &pb::ListSessionsResponse| {
        let mut found: Vec<(String, String, bool)> = list
            .sessions
            .iter()
            .map(|s| (s.session_id.clone(), s.host_id.clone(), s.unconfirmed))
            .collect();
        found.sort();
        found
    };
    let expected = |unconfirmed_b: bool| {
        let mut expected: Vec<(String, String, bool)> = [(&a, 0), (&b, 1), (&c, 2)]
            .into_iter()
            .map(|(home, index)| {
                let host = home.host_id.clone().expect("an id");
                (session_of[index].clone(), host, index == 1 && unconfirmed_b)
            })
            .collect();
        expected.sort();
        expected
    };
    let list = everywhere(&host_a).await;
    assert!(is_complete(&list), "{list:?}");
    assert_eq!(on_host(&list), expected(false));
    assert!(
        list.hosts.len() == 2 && list.hosts.iter().all(|host| host.answered),
        "{list:?}"
    );
    let count = host_a
        .count_in(&workspace, &[&session_of[2]], pb::Scope::AllHosts)
        .await;
    assert_eq!(count.count, 2, "three sessions, one of them attached here");

    // Every list names the host, this host's own and GetSession too.
    let a_id = a.host_id.clone().expect("A's id");
    let own = host_a.list(&workspace).await;
    assert!(
        own.sessions
            .iter()
            .all(|s| s.host_id == a_id && !s.host_name.is_empty()),
        "{own:?}"
    );
    let got = host_a.get_session(&session_of[0]).await;
    assert_eq!(
        (got.host_id, got.host_name),
        (a_id, own.sessions[0].host_name.clone())
    );

    // A holds C's list between asks and then gets only offsets: output on
    // C still reaches A's list of every host, and so does a session's end.
    let echo = host_c
        .create_session(session_request(&workspace, &["cat"]))
        .await
        .session_id;
    let has = |id: &str, list: &pb::ListSessionsResponse, least: u64| {
        list.sessions
            .iter()
            .any(|s| s.session_id == id && s.output_offset >= least && s.pid > 0)
    };
    eventually("A lists C's new session", || async {
        has(&echo, &everywhere(&host_a).await, 0).then_some(())
    })
    .await;
    host_c.write_input(&echo, "hello from C\n").await;
    eventually("A sees C's output move on", || async {
        has(&echo, &everywhere(&host_a).await, 12).then_some(())
    })
    .await;
    host_c.dispose(&echo).await;
    eventually("A no longer lists it", || async {
        (on_host(&everywhere(&host_a).await) == expected(false)).then_some(())
    })
    .await;

    // B's host-service is killed (its daemon runs on): A names B as not
    // answering and shows B's session from its row, unconfirmed, until B
    // is back.
    host_b.stop(Signal::KILL);
    let list = everywhere(&host_a).await;
    assert_eq!(on_host(&list), expected(true));
    let b_id = b.host_id.clone().expect("B's id");
    let silent = list
        .hosts
        .iter()
        .find(|host| host.host_id == b_id)
        .expect("B named");
    assert!(!silent.answered && !silent.reason.is_empty(), "{silent:?}");
    let b_session = list
        .sessions
        .iter()
        .find(|s| s.session_id == session_of[1])
        .expect("B's");
    assert!(
        !b_session.alive,
        "an unconfirmed session is never shown alive"
    );
    let table = std::process::Command::new(binary("holdfast"))
        .args(["--addr", host_a.address.as_str(), "ls", "--all-hosts", "-w"])
        .arg(&workspace)
        .output()
        .expect("run holdfast");
    let shown = String::from_utf8_lossy(&table.stdout);
    assert!(table.status.success(), "{shown}");
    assert!(
        shown
            .lines()
            .next()
            .is_some_and(|header| header.contains("HOST")),
        "{shown}"
    );
    let b_line = shown
        .lines()
        .find(|line| line.contains(session_of[1].as_str()))
        .unwrap_or_else(|| panic!("B's session in {shown}"));
    assert!(b_line.contains("unknown"), "{b_line}");
    assert!(shown.contains("did not answer"), "{shown}");
    let mut host_b = b.start(&[]).await;
    eventually("B confirmed again", || {
        let listing = everywhere(&host_a);
        let expected = expected(false);
        async move { (on_host(&listing.await) == expected).then_some(()) }
    })
    .await;

    // C hangs (stopped, its port still open, its heartbeat still fresh):
    // A's list of every host still answers, by its deadline, naming C.
    let c_pid = rustix::process::Pid::from_child(&host_c.child);
    rustix::process::kill_process(c_pid, Signal::STOP).expect("SIGSTOP C");
    let list = everywhere(&host_a).await;
    let c_id = c.host_id.clone().expect("C's id");
    let hung = list.hosts.iter().find(|host| host.host_id == c_id);
    let _ = rustix::process::kill_process(c_pid, Signal::CONT);
    let hung = hung.unwrap_or_else(|| panic!("C named: {list:?}"));
    assert!(
        !hung.answered && hung.reason.contains("deadline"),
        "{hung:?}"
    );
    let c_session = list.sessions.iter().find(|s| s.session_id == session_of[2]);
    assert!(
        c_session.is_some_and(|s| s.unconfirmed && !s.alive),
        "{list:?}"
    );
    eventually("C answers again", || {
        let listing = everywhere(&host_a);
        let expected = expected(false);
        async move { (on_host(&listing.await) == expected).then_some(()) }
    })
    .await;

    // Several passes of A's reaper: none ends another host's session.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    for (host, index) in [(&mut host_a, 0), (&mut host_b, 1), (&mut host_c, 2)] {
        let list = host.list(&workspace).await;
        assert!(only(index)(&list), "after the reapers: {list:?}");
    }
    let url = a.database_url();
    for id in &session_of {
        assert_eq!(row_status(&url, id), "active", "the row of {id}");
    }

    // A restart of A, and then its daemon's death: A records its own
    // session as ended, and B's and C's rows stay as they were.
    host_a.stop(Signal::KILL);
    let host_a = a.start(&REAPING).await;
    host_a
        .list_until("A lists its own after a restart", &workspace, only(0))
        .await;
    for pid in a.daemon_pids() {
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid).expect("pid"),
            Signal::KILL,
        )
        .expect("kill A's daemon");
    }
    host_a
        .list_until("A's session ended with its daemon", &workspace, |list| {
            is_complete(list) && list.sessions.is_empty()
        })
        .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    host_b
        .list_until("B's untouched", &workspace, only(1))
        .await;
    host_c
        .list_until("C's untouched", &workspace, only(2))
        .await;
    assert_eq!(row_status(&url, &session_of[0]), "exited");
    for id in &session_of[1..] {
        assert_eq!(row_status(&url, id), "active", "the row of {id}");
    }

    // An operation on another host's session names that host and where it
    // is reached.
    let refused = host_a
        .terminals
        .clone()
        .write_input(pb::WriteInputRequest {
            session_id: session_of[1].clone(),
            data: "hello\n".into(),
            ..Default::default()
        })
        .await;
    let status = expect_status(refused, tonic::Code::FailedPrecondition, "runs on host");
    let b_address = host_b.address.trim_start_matches("http://").to_owned();
    expect_reason(
        &status,
        Reason::SessionOnAnotherHost,
        &[
            ("sessionId", session_of[1].as_str()),
            ("hostId", b_id.as_str()),
            ("address", b_address.as_str()),
        ],
    );
    let refused = host_c
        .terminals
        .clone()
        .dispose_session(pb::DisposeSessionRequest {
            session_id: session_of[1].clone(),
            ..Default::default()
        })
        .await;
    expect_status(refused, tonic::Code::FailedPrecondition, "runs on host");
    host_b
        .list_until("B's still listed", &workspace, only(1))
        .await;

    // The CLI finds B's session by the start of its id, asked of C, and
    // follows the refusal by itself: a kill sent to C reaches B.
    let killed = std::process::Command::new(binary("holdfast"))
        .args([
            "--addr",
            host_c.address.as_str(),
            "kill",
            &session_of[1][..13],
        ])
        .output()
        .expect("run holdfast");
    let stderr = String::from_utf8_lossy(&killed.stderr);
    assert!(killed.status.success(), "holdfast kill: {stderr}");
    assert!(stderr.contains("asking it there"), "{stderr}");
    host_b
        .list_until("B's session disposed", &workspace, |list| {
            is_complete(list) && list.sessions.is_empty()
        })
        .await;
    host_c
        .list_until("C's untouched", &workspace, only(2))
        .await;

    // A workspace closed on B closes on every host: C's program in it is
    // killed by C, told by B, and no host lists it.
    host_c
        .list_until("C's own, listed", &workspace, only(2))
        .await;
    let c_pid = host_c.get_session(&session_of[2]).await.pid;
    host_b.close_workspace(&workspace).await;
    support::process_gone(c_pid).await;
    let list = host_c.list(&workspace).await;
    assert!(list.sessions.is_empty(), "{list:?}");
    assert!(everywhere(&host_a).await.sessions.is_empty());
}

/// Hosts started at the same moment on a new database (a fleet brought up
/// together) all start: the migrations run one host at a time.
#[tokio::test]
async fn hosts_started_together_on_a_new_database_all_start() {
    let a = HostHome::new();
    if a.postgres.is_none() {
        eprintln!("skipped: no PostgreSQL (see tests/support/postgres.rs)");
        return;
    }
    let (b, c) = (HostHome::sharing(&a), HostHome::sharing(&a));
    let (host_a, host_b, host_c) = tokio::join!(a.start(&[]), b.start(&[]), c.start(&[]));
    for host in [&host_a, &host_b, &host_c] {
        let hosts = pb::status_service_client::StatusServiceClient::connect(host.address.clone())
            .await
            .expect("connect")
            .list_hosts(pb::ListHostsRequest {})
            .await
            .expect("list hosts")
            .into_inner()
            .hosts;
        assert_eq!(hosts.len(), 3, "{hosts:?}");
    }
}
