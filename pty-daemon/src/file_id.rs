//! Telling files apart by identity rather than by path.
//!
//! A file the daemon made (its socket, its log) can be removed, and another
//! put at its path.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// A file's identity.
///
/// It is the file's device and inode, and its birth time where the
/// filesystem keeps one. The birth time is there because an inode number
/// freed with a removed socket may be handed to the next file made there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    dev: u64,
    ino: u64,
    born: Option<std::time::SystemTime>,
}

impl FileId {
    /// The identity of the file `metadata` describes.
    pub fn of(metadata: &std::fs::Metadata) -> Self {
        Self {
            dev: metadata.dev(),
            ino: metadata.ino(),
            born: metadata.created().ok(),
        }
    }

    /// The identity of what is at `path` (the link itself, if it is one).
    pub fn of_path(path: &Path) -> std::io::Result<Self> {
        std::fs::symlink_metadata(path).map(|metadata| Self::of(&metadata))
    }

    /// The identity of an open file.
    pub fn of_file(file: &File) -> std::io::Result<Self> {
        file.metadata().map(|metadata| Self::of(&metadata))
    }
}
