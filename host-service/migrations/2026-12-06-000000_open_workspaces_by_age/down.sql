DROP INDEX workspaces_open_by_age;
