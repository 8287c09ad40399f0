//! The terminal sizes attached clients show a session at.
//!
//! A session follows its clients much as tmux's `window-size latest` has
//! it. It takes the size of the client active last (that resized, or
//! typed). When that client detaches, it takes the size of the client
//! active last among those still attached that set one. An attach stream
//! is named by a token its client gets with it (`holdfast-attachment`).
//! The client gives the token with its resizes and keys. A size set
//! without one (grpcurl's, an older client's) belongs to no client. It
//! stays until the next resize, or keys from a client that set a size.
//! Clients that never set a size do not count. Tokens start at a random
//! number in each process, so one kept across a restart of the
//! host-service names nobody.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

/// Names one attach stream of this process, for as long as it is open.
pub type AttachToken = u64;

/// A terminal size, in cells: (cols, rows).
pub type Size = (u32, u32);

/// Every session's attached clients and their sizes.
#[derive(Debug)]
pub struct ClientSizes {
    inner: Mutex<Inner>,
}

impl Default for ClientSizes {
    fn default() -> Self {
        // 48 random bits: far from wrapping, and unlike another process's.
        let start = uuid::Uuid::new_v4().as_u64_pair().0 >> 16;
        Self {
            inner: Mutex::new(Inner {
                counter: start,
                sessions: HashMap::new(),
            }),
        }
    }
}

#[derive(Debug)]
struct Inner {
    /// The last token given out, size set or typing noted.
    ///
    /// All three share one count, so later means larger.
    counter: u64,
    sessions: HashMap<String, Clients>,
}

/// One session's attached clients.
#[derive(Debug, Default)]
struct Clients {
    attached: Vec<Client>,
    /// Read-only clients' streams: they only look, and never set a size.
    read_only: Vec<AttachToken>,
    /// The client whose size the session has, if the last size set was
    /// one client's.
    owner: Option<AttachToken>,
    /// The size last given to the session while clients were attached (by
    /// a resize, a detach or typing).
    ///
    /// It is `None` once giving one failed, as what its terminal has is
    /// then unknown.
    current: Option<Size>,
}

#[derive(Debug)]
struct Client {
    attachment: AttachToken,
    /// The size it last set, and when (by the counter).
    size: Option<(Size, u64)>,
}

impl ClientSizes {
    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A new attach stream to `session_id`, its client with no size yet.
    pub fn attach(&self, session_id: &str) -> AttachToken {
        self.add(session_id, |clients, attachment| {
            clients.attached.push(Client {
                attachment,
                size: None,
            });
        })
    }

    /// A new read-only attach stream to `session_id`.
    ///
    /// Its token names it for [`Self::is_read_only`], never for a size.
    pub fn attach_read_only(&self, session_id: &str) -> AttachToken {
        self.add(session_id, |clients, attachment| {
            clients.read_only.push(attachment);
        })
    }

    /// A new token, put among `session_id`'s clients by `put`.
    fn add(&self, session_id: &str, put: impl FnOnce(&mut Clients, AttachToken)) -> AttachToken {
        let mut inner = self.inner();
        inner.counter += 1;
        let attachment = inner.counter;
        put(
            inner.sessions.entry(session_id.to_owned()).or_default(),
            attachment,
        );
        attachment
    }

    /// Whether `attachment` names a read-only stream of `session_id`.
    pub fn is_read_only(&self, session_id: &str, attachment: AttachToken) -> bool {
        self.inner()
            .sessions
            .get(session_id)
            .is_some_and(|clients| clients.read_only.contains(&attachment))
    }

    /// Notes that `session_id` was resized to `size`, for the client of
    /// `attachment` if it names one of the session's open streams, else for
    /// no client.
    pub fn resized(&self, session_id: &str, attachment: Option<AttachToken>, size: Size) {
        let mut inner = self.inner();
        inner.counter += 1;
        let now = inner.counter;
        let Some(clients) = inner.sessions.get_mut(session_id) else {
            return;
        };
        clients.current = Some(size);
        let client = attachment.and_then(|attachment| {
            clients
                .attached
                .iter_mut()
                .find(|client| client.attachment == attachment)
        });
        clients.owner = client.map(|client| {
            client.size = Some((size, now));
            client.attachment
        });
    }

    /// Ends the stream `attachment` names.
    ///
    /// Returns the size the session is to take now, if it had this client's
    /// size and another client still attached has set one.
    pub fn detach(&self, session_id: &str, attachment: AttachToken) -> Option<Size> {
        let mut inner = self.inner();
        let clients = inner.sessions.get_mut(session_id)?;
        clients
            .attached
            .retain(|client| client.attachment != attachment);
        clients.read_only.retain(|token| *token != attachment);
        if clients.attached.is_empty() && clients.read_only.is_empty() {
            inner.sessions.remove(session_id);
            return None;
        }
        if clients.owner != Some(attachment) {
            return None;
        }
        clients.owner = None;
        let (next, (size, _)) = clients
            .attached
            .iter()
            .filter_map(|client| Some((client.attachment, client.size?)))
            .max_by_key(|(_, (_, set))| *set)?;
        clients.owner = Some(next);
        clients.current = Some(size);
        Some(size)
    }

