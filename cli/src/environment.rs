//! The environment `holdfast new` gives its session.
//!
//! It is this shell's, as `nohup`, `screen -dm` or `dtach` would give. So
//! `holdfast new -- cargo build` finds `cargo` on the PATH it was typed
//! with, and `git push` in the session finds the SSH agent. The API itself
//! starts sessions from the daemon's clean base environment plus what a
//! client names. This is what the command line names.
//!
//! Left out are the variables that describe this terminal or this login
//! rather than the user. The session has a terminal of its own (TERM is
//! the daemon's). It is shown by whatever attaches to it, and it outlives
//! this one. holdfast's own variables are left out too
//! (`HOLDFAST_AUTH_TOKEN` above all). They configure this command, and the
//! daemon keeps them from its programs too. A host-service on another
//! machine gets none of it. This PATH and HOME mean nothing there, and the
//! variables would cross the network.

use std::collections::HashMap;

use anyhow::bail;

/// Variables about the terminal the command was typed in, or about this
/// shell's own nesting, never forwarded.
const THIS_TERMINAL: &[&str] = &[
    "TERM",
    "COLORTERM",
    "TERMCAP",
    "TERMINFO",
    "LINES",
    "COLUMNS",
    "WINDOWID",
    "SHLVL",
    "_",
    "OLDPWD",
    "TMUX",
    "TMUX_PANE",
    "STY",
    "WINDOW",
    "TERM_PROGRAM",
    "TERM_PROGRAM_VERSION",
    "TERM_SESSION_ID",
    "VTE_VERSION",
    "LC_TERMINAL",
    "LC_TERMINAL_VERSION",
    "WT_SESSION",
    "WT_PROFILE_ID",
    "INSIDE_EMACS",
    // This login's: pinentry would prompt on this terminal.
    "GPG_TTY",
    "SSH_TTY",
    "SSH_CONNECTION",
    "SSH_CLIENT",
];

/// Families of the same, by prefix (terminal emulators' own variables).
const THIS_TERMINAL_PREFIXES: &[&str] = &[
    "KITTY_",
    "ALACRITTY_",
    "WEZTERM_",
    "ITERM_",
    "KONSOLE_",
    "GNOME_TERMINAL_",
    "GHOSTTY_",
    "VSCODE_",
    "ZELLIJ",
    // This command's own settings, its token among them.
    "HOLDFAST_",
];

fn describes_this_terminal(name: &str) -> bool {
    THIS_TERMINAL.contains(&name)
        || THIS_TERMINAL_PREFIXES
            .iter()
            .any(|prefix| name.starts_with(prefix))
}

/// What `holdfast new` sends as the session's `env`.
///
/// It starts from this process's environment but for the variables of this
/// terminal. With `clean`, or for a host-service on another machine, it
/// starts from none of it. Each `NAME=VALUE` of `set` goes over it. A bare
/// `NAME` takes its value from here, as `docker run -e NAME` does.
pub fn for_session(clean: bool, set: &[String]) -> anyhow::Result<HashMap<String, String>> {
    let mut env = HashMap::new();
    if !clean {
        for (name, value) in std::env::vars_os() {
            // The API carries text. A variable that is not UTF-8 stays here.
            let (Ok(name), Ok(value)) = (name.into_string(), value.into_string()) else {
                continue;
            };
            if !describes_this_terminal(&name) {
                env.insert(name, value);
            }
        }
    }
    for assignment in set {
        let (name, value) = match assignment.split_once('=') {
            Some((name, value)) => (name, value.to_owned()),
            None => match std::env::var(assignment) {
                Ok(value) => (assignment.as_str(), value),
                Err(_) => bail!(
                    "--env {assignment}: there is no {assignment} here to pass on (write {assignment}=VALUE)"
                ),
            },
        };
        if name.is_empty() {
            bail!("--env {assignment:?}: write NAME=VALUE");
        }
        env.insert(name.to_owned(), value);
    }
    Ok(env)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_terminal_s_own_variables_stay_behind() {
        for name in [
            "TERM",
            "COLUMNS",
            "TMUX",
            "KITTY_WINDOW_ID",
            "SHLVL",
            "GPG_TTY",
            "HOLDFAST_AUTH_TOKEN",
        ] {
            assert!(describes_this_terminal(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "SSH_AUTH_SOCK",
            "TERMINAL_APP",
            "VIRTUAL_ENV",
        ] {
            assert!(!describes_this_terminal(name), "{name}");
        }
    }

    #[test]
    fn named_variables_are_set_over_the_rest() {
        let env = for_session(true, &["A=1".into(), "B=x=y".into(), "C=".into()]).unwrap();
        assert_eq!(env.len(), 3);
        assert_eq!(env["A"], "1");
        assert_eq!(env["B"], "x=y");
        assert_eq!(env["C"], "");
    }

    #[test]
    fn a_bare_name_must_be_set_here() {
        let error = for_session(true, &["HOLDFAST_SURELY_UNSET_9F3".into()]).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("no HOLDFAST_SURELY_UNSET_9F3 here")
        );
        assert!(for_session(true, &["=1".into()]).is_err());
    }
}
