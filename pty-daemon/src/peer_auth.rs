//! Refuses connections from any process that runs as another user, using
//! the peer credentials the kernel attaches to every unix-socket connection.
//! The socket's 0600 mode already keeps others out; this holds even when the
//! mode was loosened by hand.

use std::task::{Context, Poll};

use futures_util::future::{Either, Ready, ready};
use tonic::transport::server::UdsConnectInfo;

/// Wraps services so that requests from other uids get `PERMISSION_DENIED`.
#[derive(Debug, Clone, Copy)]
pub struct PeerAuthLayer {
    uid: u32,
}

impl PeerAuthLayer {
    /// Admits only peers running as `uid`.
    pub fn new(uid: u32) -> Self {
        Self { uid }
    }
}

impl<S> tower::Layer<S> for PeerAuthLayer {
    type Service = PeerAuth<S>;

    fn layer(&self, inner: S) -> Self::Service {
        PeerAuth {
            inner,
            uid: self.uid,
        }
    }
}

/// The service [`PeerAuthLayer`] makes.
#[derive(Debug, Clone)]
pub struct PeerAuth<S> {
    inner: S,
    uid: u32,
}

impl<S, ReqBody, ResBody> tower::Service<http::Request<ReqBody>> for PeerAuth<S>
where
    S: tower::Service<http::Request<ReqBody>, Response = http::Response<ResBody>>,
    ResBody: Default,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Either<Ready<Result<Self::Response, Self::Error>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<ReqBody>) -> Self::Future {
        let peer_uid = request
            .extensions()
            .get::<UdsConnectInfo>()
            .and_then(|info| info.peer_cred)
            .map(|cred| cred.uid());
        match peer_uid {
            Some(uid) if uid == self.uid => Either::Right(self.inner.call(request)),
            other => {
                tracing::warn!(peer_uid = ?other, "refused a connection from another user");
                let status = tonic::Status::permission_denied(format!(
                    "this pty-daemon serves only uid {}; the caller is {}",
                    self.uid,
                    other.map_or_else(|| "unknown".to_owned(), |uid| format!("uid {uid}"))
                ));
                Either::Left(ready(Ok(status.into_http())))
            }
        }
    }
}
