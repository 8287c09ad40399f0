//! Who may call the host API.
//!
//! Every request passes here before any service.
//!
//! - With a token (`--auth-token`), a request must carry
//!   `authorization: Bearer <token>`. The comparison takes the same time
//!   wherever the first wrong byte is. Anything else is `UNAUTHENTICATED`.
//! - Without one (loopback only: [`Policy::new`] refuses other addresses),
//!   the connection must come from this user's programs (or root's).
//!   TCP on 127.0.0.1 reaches every account on the machine
//!   (`peer_owner.rs`). The request's `Host` (`:authority`) must also name
//!   this machine. A web page on another site may point its own DNS name
//!   at 127.0.0.1 (DNS rebinding). It is then same-origin to the browser,
//!   so CORS does not stop it. Its requests carry that foreign name. Both
//!   (another user's connection, a foreign name) are refused here with
//!   `PERMISSION_DENIED`.

use holdfast_api::error_details::{Reason, Refusal};
use holdfast_plumbing::admission::{Admit, AdmitLayer};
use tonic::Code;

use crate::grpc::peer_owner::PeerOwner;
use std::net::SocketAddr;
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// The bearer token clients must present. Never printed.
#[derive(Clone)]
pub struct Token(Arc<[u8]>);

impl Token {
    /// A token from its text; `None` when empty (no token).
    ///
    /// It travels in an HTTP header, so it must be visible ASCII. A token
    /// no client can send is refused at start, not at every request.
    pub fn new(text: &str) -> Result<Option<Self>, BadToken> {
        if text.is_empty() {
            return Ok(None);
        }
        if !text.bytes().all(|byte| byte.is_ascii_graphic()) {
            return Err(BadToken);
        }
        Ok(Some(Self(text.as_bytes().into())))
    }

    /// The token's text, to send to another host.
    pub fn text(&self) -> &str {
        // Made from a `&str`, so always UTF-8.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn matches(&self, presented: &[u8]) -> bool {
        // Lengths may differ; ct_eq then answers false without comparing,
        // which reveals only the length.
        bool::from(self.0.ct_eq(presented))
    }
}

/// The credentials of an `authorization` header of the Bearer scheme,
/// whose name is case-insensitive (RFC 9110, 11.1).
fn bearer(value: &[u8]) -> Option<&[u8]> {
    const SCHEME: &[u8] = b"bearer ";
    let (scheme, credentials) = value.split_at_checked(SCHEME.len())?;
    scheme.eq_ignore_ascii_case(SCHEME).then_some(credentials)
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// A token that no client could send.
#[derive(Debug, thiserror::Error)]
#[error("the auth token must be visible ASCII, without spaces: it travels in an HTTP header")]
pub struct BadToken;

/// Shortest token accepted where other machines may reach the service.
pub const MIN_TOKEN_LEN: usize = 16;

/// Why the host-service will not start with this access configuration.
#[derive(Debug, thiserror::Error)]
pub enum UnprotectedListen {
    /// Reachable from elsewhere, without a token.
    #[error(
        "refusing to listen on {0} without a token: anyone who can reach it could run programs as you. \
         Set HOLDFAST_AUTH_TOKEN (or --auth-token), or listen on 127.0.0.1"
    )]
    NoToken(SocketAddr),
    /// Reachable from elsewhere, with a token short enough to guess.
    #[error(
        "refusing to listen on {listen} with a token of {len} characters: it could be guessed. \
         Use at least {MIN_TOKEN_LEN} (e.g. `openssl rand -hex 16`), or listen on 127.0.0.1"
    )]
    WeakToken {
        /// The address.
        listen: SocketAddr,
        /// The token's length.
        len: usize,
    },
}

/// The access rules for one listening address.
#[derive(Debug, Clone)]
pub struct Policy {
    token: Option<Token>,
}

impl Policy {
    /// Loopback may go without a token; any other address needs one.
    pub fn new(listen: SocketAddr, token: Option<Token>) -> Result<Self, UnprotectedListen> {
        if !listen.ip().is_loopback() {
            match &token {
                None => return Err(UnprotectedListen::NoToken(listen)),
                Some(token) if token.len() < MIN_TOKEN_LEN => {
                    return Err(UnprotectedListen::WeakToken {
                        listen,
                        len: token.len(),
                    });
                }
                Some(_) => {}
            }
        }
        Ok(Self { token })
    }

