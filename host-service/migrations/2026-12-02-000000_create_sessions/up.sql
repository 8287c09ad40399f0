-- Workspaces group sessions; closing one stamps its sessions for disposal.
CREATE TABLE workspaces (
    id TEXT PRIMARY KEY NOT NULL,
    name TEXT NOT NULL,
    -- Microseconds since the Unix epoch, as every timestamp here.
    created_at BIGINT NOT NULL,
    closed_at BIGINT
);

-- One row per session ever created; the pty-daemon holds the process.
CREATE TABLE terminal_sessions (
    id TEXT PRIMARY KEY NOT NULL,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'exited', 'disposed')),
    listed BOOLEAN NOT NULL DEFAULT TRUE,
    title TEXT NOT NULL DEFAULT '',
    -- A JSON array of strings.
    argv TEXT NOT NULL DEFAULT '[]',
    cwd TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    last_attached_at BIGINT,
    ended_at BIGINT,
    exit_code INTEGER,
    exit_signal INTEGER,
    dispose_requested_at BIGINT
);

-- The derived list joins daemon sessions to a workspace's active, listed,
-- unstamped rows.
CREATE INDEX terminal_sessions_live ON terminal_sessions (workspace_id)
    WHERE status = 'active' AND listed AND dispose_requested_at IS NULL;

-- The reaper reads every row not yet settled.
CREATE INDEX terminal_sessions_unsettled ON terminal_sessions (status)
    WHERE status <> 'disposed';
