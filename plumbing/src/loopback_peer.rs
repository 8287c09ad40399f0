//! Who is at the other end of a loopback TCP connection.
//!
//! On a unix socket, the kernel hands over the peer's credentials. TCP on
//! 127.0.0.1 reaches every account on the machine instead. But both ends of
//! a loopback connection are this machine's sockets. The kernel tells the
//! uid that made each (sock_diag).
//!
//! The host-service serves its own user on loopback. This is how it tells
//! that user's programs (a CLI, a browser, grpcurl) from another user's.
//! It is also how the CLI makes sure the port it reaches is its own user's
//! host-service. Otherwise it could be something another user started
//! there while the host-service was down.

use std::net::SocketAddr;

use netlink_packet_core::{NLM_F_REQUEST, NetlinkHeader, NetlinkMessage, NetlinkPayload};
use netlink_packet_sock_diag::SockDiagMessage;
use netlink_packet_sock_diag::constants::{
    AF_INET, AF_INET6, IPPROTO_TCP, TCP_SYN_RECV, TCP_TIME_WAIT,
};
use netlink_packet_sock_diag::inet::{ExtensionFlags, InetRequest, SocketId, StateFlags};
use netlink_sys::protocols::NETLINK_SOCK_DIAG;

/// Why the owner of a connection's other end is not known.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// Asking the kernel failed.
    #[error("asking the kernel about the socket: {0}")]
    Diag(#[from] std::io::Error),
    /// The kernel's answer was not one this reads.
    #[error("the kernel's answer about the socket is unreadable: {0}")]
    Answer(String),
    /// The socket is not one whose owner the kernel reports.
    ///
    /// It is a socket closed and waiting out its time (TIME_WAIT), or one
    /// whose handshake the listener has not finished (SYN_RECV). Both
    /// report uid 0, whoever made them.
    #[error("the socket's owner cannot be told in its state ({state})")]
    OwnerUnknown {
        /// The TCP state, as the kernel numbers them.
        state: u8,
    },
}

/// What the kernel says of the socket at the other end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerSocket {
    /// Its owner, as the kernel reports it.
    pub uid: u32,
    /// Its TCP state, as the kernel numbers them.
    pub state: u8,
    /// Its inode.
    ///
    /// It is 0 once no process holds it: closed, or still in its listener's
    /// queue.
    pub inode: u32,
}

impl PeerSocket {
    /// Whether its handshake is still under way on the listener's side.
    ///
    /// Asked again a moment later, it is a full socket.
    pub fn handshaking(&self) -> bool {
        self.state == TCP_SYN_RECV
    }

    /// The owner, if the kernel reports the real one.
    ///
    /// It does not for a socket waiting out its time or still handshaking.
    /// Both report uid 0.
    pub fn owner(&self) -> Result<u32, PeerError> {
        if matches!(self.state, TCP_SYN_RECV | TCP_TIME_WAIT) {
            return Err(PeerError::OwnerUnknown { state: self.state });
        }
        Ok(self.uid)
    }

    /// The owner of a client's end, as its server sees it.
    ///
    /// The socket must be one a process still holds. A client that closed
    /// already could be anyone's, since its socket may report uid 0.
    pub fn client_owner(&self) -> Result<u32, PeerError> {
        if self.inode == 0 {
            return Err(PeerError::OwnerUnknown { state: self.state });
        }
        self.owner()
    }
}

/// The socket at `peer` connected to this end, `local`, as the kernel
/// sees it.
///
/// It is one exact lookup through sock_diag (`ss` asks the same way).
/// Reading `/proc/net/tcp` instead walks the kernel's whole hash table,
/// 5 ms here however few sockets there are. It is meaningful for loopback
/// connections only. For others the other end is not this machine's.
pub fn lookup(local: SocketAddr, peer: SocketAddr) -> Result<PeerSocket, PeerError> {
    let socket = netlink_sys::Socket::new(NETLINK_SOCK_DIAG)?;
    socket.connect(&netlink_sys::SocketAddr::new(0, 0))?;
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST;
    let mut request = NetlinkMessage::new(
        header,
        SockDiagMessage::InetRequest(InetRequest {
            family: if peer.is_ipv4() { AF_INET } else { AF_INET6 },
            protocol: IPPROTO_TCP,
            extensions: ExtensionFlags::empty(),
            states: StateFlags::all(),
            // The peer's socket: its own address is the source.
            socket_id: SocketId {
                source_port: peer.port(),
                destination_port: local.port(),
                source_address: peer.ip(),
                destination_address: local.ip(),
                interface_id: 0,
                // INET_DIAG_NOCOOKIE: found by its addresses alone.
                cookie: [0xff; 8],
            },
        })
        .into(),
    );
    request.finalize();
    let mut sent = vec![0; request.buffer_len()];
    request.serialize(&mut sent);
    socket.send(&sent, 0)?;
    let mut answer = Vec::with_capacity(8192);
    socket.recv(&mut answer, 0)?;
    let answer = NetlinkMessage::<SockDiagMessage>::deserialize(&answer)
        .map_err(|error| PeerError::Answer(error.to_string()))?;
    match answer.payload {
        NetlinkPayload::InnerMessage(SockDiagMessage::InetResponse(response)) => Ok(PeerSocket {
            uid: response.header.uid,
            state: response.header.state,
            inode: response.header.inode,
        }),
        // ENOENT: no such socket (the connection is gone).
        NetlinkPayload::Error(error) => Err(PeerError::Diag(error.to_io())),
        other => Err(PeerError::Answer(format!("{other:?}"))),
    }
}

/// Whether a socket owned by `uid` is this process's user's.
///
/// Root's counts too, since root could act as that user anyway.
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
        let server_side = lookup(
            server.local_addr().expect("local"),
            server.peer_addr().expect("peer"),
        )
        .expect("the client's end");
        assert_eq!(server_side.client_owner().expect("an open socket"), me);
        let client_side = lookup(
            client.local_addr().expect("local"),
            client.peer_addr().expect("peer"),
        )
        .expect("the server's end");
        assert_eq!(client_side.owner().expect("a full socket"), me);
        assert!(is_trusted(me));
        let nobody = "127.0.0.1:1".parse().expect("addr");
        assert!(matches!(lookup(nobody, nobody), Err(PeerError::Diag(_))));

        // A client that closed first: its end waits out its time, and
        // reports uid 0 whoever made it; it is not taken for root's.
        let (local, peer) = (
            server.local_addr().expect("local"),
            server.peer_addr().expect("peer"),
        );
        drop(client);
        drop(server);
        let closed = lookup(local, peer).expect("still there, closing");
        assert!(closed.client_owner().is_err(), "{closed:?}");
    }
}
