//! Test support: the real binaries, started in temp dirs.
//!
//! The helpers talk to them over their real sockets. They wait for
//! conditions with deadlines, not sleeps.

#![allow(dead_code)]

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub use holdfast_api::error_details::{self, Reason};
use holdfast_api::proto::daemon::v1 as pb;
use holdfast_plumbing::answered_stream::{self, AnsweredStream};
use holdfast_plumbing::daemon_client::{self, DaemonClient};
use holdfast_plumbing::proc_stat::ProcStat;
use tonic::Streaming;

pub mod host;
pub mod postgres;
pub mod tmux;

/// Generous bound for anything that should take milliseconds.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A built binary of this workspace, next to the test executable's folder.
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its own path");
    // target/<profile>/deps/<test> → target/<profile>/<name>
    let path = exe
        .parent()
        .and_then(Path::parent)
        .expect("tests run from target/<profile>/deps")
        .join(name);
    assert!(
        path.exists(),
        "{} is missing: run the tests with `cargo test` from the workspace root, which builds every binary",
        path.display()
    );
    path
}

/// The path in `variable` of a tool an end-to-end test drives (buf, grpcurl,
/// a python with grpcio, chromium). Without it the test is skipped with
/// `how` to install it, except under CI (`.ci/run` sets every one).
pub fn outside_tool(variable: &str, how: &str) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(variable) {
        return Some(PathBuf::from(path));
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must set {variable} (see .ci/run)"
    );
    eprintln!("skipped: {how}, and set {variable} to it, as .ci/run does");
    None
}

/// A finished command's stdout, after checking it succeeded (both streams
/// are shown when it did not).
pub fn stdout_of(output: &std::process::Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "failed ({}): {stdout}{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Waits until `pid` is stopped by a signal (state `T` in /proc).
pub async fn stopped(pid: i32) {
    eventually("the process to stop", || async move {
        ProcStat::read(pid)?.is_stopped().then_some(())
    })
    .await
}

/// Whether `pid` runs (exists and is not a zombie).
pub fn running(pid: i32) -> bool {
    ProcStat::read(pid).is_some_and(|stat| !stat.is_zombie())
}

/// A request whose field 1 (a string in every request that has one) holds
/// bytes that are not UTF-8, which no typed client can send.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RawStringField {
    #[prost(bytes = "vec", tag = "1")]
    pub field: Vec<u8>,
}

/// An empty message, to stand for any response.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AnyResponse {}

/// Calls `path` (`/package.Service/Method`) with field 1 not UTF-8 and
/// returns the refusal.
pub async fn send_invalid_utf8(channel: tonic::transport::Channel, path: &str) -> tonic::Status {
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.expect("ready");
    let codec = holdfast_api::codec::SliceCodec::<RawStringField, AnyResponse>::default();
    let method: http::uri::PathAndQuery = path.parse().expect("path");
    let request = RawStringField {
        field: vec![b'o', 0xff, 0xfe, b'k'],
    };
    grpc.server_streaming(tonic::Request::new(request), method, codec)
        .await
        .err()
        .unwrap_or_else(|| panic!("{path} accepted a string that is not UTF-8"))
}

/// Polls `check` until it returns `Some`, or panics after `PATIENCE`.
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Asserts that a call failed with `code` and a message mentioning
/// `needle`, and that the refusal says why in holdfast's terms: a reason
/// (`google.rpc.ErrorInfo`) and, for a bad request, the field
/// (`google.rpc.BadRequest`). Returns the status for further checks.
pub fn expect_status<T: std::fmt::Debug>(
    result: Result<T, tonic::Status>,
    code: tonic::Code,
    needle: &str,
) -> tonic::Status {
    let status = result.expect_err("the call must fail");
    assert_eq!(status.code(), code, "message: {}", status.message());
    assert!(
        status.message().contains(needle),
        "message {:?} should mention {needle:?}",
        status.message()
    );
    let reason = error_details::reason_of(&status);
    assert!(
        reason.is_some(),
        "{code:?} {:?} carries no reason in the {:?} domain",
        status.message(),
        error_details::DOMAIN
    );
    if code == tonic::Code::InvalidArgument {
        expect_reason(&status, Reason::InvalidField, &[]);
        assert!(
            error_details::field_of(&status).is_some(),
            "{:?} names no field",
            status.message()
        );
    }
    status
}

