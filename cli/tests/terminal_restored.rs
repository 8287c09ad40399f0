//! The user's terminal is theirs again after `holdfast attach` and
//! `holdfast logs`: driven through a real terminal (a tmux pane running a
//! shell), whose screen and modes tmux reports afterwards.

#[path = "../../tests/support/mod.rs"]
mod support;

use holdfast_api::proto::host::v1 as pb;

use support::host::*;
use support::tmux::{Tmux, tmux};
use support::*;

/// The modes a program may leave a terminal in, as tmux reports them.
const MODES: &str = "alt=#{alternate_on} cursor=#{cursor_flag} region=#{scroll_region_upper}-#{scroll_region_lower} \
                     keypad=#{keypad_flag} keys=#{keypad_cursor_flag} mouse=#{mouse_any_flag} insert=#{insert_flag} \
                     origin=#{origin_flag} wrap=#{wrap_flag}";

/// The modes of a terminal `rows` high that nothing changed.
fn untouched(rows: u32) -> String {
    format!(
        "alt=0 cursor=1 region=0-{} keypad=0 keys=0 mouse=0 insert=0 origin=0 wrap=1",
        rows - 1
    )
}

/// A user's terminal: a shell in a tmux pane of `size`, whose `holdfast`
/// talks to `host`.
fn terminal(tmux: &std::path::Path, host: &HostService, size: (u32, u32)) -> Tmux {
    let env = [
        ("HOLDFAST_ADDR", host.address.as_str()),
        ("PS1", "$ "),
        ("TERM", "tmux-256color"),
    ];
    let terminal = Tmux::start(tmux, size, &env, &["bash", "--norc", "--noprofile"]);
    eventually_shows(&terminal, "the prompt", |lines| {
        lines.iter().any(|l| l.starts_with('$'))
    });
    terminal
}

/// Types a command line and Enter; `holdfast` is the one built here.
fn run(terminal: &Tmux, line: &str) {
    let bin = binary("holdfast");
    let line = line.replace("holdfast ", &format!("{} ", bin.display()));
    terminal.send_keys(&["-l", &line]);
    terminal.send_keys(&["Enter"]);
}

