//! The real binaries, started in temp dirs.
//!
//! It starts a host-service (which launches its daemon) or a daemon alone.
//! Clients talk to them over their real sockets.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use holdfast_api::proto::daemon::v1 as daemon_pb;
use holdfast_api::proto::host::v1 as pb;
use holdfast_api::proto::host::v1::terminal_service_client::TerminalServiceClient;
use holdfast_api::proto::host::v1::workspace_service_client::WorkspaceServiceClient;
use holdfast_plumbing::daemon_client::{self, DaemonClient};
use tonic::transport::Channel;

/// Where the binaries under test are.
#[derive(Debug, Clone)]
pub struct Bins {
    pub host_service: PathBuf,
    pub pty_daemon: PathBuf,
}

impl Bins {
    pub fn in_dir(dir: &Path) -> Result<Self> {
        let bins = Self {
            host_service: dir.join("host-service"),
            pty_daemon: dir.join("pty-daemon"),
        };
        for bin in [&bins.host_service, &bins.pty_daemon] {
            if !bin.exists() {
                bail!("{} is missing: build the workspace first", bin.display());
            }
        }
        Ok(bins)
    }
}

const PATIENCE: Duration = Duration::from_secs(60);

/// Polls `check` every millisecond until it gives a value.
pub async fn poll<T, F, Fut>(what: &str, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(value) = check().await {
            return Ok(value);
        }
        if Instant::now() > deadline {
            bail!("gave up waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// A temp dir with a daemon socket and a database.
pub struct Home {
    pub dir: tempfile::TempDir,
    /// The PostgreSQL database the host-services here use, if not the
    /// SQLite file: made by [`Home::on_postgres`], dropped with the home.
    pub postgres: Option<String>,
    /// Another home's database URL, when they share it (a fleet).
    pub shared: Option<String>,
    /// The host id given to host-services here, in a fleet.
    pub host_id: Option<String>,
}

/// The daemon a host-service launched outlives the host: the home stops it
/// (hanging up its sessions) when dropped, whether the scenario finished or
/// failed, so no run leaves one behind.
impl Drop for Home {
    fn drop(&mut self) {
        for pid in holdfast_plumbing::proc_stat::daemons_serving(&self.socket()) {
            holdfast_plumbing::proc_stat::terminate(pid, Duration::from_secs(10));
        }
        if let Some(name) = &self.postgres {
            let _ = Command::new("dropdb")
                .args(["-h", PG_HOST, "-U", PG_USER, "--force", name])
                .status();
        }
    }
}

/// The local PostgreSQL server (trust auth), as the tests use it.
const PG_HOST: &str = "127.0.0.1";
const PG_USER: &str = "postgres";

impl Home {
    pub fn new() -> Result<Self> {
        Ok(Self {
            dir: tempfile::Builder::new()
                .prefix("holdfast-bench")
                .tempdir()?,
            postgres: None,
            shared: None,
            host_id: None,
        })
    }

    /// Another host's home (its own dir, socket and daemon) on `first`'s
    /// database, as `host_id`.
    pub fn sharing(first: &Home, host_id: &str) -> Result<Self> {
        let mut home = Self::new()?;
        home.shared = Some(first.database_url());
        home.host_id = Some(host_id.to_owned());
        Ok(home)
    }

    /// A home whose host-services keep their rows in a new database of the
    /// local PostgreSQL server (made with `createdb`).
    pub fn on_postgres() -> Result<Self> {
        let mut home = Self::new()?;
        let name = format!("holdfast_bench_{}", uuid::Uuid::new_v4().simple());
        let made = Command::new("createdb")
            .args(["-h", PG_HOST, "-U", PG_USER, &name])
            .status()
            .context("running createdb (Debian's postgresql-client)")?;
        anyhow::ensure!(made.success(), "createdb {name} on {PG_HOST}: {made}");
        home.postgres = Some(name);
        Ok(home)
    }

    /// What host-services here are given as `--database-url`.
    pub fn database_url(&self) -> String {
        match (&self.shared, &self.postgres) {
            (Some(url), _) => url.clone(),
            (None, Some(name)) => format!("postgres://{PG_USER}@{PG_HOST}:5432/{name}"),
            (None, None) => self.database().display().to_string(),
        }
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("run").join("ptyd.sock")
    }

    pub fn database(&self) -> PathBuf {
        self.dir.path().join("data").join("holdfast.db")
    }

    /// Spawns a host-service on `listen` without waiting for it.
    pub fn spawn_host(&self, bins: &Bins, listen: &str, extra: &[&str]) -> Result<Child> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("host.log"))?;
        Command::new(&bins.host_service)
            .args(["--listen", listen, "--daemon-socket"])
            .arg(self.socket())
            .arg("--database-url")
            .arg(self.database_url())
            .args(
                self.host_id
                    .iter()
                    .flat_map(|id| ["--host-id", id.as_str()]),
            )
            .args(["--daemon-bin"])
            .arg(&bins.pty_daemon)
            .args(extra)
            // Exited sessions leave the daemon's list soon, so spawn-heavy
            // scenarios do not grow the lists later ones measure.
            .env("HOLDFAST_EXIT_RETENTION_SECS", "2")
            // Scenarios spawn sessions on the daemon directly, beside the
            // host's; its reaper would kill them as orphans (a SIGHUP that
            // once cut a throughput run short). It still runs at start.
            .env("HOLDFAST_REAP_INTERVAL_SECS", "86400")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .context("starting host-service")
    }

    /// Starts a host-service and waits until it answers.
    pub async fn start_host(&self, bins: &Bins, extra: &[&str]) -> Result<Host> {
        let listen = free_port()?;
        let child = self.spawn_host(bins, &listen, extra)?;
        let mut host = Host::connect(child, &listen).await.with_context(|| {
            let log = std::fs::read_to_string(self.dir.path().join("host.log"));
            format!("its log:\n{}", log.unwrap_or_default())
        })?;
        host.daemon = Some(self.daemon().await?);
        Ok(host)
    }

    /// A client of the daemon on this home's socket.
    pub async fn daemon(&self) -> Result<DaemonClient> {
        let socket = self.socket();
        poll("the daemon's socket", || {
            let socket = socket.clone();
            async move {
                daemon_client::connect(&socket, Duration::from_secs(1))
                    .await
                    .ok()
            }
        })
        .await
    }

    /// Starts a daemon alone, in the foreground, as this process's child.
    pub async fn start_daemon(&self, bins: &Bins) -> Result<Daemon> {
        let child = Command::new(&bins.pty_daemon)
            .arg("--socket")
            .arg(self.socket())
            .env("HOLDFAST_EXIT_RETENTION_SECS", "0")
            // HOLDFAST_BENCH_DAEMON_LOG=info shows a daemon's own timings.
            .env(
                "RUST_LOG",
                std::env::var("HOLDFAST_BENCH_DAEMON_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .context("starting pty-daemon")?;
        let client = self.daemon().await?;
        Ok(Daemon { child, client })
    }
}

/// A loopback address with a port nobody listens on now.
pub fn free_port() -> Result<String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.to_string())
}

/// A running host-service and clients of it (and of its daemon).
pub struct Host {
    pub child: Child,
    pub uri: String,
    pub channel: Channel,
    pub terminals: TerminalServiceClient<Channel>,
    pub workspaces: WorkspaceServiceClient<Channel>,
    pub daemon: Option<DaemonClient>,
}

impl Host {
    /// Connects to a host-service that is starting on `listen`.
    pub async fn connect(child: Child, listen: &str) -> Result<Self> {
        let uri = format!("http://{listen}");
        let channel = poll("the host-service to listen", || {
            let uri = uri.clone();
            async move { Channel::from_shared(uri).ok()?.connect().await.ok() }
        })
        .await?;
        Ok(Self {
            child,
            uri,
            terminals: TerminalServiceClient::new(channel.clone())
                .max_decoding_message_size(usize::MAX),
            workspaces: WorkspaceServiceClient::new(channel.clone()),
            channel,
            daemon: None,
        })
    }

    pub fn daemon(&mut self) -> &mut DaemonClient {
        self.daemon.as_mut().expect("started with a daemon client")
    }

    pub async fn workspace(&mut self, name: &str) -> Result<String> {
        let reply = self
            .workspaces
            .create_workspace(pb::CreateWorkspaceRequest { name: name.into() })
            .await?
            .into_inner();
        Ok(reply.workspace.context("no workspace")?.workspace_id)
    }

    pub async fn create(&mut self, workspace_id: &str, argv: &[&str]) -> Result<pb::Session> {
        let request = create_request(workspace_id, argv);
        let reply = self.terminals.create_session(request).await?.into_inner();
        reply.session.context("no session")
    }

    /// Starts a session and streams it in one call (`StartSession`).
    pub async fn start(
        &mut self,
        workspace_id: &str,
        argv: &[&str],
    ) -> Result<tonic::Streaming<pb::StartSessionResponse>> {
        let request = pb::StartSessionRequest {
            create: Some(create_request(workspace_id, argv)),
        };
        Ok(self.terminals.start_session(request).await?.into_inner())
    }

    /// Creates `count` sessions, eight requests in flight at a time.
    pub async fn create_many(
        &mut self,
        workspace_id: &str,
        argv: &[&str],
        count: usize,
    ) -> Result<()> {
        let mut tasks = tokio::task::JoinSet::new();
        for lane in 0..8 {
            let mut terminals = self.terminals.clone();
            let request = pb::CreateSessionRequest {
                workspace_id: workspace_id.into(),
                argv: argv.iter().map(|a| a.to_string()).collect(),
                ..Default::default()
            };
            let share = count / 8 + usize::from(lane < count % 8);
            tasks.spawn(async move {
                for _ in 0..share {
                    terminals.create_session(request.clone()).await?;
                }
                Ok::<_, tonic::Status>(())
            });
        }
        while let Some(done) = tasks.join_next().await {
            done??;
        }
        Ok(())
    }

    /// An attach stream from the first byte.
    pub async fn attach(
        &mut self,
        session_id: &str,
    ) -> Result<tonic::Streaming<pb::AttachSessionResponse>> {
        let request = pb::AttachSessionRequest {
            session_id: session_id.into(),
            from_offset: Some(0),
            ..Default::default()
        };
        Ok(self.terminals.attach_session(request).await?.into_inner())
    }

    pub async fn write(&mut self, session_id: &str, data: &[u8]) -> Result<()> {
        let request = pb::WriteInputRequest {
            session_id: session_id.into(),
            data: data.to_vec().into(),
            ..Default::default()
        };
        self.terminals.write_input(request).await?;
        Ok(())
    }

    pub async fn list(&mut self, workspace_id: &str) -> Result<pb::ListSessionsResponse> {
        Ok(self
            .terminals
            .list_sessions(pb::ListSessionsRequest {
                workspace_id: workspace_id.into(),
                ..Default::default()
            })
            .await?
            .into_inner())
    }

    /// Polls until a `SOURCE_COMPLETE` list of the workspace holds `count`
    /// sessions.
    pub async fn until_complete(&self, workspace_id: &str, count: usize) -> Result<()> {
        poll("a complete list", || {
            let mut terminals = self.terminals.clone();
            let workspace_id = workspace_id.to_owned();
            async move {
                let list = terminals
                    .list_sessions(pb::ListSessionsRequest {
                        workspace_id,
                        ..Default::default()
                    })
                    .await
                    .ok()?
                    .into_inner();
                (list.source() == pb::Source::Complete && list.sessions.len() == count)
                    .then_some(())
            }
        })
        .await
    }

    /// SIGKILL, as a crash would, and reap.
    pub fn crash(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.crash();
    }
}

/// A daemon this process started in the foreground.
pub struct Daemon {
    pub child: Child,
    pub client: DaemonClient,
}

impl Daemon {
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Waits until the daemon holds no session: every one has exited and
    /// been forgotten (it runs with retention 0).
    pub async fn wait_until_empty(&self) -> Result<()> {
        let client = self.client.clone();
        poll("the daemon to forget its sessions", || {
            let mut client = client.clone();
            async move {
                let list = client
                    .list(daemon_pb::ListRequest::default())
                    .await
                    .ok()?
                    .into_inner();
                list.sessions.is_empty().then_some(())
            }
        })
        .await
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The pid of the daemon behind `client`.
pub async fn daemon_pid(client: &mut DaemonClient) -> Result<i32> {
    let reply = client
        .list(daemon_pb::ListRequest::default())
        .await?
        .into_inner();
    Ok(reply.daemon.context("no daemon info")?.pid as i32)
}

/// A daemon attach stream from the first byte.
pub async fn attach_daemon(
    client: &mut DaemonClient,
    session_id: &str,
) -> Result<tonic::Streaming<daemon_pb::AttachResponse>> {
    let request = daemon_pb::AttachRequest {
        session_id: session_id.into(),
        from_offset: Some(0),
        ..Default::default()
    };
    Ok(client.attach(request).await?.into_inner())
}

/// Starts a session and streams it from its first byte (`Start`).
pub async fn start_via_daemon(
    client: &mut DaemonClient,
    spawn: daemon_pb::SpawnRequest,
) -> Result<tonic::Streaming<daemon_pb::StartResponse>> {
    let request = daemon_pb::StartRequest { spawn: Some(spawn) };
    Ok(client.start(request).await?.into_inner())
}

pub async fn write_daemon(client: &mut DaemonClient, session_id: &str, data: &[u8]) -> Result<()> {
    let request = daemon_pb::WriteRequest {
        session_id: session_id.into(),
        data: data.to_vec().into(),
    };
    client.write(request).await?;
    Ok(())
}

pub fn spawn_request(session_id: &str, argv: &[&str]) -> daemon_pb::SpawnRequest {
    daemon_pb::SpawnRequest {
        session_id: session_id.into(),
        argv: argv.iter().map(|a| a.to_string()).collect(),
        cols: 80,
        rows: 24,
        ..Default::default()
    }
}

/// What `Host::create` and `Host::start` ask for: `argv` on an 80×24
/// terminal in `workspace_id`.
fn create_request(workspace_id: &str, argv: &[&str]) -> pb::CreateSessionRequest {
    pb::CreateSessionRequest {
        workspace_id: workspace_id.into(),
        argv: argv.iter().map(|a| a.to_string()).collect(),
        cols: 80,
        rows: 24,
        ..Default::default()
    }
}
