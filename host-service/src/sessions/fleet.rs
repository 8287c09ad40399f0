//! Lists and counts of every host sharing the database (`SCOPE_ALL_HOSTS`).
//!
//! This host answers for its own sessions with the derived function, as
//! ever. Each other host answers for its own, asked in parallel under the
//! same deadline, as a client would ask it. A host that does not answer in
//! time is named, and its sessions are shown from their rows, unconfirmed:
//! never as alive, for nobody has said they are.

use holdfast_api::proto::host::v1 as pb;
use holdfast_api::proto::host::v1::terminal_service_client::TerminalServiceClient;
use tokio::time::Instant;
use tonic::transport::Channel;

use crate::store::{self, HostRow, SessionRow, Store};
use crate::this_host::HostIdentity;

/// How this host reaches the others.
#[derive(Clone)]
pub struct Fleet {
    store: Store,
    me: HostIdentity,
    /// The bearer token every host requires, when one does.
    token: Option<String>,
    /// A connection to each other host, by address, made once and kept:
    /// a handshake per list would cost more than the list.
    channels: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, Channel>>>,
}

/// What the other hosts answered.
pub struct Others {
    /// Their sessions: confirmed if their host answered.
    pub sessions: Vec<pb::Session>,
    /// How each answered.
    pub hosts: Vec<pb::HostAnswer>,
}

impl Fleet {
    /// Reaching the hosts that share `store`'s database, as `me`.
    pub fn new(store: Store, me: HostIdentity, token: Option<String>) -> Self {
        Self {
            store,
            me,
            token,
            channels: Default::default(),
        }
    }

    /// This host's id and name, to mark its own sessions with.
    pub fn me(&self) -> &HostIdentity {
        &self.me
    }

    /// Every other host's sessions of `workspace_id`, by `until`.
    pub async fn others(&self, workspace_id: &str, until: Instant) -> Others {
        let hosts = match tokio::time::timeout_at(until, self.store.hosts()).await {
            Ok(Ok(hosts)) => hosts,
            Ok(Err(error)) => {
                tracing::warn!(%error, "the hosts could not be read; listing this one only");
                Vec::new()
            }
            Err(_) => Vec::new(),
        };
        let asked = hosts
            .into_iter()
            .filter(|host| host.id != self.me.id)
            .map(|host| self.ask(host, workspace_id, until));
        let mut others = Others {
            sessions: Vec::new(),
            hosts: Vec::new(),
        };
        for (answer, sessions) in futures_util::future::join_all(asked).await {
            others.hosts.push(answer);
            others.sessions.extend(sessions);
        }
        others
    }

    /// `host`'s answer for `workspace_id`, or its rows, unconfirmed.
    async fn ask(
        &self,
        host: HostRow,
        workspace_id: &str,
        until: Instant,
    ) -> (pb::HostAnswer, Vec<pb::Session>) {
        let mut answer = pb::HostAnswer {
            host_id: host.id.clone(),
            host_name: host.name.clone(),
            address: host.address.clone(),
            answered: false,
            reason: String::new(),
        };
        let asked = tokio::time::timeout_at(until, self.list_of(&host, workspace_id)).await;
        let reason = match asked {
            Ok(Ok(mut sessions)) => {
                for session in &mut sessions {
                    session.host_id = host.id.clone();
                    session.host_name = host.name.clone();
                }
                answer.answered = true;
                return (answer, sessions);
            }
            Ok(Err(reason)) => reason,
            Err(_) => "it did not answer within the deadline".to_owned(),
        };
        tracing::debug!(host = %host.name, %reason, "a host did not answer; its sessions from their rows");
        answer.reason = reason;
        let rows = self
            .store
            .for_host(&host.id)
            .listable_sessions(workspace_id)
            .await
            .unwrap_or_default();
        let sessions = rows.iter().map(|row| unconfirmed(row, &host)).collect();
        (answer, sessions)
    }

    /// `host`'s own list of `workspace_id`.
    async fn list_of(
        &self,
        host: &HostRow,
        workspace_id: &str,
    ) -> Result<Vec<pb::Session>, String> {
        if host.address.is_empty() {
            return Err("it never said where it is reached".to_owned());
        }
        let channel = self.channel(&host.address)?;
        let mut request = tonic::Request::new(pb::ListSessionsRequest {
            workspace_id: workspace_id.to_owned(),
            scope: pb::Scope::ThisHost.into(),
            ..Default::default()
        });
        if let Some(token) = &self.token
            && let Ok(value) = format!("Bearer {token}").parse()
        {
            request.metadata_mut().insert("authorization", value);
        }
        let list = TerminalServiceClient::new(channel)
            .list_sessions(request)
            .await
            .map_err(|status| format!("it refused: {}", status.message()))?
            .into_inner();
        if list.source() != pb::Source::Complete {
            return Err(format!(
                "its own list is memory-only: {}",
                list.degraded_reason
            ));
        }
        Ok(list.sessions)
    }
}

impl Fleet {
    /// The kept connection to `address`, made (lazily) if there is none.
    fn channel(&self, address: &str) -> Result<Channel, String> {
        let mut channels = self
            .channels
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(channel) = channels.get(address) {
            return Ok(channel.clone());
        }
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{address}"))
            .map_err(|error| format!("its address {address:?}: {error}"))?
            .connect_lazy();
        channels.insert(address.to_owned(), channel.clone());
        Ok(channel)
    }
}

/// `row`'s session as its row last recorded it: not known to be alive.
fn unconfirmed(row: &SessionRow, host: &HostRow) -> pb::Session {
    pb::Session {
        session_id: row.id.clone(),
        workspace_id: row.workspace_id.clone(),
        name: row.title.clone(),
        title: row.title.clone(),
        alive: false,
        created_at: Some(store::from_micros(row.created_at).into()),
        host_id: host.id.clone(),
        host_name: host.name.clone(),
        unconfirmed: true,
        ..Default::default()
    }
}

/// This host's own sessions, marked as its.
pub fn mark_own(sessions: &mut [pb::Session], me: &HostIdentity) {
    for session in sessions {
        session.host_id = me.id.clone();
        session.host_name = me.name.clone();
    }
}
