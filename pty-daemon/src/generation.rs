//! A number that changes whenever `List` would answer differently.
//!
//! Output offsets do not count. A spawn, an exit, a title, a size and a
//! session forgotten do. A client that already holds the list of
//! generation G asks "if still G". It then gets only the offsets: a few
//! bytes per session instead of every field.
//!
//! Writers change state first and bump after. `List` reads the generation
//! first and the state after. So a list labelled G never misses a change
//! that a later "still G" answer would hide.
//!
//! Each bump is also told to `WatchSessions` watchers (coalesced: a
//! watcher that was busy hears of the latest only).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Shared by the registry and every session.
#[derive(Debug, Clone)]
pub struct Generation(Arc<AtomicU64>, Arc<tokio::sync::watch::Sender<u64>>);

impl Generation {
    /// Starts at the clock's nanoseconds, so a restarted daemon never
    /// repeats a generation a client may still hold.
    pub fn new() -> Self {
        let start = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |since| since.as_nanos() as u64);
        let changes = tokio::sync::watch::channel(start).0;
        Self(Arc::new(AtomicU64::new(start)), Arc::new(changes))
    }

    pub fn current(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    /// Goes on from `generation` if it is ahead (the state of a previous
    /// image), so no client sees a generation twice.
    pub fn at_least(&self, generation: u64) {
        self.0.fetch_max(generation + 1, Ordering::AcqRel);
    }

    /// Call after the change is visible.
    pub fn bump(&self) {
        let now = self.0.fetch_add(1, Ordering::AcqRel) + 1;
        self.1.send_replace(now);
    }

    /// Each bump from now on, as the generation it made.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.1.subscribe()
    }
}

impl Default for Generation {
    fn default() -> Self {
        Self::new()
    }
}
