//! The derived list's invariants under random interleavings.
//!
//! They run against the real host-service and daemon. The steps are creates
//! (listed and hidden), disposals, workspace closes, host-service restarts,
//! programs exiting on their own, attaches and detaches. After every step,
//! for each workspace:
//!
//! - no disposed, stamped (closed workspace), hidden or exited session is
//!   listed;
//! - every live, listed session of an open workspace is listed;
//! - `CountBackgroundSessions` is the list minus the caller's attached ids;
//! - a `WatchSessions` stream of each workspace, open across the steps (and
//!   opened again from its revision after a restart), folds to the list.
//!
//! On PostgreSQL (`postgres_invariants.rs`) two host-services share the
//! database, each with its own daemon; steps land on either. Each host then
//! lists exactly its own sessions by the model, never the other's, and the
//! list of every host (asked of either) is the union, with its count.
//!
//! CI runs a few sequences; HOLDFAST_INVARIANT_CASES=50 runs more.

mod support;

use std::collections::{BTreeSet, HashMap};

use holdfast_api::proto::host::v1 as pb;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use rustix::process::{Pid, Signal};
use support::host::*;

#[derive(Debug, Clone)]
enum Step {
    Create {
        host: usize,
        workspace: usize,
        listed: bool,
    },
    Dispose(usize),
    CloseWorkspace(usize),
    Restart(usize),
    /// The program exits on its own (killed behind the services' backs).
    Exit(usize),
    Attach(usize),
    Detach(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (any::<usize>(), 0..2usize, prop::bool::weighted(0.8))
            .prop_map(|(host, workspace, listed)| Step::Create { host, workspace, listed }),
        2 => any::<usize>().prop_map(Step::Dispose),
        1 => (0..2usize).prop_map(Step::CloseWorkspace),
        1 => any::<usize>().prop_map(Step::Restart),
        2 => any::<usize>().prop_map(Step::Exit),
        2 => any::<usize>().prop_map(Step::Attach),
        1 => any::<usize>().prop_map(Step::Detach),
    ]
}

struct Modelled {
    id: String,
    /// Which host-service made it (an index into `World::hosts`).
    host: usize,
    workspace: usize,
    pid: u32,
    listed: bool,
    stamped: bool,
    exited: bool,
}

impl Modelled {
    fn should_list(&self, closed: &[bool; 2]) -> bool {
        self.listed && !self.stamped && !self.exited && !closed[self.workspace]
    }
}

struct World {
    // Dropped first: a host-service outliving its home would relaunch the
    // daemon the home stops, and leave that one running.
    hosts: Vec<HostService>,
    homes: Vec<HostHome>,
    workspaces: [String; 2],
    closed: [bool; 2],
    sessions: Vec<Modelled>,
    /// Open attach streams, by session index.
    attached: HashMap<usize, tonic::Streaming<pb::AttachSessionResponse>>,
    /// A watch of each workspace on the first host.
    watches: [Folded; 2],
}

/// A watch of one workspace, folded as a client folds it: id → (name,
/// attached).
#[derive(Default)]
struct Folded {
    stream: Option<tonic::Streaming<pb::WatchSessionsResponse>>,
    since: Option<u64>,
    sessions: std::collections::BTreeMap<String, (String, bool)>,
}

impl Folded {
    /// Reads the watch until it folds to `list`, opening it again (from
    /// its revision) when it broke.
    async fn until_it_shows(
        &mut self,
        host: &HostService,
        workspace_id: &str,
        list: &pb::ListSessionsResponse,
        history: &[Step],
    ) {
        use pb::watch_sessions_response::Event;
        let want: std::collections::BTreeMap<String, (String, bool)> = list
            .sessions
            .iter()
            .map(|s| (s.session_id.clone(), (s.name.clone(), s.attached)))
            .collect();
        let deadline = tokio::time::Instant::now() + support::PATIENCE;
        while self.sessions != want {
            let stream = match &mut self.stream {
                Some(stream) => stream,
                None => {
                    let request = pb::WatchSessionsRequest {
                        workspace_id: workspace_id.to_owned(),
                        since_revision: self.since,
                    };
                    let opened = host.terminals.clone().watch_sessions(request).await;
                    self.stream.insert(opened.expect("watch").into_inner())
                }
            };
            let message = match tokio::time::timeout_at(deadline, stream.message()).await {
                Ok(Ok(Some(message))) => message,
                // Broke (a restart): opened again from the revision.
                Ok(_) => {
                    self.stream = None;
                    continue;
                }
                Err(_) => panic!(
                    "the watch folds to {:?}, the list is {want:?}, after {history:?}",
                    self.sessions
                ),
            };
            assert!(
                self.since.is_none_or(|since| message.revision > since),
                "revisions only grow"
            );
            self.since = Some(message.revision);
            let shown = |s: &pb::Session| (s.name.clone(), s.attached);
            match message.event {
                Some(Event::List(whole)) => {
                    self.sessions = whole
                        .sessions
                        .iter()
                        .map(|s| (s.session_id.clone(), shown(s)))
                        .collect();
                }
                Some(Event::Added(s) | Event::Changed(s)) => {
                    self.sessions.insert(s.session_id.clone(), shown(&s));
                }
                Some(Event::Removed(removed)) => {
                    self.sessions.remove(&removed.session_id);
                }
                Some(Event::Source(_) | Event::Daemon(_)) | None => {}
            }
        }
    }
}

