//! This host-service among the others that may share its database: its
//! identity, its row in `hosts`, and the heartbeat that keeps the row
//! fresh.
//!
//! The id is stable across restarts: given (`--host-id`), or made at the
//! first start and kept in the data directory. Session rows carry it, and a
//! host acts only on its own rows (`store/queries.rs`).

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::store::{self, HostRow, Store};

/// How often the host says it is alive.
pub const HEARTBEAT: Duration = Duration::from_secs(5);

/// The name of the file that keeps a made id.
const ID_FILE: &str = "host-id";

/// Who this host-service is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostIdentity {
    /// Stable across restarts; on every session row of this host.
    pub id: String,
    /// The name people know it by.
    pub name: String,
}

/// Why the identity could not be had.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// A given id that cannot name a host.
    #[error("--host-id {0:?}: 1 to 128 letters, digits, '.', '_' or '-'")]
    Malformed(String),
    /// The kept id could not be read or made.
    #[error("the host id in {path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
}

impl HostIdentity {
    /// The identity: `id` if given, else the one kept in `data_dir` (made
    /// there at the first start); `name` if given, else the machine's.
    pub fn resolve(
        id: Option<String>,
        name: Option<String>,
        data_dir: &Path,
    ) -> Result<Self, IdentityError> {
        let id = match id {
            Some(id) if well_formed(&id) => id,
            Some(id) => return Err(IdentityError::Malformed(id)),
            None => kept_id(data_dir)?,
        };
        let name = name.unwrap_or_else(|| {
            rustix::system::uname()
                .nodename()
                .to_string_lossy()
                .into_owned()
        });
        Ok(Self { id, name })
    }

    /// The row that says this host runs, reachable at `address`.
    pub fn row(&self, address: &str) -> HostRow {
        let now = store::micros(SystemTime::now());
        HostRow {
            id: self.id.clone(),
            name: self.name.clone(),
            address: address.to_owned(),
            started_at: now,
            heartbeat_at: now,
        }
    }
}

fn well_formed(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-'))
}

/// The id kept in `data_dir`, made there if there is none yet.
fn kept_id(data_dir: &Path) -> Result<String, IdentityError> {
    let path = data_dir.join(ID_FILE);
    let failed = |source| IdentityError::File {
        path: path.clone(),
        source,
    };
    match std::fs::read_to_string(&path) {
        Ok(text) if well_formed(text.trim()) => return Ok(text.trim().to_owned()),
        Ok(_) => {
            return Err(failed(std::io::Error::other(
                "it does not hold a host id; remove it to make a new one",
            )));
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(failed(error)),
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(data_dir)
        .map_err(failed)?;
    let id = uuid::Uuid::new_v4().to_string();
    // `create_new`: two first starts at once keep one id, the other's
    // write failing; it then reads the winner's.
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
    {
        Ok(mut file) => {
            writeln!(file, "{id}").map_err(failed)?;
            Ok(id)
        }
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => kept_id(data_dir),
        Err(error) => Err(failed(error)),
    }
}

/// Refreshes this host's heartbeat every [`HEARTBEAT`], for ever: run it
/// with `Background::spawn_loop`, which ends it when the service stops.
///
/// A database that is away only delays it: the next beat tries again.
pub async fn beat(store: Store) {
    let mut ticker = tokio::time::interval(HEARTBEAT);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    loop {
        ticker.tick().await;
        if let Err(error) = store.heartbeat(store::micros(SystemTime::now())).await {
            tracing::warn!(%error, "this host's heartbeat was not recorded");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_made_once_and_kept() {
        let dir = tempfile::tempdir().expect("temp dir");
        let data = dir.path().join("data");
        let first = HostIdentity::resolve(None, Some("a".into()), &data).expect("made");
        let again = HostIdentity::resolve(None, None, &data).expect("kept");
        assert_eq!(first.id, again.id);
        let given = HostIdentity::resolve(Some("box-1".into()), None, &data).expect("given");
        assert_eq!(given.id, "box-1");
        assert!(HostIdentity::resolve(Some("a b".into()), None, &data).is_err());
        assert!(HostIdentity::resolve(Some(String::new()), None, &data).is_err());
    }
}
