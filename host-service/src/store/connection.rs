//! A connection to either backend, and the pool's way of making and
//! checking them.

use deadpool::managed::{self, Metrics, RecycleError, RecycleResult};
use deadpool_sync::SyncWrapper;
use diesel::connection::{Connection, TransactionManager};
use diesel::prelude::*;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness};

use crate::store::database::Database;

/// A connection to SQLite or PostgreSQL: every query is written once.
#[derive(diesel::MultiConnection)]
pub enum AnyConnection {
    /// PostgreSQL, through libpq.
    Postgresql(diesel::PgConnection),
    /// SQLite, compiled in.
    Sqlite(diesel::SqliteConnection),
}

/// The key of the PostgreSQL advisory lock that writes take ("hold").
const WRITE_LOCK: i64 = 0x686f_6c64;

impl AnyConnection {
    /// Runs the pending migrations. On PostgreSQL one host at a time:
    /// hosts started together on a new database would otherwise race to
    /// create the same tables, and all but one fail to start.
    pub fn migrate(&mut self, migrations: EmbeddedMigrations) -> QueryResult<()> {
        let run = |conn: &mut Self| {
            conn.run_pending_migrations(migrations)
                .map(|_| ())
                .map_err(diesel::result::Error::QueryBuilderError)
        };
        if !matches!(self, Self::Postgresql(_)) {
            return run(self);
        }
        diesel::select(pg_advisory_lock(MIGRATION_LOCK)).execute(self)?;
        let ran = run(self);
        let unlocked = diesel::select(pg_advisory_unlock(MIGRATION_LOCK)).execute(self);
        ran.and(unlocked.map(|_| ()))
    }

    /// Runs `work` in a transaction that holds the database's write lock
    /// from its first statement, committing if it succeeds.
    ///
    /// Writes read, decide, then write. On SQLite, `BEGIN IMMEDIATE` takes
    /// the one writer's lock at once, so two such transactions queue
    /// (busy timeout) instead of one failing when it starts to write. On
    /// PostgreSQL a transaction-scoped advisory lock does the same, for
    /// every host sharing the database: the store's writes are few and
    /// short, and each then sees the rows as the last one left them.
    pub fn write_transaction<T, F>(&mut self, work: F) -> QueryResult<T>
    where
        F: FnOnce(&mut Self) -> QueryResult<T>,
    {
        use diesel::connection::AnsiTransactionManager;
        match self {
            Self::Sqlite(conn) => {
                AnsiTransactionManager::begin_transaction_sql(conn, "BEGIN IMMEDIATE")?;
            }
            Self::Postgresql(conn) => {
                AnsiTransactionManager::begin_transaction(conn)?;
                let locked = diesel::select(pg_advisory_xact_lock(WRITE_LOCK)).execute(conn);
                if let Err(error) = locked {
                    let _ = AnsiTransactionManager::rollback_transaction(conn);
                    return Err(error);
                }
            }
        }
        let done = work(self);
        let ended = match (self, &done) {
            (Self::Sqlite(conn), Ok(_)) => AnsiTransactionManager::commit_transaction(conn),
            (Self::Postgresql(conn), Ok(_)) => AnsiTransactionManager::commit_transaction(conn),
            (Self::Sqlite(conn), Err(_)) => AnsiTransactionManager::rollback_transaction(conn),
            (Self::Postgresql(conn), Err(_)) => AnsiTransactionManager::rollback_transaction(conn),
        };
        let value = done?;
        ended.map(|()| value)
    }
}

diesel::define_sql_function! {
    /// PostgreSQL's lock held until the transaction ends.
    fn pg_advisory_xact_lock(key: diesel::sql_types::BigInt);
}

diesel::define_sql_function! {
    /// PostgreSQL's lock held until it is let go (or the session ends).
    fn pg_advisory_lock(key: diesel::sql_types::BigInt);
}

diesel::define_sql_function! {
    /// Lets go of a `pg_advisory_lock`.
    fn pg_advisory_unlock(key: diesel::sql_types::BigInt) -> diesel::sql_types::Bool;
}

/// The key of the PostgreSQL advisory lock migrations run under ("hfmg").
const MIGRATION_LOCK: i64 = 0x6866_6d67;

/// A pooled connection, used on a blocking thread of its own.
pub type Pooled = SyncWrapper<AnyConnection>;

/// Makes the pool's connections to one database.
pub struct Connector {
    database: Database,
}

impl Connector {
    /// Connections to `database`.
    pub fn new(database: Database) -> Self {
        Self { database }
    }
}

impl managed::Manager for Connector {
    type Type = Pooled;
    type Error = diesel::ConnectionError;

    async fn create(&self) -> Result<Pooled, Self::Error> {
        let database = self.database.clone();
        SyncWrapper::new(deadpool::Runtime::Tokio1, move || database.connect()).await
    }

    /// A connection goes back into use only if it still answers and holds
    /// no transaction: a PostgreSQL server that restarted leaves every
    /// connection broken, and each is replaced, not handed out.
    async fn recycle(&self, pooled: &mut Pooled, _: &Metrics) -> RecycleResult<Self::Error> {
        if pooled.is_mutex_poisoned() {
            return Err(RecycleError::message("a query panicked on this connection"));
        }
        pooled
            .interact(|conn| {
                if <AnyConnection as Connection>::TransactionManager::is_broken_transaction_manager(
                    conn,
                ) {
                    return Err("a transaction was left open".to_owned());
                }
                diesel::select(1.into_sql::<diesel::sql_types::Integer>())
                    .execute(conn)
                    .map(drop)
                    .map_err(|error| error.to_string())
            })
            .await
            .map_err(|error| RecycleError::message(error.to_string()))?
            .map_err(RecycleError::message)
    }
}
