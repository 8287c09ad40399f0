//! The host-service: the gRPC service clients use.
//!
//! It keeps workspaces and session rows in a database. It answers "which
//! sessions does this workspace have?" from the pty-daemon and the
//! database, so sessions survive restarts of this process in every list.

mod background;
mod daemon;
mod error;
mod grpc;
mod host;
mod sessions;
mod store;
mod this_host;
mod validate;

pub use crate::daemon::supervisor::Launcher;
pub use crate::grpc::access::Token;
pub use crate::sessions::input::SessionInput;
pub use crate::store::database::Database;
pub use crate::store::{SessionRow, Store, StoreError, WorkspaceRow, micros};
pub use crate::this_host::{HostIdentity, IdentityError};

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::background::Background;
use crate::daemon::liveness::Liveness;
use crate::daemon::reaper::Reaper;
use crate::daemon::stream_connections::StreamConnections;
use crate::daemon::supervisor::Supervisor;
use crate::daemon::upgrade::DaemonUpgrade;
use crate::grpc::api::terminal_service_server::TerminalServiceServer;
use crate::grpc::api::workspace_service_server::WorkspaceServiceServer;
use crate::grpc::status::HostStatus;
use crate::host::Host;
use crate::sessions::held_sessions::HeldSessions;
use crate::sessions::live_sessions::LiveSessionView;

/// How the service runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// Address to serve gRPC and grpc-web on.
    pub listen: SocketAddr,
    /// The database.
    pub database: Database,
    /// The pty-daemon's socket.
    pub daemon_socket: PathBuf,
    /// How to start a daemon when none answers; `None` only adopts.
    pub launcher: Option<Launcher>,
    /// How long lists wait for the daemon (connecting included).
    pub daemon_deadline: Duration,
    /// How long other daemon calls may take.
    pub operation_timeout: Duration,
    /// How often the reaper reconciles.
    pub reap_interval: Duration,
    /// Browser origins allowed besides this machine's.
    pub cors_origins: Vec<String>,
    /// The bearer token every request must carry; required off loopback.
    pub auth_token: Option<Token>,
    /// Who this host-service is, among those sharing the database.
    pub host: HostIdentity,
    /// Where clients and other hosts reach it; the bound address if none.
    pub advertise: Option<String>,
}

