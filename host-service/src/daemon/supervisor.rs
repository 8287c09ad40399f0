//! Keeps a pty-daemon serving the socket.
//!
//! It adopts the one already there or launches one. It learns of session
//! exits from it. It relaunches it if it dies, with a crash-loop breaker.
//! It never stops the daemon.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use holdfast_api::proto::daemon::v1 as daemon;
use holdfast_plumbing::daemon_client::{self, DaemonClient};
use holdfast_plumbing::proc_stat;
use pty_daemon::listener::{self, Lock};
use tokio::sync::watch;
use tonic_health::ServingStatus;
use tonic_health::server::HealthReporter;

use crate::daemon::liveness::Liveness;
use crate::daemon::reaper::Reaper;
use crate::sessions::held_sessions::HeldSessions;
use crate::store::{self, Ending, Store};

/// The health-check name under which the daemon dependency is reported.
pub const DAEMON_HEALTH_SERVICE: &str = "holdfast.daemon.v1.PtyDaemon";
/// Crashes within `CRASH_WINDOW` that stop relaunching.
const MAX_CRASHES: usize = 3;
/// The window the crash-loop breaker counts over.
const CRASH_WINDOW: Duration = Duration::from_secs(60);
/// How long a launched daemon gets to start answering.
const LAUNCH_PATIENCE: Duration = Duration::from_secs(10);
/// How often to look for a daemon after the breaker tripped.
const GAVE_UP_PROBE_EVERY: Duration = Duration::from_secs(5);

/// How long a probe waits for the daemon's answer.
const PROBE_PATIENCE: Duration = Duration::from_secs(2);
/// How often a daemon that is up is asked whether it still answers.
///
/// Its exit watch alone would not tell a daemon stopped by a signal.
const LIVENESS_EVERY: Duration = Duration::from_secs(5);
/// How often a daemon that stopped answering is asked again.
const DOWN_ASKED_EVERY: Duration = Duration::from_secs(1);
/// How long a daemon whose socket and lock file are gone is given to bind
/// them again before it is thought dead.
///
/// It looks once a second (pty-daemon's `kept_socket.rs`).
const REBIND_GRACE: Duration = Duration::from_secs(3);

/// Why a probe found no serving daemon.
#[derive(Debug)]
enum Probe {
    /// Nothing accepts connections on the socket: no daemon is running.
    Unreachable(String),
    /// A process holds the socket but does not answer (e.g. SIGSTOP).
    Unresponsive(String),
}

/// Why no daemon could be had.
#[derive(Debug)]
pub enum NoDaemon {
    /// One runs for this socket but does not answer (stopped, or its
    /// socket gone).
    ///
    /// It is waited for, never replaced.
    Waiting(String),
    /// None answers, and none could be started.
    Failed(String),
}

impl std::fmt::Display for NoDaemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Waiting(reason) | Self::Failed(reason) => f.write_str(reason),
        }
    }
}

/// What is known of the daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DaemonState {
    /// Not yet reached.
    Starting,
    /// Serving, as far as is known.
    Up {
        /// Its pid.
        pid: u32,
        /// Its version.
        version: String,
        /// How many upgrades in place it went through.
        upgrades: u32,
    },
    /// Gone (being relaunched), or running but not answering.
    Down(String),
    /// Crashed too often.
    ///
    /// None is relaunched until one appears on the socket.
    GaveUp(String),
}

/// A cheap, shared view of the daemon's state.
#[derive(Clone)]
pub struct DaemonHealth(Arc<Health>);

struct Health {
    state: watch::Sender<DaemonState>,
    /// Daemons that died under this host-service, and when the last did.
    deaths: std::sync::Mutex<(u32, Option<SystemTime>)>,
}

impl DaemonHealth {
    fn new() -> Self {
        Self(Arc::new(Health {
            state: watch::Sender::new(DaemonState::Starting),
            deaths: std::sync::Mutex::default(),
        }))
    }

