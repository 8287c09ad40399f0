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

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Shared by the registry and every session.
#[derive(Debug, Clone)]
pub struct Generation(Arc<AtomicU64>);

impl Generation {
    /// Starts at the clock's nanoseconds, so a restarted daemon never
    /// repeats a generation a client may still hold.
    pub fn new() -> Self {
        let start = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |since| since.as_nanos() as u64);
        Self(Arc::new(AtomicU64::new(start)))
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
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}

impl Default for Generation {
    fn default() -> Self {
        Self::new()
    }
}
