//! The connection to the host-service and its three clients.
//!
//! One HTTP/2 connection carries them all, with the bearer token (if any)
//! on every request and flow-control windows sized for output streams.

use std::time::Duration;

use anyhow::{Context, bail};
use holdfast_api::proto::host::v1::status_service_client::StatusServiceClient;
use holdfast_api::proto::host::v1::terminal_service_client::TerminalServiceClient;
use holdfast_api::proto::host::v1::workspace_service_client::WorkspaceServiceClient;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::{Interceptor, interceptor::InterceptedService};
use tonic::transport::Channel;

use crate::own_server;

/// The largest answer the CLI takes from the host-service.
pub(crate) const MAX_ANSWER_BYTES: usize = 256 << 20;

/// The host-service's address when none is given: its default.
pub(crate) const DEFAULT_ADDR: &str = "127.0.0.1:7077";

/// The channel, with the bearer token (if any) on every request.
pub(crate) type Transport = InterceptedService<Channel, Bearer>;

pub(crate) struct Clients {
    pub(crate) status: StatusServiceClient<Transport>,
    pub(crate) workspaces: WorkspaceServiceClient<Transport>,
    pub(crate) terminals: TerminalServiceClient<Transport>,
}

/// Adds `authorization: Bearer <token>` when a token is set.
#[derive(Clone)]
pub(crate) struct Bearer(Option<MetadataValue<Ascii>>);

impl Interceptor for Bearer {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(value) = &self.0 {
            request
                .metadata_mut()
                .insert("authorization", value.clone());
        }
        Ok(request)
    }
}

/// Flow-control windows of the connection to the host-service.
///
/// An output stream's reader may stop (`holdfast logs -f ID | less`, a
/// paused terminal). Flow control must hold that stream back before h2
/// drops the whole connection for the small frames it holds unread (see
/// `holdfast_plumbing::small_frames`). With hyper's defaults (2 MiB a
/// stream, 5 MiB the connection), `logs -f` of a program writing a byte at
/// a time ends with "h2 protocol error" once about 10,000 frames are
/// waiting. The connection's window is HTTP/2's largest, which costs
/// nothing, since only the streams' windows bound what is held. So a
/// stream's window can stay wide enough for a host-service across a
/// network.
const STREAM_WINDOW: u32 = 1 << 20;
const CONNECTION_WINDOW: u32 = (1 << 31) - 1;
// An output stream and a look, both stopped.
const _: () = assert!(holdfast_plumbing::small_frames::stalled_streams_fit(
    2,
    STREAM_WINDOW,
    CONNECTION_WINDOW
));

/// `addr` as a URL.
///
/// A bare `host:port` is plaintext HTTP/2 there. That is how grpcurl, buf
/// and the README's examples take `HOLDFAST_ADDR`.
pub(crate) fn with_scheme(addr: &str) -> String {
    if addr.contains("://") {
        addr.to_owned()
    } else {
        format!("http://{addr}")
    }
}

