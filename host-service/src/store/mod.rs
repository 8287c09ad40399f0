//! The session store: workspaces and session rows in SQLite or PostgreSQL
//! through diesel.
//!
//! Every query is written once, for both (`connection.rs`). Every call
//! runs on the pool's blocking threads, never on an async worker.

pub mod connection;
pub mod database;
mod ended;
mod hosts;
pub mod known_workspaces;
#[macro_use]
mod queries;
pub mod schema;

use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use deadpool::managed::Pool;
use diesel::prelude::*;
use diesel_migrations::{EmbeddedMigrations, embed_migrations};

use crate::store::connection::{AnyConnection, Connector};
use crate::store::database::Database;
use crate::store::queries::{listable, unsettled, unstamped_in};
use crate::store::schema::{terminal_sessions, workspaces};

pub use crate::store::hosts::HostRow;

const MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations");

/// Connections in the pool.
///
/// SQLite serialises writers, so a few suffice; a PostgreSQL server shared
/// by a fleet is spared idle connections.
const POOL_SIZE: usize = 4;

/// How long a call waits for a connection to be made, before the database
/// counts as unavailable. A PostgreSQL server that is down or unreachable
/// must fail a write promptly, not hold it until TCP gives up.
const CONNECT_PATIENCE: Duration = Duration::from_secs(3);

/// What can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A query failed.
    #[error("database query failed while {operation}: {source}")]
    Query {
        /// What the store was doing.
        operation: &'static str,
        /// diesel's error.
        #[source]
        source: diesel::result::Error,
    },
    /// No connection could be had, or the blocking task failed.
    #[error("the database ({database}) is unavailable while {operation}: {reason}")]
    Pool {
        /// The database, as shown (a path, or a URL without its password).
        database: std::sync::Arc<str>,
        /// What the store was doing.
        operation: &'static str,
        /// The pool's error.
        reason: String,
    },
    /// Opening or preparing the database failed.
    #[error("cannot open the database {database}: {reason}")]
    Open {
        /// The database, as shown (a path, or a URL without its password).
        database: String,
        /// What went wrong.
        reason: String,
    },
}

impl StoreError {
    /// Whether the database could not be reached at all (rather than busy
    /// or failing a query).
    pub fn is_unreachable(&self) -> bool {
        use diesel::result::DatabaseErrorKind::{ClosedConnection, UnableToSendCommand};
        use diesel::result::Error::DatabaseError;
        matches!(
            self,
            Self::Pool { .. }
                | Self::Query {
                    source: DatabaseError(ClosedConnection | UnableToSendCommand, _),
                    ..
                }
        )
    }

    /// Whether trying again later may succeed.
    ///
    /// It may when the database was locked (by another process, past the
    /// busy timeout) or no connection could be had.
    pub fn is_transient(&self) -> bool {
        use diesel::result::DatabaseErrorKind::{
            ClosedConnection, SerializationFailure, UnableToSendCommand,
        };
        use diesel::result::Error::DatabaseError;
        match self {
            Self::Pool { .. } => true,
            // A PostgreSQL server that went away, or a conflict it asks to
            // retry.
            Self::Query {
                source:
                    DatabaseError(ClosedConnection | UnableToSendCommand | SerializationFailure, _),
                ..
            } => true,
            // SQLITE_BUSY and SQLITE_LOCKED, which diesel reports only by
            // their messages.
            Self::Query {
                source: DatabaseError(_, info),
                ..
            } => ["database is locked", "database table is locked"]
                .iter()
                .any(|busy| info.message().starts_with(busy)),
            Self::Query { .. } | Self::Open { .. } => false,
        }
    }
}

/// Results of store calls.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// A session's lifecycle state in the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Created and not known to have ended.
    Active,
    /// The program exited on its own (or with its daemon).
    Exited,
    /// Disposed on request.
    ///
    /// It is never listed again.
    Disposed,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Exited => "exited",
            Self::Disposed => "disposed",
        }
    }

    fn parse(text: &str) -> Self {
        match text {
            "exited" => Self::Exited,
            "disposed" => Self::Disposed,
            _ => Self::Active,
        }
    }
}

