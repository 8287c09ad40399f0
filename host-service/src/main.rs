//! `host-service`: serve the holdfast API.
//!
//! Run under the name `pty-daemon` (argv[0]), the same binary is the
//! daemon. That is how it launches a daemon of exactly its own version
//! without looking for another file.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use host_service::Launcher;
use host_service::{Config, Database, HostIdentity};

/// The holdfast host-service: lists every live session of a workspace, from
/// the pty-daemon and the database, across restarts.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Address for gRPC and grpc-web. Loopback by default.
    #[arg(long, env = "HOLDFAST_LISTEN", default_value = "127.0.0.1:7077")]
    listen: SocketAddr,
    /// The database: an SQLite file (a path or `sqlite://PATH`) or a
    /// PostgreSQL server (`postgres://USER:PASSWORD@HOST/DB`) [default:
    /// $XDG_DATA_HOME/holdfast/holdfast.db].
    #[arg(long, env = "HOLDFAST_DATABASE_URL")]
    database_url: Option<String>,
    /// This host-service's stable id among those sharing a database
    /// [default: made at the first start, kept beside the SQLite file or in
    /// $XDG_DATA_HOME/holdfast/host-id].
    #[arg(long, env = "HOLDFAST_HOST_ID")]
    host_id: Option<String>,
    /// The name people know this host by [default: the machine's name].
    #[arg(long, env = "HOLDFAST_HOST_NAME")]
    host_name: Option<String>,
    /// Where clients and other hosts reach this one, host:port [default:
    /// the address it listens on].
    #[arg(long, env = "HOLDFAST_ADVERTISE")]
    advertise: Option<String>,
    /// The pty-daemon's socket [default: $XDG_RUNTIME_DIR/holdfast/ptyd.sock,
    /// or /tmp/holdfast-<uid>/ptyd.sock].
    #[arg(long, env = "HOLDFAST_DAEMON_SOCKET")]
    daemon_socket: Option<PathBuf>,
    /// pty-daemon executable to launch when none answers [default: this
    /// binary, run as the daemon].
    #[arg(long, env = "HOLDFAST_DAEMON_BIN")]
    daemon_bin: Option<PathBuf>,
    /// Never launch a daemon; only adopt one started by hand.
    #[arg(long, env = "HOLDFAST_NO_LAUNCH_DAEMON")]
    no_launch_daemon: bool,
    /// How long ListSessions waits for the daemon (connecting included)
    /// and the database together, before answering from memory.
    #[arg(long, env = "HOLDFAST_DAEMON_DEADLINE_MS", default_value_t = 250,
          value_parser = clap::value_parser!(u64).range(1..=60_000))]
    daemon_deadline_ms: u64,
    /// How long other daemon calls (spawn, write, kill...) may take.
    #[arg(long, env = "HOLDFAST_OPERATION_TIMEOUT_MS", default_value_t = 5_000,
          value_parser = clap::value_parser!(u64).range(1..=600_000))]
    operation_timeout_ms: u64,
    /// How often the reaper reconciles the daemon with the database.
    #[arg(long, env = "HOLDFAST_REAP_INTERVAL_SECS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    reap_interval_secs: u64,
    /// Another browser origin allowed to call over grpc-web (repeatable);
    /// pages on localhost are always allowed.
    #[arg(
        long = "cors-origin",
        env = "HOLDFAST_CORS_ORIGINS",
        value_delimiter = ','
    )]
    cors_origins: Vec<String>,
    /// Bearer token every request must carry (`authorization: Bearer …`);
    /// required to listen anywhere but loopback. Prefer the environment
    /// variable: a flag is visible to other users in `ps`.
    #[arg(long, env = "HOLDFAST_AUTH_TOKEN", hide_env_values = true)]
    auth_token: Option<String>,
    /// Log format; `RUST_LOG` filters.
    #[arg(long, env = "HOLDFAST_LOG_FORMAT", value_enum, default_value_t = holdfast_plumbing::logging::LogFormat::Text)]
    log_format: holdfast_plumbing::logging::LogFormat,
}

/// The argv[0] under which this binary is the daemon.
const DAEMON_NAME: &str = "pty-daemon";

fn main() -> anyhow::Result<()> {
    let invoked_as = std::env::args_os()
        .next()
        .map(PathBuf::from)
        .unwrap_or_default();
    if invoked_as
        .file_name()
        .is_some_and(|name| name == DAEMON_NAME)
    {
        return pty_daemon::cli::main();
    }
    let args = Args::parse();
    holdfast_plumbing::logging::init(args.log_format, std::io::stderr().is_terminal());
    let database = match args.database_url {
        None => Database::Sqlite(holdfast_plumbing::paths::default_database_path()),
        Some(url) => Database::parse(&url)?,
    };
    // Beside the SQLite file, so each file has its own host; else the
    // default data directory.
    let data_dir = match &database {
        Database::Sqlite(path) => path
            .parent()
            .filter(|dir| !dir.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), PathBuf::from),
        Database::Postgres(_) => holdfast_plumbing::paths::default_database_path()
            .parent()
            .map_or_else(|| PathBuf::from("."), PathBuf::from),
    };
    let host = HostIdentity::resolve(args.host_id, args.host_name, &data_dir)?;
    let launcher = if args.no_launch_daemon {
        None
    } else {
        Some(match args.daemon_bin {
            Some(program) => Launcher {
                arg0: program.to_string_lossy().into_owned(),
                program,
                args: Vec::new(),
            },
            None => Launcher {
                program: std::env::current_exe()
                    .context("finding this executable to run it as the daemon")?,
                arg0: DAEMON_NAME.into(),
                args: Vec::new(),
            },
        })
    };
    let config = Config {
        listen: args.listen,
        database,
        daemon_socket: args
            .daemon_socket
            .unwrap_or_else(holdfast_plumbing::paths::default_socket_path),
        launcher,
        daemon_deadline: Duration::from_millis(args.daemon_deadline_ms),
        operation_timeout: Duration::from_millis(args.operation_timeout_ms),
        reap_interval: Duration::from_secs(args.reap_interval_secs),
        cors_origins: args.cors_origins,
        auth_token: args
            .auth_token
            .as_deref()
            .map(host_service::Token::new)
            .transpose()?
            .flatten(),
        host,
        advertise: args.advertise,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .thread_name("holdfast-host")
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(host_service::run(config))?;
    Ok(())
}
