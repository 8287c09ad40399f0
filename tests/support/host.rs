//! Starting the real host-service in a temp dir.
//!
//! The host-service launches its own daemon. Both stop when the test ends.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use holdfast_api::proto::host::v1 as pb;
use holdfast_api::proto::host::v1::terminal_service_client::TerminalServiceClient;
use holdfast_api::proto::host::v1::workspace_service_client::WorkspaceServiceClient;
use tonic::transport::Channel;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

use super::postgres::FreshPostgres;
use super::{binary, eventually, wait_with_deadline};

/// A host id of its own.
fn new_host_id() -> String {
    format!("test-{}", &uuid::Uuid::new_v4().simple().to_string()[..12])
}

/// Whether this test binary runs its tests on PostgreSQL: its name starts
/// with `postgres_`.
pub fn on_postgres() -> bool {
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            exe.file_name()
                .map(|name| name.to_string_lossy().starts_with("postgres_"))
        })
        .unwrap_or(false)
}

/// A temp dir holding a daemon socket and a database, shared by every
/// host-service started in it; stops the daemon it launched on drop.
///
/// The database is an SQLite file in the dir, or, in a test binary whose
/// name starts with `postgres_` (the same tests again, `tests/postgres_*.rs`),
/// a PostgreSQL database of its own.
pub struct HostHome {
    pub dir: tempfile::TempDir,
    /// The PostgreSQL database, when the host-services here use one of
    /// their own.
    pub postgres: Option<FreshPostgres>,
    /// Another home's database, when they share it.
    shared: Option<String>,
    /// The host id the host-services here are given, on PostgreSQL (on
    /// SQLite they keep their own beside the file).
    pub host_id: Option<String>,
}

impl HostHome {
    /// A home on the backend of this test binary.
    pub fn new() -> Self {
        let postgres = on_postgres().then(FreshPostgres::create).flatten();
        let host_id = postgres.as_ref().map(|_| new_host_id());
        Self {
            dir: tempfile::tempdir().expect("temp dir"),
            postgres,
            shared: None,
            host_id,
        }
    }

    /// A home on an SQLite file, whatever the binary: for tests that reach
    /// into the file itself.
    pub fn sqlite() -> Self {
        Self {
            dir: tempfile::tempdir().expect("temp dir"),
            postgres: None,
            shared: None,
            host_id: None,
        }
    }

    /// Another host's home (its own dir, socket and daemon) on the same
    /// database as `first`: a fleet.
    pub fn sharing(first: &HostHome) -> Self {
        Self {
            dir: tempfile::tempdir().expect("temp dir"),
            postgres: None,
            shared: Some(first.database_url()),
            host_id: Some(new_host_id()),
        }
    }

    /// What the host-services here are given as `--database-url`.
    pub fn database_url(&self) -> String {
        match (&self.shared, &self.postgres) {
            (Some(url), _) => url.clone(),
            (None, Some(postgres)) => postgres.url(),
            (None, None) => self.database().to_str().expect("UTF-8").to_owned(),
        }
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("run").join("ptyd.sock")
    }

    pub fn database(&self) -> PathBuf {
        self.dir.path().join("data").join("holdfast.db")
    }

    /// A connection to the host-service's database, as another process's
    /// would be; it waits its turn behind the host-service's writes.
    pub fn open_database(&self) -> diesel::SqliteConnection {
        use diesel::Connection;
        use diesel::connection::SimpleConnection;
        let mut db = diesel::SqliteConnection::establish(self.database().to_str().expect("UTF-8"))
            .expect("open the database");
        db.batch_execute("PRAGMA busy_timeout = 10000")
            .expect("set a busy timeout");
        db
    }

    /// Starts a host-service here (it adopts or launches the daemon) and
    /// waits until it serves.
    pub async fn start(&self, extra: &[&str]) -> HostService {
        self.start_with_env(extra, &[]).await
    }

    /// [`HostHome::start`] with extra environment variables.
    pub async fn start_with_env(&self, extra: &[&str], env: &[(&str, &str)]) -> HostService {
        self.launch("127.0.0.1:0", extra, env).await
    }

    /// [`HostHome::start`] on a given address (to start one again where
    /// its clients know to find it).
    pub async fn start_listening(&self, listen: &str, extra: &[&str]) -> HostService {
        self.launch(listen, extra, &[]).await
    }