/// Asserts that `status` gives `reason`, with `metadata` among what it
/// names.
pub fn expect_reason(status: &tonic::Status, reason: Reason, metadata: &[(&str, &str)]) {
    let (given, named) = error_details::reason_of(status)
        .unwrap_or_else(|| panic!("{:?} carries no reason", status.message()));
    assert_eq!(given, reason.as_str_name(), "message: {}", status.message());
    for (key, value) in metadata {
        assert_eq!(
            named.get(*key).map(String::as_str),
            Some(*value),
            "{key} in {named:?}"
        );
    }
}

/// Asserts that `status` refuses a request for its `field`.
pub fn expect_field(status: &tonic::Status, field: &str) {
    expect_reason(status, Reason::InvalidField, &[]);
    assert_eq!(
        error_details::field_of(status).as_deref(),
        Some(field),
        "message: {}",
        status.message()
    );
}

/// Waits until no process has this pid (exited and reaped).
pub async fn process_gone(pid: u32) {
    eventually("the process to be gone", || async move {
        let pid = rustix::process::Pid::from_raw(pid as i32).expect("pid");
        rustix::process::test_kill_process(pid)
            .is_err()
            .then_some(())
    })
    .await;
}

/// A pty-daemon serving in the foreground on a socket in its own temp dir;
/// stopped with SIGTERM (then SIGKILL) on drop.
pub struct Daemon {
    pub child: Child,
    pub socket: PathBuf,
    pub dir: tempfile::TempDir,
}

impl Daemon {
    /// Starts a daemon with default settings.
    pub async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// Starts a daemon with extra flags and waits until it answers.
    pub async fn start_with(args: &[&str]) -> Self {
        Self::start_under(&[], args).await
    }

    /// Starts a daemon through `launcher` (a command that ends by running
    /// its arguments, e.g. `nohup`), with extra flags.
    pub async fn start_under(launcher: &[&str], args: &[&str]) -> Self {
        Self::start_from(&binary("pty-daemon"), launcher, args, &[]).await
    }

    /// Starts the daemon binary at `daemon` through `launcher`, with extra
    /// flags and environment variables.
    pub async fn start_from(
        daemon: &Path,
        launcher: &[&str],
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let socket = dir.path().join("run").join("ptyd.sock");
        let mut command = match launcher.split_first() {
            None => Command::new(daemon),
            Some((program, launcher_args)) => {
                let mut command = Command::new(program);
                command.args(launcher_args).arg(daemon);
                command
            }
        };
        let child = command
            .arg("--socket")
            .arg(&socket)
            .args(args)
            .envs(env.iter().copied())
            .env("RUST_LOG", "debug")
            .stdin(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("daemon.log")).expect("log file"))
            .spawn()
            .expect("start pty-daemon");
        let daemon = Self { child, socket, dir };
        // Connected is not yet serving: the socket listens while the
        // daemon still starts (its runtimes, say). A test that takes its
        // descriptors away right then must find it done.
        daemon_list(&mut daemon.client().await).await;
        daemon
    }

    /// A connected client, waiting for the daemon to come up if need be.
    pub async fn client(&self) -> DaemonClient {
        let socket = self.socket.clone();
        eventually("the daemon to accept connections", || {
            let socket = socket.clone();
            async move {
                daemon_client::connect(&socket, Duration::from_secs(1))
                    .await
                    .ok()
            }
        })
        .await
    }

    /// The daemon's log so far, for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("daemon.log")).unwrap_or_default()
    }

    /// Sends SIGTERM and waits for the exit.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = rustix::process::Pid::from_child(&self.child);
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        wait_with_deadline(&mut self.child)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.terminate();
        }
    }
}

