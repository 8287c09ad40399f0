//! A gRPC client for the pty-daemon over its unix socket.
//!
//! It checks that the socket is served by this user. Its connections come
//! with windows for lists and for output streams that may go unread.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;
use tonic::transport::{Channel, Endpoint};

use holdfast_api::proto::daemon::v1::pty_daemon_client::PtyDaemonClient;

/// A client of the daemon's `PtyDaemon` service.
pub type DaemonClient = PtyDaemonClient<Channel>;

/// Why the daemon could not be reached.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// Nothing answered at the socket (missing file, refused, or timed out).
    #[error("cannot connect to the pty-daemon at {path}: {source}")]
    Connect {
        /// The socket that was tried.
        path: PathBuf,
        /// What the transport said.
        #[source]
        source: tonic::transport::Error,
    },
}

/// An endpoint whose connections go to the unix socket at `path`.
///
/// The URI is a placeholder. HTTP/2 servers reject a socket path as
/// `:authority`, so requests carry `localhost`.
fn endpoint() -> Endpoint {
    // Wide HTTP/2 windows, so a large List or an output burst is not paced
    // by WINDOW_UPDATE round trips.
    Endpoint::from_static("http://localhost")
        .initial_stream_window_size(4 << 20)
        .initial_connection_window_size(16 << 20)
}

fn connector(
    path: &Path,
) -> impl tower::Service<
    tonic::transport::Uri,
    Response = TokioIo<UnixStream>,
    Error = std::io::Error,
    Future = impl Send,
> + Clone
+ Send
+ 'static {
    let path = path.to_path_buf();
    tower::service_fn(move |_: tonic::transport::Uri| {
        let path = path.clone();
        async move {
            let stream = UnixStream::connect(path).await?;
            // Only a daemon of our own user may see our keystrokes.
            let peer = stream.peer_cred()?.uid();
            let uid = rustix::process::getuid().as_raw();
            if peer != uid {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    format!("the socket is served by uid {peer}, not by this user (uid {uid})"),
                ));
            }
            Ok(TokioIo::new(stream))
        }
    })
}

/// Connects now, waiting at most `timeout` for the socket to accept.
///
/// Its windows suit lists and output read as it comes. A caller whose
/// output streams may go unread for long should keep to the windows of
/// [`connect_streams_lazy`] (see [`crate::small_frames`]).
pub async fn connect(path: &Path, timeout: Duration) -> Result<DaemonClient, ConnectError> {
    let channel = connect_channel(path, timeout).await?;
    Ok(client(channel))
}

/// The bare channel [`connect`] makes.
///
/// It is for callers that speak to the daemon without the generated client
/// (raw requests in tests).
pub async fn connect_channel(path: &Path, timeout: Duration) -> Result<Channel, ConnectError> {
    endpoint()
        .connect_timeout(timeout)
        .connect_with_connector(connector(path))
        .await
        .map_err(|source| ConnectError::Connect {
            path: path.to_path_buf(),
            source,
        })
}

/// A client for a connection of output streams relayed to other clients.
///
/// It is a client as [`client`] makes, on a lazy channel as
/// [`connect_channel_lazy`]'s but with other windows. Some of the clients
/// the streams are relayed to may stop reading. The connection carries at
/// most [`OUTPUT_STREAMS_PER_CONNECTION`] of them.
///
/// A stream whose reader stops keeps what the daemon sent it, unread, up
/// to its own window. Under the usual connection window a few such
/// streams would use it all up. Then no other stream on the connection
/// could receive a byte. Here the connection's window is HTTP/2's
/// largest, so only each stream's window bounds it. What a stalled
/// reader holds is its own, at most 1 MiB (a default scrollback ring).
pub fn connect_streams_lazy(path: &Path, connect_timeout: Duration) -> DaemonClient {
    let endpoint = endpoint()
        .initial_stream_window_size(STREAM_WINDOW)
        .initial_connection_window_size(LARGEST_WINDOW);
    client(lazy_channel(endpoint, path, connect_timeout))
}

/// Flow-control window of each output stream.
///
/// It is enough that a unix socket never waits on it. Throughput measured
/// the same as with 4 MiB.
const STREAM_WINDOW: u32 = 1 << 20;

/// HTTP/2's largest flow-control window (RFC 9113, 6.9.1).
const LARGEST_WINDOW: u32 = (1 << 31) - 1;

/// How many output streams one of [`connect_streams_lazy`]'s connections
/// may carry.
///
/// Each stream whose reader stopped holds its window of frames unread. h2
/// drops the connection, every stream on it, once such frames cost more
/// than its budget (see [`crate::small_frames`]). With 1 MiB windows, about
/// 40 stopped streams of small frames would cost that much. A busier host
/// opens more connections.
pub const OUTPUT_STREAMS_PER_CONNECTION: usize = 32;
const _: () = assert!(crate::small_frames::stalled_streams_fit(
    OUTPUT_STREAMS_PER_CONNECTION as u64,
    STREAM_WINDOW,
    LARGEST_WINDOW
));

/// A channel that connects on first use and reconnects after failures.
///
/// A long-lived caller survives daemon restarts with it. [`client`] makes
/// the daemon's client of it. The daemon's other services (its health)
/// share it.
pub fn connect_channel_lazy(path: &Path, connect_timeout: Duration) -> Channel {
    lazy_channel(endpoint(), path, connect_timeout)
}

/// The daemon's client on `channel`.
///
/// It takes answers of any size, such as a list of thousands of sessions.
pub fn client(channel: Channel) -> DaemonClient {
    PtyDaemonClient::new(channel).max_decoding_message_size(usize::MAX)
}

fn lazy_channel(endpoint: Endpoint, path: &Path, connect_timeout: Duration) -> Channel {
    endpoint
        .connect_timeout(connect_timeout)
        .connect_with_connector_lazy(connector(path))
}
