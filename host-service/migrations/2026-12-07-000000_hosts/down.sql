DROP INDEX terminal_sessions_unsettled;
CREATE INDEX terminal_sessions_unsettled ON terminal_sessions (status, workspace_id)
    WHERE status = 'active' OR (status = 'exited' AND dispose_requested_at IS NOT NULL);
ALTER TABLE terminal_sessions DROP COLUMN host_id;
DROP TABLE hosts;