/// Whether the host-service at `addr` is on this machine: a loopback
/// address or `localhost`.
pub(crate) fn is_on_this_machine(addr: &str) -> bool {
    let Ok(uri) = with_scheme(addr).parse::<http::Uri>() else {
        return false;
    };
    let Some(host) = uri.host() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

pub(crate) async fn connect(addr: &str, token: Option<&str>) -> anyhow::Result<Clients> {
    // The host-service speaks plain HTTP/2. An address that asks for TLS
    // would get none, and its token would cross the network in the clear.
    if let Some((scheme, _)) = addr.split_once("://")
        && !scheme.eq_ignore_ascii_case("http")
    {
        bail!(
            "{addr:?}: the host-service is reached over plain http (`http://HOST:PORT` or `HOST:PORT`); \
             for another machine, put a TLS proxy or an SSH tunnel in front of it"
        );
    }
    let bearer = Bearer(
        token
            .map(|token| {
                format!("Bearer {token}")
                    .parse()
                    .context("the auth token must be printable ASCII")
            })
            .transpose()?,
    );
    let endpoint = Channel::from_shared(with_scheme(addr))
        .with_context(|| format!("{addr:?} is not a valid address (try 127.0.0.1:7077)"))?
        .connect_timeout(Duration::from_secs(3))
        .initial_stream_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        // Each call's answer (a stream's first). A host-service that
        // hangs (stopped, or not a host-service at all) cannot hold the
        // command for ever. Creates and disposals take well under this.
        .timeout(Duration::from_secs(15));
    let channel = endpoint
        .connect_with_connector(tower::service_fn(own_server::connect))
        .await
        .map_err(|error| {
            let causes: Vec<&(dyn std::error::Error + 'static)> = std::iter::successors(
                Some(&error as &(dyn std::error::Error + 'static)),
                |error| error.source(),
            )
            .collect();
            // Another user's program on the port is said as such.
            let refusal = causes
                .iter()
                .filter_map(|error| error.downcast_ref::<std::io::Error>())
                .find(|error| error.kind() == std::io::ErrorKind::PermissionDenied);
            if let Some(refusal) = refusal {
                return anyhow::anyhow!("refusing the host-service at {addr}: {refusal}");
            }
            // The first cause of all (refused, timed out, no such host).
            let cause = causes.last().map(ToString::to_string).unwrap_or_default();
            anyhow::anyhow!(
                "cannot reach the host-service at {addr} ({cause}); is it running? Start it with `host-service` \
                 (or `cargo run --release -p host-service` in a checkout), or point --addr / HOLDFAST_ADDR at it"
            )
        })?;
    // Answers grow with what the host holds (every workspace ever made, a
    // list of thousands of sessions), well past tonic's default 4 MiB.
    Ok(Clients {
        status: StatusServiceClient::with_interceptor(channel.clone(), bearer.clone())
            .max_decoding_message_size(MAX_ANSWER_BYTES),
        workspaces: WorkspaceServiceClient::with_interceptor(channel.clone(), bearer.clone())
            .max_decoding_message_size(MAX_ANSWER_BYTES),
        terminals: TerminalServiceClient::with_interceptor(channel, bearer)
            .max_decoding_message_size(MAX_ANSWER_BYTES),
    })
}

/// A refusal because the session runs on another host-service sharing the
/// database: where to ask instead.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub(crate) struct Moved {
    /// The host's name, for the user.
    pub host_name: String,
    /// Where it is reached.
    pub address: String,
    message: String,
}

impl Moved {
    /// The redirect `status` carries, if it is one.
    fn of(status: &tonic::Status) -> Option<Self> {
        let (reason, about) = holdfast_api::error_details::reason_of(status)?;
        if reason != holdfast_api::error_details::Reason::SessionOnAnotherHost.as_str_name() {
            return None;
        }
        let address = about.get("address").filter(|address| !address.is_empty())?;
        Some(Self {
            host_name: about.get("hostName").cloned().unwrap_or_default(),
            address: address.clone(),
            message: status.message().to_owned(),
        })
    }

    /// The redirect somewhere in `error`, if any: one [`refused`] made,
    /// or a refusal passed on as it came.
    pub(crate) fn in_error(error: &anyhow::Error) -> Option<Self> {
        error.chain().find_map(|cause| {
            cause
                .downcast_ref::<Self>()
                .cloned()
                .or_else(|| cause.downcast_ref::<tonic::Status>().and_then(Self::of))
        })
    }
}

/// A server's refusal, in words.
pub(crate) fn refused(status: tonic::Status) -> anyhow::Error {
    if let Some(moved) = Moved::of(&status) {
        return moved.into();
    }
    let message = status.message();
    // A new session's `title` in the API is `--name` here.
    let field = holdfast_api::error_details::field_of(&status);
    if matches!(field.as_deref(), Some("title" | "create.title"))
        && let Some(rest) = message.strip_prefix("title ")
    {
        return anyhow::anyhow!("--name {rest}");
    }
    anyhow::anyhow!("{message}")
}

#[cfg(test)]
mod tests {
    use super::is_on_this_machine;

    #[test]
    fn only_loopback_addresses_are_this_machine() {
        for local in [
            "127.0.0.1:7077",
            "http://127.0.0.1:7077",
            "localhost:7077",
            "http://[::1]:7077",
            "127.1.2.3:80",
        ] {
            assert!(is_on_this_machine(local), "{local}");
        }
        for remote in [
            "10.0.0.5:7077",
            "http://example.com:7077",
            "[::2]:7077",
            "::",
        ] {
            assert!(!is_on_this_machine(remote), "{remote}");
        }
    }
}
