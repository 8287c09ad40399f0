//! Refuses connections from any process that runs as another user.
//!
//! It uses the peer credentials the kernel attaches to every unix-socket
//! connection. The socket's 0600 mode already keeps others out. This check
//! holds even when the mode was loosened by hand.

use holdfast_api::error_details::{Reason, Refusal};
use holdfast_plumbing::admission::{Admit, AdmitLayer};
use tonic::Code;
use tonic::transport::server::UdsConnectInfo;

/// Admits only peers running as one uid; others get `PERMISSION_DENIED`.
#[derive(Debug, Clone, Copy)]
pub struct SameUser {
    uid: u32,
}

/// The layer that admits only peers running as `uid`.
pub fn layer(uid: u32) -> AdmitLayer<SameUser> {
    AdmitLayer::new(SameUser { uid })
}

impl Admit for SameUser {
    type Refusal = tonic::Status;

    fn admit<B>(&self, request: &http::Request<B>) -> Result<(), tonic::Status> {
        let peer_uid = request
            .extensions()
            .get::<UdsConnectInfo>()
            .and_then(|info| info.peer_cred)
            .map(|cred| cred.uid());
        match peer_uid {
            Some(uid) if uid == self.uid => Ok(()),
            other => {
                tracing::warn!(peer_uid = ?other, "refused a connection from another user");
                let message = format!(
                    "this pty-daemon serves only uid {}; the caller is {}",
                    self.uid,
                    other.map_or_else(|| "unknown".to_owned(), |uid| format!("uid {uid}"))
                );
                let refusal = match other {
                    Some(uid) => Refusal::new(Code::PermissionDenied, Reason::OtherUser, message)
                        .about("uid", self.uid)
                        .about("peerUid", uid),
                    None => Refusal::new(Code::PermissionDenied, Reason::PeerUnknown, message),
                };
                Err(refusal.into())
            }
        }
    }
}