/// A workspace row.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = workspaces)]
pub struct WorkspaceRow {
    /// The workspace's id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Creation time, µs since the epoch.
    pub created_at: i64,
    /// Close time, µs since the epoch.
    pub closed_at: Option<i64>,
}

/// A session row.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = terminal_sessions)]
pub struct SessionRow {
    /// The session's id, shared with the daemon.
    pub id: String,
    /// The workspace it belongs to.
    pub workspace_id: String,
    /// `active`, `exited` or `disposed`.
    pub status: String,
    /// Whether lists show it.
    pub listed: bool,
    /// The title given at creation, or by a rename since: the session's
    /// name.
    pub title: String,
    /// argv as a JSON array.
    pub argv: String,
    /// The working directory asked for.
    pub cwd: String,
    /// Creation time, µs since the epoch.
    pub created_at: i64,
    /// Last time a client attached, µs since the epoch.
    pub last_attached_at: Option<i64>,
    /// When the program ended, µs since the epoch.
    pub ended_at: Option<i64>,
    /// Its exit code, if it exited normally.
    pub exit_code: Option<i32>,
    /// The signal that ended it, if one did.
    pub exit_signal: Option<i32>,
    /// When disposal was first requested, µs since the epoch.
    pub dispose_requested_at: Option<i64>,
    /// The signal that disposal sends first (the daemon's `Signal`
    /// number).
    ///
    /// `None` means SIGHUP.
    pub dispose_signal: Option<i32>,
    /// Its grace period before SIGKILL, in ms.
    ///
    /// `None` means [`DEFAULT_DISPOSE_GRACE`].
    pub dispose_grace_ms: Option<i32>,
    /// When that grace period ends, µs since the epoch.
    ///
    /// `None` means the grace after the stamp.
    pub dispose_deadline: Option<i64>,
    /// The host-service whose daemon runs it. The store sets it to its own
    /// host's id on insert.
    pub host_id: String,
}

impl SessionRow {
    /// The row's lifecycle state.
    pub fn status(&self) -> Status {
        Status::parse(&self.status)
    }

    /// Whether disposal was requested.
    pub fn is_stamped(&self) -> bool {
        self.dispose_requested_at.is_some()
    }

    /// Whether a stamped session still running at `now` (µs) has outlived
    /// its disposal.
    ///
    /// Its grace period is over, and the daemon's SIGKILL has had
    /// [`DISPOSE_SETTLING`] to end it. Until then a disposal under way is
    /// left alone, so a long grace is not cut short.
    pub fn is_overdue(&self, now: i64) -> bool {
        let Some(stamped) = self.dispose_requested_at else {
            return false;
        };
        let deadline = self
            .dispose_deadline
            .unwrap_or_else(|| stamped.saturating_add(duration_micros(self.dispose_grace())));
        now >= deadline.saturating_add(duration_micros(DISPOSE_SETTLING))
    }

    /// The grace period its disposal gives.
    pub fn dispose_grace(&self) -> Duration {
        self.dispose_grace_ms
            .and_then(|ms| u64::try_from(ms).ok())
            .map_or(DEFAULT_DISPOSE_GRACE, Duration::from_millis)
    }
}

/// The grace period of a disposal that names none.
///
/// It is the daemon's default.
pub const DEFAULT_DISPOSE_GRACE: Duration = Duration::from_secs(1);
/// How long after a disposal's deadline its session may take to go.
const DISPOSE_SETTLING: Duration = Duration::from_secs(2);

/// `duration` in microseconds, as rows keep times.
pub fn duration_micros(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros()).unwrap_or(i64::MAX)
}

/// What became of a session insert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Insert {
    /// The row is recorded.
    Done,
    /// No workspace has that id.
    NoWorkspace,
    /// The workspace is closed.
    WorkspaceClosed,
}

/// How a session ended, to record.
#[derive(Debug, Clone, Copy)]
pub struct Ending {
    /// Exit code, when it exited normally.
    pub exit_code: Option<i32>,
    /// Signal number, when a signal ended it.
    pub exit_signal: Option<i32>,
    /// When, µs since the epoch.
    pub ended_at: i64,
}

