-- ListWorkspaces reads workspaces oldest first, a page at a time from
-- where the last page ended: an index in that order, so a page starts
-- where it should instead of after a scan and sort of every workspace.
CREATE INDEX workspaces_by_age ON workspaces (created_at, id);
