//! Who is at the other end of a loopback TCP connection. Unlike a unix
//! socket (whose peer's credentials the kernel hands over), TCP on
//! 127.0.0.1 reaches every account on the machine; but both ends of a
//! loopback connection are this machine's sockets, listed in its socket
//! tables with the uid that made each. That is how the host-service,
//! serving its own user on loopback, tells that user's programs (a CLI, a
//! browser, grpcurl) from another user's, and how the CLI makes sure the
//! port it reaches is its own user's host-service, not something another
//! user started there while it was down.

use std::net::SocketAddr;

/// Why the owner of a connection's other end is not known.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// The socket tables could not be read.
    #[error("reading the socket tables: {0}")]
    Tables(#[from] procfs::ProcError),
    /// No socket in the tables is that end: the connection is gone.
    #[error("no socket {peer} connected to {local}")]
    Gone {
        /// This end.
        local: SocketAddr,
        /// The other end.
        peer: SocketAddr,
    },
}

/// The uid that owns the socket at `peer` connected to this end, `local`.
/// Meaningful for loopback connections only (for others the tables hold
/// this machine's end alone).
pub fn owner(local: SocketAddr, peer: SocketAddr) -> Result<u32, PeerError> {
    // The peer's entry has the ends the other way round.
    let table = if peer.is_ipv4() {
        procfs::net::tcp()?
    } else {
        procfs::net::tcp6()?
    };
    table
        .into_iter()
        .find(|entry| entry.local_address == peer && entry.remote_address == local)
        .map(|entry| entry.uid)
        .ok_or(PeerError::Gone { local, peer })
}

/// Whether a socket owned by `uid` is this process's user's (or root's,
/// who could act as that user anyway).
pub fn is_trusted(uid: u32) -> bool {
    uid == 0 || uid == rustix::process::getuid().as_raw()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_connection_is_owned_by_this_user_at_both_ends() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let client =
            std::net::TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (server, _) = listener.accept().expect("accept");
        let me = rustix::process::getuid().as_raw();
        let server_side = owner(
            server.local_addr().expect("local"),
            server.peer_addr().expect("peer"),
        );
        assert_eq!(server_side.expect("the client's end"), me);
        let client_side = owner(
            client.local_addr().expect("local"),
            client.peer_addr().expect("peer"),
        );
        assert_eq!(client_side.expect("the server's end"), me);
        assert!(is_trusted(me));
        drop(client);
        drop(server);
        let nobody = "127.0.0.1:1".parse().expect("addr");
        assert!(matches!(owner(nobody, nobody), Err(PeerError::Gone { .. })));
    }
}
