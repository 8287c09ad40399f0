ALTER TABLE terminal_sessions DROP COLUMN dispose_deadline;
ALTER TABLE terminal_sessions DROP COLUMN dispose_grace_ms;
ALTER TABLE terminal_sessions DROP COLUMN dispose_signal;
