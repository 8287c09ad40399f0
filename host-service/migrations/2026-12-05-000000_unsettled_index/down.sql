DROP INDEX terminal_sessions_unsettled;
CREATE INDEX terminal_sessions_live ON terminal_sessions (workspace_id)
    WHERE status = 'active' AND listed AND dispose_requested_at IS NULL;
CREATE INDEX terminal_sessions_unsettled ON terminal_sessions (status)
    WHERE status <> 'disposed';
