//! One session as `GetSession` describes it, and as lists show it.
//!
//! Its row (what it was started with, and its end once recorded) is joined
//! with what the daemon says of it now. That is fresher while the daemon
//! knows the session.

use holdfast_api::proto::daemon::v1 as daemon;
use holdfast_api::proto::host::v1 as pb;

use crate::sessions::live_sessions::{LiveSession, pick_title};
use crate::store::{self, SessionRow};
use crate::this_host::HostIdentity;

/// The session of `row`, as the daemon reports it, with the title and
/// `attached` this process's memory holds of it, as lists show them.
///
/// `now` is `None` when the daemon no longer knows the session. It was
/// forgotten after its exit, or lost with a daemon that died. Or the
/// daemon is down and the row holds its end.
pub fn describe(
    row: SessionRow,
    now: Option<daemon::Session>,
    remembered_title: Option<String>,
    attached: bool,
) -> pb::Session {
    let argv = serde_json::from_str(&row.argv).unwrap_or_default();
    let created_at = Some(store::from_micros(row.created_at).into());
    // Times to the microsecond, as rows keep them. So a session's end
    // reads the same before and after the daemon forgets it.
    let to_micros = |at: std::time::SystemTime| store::from_micros(store::micros(at)).into();
    let recorded_end = row.ended_at.map(|at| store::from_micros(at).into());
    let known = remembered_title.unwrap_or_else(|| row.title.clone());
    let Some(now) = now else {
        return pb::Session {
            session_id: row.id,
            workspace_id: row.workspace_id,
            title: known,
            name: row.title,
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
        title: pick_title(&now.title, &known),
        name: row.title,
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
            recorded_end.or_else(|| {
                now.exited_at
                    .and_then(|at| std::time::SystemTime::try_from(at).ok())
                    .map(to_micros)
            })
        },
        ..Default::default()
    }
}

/// `session` on host `me`, as lists show it, but for its output offset.
pub fn listed(session: &LiveSession, me: &HostIdentity) -> pb::Session {
    pb::Session {
        session_id: session.session_id.clone(),
        workspace_id: session.workspace_id.clone(),
        title: session.title.clone(),
        name: session.name.clone(),
        attached: session.attached,
        alive: true,
        exit_code: None,
        signal: None,
        pid: session.pid,
        cols: session.cols,
        rows: session.rows,
        created_at: Some(session.created_at.into()),
        host_id: me.id.clone(),
        host_name: me.name.clone(),
        ..Default::default()
    }
}
