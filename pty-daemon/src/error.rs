//! The daemon's errors, and the one place they become gRPC statuses.

use std::path::PathBuf;

use holdfast_api::error_details::{BadField, Reason, Refusal};

/// Everything a daemon request or start-up can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request field is missing, malformed or out of range.
    #[error(transparent)]
    InvalidArgument(BadField),
    /// No session has this id (or it was dropped after its retention).
    #[error("no session with id {0:?}")]
    SessionNotFound(String),
    /// A client-chosen session id is already taken.
    #[error("a session with id {0:?} already exists")]
    SessionExists(String),
    /// The session's program has exited, so it takes no input or resize.
    #[error("session {0:?} has exited")]
    SessionExited(String),
    /// No program holds the session's terminal any more.
    ///
    /// Its program exited or let go of it. An exited program waits to be
    /// reaped until what it left is read. Input has nowhere to go.
    #[error("session {0:?}'s terminal is closed: its program has exited or let go of it")]
    TerminalClosed(String),
    /// The program has not read the input it was sent, and this write
    /// does not fit beside it.
    ///
    /// None of this write was taken.
    #[error(
        "session {session_id:?}'s program has not read its input: {waiting} bytes wait (at most {max}); \
         none of this write was taken, send it again once the program reads",
        max = crate::limits::MAX_WAITING_BYTES
    )]
    InputFull {
        /// The session written to.
        session_id: String,
        /// Bytes waiting for the program.
        waiting: usize,
    },
    /// The system could not start another program now (process or
    /// memory limits).
    #[error("cannot start {program:?} now: {reason}")]
    NoResources {
        /// argv[0] as given.
        program: String,
        /// What went wrong, from the spawner.
        reason: String,
    },
    /// The working directory for a spawn does not exist or is no directory.
    #[error("working directory {0} does not exist or is not a directory")]
    CwdNotFound(PathBuf),
    /// The working directory for a spawn is one this user may not enter.
    #[error("working directory {0} may not be entered by this user")]
    CwdNotPermitted(PathBuf),
    /// The program to spawn could not be found or started.
    #[error("cannot start {program:?}: {reason}")]
    ProgramNotFound {
        /// argv[0] as given.
        program: String,
        /// What went wrong, from the spawner.
        reason: String,
    },
    /// The program to spawn is there but may not be run by this user.
    #[error("cannot start {program:?}: {reason}")]
    ProgramNotPermitted {
        /// argv[0] as given.
        program: String,
        /// What went wrong, from the spawner.
        reason: String,
    },
    /// A system call failed while serving a request.
    #[error("{operation}: {source}")]
    Io {
        /// What the daemon was doing.
        operation: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The daemon is stopping: it starts no more sessions.
    #[error("the pty-daemon is stopping; it starts no more sessions")]
    Stopping,
    /// The daemon is replacing its program image; the call may be retried
    /// in a moment.
    #[error("the pty-daemon is upgrading; retry in a moment{resume}")]
    Upgrading {
        /// Where an attach stream resumes, said in the message.
        resume: String,
    },
    /// The candidate binary of an upgrade cannot take over; nothing changed.
    #[error("upgrade refused, the daemon goes on as it was: {0}")]
    UpgradeRefused(String),
    /// Another daemon already serves this socket.
    #[error("another pty-daemon is already serving {0}")]
    AlreadyRunning(PathBuf),
}

/// Results of daemon operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// `field` is missing, malformed or out of range, as `message` says.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::InvalidArgument(BadField::new(field, message))
    }

    /// The same error, its field a path inside the request's `parent`
    /// (`Start`'s `spawn`).
    pub fn within(self, parent: &str) -> Self {
        match self {
            Self::InvalidArgument(bad) => Self::InvalidArgument(bad.within(parent)),
            other => other,
        }
    }

    /// An I/O error with what was being done.
    pub fn io(operation: impl Into<String>, source: impl Into<std::io::Error>) -> Self {
        Self::Io {
            operation: operation.into(),
            source: source.into(),
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
            Error::SessionNotFound(id) => {
                refusal(Code::NotFound, Reason::SessionNotFound).about("sessionId", id)
            }
            Error::CwdNotFound(cwd) => {
                refusal(Code::NotFound, Reason::CwdNotFound).about("cwd", cwd.display())
            }
            Error::CwdNotPermitted(cwd) => {
                refusal(Code::PermissionDenied, Reason::CwdNotPermitted).about("cwd", cwd.display())
            }
            Error::ProgramNotFound { ref program, .. } => {
                refusal(Code::NotFound, Reason::ProgramNotFound).about("program", program)
            }
            Error::ProgramNotPermitted { ref program, .. } => {
                refusal(Code::PermissionDenied, Reason::ProgramNotPermitted)
                    .about("program", program)
            }
            Error::SessionExists(id) => {
                refusal(Code::AlreadyExists, Reason::SessionExists).about("sessionId", id)
            }
            Error::SessionExited(id) => {
                refusal(Code::FailedPrecondition, Reason::SessionExited).about("sessionId", id)
            }
            Error::TerminalClosed(id) => {
                refusal(Code::FailedPrecondition, Reason::TerminalClosed).about("sessionId", id)
            }
            Error::NoResources { ref program, .. } => {
                refusal(Code::ResourceExhausted, Reason::NoResources).about("program", program)
            }
            Error::InputFull {
                ref session_id,
                waiting,
            } => refusal(Code::ResourceExhausted, Reason::InputFull)
                .about("sessionId", session_id)
                .about("waitingBytes", waiting),
            Error::Stopping => refusal(Code::Unavailable, Reason::DaemonStopping),
            Error::Upgrading { .. } => refusal(Code::Unavailable, Reason::DaemonUpgrading),
            Error::UpgradeRefused(_) => refusal(Code::FailedPrecondition, Reason::DaemonUpgrading),
            Error::Io { .. } | Error::AlreadyRunning(_) => {
                tracing::error!(%message, "request failed");
                refusal(Code::Internal, Reason::InternalFailure)
            }
        }
        .into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Said of the field it concerns, with the reason clients match on.
    #[test]
    fn a_working_directory_that_may_not_be_entered_is_a_permission_refusal() {
        let status = tonic::Status::from(Error::CwdNotPermitted("/root".into()));
        assert_eq!(status.code(), tonic::Code::PermissionDenied);
        assert_eq!(
            status.message(),
            "working directory /root may not be entered by this user"
        );
        let (reason, metadata) = holdfast_api::error_details::reason_of(&status).expect("a reason");
        assert_eq!(reason, "CWD_NOT_PERMITTED");
        assert_eq!(metadata.get("cwd").map(String::as_str), Some("/root"));
    }
}
