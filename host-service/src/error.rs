//! The host-service's errors, and the one place they become gRPC statuses.

use holdfast_api::error_details::{self, BadField, Reason, Refusal};

use crate::store::StoreError;

/// Everything a host request can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request field is missing, malformed or out of range.
    #[error(transparent)]
    InvalidArgument(BadField),
    /// No workspace has this id.
    #[error("no workspace with id {0:?}")]
    WorkspaceNotFound(String),
    /// No session has this id, or it was disposed.
    #[error("no session with id {0:?}")]
    SessionNotFound(String),
    /// The session was disposed and is gone for good.
    #[error("session {0:?} was disposed")]
    SessionDisposed(String),
    /// The session runs on another host-service sharing the database.
    #[error(
        "session {session_id:?} runs on host {host_name:?} ({host_id}); send the request to it at {address}"
    )]
    OnAnotherHost {
        /// The session.
        session_id: String,
        /// The owning host's id.
        host_id: String,
        /// Its name.
        host_name: String,
        /// Where it is reached.
        address: String,
    },
    /// The session's program has exited, and the daemon has forgotten it.
    ///
    /// It takes no input or resize.
    #[error("session {0:?} has exited")]
    SessionExited(String),
    /// The attachment named is a read-only attach stream's.
    #[error(
        "attachment {attachment} of session {session_id:?} is read-only: its keys go nowhere and its size is never the session's"
    )]
    ReadOnly {
        /// The session.
        session_id: String,
        /// The read-only stream's token.
        attachment: u64,
    },
    /// The workspace is closed: nothing new may start in it.
    #[error("workspace {0:?} is closed")]
    WorkspaceClosed(String),
    /// The pty-daemon is needed and cannot be reached in time.
    #[error("the pty-daemon is unavailable: {0}")]
    DaemonUnavailable(String),
    /// The pty-daemon is known to be down (gone, or not answering).
    ///
    /// The call was not made.
    #[error("{0}")]
    DaemonDown(String),
    /// The pty-daemon refused the request.
    ///
    /// Its code, reason and metadata are passed on, unless the refusal was
    /// of this service itself.
    #[error("{}", .0.message())]
    Daemon(tonic::Status),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Results of host operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// `field` is missing, malformed or out of range, as `message` says.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::InvalidArgument(BadField::new(field, message))
    }

    /// The same error, its field a path inside the request's `parent`
    /// (`StartSession`'s `create`).
    pub fn within(self, parent: &str) -> Self {
        match self {
            Self::InvalidArgument(bad) => Self::InvalidArgument(bad.within(parent)),
            other => other,
        }
    }

    /// Classifies a failed daemon call.
    ///
    /// Transport trouble is unavailability. Anything else is the daemon's
    /// verdict on the request. A field the daemon found wrong that a client
    /// gave is the field of the same name in the host's request. Such a
    /// field is a spawn's (`Spawn`'s, or inside `Start`'s `spawn`), input,
    /// a size or a signal. A field the host-service filled in itself (ids,
    /// a list's) is its own fault. It stays the daemon's refusal
    /// (`DAEMON_FAILED`).
    pub fn from_daemon(status: tonic::Status) -> Self {
        use tonic::Code;
        match status.code() {
            Code::Unavailable | Code::DeadlineExceeded | Code::Cancelled | Code::Unknown => {
                Self::DaemonUnavailable(status.message().to_owned())
            }
            Code::InvalidArgument => match error_details::field_of(&status)
                .as_deref()
                .and_then(clients_field)
            {
                Some(field) => Self::invalid(field, status.message()),
                None => Self::Daemon(status),
            },
            _ => Self::Daemon(status),
        }
    }

    /// A daemon call that got no answer within `timeout`.
    pub fn no_answer(what: &str, timeout: std::time::Duration) -> Self {
        Self::DaemonUnavailable(format!(
            "{what} got no answer within {} ms",
            timeout.as_millis()
        ))
    }

    /// Whether a spawn that failed so may still have started its program.
    ///
    /// It may if no answer came, or if the daemon failed after taking the
    /// request. Its refusals (bad input, no such program, an id in use)
    /// start nothing.
    pub fn may_have_started(&self) -> bool {
        match self {
            Self::DaemonUnavailable(_) => true,
            Self::Daemon(status) => !matches!(
                status.code(),
                tonic::Code::InvalidArgument
                    | tonic::Code::NotFound
                    | tonic::Code::PermissionDenied
                    | tonic::Code::AlreadyExists
                    | tonic::Code::FailedPrecondition
                    | tonic::Code::ResourceExhausted
                    | tonic::Code::Unimplemented
            ),
            _ => false,
        }
    }
}

