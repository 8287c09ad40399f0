-- When a disposal's grace period ends: the daemon sends SIGKILL then, and
-- the reaper leaves the session to it until shortly after. NULL (rows
-- stamped before this column, or by closing their workspace) means the
-- default grace after the stamp.
ALTER TABLE terminal_sessions ADD COLUMN dispose_deadline BIGINT;