    /// Whether each connection's other end must be this user's: on
    /// loopback without a token.
    pub fn checks_owners(&self) -> bool {
        self.token.is_none()
    }

    /// The layer that applies this policy to every request.
    pub fn layer(self) -> AdmitLayer<Policy> {
        AdmitLayer::new(self)
    }
}

impl Admit for Policy {
    type Refusal = tonic::Status;

    /// `Ok` when the request may proceed, else the status to answer.
    fn admit<B>(&self, request: &http::Request<B>) -> Result<(), tonic::Status> {
        let refused = self.check(request);
        if let Err(status) = &refused {
            tracing::warn!(code = ?status.code(), path = request.uri().path(), "refused a request");
        }
        refused
    }
}

impl Policy {
    fn check<B>(&self, request: &http::Request<B>) -> Result<(), tonic::Status> {
        // CORS preflights carry no credentials; the CORS layer answers them.
        if request.method() == http::Method::OPTIONS {
            return Ok(());
        }
        match &self.token {
            Some(token) => {
                let presented = request
                    .headers()
                    .get(http::header::AUTHORIZATION)
                    .and_then(|value| bearer(value.as_bytes()));
                match presented {
                    Some(presented) if token.matches(presented) => Ok(()),
                    Some(_) => Err(Refusal::new(
                        Code::Unauthenticated,
                        Reason::TokenWrong,
                        "the bearer token is wrong",
                    )
                    .into()),
                    None => Err(Refusal::new(
                        Code::Unauthenticated,
                        Reason::TokenMissing,
                        "this host-service requires `authorization: Bearer <token>` (HOLDFAST_AUTH_TOKEN)",
                    )
                    .into()),
                }
            }
            None => {
                match request.extensions().get::<PeerOwner>() {
                    Some(PeerOwner::Trusted) => {}
                    Some(PeerOwner::Other(uid)) => {
                        let own = rustix::process::getuid().as_raw();
                        return Err(Refusal::new(
                            Code::PermissionDenied,
                            Reason::OtherUser,
                            format!(
                                "this host-service serves its own user only (uid {own}), and this connection is uid {uid}'s; \
                                 use a token (HOLDFAST_AUTH_TOKEN) to let others in"
                            ),
                        )
                        .about("uid", own)
                        .about("peerUid", uid)
                        .into());
                    }
                    Some(PeerOwner::Unknown(reason)) => {
                        return Err(Refusal::new(
                            Code::PermissionDenied,
                            Reason::PeerUnknown,
                            format!("whose this connection is cannot be told ({reason})"),
                        )
                        .into());
                    }
                    Some(PeerOwner::NotChecked) | None => {
                        return Err(Refusal::new(
                            Code::PermissionDenied,
                            Reason::PeerUnknown,
                            "whose this connection is was not checked",
                        )
                        .into());
                    }
                }
                let authority = request.uri().authority().map(|a| a.as_str()).or_else(|| {
                    let host = request.headers().get(http::header::HOST)?;
                    host.to_str().ok()
                });
                match authority {
                    Some(authority) if is_loopback_authority(authority) => Ok(()),
                    other => {
                        let other = other.filter(|authority| !authority.is_empty());
                        let refusal = Refusal::new(
                            Code::PermissionDenied,
                            Reason::NotLoopback,
                            format!(
                                "requests must be addressed to this machine (localhost, a 127.x.x.x address or [::1]), not {}; \
                                 use a token (HOLDFAST_AUTH_TOKEN) to serve other names",
                                other.unwrap_or("no host")
                            ),
                        );
                        Err(match other {
                            Some(authority) => refusal.about("authority", authority),
                            None => refusal,
                        }
                        .into())
                    }
                }
            }
        }
    }
}

