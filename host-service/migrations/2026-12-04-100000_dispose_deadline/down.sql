ALTER TABLE terminal_sessions DROP COLUMN dispose_deadline;
