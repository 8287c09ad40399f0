DROP INDEX workspaces_by_age;
