//! Shell completion that knows the host-service's sessions and workspaces.
//!
//! As tmux's bash completion offers session names, `holdfast attach <TAB>`
//! offers the live sessions' names. The shell calls `holdfast` again with
//! `HOLDFAST_COMPLETE=<shell>` at each TAB (clap_complete's dynamic
//! engine). The commands and flags come from the CLI's own definition. The
//! names come from the host-service that `--addr` (or `HOLDFAST_ADDR`)
//! points at.

use std::collections::HashMap;
use std::ffi::OsString;
use std::sync::OnceLock;
use std::time::Duration;

use clap_complete::engine::CompletionCandidate;
use clap_complete::env::{CompleteEnv, Shells};
use holdfast_api::proto::host::v1 as pb;

use crate::clients::connect;
use crate::workspaces::{every_open_list, list_workspaces};

/// The environment variable that makes `holdfast` complete instead of run.
///
/// It is not clap's `COMPLETE`, which a user's environment may hold for
/// another reason. Every command would fail for it.
const VARIABLE: &str = "HOLDFAST_COMPLETE";

/// How long a TAB may wait for names.
///
/// Past it, none are offered.
const PATIENCE: Duration = Duration::from_secs(2);

/// The words of the command line being completed, as [`complete_if_asked`]
/// gave them to clap.
static WORDS: OnceLock<Vec<OsString>> = OnceLock::new();

/// Makes the CLI's clap definition, as [`complete_if_asked`] was given it.
///
/// It is given rather than imported. The definition names this file's
/// candidates, so importing it back would make the two files a circle.
static COMMAND: OnceLock<fn() -> clap::Command> = OnceLock::new();

/// The CLI's clap definition.
fn command() -> clap::Command {
    COMMAND
        .get()
        .map_or_else(|| clap::Command::new("holdfast"), |make| make())
}

/// Completes and exits, if the shell called us to complete a command line
/// of the CLI that `command` defines.
pub fn complete_if_asked(command: fn() -> clap::Command) {
    let Some(shell) = std::env::var_os(VARIABLE) else {
        return;
    };
    let _ = COMMAND.set(command);
    let args: Vec<OsString> = std::env::args_os().collect();
    let words: Vec<OsString> = args
        .iter()
        .skip_while(|arg| *arg != "--")
        .skip(1)
        .cloned()
        .collect();
    if shell == "bash" && !words.is_empty() {
        complete_for_bash(words);
    }
    let _ = WORDS.set(words);
    let current_dir = std::env::current_dir().ok();
    match CompleteEnv::with_factory(command)
        .var(VARIABLE)
        .try_complete(args, current_dir.as_deref())
    {
        Ok(true) => std::process::exit(0),
        Ok(false) => {}
        Err(error) => error.exit(),
    }
}

/// Completes for bash, as clap_complete's bash support does but for one
/// thing.
///
/// Bash splits words at `:` and `=` as well (COMP_WORDBREAKS). So
/// `--addr 127.0.0.1:7078` comes as `127.0.0.1`, `:`, `7078`, which clap
/// would read as three arguments. And bash replaces only the piece after
/// the last `:` or `=` with what is offered. So the pieces are joined again
/// for clap, and what it offers loses what comes before that piece.
fn complete_for_bash(words: Vec<OsString>) -> ! {
    let index = std::env::var("_CLAP_COMPLETE_INDEX")
        .ok()
        .and_then(|index| index.parse().ok())
        .unwrap_or(words.len() - 1);
    // The piece bash replaces ends the word it was joined into.
    let piece = words.get(index).map_or(0, |word| word.len());
    let (words, index) = rejoined(words, index);
    let joined = words.get(index).map(|word| word.as_encoded_bytes());
    let before = joined.map_or(Vec::new(), |word| word[..word.len() - piece].to_vec());
    let _ = WORDS.set(words.clone());
    let current_dir = std::env::current_dir().ok();
    let offered =
        clap_complete::engine::complete(&mut command(), words, index, current_dir.as_deref())
            .unwrap_or_default();
    let offered: Vec<String> = offered
        .iter()
        .map(|candidate| {
            let value = candidate.get_value().as_encoded_bytes();
            String::from_utf8_lossy(value.strip_prefix(&before[..]).unwrap_or(value)).into_owned()
        })
        .collect();
    let separator = std::env::var("_CLAP_IFS").unwrap_or_else(|_| "\n".into());
    print!("{}", offered.join(&separator));
    std::process::exit(0)
}