impl From<Error> for tonic::Status {
    fn from(error: Error) -> Self {
        use tonic::Code;
        let message = error.to_string();
        let refusal = |code, reason| Refusal::new(code, reason, message.clone());
        match error {
            Error::InvalidArgument(bad) => Refusal::invalid(bad),
            Error::WorkspaceNotFound(id) => {
                refusal(Code::NotFound, Reason::WorkspaceNotFound).about("workspaceId", id)
            }
            Error::SessionNotFound(id) => {
                refusal(Code::NotFound, Reason::SessionNotFound).about("sessionId", id)
            }
            Error::SessionDisposed(id) => {
                refusal(Code::NotFound, Reason::SessionDisposed).about("sessionId", id)
            }
            Error::OnAnotherHost {
                session_id,
                host_id,
                host_name,
                address,
            } => refusal(Code::FailedPrecondition, Reason::SessionOnAnotherHost)
                .about("sessionId", session_id)
                .about("hostId", host_id)
                .about("hostName", host_name)
                .about("address", address),
            Error::ReadOnly { session_id, .. } => {
                refusal(Code::PermissionDenied, Reason::AttachmentReadOnly)
                    .about("sessionId", session_id)
            }
            Error::WorkspaceClosed(id) => {
                refusal(Code::FailedPrecondition, Reason::WorkspaceClosed).about("workspaceId", id)
            }
            Error::SessionExited(id) => {
                refusal(Code::FailedPrecondition, Reason::SessionExited).about("sessionId", id)
            }
            Error::DaemonUnavailable(_) | Error::DaemonDown(_) => {
                refusal(Code::Unavailable, Reason::DaemonUnavailable)
            }
            Error::Daemon(status) => from_daemon_refusal(&status, message),
            Error::Store(error) if error.is_unreachable() => {
                tracing::warn!(%error, "database unavailable");
                refusal(Code::Unavailable, Reason::DatabaseUnavailable)
            }
            Error::Store(error) if error.is_transient() => {
                tracing::warn!(%error, "database busy");
                refusal(Code::Unavailable, Reason::DatabaseBusy)
            }
            Error::Store(error) => {
                tracing::error!(%error, "database error");
                refusal(Code::Internal, Reason::DatabaseFailed)
            }
        }
        .into()
    }
}

/// The field of the client's request that a field of a daemon request
/// passes on under the same name, if it is one.
///
/// A spawn's fields count, inside `Start`'s `spawn` or not.
fn clients_field(field: &str) -> Option<&str> {
    let field = field.strip_prefix("spawn.").unwrap_or(field);
    let name = field.split_once('[').map_or(field, |(name, _)| name);
    matches!(
        name,
        "argv" | "cwd" | "env" | "cols" | "rows" | "data" | "signal" | "grace_ms"
    )
    .then_some(field)
}

/// The daemon's refusal of a request, passed on with its code, reason and
/// metadata.
///
/// A failure of the daemon's own is this service's `INTERNAL`. So is its
/// refusal of this service itself (its connection, or a field this service
/// filled in). The client's request may be fine.
fn from_daemon_refusal(status: &tonic::Status, message: String) -> Refusal {
    use tonic::Code;
    let code = status.code();
    let reason = error_details::reason_of(status);
    // The daemon refusing the host-service itself (another user's, or a
    // field the host filled in) is no fault of the client's request.
    let the_hosts = reason.as_ref().is_some_and(|(reason, _)| {
        matches!(
            Reason::from_str_name(reason),
            Some(Reason::OtherUser | Reason::PeerUnknown | Reason::InvalidField)
        )
    });
    match code {
        // Its verdicts on the request keep their code. They are bad input,
        // a session gone, process or memory limits, or input its program
        // has not read (the daemon is fine, and a retry later may work).
        Code::InvalidArgument
        | Code::NotFound
        | Code::PermissionDenied
        | Code::FailedPrecondition
        | Code::AlreadyExists
        | Code::ResourceExhausted
            if !the_hosts =>
        {
            if code == Code::ResourceExhausted {
                tracing::debug!(%message, "the pty-daemon is out of room");
            }
            match reason {
                Some((reason, metadata)) => {
                    Refusal::with_reason(code, reason, message).about_all(metadata)
                }
                // A daemon from before reasons (adopted across an upgrade).
                None => Refusal::new(code, Reason::DaemonRefused, message),
            }
        }
        code => {
            tracing::error!(?code, %message, "the pty-daemon failed a request");
            Refusal::new(
                Code::Internal,
                Reason::DaemonFailed,
                format!("the pty-daemon failed: {message}"),
            )
        }
    }
}

