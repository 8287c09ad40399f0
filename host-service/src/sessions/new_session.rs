//! A session on its way in.
//!
//! It starts as a validated `CreateSession` request. It takes other forms
//! as it is created: its row, the daemon's spawn request, its entry in
//! memory and, once started, the session clients see.

use std::time::SystemTime;

use holdfast_api::proto::daemon::v1 as daemon;
use holdfast_api::proto::host::v1 as pb;

use crate::error::Result;
use crate::sessions::held_sessions::HeldSession;
use crate::sessions::live_sessions::pick_title;
use crate::store::{self, SessionRow};
use crate::validate;

/// Terminal size when a request leaves it at zero.
const DEFAULT_SIZE: (u32, u32) = (80, 24);

/// What a new session is, apart from its program (which the spawn
/// request carries).
#[derive(Debug)]
pub struct NewSession {
    pub id: String,
    pub workspace_id: String,
    title: String,
    pub listed: bool,
    cols: u32,
    rows: u32,
    created_at: SystemTime,
    /// Streamed by its creator from the start (`StartSession`).
    attached: bool,
}

impl NewSession {
    /// Validates a request and gives the session a fresh id.
    ///
    /// Returns the session with its row and the daemon's spawn request.
    pub fn validate(
        request: pb::CreateSessionRequest,
        attached: bool,
    ) -> Result<(Self, SessionRow, daemon::SpawnRequest)> {
        let workspace_id = validate::id("workspace_id", &request.workspace_id)?.to_owned();
        let or_default = |asked: u32, default: u32| if asked == 0 { default } else { asked };
        let (cols, rows) = (
            or_default(request.cols, DEFAULT_SIZE.0),
            or_default(request.rows, DEFAULT_SIZE.1),
        );
        validate::size(cols, rows)?;
        let title = request.title.unwrap_or_default();
        validate::text("title", &title, false)?;
        let new = Self {
            id: uuid::Uuid::new_v4().to_string(),
            workspace_id,
            title,
            listed: request.listed.unwrap_or(true),
            cols,
            rows,
            // To the microsecond, as the row keeps it. So a session shows
            // one creation time whether memory or its row answers.
            created_at: store::from_micros(store::micros(SystemTime::now())),
            attached,
        };
        let row = SessionRow {
            id: new.id.clone(),
            workspace_id: new.workspace_id.clone(),
            status: "active".into(),
            listed: new.listed,
            title: new.title.clone(),
            argv: serde_json::to_string(&request.argv).unwrap_or_else(|_| "[]".into()),
            cwd: request.cwd.clone(),
            created_at: store::micros(new.created_at),
            last_attached_at: attached.then(|| store::micros(new.created_at)),
            ended_at: None,
            exit_code: None,
            exit_signal: None,
            dispose_requested_at: None,
            dispose_signal: None,
            dispose_grace_ms: None,
            dispose_deadline: None,
            // The store writes its own host.
            host_id: String::new(),
        };
        let mut env = request.env;
        // Which session a program runs in, as tmux sets TMUX. So
        // `holdfast attach` in a session does not attach it to itself.
        env.insert(
            holdfast_api::proto::SESSION_ID_VARIABLE.into(),
            new.id.clone(),
        );
        let spawn = daemon::SpawnRequest {
            session_id: new.id.clone(),
            argv: request.argv,
            cwd: request.cwd,
            env,
            cols,
            rows,
        };
        Ok((new, row, spawn))
    }

    /// Its entry in memory, once its program has started.
    pub fn in_memory(&self, spawned: &daemon::Session) -> HeldSession {
        HeldSession {
            session_id: self.id.clone(),
            workspace_id: self.workspace_id.clone(),
            listed: self.listed,
            title: self.title.clone(),
            name: self.title.clone(),
            pid: spawned.pid,
            cols: self.cols,
            rows: self.rows,
            created_at: self.created_at,
            attachments: self.attached.into(),
            exit: None,
            input: Default::default(),
        }
    }

    /// The session as its creator is told of it.
    pub fn into_proto(self, spawned: daemon::Session) -> pb::Session {
        pb::Session {
            session_id: self.id,
            workspace_id: self.workspace_id,
            title: pick_title(&spawned.title, &self.title),
            name: self.title,
            attached: self.attached,
            alive: spawned.alive,
            exit_code: spawned.exit_code,
            signal: spawned.signal,
            pid: spawned.pid,
            cols: self.cols,
            rows: self.rows,
            created_at: Some(self.created_at.into()),
            output_offset: spawned.output_offset,
            ..Default::default()
        }
    }
}