    /// Notes that the client of `attachment` typed in `session_id`.
    ///
    /// It is the latest client now, which decides whose size a detach gives
    /// back. The session is to take its size, if it set one and the session
    /// does not have it already. Returns whether the session's size is to
    /// change (to [`Self::current`]).
    pub fn typed(&self, session_id: &str, attachment: AttachToken) -> bool {
        let mut inner = self.inner();
        let now = inner.counter + 1;
        let Some(clients) = inner.sessions.get_mut(session_id) else {
            return false;
        };
        // Whoever set the owner (a resize, a detach, typing) gave it the
        // latest stamp too. So there is nothing to do, unless its size
        // failed to apply.
        if clients.owner == Some(attachment) && clients.current.is_some() {
            return false;
        }
        let Some(client) = clients
            .attached
            .iter_mut()
            .find(|client| client.attachment == attachment)
        else {
            return false;
        };
        let Some((size, set)) = client.size.as_mut() else {
            return false;
        };
        *set = now;
        let size = *size;
        clients.owner = Some(attachment);
        let changed = clients.current != Some(size);
        clients.current = Some(size);
        inner.counter = now;
        changed
    }

    /// Notes that giving `session_id` its [`Self::current`] size failed.
    ///
    /// What its terminal has is unknown, so the next activity applies a
    /// size again.
    pub fn unsure(&self, session_id: &str) {
        if let Some(clients) = self.inner().sessions.get_mut(session_id) {
            clients.current = None;
        }
    }

    /// The size `session_id` was last given while clients were attached.
    ///
    /// The host-service applies it, in its turn, after a detach or typing
    /// changed it.
    pub fn current(&self, session_id: &str) -> Option<Size> {
        self.inner().sessions.get(session_id)?.current
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_goes_back_to_the_size_of_the_last_client_that_set_one() {
        let sizes = ClientSizes::default();
        let desk = sizes.attach("s");
        sizes.resized("s", Some(desk), (200, 50));
        let phone = sizes.attach("s");
        sizes.resized("s", Some(phone), (60, 20));
        let laptop = sizes.attach("s");
        sizes.resized("s", Some(laptop), (120, 40));
        sizes.resized("s", Some(desk), (180, 45));

        // Not the owner: nothing changes.
        assert_eq!(sizes.detach("s", phone), None);
        // The owner: the one that set a size last among the rest.
        assert_eq!(sizes.detach("s", desk), Some((120, 40)));
        assert_eq!(sizes.current("s"), Some((120, 40)));
        // Twice, or for a session with nobody attached: nothing.
        assert_eq!(sizes.detach("s", desk), None);
        assert_eq!(sizes.detach("t", desk), None);
        assert_eq!(sizes.detach("s", laptop), None, "nobody left");
        assert!(sizes.inner().sessions.is_empty(), "forgotten when empty");
    }

    #[test]
    fn a_size_set_for_no_client_stays() {
        let elsewhere = ClientSizes::default();
        let sizes = ClientSizes::default();
        let desk = sizes.attach("s");
        sizes.resized("s", Some(desk), (200, 50));
        let gone = sizes.attach("s");
        assert_eq!(sizes.detach("s", gone), None);
        let other_session = sizes.attach("t");
        let other_process = elsewhere.attach("s");
        // A size without a token, or with one of another session or
        // process, or of a stream no longer open, is nobody's. The laptop
        // leaving then leaves it. Were it the laptop's, the desk's would
        // come back.
        for nobody in [None, Some(gone), Some(other_session), Some(other_process)] {
            let laptop = sizes.attach("s");
            sizes.resized("s", Some(laptop), (120, 40));
            sizes.resized("s", nobody, (90, 30));
            assert_eq!(sizes.detach("s", laptop), None, "{nobody:?}");
            assert_eq!(sizes.current("s"), Some((90, 30)));
        }
    }

    #[test]
    fn typing_in_a_client_gives_the_session_its_size() {
        let sizes = ClientSizes::default();
        let desk = sizes.attach("s");
        sizes.resized("s", Some(desk), (200, 50));
        let phone = sizes.attach("s");
        sizes.resized("s", Some(phone), (60, 20));
        let quiet = sizes.attach("s");
        assert!(sizes.typed("s", desk));
        assert_eq!(sizes.current("s"), Some((200, 50)));
        // Already its size; a client with no size; another session's.
        assert!(!sizes.typed("s", desk));
        assert!(!sizes.typed("s", quiet));
        assert!(!sizes.typed("t", phone));
        // Typing made the desk the latest: when it leaves, the phone's.
        assert!(sizes.typed("s", phone));
        assert!(sizes.typed("s", desk));
        assert_eq!(sizes.detach("s", desk), Some((60, 20)));

        // Typing counts as the latest activity for what a detach gives
        // back, not only the last resize.
        let (desk, phone, laptop) = (sizes.attach("u"), sizes.attach("u"), sizes.attach("u"));
        sizes.resized("u", Some(desk), (200, 50));
        sizes.resized("u", Some(phone), (60, 20));
        sizes.resized("u", Some(laptop), (120, 40));
        assert!(sizes.typed("u", desk));
        assert!(sizes.typed("u", laptop));
        assert_eq!(sizes.detach("u", laptop), Some((200, 50)));
        // A size that failed to apply is applied again at the next typing,
        // the owner's own too.
        assert!(!sizes.typed("u", desk), "already the owner, at its size");
        sizes.unsure("u");
        assert!(sizes.typed("u", desk));
        assert_eq!(sizes.current("u"), Some((200, 50)));
    }

    #[test]
    fn when_nobody_left_set_a_size_nobody_owns_it() {
        let sizes = ClientSizes::default();
        let quiet = sizes.attach("s");
        let other = sizes.attach("s");
        let desk = sizes.attach("s");
        sizes.resized("s", Some(desk), (200, 50));
        assert_eq!(sizes.detach("s", desk), None);
        // Nobody owns the size now: the quiet ones' leaving changes nothing.
        sizes.resized("s", Some(other), (70, 20));
        sizes.resized("s", None, (80, 24));
        assert_eq!(sizes.detach("s", quiet), None);
        assert_eq!(sizes.detach("s", other), None);
    }
}