    async fn launch(&self, listen: &str, extra: &[&str], env: &[(&str, &str)]) -> HostService {
        let log = self.dir.path().join(format!(
            "host-{}.log",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        let child = Command::new(binary("host-service"))
            .args(["--listen", listen, "--daemon-socket"])
            .arg(self.socket())
            .arg("--database-url")
            .arg(self.database_url())
            .args(
                self.host_id
                    .iter()
                    .flat_map(|id| ["--host-id", id.as_str()]),
            )
            .args(extra)
            .envs(env.iter().copied())
            .env("RUST_LOG", "info,host_service=debug")
            .stdin(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("start host-service");
        let address = eventually("the host-service to serve", || {
            let log = log.clone();
            async move {
                let text = std::fs::read_to_string(&log).ok()?;
                let line = text
                    .lines()
                    .find(|line| line.contains("host-service serving"))?;
                let address = line.split("address=").nth(1)?.split_whitespace().next()?;
                Some(format!("http://{address}"))
            }
        })
        .await;
        let channel = Channel::from_shared(address.clone())
            .expect("uri")
            .connect()
            .await
            .expect("connect");
        HostService {
            child,
            address,
            log,
            workspaces: WorkspaceServiceClient::new(channel.clone()),
            health: HealthClient::new(channel.clone()),
            terminals: TerminalServiceClient::new(channel),
        }
    }

    /// The pid of the daemon answering on this home's socket, if one does.
    pub async fn serving_daemon_pid(&self) -> Option<i32> {
        let mut client =
            holdfast_plumbing::daemon_client::connect(&self.socket(), Duration::from_secs(1))
                .await
                .ok()?;
        let list = client
            .list(holdfast_api::proto::daemon::v1::ListRequest::default())
            .await
            .ok()?
            .into_inner();
        list.daemon.map(|daemon| daemon.pid as i32)
    }

    /// SIGKILLs the daemon serving this home's socket; returns its pid.
    pub async fn kill_daemon(&self) -> i32 {
        let pid = self.serving_daemon_pid().await.expect("a daemon serves");
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid).expect("pid"),
            rustix::process::Signal::KILL,
        )
        .expect("SIGKILL the daemon");
        pid
    }

    /// Waits until a daemon other than `killed` serves this home's
    /// socket; returns its pid.
    pub async fn relaunched_after(&self, killed: i32) -> i32 {
        super::eventually("a relaunched daemon", || async {
            self.serving_daemon_pid().await.filter(|pid| *pid != killed)
        })
        .await
    }

    /// Waits until no session of the daemon on this home's socket runs;
    /// returns how many it holds (ended sessions are kept for a while).
    pub async fn until_no_session_runs(&self, what: &str) -> usize {
        let daemon = holdfast_plumbing::daemon_client::connect(&self.socket(), super::PATIENCE)
            .await
            .expect("daemon");
        super::eventually(what, || {
            let mut daemon = daemon.clone();
            async move {
                let list = daemon
                    .list(holdfast_api::proto::daemon::v1::ListRequest::default())
                    .await
                    .ok()?
                    .into_inner();
                list.sessions
                    .iter()
                    .all(|session| !session.alive)
                    .then_some(list.sessions.len())
            }
        })
        .await
    }

    /// Pids of processes started as daemons on this home's socket,
    /// including launchers that have not exited yet.
    pub fn daemon_pids(&self) -> Vec<i32> {
        holdfast_plumbing::proc_stat::daemons_serving(&self.socket())
    }
}

impl Drop for HostHome {
    fn drop(&mut self) {
        for pid in self.daemon_pids() {
            holdfast_plumbing::proc_stat::terminate(pid, Duration::from_secs(10));
        }
    }
}

/// A running host-service; SIGKILLed on drop if still running.
pub struct HostService {
    pub child: Child,
    pub address: String,
    pub log: PathBuf,
    pub workspaces: WorkspaceServiceClient<Channel>,
    pub terminals: TerminalServiceClient<Channel>,
    pub health: HealthClient<Channel>,
}

impl HostService {
    /// Stops it with `signal` and waits for the exit.
    pub fn stop(&mut self, signal: rustix::process::Signal) -> std::process::ExitStatus {
        let pid = rustix::process::Pid::from_child(&self.child);
        let _ = rustix::process::kill_process(pid, signal);
        wait_with_deadline(&mut self.child)
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// An attach stream to a session, from `from_offset` (or the oldest
    /// byte held); it must open.
    pub async fn attach(
        &self,
        session_id: &str,
        from_offset: Option<u64>,
    ) -> tonic::Streaming<pb::AttachSessionResponse> {
        self.terminals
            .clone()
            .attach_session(pb::AttachSessionRequest {
                session_id: session_id.to_owned(),
                from_offset,
                ..Default::default()
            })
            .await
            .expect("attach")
            .into_inner()
    }

    /// An attach stream that counts as its client's: the token its answer
    /// names it by, and its events.
    pub async fn attach_client(
        &self,
        session_id: &str,
    ) -> (String, tonic::Streaming<pb::AttachSessionResponse>) {
        let answer = self
            .terminals
            .clone()
            .attach_session(pb::AttachSessionRequest {
                session_id: session_id.to_owned(),
                ..Default::default()
            })
            .await
            .expect("attach");
        (attachment_of(&answer), answer.into_inner())
    }

    /// Resizes a session as the client of `attachment` (none if empty).
    pub async fn resize_as(&self, session_id: &str, attachment: &str, (cols, rows): (u32, u32)) {
        self.terminals
            .clone()
            .resize_session(pb::ResizeSessionRequest {
                session_id: session_id.to_owned(),
                cols,
                rows,
                attachment: attachment.to_owned(),
                ..Default::default()
            })
            .await
            .expect("resize");
    }

    /// Waits until the session's listed size is `size`.
    pub async fn size_until(&self, workspace: &str, id: &str, size: (u32, u32)) {
        self.list_until(&format!("{id} at {size:?}"), workspace, |list| {
            list.sessions
                .iter()
                .any(|s| s.session_id == id && (s.cols, s.rows) == size)
        })
        .await;
    }

    /// Waits until the session's screen satisfies `drawn`; returns it.
    pub async fn screen_until(
        &self,
        what: &str,
        session_id: &str,
        drawn: impl Fn(&pb::GetScreenResponse) -> bool,
    ) -> pb::GetScreenResponse {
        let drawn = &drawn;
        super::eventually(what, || {
            let mut terminals = self.terminals.clone();
            let request = pb::GetScreenRequest {
                session_id: session_id.to_owned(),
                ..Default::default()
            };
            async move {
                let screen = terminals.get_screen(request).await.ok()?.into_inner();
                drawn(&screen).then_some(screen)
            }
        })
        .await
    }

    /// Disposes of a session, with the default signal and grace.
    pub async fn dispose(&self, session_id: &str) {
        self.terminals
            .clone()
            .dispose_session(pb::DisposeSessionRequest {
                session_id: session_id.to_owned(),
                ..Default::default()
            })
            .await
            .expect("dispose");
    }

    /// What the host-service's gRPC health service says of its daemon.
    pub async fn daemon_health(&self) -> ServingStatus {
        let status = self
            .health
            .clone()
            .check(HealthCheckRequest {
                service: "holdfast.daemon.v1.PtyDaemon".into(),
            })
            .await
            .expect("health")
            .into_inner()
            .status;
        ServingStatus::try_from(status).expect("a known serving status")
    }

    /// Writes `data` to a session's input; the write must be accepted.
    pub async fn write_input(&self, session_id: &str, data: &str) {
        self.terminals
            .clone()
            .write_input(pb::WriteInputRequest {
                session_id: session_id.to_owned(),
                data: data.to_owned().into(),
                ..Default::default()
            })
            .await
            .expect("write");
    }

    /// Closes a workspace, as `CloseWorkspace` answers it.
    pub async fn close_workspace(&mut self, workspace_id: &str) -> pb::CloseWorkspaceResponse {
        self.workspaces
            .close_workspace(pb::CloseWorkspaceRequest {
                workspace_id: workspace_id.to_owned(),
            })
            .await
            .expect("close workspace")
            .into_inner()
    }

    pub async fn create_workspace(&mut self, name: &str) -> pb::Workspace {
        self.workspaces
            .create_workspace(pb::CreateWorkspaceRequest { name: name.into() })
            .await
            .expect("create workspace")
            .into_inner()
            .workspace
            .expect("workspace")
    }

    /// Creates a session per command in `workspace_id`, in order.
    pub async fn create_sessions<const N: usize>(
        &mut self,
        workspace_id: &str,
        argvs: [&[&str]; N],
    ) -> [pb::Session; N] {
        let mut sessions = Vec::with_capacity(N);
        for argv in argvs {
            sessions.push(
                self.create_session(session_request(workspace_id, argv))
                    .await,
            );
        }
        sessions.try_into().expect("one session per command")
    }

    pub async fn create_session(&mut self, request: pb::CreateSessionRequest) -> pb::Session {
        self.terminals
            .create_session(request)
            .await
            .expect("create session")
            .into_inner()
            .session
            .expect("session")
    }

    /// `GetSession`'s answer.
    pub async fn get_session(&mut self, session_id: &str) -> pb::Session {
        self.terminals
            .get_session(pb::GetSessionRequest {
                session_id: session_id.into(),
            })
            .await
            .expect("GetSession")
            .into_inner()
            .session
            .expect("a session")
    }

    pub async fn list(&mut self, workspace_id: &str) -> pb::ListSessionsResponse {
        self.terminals
            .list_sessions(pb::ListSessionsRequest {
                workspace_id: workspace_id.into(),
                ..Default::default()
            })
            .await
            .expect("list sessions")
            .into_inner()
    }

    /// Polls `ListSessions` until `accept` holds for the answer.
    pub async fn list_until(
        &self,
        what: &str,
        workspace_id: &str,
        accept: impl Fn(&pb::ListSessionsResponse) -> bool,
    ) -> pb::ListSessionsResponse {
        let accept = &accept;
        super::eventually(what, || {
            let mut terminals = self.terminals.clone();
            let request = pb::ListSessionsRequest {
                workspace_id: workspace_id.into(),
                ..Default::default()
            };
            async move {
                let list = terminals.list_sessions(request).await.ok()?.into_inner();
                accept(&list).then_some(list)
            }
        })
        .await
    }

    pub async fn count(
        &mut self,
        workspace_id: &str,
        attached: &[&str],
    ) -> pb::CountBackgroundSessionsResponse {
        self.count_in(workspace_id, attached, pb::Scope::ThisHost)
            .await
    }

    /// `CountBackgroundSessions` of `scope`.
    pub async fn count_in(
        &self,
        workspace_id: &str,
        attached: &[&str],
        scope: pb::Scope,
    ) -> pb::CountBackgroundSessionsResponse {
        self.terminals
            .clone()
            .count_background_sessions(pb::CountBackgroundSessionsRequest {
                workspace_id: workspace_id.into(),
                attached_session_ids: attached.iter().map(|id| id.to_string()).collect(),
                scope: scope.into(),
            })
            .await
            .expect("count")
            .into_inner()
    }
}

impl Drop for HostService {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A create request for `argv` in `workspace_id`.
/// Runs the `holdfast` CLI against the host-service at `address`.
pub fn holdfast(address: &str, args: &[&str]) -> std::process::Output {
    Command::new(binary("holdfast"))
        .arg("--addr")
        .arg(address)
        .args(args)
        .output()
        .expect("run holdfast")
}

pub fn session_request(workspace_id: &str, argv: &[&str]) -> pb::CreateSessionRequest {
    pb::CreateSessionRequest {
        workspace_id: workspace_id.into(),
        argv: argv.iter().map(|arg| arg.to_string()).collect(),
        ..Default::default()
    }
}

/// Whether the daemon answered the list.
pub fn is_complete(list: &pb::ListSessionsResponse) -> bool {
    list.source == pb::Source::Complete as i32
}

/// The ids in a list, in order.
pub fn ids(list: &pb::ListSessionsResponse) -> Vec<&str> {
    list.sessions
        .iter()
        .map(|s| s.session_id.as_str())
        .collect()
}

/// Whether `path` exists (for readable assertions).
pub fn exists(path: &Path) -> bool {
    path.exists()
}

/// Reads an attach stream until its output contains `needle`.
pub async fn receive_host_text(
    stream: &mut tonic::Streaming<pb::AttachSessionResponse>,
    needle: &str,
) -> String {
    let mut text = String::new();
    let deadline = std::time::Instant::now() + super::PATIENCE;
    while !text.contains(needle) {
        let remaining = deadline.saturating_duration_since(std::time::Instant::now());
        let message = tokio::time::timeout(remaining, stream.message())
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for {needle:?}; got {text:?}"))
            .expect("stream error")
            .unwrap_or_else(|| panic!("stream ended before {needle:?}; got {text:?}"));
        if let Some(pb::attach_session_response::Event::Output(output)) = message.event {
            text.push_str(&String::from_utf8_lossy(&output.data));
        }
    }
    text
}

/// A look at a session (`until_now`): its output from `from_offset` (each
/// chunk where the last ended) and its exit, if it sends one. The stream
/// must end by itself.
pub async fn look(
    host: &HostService,
    session_id: &str,
    from_offset: Option<u64>,
) -> Result<(Vec<u8>, Option<pb::Exited>), tonic::Status> {
    use pb::attach_session_response::Event;
    let request = pb::AttachSessionRequest {
        session_id: session_id.to_owned(),
        from_offset,
        until_now: true,
        ..Default::default()
    };
    let stream = host.terminals.clone().attach_session(request).await?;
    let says_so = stream.metadata().get(holdfast_api::proto::LOOK_METADATA);
    assert!(says_so.is_some(), "a look says it is one");
    let mut stream = stream.into_inner();
    let read = async {
        let (mut text, mut exited) = (Vec::new(), None);
        let mut next_offset = from_offset;
        while let Some(message) = stream.message().await? {
            match message.event {
                Some(Event::Output(output)) => {
                    let expected = *next_offset.get_or_insert(output.offset);
                    assert_eq!(output.offset, expected, "output follows on");
                    next_offset = Some(output.offset + output.data.len() as u64);
                    text.extend_from_slice(&output.data);
                }
                Some(Event::Exited(exit)) => exited = Some(exit),
                _ => assert!(exited.is_none(), "the exit is last"),
            }
        }
        Ok((text, exited))
    };
    tokio::time::timeout(super::PATIENCE, read)
        .await
        .expect("a look ends by itself")
}

/// Reads an attach stream until its exit event.
pub async fn receive_host_exit(
    stream: &mut tonic::Streaming<pb::AttachSessionResponse>,
) -> pb::Exited {
    loop {
        let message = super::next_message(stream, "exit")
            .await
            .expect("the exit before the stream ends");
        if let Some(pb::attach_session_response::Event::Exited(exited)) = message.event {
            return exited;
        }
    }
}

/// A grpc-web `ListWorkspaces` over raw HTTP/1.1, as a browser sends it,
/// with `Host` set to `host` (default: the address); the response, lowercased.
pub async fn grpc_web_call(address: &str, host: Option<&str>, origin: &str) -> String {
    let head = format!(
        "POST /holdfast.host.v1.WorkspaceService/ListWorkspaces HTTP/1.1\r\nOrigin: {origin}\r\nContent-Type: application/grpc-web+proto\r\nX-Grpc-Web: 1"
    );
    // An empty ListWorkspacesRequest: flag 0, length 0.
    http1_call(address, host, &head, "\0\0\0\0\0").await
}

/// A browser's CORS preflight for a grpc-web call from `origin` that sends
/// `headers`; the response head, lower case.
pub async fn grpc_web_preflight(address: &str, origin: &str, headers: &str) -> String {
    let head = format!(
        "OPTIONS /holdfast.host.v1.WorkspaceService/ListWorkspaces HTTP/1.1\r\nOrigin: {origin}\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: {headers}"
    );
    http1_call(address, None, &head, "").await
}

/// An HTTP/1.1 request to the host-service at `address`, with `Host` set
/// to `host` (default: the address): `head` (the request line and headers,
/// without the blank line), then `body`; the whole response, lower case.
pub async fn http1_call(address: &str, host: Option<&str>, head: &str, body: &str) -> String {
    let authority = address.trim_start_matches("http://");
    let host = host.unwrap_or(authority);
    let mut stream = tokio::net::TcpStream::connect(authority)
        .await
        .expect("connect");
    let request = format!(
        "{head}\r\nHost: {host}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut response = Vec::new();
    tokio::time::timeout(super::PATIENCE, stream.read_to_end(&mut response))
        .await
        .expect("in time")
        .expect("read");
    String::from_utf8_lossy(&response).to_ascii_lowercase()
}

/// SIGSTOPs the daemon serving `home` and waits until it has stopped
/// (kill() returns before it has, and a request sent at once could still
/// be answered); returns its pid.
pub async fn hang_the_daemon(home: &HostHome) -> rustix::process::Pid {
    let daemon = home.serving_daemon_pid().await.expect("a daemon serves");
    let daemon = rustix::process::Pid::from_raw(daemon).expect("pid");
    rustix::process::kill_process(daemon, rustix::process::Signal::STOP)
        .expect("SIGSTOP the daemon");
    super::stopped(daemon.as_raw_nonzero().get()).await;
    daemon
}

/// The `holdfast-attachment` token of an attach stream's answer; empty if
/// it has none.
pub fn attachment_of<T>(answer: &tonic::Response<T>) -> String {
    holdfast_api::proto::attachment_token(answer.metadata())
}
