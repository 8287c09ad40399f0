-- How a session stamped for disposal is to be ended: the signal sent first
-- (the daemon's Signal number; NULL: SIGHUP), the grace period before
-- SIGKILL (NULL: the default), and when that grace ends. Until then the
-- reaper leaves the session to the daemon; past it, the reaper ends it
-- the same way. NULL throughout for rows stamped before these columns,
-- or by closing their workspace: the defaults, from the stamp.
ALTER TABLE terminal_sessions ADD COLUMN dispose_signal INTEGER;
ALTER TABLE terminal_sessions ADD COLUMN dispose_grace_ms INTEGER;
ALTER TABLE terminal_sessions ADD COLUMN dispose_deadline BIGINT;
