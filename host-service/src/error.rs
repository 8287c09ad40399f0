//! The host-service's errors, and the one place they become gRPC statuses.

use crate::store::StoreError;

/// Everything a host request can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request field is malformed or out of range.
    #[error("{0}")]
    InvalidArgument(String),
    /// No workspace has this id.
    #[error("no workspace with id {0:?}")]
    WorkspaceNotFound(String),
    /// No session has this id, or it was disposed.
    #[error("no session with id {0:?}")]
    SessionNotFound(String),
    /// The session was disposed and is gone for good.
    #[error("session {0:?} was disposed")]
    SessionDisposed(String),
    /// The session's program has exited (and the daemon has forgotten
    /// it): it takes no input or resize.
    #[error("session {0:?} has exited")]
    SessionExited(String),
    /// The workspace is closed: nothing new may start in it.
    #[error("workspace {0:?} is closed")]
    WorkspaceClosed(String),
    /// The pty-daemon is needed and cannot be reached in time.
    #[error("the pty-daemon is unavailable: {0}")]
    DaemonUnavailable(String),
    /// The pty-daemon is known to be down (gone, or not answering): the
    /// call was not made.
    #[error("{0}")]
    DaemonDown(String),
    /// The pty-daemon refused the request; its status is passed on.
    #[error("{}", .0.message())]
    Daemon(tonic::Status),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Results of host operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Classifies a failed daemon call: transport trouble is unavailability,
    /// anything else is the daemon's verdict on the request.
    pub fn from_daemon(status: tonic::Status) -> Self {
        use tonic::Code;
        match status.code() {
            Code::Unavailable | Code::DeadlineExceeded | Code::Cancelled | Code::Unknown => {
                Self::DaemonUnavailable(status.message().to_owned())
            }
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

    /// Whether a spawn that failed so may still have started its program:
    /// no answer came, or the daemon failed after taking the request. Its
    /// refusals (bad input, no such program, an id in use) start nothing.
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
        let message = holdfast::status_text::bounded(error.to_string());
        match error {
            Error::InvalidArgument(_) => Self::invalid_argument(message),
            Error::WorkspaceNotFound(_) | Error::SessionNotFound(_) | Error::SessionDisposed(_) => {
                Self::not_found(message)
            }
            Error::WorkspaceClosed(_) | Error::SessionExited(_) => {
                Self::failed_precondition(message)
            }
            Error::DaemonUnavailable(_) | Error::DaemonDown(_) => Self::unavailable(message),
            Error::Daemon(status) => match status.code() {
                tonic::Code::InvalidArgument
                | tonic::Code::NotFound
                | tonic::Code::PermissionDenied
                | tonic::Code::FailedPrecondition
                | tonic::Code::AlreadyExists => Self::new(status.code(), message),
                // Process or memory limits, or input its program has not
                // read: the daemon is fine, and a retry later may work.
                tonic::Code::ResourceExhausted => {
                    tracing::debug!(%message, "the pty-daemon is out of room");
                    Self::resource_exhausted(message)
                }
                code => {
                    tracing::error!(?code, %message, "the pty-daemon failed a request");
                    Self::internal(format!("the pty-daemon failed: {message}"))
                }
            },
            Error::Store(error) if error.is_transient() => {
                tracing::warn!(%error, "database busy");
                Self::unavailable(message)
            }
            Error::Store(error) => {
                tracing::error!(%error, "database error");
                Self::internal(message)
            }
        }
    }
}

/// Whether a call failed because a timeout on this side passed (its gRPC
/// deadline, or connecting): tonic's client says so with `CANCELLED` and a
/// fixed text.
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
}
