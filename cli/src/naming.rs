//! How people name sessions at a terminal.
//!
//! A session is shown by its name, which `holdfast new` gives it: the
//! command it runs, unless told another. It is found by a unique start of
//! its id, by its name, or by the title its program set. docker finds
//! containers the same way, by a start of their id or by name. Titles the
//! program sets do not change the name, as they do not change a tmux
//! session's. Scripts can go on writing whole ids, which are taken as they
//! are.

use anyhow::bail;
use holdfast_api::proto::host::v1 as pb;

use crate::clients::{Clients, refused};
use crate::workspaces::every_open_list;

/// Longest title the host-service takes, in characters.
const TITLE_CHARS: usize = 200;

/// The title for a session running `command`.
///
/// It is the command as typed, quoted where a shell would need it. What no
/// title may hold is shown as `?`: control characters, and whatever could
/// hide or reorder text around it. It is cut to the length titles may
/// have. It is `None` for the login shell, which names itself.
pub fn title_of(command: &[String]) -> Option<String> {
    let shown: String = command_line(command)?
        .chars()
        .map(|c| {
            if c.is_control() || !(c.is_ascii() || c.is_alphanumeric()) {
                '?'
            } else {
                c
            }
        })
        .take(TITLE_CHARS)
        .collect();
    (!shown.is_empty()).then_some(shown)
}

/// What a session is shown as: its name, else (a login shell given none)
/// the title its program set.
pub fn name_of(session: &pb::Session) -> &str {
    if session.name.is_empty() {
        &session.title
    } else {
        &session.name
    }
}

/// `argv` as a shell would take it, quoted where it must be.
///
/// It is `None` if no shell could (a NUL byte).
pub fn command_line(argv: &[String]) -> Option<String> {
    shlex::try_join(argv.iter().map(String::as_str)).ok()
}

/// The session this command runs in, if it runs in one.
pub fn this_session() -> Option<String> {
    std::env::var(holdfast_api::proto::SESSION_ID_VARIABLE).ok()
}

/// The id of the session `given` names.
///
/// A whole id is taken as it is. Otherwise it is the one live session, in
/// any open workspace, whose name is `given`. Failing that, it is the one
/// whose title (its program's) is `given`. Failing that, it is the one
/// whose id starts with it. A name a person gave goes first, so a program
/// that titles itself so cannot take it over.
pub async fn session_id(clients: &mut Clients, given: &str) -> anyhow::Result<String> {
    if let Ok(id) = uuid::Uuid::try_parse(given) {
        // As the host-service stores it: lower case, hyphenated.
        return Ok(id.hyphenated().to_string());
    }
    if given.is_empty() {
        bail!("name a session by its id, the start of it, its name or its title");
    }
    let prefix = given.to_ascii_lowercase();
    let by_name = |s: &pb::Session| s.name == given;
    let by_title = |s: &pb::Session| s.title == given;
    let by_id = |s: &pb::Session| s.session_id.starts_with(&prefix);
    let pick = |s: &pb::Session| by_name(s) || by_title(s) || by_id(s);
    // This host's first; then every host's, for a session elsewhere in
    // the fleet (a command on it is then sent there).
    let mut candidates = live_sessions(clients, pb::Scope::ThisHost, pick).await?;
    if candidates.is_empty() {
        candidates =
            live_sessions(clients, pb::Scope::AllHosts, |s| !s.unconfirmed && pick(s)).await?;
    }
    let tiers: [&dyn Fn(&pb::Session) -> bool; 3] = [&by_name, &by_title, &by_id];
    let found: Vec<&pb::Session> = tiers
        .iter()
        .map(|matches| candidates.iter().filter(|s| matches(s)).collect::<Vec<_>>())
        .find(|found| !found.is_empty())
        .unwrap_or_default();
    match found.len() {
        1 => Ok(found[0].session_id.clone()),
        0 => match most_recent_ended(clients, &tiers).await? {
            Some(ended) => Ok(ended),
            None => bail!(
                "no session's id starts with {given:?} or has it as its name or title, live or ended \
                 (see `holdfast ls --all`, and `holdfast ls --ended --all`; a hidden one is named by its whole id)"
            ),
        },
        count => bail!(
            "{count} live sessions match {given:?}: {}; give more of the id",
            listed(found.into_iter())
        ),
    }
}

/// The id of the one live session in every open workspace, for a command
/// that names none.
///
/// With several, it says which there are.
pub async fn the_only_session(clients: &mut Clients) -> anyhow::Result<String> {
    // Never the one this command runs in. Attached to itself, a session
    // would show its own output back to itself for ever.
    let this_one = this_session();
    let mut found = live_sessions(clients, pb::Scope::ThisHost, |session| {
        this_one.as_deref() != Some(session.session_id.as_str())
    })
    .await?;
    match found.len() {
        1 => Ok(found.remove(0).session_id),
        0 => bail!("there is no live session to attach to (`holdfast new -a` starts one)"),
        count => bail!(
            "there are {count} live sessions: name one by the start of its id or its name: {}",
            listed(found.iter())
        ),
    }
}