/// Waits for a child, killing it if it outlives `PATIENCE`.
pub fn wait_with_deadline(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let status = child.wait().expect("wait");
            panic!("child did not exit in time; killed ({:?})", status.signal());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A spawn request for `argv` on an 80x24 terminal.
pub fn spawn_request(argv: &[&str]) -> pb::SpawnRequest {
    pb::SpawnRequest {
        argv: argv.iter().map(|arg| arg.to_string()).collect(),
        cols: 80,
        rows: 24,
        ..Default::default()
    }
}

/// Spawns `argv` and returns the session.
pub async fn spawn(client: &mut DaemonClient, argv: &[&str]) -> pb::Session {
    client
        .spawn(spawn_request(argv))
        .await
        .expect("spawn")
        .into_inner()
        .session
        .expect("spawn returns the session")
}

/// Writes `data` to a session's input; the write must be accepted.
pub async fn write(client: &DaemonClient, session_id: &str, data: &str) {
    client
        .clone()
        .write(pb::WriteRequest {
            session_id: session_id.to_owned(),
            data: data.to_owned().into(),
        })
        .await
        .expect("write");
}

/// Resizes a session's terminal; the resize must be accepted.
pub async fn resize(client: &DaemonClient, session_id: &str, cols: u32, rows: u32) {
    client
        .clone()
        .resize(pb::ResizeRequest {
            session_id: session_id.to_owned(),
            cols,
            rows,
            ..Default::default()
        })
        .await
        .expect("resize");
}

/// The stream's next message, which must come within `PATIENCE` (`what`
/// names it for the failure); `None` once the stream has ended.
pub async fn next_message<T>(stream: &mut Streaming<T>, what: &str) -> Option<T> {
    tokio::time::timeout(PATIENCE, stream.message())
        .await
        .unwrap_or_else(|_| panic!("no {what} within {PATIENCE:?}"))
        .expect("stream")
}

/// Opens an attach stream.
pub async fn attach(
    client: &mut DaemonClient,
    session_id: &str,
    from_offset: Option<u64>,
) -> Streaming<pb::AttachResponse> {
    client
        .attach(pb::AttachRequest {
            session_id: session_id.to_owned(),
            from_offset,
            ..Default::default()
        })
        .await
        .expect("attach")
        .into_inner()
}

/// A daemon `Input` stream: each write a message, answered in order;
/// opened by its first write.
pub struct Input {
    client: DaemonClient,
    stream: Option<AnsweredStream<pb::InputRequest, pb::InputResponse>>,
}

impl Input {
    pub fn new(client: &DaemonClient) -> Self {
        Self {
            client: client.clone(),
            stream: None,
        }
    }

    /// Sends one write (`session_id` may be empty after the first) and
    /// waits for its answer: `Ok`, or the status that ended the stream.
    pub async fn write(&mut self, session_id: &str, data: &[u8]) -> Result<(), tonic::Status> {
        let write = pb::InputRequest {
            session_id: session_id.to_owned(),
            data: data.to_vec().into(),
        };
        let answered = async {
            match &mut self.stream {
                Some(stream) => stream.send(write).await,
                None => {
                    let (writes, requests) = answered_stream::requests(write);
                    let answers = self.client.input(requests).await?.into_inner();
                    self.stream = Some(AnsweredStream::opened(writes, answers).await?);
                    Ok(())
                }
            }
        };
        tokio::time::timeout(PATIENCE, answered)
            .await
            .expect("an answer on the Input stream within the patience")
    }

    /// The next answer without a write: how the stream ended.
    pub async fn answer(&mut self) -> Result<(), tonic::Status> {
        let stream = self.stream.as_mut().expect("a write opened the stream");
        tokio::time::timeout(PATIENCE, stream.answer())
            .await
            .expect("an answer on the Input stream within the patience")
    }
}

/// Starts `argv` with `Start`: the session it reports, and the stream.
pub async fn start(
    client: &mut DaemonClient,
    argv: &[&str],
) -> (pb::Session, Streaming<pb::StartResponse>) {
    let mut stream = client
        .start(pb::StartRequest {
            spawn: Some(spawn_request(argv)),
        })
        .await
        .expect("start")
        .into_inner();
    let first = next_message(&mut stream, "first message")
        .await
        .expect("a first message");
    let Some(pb::start_response::Event::Started(session)) = first.event else {
        panic!("the first message must be the session, got {first:?}");
    };
    (session, stream)
}

/// Everything one attach stream delivered, in order.
#[derive(Debug, Default)]
pub struct Received {
    /// Output bytes, concatenated.
    pub output: Vec<u8>,
    /// Offset of the first output byte received.
    pub first_offset: Option<u64>,
    /// Truncated events as (from, to).
    pub truncated: Vec<(u64, u64)>,
    /// Titles, in order.
    pub titles: Vec<String>,
    /// The exit event, if it came.
    pub exited: Option<pb::Exited>,
    /// The screen a stream started with, if it asked for one.
    pub screen: Option<pb::GetScreenResponse>,
}

impl Received {
    /// Output as lossy text, for matching.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.output).into_owned()
    }
}

/// A stream message that carries an attach event: `Attach`'s, and
/// `Start`'s after its first.
pub trait AttachMessage {
    /// The attach event in it.
    fn into_event(self) -> pb::attach_response::Event;
}

impl AttachMessage for pb::AttachResponse {
    fn into_event(self) -> pb::attach_response::Event {
        self.event.expect("every event has a body")
    }
}

impl AttachMessage for pb::StartResponse {
    fn into_event(self) -> pb::attach_response::Event {
        match self.event {
            Some(pb::start_response::Event::Attach(attach)) => attach.into_event(),
            other => panic!("after the first message, only attach events: got {other:?}"),
        }
    }
}