/// Whether `authority` (`host[:port]`) names this machine.
///
/// That is `localhost` or a loopback address: all of 127.0.0.0/8, which
/// the host-service may listen on without a token, and `[::1]`.
pub fn is_loopback_authority(authority: &str) -> bool {
    let host = match authority.rsplit_once(':') {
        Some((host, port)) if port.chars().all(|c| c.is_ascii_digit()) => host,
        _ => authority,
    };
    let address = host
        .strip_prefix('[')
        .and_then(|bracketed| bracketed.strip_suffix(']'))
        .unwrap_or(host);
    host.eq_ignore_ascii_case("localhost")
        || address
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(authority: &str, authorization: Option<&str>) -> http::Request<()> {
        request_from(authority, authorization, PeerOwner::Trusted)
    }

    fn request_from(
        authority: &str,
        authorization: Option<&str>,
        owner: PeerOwner,
    ) -> http::Request<()> {
        let mut builder = http::Request::post(format!(
            "http://{authority}/holdfast.host.v1.TerminalService/ListSessions"
        ));
        if let Some(value) = authorization {
            builder = builder.header(http::header::AUTHORIZATION, value);
        }
        builder.extension(owner).body(()).expect("request")
    }

    #[test]
    fn loopback_without_a_token_admits_only_this_users_connections() {
        let policy = Policy::new("127.0.0.1:7077".parse().unwrap(), None).unwrap();
        assert!(policy.checks_owners());
        for owner in [
            PeerOwner::Other(1001),
            PeerOwner::Unknown("gone".into()),
            PeerOwner::NotChecked,
        ] {
            let status = policy
                .check(&request_from("127.0.0.1:7077", None, owner.clone()))
                .unwrap_err();
            assert_eq!(status.code(), tonic::Code::PermissionDenied, "{owner:?}");
        }
        let with_token =
            Policy::new("127.0.0.1:7077".parse().unwrap(), Token::new("t").unwrap()).unwrap();
        assert!(!with_token.checks_owners());
        let from_anyone = request_from("127.0.0.1:7077", Some("Bearer t"), PeerOwner::NotChecked);
        assert!(with_token.check(&from_anyone).is_ok());
    }

    #[test]
    fn loopback_without_a_token_admits_only_local_names() {
        let policy = Policy::new("127.0.0.1:7077".parse().unwrap(), None).unwrap();
        for ok in [
            "127.0.0.1:7077",
            "localhost:7077",
            "LOCALHOST",
            "[::1]:7077",
            "127.0.0.2:7077",
            "127.1.2.3",
        ] {
            assert!(policy.check(&request(ok, None)).is_ok(), "{ok}");
        }
        for bad in [
            "evil.example:7077",
            "127.0.0.1.evil.example",
            "10.0.0.1:7077",
            "[::2]:7077",
            "128.0.0.1",
        ] {
            let status = policy.check(&request(bad, None)).unwrap_err();
            assert_eq!(status.code(), tonic::Code::PermissionDenied, "{bad}");
        }
    }

    #[test]
    fn other_addresses_need_a_token() {
        let error = Policy::new("0.0.0.0:7077".parse().unwrap(), None).unwrap_err();
        assert!(error.to_string().contains("HOLDFAST_AUTH_TOKEN"), "{error}");
        assert!(Token::new("").unwrap().is_none());
        // Short enough to guess: only on loopback.
        let short = || Token::new("s3cret").unwrap();
        let error = Policy::new("0.0.0.0:7077".parse().unwrap(), short()).unwrap_err();
        assert!(error.to_string().contains("at least 16"), "{error}");
        assert!(Policy::new("127.0.0.1:7077".parse().unwrap(), short()).is_ok());
        // No client could send these.
        for unsendable in ["two words", "line\nbreak", "naïve"] {
            assert!(Token::new(unsendable).is_err(), "{unsendable:?}");
        }
    }

    #[test]
    fn a_token_is_required_and_compared_whole() {
        let token = Token::new("s3cret-0123456789").unwrap();
        let policy = Policy::new("0.0.0.0:7077".parse().unwrap(), token).unwrap();
        let code = |auth| {
            policy
                .check(&request("example.org:7077", auth))
                .map_err(|s| s.code())
        };
        assert_eq!(code(Some("Bearer s3cret-0123456789")), Ok(()));
        // The scheme's name is case-insensitive.
        assert_eq!(code(Some("bearer s3cret-0123456789")), Ok(()));
        for bad in [
            None,
            Some("Bearer s3cret-012345678"),
            Some("Bearer s3cret-01234567890"),
            Some("s3cret-0123456789"),
            Some("Bearer "),
            Some("Basic s3cret-0123456789"),
        ] {
            assert_eq!(code(bad), Err(tonic::Code::Unauthenticated), "{bad:?}");
        }
        assert_eq!(
            format!("{:?}", Token::new("s3cret").unwrap().unwrap()),
            "Token(<redacted>)"
        );
    }
}
