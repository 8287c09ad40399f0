//! The host-service: the gRPC service clients use. It keeps workspaces and
//! session rows in a database and answers "which sessions does this
//! workspace have?" from the pty-daemon and the database, so sessions
//! survive restarts of this process in every list.

pub mod access;
pub mod api;
pub mod client_sizes;
pub mod error;
pub mod grpc_only;
pub mod input;
pub mod listing;
pub mod live_sessions;
pub mod liveness;
pub mod memory;
pub mod new_session;
pub mod paging;
pub mod peer_owner;
pub mod reaper;
pub mod schema;
pub mod server;
pub mod service;
pub mod session_view;
pub mod status;
pub mod store;
pub mod stream_connections;
pub mod supervisor;
pub mod validate;
pub mod workspaces;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::api::terminal_service_server::TerminalServiceServer;
use crate::api::workspace_service_server::WorkspaceServiceServer;
use crate::live_sessions::LiveSessionView;
use crate::liveness::Liveness;
use crate::memory::Memory;
use crate::reaper::Reaper;
use crate::service::Host;
use crate::status::HostStatus;
use crate::store::Store;
use crate::stream_connections::StreamConnections;
use crate::supervisor::{Launcher, Supervisor};

/// How the service runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// Address to serve gRPC and grpc-web on.
    pub listen: SocketAddr,
    /// The SQLite file.
    pub database: PathBuf,
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
    pub auth_token: Option<access::Token>,
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
    Unprotected(#[from] access::UnprotectedListen),
    /// Signal handling could not be set up.
    #[error("installing signal handlers: {0}")]
    Signals(std::io::Error),
}

/// How long open streams get to finish after SIGTERM.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Runs the service until SIGTERM or SIGINT. Never stops the daemon.
pub async fn run(config: Config) -> Result<(), StartError> {
    let access = access::Policy::new(config.listen, config.auth_token.clone())?;
    let store = Store::open(&config.database).await?;
    tracing::info!(database = %config.database.display(), "database ready");
    let (reporter, health_service) = tonic_health::server::health_reporter();
    let memory = Arc::new(Memory::default());
    let daemon_channel = holdfast::daemon_client::connect_channel_lazy(
        &config.daemon_socket,
        config.daemon_deadline,
    );
    let daemon = holdfast::daemon_client::client(daemon_channel.clone());
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
    if let Err(reason) = supervisor.ensure_daemon().await {
        tracing::error!(%reason, "starting without a pty-daemon; lists are memory-only until one answers");
    }
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| StartError::Bind {
            address: config.listen,
            source,
        })?;
    let address = listener.local_addr().unwrap_or(config.listen);
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
    let host = Host::new(live, streams, config.operation_timeout);
    let status = HostStatus {
        health: supervisor.health(),
        database: config.database.clone(),
        daemon_socket: config.daemon_socket.clone(),
        started_at: std::time::SystemTime::now(),
        daemon: liveness,
    };
    reporter.set_serving::<WorkspaceServiceServer<Host>>().await;
    reporter.set_serving::<TerminalServiceServer<Host>>().await;
    let supervising = tokio::spawn(Arc::clone(&supervisor).run());
    let reaping = tokio::spawn(Arc::clone(&reaper).run_every(config.reap_interval));
    tracing::info!(%address, socket = %config.daemon_socket.display(), version = holdfast::VERSION, "host-service serving");

    // Both before serving: a signal sent once the service has answered must
    // stop it cleanly, never by the default action.
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(StartError::Signals)?;
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .map_err(StartError::Signals)?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let mut server = tokio::spawn(server::serve(
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
    supervising.abort();
    reaping.abort();
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
    tracing::info!("host-service stopped");
    Ok(())
}
