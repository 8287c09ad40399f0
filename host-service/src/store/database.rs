//! Which database the store keeps its rows in, as `--database-url` names
//! it, and how a connection to it is made.
//!
//! A path or `sqlite://PATH` is an SQLite file; `postgres://` and
//! `postgresql://` URLs are PostgreSQL. A URL is shown with its password
//! replaced, so it never reaches a log or an error.

use std::fmt;
use std::path::{Path, PathBuf};

use diesel::connection::SimpleConnection;
use diesel::{ConnectionError, ConnectionResult, PgConnection, SqliteConnection};

use crate::store::connection::AnyConnection;

/// Where the rows are kept.
#[derive(Clone, PartialEq, Eq)]
pub enum Database {
    /// An SQLite file, made if need be.
    Sqlite(PathBuf),
    /// A PostgreSQL server, by its libpq URL.
    Postgres(String),
}

/// A database URL that names no database holdfast can use.
#[derive(Debug, thiserror::Error)]
#[error("unsupported database URL {shown}: use a path, sqlite://PATH, or postgres://…")]
pub struct UnsupportedUrl {
    shown: String,
}

impl Database {
    /// The database `url` names.
    pub fn parse(url: &str) -> Result<Self, UnsupportedUrl> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Self::Postgres(url.to_owned()));
        }
        let path = url.strip_prefix("sqlite://").unwrap_or(url);
        if path.contains("://") || path.is_empty() {
            return Err(UnsupportedUrl {
                shown: redacted(url),
            });
        }
        Ok(Self::Sqlite(Path::new(path).to_path_buf()))
    }

    /// The backend's name, for messages.
    pub fn backend(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "SQLite",
            Self::Postgres(_) => "PostgreSQL",
        }
    }

    /// A new connection, set up as the store expects.
    pub fn connect(&self) -> ConnectionResult<AnyConnection> {
        match self {
            Self::Sqlite(path) => {
                let path = path.to_str().ok_or_else(|| {
                    ConnectionError::BadConnection("the database path is not UTF-8".into())
                })?;
                let mut conn = <SqliteConnection as diesel::Connection>::establish(path)?;
                configure_sqlite(&mut conn).map_err(ConnectionError::CouldntSetupConfiguration)?;
                Ok(AnyConnection::Sqlite(conn))
            }
            Self::Postgres(url) => {
                // libpq's messages name the host and user, never the
                // password; the URL itself is not in them.
                let conn = <PgConnection as diesel::Connection>::establish(url)?;
                Ok(AnyConnection::Postgresql(conn))
            }
        }
    }
}

impl fmt::Display for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sqlite(path) => write!(f, "{}", path.display()),
            Self::Postgres(url) => f.write_str(&redacted(url)),
        }
    }
}

impl fmt::Debug for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Database({self})")
    }
}

/// `url` with the password in its user part, if any, replaced by `***`.
fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let Some((userinfo, host)) = authority.rsplit_once('@') else {
        return url.to_owned();
    };
    match userinfo.split_once(':') {
        Some((user, _password)) => format!("{scheme}://{user}:***@{host}{tail}"),
        None => url.to_owned(),
    }
}

/// Per-connection settings of SQLite.
///
/// WAL serves concurrent readers. A busy timeout makes writers queue
/// instead of failing. Foreign keys are enforced. The busy timeout comes
/// first, because switching to WAL needs a lock. Another process holding
/// the file (a backup, an sqlite3 shell) must delay the start, not fail it.
///
/// `synchronous = NORMAL` in WAL mode survives a crash or SIGKILL of the
/// host-service with every committed row intact. Only a power loss can drop
/// the last commits, and a power loss ends every session anyway.
fn configure_sqlite(conn: &mut SqliteConnection) -> diesel::QueryResult<()> {
    conn.batch_execute(
        "PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_their_backend() {
        assert_eq!(
            Database::parse("/var/lib/holdfast.db").unwrap(),
            Database::Sqlite("/var/lib/holdfast.db".into())
        );
        assert_eq!(
            Database::parse("sqlite://rel/holdfast.db").unwrap(),
            Database::Sqlite("rel/holdfast.db".into())
        );
        assert!(matches!(
            Database::parse("postgresql://db.example/holdfast").unwrap(),
            Database::Postgres(_)
        ));
        assert!(Database::parse("mysql://db.example/holdfast").is_err());
        assert!(Database::parse("").is_err());
    }

    #[test]
    fn a_password_is_never_shown() {
        let database =
            Database::parse("postgres://app:s3cret@db.example:5432/holdfast?sslmode=require")
                .unwrap();
        let shown = format!("{database} {database:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(
            shown.contains("postgres://app:***@db.example:5432/holdfast?sslmode=require"),
            "{shown}"
        );
        let refused = Database::parse("mysql://app:s3cret@db.example/x").unwrap_err();
        assert!(!refused.to_string().contains("s3cret"), "{refused}");
        assert_eq!(redacted("postgres://app@db/x"), "postgres://app@db/x");
    }
}
