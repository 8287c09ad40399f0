//! Reading attach streams of either service the same way.

use anyhow::{Result, bail};
use holdfast_api::proto::daemon::v1 as daemon_pb;
use holdfast_api::proto::host::v1 as host_pb;
use tonic::Streaming;

/// What the scenarios care about in an attach event.
pub enum Event<'a> {
    Output(&'a [u8]),
    Truncated(u64),
    Exited,
    Other,
}

pub trait AttachEvent {
    fn event(&self) -> Event<'_>;
}

impl AttachEvent for daemon_pb::AttachResponse {
    fn event(&self) -> Event<'_> {
        use daemon_pb::attach_response::Event as E;
        match &self.event {
            Some(E::Output(o)) => Event::Output(&o.data),
            Some(E::Truncated(t)) => Event::Truncated(t.to_offset - t.from_offset),
            Some(E::Exited(_)) => Event::Exited,
            _ => Event::Other,
        }
    }
}

impl AttachEvent for host_pb::AttachSessionResponse {
    fn event(&self) -> Event<'_> {
        use host_pb::attach_session_response::Event as E;
        match &self.event {
            Some(E::Output(o)) => Event::Output(&o.data),
            Some(E::Truncated(t)) => Event::Truncated(t.to_offset - t.from_offset),
            Some(E::Exited(_)) => Event::Exited,
            _ => Event::Other,
        }
    }
}

impl AttachEvent for host_pb::StartSessionResponse {
    fn event(&self) -> Event<'_> {
        use host_pb::start_session_response::Event as E;
        match &self.event {
            Some(E::Attach(event)) => event.event(),
            _ => Event::Other,
        }
    }
}

impl AttachEvent for daemon_pb::StartResponse {
    fn event(&self) -> Event<'_> {
        use daemon_pb::start_response::Event as E;
        match &self.event {
            Some(E::Attach(event)) => event.event(),
            _ => Event::Other,
        }
    }
}

/// Waits for the first output bytes.
pub async fn first_output<T: AttachEvent>(stream: &mut Streaming<T>) -> Result<()> {
    while let Some(message) = stream.message().await? {
        if let Event::Output(data) = message.event()
            && !data.is_empty()
        {
            return Ok(());
        }
    }
    bail!("the stream ended before any output")
}

/// Reads until `needle` has appeared in the output (across chunks).
pub async fn until_contains<T: AttachEvent>(
    stream: &mut Streaming<T>,
    needle: &[u8],
) -> Result<()> {
    let mut tail: Vec<u8> = Vec::new();
    while let Some(message) = stream.message().await? {
        if let Event::Output(data) = message.event() {
            tail.extend_from_slice(data);
            if tail.windows(needle.len()).any(|w| w == needle) {
                return Ok(());
            }
            let keep = tail.len().saturating_sub(needle.len());
            tail.drain(..keep);
        }
    }
    bail!(
        "the stream ended before {:?}",
        String::from_utf8_lossy(needle)
    )
}

/// Reads until the exit; returns (bytes received, bytes announced lost).
pub async fn until_exit<T: AttachEvent>(stream: &mut Streaming<T>) -> Result<(u64, u64)> {
    let (mut received, mut lost) = (0, 0);
    while let Some(message) = stream.message().await? {
        match message.event() {
            Event::Output(data) => received += data.len() as u64,
            Event::Truncated(n) => lost += n,
            Event::Exited => return Ok((received, lost)),
            Event::Other => {}
        }
    }
    bail!("the stream ended before the exit")
}

/// Reads and counts output until the stream ends or fails.
pub async fn drain<T: AttachEvent>(mut stream: Streaming<T>) -> u64 {
    let mut received = 0;
    while let Ok(Some(message)) = stream.message().await {
        if let Event::Output(data) = message.event() {
            received += data.len() as u64;
        }
    }
    received
}
