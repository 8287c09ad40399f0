//! A PostgreSQL database of a test's own, made on the local server and
//! dropped with the value.
//!
//! The server is `HOLDFAST_TEST_POSTGRES` (a libpq URL of a database to
//! connect to while making others), by default the local one with trust
//! auth. Where it cannot be reached, a test skips with a printed reason;
//! under CI (`CI` set, as `.ci/run` sets it) it fails instead.

use diesel::connection::SimpleConnection;
use diesel::{Connection, PgConnection};

/// The server tests make their databases on, unless told another.
const LOCAL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// The password the URLs of test databases carry (trust auth ignores it),
/// so that a test can check it is shown nowhere.
pub const PASSWORD: &str = "never-shown-9f2c";

/// A fresh, empty database.
pub struct FreshPostgres {
    server: String,
    name: String,
}

impl FreshPostgres {
    /// A new database, or `None` (with the reason printed) where no server
    /// answers and the test may skip.
    pub fn create() -> Option<Self> {
        let server = std::env::var("HOLDFAST_TEST_POSTGRES").unwrap_or_else(|_| LOCAL.to_owned());
        let mut admin = match PgConnection::establish(&server) {
            Ok(admin) => admin,
            Err(error) if std::env::var_os("CI").is_some() => {
                panic!("PostgreSQL is required under CI and does not answer at {server}: {error}")
            }
            Err(error) => {
                eprintln!("skipped: no PostgreSQL at {server} ({error})");
                return None;
            }
        };
        let name = format!("holdfast_test_{}", uuid::Uuid::new_v4().simple());
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .expect("create the test database");
        Some(Self { server, name })
    }

    /// The database's URL, with [`PASSWORD`] in it unless the server's
    /// URL has a password of its own.
    pub fn url(&self) -> String {
        let (base, _) = self
            .server
            .rsplit_once('/')
            .expect("a server URL names a database");
        let base = match base.split_once("://") {
            Some((scheme, rest))
                if rest.contains('@') && !rest.split('@').next().unwrap_or("").contains(':') =>
            {
                let (user, host) = rest.split_once('@').expect("a user");
                format!("{scheme}://{user}:{PASSWORD}@{host}")
            }
            _ => base.to_owned(),
        };
        format!("{base}/{}", self.name)
    }
}

impl Drop for FreshPostgres {
    fn drop(&mut self) {
        if let Ok(mut admin) = PgConnection::establish(&self.server) {
            let _ = admin.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}
