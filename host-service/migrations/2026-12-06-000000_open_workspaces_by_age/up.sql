-- ListWorkspaces with open_only (the CLI's every lookup of a workspace by
-- name): the open workspaces oldest first, without passing over every
-- workspace ever closed. A partial index, used by a query whose terms say
-- `closed_at IS NULL` as its WHERE does.
CREATE INDEX workspaces_open_by_age ON workspaces (created_at, id) WHERE closed_at IS NULL;
