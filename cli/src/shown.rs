//! How the command line shows sessions.
//!
//! This holds the `ls` table and its JSON, `show`, and the words for a
//! session's state and age.

use std::collections::HashMap;
use std::time::SystemTime;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use holdfast_api::proto::host::v1 as pb;

use crate::naming;
use crate::stdout::say;

/// How long ago `at` was, in its largest unit.
pub fn age(created_at: Option<prost_types::Timestamp>) -> String {
    let Some(created) = created_at.and_then(|at| SystemTime::try_from(at).ok()) else {
        return "-".into();
    };
    let seconds = SystemTime::now()
        .duration_since(created)
        .unwrap_or_default()
        .as_secs();
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m", seconds / 60),
        3600..86400 => format!("{}h", seconds / 3600),
        _ => format!("{}d", seconds / 86400),
    }
}

/// A session's state: alive, or how it ended.
fn state(session: &pb::Session) -> String {
    if session.unconfirmed {
        // Its host did not answer: as last recorded, not known alive.
        "unknown".into()
    } else if session.alive {
        "alive".into()
    } else {
        ending(session.exit_code, session.signal)
    }
}

/// How a session ended, as `ls`, `show` and `wait` say it.
pub fn ending(exit_code: Option<i32>, signal: Option<i32>) -> String {
    match (exit_code, signal) {
        (Some(code), _) => format!("exit {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        (None, None) => "exited".into(),
    }
}

/// Prints `list` as a table.
///
/// With `workspaces` (id → name), it shows each session's workspace too.
pub fn print_table(
    list: &pb::ListSessionsResponse,
    workspaces: Option<&HashMap<String, String>>,
    every_host: bool,
) {
    let workspace_column = |text: &str| match workspaces {
        Some(_) => format!("  {text}"),
        None => String::new(),
    };
    // A list of every host says which each session is on.
    let host_column = |text: &str| match every_host {
        true => format!("  {}", padded(&cut_to(text, 16), 16)),
        false => String::new(),
    };
    let header = format!(
        "{:<36}  {}  {:<8}  {:<8}  {:>8}  {:<5}{}{}",
        "ID",
        padded("NAME", 24),
        "ATTACHED",
        "STATE",
        "PID",
        "AGE",
        host_column("HOST"),
        workspace_column("WORKSPACE")
    );
    say!("{}", header.trim_end());
    for session in &list.sessions {
        let name = cut_to(naming::name_of(session), 24);
        let workspace = workspaces
            .and_then(|names| names.get(&session.workspace_id))
            .map_or(session.workspace_id.as_str(), String::as_str);
        let host = if session.host_name.is_empty() {
            &session.host_id
        } else {
            &session.host_name
        };
        let line = format!(
            "{:<36}  {}  {:<8}  {:<8}  {:>8}  {:<5}{}{}",
            session.session_id,
            padded(&name, 24),
            if session.attached { "yes" } else { "no" },
            state(session),
            session.pid,
            age(session.created_at),
            host_column(host),
            workspace_column(workspace)
        );
        say!("{}", line.trim_end());
    }
    if list.source == pb::Source::MemoryOnly as i32 {
        say!(
            "(memory-only view: {}; background sessions may be missing)",
            list.degraded_reason
        );
    }
    for host in list.hosts.iter().filter(|host| !host.answered) {
        say!(
            "(host {} did not answer: {}; its sessions are shown as last recorded)",
            host.host_name,
            host.reason
        );
    }
}

/// Prints ended sessions, the most recently ended first: how each
/// ended, how long ago, and how long it ran.
///
/// With `workspaces` (id → name), it shows each session's workspace too.
pub fn print_ended(sessions: &[pb::Session], workspaces: Option<&HashMap<String, String>>) {
    let mut sessions: Vec<&pb::Session> = sessions.iter().collect();
    let ended_at = |s: &pb::Session| s.ended_at.map(|at| (at.seconds, at.nanos));
    sessions.sort_by_key(|s| std::cmp::Reverse(ended_at(s)));
    let workspace_column = |text: &str| match workspaces {
        Some(_) => format!("  {text}"),
        None => String::new(),
    };
    let header = format!(
        "{:<36}  {}  {:<10}  {:<6}  {:<6}{}",
        "ID",
        padded("NAME", 24),
        "ENDED",
        "AGO",
        "RAN",
        workspace_column("WORKSPACE")
    );
    say!("{}", header.trim_end());
    for session in sessions {
        let workspace = workspaces
            .and_then(|names| names.get(&session.workspace_id))
            .map_or(session.workspace_id.as_str(), String::as_str);
        let line = format!(
            "{:<36}  {}  {:<10}  {:<6}  {:<6}{}",
            session.session_id,
            padded(&cut_to(naming::name_of(session), 24), 24),
            ending(session.exit_code, session.signal),
            age(session.ended_at),
            ran(session),
            workspace_column(workspace)
        );
        say!("{}", line.trim_end());
    }
}

/// How long a session's program ran, from its start to its end.
fn ran(session: &pb::Session) -> String {
    let at = |t: Option<prost_types::Timestamp>| t.and_then(|t| SystemTime::try_from(t).ok());
    let (Some(start), Some(end)) = (at(session.created_at), at(session.ended_at)) else {
        return "-".into();
    };
    let ran = end.duration_since(start).unwrap_or_default();
    match ran.as_secs() {
        0 => format!("{}ms", ran.as_millis()),
        seconds @ 1..60 => format!("{seconds}s"),
        seconds @ 60..3600 => format!("{}m", seconds / 60),
        seconds => format!("{}h", seconds / 3600),
    }
}

/// `text` in at most `columns` columns of a terminal.
///
/// A cut one ends in `…`, as docker's tables cut a long command, so it is
/// not taken for whole. Widths are a terminal's: a CJK character or an
/// emoji takes two columns.
fn cut_to(text: &str, columns: usize) -> String {
    if text.width() <= columns {
        return text.to_owned();
    }
    let mut cut = String::new();
    let mut used = 0;
    for c in text.chars() {
        let width = c.width().unwrap_or(0);
        if used + width > columns - 1 {
            break;
        }
        used += width;
        cut.push(c);
    }
    cut.push('…');
    cut
}

/// `text` padded with spaces to `columns` columns of a terminal.
fn padded(text: &str, columns: usize) -> String {
    let pad = columns.saturating_sub(text.width());
    format!("{text}{}", " ".repeat(pad))
}

/// A list as `ls --json` prints it.
pub fn list_json(list: &pb::ListSessionsResponse) -> serde_json::Value {
    let sessions: Vec<_> = list.sessions.iter().map(session_json).collect();
    let source = if list.source == pb::Source::MemoryOnly as i32 {
        "memory_only"
    } else {
        "complete"
    };
    let hosts: Vec<_> = list
        .hosts
        .iter()
        .map(|host| {
            serde_json::json!({
                "host_id": host.host_id,
                "host_name": host.host_name,
                "address": host.address,
                "answered": host.answered,
                "reason": host.reason,
            })
        })
        .collect();
    serde_json::json!({ "sessions": sessions, "source": source, "degraded_reason": list.degraded_reason, "hosts": hosts })
}

/// Seconds since the epoch, as JSON shows a time.
fn epoch_seconds(at: Option<prost_types::Timestamp>) -> Option<f64> {
    let at = SystemTime::try_from(at?).ok()?;
    Some(
        at.duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64(),
    )
}

/// A session as `ls --json` shows it.
fn session_json(session: &pb::Session) -> serde_json::Value {
    serde_json::json!({
        "session_id": session.session_id,
        "workspace_id": session.workspace_id,
        "host_id": session.host_id,
        "host_name": session.host_name,
        "unconfirmed": session.unconfirmed,
        "name": session.name,
        "title": session.title,
        "attached": session.attached,
        "alive": session.alive,
        "exit_code": session.exit_code,
        "signal": session.signal,
        "pid": session.pid,
        "cols": session.cols,
        "rows": session.rows,
        "output_offset": session.output_offset,
        "created_at": epoch_seconds(session.created_at),
    })
}

/// Prints what `show` tells of a session: a line a field, or JSON.
pub fn print_session(session: &pb::Session, json: bool) -> anyhow::Result<()> {
    if json {
        let mut shown = session_json(session);
        shown["argv"] = serde_json::json!(session.argv);
        shown["cwd"] = serde_json::json!(session.cwd);
        shown["ended_at"] = serde_json::json!(epoch_seconds(session.ended_at));
        say!("{}", serde_json::to_string_pretty(&shown)?);
        return Ok(());
    }
    let command = if session.argv.is_empty() {
        "(the login shell)".to_owned()
    } else {
        naming::command_line(&session.argv).unwrap_or_else(|| session.argv.join(" "))
    };
    say!("id          {}", session.session_id);
    say!("name        {}", naming::name_of(session));
    say!("title       {}", session.title);
    say!("workspace   {}", session.workspace_id);
    say!("command     {command}");
    say!(
        "cwd         {}",
        if session.cwd.is_empty() {
            "(home)"
        } else {
            &session.cwd
        }
    );
    say!("state       {}", state(session));
    say!(
        "attached    {}",
        if session.attached { "yes" } else { "no" }
    );
    // Nothing remembers these of a session the daemon has forgotten.
    if session.pid != 0 {
        say!("pid         {}", session.pid);
        say!("size        {}x{}", session.cols, session.rows);
        say!("output      {} bytes", session.output_offset);
    }
    say!("created     {} ago", age(session.created_at));
    if session.ended_at.is_some() {
        say!("ended       {} ago", age(session.ended_at));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::cut_to;

    #[test]
    fn a_cut_name_says_so() {
        assert_eq!(cut_to("build", 24), "build");
        assert_eq!(cut_to(&"x".repeat(24), 24), "x".repeat(24));
        assert_eq!(cut_to("bash -c 'pwd; echo FOO=$X'", 10), "bash -c '…");
        assert_eq!(cut_to("ünïcödé-name", 5), "ünïc…");
    }
}