/// Microseconds since the epoch.
pub fn micros(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |since| {
        i64::try_from(since.as_micros()).unwrap_or(i64::MAX)
    })
}

/// The time `micros` microseconds after the epoch.
pub fn from_micros(micros: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_micros(micros.max(0).unsigned_abs())
}

/// Handle to the database; cheap to clone.
#[derive(Clone)]
pub struct Store {
    pool: Pool<Connector>,
    /// The database as errors show it.
    shown: std::sync::Arc<str>,
    /// The host-service this store acts for: the rows it inserts are its,
    /// and the rows it joins, reaps and ends are its alone.
    host: std::sync::Arc<str>,
}

impl Store {
    /// Opens `database` for the host-service `host_id`, and runs pending
    /// migrations.
    ///
    /// An SQLite file is made if need be, 0600 in a 0700 directory.
    pub async fn open(database: &Database, host_id: &str) -> Result<Self> {
        let open_error = |reason: String| StoreError::Open {
            database: database.to_string(),
            reason,
        };
        if let Database::Sqlite(path) = database {
            make_file(path).map_err(open_error)?;
        }
        let pool = Pool::builder(Connector::new(database.clone()))
            .max_size(POOL_SIZE)
            .runtime(deadpool::Runtime::Tokio1)
            .create_timeout(Some(CONNECT_PATIENCE))
            .wait_timeout(Some(CONNECT_PATIENCE))
            .build()
            .map_err(|error| open_error(error.to_string()))?;
        let store = Self {
            pool,
            shown: database.to_string().into(),
            host: host_id.into(),
        };
        store
            .run("running migrations", |conn| conn.migrate(MIGRATIONS))
            .await
            .map_err(|error| open_error(error.to_string()))?;
        Ok(store)
    }