/// Waits until the pane's text satisfies `shown`.
fn eventually_shows(terminal: &Tmux, what: &str, shown: impl Fn(&[String]) -> bool) -> Vec<String> {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        let lines = terminal.capture();
        if shown(&lines) {
            return lines;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the terminal never showed {what}: {lines:#?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Detaches (Ctrl-]) and waits for the shell's prompt after the word.
fn detach(terminal: &Tmux) {
    terminal.send_keys(&["C-]"]);
    eventually_shows(terminal, "the detach and a prompt", |lines| {
        let last = lines
            .iter()
            .rposition(|line| line.contains("[holdfast: detached"));
        last.is_some_and(|at| lines[at + 1..].iter().any(|line| line.starts_with('$')))
    });
}

async fn started(host: &mut HostService, argv: &[&str], size: (u32, u32)) -> pb::Session {
    let workspace = host.create_workspace("terminals").await.workspace_id;
    let mut request = session_request(&workspace, argv);
    (request.cols, request.rows) = size;
    request
        .env
        .insert("TERM".to_owned(), "xterm-256color".to_owned());
    host.create_session(request).await
}

/// (a) vim at 80×24, attached from 120×35: its whole screen is there (its
/// top lines too), redrawn at the terminal's size; after the detach the
/// shell scrolls the whole terminal again, out of the alternate screen,
/// with a cursor.
#[tokio::test]
async fn vim_comes_back_whole_and_leaves_no_scroll_region_behind() {
    let Some(tmux) = tmux() else { return };
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let file = home.dir.path().join("notes.txt");
    let text: String = (1..=100).map(|n| format!("note {n}\n")).collect();
    std::fs::write(&file, text).expect("write the file");
    let file = file.to_str().expect("utf-8");
    let vim = started(&mut host, &["vim", "-u", "NONE", "-n", file], (80, 24)).await;
    let terminal = terminal(&tmux, &host, (120, 35));
    run(&terminal, &format!("holdfast attach {}", vim.session_id));
    let shown = eventually_shows(&terminal, "vim at the terminal's size", |lines| {
        lines.len() >= 34 && lines[0] == "note 1" && lines[33] == "note 34"
    });
    assert_eq!(terminal.display("#{alternate_on}"), "1", "{shown:#?}");
    // Scrolled a line, vim sets a scroll region (above its status line).
    terminal.send_keys(&["C-e"]);
    eventually_shows(&terminal, "vim scrolled", |lines| lines[0] == "note 2");
    detach(&terminal);
    assert_eq!(terminal.display(MODES), untouched(35));
    run(&terminal, "seq 1 60");
    eventually_shows(
        &terminal,
        "the shell's output scrolled over all 35 rows",
        |lines| lines.len() >= 34 && lines[lines.len() - 2] == "60" && lines[0] == "27",
    );

    // A region set on the normal screen, replayed as it was written, is
    // undone too (leaving the alternate screen resets it in tmux).
    let script = "printf 'region set\\033[1;10r'; sleep 600";
    let region = started(&mut host, &["sh", "-c", script], (120, 35)).await;
    run(
        &terminal,
        &format!("holdfast attach --replay {}", region.session_id),
    );
    eventually_shows(&terminal, "the region set", |lines| {
        lines.iter().any(|line| line.starts_with("region set"))
    });
    assert_eq!(terminal.display("#{scroll_region_lower}"), "9");
    detach(&terminal);
    assert_eq!(terminal.display(MODES), untouched(35));
}

/// (b) A full-screen program after more output than the ring holds (as
/// `htop` or an agent's TUI redrawing for hours): the switch to the
/// alternate screen is long gone from the ring, yet it is drawn there,
/// and its frames never reach the user's scrollback.
#[tokio::test]
async fn a_full_screen_program_past_its_ring_is_drawn_on_the_alternate_screen() {
    let Some(tmux) = tmux() else { return };
    let home = HostHome::new();
    let mut host = home
        .start_with_env(&[], &[("HOLDFAST_SCROLLBACK_BYTES", "4096")])
        .await;
    // 400 frames of about 45 bytes: the ring holds the last hundred.
    let frames = "printf '\\033[?1049h\\033[?25l'; i=0; \
                  while [ $i -lt 400 ]; do i=$((i+1)); printf '\\033[H\\033[2Jframe %d\\n' $i; seq 1 10; done; \
                  sleep 600";
    let tui = started(&mut host, &["sh", "-c", frames], (80, 24)).await;
    let id = tui.session_id.clone();
    // First looked at once the ring has let the switch go.
    let workspace = tui.workspace_id.clone();
    host.list_until("all the frames", &workspace, |list| {
        list.sessions
            .iter()
            .any(|s| s.session_id == id && s.output_offset > 19_000)
    })
    .await;
    let screen = host
        .screen_until("the last frame", &id, |screen| {
            screen.lines[0] == "frame 400" && screen.lines[10] == "10"
        })
        .await;
    assert!(screen.alternate_screen && !screen.complete, "{screen:?}");
    let terminal = terminal(&tmux, &host, (80, 24));
    run(&terminal, &format!("holdfast attach {id}"));
    // What the user sees is the snapshot, line for line.
    let snapshot = support::tmux::trimmed(screen.lines.clone());
    eventually_shows(&terminal, "the snapshot", |lines| lines == snapshot);
    assert_eq!(terminal.display("#{alternate_on} #{cursor_flag}"), "1 0");
    detach(&terminal);
    assert_eq!(terminal.display(MODES), untouched(24));
    let history = terminal.history();
    assert!(!history.contains("frame "), "{history}");
}

/// (c) Attaching draws the screen, not the whole history again: three
/// attach/detach cycles leave no line of the history in the user's
/// scrollback (`--replay` puts it all there, each time).
#[tokio::test]
async fn attaching_again_does_not_pile_the_history_into_scrollback() {
    let Some(tmux) = tmux() else { return };
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let lines = started(
        &mut host,
        &["sh", "-c", "seq -f 'row %g' 1 300; sleep 600"],
        (80, 24),
    )
    .await;
    let id = &lines.session_id;
    let mut stream = host.attach(id, None).await;
    receive_host_text(&mut stream, "row 300").await;
    let terminal = terminal(&tmux, &host, (80, 24));
    for _ in 0..3 {
        run(&terminal, &format!("holdfast attach {id}"));
        eventually_shows(&terminal, "the screen drawn afresh", drawn_afresh);
        detach(&terminal);
    }
    let count = |history: &str| history.lines().filter(|line| *line == "row 100").count();
    assert_eq!(count(&terminal.history()), 0, "{}", terminal.history());
    run(&terminal, &format!("holdfast attach --replay {id}"));
    eventually_shows(&terminal, "the replay", |lines| {
        lines.iter().any(|line| line == "row 300")
            && !lines
                .iter()
                .any(|line| line.contains("[holdfast: detached"))
    });
    detach(&terminal);
    let history = terminal.history();
    assert_eq!(count(&history), 1, "a replay is the history: {history}");
}

/// The session's last rows, drawn over whatever the terminal showed.
fn drawn_afresh(lines: &[String]) -> bool {
    lines.iter().any(|line| line == "row 300")
        && !lines
            .iter()
            .any(|line| line.contains("[holdfast: detached") || line.starts_with("$ "))
}

/// (d) Output cut off inside a string (`ESC X` never ended) does not
/// swallow the detach word, the prompt or what is typed next.
#[tokio::test]
async fn an_unended_string_does_not_swallow_the_shell_after_a_detach() {
    let Some(tmux) = tmux() else { return };
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let script = "printf 'junk \\033Xnever ended'; sleep 600";
    let junk = started(&mut host, &["sh", "-c", script], (80, 24)).await;
    let terminal = terminal(&tmux, &host, (80, 24));
    run(
        &terminal,
        &format!("holdfast attach --replay {}", junk.session_id),
    );
    eventually_shows(&terminal, "the junk", |lines| {
        lines.iter().any(|l| l.contains("junk"))
    });
    detach(&terminal);
    run(&terminal, "echo typed-after");
    eventually_shows(&terminal, "what was typed, and its output", |lines| {
        lines.iter().any(|line| line == "typed-after")
    });
}

/// (e) `holdfast logs` of a full-screen program prints its screen as text
/// and leaves the terminal as it was: no alternate screen, keypad or
/// hidden cursor. Piped, or with `--raw`, the bytes are the program's.
#[tokio::test]
async fn logs_of_a_full_screen_program_leave_the_terminal_as_it_was() {
    let Some(tmux) = tmux() else { return };
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let file = home.dir.path().join("long.txt");
    let text: String = (1..=200)
        .map(|n| format!("line {n} of the file\n"))
        .collect();
    std::fs::write(&file, text).expect("write the file");
    let file = file.to_str().expect("utf-8");
    let less = started(
        &mut host,
        &["env", "LESSHISTFILE=-", "less", file],
        (80, 24),
    )
    .await;
    let id = &less.session_id;
    host.screen_until("less to draw", id, |screen| {
        screen.alternate_screen && screen.lines[0] == "line 1 of the file"
    })
    .await;
    let terminal = terminal(&tmux, &host, (80, 30));
    run(&terminal, &format!("holdfast logs {id}; echo logs-done"));
    eventually_shows(&terminal, "the screen as text", |lines| {
        lines.iter().any(|line| line == "logs-done")
            && lines.iter().any(|line| line == "line 23 of the file")
    });
    assert_eq!(terminal.display(MODES), untouched(30));
    let raw = std::process::Command::new(binary("holdfast"))
        .args(["--addr", &host.address, "logs", "--raw", id])
        .output()
        .expect("run holdfast");
    let raw = String::from_utf8_lossy(&raw.stdout);
    assert!(
        raw.contains("\x1b[?1049h"),
        "the program's own bytes: {raw:?}"
    );
}

/// A read-only attach shows the session, but what is typed goes nowhere
/// and the terminal's size is not the session's.
#[tokio::test]
async fn a_read_only_attach_types_nothing_and_sizes_nothing() {
    let Some(tmux) = tmux() else { return };
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let cat = started(&mut host, &["sh", "-c", "echo ready; cat"], (80, 24)).await;
    let id = &cat.session_id;
    let terminal = terminal(&tmux, &host, (100, 30));
    run(&terminal, &format!("holdfast attach --read-only {id}"));
    eventually_shows(&terminal, "the session", |lines| {
        lines.iter().any(|l| l == "ready")
    });
    terminal.send_keys(&["-l", "typed-in-vain"]);
    terminal.send_keys(&["Enter"]);
    host.write_input(id, "from-elsewhere\n").await;
    eventually_shows(&terminal, "output from elsewhere", |lines| {
        lines.iter().any(|l| l == "from-elsewhere")
    });
    detach(&terminal);
    let (output, _) = look(&host, id, None).await.expect("look");
    let output = String::from_utf8_lossy(&output);
    assert!(!output.contains("typed-in-vain"), "{output:?}");
    let session = host.get_session(id).await;
    assert_eq!((session.cols, session.rows), (80, 24));
}
