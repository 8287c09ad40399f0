-- Several host-services may share one database (PostgreSQL). Each has a
-- row here, kept fresh by its heartbeat, and owns the session rows that
-- name it: only its own are joined with its daemon, reaped, or ended when
-- its daemon dies. Rows from before hosts existed have an empty host_id
-- until the first host-service to start claims them.
CREATE TABLE hosts (
    id TEXT PRIMARY KEY NOT NULL,
    name TEXT NOT NULL,
    -- Where clients and other hosts reach its gRPC port.
    address TEXT NOT NULL DEFAULT '',
    -- Microseconds since the Unix epoch, as every timestamp here.
    started_at BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL
);

ALTER TABLE terminal_sessions ADD COLUMN host_id TEXT NOT NULL DEFAULT '';

-- The rows that may still change, now per host as every reader asks for
-- them: by status, workspace and host.
DROP INDEX terminal_sessions_unsettled;
CREATE INDEX terminal_sessions_unsettled ON terminal_sessions (status, workspace_id, host_id)
    WHERE status = 'active' OR (status = 'exited' AND dispose_requested_at IS NOT NULL);
