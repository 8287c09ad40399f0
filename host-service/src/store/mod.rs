//! The session store: workspaces and session rows in SQLite through diesel.
//!
//! Every call runs on the pool's blocking threads, never on an async worker.

pub mod known_workspaces;
pub mod schema;

use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use deadpool_diesel::sqlite::{Manager, Pool, Runtime};
use diesel::prelude::*;
use diesel::sqlite::SqliteConnection;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

use crate::store::schema::{terminal_sessions, workspaces};

const MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations");

/// Connections in the pool.
///
/// SQLite serialises writers, so a few suffice.
const POOL_SIZE: usize = 4;

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
    #[error("database unavailable while {operation}: {reason}")]
    Pool {
        /// What the store was doing.
        operation: &'static str,
        /// The pool's error.
        reason: String,
    },
    /// Opening or preparing the database failed.
    #[error("cannot open the database at {path}: {reason}")]
    Open {
        /// The database file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
}

impl StoreError {
    /// Whether trying again later may succeed.
    ///
    /// It may when the database was locked (by another process, past the
    /// busy timeout) or no connection could be had.
    pub fn is_transient(&self) -> bool {
        use diesel::result::Error::DatabaseError;
        match self {
            Self::Pool { .. } => true,
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
    pool: Pool,
}

impl Store {
    /// Opens the SQLite file at `path`, and runs pending migrations.
    ///
    /// It creates the file if need be, 0600 in a 0700 directory.
    pub async fn open(path: &Path) -> Result<Self> {
        let open_error = |reason: String| StoreError::Open {
            path: path.to_path_buf(),
            reason,
        };
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|error| open_error(format!("creating {}: {error}", dir.display())))?;
        }
        // Create the file ourselves so it is 0600 from the start. SQLite
        // gives its -wal and -shm files the same mode.
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(path)
            .map_err(|error| open_error(error.to_string()))?;
        let url = path
            .to_str()
            .ok_or_else(|| open_error("the path is not UTF-8".into()))?;
        let manager = Manager::new(url, Runtime::Tokio1);
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .post_create(deadpool_diesel::sqlite::Hook::async_fn(|object, _| {
                Box::pin(async move {
                    object
                        .interact(configure_connection)
                        .await
                        .map_err(|error| {
                            deadpool_diesel::sqlite::HookError::message(error.to_string())
                        })?
                        .map_err(|error| {
                            deadpool_diesel::sqlite::HookError::message(error.to_string())
                        })
                })
            }))
            .build()
            .map_err(|error| open_error(error.to_string()))?;
        let store = Self { pool };
        store
            .run("running migrations", |conn| {
                conn.run_pending_migrations(MIGRATIONS)
                    .map(|_| ())
                    .map_err(diesel::result::Error::QueryBuilderError)
            })
            .await
            .map_err(|error| open_error(error.to_string()))?;
        Ok(store)
    }

