//! Who may call the host API.
//!
//! Without a token, only requests addressed to this machine may call it (no
//! DNS rebinding). With a token, only requests that carry it may. Off
//! loopback, the host-service never runs without a token. The token never
//! reaches logs, the daemon or the sessions.

mod support;

use std::process::Command;

use holdfast_api::proto::host::v1 as pb;
use holdfast_api::proto::host::v1::workspace_service_client::WorkspaceServiceClient;
use support::host::*;
use support::*;
use tonic::Code;
use tonic::transport::Channel;

const TOKEN: &str = "tok-4f1c9a7e-never-printed";

#[test]
fn listening_off_loopback_without_a_token_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = Command::new(binary("host-service"))
        .args([
            "--listen",
            "0.0.0.0:0",
            "--no-launch-daemon",
            "--daemon-socket",
        ])
        .arg(dir.path().join("ptyd.sock"))
        .arg("--database-url")
        .arg(dir.path().join("holdfast.db"))
        .env_remove("HOLDFAST_AUTH_TOKEN")
        .output()
        .expect("run host-service");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("refusing to listen on 0.0.0.0") && stderr.contains("HOLDFAST_AUTH_TOKEN"),
        "{stderr}"
    );
}

async fn list_workspaces(
    channel: Channel,
    authorization: Option<&str>,
) -> Result<pb::ListWorkspacesResponse, tonic::Status> {
    let mut request = tonic::Request::new(pb::ListWorkspacesRequest::default());
    if let Some(value) = authorization {
        request
            .metadata_mut()
            .insert("authorization", value.parse().expect("ascii"));
    }
    WorkspaceServiceClient::new(channel)
        .list_workspaces(request)
        .await
        .map(tonic::Response::into_inner)
}

#[tokio::test]
async fn with_a_token_every_call_needs_it_and_it_goes_nowhere_else() {
    let home = HostHome::new();
    let mut host = home
        .start_with_env(&[], &[("HOLDFAST_AUTH_TOKEN", TOKEN)])
        .await;
    let channel = Channel::from_shared(host.address.clone())
        .expect("uri")
        .connect()
        .await
        .expect("connect");
    for (wrong, reason) in [
        (None, Reason::TokenMissing),
        (Some("Bearer nope"), Reason::TokenWrong),
        (Some(TOKEN), Reason::TokenMissing),
        (Some("Bearer "), Reason::TokenWrong),
    ] {
        let status = list_workspaces(channel.clone(), wrong).await.unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated, "{wrong:?}");
        assert!(status.message().contains("token"), "{status:?}");
        expect_reason(&status, reason, &[]);
    }
    let bearer = format!("Bearer {TOKEN}");
    list_workspaces(channel.clone(), Some(&bearer))
        .await
        .expect("the right token is admitted");
    // Health and reflection are behind it too.
    let health = tonic_health::pb::health_client::HealthClient::new(channel.clone())
        .check(tonic_health::pb::HealthCheckRequest::default())
        .await
        .unwrap_err();
    assert_eq!(health.code(), Code::Unauthenticated);

    // A session's environment, the daemon's and the log never hold it.
    let mut terminals =
        holdfast_api::proto::host::v1::terminal_service_client::TerminalServiceClient::with_interceptor(
            channel.clone(),
            move |mut request: tonic::Request<()>| {
                request
                    .metadata_mut()
                    .insert("authorization", bearer.parse().expect("ascii"));
                Ok(request)
            },
        );
    let mut workspaces = WorkspaceServiceClient::with_interceptor(channel, {
        let bearer = format!("Bearer {TOKEN}");
        move |mut request: tonic::Request<()>| {
            request
                .metadata_mut()
                .insert("authorization", bearer.parse().expect("ascii"));
            Ok(request)
        }
    });
    let workspace = workspaces
        .create_workspace(pb::CreateWorkspaceRequest { name: "env".into() })
        .await
        .expect("create workspace")
        .into_inner()
        .workspace
        .expect("workspace")
        .workspace_id;
    let session = terminals
        .create_session(session_request(
            &workspace,
            &["sh", "-c", "env; echo env-done"],
        ))
        .await
        .expect("create session")
        .into_inner()
        .session
        .expect("session");
    let mut stream = terminals
        .attach_session(pb::AttachSessionRequest {
            session_id: session.session_id,
            from_offset: Some(0),
            ..Default::default()
        })
        .await
        .expect("attach")
        .into_inner();
    let text = receive_host_text(&mut stream, "env-done").await;
    assert!(text.contains("PATH="), "{text}");
    assert!(
        !text.contains(TOKEN) && !text.contains("HOLDFAST_AUTH_TOKEN"),
        "{text}"
    );
    for pid in home.daemon_pids() {
        let environ = std::fs::read(format!("/proc/{pid}/environ")).expect("environ");
        assert!(
            !String::from_utf8_lossy(&environ).contains(TOKEN),
            "the daemon (pid {pid}) has the token in its environment"
        );
    }
    host.stop(rustix::process::Signal::TERM);
    assert!(!host.log_text().contains(TOKEN), "the token is in the log");
}