/// `words` as typed, from the words bash gives.
///
/// A piece of nothing but `:` and `=` joins the words on both sides of it
/// again. `index`, of the word being completed, moves to match.
fn rejoined(words: Vec<OsString>, index: usize) -> (Vec<OsString>, usize) {
    let is_break = |word: &OsString| {
        let word = word.as_encoded_bytes();
        !word.is_empty() && word.iter().all(|byte| matches!(byte, b':' | b'='))
    };
    let mut joined: Vec<OsString> = Vec::with_capacity(words.len());
    let mut new_index = index;
    // Whether the next word goes on the last one (it follows a break).
    let mut glue = false;
    for (at, word) in words.iter().enumerate() {
        let breaks = is_break(word);
        match joined.last_mut() {
            Some(last) if glue || breaks => {
                last.push(word);
                if at <= index {
                    new_index -= 1;
                }
            }
            _ => joined.push(word.clone()),
        }
        glue = breaks;
    }
    (joined, new_index)
}

/// The script that has `shell` ask `holdfast` for completions, calling
/// this very binary.
pub fn registration(shell: clap_complete::Shell) -> anyhow::Result<String> {
    let shells = Shells::builtins();
    let name = shell.to_string();
    let completer = shells
        .completer(&name)
        .ok_or_else(|| anyhow::anyhow!("no dynamic completion for {name}"))?;
    let binary = std::env::current_exe()
        .map(|path| path.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "holdfast".into());
    let mut script = Vec::new();
    completer.write_registration(VARIABLE, "holdfast", "holdfast", &binary, &mut script)?;
    Ok(String::from_utf8_lossy(&script).trim_end().to_owned())
}

/// The live sessions of every open workspace, each as `holdfast` finds it.
///
/// A session is offered by its name where that is one session's and a
/// shell takes it as it is. Otherwise it is offered by its id.
pub fn sessions() -> Vec<CompletionCandidate> {
    let Some(lists) =
        ask(|mut clients| async move { every_open_list(&mut clients, pb::Scope::ThisHost).await })
    else {
        return Vec::new();
    };
    let sessions: Vec<(&pb::Workspace, &pb::Session)> = lists
        .iter()
        .flat_map(|(workspace, list)| list.sessions.iter().map(move |s| (workspace, s)))
        .collect();
    let names = counts(sessions.iter().map(|(_, s)| s.name.as_str()));
    let titles = counts(sessions.iter().map(|(_, s)| s.title.as_str()));
    // As `holdfast` finds a session: by name, failing that by title.
    let finds_only_it = |session: &pb::Session, given: &str| match names.get(given) {
        Some(&count) => count == 1 && session.name == given,
        None => titles.get(given) == Some(&1) && session.title == given,
    };
    sessions
        .into_iter()
        .map(|(workspace, session)| {
            let name = crate::naming::name_of(session);
            let value = if plain(name) && finds_only_it(session, name) {
                name
            } else {
                &session.session_id
            };
            let mut help = format!("workspace {}", workspace.name);
            if session.title != name {
                help = format!("{} · {help}", session.title);
            }
            CompletionCandidate::new(value).help(Some(help.into()))
        })
        .collect()
}

/// The open workspaces, by name where that is one workspace's and plain,
/// else by id.
pub fn workspaces() -> Vec<CompletionCandidate> {
    let Some(workspaces) =
        ask(|mut clients| async move { list_workspaces(&mut clients, true).await })
    else {
        return Vec::new();
    };
    let open: Vec<&pb::Workspace> = workspaces
        .iter()
        .filter(|workspace| workspace.closed_at.is_none())
        .collect();
    let names = counts(open.iter().map(|workspace| workspace.name.as_str()));
    open.into_iter()
        .map(|workspace| {
            let value = if names[workspace.name.as_str()] == 1 && plain(&workspace.name) {
                &workspace.name
            } else {
                &workspace.workspace_id
            };
            CompletionCandidate::new(value).help(Some(workspace.workspace_id.clone().into()))
        })
        .collect()
}

