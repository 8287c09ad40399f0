//! `holdfast.host.v1.WorkspaceService`: create, list and close workspaces.
//!
//! Requests are validated here. Closing runs to its end on a task of its
//! own, so a client that gives up cannot leave a workspace half closed.

use std::time::SystemTime;

use holdfast_api::proto::host::v1 as pb;
use tonic::{Request, Response, Status};

use crate::error::Error;
use crate::grpc::api::workspace_service_server::WorkspaceService;
use crate::grpc::paging::Page;
use crate::host::{Host, workspace_to_proto};
use crate::sessions::fleet::RELAYED_HEADER;
use crate::store::{self, WorkspaceRow};
use crate::validate;

#[tonic::async_trait]
impl WorkspaceService for Host {
    async fn create_workspace(
        &self,
        request: Request<pb::CreateWorkspaceRequest>,
    ) -> Result<Response<pb::CreateWorkspaceResponse>, Status> {
        let request = request.into_inner();
        validate::text("name", &request.name, true)?;
        let row = WorkspaceRow {
            id: uuid::Uuid::new_v4().to_string(),
            name: request.name,
            created_at: store::micros(SystemTime::now()),
            closed_at: None,
        };
        let row = self
            .store
            .create_workspace(row)
            .await
            .map_err(Error::from)?;
        self.workspaces.saw(&row.id);
        tracing::info!(workspace_id = %row.id, name = %row.name, "workspace created");
        Ok(Response::new(pb::CreateWorkspaceResponse {
            workspace: Some(workspace_to_proto(row)),
        }))
    }

    async fn list_workspaces(
        &self,
        request: Request<pb::ListWorkspacesRequest>,
    ) -> Result<Response<pb::ListWorkspacesResponse>, Status> {
        let request = request.into_inner();
        let page = Page::of(request.page_size, &request.page_token)?;
        let rows = self
            .store
            .list_workspaces(page.after(), page.limit(), request.open_only)
            .await
            .map_err(Error::from)?;
        let (rows, next_page_token) = page.cut(rows);
        Ok(Response::new(pb::ListWorkspacesResponse {
            workspaces: rows.into_iter().map(workspace_to_proto).collect(),
            next_page_token,
        }))
    }

    async fn close_workspace(
        &self,
        request: Request<pb::CloseWorkspaceRequest>,
    ) -> Result<Response<pb::CloseWorkspaceResponse>, Status> {
        let relayed = request.metadata().contains_key(RELAYED_HEADER);
        let request = request.into_inner();
        let workspace_id = validate::id("workspace_id", &request.workspace_id)?.to_owned();
        let host = self.clone();
        let closed = self
            .to_completion(async move { host.close(workspace_id, relayed).await })
            .await?;
        Ok(Response::new(closed))
    }
}
