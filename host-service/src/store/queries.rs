//! The reads the store makes again and again, each written so that its
//! index serves it (the tests ask SQLite for their plans).

use diesel::prelude::*;

use crate::store::Status;
use crate::store::schema::terminal_sessions;

/// The rows [`Store::listable_sessions`] reads.
///
/// They are found by status and workspace through
/// `terminal_sessions_unsettled`, which holds the active rows. SQLite uses
/// a partial index only for a query whose terms say what the index's do.
/// An index made for these rows that says `listed` does not serve this
/// query, which says `listed = ?`. Every list after a restart would then
/// read every row ever written. Only `host_id`'s rows: another host's
/// sessions run on another daemon.
pub fn listable<'a>(workspace_id: &'a str, host_id: &'a str) -> types::Listable<'a> {
    unstamped_in(workspace_id)
        .filter(terminal_sessions::listed)
        .filter(terminal_sessions::host_id.eq(host_id))
}

/// The rows [`Store::unsettled_sessions`] reads.
///
/// They are found through the index made for them
/// (`terminal_sessions_unsettled`), whose terms these are word for word.
/// Only `host_id`'s: a host that reaped the rows of sessions its own daemon
/// does not hold would end every other host's sessions.
pub fn unsettled(host_id: &str) -> types::Unsettled<'_> {
    terminal_sessions::table
        .filter(
            terminal_sessions::status
                .eq(Status::Active.as_str())
                .or(terminal_sessions::status
                    .eq(Status::Exited.as_str())
                    .and(terminal_sessions::dispose_requested_at.is_not_null())),
        )
        .filter(terminal_sessions::host_id.eq(host_id))
}

/// A workspace's active rows not yet stamped for disposal, which its close
/// stamps.
///
/// They are found through the same index, by status and workspace.
pub fn unstamped_in(workspace_id: &str) -> types::Unstamped<'_> {
    terminal_sessions::table
        .filter(terminal_sessions::workspace_id.eq(workspace_id))
        .filter(terminal_sessions::status.eq(Status::Active.as_str()))
        .filter(terminal_sessions::dispose_requested_at.is_null())
}

/// Workspaces oldest first, from just after `after`, as a query boxed for
/// the backend `$db`.
///
/// Only open ones are read if `open_only`. A macro rather than a function
/// generic over the backend (diesel keeps the bounds that would need
/// private), so a test can ask SQLite for the plan of the very query the
/// store runs.
macro_rules! oldest_first {
    ($db:ty, $after:expr, $open_only:expr) => {{
        let (after, open_only): (Option<(i64, String)>, bool) = ($after, $open_only);
        let mut query = workspaces::table
            .order((workspaces::created_at, workspaces::id))
            .into_boxed::<$db>();
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
    }};
}

/// The types of the queries above.
pub mod types {
    use diesel::dsl::{And, Eq, Filter, IsNotNull, IsNull, Or};

    use crate::store::schema::terminal_sessions::{
        dispose_requested_at, host_id, listed, status, table, workspace_id,
    };

    pub type Unstamped<'a> = Filter<
        Filter<Filter<table, Eq<workspace_id, &'a str>>, Eq<status, &'static str>>,
        IsNull<dispose_requested_at>,
    >;
    pub type Listable<'a> = Filter<Filter<Unstamped<'a>, listed>, Eq<host_id, &'a str>>;
    pub type Unsettled<'a> = Filter<
        Filter<
            table,
            Or<
                Eq<status, &'static str>,
                And<Eq<status, &'static str>, IsNotNull<dispose_requested_at>>,
            >,
        >,
        Eq<host_id, &'a str>,
    >;
}