    /// Runs `work` on a pooled connection on a blocking thread.
    async fn run<T, F>(&self, operation: &'static str, work: F) -> Result<T>
    where
        F: FnOnce(&mut AnyConnection) -> QueryResult<T> + Send + 'static,
        T: Send + 'static,
    {
        let pool_error = |reason: String| StoreError::Pool {
            database: std::sync::Arc::clone(&self.shown),
            operation,
            reason,
        };
        let connection = self
            .pool
            .get()
            .await
            .map_err(|error| pool_error(error.to_string()))?;
        connection
            .interact(work)
            .await
            .map_err(|error| pool_error(error.to_string()))?
            .map_err(|source| StoreError::Query { operation, source })
    }

    /// The host-service this store acts for.
    pub fn host_id(&self) -> &str {
        &self.host
    }

    /// The same database, acting for `host_id`.
    pub fn for_host(&self, host_id: &str) -> Self {
        Self {
            host: host_id.into(),
            ..self.clone()
        }
    }

    /// Makes this host the owner of the rows written before hosts existed;
    /// how many.
    pub async fn claim_unowned_sessions(&self) -> Result<usize> {
        let host = self.host.to_string();
        self.run("claiming sessions of no host", move |conn| {
            diesel::update(terminal_sessions::table.filter(terminal_sessions::host_id.eq("")))
                .set(terminal_sessions::host_id.eq(host))
                .execute(conn)
        })
        .await
    }

    /// Records a new, open workspace.
    ///
    /// Its creation time is the row's, or just after the newest workspace's
    /// if that is not earlier. That covers two creates in one microsecond,
    /// creates racing for the database, and a clock set back. So creation
    /// times follow the order of creation. A page of `ListWorkspaces` goes
    /// on from the last workspace given, and can never pass over one
    /// created after it.
    pub async fn create_workspace(&self, mut row: WorkspaceRow) -> Result<WorkspaceRow> {
        self.run("creating a workspace", move |conn| {
            conn.write_transaction(|conn| {
                let newest: Option<i64> = workspaces::table
                    .select(diesel::dsl::max(workspaces::created_at))
                    .first(conn)?;
                if let Some(newest) = newest {
                    row.created_at = row.created_at.max(newest.saturating_add(1));
                }
                diesel::insert_into(workspaces::table)
                    .values(&row)
                    .execute(conn)?;
                Ok(row)
            })
        })
        .await
    }

    /// Workspaces oldest first, only open ones if `open_only`.
    ///
    /// They start just after `after`, the creation time and id of the last
    /// one a page held. At most `limit` of them are read.
    pub async fn list_workspaces(
        &self,
        after: Option<(i64, String)>,
        limit: Option<i64>,
        open_only: bool,
    ) -> Result<Vec<WorkspaceRow>> {
        self.run("listing workspaces", move |conn| {
            let mut query = oldest_first!(
                <AnyConnection as diesel::Connection>::Backend,
                after,
                open_only
            );
            if let Some(limit) = limit {
                query = query.limit(limit);
            }
            query.load(conn)
        })
        .await
    }

    /// The workspace with this id.
    pub async fn workspace(&self, id: &str) -> Result<Option<WorkspaceRow>> {
        let id = id.to_owned();
        self.run("reading a workspace", move |conn| {
            workspaces::table
                .find(id)
                .select(WorkspaceRow::as_select())
                .first(conn)
                .optional()
        })
        .await
    }

    /// Closes a workspace and stamps its active sessions for disposal, in
    /// one transaction.
    ///
    /// It keeps the first close time. Returns the workspace and the
    /// sessions newly stamped, each with its host: a workspace closes on
    /// every host at once.
    pub async fn close_workspace(
        &self,
        id: &str,
        now: i64,
    ) -> Result<Option<(WorkspaceRow, Vec<(String, String)>)>> {
        let id = id.to_owned();
        self.run("closing a workspace", move |conn| {
            conn.write_transaction(|conn| {
                diesel::update(
                    workspaces::table
                        .find(&id)
                        .filter(workspaces::closed_at.is_null()),
                )
                .set(workspaces::closed_at.eq(now))
                .execute(conn)?;
                let Some(workspace) = workspaces::table
                    .find(&id)
                    .select(WorkspaceRow::as_select())
                    .first(conn)
                    .optional()?
                else {
                    return Ok(None);
                };
                let stamped = diesel::update(unstamped_in(&id))
                    .set(terminal_sessions::dispose_requested_at.eq(now))
                    .returning((terminal_sessions::id, terminal_sessions::host_id))
                    .get_results(conn)?;
                Ok(Some((workspace, stamped)))
            })
        })
        .await
    }

    /// Records a new session row.
    ///
    /// It runs in the same transaction as the check that its workspace
    /// exists and is open. So a concurrent close either sees and stamps the
    /// row or refuses it.
    pub async fn insert_session(&self, mut row: SessionRow) -> Result<Insert> {
        row.host_id = self.host.to_string();
        self.run("recording a session", move |conn| {
            conn.write_transaction(|conn| {
                let closed_at: Option<Option<i64>> = workspaces::table
                    .find(&row.workspace_id)
                    .select(workspaces::closed_at)
                    .first(conn)
                    .optional()?;
                match closed_at {
                    None => Ok(Insert::NoWorkspace),
                    Some(Some(_)) => Ok(Insert::WorkspaceClosed),
                    Some(None) => diesel::insert_into(terminal_sessions::table)
                        .values(&row)
                        .execute(conn)
                        .map(|_| Insert::Done),
                }
            })
        })
        .await
    }

    /// Removes the row of a session that never started.
    pub async fn delete_session(&self, id: &str) -> Result<()> {
        let id = id.to_owned();
        self.run("removing a session that failed to start", move |conn| {
            diesel::delete(terminal_sessions::table.find(id))
                .execute(conn)
                .map(|_| ())
        })
        .await
    }

    /// The session row with this id.
    pub async fn session(&self, id: &str) -> Result<Option<SessionRow>> {
        let id = id.to_owned();
        self.run("reading a session", move |conn| {
            terminal_sessions::table
                .find(id)
                .select(SessionRow::as_select())
                .first(conn)
                .optional()
        })
        .await
    }

    /// The workspace's rows that may be listed: active, listed, unstamped.
    pub async fn listable_sessions(&self, workspace_id: &str) -> Result<Vec<SessionRow>> {
        let workspace_id = workspace_id.to_owned();
        let host = std::sync::Arc::clone(&self.host);
        self.run("reading listable sessions", move |conn| {
            listable(&workspace_id, &host)
                .select(SessionRow::as_select())
                .load(conn)
        })
        .await
    }

    /// Moves the end of a stamped session's grace period to `deadline`.
    ///
    /// That is now, when the disposal's kill failed (the reaper then
    /// retries it). Or it is the end of the grace the reaper's own kill
    /// gave.
    pub async fn set_dispose_deadline(&self, id: &str, deadline: i64) -> Result<()> {
        let id = id.to_owned();
        self.run("moving a disposal's deadline", move |conn| {
            diesel::update(
                terminal_sessions::table
                    .find(&id)
                    .filter(terminal_sessions::dispose_requested_at.is_not_null()),
            )
            .set(terminal_sessions::dispose_deadline.eq(deadline))
            .execute(conn)
            .map(drop)
        })
        .await
    }

    /// The rows whose state may still change, for the reaper and a dead
    /// daemon.
    ///
    /// They are active ones, and ended ones stamped for disposal (they
    /// become disposed). An ended row without a stamp is settled for good.
    /// Reading those too would cost every reaper pass a write transaction
    /// per session ever ended.
    pub async fn unsettled_sessions(&self) -> Result<Vec<SessionRow>> {
        let host = std::sync::Arc::clone(&self.host);
        self.run("reading unsettled sessions", move |conn| {
            unsettled(&host).select(SessionRow::as_select()).load(conn)
        })
        .await
    }

    /// Stamps a session for disposal, with the end of its `grace` period.
    ///
    /// The first stamp wins. Returns the stamp in force, or `None` if this
    /// host has no such session.
    pub async fn stamp_dispose(
        &self,
        id: &str,
        now: i64,
        signal: i32,
        grace: Duration,
    ) -> Result<Option<i64>> {
        let id = id.to_owned();
        let host = std::sync::Arc::clone(&self.host);
        let deadline = now.saturating_add(duration_micros(grace));
        let grace_ms = i32::try_from(grace.as_millis()).unwrap_or(i32::MAX);
        self.run("stamping a session for disposal", move |conn| {
            conn.write_transaction(|conn| {
                let ours = terminal_sessions::table
                    .find(&id)
                    .filter(terminal_sessions::host_id.eq(&*host));
                diesel::update(ours.filter(terminal_sessions::dispose_requested_at.is_null()))
                    .set((
                        terminal_sessions::dispose_requested_at.eq(now),
                        terminal_sessions::dispose_signal.eq(signal),
                        terminal_sessions::dispose_grace_ms.eq(grace_ms),
                        terminal_sessions::dispose_deadline.eq(deadline),
                    ))
                    .execute(conn)?;
                ours.select(terminal_sessions::dispose_requested_at)
                    .first::<Option<i64>>(conn)
                    .optional()
                    .map(Option::flatten)
            })
        })
        .await
    }

    /// Records that a session's program ended.
    ///
    /// The row becomes `exited`, or `disposed` if it was stamped. Returns
    /// whether the row changed.
    pub async fn record_ending(&self, id: &str, ending: Ending) -> Result<bool> {
        let id = id.to_owned();
        self.run("recording a session's end", move |conn| {
            conn.write_transaction(|conn| {
                let current: Option<(String, Option<i64>)> = terminal_sessions::table
                    .find(&id)
                    .select((
                        terminal_sessions::status,
                        terminal_sessions::dispose_requested_at,
                    ))
                    .first(conn)
                    .optional()?;
                let changed = match current.map(|(status, stamp)| (Status::parse(&status), stamp)) {
                    None | Some((Status::Disposed, _)) => 0,
                    // Already ended: only the disposal is new.
                    Some((Status::Exited, stamp)) => {
                        if stamp.is_none() {
                            return Ok(false);
                        }
                        diesel::update(terminal_sessions::table.find(&id))
                            .set(terminal_sessions::status.eq(Status::Disposed.as_str()))
                            .execute(conn)?
                    }
                    Some((Status::Active, stamp)) => {
                        let status = if stamp.is_some() {
                            Status::Disposed
                        } else {
                            Status::Exited
                        };
                        diesel::update(terminal_sessions::table.find(&id))
                            .set((
                                terminal_sessions::status.eq(status.as_str()),
                                terminal_sessions::ended_at.eq(ending.ended_at),
                                terminal_sessions::exit_code.eq(ending.exit_code),
                                terminal_sessions::exit_signal.eq(ending.exit_signal),
                            ))
                            .execute(conn)?
                    }
                };
                Ok(changed > 0)
            })
        })
        .await
    }

    /// Judges the row of a session the daemon ran at `seen_running`, when
    /// that row is not active.
    ///
    /// A row recorded as ended before then (unstamped, in an open
    /// workspace) is made active again, its end having been recorded
    /// wrongly. One that ended since really did. Any other is condemned.
    /// See [`Revival`].
    pub async fn revive(&self, id: &str, seen_running: i64) -> Result<Revival> {
        let id = id.to_owned();
        self.run("reviving a session recorded as ended", move |conn| {
            conn.write_transaction(|conn| {
                let found: Option<(SessionRow, Option<i64>)> = terminal_sessions::table
                    .inner_join(workspaces::table)
                    .filter(terminal_sessions::id.eq(&id))
                    .select((SessionRow::as_select(), workspaces::closed_at))
                    .first(conn)
                    .optional()?;
                let Some((row, closed)) = found else {
                    return Ok(Revival::NoRow);
                };
                let ended_before = row.ended_at.is_none_or(|at| at < seen_running);
                Ok(
                    match (Status::parse(&row.status), row.dispose_requested_at, closed) {
                        (Status::Active, None, None) => Revival::Active,
                        // Its exit came after the daemon was seen running it.
                        (Status::Exited, None, None) if !ended_before => Revival::EndedSince,
                        (Status::Exited, None, None) => {
                            diesel::update(terminal_sessions::table.find(&id))
                                .set((
                                    terminal_sessions::status.eq(Status::Active.as_str()),
                                    terminal_sessions::ended_at.eq(None::<i64>),
                                    terminal_sessions::exit_code.eq(None::<i32>),
                                    terminal_sessions::exit_signal.eq(None::<i32>),
                                ))
                                .execute(conn)?;
                            Revival::Revived
                        }
                        _ => Revival::Condemned(Box::new(row)),
                    },
                )
            })
        })
        .await
    }

    /// Gives a session's row a new name (its `title` column).
    pub async fn rename(&self, id: &str, name: &str) -> Result<()> {
        let (id, name) = (id.to_owned(), name.to_owned());
        self.run("renaming a session", move |conn| {
            diesel::update(terminal_sessions::table.find(id))
                .set(terminal_sessions::title.eq(name))
                .execute(conn)
                .map(|_| ())
        })
        .await
    }

    /// Notes that a client attached now.
    pub async fn touch_attached(&self, id: &str, now: i64) -> Result<()> {
        let id = id.to_owned();
        self.run("recording an attach", move |conn| {
            diesel::update(terminal_sessions::table.find(id))
                .set(terminal_sessions::last_attached_at.eq(now))
                .execute(conn)
                .map(|_| ())
        })
        .await
    }
}

/// What [`Store::revive`] made of a row.
#[derive(Debug, Clone)]
pub enum Revival {
    /// It is active again.
    ///
    /// It was recorded as ended while its program ran. For example, a spawn
    /// that registered after a pass missed it.
    Revived,
    /// It is active already.
    Active,
    /// Its program exited after the daemon was seen running it.
    ///
    /// The row is right.
    EndedSince,
    /// Disposed, stamped for it, or in a closed workspace.
    ///
    /// The program must end, as the row (its disposal's signal and grace)
    /// says.
    Condemned(Box<SessionRow>),
    /// There is no such row.
    NoRow,
}

/// Makes the SQLite file at `path` ourselves, so it is 0600 from the
/// start (SQLite gives its -wal and -shm files the same mode), in a 0700
/// directory.
fn make_file(path: &std::path::Path) -> std::result::Result<(), String> {
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|error| format!("creating {}: {error}", dir.display()))?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
        .map(drop)
        .map_err(|error| error.to_string())
}

#[cfg(test)]
#[path = "../../../tests/support/postgres.rs"]
mod fresh_postgres;

#[cfg(test)]
mod tests;
