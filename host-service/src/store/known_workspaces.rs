//! The workspaces this process has learned exist.
//!
//! Rows are never deleted (closing only stamps them). So once seen, a
//! workspace exists for good. Lists use this to skip reading it again.

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard};

/// Workspaces seen to exist.
#[derive(Debug, Default)]
pub struct KnownWorkspaces(Mutex<HashSet<String>>);

impl KnownWorkspaces {
    fn lock(&self) -> MutexGuard<'_, HashSet<String>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether the workspace is known to exist.
    pub fn exists(&self, workspace_id: &str) -> bool {
        self.lock().contains(workspace_id)
    }

    /// Records that a workspace exists.
    pub fn saw(&self, workspace_id: &str) {
        self.lock().insert(workspace_id.to_owned());
    }
}