/// The session that ended most recently, in any open workspace of this
/// host, that the first of `tiers` to match any matches: as `wait NAME`
/// after a program that ended at once needs it.
async fn most_recent_ended(
    clients: &mut Clients,
    tiers: &[&dyn Fn(&pb::Session) -> bool],
) -> anyhow::Result<Option<String>> {
    let mut ended = Vec::new();
    for (workspace, _) in every_open_list(clients, pb::Scope::ThisHost).await? {
        let listed = clients
            .terminals
            .list_ended_sessions(pb::ListEndedSessionsRequest {
                workspace_id: workspace.workspace_id,
                limit: 1000,
            })
            .await
            .map_err(refused)?
            .into_inner();
        ended.extend(listed.sessions);
    }
    let at = |s: &&pb::Session| s.ended_at.map(|t| (t.seconds, t.nanos));
    Ok(tiers.iter().find_map(|matches| {
        ended
            .iter()
            .filter(|s| matches(s))
            .max_by_key(at)
            .map(|s| s.session_id.clone())
    }))
}

/// Refuses a name a live session has already, in any open workspace.
///
/// `renamed`, the session being renamed, does not count. tmux refuses a
/// second session of a name in the same way, and docker a second
/// container. A name is a handle, and one that two sessions share finds
/// neither. A workspace listed from memory only is looked at as far as
/// memory knows it.
pub async fn refuse_taken(
    clients: &mut Clients,
    name: &str,
    renamed: Option<&str>,
) -> anyhow::Result<()> {
    // Names are handles across the fleet: one of another host's is taken.
    for (workspace, list) in every_open_list(clients, pb::Scope::AllHosts).await? {
        let taken = list
            .sessions
            .iter()
            .find(|s| s.name == name && Some(s.session_id.as_str()) != renamed);
        if let Some(taken) = taken {
            bail!(
                "a live session is already named {name:?}: {} in workspace {:?}; pick another name \
                 (`holdfast rename` renames that one)",
                taken.session_id,
                workspace.name
            );
        }
    }
    Ok(())
}

/// The live sessions of every open workspace, on the hosts `scope`
/// covers, that `pick` takes.
///
/// It is refused while a list is memory-only. A session missing from it
/// would be guessed past.
async fn live_sessions(
    clients: &mut Clients,
    scope: pb::Scope,
    pick: impl Fn(&pb::Session) -> bool,
) -> anyhow::Result<Vec<pb::Session>> {
    let mut found = Vec::new();
    for (workspace, list) in every_open_list(clients, scope).await? {
        if list.source == pb::Source::MemoryOnly as i32 {
            bail!(
                "workspace {:?} can only be listed from memory for now ({}): name the session by its whole id",
                workspace.name,
                list.degraded_reason
            );
        }
        found.extend(list.sessions.into_iter().filter(|session| pick(session)));
    }
    Ok(found)
}

/// Sessions as an error names them: id and name.
///
/// At most [`LISTED`] are named, then how many more there are and the
/// command that lists them all: one error line, never a page.
fn listed<'a>(sessions: impl ExactSizeIterator<Item = &'a pb::Session>) -> String {
    let count = sessions.len();
    let mut named: Vec<String> = sessions
        .take(LISTED)
        .map(|s| format!("{} ({})", s.session_id, name_of(s)))
        .collect();
    if count > LISTED {
        named.push(format!(
            "and {} more (`holdfast ls` lists them all)",
            count - LISTED
        ));
    }
    named.join(", ")
}

/// Most sessions an error names.
const LISTED: usize = 5;

#[cfg(test)]
mod tests {
    use super::title_of;

    fn title(command: &[&str]) -> Option<String> {
        title_of(&command.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn a_session_is_titled_by_its_command_as_typed() {
        assert_eq!(title(&["make", "-j2"]).as_deref(), Some("make -j2"));
        assert_eq!(
            title(&["sh", "-c", "echo hi; sleep 1"]).as_deref(),
            Some("sh -c 'echo hi; sleep 1'")
        );
        assert_eq!(title(&[]), None, "the login shell names itself");
    }

    #[test]
    fn what_no_title_may_hold_is_shown_as_a_question_mark() {
        assert_eq!(
            title(&["printf", "a\u{202E}b"]).as_deref(),
            Some("printf 'a?b'")
        );
        assert_eq!(title(&["é"]).as_deref(), Some("'é'"), "letters stay");
        assert!(title(&["echo", "a\nb"]).expect("a title").contains("a?b"));
        assert_eq!(
            title(&[&"x".repeat(300)]).expect("a title").chars().count(),
            200
        );
    }
}
