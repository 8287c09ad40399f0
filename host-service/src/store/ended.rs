//! Sessions whose programs ended on their own, as their rows keep them.

use diesel::prelude::*;

use crate::store::schema::terminal_sessions;
use crate::store::{Result, SessionRow, Status, Store};

impl Store {
    /// This host's sessions of `workspace_id` that ended on their own
    /// (never stamped for disposal), the most recently ended first; at
    /// most `limit`.
    pub async fn ended_sessions(&self, workspace_id: &str, limit: i64) -> Result<Vec<SessionRow>> {
        let workspace_id = workspace_id.to_owned();
        let host = self.host_id().to_owned();
        self.run("reading ended sessions", move |conn| {
            terminal_sessions::table
                .filter(terminal_sessions::workspace_id.eq(workspace_id))
                .filter(terminal_sessions::status.eq(Status::Exited.as_str()))
                .filter(terminal_sessions::dispose_requested_at.is_null())
                .filter(terminal_sessions::host_id.eq(host))
                .order((
                    terminal_sessions::ended_at.desc(),
                    terminal_sessions::created_at.desc(),
                ))
                .limit(limit)
                .select(SessionRow::as_select())
                .load(conn)
        })
        .await
    }
}
