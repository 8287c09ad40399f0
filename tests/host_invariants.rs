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
//! - `CountBackgroundSessions` is the list minus the caller's attached ids.
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
        workspace: usize,
        listed: bool,
    },
    Dispose(usize),
    CloseWorkspace(usize),
    Restart,
    /// The program exits on its own (killed behind the services' backs).
    Exit(usize),
    Attach(usize),
    Detach(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0..2usize, prop::bool::weighted(0.8)).prop_map(|(workspace, listed)| Step::Create { workspace, listed }),
        2 => any::<usize>().prop_map(Step::Dispose),
        1 => (0..2usize).prop_map(Step::CloseWorkspace),
        1 => Just(Step::Restart),
        2 => any::<usize>().prop_map(Step::Exit),
        2 => any::<usize>().prop_map(Step::Attach),
        1 => any::<usize>().prop_map(Step::Detach),
    ]
}

struct Modelled {
    id: String,
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
    host: HostService,
    home: HostHome,
    workspaces: [String; 2],
    closed: [bool; 2],
    sessions: Vec<Modelled>,
    /// Open attach streams, by session index.
    attached: HashMap<usize, tonic::Streaming<pb::AttachSessionResponse>>,
}

impl World {
    async fn new() -> Self {
        let home = HostHome::new();
        let mut host = home.start(&["--daemon-deadline-ms", "3000"]).await;
        let workspaces = [
            host.create_workspace("one").await.workspace_id,
            host.create_workspace("two").await.workspace_id,
        ];
        Self {
            host,
            home,
            workspaces,
            closed: [false; 2],
            sessions: Vec::new(),
            attached: HashMap::new(),
        }
    }

    fn pick(&self, n: usize) -> Option<usize> {
        (!self.sessions.is_empty()).then(|| n % self.sessions.len())
    }

    async fn apply(&mut self, step: &Step) {
        match *step {
            Step::Create { workspace, listed } => {
                if self.closed[workspace] {
                    return;
                }
                let mut request = session_request(&self.workspaces[workspace], &["cat"]);
                request.listed = Some(listed);
                let session = self.host.create_session(request).await;
                self.sessions.push(Modelled {
                    id: session.session_id,
                    workspace,
                    pid: session.pid,
                    listed,
                    stamped: false,
                    exited: false,
                });
            }
            Step::Dispose(n) => {
                let Some(i) = self.pick(n) else { return };
                self.host.dispose(&self.sessions[i].id).await;
                self.sessions[i].stamped = true;
            }
            Step::CloseWorkspace(workspace) => {
                if self.closed[workspace] {
                    return;
                }
                self.host.close_workspace(&self.workspaces[workspace]).await;
                self.closed[workspace] = true;
            }
            Step::Restart => {
                self.host.stop(Signal::KILL);
                self.attached.clear();
                self.host = self.home.start(&["--daemon-deadline-ms", "3000"]).await;
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
                let stream = self.host.attach(&m.id, None).await;
                self.attached.insert(i, stream);
            }
            Step::Detach(n) => {
                if let Some(i) = self.pick(n) {
                    self.attached.remove(&i);
                }
            }
        }
    }

    /// The invariants, for both workspaces. An exit is learned from the
    /// daemon, so lists are polled until they settle on the model; a list
    /// that ever shows a forbidden session fails at once.
    async fn check(&mut self, history: &[Step]) {
        for workspace in 0..2 {
            let expected: BTreeSet<&str> = self
                .sessions
                .iter()
                .filter(|m| m.workspace == workspace && m.should_list(&self.closed))
                .map(|m| m.id.as_str())
                .collect();
            let forbidden: BTreeSet<&str> = self
                .sessions
                .iter()
                .filter(|m| {
                    m.workspace == workspace && (m.stamped || !m.listed || self.closed[workspace])
                })
                .map(|m| m.id.as_str())
                .collect();
            let list = self
                .host
                .list_until(
                    "the list to match the model",
                    &self.workspaces[workspace],
                    |list| {
                        let listed: BTreeSet<&str> = ids(list).into_iter().collect();
                        assert!(
                            listed.is_disjoint(&forbidden),
                            "disposed, stamped or hidden sessions listed: {:?} after {history:?}",
                            listed.intersection(&forbidden).collect::<Vec<_>>()
                        );
                        is_complete(list) && listed == expected
                    },
                )
                .await;
            let attached: Vec<String> = self
                .attached
                .keys()
                .map(|&i| self.sessions[i].id.clone())
                .collect();
            let attached_listed = ids(&list)
                .iter()
                .filter(|id| attached.iter().any(|a| a == *id))
                .count();
            let attached: Vec<&str> = attached.iter().map(String::as_str).collect();
            let count = self
                .host
                .count(&self.workspaces[workspace], &attached)
                .await;
            assert_eq!(
                count.count as usize,
                list.sessions.len() - attached_listed,
                "count is the list minus the attached, after {history:?}"
            );
        }
    }
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
