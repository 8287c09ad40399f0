//! Input for a session's program: written to the terminal at once as far
//! as it takes it, the rest queued and drained as the program reads.
//!
//! During an upgrade's freeze input stops, so the queue handed on is whole.

use super::*;

impl Session {
    /// Takes input for the program, all of it or none, in order with other
    /// writes.
    ///
    /// It is written to the terminal at once, as far as the terminal takes
    /// it. The rest is left to wait for the program to read
    /// ([`InputQueue`]). The write is refused whole when too much waits
    /// already.
    pub fn write(self: &Arc<Self>, data: &[u8]) -> Result<()> {
        let mut input = self.input();
        if *self.frozen.borrow() {
            // Checked under the input lock, which the state handed on is
            // read under: a write either is in it or is refused.
            return Err(Error::Upgrading {
                resume: String::new(),
            });
        }
        if *self.exited.borrow() {
            return Err(Error::SessionExited(self.id.clone()));
        }
        // Exited but not reaped yet (what it left waits for an attacher),
        // or it closed its terminal. The kernel would take the bytes, and
        // no one would read them.
        let master = self
            .master()
            .as_ref()
            .filter(|master| in_use(master))
            .cloned();
        let Some(master) = master else {
            return Err(Error::TerminalClosed(self.id.clone()));
        };
        let mut rest = data;
        if !input.draining {
            // Nothing waits, so straight to the terminal. The PTY is
            // non-blocking, so this never waits under the lock.
            loop {
                if rest.is_empty() {
                    return Ok(());
                }
                match rustix::io::write(master.get_ref(), rest) {
                    Ok(written) => rest = &rest[written..],
                    Err(rustix::io::Errno::INTR) => {}
                    Err(rustix::io::Errno::AGAIN) => break,
                    // Older kernels answer EIO once no one holds the
                    // other side. Before any of this write was taken, it
                    // is refused whole, as promised. Part way through,
                    // the program let go of its terminal meanwhile. What
                    // was taken then reaches no one either, and the
                    // refusal says why rather than failing INTERNAL.
                    Err(rustix::io::Errno::IO) => {
                        return Err(Error::TerminalClosed(self.id.clone()));
                    }
                    Err(error) => {
                        return Err(Error::io("writing to the PTY", io::Error::from(error)));
                    }
                }
            }
        }
        input.admit(rest).map_err(|full| Error::InputFull {
            session_id: self.id.clone(),
            waiting: full.waiting,
        })?;
        if !input.draining {
            input.draining = true;
            tokio::spawn(Arc::clone(self).drain_input());
        }
        Ok(())
    }

    /// Writes the waiting input to the terminal as the program reads it,
    /// until none is left or the program is gone.
    pub(super) async fn drain_input(self: Arc<Self>) {
        let mut exited = self.exited.subscribe();
        let mut frozen = self.frozen.clone();
        loop {
            if *frozen.borrow_and_update() {
                // What waits is handed on. The next image drains it, or
                // this one once the upgrade is called off.
                let _ = frozen.changed().await;
                continue;
            }
            if *exited.borrow_and_update() {
                self.input().clear();
                return;
            }
            let Some(master) = self.master().clone() else {
                self.input().clear();
                return;
            };
            let ready = tokio::select! {
                ready = master.writable() => ready,
                _ = exited.changed() => continue,
                _ = frozen.changed() => continue,
            };
            let mut ready = match ready {
                Ok(ready) => ready,
                Err(error) => {
                    tracing::warn!(session_id = %self.id, %error, "waiting to write to the PTY failed; its input is dropped");
                    self.input().clear();
                    return;
                }
            };
            let mut input = self.input();
            loop {
                let Some(waiting) = input.front() else {
                    input.draining = false;
                    return;
                };
                match ready
                    .try_io(|fd| rustix::io::write(fd.get_ref(), waiting).map_err(io::Error::from))
                {
                    Ok(Ok(written)) => input.consume(written),
                    Ok(Err(error)) if error.kind() == io::ErrorKind::Interrupted => {}
                    Ok(Err(error)) => {
                        tracing::warn!(session_id = %self.id, %error, "writing to the PTY failed; its input is dropped");
                        input.clear();
                        return;
                    }
                    Err(_would_block) => break,
                }
            }
        }
    }

    pub(super) fn input(&self) -> MutexGuard<'_, InputQueue> {
        self.input.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
