//! Who may call the host API: without a token only requests addressed to
//! this machine (no DNS rebinding); with one, only requests that carry it;
//! off loopback, never without one. The token never reaches logs, the
//! daemon or the sessions.

mod support;

use std::process::Command;

use holdfast::proto::host::v1 as pb;
use holdfast::proto::host::v1::workspace_service_client::WorkspaceServiceClient;
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
    let mut request = tonic::Request::new(pb::ListWorkspacesRequest {});
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
    for wrong in [None, Some("Bearer nope"), Some(TOKEN), Some("Bearer ")] {
        let status = list_workspaces(channel.clone(), wrong).await.unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated, "{wrong:?}");
        assert!(status.message().contains("token"), "{status:?}");
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
        holdfast::proto::host::v1::terminal_service_client::TerminalServiceClient::with_interceptor(
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
}