/// What `call` gets from the host-service the command line being completed
/// names.
///
/// It is nothing if that host-service cannot be asked within [`PATIENCE`].
/// A TAB must never print an error into the line being typed.
fn ask<T, F>(call: impl FnOnce(crate::clients::Clients) -> F) -> Option<T>
where
    F: Future<Output = anyhow::Result<T>>,
{
    let (addr, token) = host_of(WORDS.get().into_iter().flatten().cloned());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    let answer = runtime.block_on(async {
        tokio::time::timeout(PATIENCE, async {
            call(connect(&addr, token.as_deref()).await?).await
        })
        .await
        .ok()?
        .ok()
    });
    // Not waiting for a name lookup still under way on a blocking thread
    // (a slow DNS). The TAB is answered now.
    runtime.shutdown_background();
    answer
}

/// The host-service address and token of a command line being typed, as
/// far as it goes.
///
/// `HOLDFAST_ADDR` and the default apply as when it runs.
fn host_of(words: impl Iterator<Item = OsString>) -> (String, Option<String>) {
    let matches = command()
        .ignore_errors(true)
        .try_get_matches_from(words)
        .unwrap_or_default();
    let addr = matches
        .try_get_one::<String>("addr")
        .ok()
        .flatten()
        .cloned()
        .unwrap_or_else(|| crate::clients::DEFAULT_ADDR.to_owned());
    let token = matches
        .try_get_one::<String>("auth_token")
        .ok()
        .flatten()
        .cloned();
    (addr, token)
}

/// How many times each name comes.
fn counts<'a>(names: impl Iterator<Item = &'a str>) -> HashMap<&'a str, usize> {
    let mut counts = HashMap::new();
    for name in names {
        *counts.entry(name).or_default() += 1;
    }
    counts
}

/// Whether a shell takes `name` as one word as it is.
///
/// There must be nothing to quote, and no `:` or `=`, where bash splits
/// words. Then a completed name is the name.
fn plain(name: &str) -> bool {
    !name.is_empty()
        && !name.contains([':', '='])
        && shlex::try_quote(name).is_ok_and(|quoted| quoted == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> impl Iterator<Item = OsString> {
        line.split(' ')
            .map(OsString::from)
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    fn the_host_is_the_one_the_line_being_typed_names() {
        let _ = COMMAND.set(<crate::args::Cli as clap::CommandFactory>::command);
        let (addr, token) = host_of(words(
            "holdfast --addr 127.0.0.1:9 --auth-token t attach ed",
        ));
        assert_eq!(
            (addr.as_str(), token.as_deref()),
            ("127.0.0.1:9", Some("t"))
        );
        let (addr, _) = host_of(words("holdfast attach --addr=[::1]:8 "));
        assert_eq!(addr, "[::1]:8", "global flags after the command");
    }

    #[test]
    fn words_bash_split_at_colons_and_equals_are_joined_again() {
        let (joined, index) = rejoined(
            words("holdfast --addr 127.0.0.1 : 7078 attach ed").collect(),
            6,
        );
        let joined: Vec<_> = joined
            .iter()
            .map(|w| w.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            joined,
            ["holdfast", "--addr", "127.0.0.1:7078", "attach", "ed"]
        );
        assert_eq!(index, 4, "still the word being completed");
        let (joined, index) = rejoined(
            words("holdfast --addr = [ :: 1] : 8 ls -w = bu").collect(),
            11,
        );
        assert_eq!(joined[1], "--addr=[::1]:8");
        assert_eq!(joined[3], "-w=bu");
        assert_eq!((joined.len(), index), (4, 3));
    }

    #[test]
    fn names_a_shell_would_split_or_change_are_not_offered_as_they_are() {
        assert!(plain("editor") && plain("dev-server.2") && plain("a_b"));
        assert!(!plain("") && !plain("two words") && !plain("a$b") && !plain("it's"));
        assert!(!plain("a:b") && !plain("a=b"), "bash splits words there");
    }
}