#[tokio::test]
async fn without_a_token_only_requests_addressed_to_this_machine_are_served() {
    let home = HostHome::new();
    let host = home.start(&[]).await;
    let port = host.address.rsplit_once(':').expect("port").1.to_owned();
    for local in [format!("localhost:{port}"), format!("127.0.0.1:{port}")] {
        let response = grpc_web_call(&host.address, Some(&local), "http://localhost:5173").await;
        assert!(
            response.contains("grpc-status:0") || response.contains("grpc-status: 0"),
            "{local}: {response}"
        );
    }
    // A page on a rebinding domain reaches 127.0.0.1 but names itself.
    let rebound = grpc_web_call(
        &host.address,
        Some(&format!("rebind.evil.example:{port}")),
        &format!("http://rebind.evil.example:{port}"),
    )
    .await;
    assert!(
        rebound.contains("grpc-status: 7") || rebound.contains("grpc-status:7"),
        "{rebound}"
    );
    assert!(
        rebound
            .replace("%20", " ")
            .contains("must be addressed to this machine"),
        "{rebound}"
    );
    // With the reason beside it (the header itself, not CORS's list of
    // what a page may read).
    assert!(rebound.contains("grpc-status-details-bin:"), "{rebound}");
}

/// Copies the CLI where `nobody` can run it.
fn cli_for_nobody() -> (tempfile::TempDir, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let cli = dir.path().join("holdfast");
    std::fs::copy(binary("holdfast"), &cli).expect("copy the CLI");
    (dir, cli)
}

const NOBODY: u32 = 65534;

/// TCP on 127.0.0.1 reaches every account on the machine: without a
/// token, another user's programs are refused, whatever they send.
#[tokio::test]
async fn without_a_token_another_users_programs_are_refused() {
    use std::os::unix::process::CommandExt;
    if !rustix::process::getuid().is_root() {
        eprintln!("skipped: needs root to run a client as `nobody`");
        return;
    }
    let home = HostHome::new();
    let host = home.start(&[]).await;
    let (_dir, cli) = cli_for_nobody();
    let output = Command::new(&cli)
        .args(["--addr", &host.address, "new", "--", "sh", "-c", "id"])
        .uid(NOBODY)
        .gid(NOBODY)
        .current_dir("/")
        .output()
        .expect("run the CLI as nobody");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("serves its own user only"), "{stderr}");
    assert!(stderr.contains(&format!("uid {NOBODY}")), "{stderr}");
    // Nothing was started, nor a workspace made for it.
    let mut clients = WorkspaceServiceClient::new(
        Channel::from_shared(host.address.clone())
            .expect("uri")
            .connect()
            .await
            .expect("connect"),
    );
    let workspaces = clients
        .list_workspaces(pb::ListWorkspacesRequest::default())
        .await
        .expect("this user is served")
        .into_inner()
        .workspaces;
    assert!(workspaces.is_empty(), "{workspaces:?}");
}

/// While the host-service is down, another user may listen on its port:
/// the CLI finds out before it sends a byte (keys, token).
#[tokio::test]
async fn the_cli_sends_nothing_to_a_port_another_user_listens_on() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::CommandExt;
    if !rustix::process::getuid().is_root() {
        eprintln!("skipped: needs root to listen as `nobody`");
        return;
    }
    // A listener of nobody's that reports how many bytes it was sent.
    let script = "import socket, sys\n\
        s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n\
        print(s.getsockname()[1], flush=True)\n\
        c, _ = s.accept(); n = 0\n\
        while True:\n    b = c.recv(65536)\n    if not b: break\n    n += len(b)\n\
        print('received', n, flush=True)\n";
    let mut squatter = std::process::Command::new("python3")
        .args(["-c", script])
        .uid(NOBODY)
        .gid(NOBODY)
        .current_dir("/")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    let mut lines = BufReader::new(squatter.stdout.take().expect("stdout")).lines();
    let port = lines.next().expect("a port").expect("read");
    let output = Command::new(binary("holdfast"))
        .args(["--addr", &format!("http://127.0.0.1:{port}"), "ls"])
        .env("HOLDFAST_AUTH_TOKEN", TOKEN)
        .output()
        .expect("run the CLI");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("another user's program (uid {NOBODY})")),
        "{stderr}"
    );
    let received = lines.next().expect("a count").expect("read");
    assert_eq!(received, "received 0");
    wait_with_deadline(&mut squatter);
}