/// Why the service could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The database could not be opened or migrated.
    #[error(transparent)]
    Store(#[from] store::StoreError),
    /// The listen address could not be bound.
    #[error("cannot listen on {address}: {source}")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The server failed.
    #[error("serving failed: {0}")]
    Serve(#[from] tonic::transport::Error),
    /// A non-loopback address without a token.
    #[error(transparent)]
    Unprotected(#[from] grpc::access::UnprotectedListen),
    /// This host's identity could not be had.
    #[error(transparent)]
    Identity(#[from] this_host::IdentityError),
    /// Signal handling could not be set up.
    #[error("installing signal handlers: {0}")]
    Signals(std::io::Error),
}

/// How long open streams get to finish after SIGTERM.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Runs the service until SIGTERM or SIGINT. Never stops the daemon.
pub async fn run(config: Config) -> Result<(), StartError> {
    let access = grpc::access::Policy::new(config.listen, config.auth_token.clone())?;
    let store = Store::open(&config.database, &config.host.id).await?;
    // Before anything reads the rows: those of no host are this one's.
    let claimed = store.claim_unowned_sessions().await?;
    tracing::info!(database = %config.database, backend = config.database.backend(), host_id = %config.host.id, host_name = %config.host.name, claimed, "database ready");
    let (reporter, health_service) = tonic_health::server::health_reporter();
    let memory = Arc::new(HeldSessions::default());
    let daemon_channel = holdfast_plumbing::daemon_client::connect_channel_lazy(
        &config.daemon_socket,
        config.daemon_deadline,
    );
    let daemon = holdfast_plumbing::daemon_client::client(daemon_channel.clone());
    let liveness = Liveness::new(daemon_channel, config.daemon_deadline);
    let reaper = Arc::new(Reaper::new(
        store.clone(),
        Arc::clone(&memory),
        daemon.clone(),
    ));
    let supervisor = Arc::new(Supervisor::new(
        config.daemon_socket.clone(),
        config.launcher.clone(),
        daemon.clone(),
        &liveness,
        reporter.clone(),
        store.clone(),
        Arc::clone(&memory),
        Arc::clone(&reaper),
    ));
    let upgrade = DaemonUpgrade {
        socket: config.daemon_socket.clone(),
        program: config
            .launcher
            .as_ref()
            .map(|launcher| launcher.program.clone()),
    };
    match supervisor.ensure_daemon().await {
        Err(reason) => {
            tracing::error!(%reason, "starting without a pty-daemon; lists are memory-only until one answers");
        }
        // A daemon of another version is upgraded in place to this
        // service's own: its sessions carry on, same pid.
        Ok(_) if upgrade.program.is_some() => {
            if let Err(error) = upgrade.run(false).await {
                tracing::warn!(%error, "the pty-daemon was not upgraded; it keeps serving its sessions as it is");
            }
        }
        Ok(_) => {}
    }
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| StartError::Bind {
            address: config.listen,
            source,
        })?;
    let address = listener.local_addr().unwrap_or(config.listen);
    let advertised = config
        .advertise
        .clone()
        .unwrap_or_else(|| address.to_string());
    store.register_host(config.host.row(&advertised)).await?;
    let beating = store.clone();
    let live = LiveSessionView {
        store,
        memory,
        daemon,
        health: supervisor.health(),
        deadline: config.daemon_deadline,
        last_list: Default::default(),
        renders: Default::default(),
    };
    let streams = StreamConnections::new(config.daemon_socket.clone(), config.operation_timeout);
    let background = Background::default();
    let fleet = sessions::fleet::Fleet::new(
        beating.clone(),
        config.host.clone(),
        config
            .auth_token
            .as_ref()
            .map(|token| token.text().to_owned()),
    );
    let host = Host::new(
        live,
        streams,
        config.operation_timeout,
        background.clone(),
        fleet,
    );
    let status = HostStatus {
        health: supervisor.health(),
        database: config.database.clone(),
        daemon_socket: config.daemon_socket.clone(),
        started_at: std::time::SystemTime::now(),
        daemon: liveness,
        upgrade,
        store: beating.clone(),
    };
    reporter.set_serving::<WorkspaceServiceServer<Host>>().await;
    reporter.set_serving::<TerminalServiceServer<Host>>().await;
    background.spawn_loop(Arc::clone(&supervisor).run());
    background.spawn(Arc::clone(&reaper).run_every(config.reap_interval, background.stopped()));
    background.spawn_loop(this_host::beat(beating));
    tracing::info!(%address, socket = %config.daemon_socket.display(), version = holdfast_api::VERSION, "host-service serving");

    // Both before serving. A signal sent once the service has answered must
    // stop it cleanly, never by the default action.
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(StartError::Signals)?;
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .map_err(StartError::Signals)?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let mut server = tokio::spawn(grpc::server::serve(
        listener,
        host,
        status,
        health_service,
        config.cors_origins,
        access,
        async {
            let _ = stopped.await;
        },
    ));
    let outcome = tokio::select! {
        _ = terminate.recv() => { tracing::info!("SIGTERM: stopping (the daemon and its sessions keep running)"); None }
        _ = interrupt.recv() => { tracing::info!("SIGINT: stopping (the daemon and its sessions keep running)"); None }
        finished = &mut server => Some(finished),
    };
    // The loops first: no daemon is launched or reaped while stopping.
    background.stop();
    match outcome {
        Some(Ok(result)) => result?,
        Some(Err(join_error)) => tracing::error!(%join_error, "the server task failed"),
        None => {
            let _ = stop.send(());
            if tokio::time::timeout(SHUTDOWN_GRACE, &mut server)
                .await
                .is_err()
            {
                tracing::info!("closing attach streams still open");
                server.abort();
            }
        }
    }
    // Then the clean-up requests left behind (a kill, a create finished
    // for a client that left), within the same grace.
    if !background.finish(SHUTDOWN_GRACE).await {
        tracing::warn!("background tasks still running at shutdown; leaving them");
    }
    tracing::info!("host-service stopped");
    Ok(())
}