    /// Runs `work` on a pooled connection on a blocking thread.
    async fn run<T, F>(&self, operation: &'static str, work: F) -> Result<T>
    where
        F: FnOnce(&mut SqliteConnection) -> QueryResult<T> + Send + 'static,
        T: Send + 'static,
    {
        let pool_error = |reason: String| StoreError::Pool { operation, reason };
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
            conn.immediate_transaction(|conn| {
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
            let mut query = oldest_first(after, open_only);
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
    /// sessions newly stamped.
    pub async fn close_workspace(
        &self,
        id: &str,
        now: i64,
    ) -> Result<Option<(WorkspaceRow, Vec<String>)>> {
        let id = id.to_owned();
        self.run("closing a workspace", move |conn| {
            conn.immediate_transaction(|conn| {
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
                    .returning(terminal_sessions::id)
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
    pub async fn insert_session(&self, row: SessionRow) -> Result<Insert> {
        self.run("recording a session", move |conn| {
            conn.immediate_transaction(|conn| {
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
        self.run("reading listable sessions", move |conn| {
            listable(&workspace_id)
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
        self.run("reading unsettled sessions", |conn| {
            unsettled().select(SessionRow::as_select()).load(conn)
        })
        .await
    }

    /// Stamps a session for disposal, with the end of its `grace` period.
    ///
    /// The first stamp wins. Returns the stamp in force, or `None` if there
    /// is no such session.
    pub async fn stamp_dispose(
        &self,
        id: &str,
        now: i64,
        signal: i32,
        grace: Duration,
    ) -> Result<Option<i64>> {
        let id = id.to_owned();
        let deadline = now.saturating_add(duration_micros(grace));
        let grace_ms = i32::try_from(grace.as_millis()).unwrap_or(i32::MAX);
        self.run("stamping a session for disposal", move |conn| {
            conn.immediate_transaction(|conn| {
                diesel::update(
                    terminal_sessions::table
                        .find(&id)
                        .filter(terminal_sessions::dispose_requested_at.is_null()),
                )
                .set((
                    terminal_sessions::dispose_requested_at.eq(now),
                    terminal_sessions::dispose_signal.eq(signal),
                    terminal_sessions::dispose_grace_ms.eq(grace_ms),
                    terminal_sessions::dispose_deadline.eq(deadline),
                ))
                .execute(conn)?;
                terminal_sessions::table
                    .find(&id)
                    .select(terminal_sessions::dispose_requested_at)
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
            conn.immediate_transaction(|conn| {
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
            conn.immediate_transaction(|conn| {
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

/// Per-connection settings.
///
/// WAL serves concurrent readers. A busy timeout makes writers queue
/// instead of failing. Foreign keys are enforced. The busy timeout comes
/// first, because switching to WAL needs a lock. Another process holding
/// the file (a backup, an sqlite3 shell) must delay the start, not fail it.
///
/// `synchronous = NORMAL` in WAL mode survives a crash or SIGKILL of the
/// host-service with every committed row intact. Only a power loss can drop
/// the last commits, and a power loss ends every session anyway.
fn configure_connection(conn: &mut SqliteConnection) -> QueryResult<()> {
    use diesel::connection::SimpleConnection;
    conn.batch_execute(
        "PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;",
    )
}

/// The rows [`Store::listable_sessions`] reads.
///
/// They are found by status and workspace through
/// `terminal_sessions_unsettled`, which holds the active rows. SQLite uses
/// a partial index only for a query whose terms say what the index's do.
/// An index made for these rows that says `listed` does not serve this
/// query, which says `listed = ?`. Every list after a restart would then
/// read every row ever written.
fn listable(workspace_id: &str) -> queries::Listable<'_> {
    unstamped_in(workspace_id).filter(terminal_sessions::listed)
}

/// The rows [`Store::unsettled_sessions`] reads.
///
/// They are found through the index made for them
/// (`terminal_sessions_unsettled`), whose terms these are word for word.
fn unsettled() -> queries::Unsettled {
    terminal_sessions::table.filter(
        terminal_sessions::status
            .eq(Status::Active.as_str())
            .or(terminal_sessions::status
                .eq(Status::Exited.as_str())
                .and(terminal_sessions::dispose_requested_at.is_not_null())),
    )
}

/// A workspace's active rows not yet stamped for disposal, which its close
/// stamps.
///
/// They are found through the same index, by status and workspace.
fn unstamped_in(workspace_id: &str) -> queries::Unstamped<'_> {
    terminal_sessions::table
        .filter(terminal_sessions::workspace_id.eq(workspace_id))
        .filter(terminal_sessions::status.eq(Status::Active.as_str()))
        .filter(terminal_sessions::dispose_requested_at.is_null())
}

/// Workspaces oldest first, from just after `after`.
///
/// Only open ones are read if `open_only`.
fn oldest_first(
    after: Option<(i64, String)>,
    open_only: bool,
) -> workspaces::BoxedQuery<'static, diesel::sqlite::Sqlite> {
    let mut query = workspaces::table
        .order((workspaces::created_at, workspaces::id))
        .into_boxed();
    if open_only {
        query = query.filter(workspaces::closed_at.is_null());
    }
    if let Some((created_at, id)) = after {
        // `>=` on its own, so the index starts the scan there.
        query = query.filter(
            workspaces::created_at.ge(created_at).and(
                workspaces::created_at
                    .gt(created_at)
                    .or(workspaces::id.gt(id)),
            ),
        );
    }
    query
}

/// The types of the queries above.
mod queries {
    use diesel::dsl::{And, Eq, Filter, IsNotNull, IsNull, Or};

    use crate::store::schema::terminal_sessions::{
        dispose_requested_at, listed, status, table, workspace_id,
    };

    pub type Unstamped<'a> = Filter<
        Filter<Filter<table, Eq<workspace_id, &'a str>>, Eq<status, &'static str>>,
        IsNull<dispose_requested_at>,
    >;
    pub type Listable<'a> = Filter<Unstamped<'a>, listed>;
    pub type Unsettled = Filter<
        table,
        Or<
            Eq<status, &'static str>,
            And<Eq<status, &'static str>, IsNotNull<dispose_requested_at>>,
        >,
    >;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, workspace_id: &str, status: Status, stamped: bool) -> SessionRow {
        SessionRow {
            id: id.into(),
            workspace_id: workspace_id.into(),
            status: status.as_str().into(),
            listed: true,
            title: String::new(),
            argv: "[]".into(),
            cwd: "/".into(),
            created_at: 1,
            last_attached_at: None,
            ended_at: (status != Status::Active).then_some(2),
            exit_code: None,
            exit_signal: None,
            dispose_requested_at: stamped.then_some(3),
            dispose_signal: None,
            dispose_grace_ms: None,
            dispose_deadline: None,
        }
    }

    #[test]
    fn a_disposal_is_overdue_only_after_its_grace_and_settling() {
        let second = 1_000_000;
        let mut stamped = row("s", "w", Status::Active, true);
        stamped.dispose_requested_at = Some(10 * second);
        // The default grace (1 s) and the settling (2 s).
        assert!(!stamped.is_overdue(13 * second - 1));
        assert!(stamped.is_overdue(13 * second));
        stamped.dispose_deadline = Some(40 * second);
        assert!(!stamped.is_overdue(41 * second));
        assert!(stamped.is_overdue(42 * second));
        assert!(!row("u", "w", Status::Active, false).is_overdue(i64::MAX));
    }

    fn workspace(id: &str, created_at: i64) -> WorkspaceRow {
        WorkspaceRow {
            id: id.into(),
            name: id.into(),
            created_at,
            closed_at: None,
        }
    }

    /// A store on a database of its own, gone with the directory.
    async fn temporary_store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(&dir.path().join("holdfast.db"))
            .await
            .expect("open");
        (dir, store)
    }

    #[tokio::test]
    async fn only_rows_that_may_still_change_are_unsettled() {
        let (_dir, store) = temporary_store().await;
        let workspace = store
            .create_workspace(workspace("w", 1))
            .await
            .expect("workspace");
        for (id, status, stamped) in [
            ("active", Status::Active, false),
            ("active-stamped", Status::Active, true),
            ("ended", Status::Exited, false),
            ("ended-stamped", Status::Exited, true),
            ("disposed", Status::Disposed, true),
        ] {
            store
                .insert_session(row(id, &workspace.id, status, stamped))
                .await
                .expect("insert");
        }
        let mut unsettled: Vec<String> = store
            .unsettled_sessions()
            .await
            .expect("read")
            .into_iter()
            .map(|row| row.id)
            .collect();
        unsettled.sort();
        assert_eq!(unsettled, ["active", "active-stamped", "ended-stamped"]);
    }

    /// How SQLite finds the rows of `query` (binding `binds`, as text).
    async fn plan_of<Q>(store: &Store, query: Q, binds: &'static [&'static str]) -> String
    where
        Q: diesel::query_builder::QueryFragment<diesel::sqlite::Sqlite>
            + diesel::query_builder::QueryId,
    {
        #[derive(QueryableByName)]
        struct Step {
            #[diesel(sql_type = diesel::sql_types::Text)]
            detail: String,
        }
        let sql = diesel::debug_query::<diesel::sqlite::Sqlite, _>(&query).to_string();
        let sql = sql
            .split(" -- binds:")
            .next()
            .unwrap_or_default()
            .to_owned();
        store
            .run("explaining", move |conn| {
                let mut explain = diesel::sql_query(format!("EXPLAIN QUERY PLAN {sql}"))
                    .into_boxed::<diesel::sqlite::Sqlite>();
                for bind in binds {
                    explain = explain.bind::<diesel::sql_types::Text, _>(*bind);
                }
                explain.load::<Step>(conn)
            })
            .await
            .expect("explain")
            .into_iter()
            .map(|step| step.detail)
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// The reads that come back whatever the history: a list after a
    /// restart, each reaper pass, a workspace's close. None may read every
    /// row ever written.
    #[tokio::test]
    async fn reads_that_recur_go_through_their_indexes() {
        let (_dir, store) = temporary_store().await;
        let id = terminal_sessions::id;
        let searched = "SEARCH terminal_sessions USING INDEX terminal_sessions_unsettled \
                        (status=? AND workspace_id=?)";
        let plan = plan_of(&store, listable("w").select(id), &["w", "active"]).await;
        assert_eq!(plan, searched);
        let plan = plan_of(&store, unstamped_in("w").select(id), &["w", "active"]).await;
        assert_eq!(plan, searched);
        let plan = plan_of(&store, unsettled().select(id), &["active", "exited"]).await;
        assert_eq!(
            plan,
            "SCAN terminal_sessions USING INDEX terminal_sessions_unsettled"
        );
        let plan = plan_of(&store, oldest_first(None, true), &[]).await;
        assert_eq!(plan, "SCAN workspaces USING INDEX workspaces_open_by_age");
        let after = Some((1, "a".to_owned()));
        let plan = plan_of(&store, oldest_first(after.clone(), true), &["1", "1", "a"]).await;
        assert_eq!(
            plan,
            "SEARCH workspaces USING INDEX workspaces_open_by_age (created_at>?)"
        );
        let plan = plan_of(&store, oldest_first(after, false), &["1", "1", "a"]).await;
        assert_eq!(
            plan,
            "SEARCH workspaces USING INDEX workspaces_by_age (created_at>?)"
        );
    }

    /// Creation times follow the order of creation whatever the clock
    /// says.
    ///
    /// Pages go on from the last workspace given. None is skipped or
    /// repeated, and one created after a page comes on a later one.
    #[tokio::test]
    async fn workspaces_are_paged_in_the_order_they_were_made() {
        let (_dir, store) = temporary_store().await;
        let create = |id: &str, created_at: i64| {
            let row = workspace(id, created_at);
            let store = store.clone();
            async move { store.create_workspace(row).await.expect("create") }
        };
        // The same microsecond twice, then a clock set back: ids that sort
        // against the order of creation.
        assert_eq!(create("c", 100).await.created_at, 100);
        assert_eq!(create("b", 100).await.created_at, 101);
        assert_eq!(create("a", 50).await.created_at, 102);
        let page = |after: Option<(i64, String)>| {
            let store = store.clone();
            async move {
                let rows = store
                    .list_workspaces(after, Some(2), false)
                    .await
                    .expect("page");
                rows.into_iter()
                    .map(|row| (row.created_at, row.id))
                    .collect::<Vec<_>>()
            }
        };
        let first = page(None).await;
        assert_eq!(first, [(100, "c".into()), (101, "b".into())]);
        // Made after the first page, its clock earlier than every other.
        create("0", 1).await;
        let second = page(first.last().cloned()).await;
        assert_eq!(second, [(102, "a".into()), (103, "0".into())]);
        assert_eq!(page(second.last().cloned()).await, []);
    }
}
