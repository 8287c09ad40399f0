DROP TABLE terminal_sessions;
DROP TABLE workspaces;
