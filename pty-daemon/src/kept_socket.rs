//! The daemon's incoming connections, from a socket it keeps bound.
//!
//! The daemon outlives the processes above it. It must outlive its socket
//! file too. A tmp cleaner can delete the file under a running daemon, and
//! so can logind, removing `$XDG_RUNTIME_DIR` at a user's last logout. The
//! daemon would then serve no new client while its sessions run on. The
//! next host-service would start a second daemon beside it.
//!
//! So the path is looked at every second. When its file is gone, it is
//! bound again. tmux does this on SIGUSR1; here nobody has to ask. The log
//! file's path is looked at too (`log_file.rs`). Accepting pauses after a
//! failure (`holdfast_plumbing::accept_backoff`).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::Stream;
use holdfast_plumbing::accept_backoff::AcceptBackoff;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;
use tokio::time::{Interval, MissedTickBehavior};

use crate::error::Error;
use crate::listener::{ClaimedSocket, SocketFile};

/// How often the socket's path is looked at.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// Connections accepted on `socket`'s listener.
///
/// `listener` is that listener, registered with the runtime. The socket is
/// bound again whenever its file is found removed. The stream never ends
/// and never yields an error. While `paused` is true nothing is accepted:
/// during an upgrade, new clients wait in the backlog for the next image,
/// rather than be refused by this one.
pub fn incoming(
    socket: Arc<Mutex<ClaimedSocket>>,
    listener: UnixListener,
    paused: watch::Receiver<bool>,
) -> impl Stream<Item = std::io::Result<UnixStream>> + Send + 'static {
    let mut check = tokio::time::interval(CHECK_EVERY);
    check.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let keeper = Keeper {
        socket,
        listener,
        check,
        backoff: AcceptBackoff::default(),
        lost: false,
        paused: Some(paused),
    };
    futures_util::stream::unfold(keeper, |mut keeper| async move {
        let connection = keeper.next().await;
        Some((Ok(connection), keeper))
    })
}

struct Keeper {
    socket: Arc<Mutex<ClaimedSocket>>,
    listener: UnixListener,
    check: Interval,
    backoff: AcceptBackoff,
    /// Whether the path was found taken by another file, reported once.
    lost: bool,
    /// True while accepting pauses; `None` once nothing can pause it.
    paused: Option<watch::Receiver<bool>>,
}

impl Keeper {
    async fn next(&mut self) -> UnixStream {
        loop {
            if let Some(paused) = &mut self.paused
                && *paused.borrow_and_update()
            {
                if paused.wait_for(|paused| !paused).await.is_err() {
                    self.paused = None;
                }
                continue;
            }
            let pausing = async {
                match &mut self.paused {
                    // False once nothing can pause it any more.
                    Some(paused) => paused.changed().await.is_ok(),
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                accepted = self.listener.accept() => {
                    if let Some((connection, _)) = self.backoff.accepted(accepted).await {
                        return connection;
                    }
                }
                _ = self.check.tick() => {
                    self.keep();
                    crate::log_file::keep();
                }
                can_pause = pausing => {
                    if !can_pause {
                        self.paused = None;
                    }
                }
            }
        }
    }

    /// Binds again if the socket's file is gone.
    fn keep(&mut self) {
        let mut socket = self.socket.lock().unwrap_or_else(PoisonError::into_inner);
        match socket.file() {
            SocketFile::Ours => self.lost = false,
            SocketFile::Replaced => {
                if !self.lost {
                    tracing::warn!(path = %socket.path.display(), "another file took the socket's place; serving the connections already open, not binding over it");
                    self.lost = true;
                }
            }
            SocketFile::Missing => match socket.claim_again().and_then(|listener| {
                // Bound but not accepting: removed again, to be retried.
                register(listener).inspect_err(|_| socket.remove())
            }) {
                Ok(listener) => {
                    // Its directory may have gone with it. The log comes
                    // first, so this reaches a file one can read.
                    crate::log_file::keep();
                    tracing::warn!(path = %socket.path.display(), "the socket file was removed; bound it again");
                    self.listener = listener;
                    self.lost = false;
                }
                Err(error) => {
                    if !self.lost {
                        tracing::error!(path = %socket.path.display(), %error, "the socket file was removed and cannot be bound again; serving the connections already open");
                        self.lost = true;
                    }
                }
            },
        }
    }
}

/// Hands a bound listener to the runtime.
pub fn register(listener: std::os::unix::net::UnixListener) -> Result<UnixListener, Error> {
    listener
        .set_nonblocking(true)
        .and_then(|()| UnixListener::from_std(listener))
        .map_err(|error| Error::io("registering the listener", error))
}
