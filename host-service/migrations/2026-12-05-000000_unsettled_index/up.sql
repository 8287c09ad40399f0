-- The rows whose state may still change, said as the queries ask for them:
-- SQLite uses a partial index only for a query whose terms say what the
-- index's do. The index this replaces (every row not disposed) matched no
-- query's terms, so each reaper pass and each workspace's close read every
-- row ever written; and it held every session that simply ended, which in
-- time are most rows. By status, then workspace, it also serves the list
-- of a workspace's rows after a restart (active ones, of one workspace),
-- which had an index of its own.
DROP INDEX terminal_sessions_unsettled;
DROP INDEX terminal_sessions_live;
CREATE INDEX terminal_sessions_unsettled ON terminal_sessions (status, workspace_id)
    WHERE status = 'active' OR (status = 'exited' AND dispose_requested_at IS NOT NULL);
