//! Lists and counts of every host sharing the database (`SCOPE_ALL_HOSTS`).
//!
//! This host answers for its own sessions with the derived function, as
//! ever. Each other host answers for its own, asked in parallel under the
//! same deadline, as a client would ask it. A host that does not answer in
//! time is named, and its sessions are shown from their rows, unconfirmed:
//! never as alive, for nobody has said they are.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use holdfast_api::codec::SliceCodec;
use holdfast_api::proto::host::v1 as pb;
use holdfast_api::proto::host::v1::workspace_service_client::WorkspaceServiceClient;
use holdfast_plumbing::preencoded::{Entries, Heads, Kept};
use prost::Message;
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
    channels: Arc<Mutex<std::collections::HashMap<String, Channel>>>,
    /// The hosts table as last read, and when: read at most once per
    /// [`HOSTS_FRESH`], not once per list.
    known: Arc<Mutex<Option<HostsRead>>>,
    /// Each other host's last list of a workspace, to ask "if still this
    /// generation" as a client does: while it stands, a host sends only
    /// its sessions' output offsets.
    held: Arc<Mutex<std::collections::HashMap<(String, String), Held>>>,
}

/// The hosts table, and when it was read.
type HostsRead = (Instant, Vec<HostRow>);

/// Another host's list of one workspace, as last sent.
struct Held {
    generation: u64,
    /// Its sessions, encoded without their output offsets.
    heads: Arc<Heads>,
}

/// How many lists of other hosts are held, at most: a fleet of hosts times
/// the workspaces being watched. Past it the held lists are dropped, and
/// the next asks fetch whole lists.
const MOST_HELD: usize = 256;

/// How long a read of the hosts table serves lists. A host that registers
/// is asked within this long; one that stops answering is named at once.
const HOSTS_FRESH: std::time::Duration = std::time::Duration::from_secs(1);

/// Marks a request one host relays to another, which must not relay it on.
pub const RELAYED_HEADER: &str = "holdfast-relayed";

/// `ListSessionsResponse.sessions`.
pub const SESSIONS_TAG: u32 = 1;
/// `Session.output_offset`.
pub const OUTPUT_OFFSET_TAG: u32 = 12;

/// Another host's `ListSessionsResponse`, its sessions kept as they came:
/// they are sent on as they are, not decoded and encoded again. Each
/// already names its host (every list does).
type Answer = Kept<pb::ListSessionsResponse, SESSIONS_TAG>;

/// The one field of a `Session` a count of every host reads.
#[derive(Clone, PartialEq, prost::Message)]
struct SessionId {
    /// `Session.session_id`.
    #[prost(string, tag = "1")]
    session_id: String,
}

/// What the other hosts answered.
#[derive(Default)]
pub struct Others {
    /// How each answered.
    pub hosts: Vec<pb::HostAnswer>,
    /// The sessions of the hosts that answered, encoded as they sent them.
    pub confirmed: Entries,
    /// The sessions of the hosts that did not, from their rows.
    pub unconfirmed: Entries,
}

impl Others {
    /// Their confirmed sessions not named in `attached`: as each host
    /// counts its own background sessions.
    pub fn background_count(&self, attached: &HashSet<&str>) -> usize {
        self.confirmed
            .messages()
            .filter_map(|bytes| SessionId::decode(bytes).ok())
            .filter(|session| !attached.contains(session.session_id.as_str()))
            .count()
    }
}

impl Fleet {
    /// Reaching the hosts that share `store`'s database, as `me`.
    pub fn new(store: Store, me: HostIdentity, token: Option<String>) -> Self {
        Self {
            store,
            me,
            token,
            channels: Default::default(),
            known: Default::default(),
            held: Default::default(),
        }
    }

    /// This host's id and name, to mark its own sessions with.
    pub fn me(&self) -> &HostIdentity {
        &self.me
    }

    /// Every other host's sessions of `workspace_id`, by `until`.
    pub async fn others(&self, workspace_id: &str, until: Instant) -> Others {
        let asked = self
            .hosts(until)
            .await
            .into_iter()
            .filter(|host| host.id != self.me.id)
            .map(|host| self.ask(host, workspace_id, until));
        let mut others = Others::default();
        for (answer, sessions) in futures_util::future::join_all(asked).await {
            let into = match answer.answered {
                true => &mut others.confirmed,
                false => &mut others.unconfirmed,
            };
            into.extend(&sessions);
            others.hosts.push(answer);
        }
        others
    }

    /// The hosts table, as read within [`HOSTS_FRESH`]; empty if it cannot
    /// be read by `until` (this host then lists its own).
    async fn hosts(&self, until: Instant) -> Vec<HostRow> {
        let known = self
            .known
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some((read, hosts)) = known
            && read.elapsed() < HOSTS_FRESH
        {
            return hosts;
        }
        let read = Instant::now();
        match tokio::time::timeout_at(until, self.store.hosts()).await {
            Ok(Ok(hosts)) => {
                let mut known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
                *known = Some((read, hosts.clone()));
                hosts
            }
            Ok(Err(error)) => {
                tracing::warn!(%error, "the hosts could not be read; listing this one only");
                Vec::new()
            }
            Err(_) => Vec::new(),
        }
    }

