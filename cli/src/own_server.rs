//! Connections to the host-service that check who listens on loopback.
//!
//! On loopback, a connection only goes through if the port is this user's
//! own host-service (or root's). While the host-service is down, any other
//! account on the machine could listen on its port. It would then get every
//! keystroke typed into `attach` (passwords included) and the token. The
//! kernel tells who owns the listening end
//! (`holdfast_plumbing::loopback_peer`).

use std::io;

use holdfast_plumbing::loopback_peer;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tonic::transport::Uri;

/// Connects to `uri`'s host and port, refusing a loopback port that
/// another user's program listens on.
pub async fn connect(uri: Uri) -> io::Result<TokioIo<TcpStream>> {
    let host = uri
        .host()
        .map(|host| host.trim_start_matches('[').trim_end_matches(']'))
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the address has no host"))?;
    let port = uri.port_u16().unwrap_or(80);
    let stream = TcpStream::connect((host, port)).await?;
    // Short answers go out at once (Nagle would hold them for the ACK).
    stream.set_nodelay(true)?;
    let (local, peer) = (stream.local_addr()?, stream.peer_addr()?);
    if peer.ip().to_canonical().is_loopback() {
        let owner = server_owner(local, peer).await?;
        if !loopback_peer::is_trusted(owner) {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{peer} is served by another user's program (uid {owner}), not your host-service: \
                     nothing was sent to it"
                ),
            ));
        }
    }
    Ok(TokioIo::new(stream))
}

/// The owner of the listening end.
///
/// Its side of the handshake may still be under way for a moment after ours
/// is done. A listener that keeps it there (`TCP_DEFER_ACCEPT`, to pass as
/// root's) gets nothing.
async fn server_owner(local: std::net::SocketAddr, peer: std::net::SocketAddr) -> io::Result<u32> {
    for _ in 0..50 {
        let socket = loopback_peer::lookup(local, peer).map_err(io::Error::other)?;
        if !socket.handshaking() {
            return socket.owner().map_err(io::Error::other);
        }
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    Err(io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "{peer} never finished its side of the connection, so whose it is cannot be told: nothing was sent to it"
        ),
    ))
}