impl World {
    async fn new() -> Self {
        let first = HostHome::new();
        let mut homes = Vec::new();
        if first.postgres.is_some() {
            homes.push(HostHome::sharing(&first));
        }
        homes.insert(0, first);
        let mut hosts = Vec::new();
        for home in &homes {
            hosts.push(home.start(HOST_FLAGS).await);
        }
        let workspaces = [
            hosts[0].create_workspace("one").await.workspace_id,
            hosts[0].create_workspace("two").await.workspace_id,
        ];
        Self {
            hosts,
            homes,
            workspaces,
            closed: [false; 2],
            sessions: Vec::new(),
            attached: HashMap::new(),
            watches: Default::default(),
        }
    }

    /// The host a step names.
    fn host(&self, n: usize) -> usize {
        n % self.hosts.len()
    }

    fn pick(&self, n: usize) -> Option<usize> {
        (!self.sessions.is_empty()).then(|| n % self.sessions.len())
    }

    async fn apply(&mut self, step: &Step) {
        match *step {
            Step::Create {
                host,
                workspace,
                listed,
            } => {
                if self.closed[workspace] {
                    return;
                }
                let host = self.host(host);
                let mut request = session_request(&self.workspaces[workspace], &["cat"]);
                request.listed = Some(listed);
                let session = self.hosts[host].create_session(request).await;
                self.sessions.push(Modelled {
                    id: session.session_id,
                    host,
                    workspace,
                    pid: session.pid,
                    listed,
                    stamped: false,
                    exited: false,
                });
            }
            Step::Dispose(n) => {
                let Some(i) = self.pick(n) else { return };
                let m = &self.sessions[i];
                self.hosts[m.host].dispose(&m.id).await;
                self.sessions[i].stamped = true;
            }
            Step::CloseWorkspace(workspace) => {
                if self.closed[workspace] {
                    return;
                }
                // Workspaces are shared: closed on one host, closed on all.
                let host = self.host(workspace);
                self.hosts[host]
                    .close_workspace(&self.workspaces[workspace])
                    .await;
                self.closed[workspace] = true;
            }
            Step::Restart(host) => {
                let host = self.host(host);
                self.hosts[host].stop(Signal::KILL);
                let sessions = &self.sessions;
                self.attached.retain(|&i, _| sessions[i].host != host);
                self.hosts[host] = self.homes[host].start(HOST_FLAGS).await;
            }
            Step::Exit(n) => {
                let Some(i) = self.pick(n) else { return };
                if self.sessions[i].exited {
                    return;
                }
                let pid = Pid::from_raw(self.sessions[i].pid as i32).expect("pid");
                let _ = rustix::process::kill_process(pid, Signal::KILL);
                self.sessions[i].exited = true;
                // The daemon reaps it at once; wait until it has.
                support::process_gone(self.sessions[i].pid).await;
            }
            Step::Attach(n) => {
                let Some(i) = self.pick(n) else { return };
                let m = &self.sessions[i];
                if m.stamped
                    || m.exited
                    || self.closed[m.workspace]
                    || self.attached.contains_key(&i)
                {
                    return;
                }
                let stream = self.hosts[m.host].attach(&m.id, None).await;
                self.attached.insert(i, stream);
            }
            Step::Detach(n) => {
                if let Some(i) = self.pick(n) {
                    self.attached.remove(&i);
                }
            }
        }
    }

