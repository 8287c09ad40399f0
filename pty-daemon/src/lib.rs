//! The pty-daemon owns pseudo-terminals and the programs in them.
//!
//! It serves them over gRPC on an owner-only unix socket. It is detached
//! from whoever started it, so sessions outlive every process above it.

pub mod api;
pub mod cli;
pub mod error;
pub mod file_id;
pub mod generation;
pub mod input_queue;
pub mod kept_socket;
pub mod kill;
pub mod limits;
pub mod listener;
pub mod listing;
pub mod log_file;
pub mod modes;
pub mod peer_auth;
pub mod posix_spawn;
pub mod registry;
pub mod screen;
pub mod scrollback;
pub mod server;
pub mod session;
pub mod session_settings;
pub mod spawn;
pub mod title;
pub mod upgrade;
pub mod validate;
pub mod version;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use tokio::signal::unix::{SignalKind, signal};

use crate::listener::ClaimedSocket;
use crate::registry::Registry;
use crate::server::DaemonService;
use crate::session_settings::SessionSettings;
use crate::upgrade::restore::Handover;
use crate::upgrade::state::Rings;
use crate::upgrade::state::pb::DaemonState;
use crate::upgrade::{History, Upgrader};

pub use crate::error::{Error, Result};

/// How long sessions get to exit after SIGHUP when the daemon stops, before
/// SIGKILL.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// Serves on an already claimed socket until SIGTERM or SIGINT.
///
/// Then it hangs up every session and removes the socket. It must run
/// inside a tokio runtime. The sessions' terminals are read on `terminals`,
/// which may be another.
///
/// With `restoring`, it first takes over the sessions a previous image
/// handed on in an upgrade, or goes back to that image if it cannot.
pub async fn run(
    socket: ClaimedSocket,
    settings: SessionSettings,
    terminals: tokio::runtime::Handle,
    restoring: Option<(Handover, DaemonState, Rings)>,
) -> Result<()> {
    let started_at = restoring
        .as_ref()
        .map_or_else(SystemTime::now, |(_, state, _)| {
            upgrade::state::from_micros(state.started_at_unix_micros)
        });
    let listener = socket
        .listener
        .try_clone()
        .map_err(|error| Error::io("cloning the listener", error))
        .and_then(kept_socket::register)?;
    let socket = Arc::new(Mutex::new(socket));
    // Installed before the first connection is accepted. A SIGTERM from a
    // client that saw the daemon answer must stop it cleanly, never by the
    // default action. A test once hit that window.
    let mut terminate = signal(SignalKind::terminate())
        .map_err(|error| Error::io("installing the SIGTERM handler", error))?;
    let mut interrupt = signal(SignalKind::interrupt())
        .map_err(|error| Error::io("installing the SIGINT handler", error))?;
    let registry = Arc::new(Registry::new(settings, terminals));
    let restored = restoring.is_some();
    let history = match restoring {
        Some((handover, state, rings)) => restore(&registry, handover, state, rings),
        None => History::default(),
    };
    let upgrader = Arc::new(Upgrader::new(
        Arc::clone(&registry),
        Arc::clone(&socket),
        started_at,
        history,
    ));
    let incoming = kept_socket::incoming(Arc::clone(&socket), listener, upgrader.upgrading());
    let mut upgrade_signal = signal(SignalKind::user_defined2())
        .map_err(|error| Error::io("installing the SIGUSR2 handler", error))?;

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let service = DaemonService::new(Arc::clone(&registry), started_at, Arc::clone(&upgrader));
    let mut server = tokio::spawn(server::serve(incoming, service, async {
        let _ = stopped.await;
    }));
    if restored {
        // Serving first: a list needs the sessions, not their drivers.
        registry.resume();
    }
    let path = socket
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .path
        .clone();
    tracing::info!(socket = %path.display(), pid = std::process::id(), version = version::version(), "pty-daemon serving");

    loop {
        tokio::select! {
            _ = terminate.recv() => tracing::info!("SIGTERM: stopping"),
            _ = interrupt.recv() => tracing::info!("SIGINT: stopping"),
            _ = upgrade_signal.recv() => {
                // nginx's convention: install the new file over the old,
                // then signal.
                tracing::info!("SIGUSR2: upgrading to the file this daemon was started from");
                let error = match upgrader.check(None).await {
                    Ok(checked) => upgrader.switch(checked).await,
                    Err(error) => error,
                };
                tracing::error!(%error, "the upgrade did not happen");
                continue;
            }
            finished = &mut server => {
                tracing::error!(?finished, "the server stopped on its own");
            }
        }
        break;
    }
    // Sessions end first so their attach streams finish with an exit event,
    // which lets the server's graceful shutdown complete.
    registry.hang_up_all(SHUTDOWN_GRACE).await;
    registry.end_exit_watches();
    let _ = stop.send(());
    if tokio::time::timeout(SHUTDOWN_GRACE, &mut server)
        .await
        .is_err()
    {
        tracing::warn!("connections still open at shutdown; closing them");
        server.abort();
    }
    socket
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove();
    tracing::info!("pty-daemon stopped");
    Ok(())
}

/// Takes over the sessions a previous image handed on; goes back to that
/// image if it cannot, with nothing lost.
fn restore(
    registry: &Arc<Registry>,
    handover: Handover,
    state: DaemonState,
    mut rings: Rings,
) -> History {
    let sessions = state.sessions.len();
    let generation = state.generation;
    let switch_started = upgrade::state::from_micros(state.switch_started_at_unix_micros);
    let restoring = std::time::Instant::now();
    let restored = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: the previous image kept every terminal it names open for
        // this one, and nothing else here owns them.
        unsafe { registry.restore(state.sessions, &mut rings, generation) }
    }));
    match restored {
        Ok(Ok(())) if handover.refused_for_tests() => {
            handover.roll_back("refusing to restore (HOLDFAST_TEST_REFUSE_RESTORE)")
        }
        Ok(Ok(())) => {}
        Ok(Err(error)) => handover.roll_back(&error.to_string()),
        Err(_) => handover.roll_back("restoring panicked"),
    }
    handover.finish();
    let last_switch = SystemTime::now().duration_since(switch_started).ok();
    tracing::info!(sessions, from = %state.version, to = version::version(), switch = ?last_switch, restore = ?restoring.elapsed(), "upgraded in place");
    History {
        upgrades: state.upgrades,
        previous_version: state.version,
        last_switch,
    }
}
