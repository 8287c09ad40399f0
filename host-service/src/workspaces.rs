//! What this process has learned of workspaces: that they exist (rows are
//! never deleted, closing only stamps them) and whether they were open.
//! Lists use it to skip reading the workspace again; creates to start a
//! program while its row is written when the workspace is known open.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

/// Workspaces seen, and whether each was open when last seen.
#[derive(Debug, Default)]
pub struct KnownWorkspaces(Mutex<HashMap<String, bool>>);

impl KnownWorkspaces {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, bool>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether the workspace is known to exist.
    pub fn exists(&self, workspace_id: &str) -> bool {
        self.lock().contains_key(workspace_id)
    }

    /// Whether the workspace was open when last seen. It may have been
    /// closed since: the row's insert checks again.
    pub fn was_open(&self, workspace_id: &str) -> bool {
        self.lock().get(workspace_id).copied().unwrap_or(false)
    }

    /// Records what was just seen of a workspace. Closing is for good: an
    /// open row read before a close cannot make it open again.
    pub fn saw(&self, workspace_id: &str, open: bool) {
        *self.lock().entry(workspace_id.to_owned()).or_insert(open) &= open;
    }
}