/// Reads events until `done` holds for what was received (or the stream
/// ends), failing after `PATIENCE`. Checks that output offsets are
/// contiguous except across announced truncations.
pub async fn receive_until<M: AttachMessage>(
    stream: &mut Streaming<M>,
    received: &mut Received,
    done: impl Fn(&Received) -> bool,
) {
    use pb::attach_response::Event;
    let deadline = Instant::now() + PATIENCE;
    let mut next_offset: Option<u64> = received
        .first_offset
        .map(|first| first + received.output.len() as u64);
    while !done(received) {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let message = match tokio::time::timeout(remaining, stream.message()).await {
            Err(_) => panic!("timed out; received so far: {:?}", received.text()),
            Ok(message) => message.expect("stream error"),
        };
        let Some(message) = message else { break };
        match message.into_event() {
            Event::Output(output) => {
                if let Some(expected) = next_offset {
                    assert_eq!(output.offset, expected, "output offsets must be contiguous");
                }
                received.first_offset.get_or_insert(output.offset);
                next_offset = Some(output.offset + output.data.len() as u64);
                received.output.extend_from_slice(&output.data);
            }
            Event::Truncated(truncated) => {
                received
                    .truncated
                    .push((truncated.from_offset, truncated.to_offset));
                next_offset = Some(truncated.to_offset);
            }
            Event::Title(title) => received.titles.push(title.title),
            Event::Exited(exited) => received.exited = Some(exited),
            Event::Screen(screen) => {
                assert!(
                    received.screen.is_none() && next_offset.is_none(),
                    "a screen comes first, once"
                );
                next_offset = Some(screen.output_offset);
                received.first_offset = Some(screen.output_offset);
                received.screen = Some(screen);
            }
        }
    }
}

/// Reads until the output contains `needle`.
pub async fn receive_text<M: AttachMessage>(
    stream: &mut Streaming<M>,
    received: &mut Received,
    needle: &str,
) {
    receive_until(stream, received, |received| {
        received.text().contains(needle)
    })
    .await;
    assert!(
        received.text().contains(needle),
        "stream ended before {needle:?}; got {:?}",
        received.text()
    );
}

/// Reads to the end of the stream (the exit event).
pub async fn receive_all<M: AttachMessage>(stream: &mut Streaming<M>) -> Received {
    let mut received = Received::default();
    receive_until(stream, &mut received, |received| received.exited.is_some()).await;
    received
}

/// A bare channel to the daemon through `endpoint`: none of the
/// production client's settings or checks.
pub async fn channel_to(
    daemon: &Daemon,
    endpoint: tonic::transport::Endpoint,
) -> tonic::transport::Channel {
    let socket = daemon.socket.clone();
    endpoint
        .connect_with_connector(tower::service_fn(move |_| {
            let socket = socket.clone();
            async move {
                tokio::net::UnixStream::connect(socket)
                    .await
                    .map(hyper_util::rt::TokioIo::new)
            }
        }))
        .await
        .expect("connect to the daemon")
}

/// A daemon client with HTTP/2's initial 64 KiB stream window (hyper's
/// default is 2 MiB): the daemon cannot send far ahead of its reading.
pub async fn narrow_window_client(daemon: &Daemon) -> DaemonClient {
    let endpoint = tonic::transport::Endpoint::from_static("http://localhost")
        .initial_stream_window_size(65_535);
    DaemonClient::new(channel_to(daemon, endpoint).await)
}

/// The daemon's whole list.
pub async fn daemon_list(client: &mut DaemonClient) -> pb::ListResponse {
    client
        .list(pb::ListRequest::default())
        .await
        .expect("list")
        .into_inner()
}

/// The pid of the daemon `client` talks to, as it reports it.
pub async fn daemon_pid(client: &mut DaemonClient) -> u32 {
    daemon_list(client)
        .await
        .daemon
        .expect("the daemon identifies itself")
        .pid
}

/// The daemon's view of one session.
pub async fn find(client: &mut DaemonClient, session_id: &str) -> Option<pb::Session> {
    daemon_list(client)
        .await
        .sessions
        .into_iter()
        .find(|session| session.session_id == session_id)
}

/// Waits until the session has exited, and returns it.
pub async fn exited(client: &DaemonClient, session_id: &str) -> pb::Session {
    eventually("the session to exit", || {
        let mut client = client.clone();
        async move {
            find(&mut client, session_id)
                .await
                .filter(|session| !session.alive)
        }
    })
    .await
}