    /// The invariants, for both workspaces, on each host and then of every
    /// host. An exit is learned from the daemon, so lists are polled until
    /// they settle on the model; a list that ever shows a forbidden session
    /// fails at once.
    async fn check(&mut self, history: &[Step]) {
        let attached: Vec<String> = self
            .attached
            .keys()
            .map(|&i| self.sessions[i].id.clone())
            .collect();
        let attached: Vec<&str> = attached.iter().map(String::as_str).collect();
        for workspace in 0..2 {
            let id = &self.workspaces[workspace];
            for host in 0..self.hosts.len() {
                let on_host = |m: &Modelled| m.host == host && m.workspace == workspace;
                let expected = self.ids(|m| on_host(m) && m.should_list(&self.closed));
                // Another host's session is forbidden here, whatever it is.
                let forbidden = self.ids(|m| {
                    m.workspace == workspace
                        && (m.host != host || m.stamped || !m.listed || self.closed[workspace])
                });
                let list = self.hosts[host]
                    .list_until("the list to match the model", id, |list| {
                        settled(list, &expected, &forbidden, history)
                    })
                    .await;
                let count = self.hosts[host].count(id, &attached).await;
                assert_eq!(
                    count.count as usize,
                    background(&list, &attached),
                    "count is the list minus the attached, on host {host}, after {history:?}"
                );
                if host == 0 {
                    self.watches[workspace]
                        .until_it_shows(&self.hosts[0], id, &list, history)
                        .await;
                }
            }
            if self.hosts.len() == 1 {
                continue;
            }
            // Every host's, asked of the host of this workspace's number.
            let expected = self.ids(|m| m.workspace == workspace && m.should_list(&self.closed));
            let forbidden = self.ids(|m| {
                m.workspace == workspace && (m.stamped || !m.listed || self.closed[workspace])
            });
            let asked = &self.hosts[self.host(workspace)];
            let list = support::eventually("every host's list to match the model", || {
                let mut terminals = asked.terminals.clone();
                let request = pb::ListSessionsRequest {
                    workspace_id: id.clone(),
                    scope: pb::Scope::AllHosts.into(),
                    ..Default::default()
                };
                let (expected, forbidden) = (&expected, &forbidden);
                async move {
                    let list = terminals.list_sessions(request).await.ok()?.into_inner();
                    let answered = list.hosts.iter().all(|host| host.answered);
                    (answered && settled(&list, expected, forbidden, history)).then_some(list)
                }
            })
            .await;
            assert!(
                list.sessions
                    .iter()
                    .all(|s| !s.unconfirmed && !s.host_id.is_empty()),
                "{list:?}"
            );
            let count = asked.count_in(id, &attached, pb::Scope::AllHosts).await;
            assert_eq!(
                count.count as usize,
                background(&list, &attached),
                "every host's count is its list minus the attached, after {history:?}"
            );
        }
    }

    /// The ids of the modelled sessions `which` picks.
    fn ids(&self, which: impl Fn(&Modelled) -> bool) -> BTreeSet<String> {
        self.sessions
            .iter()
            .filter(|m| which(m))
            .map(|m| m.id.clone())
            .collect()
    }
}

/// Flags every host-service here starts with: a deadline long enough that
/// a slow machine's lists are complete.
const HOST_FLAGS: &[&str] = &["--daemon-deadline-ms", "3000"];

/// Whether `list` is complete and lists exactly `expected`; panics at once
/// if it lists anything `forbidden`.
fn settled(
    list: &pb::ListSessionsResponse,
    expected: &BTreeSet<String>,
    forbidden: &BTreeSet<String>,
    history: &[Step],
) -> bool {
    let listed: BTreeSet<String> = ids(list).into_iter().map(str::to_owned).collect();
    assert!(
        listed.is_disjoint(forbidden),
        "sessions listed that must not be: {:?} after {history:?}",
        listed.intersection(forbidden).collect::<Vec<_>>()
    );
    is_complete(list) && &listed == expected
}

/// How many of `list`'s sessions are not in `attached`.
fn background(list: &pb::ListSessionsResponse, attached: &[&str]) -> usize {
    ids(list).iter().filter(|id| !attached.contains(id)).count()
}

#[test]
fn the_derived_list_keeps_its_invariants_under_random_interleavings() {
    let cases = std::env::var("HOLDFAST_INVARIANT_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3);
    let mut runner = TestRunner::new(Config {
        cases,
        // Each case starts real services: shrinking would take too long;
        // the failing sequence is printed whole instead.
        max_shrink_iters: 0,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&proptest::collection::vec(step(), 10..30), |steps| {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async {
                let mut world = World::new().await;
                for (done, step) in steps.iter().enumerate() {
                    world.apply(step).await;
                    world.check(&steps[..=done]).await;
                }
            });
            Ok(())
        })
        .expect("invariants hold");
}
