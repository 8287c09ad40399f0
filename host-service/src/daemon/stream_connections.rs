//! The connections to the daemon that carry output streams relayed to
//! clients.
//!
//! There are as many as it takes for none to carry more than
//! [`OUTPUT_STREAMS_PER_CONNECTION`]. So no number of clients that stop
//! reading can have h2 drop a connection, and every stream on it.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use holdfast_plumbing::daemon_client::{self, DaemonClient, OUTPUT_STREAMS_PER_CONNECTION};

pub struct StreamConnections {
    socket: PathBuf,
    connect_timeout: Duration,
    connections: Mutex<Vec<Connection>>,
}

struct Connection {
    client: DaemonClient,
    /// One count for the connection, one for each stream it carries.
    streams: Arc<()>,
}

/// Keeps its connection counted as carrying one more stream while held.
///
/// It goes with the stream ([`StreamSlot::held_by`]).
pub struct StreamSlot(#[expect(dead_code, reason = "held for its count")] Arc<()>);

impl StreamSlot {
    /// `stream`, keeping this slot until it is dropped.
    pub fn held_by<S: Stream>(self, stream: S) -> impl Stream<Item = S::Item> {
        stream.map(move |item| {
            let _held = &self;
            item
        })
    }
}

impl StreamConnections {
    /// No connection is made until a stream needs one.
    pub fn new(socket: PathBuf, connect_timeout: Duration) -> Self {
        Self {
            socket,
            connect_timeout,
            connections: Mutex::default(),
        }
    }

    /// A client on a connection with room for one more output stream, and
    /// the slot to keep with that stream.
    ///
    /// Of the connections no stream uses any more, one is kept for the next
    /// stream. So a host at the brink of a new connection does not open and
    /// close one for every look. The others are closed.
    pub fn client(&self) -> (DaemonClient, StreamSlot) {
        let mut connections = self
            .connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut spare = false;
        connections
            .retain(|connection| connection.carried() > 0 || !std::mem::replace(&mut spare, true));
        let room = connections
            .iter()
            .position(|connection| connection.carried() < OUTPUT_STREAMS_PER_CONNECTION);
        let connection = match room {
            Some(index) => &connections[index],
            None => {
                connections.push(Connection {
                    client: daemon_client::connect_streams_lazy(&self.socket, self.connect_timeout),
                    streams: Arc::default(),
                });
                &connections[connections.len() - 1]
            }
        };
        (
            connection.client.clone(),
            StreamSlot(Arc::clone(&connection.streams)),
        )
    }

    #[cfg(test)]
    fn open(&self) -> usize {
        self.connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl Connection {
    fn carried(&self) -> usize {
        Arc::strong_count(&self.streams) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connections() -> StreamConnections {
        // Lazy: nothing is connected to, so no daemon is needed.
        StreamConnections::new("/nonexistent/ptyd.sock".into(), Duration::from_secs(1))
    }

    #[tokio::test]
    async fn a_connection_carries_its_share_of_streams_and_no_more() {
        let connections = connections();
        let mut slots: Vec<StreamSlot> = (0..OUTPUT_STREAMS_PER_CONNECTION)
            .map(|_| connections.client().1)
            .collect();
        assert_eq!(connections.open(), 1);
        slots.push(connections.client().1);
        assert_eq!(connections.open(), 2, "one stream past the share");
        // A stream that ends makes room on the first connection again.
        slots.remove(0);
        slots.push(connections.client().1);
        assert_eq!(connections.open(), 2, "room made on the first is used");
        slots.push(connections.client().1);
        assert_eq!(connections.open(), 2, "the second has room too");
    }

    #[tokio::test]
    async fn one_unused_connection_stays_open_and_no_more() {
        let connections = connections();
        let first: Vec<StreamSlot> = (0..OUTPUT_STREAMS_PER_CONNECTION)
            .map(|_| connections.client().1)
            .collect();
        let second: Vec<StreamSlot> = (0..OUTPUT_STREAMS_PER_CONNECTION)
            .map(|_| connections.client().1)
            .collect();
        let third = connections.client().1;
        assert_eq!(connections.open(), 3);
        drop((first, second, third));
        drop(connections.client());
        assert_eq!(connections.open(), 1, "one kept of three unused");
        drop(connections.client());
        assert_eq!(connections.open(), 1);
    }
}
