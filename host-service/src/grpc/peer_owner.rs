//! The host-service's connections, each with the owner of its other end.
//!
//! On loopback without a token, only this user's programs (and root's) may
//! call. TCP on 127.0.0.1 reaches every account on the machine, and
//! whoever can call can run programs as this user. The owner is looked up
//! once per connection, as it is accepted
//! (`holdfast_plumbing::loopback_peer`). It reaches every request on that
//! connection as an extension, for the access policy (`access.rs`) to
//! judge.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use holdfast_plumbing::loopback_peer;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// Who made a connection, as far as the policy needs to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerOwner {
    /// Not looked up: a token decides who may call.
    NotChecked,
    /// This process's user, or root.
    Trusted,
    /// Another user.
    Other(u32),
    /// Not known (the connection went, or the tables were unreadable).
    Unknown(String),
}

impl PeerOwner {
    /// The owner of `stream`'s other end.
    pub fn of(stream: &TcpStream) -> Self {
        let (local, peer) = match (stream.local_addr(), stream.peer_addr()) {
            (Ok(local), Ok(peer)) => (local, peer),
            (Err(error), _) | (_, Err(error)) => return Self::Unknown(error.to_string()),
        };
        // One request to the kernel, answered in microseconds.
        match loopback_peer::lookup(local, peer).and_then(|socket| socket.client_owner()) {
            Ok(uid) if loopback_peer::is_trusted(uid) => Self::Trusted,
            Ok(uid) => Self::Other(uid),
            Err(error) => Self::Unknown(error.to_string()),
        }
    }
}

/// An accepted connection and the owner of its other end.
pub struct Connection {
    stream: TcpStream,
    owner: PeerOwner,
}

impl Connection {
    pub fn new(stream: TcpStream, owner: PeerOwner) -> Self {
        Self { stream, owner }
    }
}

impl tonic::transport::server::Connected for Connection {
    type ConnectInfo = PeerOwner;

    fn connect_info(&self) -> PeerOwner {
        self.owner.clone()
    }
}

impl AsyncRead for Connection {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Connection {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}