/// Whether a call failed because a timeout on this side passed.
///
/// That timeout is its gRPC deadline, or connecting. Tonic's client says so
/// with `CANCELLED` and a fixed text.
pub fn is_deadline(status: &tonic::Status) -> bool {
    status.code() == tonic::Code::Cancelled
        && status.message() == tonic::TimeoutExpired(()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_daemons_verdicts_keep_their_codes_and_its_failures_are_internal() {
        for code in [
            tonic::Code::InvalidArgument,
            tonic::Code::NotFound,
            tonic::Code::FailedPrecondition,
            tonic::Code::AlreadyExists,
            tonic::Code::ResourceExhausted,
        ] {
            let status = tonic::Status::from(Error::from_daemon(tonic::Status::new(code, "m")));
            assert_eq!(status.code(), code);
            assert!(status.message().contains('m'));
        }
        let failed = tonic::Status::from(Error::from_daemon(tonic::Status::internal("m")));
        assert_eq!(failed.code(), tonic::Code::Internal);
        let gone = tonic::Status::from(Error::from_daemon(tonic::Status::unavailable("m")));
        assert_eq!(gone.code(), tonic::Code::Unavailable);
    }

    #[test]
    fn a_field_the_client_gave_is_the_clients_and_one_the_host_filled_in_is_the_hosts() {
        let daemon_refusal =
            |field: &str| tonic::Status::from(Refusal::invalid(BadField::new(field, "bad")));
        for (daemons, clients) in [
            ("spawn.cwd", "cwd"),
            ("argv[2]", "argv[2]"),
            ("data", "data"),
        ] {
            let status = tonic::Status::from(Error::from_daemon(daemon_refusal(daemons)));
            assert_eq!(status.code(), tonic::Code::InvalidArgument);
            assert_eq!(error_details::field_of(&status).as_deref(), Some(clients));
        }
        for hosts in [
            "session_id",
            "session_ids[0]",
            "spawn.session_id",
            "if_generation",
        ] {
            let status = tonic::Status::from(Error::from_daemon(daemon_refusal(hosts)));
            assert_eq!(status.code(), tonic::Code::Internal, "{hosts}");
            let (reason, _) = error_details::reason_of(&status).expect("a reason");
            assert_eq!(reason, "DAEMON_FAILED");
        }
        // The daemon refusing the host-service's connection is no verdict
        // on the client's request.
        let other_user = tonic::Status::from(
            Refusal::new(tonic::Code::PermissionDenied, Reason::OtherUser, "m").about("uid", 1),
        );
        let status = tonic::Status::from(Error::from_daemon(other_user));
        assert_eq!(status.code(), tonic::Code::Internal);
        let (reason, _) = error_details::reason_of(&status).expect("a reason");
        assert_eq!(reason, "DAEMON_FAILED");
        // Its verdicts keep their reason and what they name.
        let exited = tonic::Status::from(
            Refusal::new(tonic::Code::FailedPrecondition, Reason::SessionExited, "m")
                .about("sessionId", "s"),
        );
        let status = tonic::Status::from(Error::from_daemon(exited));
        assert_eq!(status.code(), tonic::Code::FailedPrecondition);
        let (reason, metadata) = error_details::reason_of(&status).expect("a reason");
        assert_eq!(reason, "SESSION_EXITED");
        assert_eq!(metadata.get("sessionId").map(String::as_str), Some("s"));
    }
}
