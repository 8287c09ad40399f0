//! Transport wiring: gRPC, grpc-web, health and reflection on one TCP port.
//!
//! Grpc-web is served over HTTP/1.1, with CORS. Anything else is told so
//! in words.

use std::time::Duration;

use holdfast_plumbing::accept_backoff::AcceptBackoff;
use holdfast_plumbing::oversize::OversizeLayer;
use http::HeaderValue;
use tokio::net::TcpListener;
use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer};

use crate::grpc::access::Policy;
use crate::grpc::api::status_service_server::StatusServiceServer;
use crate::grpc::api::terminal_service_server::TerminalServiceServer;
use crate::grpc::api::workspace_service_server::WorkspaceServiceServer;
use crate::grpc::grpc_only::GrpcOnly;
use crate::grpc::peer_owner::{Connection, PeerOwner};
use crate::grpc::status::HostStatus;
use crate::host::Host;

/// Largest request accepted on the wire.
///
/// It leaves room for a 1 MiB write, so an oversized one is refused by
/// validation with a clear message.
const MAX_REQUEST_BYTES: usize = 16 << 20;

/// Serves the host API on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    host: Host,
    status: HostStatus,
    health_service: tonic_health::pb::health_server::HealthServer<
        impl tonic_health::pb::health_server::Health,
    >,
    cors_origins: Vec<String>,
    access: Policy,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), tonic::transport::Error> {
    let check_owners = access.checks_owners();
    let (reflection_v1, reflection_v1alpha) = holdfast_plumbing::reflection::services(&[
        "holdfast.host.v1.WorkspaceService",
        "holdfast.host.v1.TerminalService",
        "holdfast.host.v1.StatusService",
    ]);
    tonic::transport::Server::builder()
        .accept_http1(true)
        .layer(cors(cors_origins))
        // Inside CORS, so a page's refusal can be read by it.
        .layer(GrpcOnly::layer())
        .layer(tonic_web::GrpcWebLayer::new())
        // Inside grpc-web, so a refusal reaches browsers as grpc-web too.
        .layer(access.layer())
        .layer(OversizeLayer)
        .add_service(WorkspaceServiceServer::new(host.clone()))
        .add_service(StatusServiceServer::new(status))
        .add_service(TerminalServiceServer::new(host).max_decoding_message_size(MAX_REQUEST_BYTES))
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .serve_with_incoming_shutdown(incoming(listener, check_owners), shutdown)
        .await
}

/// The connections accepted on `listener`, each with the owner of its
/// other end when `check_owners`.
///
/// It pauses after a failed accept. Tonic's `TcpIncoming` retries at once,
/// which spins a CPU while the process is out of descriptors.
fn incoming(
    listener: TcpListener,
    check_owners: bool,
) -> impl futures_util::Stream<Item = std::io::Result<Connection>> + Send + 'static {
    futures_util::stream::unfold(
        (listener, AcceptBackoff::default()),
        move |(listener, mut backoff)| async move {
            loop {
                let Some((connection, _)) = backoff.accepted(listener.accept().await).await else {
                    continue;
                };
                // Without TCP_NODELAY, Nagle's algorithm holds a small reply
                // until the client's delayed ACK. That adds ~40 ms to every
                // short answer.
                if let Err(error) = connection.set_nodelay(true) {
                    tracing::debug!(%error, "setting TCP_NODELAY failed");
                }
                let owner = if check_owners {
                    PeerOwner::of(&connection)
                } else {
                    PeerOwner::NotChecked
                };
                return Some((Ok(Connection::new(connection, owner)), (listener, backoff)));
            }
        },
    )
}

/// Browsers may call from pages served on this machine (any port), and from
/// origins named with `--cors-origin`.
///
/// A page elsewhere on the web may not drive local terminals.
fn cors(extra_origins: Vec<String>) -> CorsLayer {
    let allowed = move |origin: &HeaderValue, _: &http::request::Parts| {
        let Ok(origin) = origin.to_str() else {
            return false;
        };
        is_loopback_origin(origin) || extra_origins.iter().any(|extra| extra == origin)
    };
    CorsLayer::new()
        .allow_origin(AllowOrigin::predicate(allowed))
        .allow_methods([http::Method::POST, http::Method::OPTIONS])
        // The headers the page asks for, named. A wildcard would not cover
        // `authorization` (the Fetch standard), so a page could not send
        // the token. Grpc-web metadata are headers of any name.
        .allow_headers(AllowHeaders::mirror_request())
        // What a page may read of an answer. That includes the status,
        // which an answer without messages carries in its headers.
        // `holdfast-until-now` tells a look from an older host-service's
        // attach. `holdfast-attachment` names its attach stream in resizes
        // and input. `holdfast-live-offset` says where its history ends.
        .expose_headers(
            [
                "grpc-status",
                "grpc-message",
                "grpc-status-details-bin",
                holdfast_api::proto::LOOK_METADATA,
                holdfast_api::proto::ATTACHMENT_METADATA,
                holdfast_api::proto::LIVE_OFFSET_METADATA,
            ]
            .map(http::HeaderName::from_static),
        )
        .max_age(Duration::from_secs(3600))
}

fn is_loopback_origin(origin: &str) -> bool {
    origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .is_some_and(crate::grpc::access::is_loopback_authority)
}

#[cfg(test)]
mod tests {
    use super::is_loopback_origin;

    #[test]
    fn only_local_pages_are_allowed_by_default() {
        for ok in [
            "http://localhost:5173",
            "http://127.0.0.1:8080",
            "https://localhost",
            "http://[::1]:3000",
            "http://127.0.0.2",
        ] {
            assert!(is_loopback_origin(ok), "{ok}");
        }
        for bad in [
            "http://evil.example",
            "http://localhost.evil.example:80",
            "null",
            "file://",
            "http://128.0.0.1",
        ] {
            assert!(!is_loopback_origin(bad), "{bad}");
        }
    }
}
