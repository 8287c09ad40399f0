//! Workspaces as the command line finds them, and their live sessions.
//!
//! A workspace is named by id or by name. Commands that name none use the
//! oldest open one named `default`, made on first use.

use anyhow::{Context, bail};
use holdfast_api::proto::host::v1 as pb;

use crate::clients::{Clients, refused};

/// The workspace used when none is named.
pub(crate) const DEFAULT_WORKSPACE: &str = "default";

pub(crate) async fn create_workspace(
    clients: &mut Clients,
    name: &str,
) -> anyhow::Result<pb::Workspace> {
    clients
        .workspaces
        .create_workspace(pb::CreateWorkspaceRequest {
            name: name.to_owned(),
        })
        .await
        .map_err(refused)?
        .into_inner()
        .workspace
        .context("the host-service returned no workspace")
}

/// Every workspace, oldest first, a page at a time.
///
/// A host-service from before pages answers all at once, without a next
/// page. With `open_only`, only the open ones come. A host-service from
/// before that filter sends every one, so callers that want open ones
/// still look.
pub(crate) async fn list_workspaces(
    clients: &mut Clients,
    open_only: bool,
) -> anyhow::Result<Vec<pb::Workspace>> {
    const PAGE_SIZE: i32 = 1000;
    let mut workspaces = Vec::new();
    let mut page_token = String::new();
    loop {
        let page = clients
            .workspaces
            .list_workspaces(pb::ListWorkspacesRequest {
                page_size: PAGE_SIZE,
                page_token: page_token.clone(),
                open_only,
            })
            .await
            .map_err(refused)?
            .into_inner();
        if page.next_page_token.is_empty() {
            workspaces.extend(page.workspaces);
            return Ok(workspaces);
        }
        // Each page goes on from the last. A page that gave nothing or its
        // own token again would be answered the same for ever.
        if page.workspaces.is_empty() || page.next_page_token == page_token {
            bail!("the host-service's ListWorkspaces pages do not go forward");
        }
        workspaces.extend(page.workspaces);
        page_token = page.next_page_token;
    }
}

/// The open workspaces named `name`, oldest first as `workspaces` are.
pub(crate) fn open_named<'a>(
    workspaces: &'a [pb::Workspace],
    name: &'a str,
) -> impl Iterator<Item = &'a pb::Workspace> {
    workspaces
        .iter()
        .filter(move |w| w.name == name && w.closed_at.is_none())
}

/// A workspace by id, or the one open workspace with that name.
///
/// Open ones are looked at first. A closed one is looked at only for a
/// whole id no open one has.
pub(crate) async fn find_workspace(
    clients: &mut Clients,
    name_or_id: &str,
) -> anyhow::Result<pb::Workspace> {
    let by_id = |workspaces: &[pb::Workspace]| {
        workspaces
            .iter()
            .find(|w| w.workspace_id == name_or_id)
            .cloned()
    };
    let workspaces = list_workspaces(clients, true).await?;
    if let Some(workspace) = by_id(&workspaces) {
        return Ok(workspace);
    }
    let named: Vec<&pb::Workspace> = open_named(&workspaces, name_or_id).collect();
    match named.len() {
        0 => {
            if uuid::Uuid::try_parse(name_or_id).is_ok()
                && let Some(closed) = by_id(&list_workspaces(clients, false).await?)
            {
                return Ok(closed);
            }
            bail!(
                "no open workspace is named or has the id {name_or_id:?} (see `holdfast workspace list`)"
            )
        }
        1 => Ok(named[0].clone()),
        // The API lets two have one name. A guess could put sessions
        // where the user never looks.
        count => bail!(
            "{count} open workspaces are named {name_or_id:?} ({}): name one by its id",
            named
                .iter()
                .map(|w| w.workspace_id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The named workspace's id, or the default workspace's (made if `create`).
pub(crate) async fn workspace_or_default(
    clients: &mut Clients,
    named: Option<&str>,
    create: bool,
) -> anyhow::Result<String> {
    if let Some(name) = named {
        return Ok(find_workspace(clients, name).await?.workspace_id);
    }
    if let Some(default) = oldest_default(clients).await? {
        return Ok(default);
    }
    if !create {
        bail!(
            "there is no open {DEFAULT_WORKSPACE:?} workspace: `holdfast new` makes one (see `holdfast workspace list`)"
        );
    }
    let made = create_workspace(clients, DEFAULT_WORKSPACE)
        .await?
        .workspace_id;
    // Commands run at once on a fresh database may each make one. All
    // then use the oldest, and the others close theirs, unused. So no
    // session ends up where `holdfast ls` does not look.
    let oldest = oldest_default(clients)
        .await?
        .unwrap_or_else(|| made.clone());
    if oldest != made {
        let close = pb::CloseWorkspaceRequest {
            workspace_id: made.clone(),
        };
        if let Err(status) = clients.workspaces.close_workspace(close).await {
            tracing::debug!(%status, "closing a default workspace made twice failed");
        }
    }
    Ok(oldest)
}

/// The id of the oldest open workspace named [`DEFAULT_WORKSPACE`].
pub(crate) async fn oldest_default(clients: &mut Clients) -> anyhow::Result<Option<String>> {
    // Listed oldest first.
    let workspaces = list_workspaces(clients, true).await?;
    Ok(open_named(&workspaces, DEFAULT_WORKSPACE)
        .next()
        .map(|w| w.workspace_id.clone()))
}

/// A workspace's live sessions.
pub(crate) async fn list_sessions(
    clients: &mut Clients,
    workspace_id: String,
) -> anyhow::Result<pb::ListSessionsResponse> {
    list_sessions_of(clients, workspace_id, pb::Scope::ThisHost).await
}

/// A workspace's live sessions on the hosts `scope` covers.
pub(crate) async fn list_sessions_of(
    clients: &mut Clients,
    workspace_id: String,
    scope: pb::Scope,
) -> anyhow::Result<pb::ListSessionsResponse> {
    Ok(clients
        .terminals
        .list_sessions(pb::ListSessionsRequest {
            workspace_id,
            scope: scope.into(),
            ..Default::default()
        })
        .await
        .map_err(refused)?
        .into_inner())
}

/// Every open workspace, oldest first, with its live sessions on the
/// hosts `scope` covers.
pub(crate) async fn every_open_list(
    clients: &mut Clients,
    scope: pb::Scope,
) -> anyhow::Result<Vec<(pb::Workspace, pb::ListSessionsResponse)>> {
    let mut lists = Vec::new();
    for workspace in list_workspaces(clients, true).await? {
        if workspace.closed_at.is_none() {
            let id = workspace.workspace_id.clone();
            let list = list_sessions_of(clients, id, scope).await?;
            lists.push((workspace, list));
        }
    }
    Ok(lists)
}

/// Lists as one: their sessions in order, memory-only if any was.
pub(crate) fn merged(
    lists: impl Iterator<Item = pb::ListSessionsResponse>,
) -> pb::ListSessionsResponse {
    lists.fold(pb::ListSessionsResponse::default(), |mut all, list| {
        all.sessions.extend(list.sessions);
        all.hosts.extend(list.hosts);
        if list.source == pb::Source::MemoryOnly as i32 {
            all.source = list.source;
            all.degraded_reason = list.degraded_reason;
        }
        all
    })
}