    /// `host`'s answer for `workspace_id`, or its rows, unconfirmed.
    async fn ask(
        &self,
        host: HostRow,
        workspace_id: &str,
        until: Instant,
    ) -> (pb::HostAnswer, Entries) {
        let mut answer = pb::HostAnswer {
            host_id: host.id.clone(),
            host_name: host.name.clone(),
            address: host.address.clone(),
            answered: false,
            reason: String::new(),
        };
        let asked = tokio::time::timeout_at(until, self.list_of(&host, workspace_id)).await;
        let reason = match asked {
            Ok(Ok(sessions)) => {
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
        let mut sessions = Entries::default();
        for row in &rows {
            sessions.push(SESSIONS_TAG, &unconfirmed(row, &host));
        }
        (answer, sessions)
    }

    /// `host`'s own list of `workspace_id`, its sessions encoded.
    async fn list_of(&self, host: &HostRow, workspace_id: &str) -> Result<Entries, String> {
        if host.address.is_empty() {
            return Err("it never said where it is reached".to_owned());
        }
        let key = (host.id.clone(), workspace_id.to_owned());
        let held = self.held_list(&key);
        let list = self
            .call(host, workspace_id, held.as_ref().map(|held| held.0))
            .await?;
        let (entries, rest) = list.into_parts();
        if rest.unchanged {
            let offsets = rest.output_offsets;
            return match held {
                Some((_, heads)) if heads.len() == offsets.len() => {
                    Ok(heads.entries(SESSIONS_TAG, OUTPUT_OFFSET_TAG, offsets))
                }
                // Not the list it was asked about: ask for the whole one.
                _ => Ok(self.call(host, workspace_id, None).await?.into_parts().0),
            };
        }
        if rest.generation != 0
            && let Some(heads) = Heads::of_entries(&entries, OUTPUT_OFFSET_TAG)
        {
            let mut lists = self.held.lock().unwrap_or_else(PoisonError::into_inner);
            if lists.len() >= MOST_HELD {
                lists.clear();
            }
            let held = Held {
                generation: rest.generation,
                heads: Arc::new(heads),
            };
            lists.insert(key, held);
        }
        Ok(entries)
    }

    /// The generation and sessions of `key`'s list as last sent, if held.
    fn held_list(&self, key: &(String, String)) -> Option<(u64, Arc<Heads>)> {
        let lists = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let held = lists.get(key)?;
        Some((held.generation, held.heads.clone()))
    }

    /// `host`'s `ListSessions` of `workspace_id`, its sessions kept
    /// encoded: only offsets if its list is still of `if_generation`.
    async fn call(
        &self,
        host: &HostRow,
        workspace_id: &str,
        if_generation: Option<u64>,
    ) -> Result<Answer, String> {
        let channel = self.channel(&host.address)?;
        let request = self.request(pb::ListSessionsRequest {
            workspace_id: workspace_id.to_owned(),
            scope: pb::Scope::ThisHost.into(),
            if_generation,
        });
        let mut grpc = tonic::client::Grpc::new(channel);
        grpc.ready()
            .await
            .map_err(|error| format!("it could not be reached: {error}"))?;
        let path =
            http::uri::PathAndQuery::from_static("/holdfast.host.v1.TerminalService/ListSessions");
        let codec = SliceCodec::<pb::ListSessionsRequest, Answer>::default();
        let list = grpc
            .unary(request, path, codec)
            .await
            .map_err(|status| format!("it refused: {}", status.message()))?
            .into_inner();
        if list.rest().source() != pb::Source::Complete {
            return Err(format!(
                "its own list is memory-only: {}",
                list.rest().degraded_reason
            ));
        }
        Ok(list)
    }
}

impl Fleet {
    /// Tells every other host that `workspace_id` is closed, by `until`, so
    /// each kills and forgets its own sessions of it now. One that is not
    /// told (down, hung) finds them stamped: its reaper kills them, and a
    /// restart never lists them.
    pub async fn close_elsewhere(&self, workspace_id: &str, until: Instant) {
        let hosts = self.hosts(until).await;
        let others: Vec<&HostRow> = hosts
            .iter()
            .filter(|host| host.id != self.me.id && !host.address.is_empty())
            .collect();
        let told = others.iter().map(|host| async move {
            let channel = self.channel(&host.address)?;
            let mut request = self.request(pb::CloseWorkspaceRequest {
                workspace_id: workspace_id.to_owned(),
            });
            request.metadata_mut().insert(
                RELAYED_HEADER,
                tonic::metadata::MetadataValue::from_static("1"),
            );
            let mut client = WorkspaceServiceClient::new(channel);
            match tokio::time::timeout_at(until, client.close_workspace(request)).await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(status)) => Err(format!("it refused: {}", status.message())),
                Err(_) => Err("it did not answer in time".to_owned()),
            }
        });
        let answers = futures_util::future::join_all(told).await;
        for (host, answer) in others.iter().zip(answers) {
            if let Err(reason) = answer {
                tracing::warn!(host = %host.name, %workspace_id, %reason, "another host was not told of a closed workspace; its reaper will end its sessions");
            }
        }
    }

    /// `message` as a request to another host, with the bearer token.
    fn request<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        if let Some(token) = &self.token
            && let Ok(value) = format!("Bearer {token}").parse()
        {
            request.metadata_mut().insert("authorization", value);
        }
        request
    }

    /// The kept connection to `address`, made (lazily) if there is none.
    fn channel(&self, address: &str) -> Result<Channel, String> {
        let mut channels = self.channels.lock().unwrap_or_else(PoisonError::into_inner);
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
