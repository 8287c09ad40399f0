//! The raw-PTY floor.
//!
//! A program runs on a PTY this process opens. It is read and written
//! in-process with blocking calls, with nothing in between.

use std::io::{Read, Write};

use anyhow::{Result, anyhow};
use portable_pty::{CommandBuilder, PtySize, native_pty_system};

pub struct RawPty {
    pub reader: Box<dyn Read + Send>,
    pub writer: Box<dyn Write + Send>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    // Kept open for the child's lifetime.
    _master: Box<dyn portable_pty::MasterPty + Send>,
}

impl RawPty {
    pub fn spawn(argv: &[&str]) -> Result<Self> {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: 24,
                cols: 80,
                pixel_width: 0,
                pixel_height: 0,
            })
            .map_err(|e| anyhow!("openpty: {e}"))?;
        let mut command = CommandBuilder::new(argv[0]);
        command.args(&argv[1..]);
        let child = pair
            .slave
            .spawn_command(command)
            .map_err(|e| anyhow!("spawn: {e}"))?;
        drop(pair.slave);
        Ok(Self {
            reader: pair.master.try_clone_reader().map_err(|e| anyhow!("{e}"))?,
            writer: pair.master.take_writer().map_err(|e| anyhow!("{e}"))?,
            child,
            _master: pair.master,
        })
    }

    /// Reads until `needle` has been seen; returns the bytes read.
    pub fn read_until(&mut self, needle: &[u8]) -> Result<Vec<u8>> {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while !seen.windows(needle.len()).any(|w| w == needle) {
            let n = self.reader.read(&mut buf)?;
            if n == 0 {
                return Err(anyhow!("EOF before {:?}", String::from_utf8_lossy(needle)));
            }
            seen.extend_from_slice(&buf[..n]);
        }
        Ok(seen)
    }

    /// Reads until the program's side closes; returns the byte count.
    pub fn drain(&mut self) -> u64 {
        let mut total = 0;
        let mut buf = vec![0u8; 64 * 1024];
        // Linux reports EIO once the slave side is gone.
        while let Ok(n) = self.reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            total += n as u64;
        }
        total
    }
}

impl Drop for RawPty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