    /// How many daemons died under this host-service (each relaunched,
    /// their sessions lost), and when the last did.
    pub fn deaths(&self) -> (u32, Option<SystemTime>) {
        *self.0.deaths.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn died(&self) {
        let mut deaths = self.0.deaths.lock().unwrap_or_else(|p| p.into_inner());
        *deaths = (deaths.0 + 1, Some(SystemTime::now()));
    }

    /// Why the daemon is known to be unreachable, if it is.
    pub fn down_reason(&self) -> Option<String> {
        match &*self.0.state.borrow() {
            DaemonState::Down(reason) => Some(format!("the pty-daemon is down: {reason}")),
            DaemonState::GaveUp(reason) => Some(format!(
                "the pty-daemon keeps crashing and is not relaunched: {reason}"
            )),
            DaemonState::Starting | DaemonState::Up { .. } => None,
        }
    }

    /// The state now.
    pub fn state(&self) -> DaemonState {
        self.0.state.borrow().clone()
    }
}

/// How to start a daemon.
#[derive(Debug, Clone)]
pub struct Launcher {
    /// The executable.
    pub program: PathBuf,
    /// argv[0] to give it.
    ///
    /// The host-service binary runs as the daemon when called `pty-daemon`.
    pub arg0: String,
    /// Extra daemon flags.
    pub args: Vec<String>,
}

/// The daemon's keeper.
pub struct Supervisor {
    socket: PathBuf,
    launcher: Option<Launcher>,
    client: DaemonClient,
    /// Asked, while the daemon is up, whether it still answers.
    liveness: Liveness,
    health: DaemonHealth,
    reporter: HealthReporter,
    store: Store,
    memory: Arc<HeldSessions>,
    reaper: Arc<Reaper>,
    crashes: std::sync::Mutex<VecDeque<Instant>>,
}

impl Supervisor {
    /// A supervisor for the daemon at `socket`.
    ///
    /// With no launcher it only adopts a daemon started by hand. `client`
    /// and `liveness` share one connection.
    #[expect(
        clippy::too_many_arguments,
        reason = "the parts it keeps the daemon with"
    )]
    pub fn new(
        socket: PathBuf,
        launcher: Option<Launcher>,
        client: DaemonClient,
        liveness: &Liveness,
        reporter: HealthReporter,
        store: Store,
        memory: Arc<HeldSessions>,
        reaper: Arc<Reaper>,
    ) -> Self {
        Self {
            socket,
            launcher,
            client,
            liveness: liveness.with_patience(PROBE_PATIENCE),
            health: DaemonHealth::new(),
            reporter,
            store,
            memory,
            reaper,
            crashes: std::sync::Mutex::default(),
        }
    }

    /// The shared view of the daemon's state.
    pub fn health(&self) -> DaemonHealth {
        self.health.clone()
    }

    async fn set_state(&self, state: DaemonState) {
        let serving = matches!(state, DaemonState::Up { .. });
        self.health.0.state.send_replace(state);
        let status = if serving {
            ServingStatus::Serving
        } else {
            ServingStatus::NotServing
        };
        self.reporter
            .set_service_status(DAEMON_HEALTH_SERVICE, status)
            .await;
    }

    /// Reaches a daemon, launching one if none answers and none runs for
    /// this socket.
    ///
    /// It is bounded in time.
    pub async fn ensure_daemon(&self) -> Result<daemon::DaemonInfo, NoDaemon> {
        match self.probe().await {
            Ok(info) => {
                tracing::info!(socket = %self.socket.display(), pid = info.pid, version = %info.version, "adopted the running pty-daemon");
                self.adopted(&info).await;
                return Ok(info);
            }
            // Alive but stuck (stopped, overloaded). Wait for it, never
            // replace it, and never count its sessions as lost.
            Err(Probe::Unresponsive(reason)) => {
                self.set_state(DaemonState::Down(reason.clone())).await;
                return Err(NoDaemon::Waiting(reason));
            }
            Err(Probe::Unreachable(_)) => {}
        }
        match self.rebound_daemon().await {
            Ok(Some(info)) => {
                tracing::info!(socket = %self.socket.display(), pid = info.pid, "adopted the running pty-daemon once it bound its socket again");
                self.adopted(&info).await;
                return Ok(info);
            }
            Ok(None) => {}
            Err(reason) => {
                self.set_state(DaemonState::Down(reason.clone())).await;
                return Err(NoDaemon::Waiting(reason));
            }
        }
        let failed = |reason: String| async move {
            self.set_state(DaemonState::Down(reason.clone())).await;
            NoDaemon::Failed(reason)
        };
        let Some(launcher) = &self.launcher else {
            let reason = format!("no pty-daemon answers at {}", self.socket.display());
            return Err(failed(reason).await);
        };
        if let Err(reason) = self.launch(launcher).await {
            return Err(failed(reason).await);
        }
        let deadline = Instant::now() + LAUNCH_PATIENCE;
        loop {
            match self.probe().await {
                Ok(info) => {
                    tracing::info!(socket = %self.socket.display(), pid = info.pid, "launched a pty-daemon");
                    self.adopted(&info).await;
                    return Ok(info);
                }
                Err(Probe::Unreachable(error) | Probe::Unresponsive(error))
                    if Instant::now() > deadline =>
                {
                    return Err(
                        failed(format!("a launched pty-daemon did not answer: {error}")).await,
                    );
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    async fn adopted(&self, info: &daemon::DaemonInfo) {
        if info.version != holdfast_api::VERSION {
            tracing::warn!(daemon_version = %info.version, host_version = holdfast_api::VERSION, "the pty-daemon runs another version; it keeps serving its sessions");
        }
        self.set_state(DaemonState::Up {
            pid: info.pid,
            version: info.version.clone(),
            upgrades: info.upgrades,
        })
        .await;
    }

    /// Finds a daemon that runs for this socket but is not on it, and waits
    /// for it to bind the socket again.
    ///
    /// A daemon's socket may be removed under it, by a tmp cleaner or by
    /// logind at a user's last logout. The daemon binds it again within a
    /// second. But a host-service started meanwhile finds nothing on the
    /// socket. A second daemon launched then would take the path for good.
    /// The first's sessions, running on, would drop out of every list. So
    /// while a daemon process for this socket runs, none is launched. Such a
    /// process is found by its command line, `--daemonize --socket <path>`,
    /// as this service launches daemons. It is given `REBIND_GRACE` to
    /// answer, then waited for (`Err`). `Ok(None)` means there is no such
    /// process.
    async fn rebound_daemon(&self) -> Result<Option<daemon::DaemonInfo>, String> {
        let started = Instant::now();
        loop {
            let socket = self.socket.clone();
            let running = tokio::task::spawn_blocking(move || proc_stat::daemons_serving(&socket))
                .await
                .unwrap_or_default();
            if running.is_empty() {
                return Ok(None);
            }
            if started.elapsed() > REBIND_GRACE {
                return Err(format!(
                    "a pty-daemon (pid {running:?}) runs for {} but does not answer on it; waiting for it rather than starting a second one",
                    self.socket.display()
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            if let Ok(info) = self.probe().await {
                return Ok(Some(info));
            }
        }
    }

    /// Whether a daemon that was up, and can no longer be reached on its
    /// socket, is alive nonetheless, and why that is thought.
    async fn alive_but_unreachable(&self, unreachable_for: Duration) -> Option<&'static str> {
        let socket = self.socket.clone();
        tokio::task::spawn_blocking(move || {
            alive_by_its_lock(listener::lock_state(&socket), unreachable_for, || {
                !proc_stat::daemons_serving(&socket).is_empty()
            })
        })
        .await
        .unwrap_or(None)
    }

    /// A fresh connection and a `List`, so a dead socket is noticed at once.
    async fn probe(&self) -> Result<daemon::DaemonInfo, Probe> {
        let mut client = daemon_client::connect(&self.socket, Duration::from_secs(1))
            .await
            .map_err(|error| Probe::Unreachable(error.to_string()))?;
        let mut request = tonic::Request::new(daemon::ListRequest::default());
        request.set_timeout(PROBE_PATIENCE);
        let unresponsive = || {
            Probe::Unresponsive(format!(
                "the pty-daemon accepts connections but did not answer within {} s",
                PROBE_PATIENCE.as_secs()
            ))
        };
        let response = match tokio::time::timeout(PROBE_PATIENCE, client.list(request)).await {
            Err(_) => return Err(unresponsive()),
            Ok(Err(status)) if status.code() == tonic::Code::Cancelled => {
                return Err(unresponsive());
            }
            Ok(Err(status)) => return Err(Probe::Unreachable(status.message().to_owned())),
            Ok(Ok(response)) => response,
        };
        response
            .into_inner()
            .daemon
            .ok_or_else(|| Probe::Unreachable("the pty-daemon did not identify itself".to_owned()))
    }

    async fn launch(&self, launcher: &Launcher) -> Result<(), String> {
        use std::os::unix::process::CommandExt;
        let mut command = std::process::Command::new(&launcher.program);
        command
            .arg0(&launcher.arg0)
            .arg("--daemonize")
            .arg("--socket")
            .arg(&self.socket)
            .args(&launcher.args)
            // The daemon needs no token, and must not hand it on.
            .env_remove("HOLDFAST_AUTH_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        tracing::info!(program = %launcher.program.display(), socket = %self.socket.display(), "launching a pty-daemon");
        // `--daemonize` returns once the socket is bound, so this is quick.
        let output = tokio::task::spawn_blocking(move || command.output())
            .await
            .map_err(|error| format!("launching the pty-daemon: {error}"))?
            .map_err(|error| format!("launching {}: {error}", launcher.program.display()))?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        if output.status.success() || stderr.contains("already serving") {
            Ok(())
        } else {
            Err(format!(
                "the pty-daemon failed to start ({}): {}",
                output.status,
                stderr.trim()
            ))
        }
    }

    /// Follows the daemon forever.
    ///
    /// It records exits, and handles the daemon's death.
    pub async fn run(self: Arc<Self>) {
        // Whether a daemon was up and has not been recorded dead since. It
        // outlives a spell of "accepts but does not answer". A daemon dying
        // under SIGKILL can look that way for a moment before its socket
        // refuses. Its death must still be counted.
        let mut was_up = false;
        // Since when a daemon that was up has not been reachable.
        let mut unreachable_since: Option<Instant> = None;
        loop {
            // Whether the daemon refused the watch itself. If it answers a
            // probe all the same, it is tried again after a pause, not at
            // once. Each turn costs a connection, a List and a pass.
            let mut watch_refused = false;
            if let up @ DaemonState::Up { pid, .. } = self.health.state() {
                was_up = true;
                watch_refused = !self.follow_exits_asking(pid, &up).await;
            }
            // The watch ended (the daemon restarted, died, or the link
            // broke), or the daemon was not up to begin with.
            match self.probe().await {
                Ok(info) => {
                    unreachable_since = None;
                    self.adopted(&info).await;
                    self.reaper.pass_logged().await;
                    if watch_refused {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                    continue;
                }
                Err(Probe::Unresponsive(reason)) => {
                    tracing::warn!(%reason, "waiting for the pty-daemon");
                    self.set_state(DaemonState::Down(reason)).await;
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
                Err(Probe::Unreachable(error)) if was_up => {
                    // Unreachable is not dead. Its sessions are recorded
                    // as lost only once the daemon is known gone.
                    let since = *unreachable_since.get_or_insert_with(Instant::now);
                    if let Some(alive) = self.alive_but_unreachable(since.elapsed()).await {
                        let reason = format!("{alive} ({error})");
                        tracing::warn!(%reason, "waiting for the pty-daemon");
                        self.set_state(DaemonState::Down(reason)).await;
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        continue;
                    }
                }
                Err(Probe::Unreachable(_)) => {}
            }
            // A death is recorded (and counted) once, when a daemon that was
            // up is found gone. It is not recorded again on every retry
            // while the daemon is down.
            if was_up {
                self.daemon_died().await;
                was_up = false;
                unreachable_since = None;
            }
            if self.breaker_tripped() {
                let reason = format!(
                    "more than {MAX_CRASHES} crashes within {} s",
                    CRASH_WINDOW.as_secs()
                );
                tracing::error!(%reason, "not relaunching the pty-daemon; start one by hand or restart the host-service");
                self.set_state(DaemonState::GaveUp(reason)).await;
                while self.probe().await.is_err() {
                    tokio::time::sleep(GAVE_UP_PROBE_EVERY).await;
                }
                self.crashes
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clear();
            }
            match self.ensure_daemon().await {
                Ok(_) => self.reaper.pass_logged().await,
                Err(NoDaemon::Waiting(reason)) => {
                    tracing::warn!(%reason, "waiting for the pty-daemon");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Err(NoDaemon::Failed(reason)) if self.launcher.is_some() => {
                    tracing::error!(%reason, "relaunching the pty-daemon failed");
                    self.record_crash();
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                // Adopt-only: wait for whoever runs the daemon (e.g. systemd).
                Err(NoDaemon::Failed(reason)) => {
                    tracing::debug!(%reason, "waiting for a pty-daemon to adopt");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }

    /// Streams exits (as [`Self::follow_exits`]) while asking the daemon
    /// whether it still answers.
    ///
    /// The daemon is `pid`, whose state is `up`, and it is asked every
    /// [`LIVENESS_EVERY`]. A daemon that stops answering (SIGSTOP, a
    /// debugger) keeps the watch open and silent, so only asking tells. A
    /// health check left unanswered is confirmed by a probe on a connection
    /// of its own. A daemon merely slow under load answers that within its
    /// patience, and stays up. Until it answers again it is reported down:
    /// lists answer from memory, calls are refused at once, and health says
    /// NOT_SERVING. Meanwhile it is asked every second. Then it is up again,
    /// if it is the same daemon. The watch goes on throughout, so no exit is
    /// missed. Another daemon, or none, ends it, for [`Self::run`] to adopt
    /// or mourn.
    async fn follow_exits_asking(&self, pid: u32, up: &DaemonState) -> bool {
        let asking = async {
            loop {
                let down = matches!(self.health.state(), DaemonState::Down(_));
                tokio::time::sleep(if down {
                    DOWN_ASKED_EVERY
                } else {
                    LIVENESS_EVERY
                })
                .await;
                let answers = self.liveness.not_answering().await.is_none();
                // Nothing new: up and answering, or down and still not.
                if answers != down {
                    continue;
                }
                match self.probe().await {
                    Ok(info) if info.pid == pid => {
                        if down {
                            tracing::info!("the pty-daemon answers again");
                            self.set_state(up.clone()).await;
                        } else {
                            tracing::debug!(
                                "a health check went unanswered, but the pty-daemon answered a probe"
                            );
                        }
                    }
                    Err(Probe::Unresponsive(reason)) => {
                        if !down {
                            tracing::warn!(%reason, "waiting for the pty-daemon");
                            self.set_state(DaemonState::Down(reason)).await;
                        }
                    }
                    Ok(_) | Err(Probe::Unreachable(_)) => return,
                }
            }
        };
        tokio::select! {
            followed = self.follow_exits() => followed,
            () = asking => true,
        }
    }

    /// Streams exits until the stream ends.
    ///
    /// Returns false if the stream did not open.
    async fn follow_exits(&self) -> bool {
        let mut client = self.client.clone();
        let mut stream = match client.watch_sessions(daemon::WatchSessionsRequest {}).await {
            Ok(response) => response.into_inner(),
            Err(status) => {
                tracing::warn!(%status, "cannot watch the pty-daemon's sessions");
                return false;
            }
        };
        // Exits that happened before the watch began are picked up here.
        self.reaper.pass_logged().await;
        loop {
            match stream.message().await {
                Ok(Some(event)) => match event.event {
                    Some(daemon::watch_sessions_response::Event::Exited(exit)) => {
                        self.record_exit(exit).await
                    }
                    // Titles and sizes live in the daemon: watches look again.
                    Some(daemon::watch_sessions_response::Event::Changed(_)) => {
                        self.memory.daemon_changed()
                    }
                    Some(daemon::watch_sessions_response::Event::Lagged(lagged)) => {
                        tracing::warn!(missed = lagged.missed, "missed exit events; reconciling");
                        self.reaper.pass_logged().await;
                    }
                    None => {}
                },
                Ok(None) => return true,
                Err(status) => {
                    tracing::warn!(%status, "lost the pty-daemon's exit stream");
                    return true;
                }
            }
        }
    }

    async fn record_exit(&self, exit: daemon::SessionExited) {
        self.memory
            .mark_exited(&exit.session_id, exit.exit_code, exit.signal);
        let ended_at = exit
            .exited_at
            .and_then(|at| SystemTime::try_from(at).ok())
            .map_or_else(|| store::micros(SystemTime::now()), store::micros);
        let ending = Ending {
            exit_code: exit.exit_code,
            exit_signal: exit.signal,
            ended_at,
        };
        if let Err(error) = self.store.record_ending(&exit.session_id, ending).await {
            tracing::error!(session_id = %exit.session_id, %error, "recording an exit failed; the reaper will retry");
        }
    }

    /// Records that the daemon is gone, and every session with it.
    async fn daemon_died(&self) {
        tracing::error!(socket = %self.socket.display(), "the pty-daemon died; its sessions died with it");
        self.record_crash();
        self.health.died();
        self.set_state(DaemonState::Down(
            "it stopped answering on its socket".into(),
        ))
        .await;
        self.memory.mark_all_exited();
        let now = store::micros(SystemTime::now());
        match self.store.unsettled_sessions().await {
            Ok(rows) => {
                for row in rows {
                    let ending = Ending {
                        exit_code: None,
                        exit_signal: None,
                        ended_at: now,
                    };
                    if let Err(error) = self.store.record_ending(&row.id, ending).await {
                        tracing::error!(session_id = %row.id, %error, "recording a lost session failed");
                    }
                }
            }
            Err(error) => tracing::error!(%error, "reading sessions lost with the daemon failed"),
        }
    }

    fn record_crash(&self) {
        let mut crashes = self.crashes.lock().unwrap_or_else(|p| p.into_inner());
        crashes.push_back(Instant::now());
    }

    fn breaker_tripped(&self) -> bool {
        let mut crashes = self.crashes.lock().unwrap_or_else(|p| p.into_inner());
        while crashes
            .front()
            .is_some_and(|at| at.elapsed() > CRASH_WINDOW)
        {
            crashes.pop_front();
        }
        crashes.len() > MAX_CRASHES
    }
}

/// Whether a daemon that was up, and can no longer be reached on its
/// socket, is alive nonetheless, and why that is thought.
///
/// It tells by the lock, which a daemon holds for as long as it lives. A
/// daemon whose socket was removed binds it again by itself. But the lock
/// file may have gone with it. Then the daemon is alive while
/// `process_runs` finds its process (a daemonized one, by its command
/// line), and for `REBIND_GRACE` in any case.
fn alive_by_its_lock(
    lock: std::io::Result<Lock>,
    unreachable_for: Duration,
    process_runs: impl FnOnce() -> bool,
) -> Option<&'static str> {
    match lock {
        Ok(Lock::Held) => Some("the pty-daemon holds its lock but does not accept connections"),
        Ok(Lock::Free) => None,
        Ok(Lock::Absent) | Err(_) => (unreachable_for < REBIND_GRACE || process_runs()).then_some(
            "the pty-daemon's socket and lock file are gone; waiting for it to bind them again",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_daemon_known_gone_is_dead() {
        let dir = tempfile::tempdir().expect("temp dir");
        let socket = dir.path().join("run").join("ptyd.sock");
        let alive = |unreachable_for, runs: bool| {
            alive_by_its_lock(listener::lock_state(&socket), unreachable_for, || runs)
        };
        let claimed = listener::claim(&socket).expect("claim");
        // Its socket removed: the lock still tells it is alive, however long.
        std::fs::remove_file(&socket).expect("remove the socket");
        assert!(alive(Duration::from_secs(3600), false).is_some());
        // Gone, its lock free.
        drop(claimed);
        assert_eq!(alive(Duration::ZERO, true), None);
        // No lock file either: alive for a grace, or while its process runs.
        std::fs::remove_dir_all(dir.path().join("run")).expect("remove the directory");
        assert!(alive(Duration::ZERO, false).is_some());
        assert!(alive(Duration::from_secs(3600), true).is_some());
        assert_eq!(alive(REBIND_GRACE, false), None);
    }
}
