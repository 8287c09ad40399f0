//! One session as `GetSession` describes it: its row (what it was started
//! with, and its end once recorded) joined with what the daemon says of it
//! now, which is fresher while it knows the session.

use holdfast::proto::daemon::v1 as daemon;
use holdfast::proto::host::v1 as pb;

use crate::store::{self, SessionRow};

/// The session of `row`, as the daemon reports it (`None`: it no longer
/// knows it: forgotten after its exit, or lost with a daemon that died),
/// with `attached` from this process's memory.
pub fn describe(row: SessionRow, now: Option<daemon::Session>, attached: bool) -> pb::Session {
    let argv = serde_json::from_str(&row.argv).unwrap_or_default();
    let created_at = Some(store::from_micros(row.created_at).into());
    let recorded_end = row
        .ended_at
        .map(|at| prost_types::Timestamp::from(store::from_micros(at)));
    let Some(now) = now else {
        return pb::Session {
            session_id: row.id,
            workspace_id: row.workspace_id,
            title: row.title,
            attached,
            alive: false,
            exit_code: row.exit_code,
            signal: row.exit_signal,
            created_at,
            argv,
            cwd: row.cwd,
            ended_at: recorded_end,
            ..Default::default()
        };
    };
    pb::Session {
        session_id: row.id,
        workspace_id: row.workspace_id,
        // The program's own title, once it set one.
        title: if now.title.is_empty() {
            row.title
        } else {
            now.title
        },
        attached,
        alive: now.alive,
        exit_code: now.exit_code,
        signal: now.signal,
        pid: now.pid,
        cols: now.cols,
        rows: now.rows,
        created_at,
        output_offset: now.output_offset,
        argv,
        cwd: row.cwd,
        ended_at: if now.alive {
            None
        } else {
            now.exited_at.or(recorded_end)
        },
    }
}
