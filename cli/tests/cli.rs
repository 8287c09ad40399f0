//! The `holdfast` command line against the real host-service.

#[path = "../../tests/support/mod.rs"]
mod support;

use std::process::{Command, Output};

use holdfast_api::proto::host::v1 as pb;

use support::host::*;
use support::*;

/// A host-service in a home of its own, with one session running `script`
/// (`sh -c`) in a workspace named `name`.
async fn host_running(
    name: &str,
    script: &str,
) -> (
    HostHome,
    HostService,
    String,
    holdfast_api::proto::host::v1::Session,
) {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace(name).await.workspace_id;
    let target = host
        .create_session(session_request(&workspace, &["sh", "-c", script]))
        .await;
    (home, host, workspace, target)
}

/// Runs `holdfast [flags] attach TARGET` in a session of `host` (a real
/// terminal) and opens that terminal's screen; returns the viewer's id.
async fn viewer_of(
    host: &mut HostService,
    workspace: &str,
    target: &str,
    flags: &[&str],
) -> (
    String,
    tonic::Streaming<holdfast_api::proto::host::v1::AttachSessionResponse>,
) {
    let cli = binary("holdfast");
    let address = host.address.clone();
    let mut argv = vec![cli.to_str().expect("utf-8 path"), "--addr", &address];
    argv.push("attach");
    argv.extend(flags);
    argv.push(target);
    let viewer = host.create_session(session_request(workspace, &argv)).await;
    let screen = host.attach(&viewer.session_id, None).await;
    (viewer.session_id, screen)
}

/// `holdfast attach` shows a session's history without the terminal
/// queries in it (device attributes, cursor position), which a real
/// terminal would answer again, typing the answers into the program; a
/// query the program makes once attached reaches the terminal. `logs`
/// leaves them all out of what it prints to a terminal. (The viewers'
/// terminals here are sessions', which answer nothing: what they show is
/// what the CLI wrote.)
#[tokio::test]
async fn attach_leaves_out_the_queries_in_history_but_not_live_ones() {
    let (_home, mut host, workspace, target) = host_running(
        "queries",
        "printf 'before\\033[c\\033[6n\\033]11;?\\007|'; read x; printf 'live\\033[6n'; exec sleep 600",
    )
    .await;
    let mut stream = host.attach(&target.session_id, None).await;
    receive_host_text(&mut stream, "|").await;
    drop(stream);
    let (_viewer, mut screen) = viewer_of(&mut host, &workspace, &target.session_id, &[]).await;
    let shown = receive_host_text(&mut screen, "before|").await;
    host.write_input(&target.session_id, "go\n").await;
    let shown = shown + &receive_host_text(&mut screen, "live\x1b[6n").await;
    assert!(
        !shown.contains("\x1b[c") && !shown.contains("\x1b]11;?"),
        "{shown:?}"
    );
    assert_eq!(shown.matches("\x1b[6n").count(), 1, "{shown:?}");

    // `logs` to a terminal leaves them all out (only this shell would take
    // the answers); piped, it prints the output as it was written.
    let piped = stdout_of(&holdfast(&host.address, &["logs", &target.session_id]));
    assert!(piped.starts_with("before\x1b[c\x1b[6n"), "{piped:?}");
    let cli = binary("holdfast");
    let argv = [
        cli.to_str().expect("utf-8 path"),
        "--addr",
        &host.address,
        "logs",
        &target.session_id,
    ];
    let printer = host
        .create_session(session_request(&workspace, &argv))
        .await;
    let mut printed = host.attach(&printer.session_id, None).await;
    let printed = receive_host_text(&mut printed, "live").await;
    assert!(
        printed.contains("before|") && !printed.contains("\x1b[6n"),
        "{printed:?}"
    );
}

/// What a command that had to fail said: its stderr, once it is seen to
/// have failed.
fn failure_text(output: &Output) -> String {
    assert!(
        !output.status.success(),
        "it should have failed: {output:?}"
    );
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// What bash offers when TAB is pressed after `line` (its words, the last
/// one being completed), with the script `holdfast completions bash`
/// printed and `HOLDFAST_ADDR` set to `address`; flags left out (clap
/// offers them beside any value). The words reach the script as bash
/// gives them, split at `:` and `=` too.
fn bash_completes(address: &str, line: &[&str]) -> Vec<String> {
    let script = stdout_of(&holdfast(address, &["completions", "bash"]));
    let mut words = Vec::new();
    for (at, word) in line.iter().enumerate() {
        let mut piece = String::new();
        for c in word.chars() {
            if matches!(c, ':' | '=') {
                if !piece.is_empty() {
                    words.push(std::mem::take(&mut piece));
                }
                words.push(c.to_string());
            } else {
                piece.push(c);
            }
        }
        // The word being completed, last, may be empty.
        if !piece.is_empty() || at == line.len() - 1 {
            words.push(piece);
        }
    }
    let completed = Command::new("bash")
        .args([
            "-c",
            r#"eval "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1));
               _clap_complete_holdfast holdfast "${COMP_WORDS[COMP_CWORD]}" holdfast
               printf '%s\n' "${COMPREPLY[@]}""#,
            "bash",
            &script,
        ])
        .args(&words)
        .env("HOLDFAST_ADDR", address)
        .env_remove("HOLDFAST_AUTH_TOKEN")
        .output()
        .expect("run bash");
    let mut offered: Vec<String> = stdout_of(&completed)
        .lines()
        .filter(|word| !word.starts_with('-'))
        .map(str::to_owned)
        .collect();
    offered.sort();
    offered
}

/// `holdfast completions bash` prints a script that bash takes and that
/// completes the CLI's commands, without a host-service to ask.
#[test]
fn completions_complete_the_commands_with_no_host_service() {
    assert_eq!(
        bash_completes("127.0.0.1:1", &["holdfast", "ren"]),
        ["rename"]
    );
    assert_eq!(
        bash_completes("127.0.0.1:1", &["holdfast", "attach", ""]),
        Vec::<String>::new(),
        "no names, and no error in the line"
    );
}

/// TAB offers the live sessions by the names `holdfast` finds them by (an
/// id where a name is two sessions' or would need quoting), and the open
/// workspaces by name, from the host-service the line names.
#[tokio::test]
async fn completions_offer_the_names_of_live_sessions_and_open_workspaces() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("builds").await.workspace_id;
    let closed = host.create_workspace("old").await.workspace_id;
    host.close_workspace(&closed).await;
    let named = |name: &str| pb::CreateSessionRequest {
        title: Some(name.into()),
        ..session_request(&workspace, &["sleep", "600"])
    };
    host.create_session(named("editor")).await;
    let twins = [
        host.create_session(named("twin")).await,
        host.create_session(named("twin")).await,
    ];
    let spaced = host.create_session(named("two words")).await;
    let ended = host.create_session(named("ended")).await;
    host.dispose(&ended.session_id).await;
    // No name, and titled by its program as another is named: `holdfast`
    // would find the named one by that word, so this one goes by its id.
    let titled = host
        .create_session(session_request(
            &workspace,
            &["sh", "-c", "printf '\\033]2;editor\\007'; exec sleep 600"],
        ))
        .await;
    host.list_until("the program's title", &workspace, |list| {
        list.sessions
            .iter()
            .any(|s| s.session_id == titled.session_id && s.title == "editor")
    })
    .await;

    let address = host.address.clone();
    let mut expected = vec![
        "editor".to_owned(),
        twins[0].session_id.clone(),
        twins[1].session_id.clone(),
        spaced.session_id.clone(),
        titled.session_id.clone(),
    ];
    expected.sort();
    let line = ["holdfast", "--addr", &address, "attach", ""];
    assert_eq!(bash_completes("127.0.0.1:1", &line), expected);
    // And a session given by its id whose id happens to start so.
    let starting_ed: Vec<String> = expected
        .iter()
        .filter(|c| c.starts_with("ed"))
        .cloned()
        .collect();
    assert_eq!(
        bash_completes(
            "127.0.0.1:1",
            &["holdfast", "--addr", &address, "kill", "ed"]
        ),
        starting_ed
    );
    assert_eq!(
        bash_completes(
            "127.0.0.1:1",
            &["holdfast", "--addr", &address, "ls", "--workspace", ""]
        ),
        ["builds"],
        "open workspaces only"
    );
    // Joined to its flag by `=`, where bash cuts the word: what bash puts
    // in place of `bu` is the name alone.
    assert_eq!(
        bash_completes(
            "127.0.0.1:1",
            &["holdfast", "--addr", &address, "ls", "--workspace=bu"]
        ),
        ["builds"]
    );
}

#[tokio::test]
async fn new_ls_count_send_kill_through_the_cli() {
    let home = HostHome::new();
    let host = home.start(&[]).await;
    let address = host.address.clone();

    let id = stdout_of(&holdfast(
        &address,
        &[
            "new",
            "--title",
            "agent",
            "--",
            "sh",
            "-c",
            "read line; echo got:$line; exec sleep 1000",
        ],
    ))
    .trim()
    .to_owned();
    let hidden = stdout_of(&holdfast(
        &address,
        &["new", "--hidden", "--", "sleep", "1000"],
    ))
    .trim()
    .to_owned();
    let table = stdout_of(&holdfast(&address, &["ls"]));
    assert!(
        table
            .lines()
            .next()
            .is_some_and(|header| header.starts_with("ID")),
        "{table}"
    );
    assert!(
        table.contains(&id) && table.contains("agent") && table.contains("alive"),
        "{table}"
    );
    assert!(
        !table.contains(&hidden),
        "hidden sessions are not listed: {table}"
    );
    assert_eq!(stdout_of(&holdfast(&address, &["count"])).trim(), "1");
    // Attached from anywhere (here a client of the API), it is no longer
    // in the background (it was counted all the same).
    let attached = host.attach(&id, None).await;
    let count = stdout_of(&holdfast(&address, &["count"]));
    assert_eq!(count.trim(), "0");
    drop(attached);

    stdout_of(&holdfast(&address, &["send", &id, "hello\n"]));
    let json: serde_json::Value =
        serde_json::from_str(&stdout_of(&holdfast(&address, &["ls", "--json"]))).expect("json");
    assert_eq!(json["source"], "complete");
    assert_eq!(json["sessions"][0]["session_id"], id.as_str());
    eventually("the input to be echoed", || {
        let address = address.clone();
        async move {
            let json: serde_json::Value =
                serde_json::from_str(&stdout_of(&holdfast(&address, &["ls", "--json"]))).ok()?;
            // "hello\r\n" echoed, then "got:hello\r\n": 7 + 11 bytes.
            (json["sessions"][0]["output_offset"].as_u64()? >= 18).then_some(())
        }
    })
    .await;

    assert!(stdout_of(&holdfast(&address, &["kill", &id])).contains("disposed"));
    let table = stdout_of(&holdfast(&address, &["ls"]));
    assert!(!table.contains(&id), "{table}");
    let workspaces = stdout_of(&holdfast(&address, &["workspace", "list"]));
    assert!(
        workspaces.contains("default") && workspaces.contains("open"),
        "{workspaces}"
    );
    assert!(
        stdout_of(&holdfast(&address, &["workspace", "close", "default"]))
            .contains("1 session(s) disposed")
    );
}

#[test]
fn errors_read_like_a_person_wrote_them() {
    // Nothing listens on port 9 of loopback.
    let output = holdfast("http://127.0.0.1:9", &["ls"]);
    let stderr = failure_text(&output);
    assert!(
        stderr.contains("cannot reach the host-service") && stderr.contains("host-service"),
        "{stderr}"
    );
    // With its cause.
    assert!(stderr.contains("Connection refused"), "{stderr}");
}

#[tokio::test]
async fn unknown_ids_are_reported_with_a_non_zero_exit() {
    let home = HostHome::new();
    let host = home.start(&[]).await;
    let output = holdfast(
        &host.address,
        &["kill", "00000000-0000-4000-8000-000000000000"],
    );
    let said = failure_text(&output);
    assert!(said.contains("no session with id"), "{said}");
    let output = holdfast(&host.address, &["ls", "--workspace", "nope"]);
    let said = failure_text(&output);
    assert!(said.contains("no open workspace"), "{said}");
}

#[tokio::test]
async fn logs_prints_the_output_so_far_or_follows_it_to_the_exit() {
    use std::io::Read;
    let (_home, host, workspace, target) =
        host_running("logs", "echo first; read line; echo got:$line; exit 5").await;
    let id = target.session_id.as_str();
    host.list_until("its first line written", &workspace, |list| {
        let first = "first\r\n".len() as u64;
        list.sessions
            .iter()
            .any(|s| s.session_id == id && s.output_offset == first)
    })
    .await;
    let look = holdfast(&host.address, &["logs", id]);
    assert_eq!(
        stdout_of(&look),
        "first\r\n",
        "what it wrote so far, and no wait"
    );

    let mut follower = Command::new(binary("holdfast"))
        .args(["--addr", &host.address, "logs", "--follow", id])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run holdfast logs --follow");
    host.write_input(id, "x\n").await;
    let status = wait_with_deadline(&mut follower);
    let mut followed = String::new();
    follower
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut followed)
        .expect("read");
    assert!(status.success(), "{status}: {followed}");
    assert!(
        followed.starts_with("first\r\n") && followed.ends_with("got:x\r\n"),
        "to the exit: {followed:?}"
    );

    let unknown = holdfast(
        &host.address,
        &["logs", "00000000-0000-4000-8000-000000000000"],
    );
    let said = failure_text(&unknown);
    assert!(said.contains("no session with id"), "{said}");
}

/// `holdfast logs -f ID | less`: a reader that stops reading holds the
/// output back, however much the program writes meanwhile, and gets all of
/// it once it reads again. A program writing a byte at a time sends a
/// frame a byte; with hyper's default windows the command's connection was
/// dropped ("h2 protocol error") once about 10,000 of them waited unread.
#[tokio::test]
async fn a_follower_that_stops_reading_is_held_back_not_cut_off() {
    use std::io::Read;
    // Dots one at a time (a frame each), then more than the command's
    // stream window in bulk, so flow control holds the host-service back
    // too. What the command's window does not take fits in the host's
    // window for the stream and the daemon's ring: nothing is skipped for
    // want of room.
    const DOTS: usize = 30_000;
    const BULK: usize = 1_500_000;
    let script = format!(
        "read go; perl -e '$|=1; for (1..{DOTS}) {{ print \".\"; select(undef, undef, undef, 0.00005) }}'; \
         head -c {BULK} /dev/zero | tr '\\0' .; echo done; read end"
    );
    let (_home, host, workspace, target) = host_running("stalled", &script).await;
    let id = target.session_id.as_str();
    let (mut reader, mut writer) = std::io::pipe().expect("pipe");
    // The pipe is full before the command writes a byte: its reader has
    // stopped from the start.
    let filler = fill(&mut writer);
    let mut follower = Command::new(binary("holdfast"))
        .args(["--addr", &host.address, "logs", "--follow", id])
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run holdfast logs --follow");
    host.list_until("the follower attached", &workspace, |list| {
        list.sessions
            .iter()
            .any(|s| s.session_id == id && s.attached)
    })
    .await;
    host.write_input(id, "\n").await;
    let written = ("\r\n".len() + DOTS + BULK + "done\r\n".len()) as u64;
    host.list_until("every dot written", &workspace, |list| {
        list.sessions
            .iter()
            .any(|s| s.session_id == id && s.output_offset >= written)
    })
    .await;
    let drained = std::thread::spawn(move || {
        let mut read = Vec::new();
        reader.read_to_end(&mut read).expect("read");
        read
    });
    host.write_input(id, "\n").await;
    let status = wait_with_deadline(&mut follower);
    let mut stderr = String::new();
    follower
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    assert!(status.success(), "{status}: {stderr}");
    let read = drained.join().expect("reader");
    let followed = String::from_utf8_lossy(&read[filler..]);
    assert_eq!(
        followed.matches('.').count(),
        DOTS + BULK,
        "every dot ({stderr})"
    );
    assert!(
        followed.ends_with("done\r\n\r\n"),
        "to the exit: {:?}",
        &followed[followed.len().saturating_sub(200)..]
    );
}

/// Fills `pipe` until it takes no more (however large the kernel made it);
/// returns how many bytes went in. It blocks again afterwards.
fn fill(pipe: &mut std::io::PipeWriter) -> usize {
    use rustix::fs::{OFlags, fcntl_getfl, fcntl_setfl};
    use std::io::Write;
    let flags = fcntl_getfl(&*pipe).expect("pipe flags");
    fcntl_setfl(&*pipe, flags | OFlags::NONBLOCK).expect("non-blocking");
    let mut filled = 0;
    loop {
        match pipe.write(&[b'F'; 4096]) {
            Ok(written) => filled += written,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(error) => panic!("filling the pipe: {error}"),
        }
    }
    fcntl_setfl(&*pipe, flags).expect("blocking again");
    filled
}

/// `holdfast status | head -1`: output to a reader that has gone away ends
/// the command quietly and successfully, as it would `ls`, not in a panic.
#[tokio::test]
async fn a_closed_stdout_ends_the_command_quietly() {
    let home = HostHome::new();
    let host = home.start(&[]).await;
    stdout_of(&holdfast(&host.address, &["new", "--", "sleep", "600"]));
    for args in [&["status"][..], &["ls"], &["workspace", "list"]] {
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let output = Command::new(binary("holdfast"))
            .arg("--addr")
            .arg(&host.address)
            .args(args)
            .stdout(writer)
            .output()
            .expect("run holdfast");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "{args:?}: {}: {stderr}",
            output.status
        );
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}

/// `holdfast new --attach` in a script, its input not a terminal and at its
/// end at once: the program's output, even what comes after that end, is
/// shown to the last byte, and its exit status is the command's.
#[tokio::test]
async fn new_attach_with_input_at_its_end_shows_all_output_and_the_exit() {
    let home = HostHome::new();
    let host = home.start(&[]).await;
    // stdin is /dev/null; the output comes a while after its end.
    let output = holdfast(
        &host.address,
        &[
            "new",
            "--attach",
            "--",
            "sh",
            "-c",
            "sleep 1; echo late output; exit 5",
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(5), "{stderr}");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("late output"),
        "{stderr}"
    );
    assert!(stderr.contains("exited with code 5"), "{stderr}");
}

/// The end of a new session's input that is not a terminal reaches its
/// program as the end of input (the end-of-file key, as its user would
/// type it), as `docker run -i` closes its input: a program that reads its
/// input to the end ends. Before, `cat` waited for more for ever.
#[tokio::test]
async fn the_end_of_piped_input_ends_a_new_sessions_input() {
    let home = HostHome::new();
    let host = home.start(&[]).await;
    // The last line unended: the end-of-file key hands it over first.
    for input in [&b"abc\ndef\n"[..], b"abc\ndef"] {
        let argv = ["sh", "-c", "stty -echo; tr a-z A-Z; exit 5"];
        let (status, stdout, stderr) = new_attached_with_input(&host.address, &argv, input);
        assert_eq!(status.code(), Some(5), "{stdout:?} {stderr}");
        assert!(
            stdout.contains("ABC") && stdout.contains("DEF"),
            "{stdout:?}"
        );
    }
}

/// Input that is not a terminal is data: a byte that is the detach key
/// goes to the program with the rest instead of detaching.
#[tokio::test]
async fn piped_input_holding_the_detach_key_is_sent_whole() {
    let home = HostHome::new();
    let host = home.start(&[]).await;
    let argv = ["sh", "-c", "stty raw -echo; head -c 3 | od -An -tx1"];
    let (status, stdout, stderr) = new_attached_with_input(&host.address, &argv, b"a\x1db");
    assert!(
        stdout.contains("61 1d 62"),
        "all three bytes: {stdout:?} {stderr}"
    );
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("detached"), "{stderr}");
}

/// Piped input a program does not read for a while, more than the daemon
/// holds for it, is held by `attach` (refused `INPUT_FULL`) and sent again
/// as the program reads, to the last byte.
#[tokio::test]
async fn input_the_program_does_not_read_yet_is_held_and_sent_whole() {
    const BYTES: usize = 3 << 20;
    let home = HostHome::new();
    let host = home.start(&[]).await;
    let script = format!("stty raw -echo; sleep 2; head -c {BYTES} | wc -c");
    let (status, stdout, stderr) =
        new_attached_with_input(&host.address, &["sh", "-c", &script], &vec![b'x'; BYTES]);
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stdout.contains(&BYTES.to_string()), "{stdout:?} {stderr}");
}

/// `holdfast new --attach -- ARGV` with `input` piped in (from a thread of
/// its own, so a program that reads it late holds up nothing here), to its
/// exit: its status, stdout and stderr, once all the input was taken.
fn new_attached_with_input(
    address: &str,
    argv: &[&str],
    input: &[u8],
) -> (std::process::ExitStatus, String, String) {
    use std::io::Write;
    let mut cli = Command::new(binary("holdfast"))
        .args(["--addr", address, "new", "--attach", "--"])
        .args(argv)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run holdfast");
    let mut stdin = cli.stdin.take().expect("stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let status = wait_with_deadline(&mut cli);
    let output = cli.wait_with_output().expect("output");
    writer
        .join()
        .expect("writer")
        .expect("all of the input taken");
    (
        status,
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Commands run at once on a fresh database, each finding no default
/// workspace: they all end up in one, and `holdfast ls` shows every
/// session they started.
#[tokio::test]
async fn commands_run_at_once_share_one_default_workspace() {
    let home = HostHome::new();
    let host = home.start(&[]).await;
    let starts: Vec<_> = (0..4)
        .map(|_| {
            Command::new(binary("holdfast"))
                .args(["--addr", &host.address, "new", "--", "sleep", "600"])
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("run holdfast")
        })
        .collect();
    let mut started = Vec::new();
    for start in starts {
        let output = start.wait_with_output().expect("wait");
        assert!(output.status.success());
        started.push(stdout_of(&output).trim().to_owned());
    }
    let listed = stdout_of(&holdfast(&host.address, &["ls"]));
    for id in &started {
        assert!(listed.contains(id.as_str()), "{id} missing from {listed}");
    }
    let workspaces = stdout_of(&holdfast(&host.address, &["workspace", "list"]));
    let open = workspaces
        .lines()
        .filter(|line| line.contains(" open ") && line.ends_with("default"))
        .count();
    assert_eq!(open, 1, "{workspaces}");
}

/// Detaching from a full-screen program switches back what it switched
/// the terminal into: the shell prompt comes back on the normal screen,
/// with a cursor, pastes are not bracketed, and keys are not sent in the
/// kitty keyboard protocol.
#[tokio::test]
async fn detaching_switches_back_the_modes_a_program_set() {
    let (_home, mut host, workspace, target) = host_running(
        "modes",
        "printf '\\033[?1049h\\033[>1u\\033[?2004h\\033[?25l'; echo full-screen; exec sleep 600",
    )
    .await;
    // Replayed, the program's own sequences reach the terminal.
    let (viewer, mut screen) =
        viewer_of(&mut host, &workspace, &target.session_id, &["--replay"]).await;
    receive_host_text(&mut screen, "full-screen").await;
    host.write_input(&viewer, "\x1d").await;
    let after = receive_host_text(&mut screen, "detached from").await;
    assert!(
        after.contains("\x1b[<1u\x1b[?2004l\x1b[?1049l\x1b[?25h\x1b[0m"),
        "the modes are switched back before the detach is told: {after:?}"
    );
    // Drawn as a screen, the modes a terminal emulator knows of are set
    // (the kitty keyboard flags are not among them), and switched back.
    let (viewer, mut screen) = viewer_of(&mut host, &workspace, &target.session_id, &[]).await;
    receive_host_text(&mut screen, "full-screen").await;
    host.write_input(&viewer, "\x1d").await;
    let after = receive_host_text(&mut screen, "detached from").await;
    assert!(
        after.contains("\x1b[?2004l\x1b[?1049l\x1b[?25h\x1b[0m") && !after.contains("\x1b[<1u"),
        "the modes are switched back before the detach is told: {after:?}"
    );
}

/// When the session it shows ends, `attach` returns to its shell at once,
/// though it was reading the keyboard (a read no key will end).
#[tokio::test]
async fn attach_returns_as_soon_as_its_session_ends() {
    let (_home, mut host, workspace, target) =
        host_running("ends", "echo waiting; read x; exit 3").await;
    let (_viewer, mut screen) = viewer_of(&mut host, &workspace, &target.session_id, &[]).await;
    receive_host_text(&mut screen, "waiting").await;
    host.write_input(&target.session_id, "go\n").await;
    let exited = receive_host_exit(&mut screen).await;
    assert_eq!(exited.exit_code, Some(3), "it exits as its session did");
}

/// Another detach key (vim uses Ctrl-] for its tags): Ctrl-] then reaches
/// the program, and the chosen key detaches.
#[tokio::test]
async fn the_detach_key_can_be_chosen() {
    let (_home, mut host, workspace, target) = host_running(
        "keys",
        "stty raw -echo; echo keys; \
             while :; do echo \"got$(dd bs=1 count=1 2>/dev/null | od -An -tx1)\"; done",
    )
    .await;
    let (viewer, mut screen) = viewer_of(
        &mut host,
        &workspace,
        &target.session_id,
        &["--detach-key", "^q"],
    )
    .await;
    receive_host_text(&mut screen, "keys").await;
    let mut typed = host.attach(&target.session_id, None).await;
    host.write_input(&viewer, "\x1d").await;
    // The program got Ctrl-]: the viewer is still attached.
    receive_host_text(&mut typed, "got 1d").await;
    host.write_input(&viewer, "\x11").await;
    receive_host_text(&mut screen, "detached from").await;
}

/// Keys for a session that takes no input (its program let go of its
/// terminal; one that exited and is being reaped answers the same) are
/// dropped with a word, and the screen stays: the detach key still works.
/// The CLI used to end with an error.
#[tokio::test]
async fn keys_a_session_cannot_take_are_dropped_with_a_word() {
    let marks = tempfile::tempdir().expect("temp dir");
    let let_go = marks.path().join("let-go");
    let script = format!(
        "echo ready; exec </dev/null >/dev/null 2>&1; touch '{}'; exec sleep 600",
        let_go.display()
    );
    let (_home, mut host, workspace, target) = host_running("no-input", &script).await;
    let (viewer, mut screen) = viewer_of(&mut host, &workspace, &target.session_id, &[]).await;
    receive_host_text(&mut screen, "ready").await;
    eventually("the program to let go of its terminal", || {
        let let_go = let_go.clone();
        async move { let_go.exists().then_some(()) }
    })
    .await;
    host.write_input(&viewer, "x").await;
    receive_host_text(&mut screen, "keys not taken: ").await;
    // Told once: more keys go without another word.
    host.write_input(&viewer, "yz").await;
    host.write_input(&viewer, "\x1d").await;
    let after = receive_host_text(&mut screen, "detached from").await;
    assert!(!after.contains("not taken"), "told again: {after:?}");
}

/// SIGINT or SIGQUIT from outside (raw mode keeps Ctrl-C for the
/// session) detaches as SIGTERM does: the terminal restored, the session
/// left running.
#[tokio::test]
async fn an_interrupt_from_outside_detaches() {
    use std::io::{BufRead, BufReader};
    let (_home, mut host, workspace, target) =
        host_running("interrupt", "echo ready; exec sleep 600").await;
    for signal in [rustix::process::Signal::INT, rustix::process::Signal::QUIT] {
        let mut viewer = Command::new(binary("holdfast"))
            .args(["--addr", &host.address, "attach", &target.session_id])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run holdfast attach");
        let mut shown = BufReader::new(viewer.stdout.take().expect("stdout"));
        let mut line = String::new();
        shown.read_line(&mut line).expect("read");
        assert!(line.contains("ready"), "{line:?}");
        rustix::process::kill_process(rustix::process::Pid::from_child(&viewer), signal)
            .expect("signal the CLI");
        let output = viewer.wait_with_output().expect("wait");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{signal:?}: {stderr}");
        assert!(stderr.contains("keeps running"), "{signal:?}: {stderr}");
    }
    let list = host.list(&workspace).await;
    assert!(
        list.sessions
            .iter()
            .any(|s| s.session_id == target.session_id)
    );
}

/// A paste far larger than a terminal holds, and than the 1 MiB the
/// daemon holds for a program, into one that reads nothing for longer
/// than the host-service waits on the daemon: the CLI sends the refused
/// keys again, and every byte reaches the program once it reads, in
/// order, none twice.
#[tokio::test]
async fn a_large_paste_into_a_busy_program_arrives_whole() {
    use std::io::{BufRead, BufReader, Read, Write};
    let home = HostHome::new();
    let host = home.start(&["--operation-timeout-ms", "300"]).await;
    let mut command = Command::new(binary("holdfast"))
        .args([
            "--addr",
            &host.address,
            "new",
            "--attach",
            "--",
            "sh",
            "-c",
            "stty raw -echo; echo ready; sleep 1; timeout --foreground 20 head -c 1500000 | wc -c",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run holdfast");
    let mut stdout = BufReader::new(command.stdout.take().expect("stdout"));
    let mut line = String::new();
    // Pasted once the terminal is raw (a cooked one keeps 4 KiB a line).
    while !line.contains("ready") {
        line.clear();
        assert!(
            stdout.read_line(&mut line).expect("read") > 0,
            "ended early"
        );
    }
    let mut stdin = command.stdin.take().expect("stdin");
    stdin.write_all(&[b'p'; 1_500_000]).expect("paste");
    drop(stdin);
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).expect("read");
    let output = command.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{rest} {stderr}");
    assert_eq!(rest.trim(), "1500000", "{stderr}");
}

/// A session ended by a signal: the command's status is 128 plus the
/// signal, as a shell gives.
#[tokio::test]
async fn new_attach_exits_as_a_shell_would_for_a_signal() {
    let home = HostHome::new();
    let host = home.start(&[]).await;
    let output = holdfast(
        &host.address,
        &["new", "--attach", "--", "sh", "-c", "kill -KILL $$"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(128 + 9), "{stderr}");
    assert!(stderr.contains("ended by signal 9"), "{stderr}");
}

/// Runs `holdfast attach` inside a real PTY (a session of the same host),
/// types into it, and reads its screen.
#[tokio::test]
async fn attach_replays_forwards_keys_follows_resizes_and_detaches() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("attach").await.workspace_id;
    let target = host
        .create_session(session_request(
            &workspace,
            &["sh", "-c", "echo before-attach; exec cat"],
        ))
        .await;
    let cli = binary("holdfast");
    let address = host.address.clone();
    let viewer_argv = [
        cli.to_str().expect("utf-8 path"),
        "--addr",
        &address,
        "attach",
        "--replay",
        &target.session_id,
    ];
    let write = |session_id: &str, data: &[u8]| pb::WriteInputRequest {
        session_id: session_id.to_owned(),
        data: data.to_vec().into(),
        ..Default::default()
    };
    let open_screen = |host: &mut HostService, session_id: String| {
        let mut terminals = host.terminals.clone();
        async move {
            terminals
                .attach_session(pb::AttachSessionRequest {
                    session_id,
                    from_offset: None,
                    ..Default::default()
                })
                .await
                .expect("attach")
                .into_inner()
        }
    };

    // The first viewer runs under a shell that shows the terminal settings
    // after it returns: raw mode must have been undone.
    let mut wrapped = vec!["sh", "-c", "\"$@\"; echo; stty -a; exec sleep 1000", "sh"];
    wrapped.extend(viewer_argv);
    let viewer = host
        .create_session(session_request(&workspace, &wrapped))
        .await;
    let mut screen = open_screen(&mut host, viewer.session_id.clone()).await;
    receive_host_text(&mut screen, "before-attach").await;
    host.terminals
        .write_input(write(&viewer.session_id, b"typed\r"))
        .await
        .expect("type");
    receive_host_text(&mut screen, "typed\r\ntyped\r\n").await;

    host.terminals
        .resize_session(pb::ResizeSessionRequest {
            session_id: viewer.session_id.clone(),
            cols: 101,
            rows: 31,
            ..Default::default()
        })
        .await
        .expect("resize the viewer's terminal");
    host.list_until(
        "the target to follow the viewer's size",
        &workspace,
        |list| {
            list.sessions
                .iter()
                .any(|s| s.session_id == target.session_id && (s.cols, s.rows) == (101, 31))
        },
    )
    .await;

    host.terminals
        .write_input(write(&viewer.session_id, &[0x1d]))
        .await
        .expect("Ctrl-]");
    let shown = receive_host_text(&mut screen, "iexten").await;
    let after = &shown[shown
        .find("detached from")
        .expect("the detach is announced")..];
    assert!(
        after.contains(" icanon ") && after.contains(" echo "),
        "the terminal is back in cooked mode: {after:?}"
    );
    let list = host.list(&workspace).await;
    assert!(
        list.sessions
            .iter()
            .any(|s| s.session_id == target.session_id),
        "detaching leaves the session running"
    );

    // Re-attach: the earlier output comes back, and the exit is shown.
    let again = host
        .create_session(session_request(&workspace, &viewer_argv))
        .await;
    let mut screen = open_screen(&mut host, again.session_id.clone()).await;
    receive_host_text(&mut screen, "before-attach\r\ntyped\r\ntyped\r\n").await;
    host.terminals
        .write_input(write(&again.session_id, &[0x04]))
        .await
        .expect("Ctrl-D");
    receive_host_text(&mut screen, "session exited with code 0").await;
}

/// The host-service restarting under an attached `holdfast attach` (an
/// update, a crash): the CLI attaches again from where its output stopped,
/// nothing shown twice, and keys typed meanwhile still reach the session.
#[tokio::test]
async fn attach_goes_on_across_a_host_service_restart() {
    let home = HostHome::new();
    let listen = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|probe| probe.local_addr())
        .expect("a free port")
        .to_string();
    let mut host = home.start_listening(&listen, &[]).await;
    let workspace = host.create_workspace("restart").await.workspace_id;
    let target = host
        .create_session(session_request(
            &workspace,
            &["sh", "-c", "echo before-restart; exec cat"],
        ))
        .await;
    let (viewer, mut screen) = viewer_of(&mut host, &workspace, &target.session_id, &[]).await;
    receive_host_text(&mut screen, "before-restart").await;

    // A crash: the CLI's streams break mid-session.
    host.stop(rustix::process::Signal::KILL);
    let mut host = home.start_listening(&listen, &[]).await;
    host.write_input(&viewer, "after\r").await;
    let mut screen = host.attach(&viewer, None).await;
    let shown = receive_host_text(&mut screen, "after\r\nafter\r\n").await;
    assert_eq!(
        shown.matches("before-restart").count(),
        1,
        "attached again from where the output stopped: {shown:?}"
    );
    // Said when it was lost and when it was back, keys held meanwhile.
    let lost = shown
        .find("[holdfast: lost the host-service")
        .expect("the loss said");
    let back = shown
        .find("[holdfast: attached again; ")
        .expect("the return said");
    assert!(lost < back, "{shown:?}");

    // An update: stopped in good order, then started again.
    host.stop(rustix::process::Signal::TERM);
    let host = home.start_listening(&listen, &[]).await;
    host.write_input(&viewer, "again\r").await;
    let mut screen = host.attach(&viewer, None).await;
    let shown = receive_host_text(&mut screen, "again\r\nagain\r\n").await;
    assert_eq!(shown.matches("before-restart").count(), 1, "{shown:?}");
    assert_eq!(shown.matches("after").count(), 2, "{shown:?}");

    // Attached again, the CLI resizes under its new stream's token: when
    // it detaches, the session goes back to another client's size.
    let id = target.session_id.as_str();
    let (token, desk) = host.attach_client(id).await;
    assert!(!token.is_empty(), "a token");
    host.resize_as(id, &token, (150, 45)).await;
    host.size_until(&workspace, id, (150, 45)).await;
    host.resize_as(&viewer, "", (101, 31)).await;
    host.size_until(&workspace, id, (101, 31)).await;
    host.write_input(&viewer, "\u{1d}").await;
    host.size_until(&workspace, id, (150, 45)).await;
    drop(desk);
}

/// `holdfast new --attach` in a terminal: the program starts at the
/// terminal's size, its output shows from the first byte, keys reach it,
/// and its exit ends the command.
#[tokio::test]
async fn new_attach_starts_a_session_in_this_terminal() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("terminal").await.workspace_id;
    let cli = binary("holdfast");
    let program = "stty size; read line; echo got:$line; exit 3";
    let argv = [
        cli.to_str().expect("utf-8 path"),
        "--addr",
        &host.address,
        "new",
        "--attach",
        "--",
        "sh",
        "-c",
        program,
    ];
    let mut request = session_request(&workspace, &argv);
    (request.cols, request.rows) = (91, 17);
    let terminal = host.create_session(request).await;
    let mut screen = host.attach(&terminal.session_id, None).await;
    receive_host_text(&mut screen, "17 91\r\n").await;
    host.write_input(&terminal.session_id, "typed\r").await;
    let shown = receive_host_text(&mut screen, "session exited with code 3").await;
    assert!(shown.contains("got:typed"), "{shown:?}");
    // The program's exit code is the command's own.
    let ended = receive_host_exit(&mut screen).await;
    assert_eq!(ended.exit_code, Some(3));
}

#[tokio::test]
async fn status_shows_both_services_their_versions_and_paths() {
    let home = HostHome::new();
    let host = home.start(&[]).await;
    let text = stdout_of(&holdfast(&host.address, &["status"]));
    let daemon_pid = home.serving_daemon_pid().await.expect("a daemon");
    assert!(
        text.contains(&format!(
            "host-service  up, version {}, pid {}",
            holdfast_api::VERSION,
            host.child.id()
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "pty-daemon    up, version {}, pid {daemon_pid}",
            holdfast_api::VERSION
        )),
        "{text}"
    );
    assert!(
        text.contains(&home.socket().display().to_string()),
        "{text}"
    );
    assert!(
        text.contains(&home.database().display().to_string()),
        "{text}"
    );
}

#[tokio::test]
async fn the_cli_sends_the_token_from_the_environment() {
    let home = HostHome::new();
    let host = home
        .start_with_env(&[], &[("HOLDFAST_AUTH_TOKEN", "cli-token")])
        .await;
    let refused = Command::new(binary("holdfast"))
        .args(["--addr", &host.address, "workspace", "list"])
        .env_remove("HOLDFAST_AUTH_TOKEN")
        .output()
        .expect("run holdfast");
    let stderr = failure_text(&refused);
    assert!(stderr.contains("HOLDFAST_AUTH_TOKEN"), "{stderr}");
    let admitted = Command::new(binary("holdfast"))
        .args(["--addr", &host.address, "workspace", "create", "tokened"])
        .env("HOLDFAST_AUTH_TOKEN", "cli-token")
        .output()
        .expect("run holdfast");
    let id = stdout_of(&admitted);
    assert_eq!(id.trim().len(), 36, "a workspace id: {id}");
}

/// `holdfast new` gives its session this shell's environment, as `nohup`
/// would: a program on this PATH is found and a variable set here is seen,
/// but this terminal's TERM is not the session's. `--clean-env` starts from
/// the daemon's own, `--env` sets over either. The address may be written
/// as grpcurl takes it, without `http://`.
#[tokio::test]
async fn new_passes_on_this_shell_s_environment_but_not_its_terminal() {
    use std::os::unix::fs::PermissionsExt;
    let home = HostHome::new();
    let host = home.start(&[]).await;
    let address = host.address.trim_start_matches("http://").to_owned();
    let bin = tempfile::tempdir().expect("temporary dir");
    let program = bin.path().join("only-here");
    std::fs::write(
        &program,
        "#!/bin/sh\necho \"term=$TERM mine=$MINE set=$SET\"\n",
    )
    .expect("write the program");
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let holdfast_here = |args: &[&str]| {
        Command::new(binary("holdfast"))
            .args(["--addr", &address])
            .args(args)
            .env("PATH", &path)
            .env("MINE", "1")
            .env("TERM", "dumb")
            .output()
            .expect("run holdfast")
    };
    let output_of = |id: &str| stdout_of(&holdfast_here(&["logs", "--follow", id]));

    let id = stdout_of(&holdfast_here(&[
        "new",
        "--env",
        "SET=yes",
        "--",
        "only-here",
    ]));
    assert_eq!(
        output_of(id.trim()),
        "term=xterm-256color mine=1 set=yes\r\n"
    );

    let clean = holdfast_here(&["new", "--clean-env", "--", "only-here"]);
    assert!(!clean.status.success(), "found on a PATH it was not given");
    let said = String::from_utf8_lossy(&clean.stderr);
    assert!(said.contains("only-here"), "{said}");

    let id = stdout_of(&holdfast_here(&[
        "new",
        "--clean-env",
        "--env",
        "MINE",
        "--",
        "sh",
        "-c",
        "echo \"mine=$MINE set=$SET\"",
    ]));
    assert_eq!(output_of(id.trim()), "mine=1 set=\r\n");
}

/// `holdfast attach` to a session already at this terminal's size still
/// has its program draw its screen again once the scrollback is shown
/// (the replay may begin mid-screen), as tmux shows a whole screen.
#[tokio::test]
async fn attach_has_the_program_draw_its_screen_again() {
    let (_home, mut host, workspace, target) = host_running(
        "redraw",
        "trap 'echo redrawn' WINCH; echo ready; while :; do sleep 0.05; done",
    )
    .await;
    // Its trap is set once it says so.
    let mut output = host.attach(&target.session_id, None).await;
    receive_host_text(&mut output, "ready").await;
    let (_viewer, mut screen) = viewer_of(&mut host, &workspace, &target.session_id, &[]).await;
    let shown = receive_host_text(&mut screen, "redrawn").await;
    assert!(shown.contains("ready"), "the scrollback first: {shown:?}");
}

/// A workspace name is one workspace to the command line: `workspace
/// create` refuses a name an open workspace has, and a name that the API
/// gave to two (which it allows) must be told apart by id, not guessed.
#[tokio::test]
async fn a_workspace_name_held_twice_is_not_guessed_at() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let address = host.address.clone();
    let first = stdout_of(&holdfast(&address, &["workspace", "create", "dup"]));
    let again = holdfast(&address, &["workspace", "create", "dup"]);
    let said = failure_text(&again);
    assert!(
        said.contains("already named \"dup\"") && said.contains(first.trim()),
        "{said}"
    );

    let second = host.create_workspace("dup").await.workspace_id;
    let ambiguous = holdfast(&address, &["ls", "--workspace", "dup"]);
    let said = failure_text(&ambiguous);
    assert!(
        said.contains("2 open workspaces are named \"dup\"")
            && said.contains(first.trim())
            && said.contains(&second),
        "{said}"
    );
    let by_id = holdfast(&address, &["ls", "--workspace", &second]);
    assert!(by_id.status.success(), "{by_id:?}");
}

/// `holdfast wait` tells how a session ended and exits as it did, as
/// `docker wait` does; after the end, too (from the recorded exit). The
/// first waiter most likely watches the exit happen; whether it does or
/// reads the recorded exit, both come as the stream's last event (a watch
/// following a program to its exit: `a_watch_is_no_attachment...`).
#[tokio::test]
async fn wait_tells_how_a_session_ended() {
    let (_home, mut host, workspace, target) = host_running("wait", "read line; exit 7").await;
    let id = target.session_id.as_str();
    let mut waiter = Command::new(binary("holdfast"))
        .args(["--addr", &host.address, "wait", id])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run holdfast wait");
    host.write_input(id, "x\n").await;
    let status = wait_with_deadline(&mut waiter);
    let mut said = String::new();
    std::io::Read::read_to_string(&mut waiter.stdout.take().expect("stdout"), &mut said)
        .expect("read");
    assert_eq!((status.code(), said.as_str()), (Some(7), "exit 7\n"));

    let again = holdfast(&host.address, &["wait", id]);
    assert_eq!(
        (again.status.code(), stdout_of_any(&again).as_str()),
        (Some(7), "exit 7\n")
    );

    let signalled = host
        .create_session(session_request(&workspace, &["sh", "-c", "kill -TERM $$"]))
        .await;
    let ended = holdfast(&host.address, &["wait", &signalled.session_id]);
    assert_eq!(
        (ended.status.code(), stdout_of_any(&ended).as_str()),
        (Some(128 + 15), "signal 15\n")
    );
}

fn stdout_of_any(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A session is shown by the command it runs (its name, unless given
/// another) and found by a unique start of its id or by its name, as
/// docker finds containers; two of a name (given through the API, which
/// lets names repeat) are not guessed at.
#[tokio::test]
async fn sessions_are_found_by_a_start_of_their_id_or_by_title() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let address = host.address.clone();
    let new = |args: &[&str]| {
        let mut argv = vec!["new"];
        argv.extend(args);
        stdout_of(&holdfast(&address, &argv)).trim().to_owned()
    };
    let reader = new(&["--", "sh", "-c", "read x; echo got:$x"]);
    let worker = new(&["--title", "worker", "--", "sleep", "1000"]);
    let shown: serde_json::Value = serde_json::from_str(&stdout_of(&holdfast(
        &address,
        &["show", "--json", &worker],
    )))
    .expect("json");
    let workspace = shown["workspace_id"]
        .as_str()
        .expect("a workspace")
        .to_owned();
    let twin = || pb::CreateSessionRequest {
        title: Some("twin".into()),
        ..session_request(&workspace, &["sleep", "1000"])
    };
    let twins = [
        host.create_session(twin()).await.session_id,
        host.create_session(twin()).await.session_id,
    ];

    let listed: serde_json::Value =
        serde_json::from_str(&stdout_of(&holdfast(&address, &["ls", "--json"]))).expect("json");
    let title_of = |id: &str| {
        listed["sessions"]
            .as_array()
            .expect("sessions")
            .iter()
            .find(|s| s["session_id"] == id)
            .map(|s| s["title"].clone())
    };
    assert_eq!(
        title_of(&reader),
        Some(serde_json::json!("sh -c 'read x; echo got:$x'"))
    );

    let killed = stdout_of(&holdfast(&address, &["kill", "worker"]));
    assert_eq!(killed.trim(), format!("disposed {worker}"));
    stdout_of(&holdfast(&address, &["send", &reader[..8], "hi\n"]));
    let followed = stdout_of(&holdfast(&address, &["logs", "--follow", &reader]));
    assert!(followed.contains("got:hi"), "{followed:?}");

    let ambiguous = holdfast(&address, &["kill", "twin"]);
    let said = failure_text(&ambiguous);
    assert!(
        said.contains("2 live sessions match \"twin\"")
            && twins.iter().all(|id| said.contains(id.as_str())),
        "{said}"
    );
    let unknown = holdfast(&address, &["attach", "zzz"]);
    let said = failure_text(&unknown);
    assert!(said.contains("no session's id starts with"), "{said}");

    // Elsewhere: found by its title too, and shown by `ls --all` only.
    stdout_of(&holdfast(&address, &["workspace", "create", "other"]));
    let elsewhere = new(&[
        "--workspace",
        "other",
        "--title",
        "far",
        "--",
        "sleep",
        "1000",
    ]);
    let here = stdout_of(&holdfast(&address, &["ls"]));
    assert!(!here.contains(&elsewhere), "{here}");
    let everywhere = stdout_of(&holdfast(&address, &["ls", "--all"]));
    let line = |id: &str| {
        everywhere
            .lines()
            .find(|line| line.starts_with(id))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(line(&elsewhere).ends_with(" other"), "{everywhere}");
    assert!(line(&twins[0]).ends_with(" default"), "{everywhere}");
    let killed = stdout_of(&holdfast(&address, &["kill", "far"]));
    assert_eq!(killed.trim(), format!("disposed {elsewhere}"));
}

/// A program that sets its terminal's title changes the title shown beside
/// its session, not the session's name: it is still listed under, and
/// found by, the name it was given, as a tmux session keeps its name
/// whatever its panes call themselves. (Before `Session.name`, the
/// program's title replaced the given one, and the name found nothing.)
#[tokio::test]
async fn a_session_keeps_its_name_when_its_program_sets_a_title() {
    let home = HostHome::new();
    let host = home.start(&[]).await;
    let address = host.address.clone();
    let new_titled = |name: &str, title: &str| {
        let set_title = format!("printf '\\033]0;{title}\\007'; exec sleep 1000");
        let new = holdfast(
            &address,
            &["new", "--name", name, "--", "sh", "-c", &set_title],
        );
        stdout_of(&new).trim().to_owned()
    };
    let show = |given: &str| -> serde_json::Value {
        serde_json::from_str(&stdout_of(&holdfast(&address, &["show", "--json", given])))
            .expect("json")
    };
    let titled = async |id: &str, title: &str| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while show(id)["title"] != title {
            assert!(
                std::time::Instant::now() < deadline,
                "the program's title never showed: {}",
                show(id)
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    };
    let id = new_titled("editor", "main.rs - vi");
    titled(&id, "main.rs - vi").await;
    for given in ["editor", "main.rs - vi"] {
        let found = show(given);
        assert_eq!(found["session_id"], id.as_str(), "found by {given:?}");
        assert_eq!(found["name"], "editor");
    }
    let table = stdout_of(&holdfast(&address, &["ls"]));
    let line = table
        .lines()
        .find(|line| line.starts_with(&id))
        .unwrap_or_default();
    assert!(
        table.starts_with("ID") && table.lines().next().is_some_and(|h| h.contains("NAME")),
        "{table}"
    );
    assert!(
        line.contains(" editor ") && !line.contains("main.rs"),
        "{table}"
    );

    // Renamed, as with tmux's rename-session: found by the new name only.
    let renamed = stdout_of(&holdfast(&address, &["rename", "editor", "notes"]));
    assert_eq!(renamed.trim(), format!("renamed {id} notes"));
    assert_eq!(show("notes")["session_id"], id.as_str());
    let said = failure_text(&holdfast(&address, &["show", "editor"]));
    assert!(said.contains("no session's id starts with"), "{said}");

    // A name goes before a title another program gave itself.
    let impostor = new_titled("other", "notes");
    titled(&impostor, "notes").await;
    assert_eq!(show("notes")["session_id"], id.as_str());
    assert_eq!(show("other")["session_id"], impostor.as_str());
}

/// `kill -s TERM -t 10` gives a program that shuts down cleanly its
/// signal and time, as `docker stop -t` does.
#[tokio::test]
async fn kill_sends_the_signal_it_is_given() {
    use holdfast_api::proto::host::v1::attach_session_response::Event;
    let (_home, host, _workspace, target) = host_running(
        "kill",
        "trap 'exit 42' TERM; echo ready; while :; do sleep 0.05; done",
    )
    .await;
    let id = target.session_id.as_str();
    let mut screen = host.attach(id, None).await;
    receive_host_text(&mut screen, "ready").await;
    let bogus = holdfast(&host.address, &["kill", "-s", "USR9", id]);
    let said = failure_text(&bogus);
    assert!(
        said.contains("is not HUP, INT, QUIT, TERM or KILL"),
        "{said}"
    );

    let killed = stdout_of(&holdfast(
        &host.address,
        &["kill", "-s", "term", "-t", "10", id],
    ));
    assert_eq!(killed.trim(), format!("disposed {id}"));
    let exited = loop {
        let message = tokio::time::timeout(PATIENCE, screen.message())
            .await
            .expect("the exit comes")
            .expect("stream")
            .expect("the stream ends with the exit");
        if let Some(Event::Exited(exited)) = message.event {
            break exited;
        }
    };
    assert_eq!((exited.exit_code, exited.signal), (Some(42), None));
}

/// `holdfast attach` without an id attaches to the only live session, as
/// `tmux attach` finds one; with none or several it says so.
#[tokio::test]
async fn attach_without_an_id_takes_the_only_session() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let none = holdfast(&host.address, &["attach"]);
    let said = failure_text(&none);
    assert!(said.contains("there is no live session"), "{said}");
    let workspace = host.create_workspace("only").await.workspace_id;
    host.create_session(session_request(
        &workspace,
        &["sh", "-c", "echo only-one; exec cat"],
    ))
    .await;
    // The viewer's own terminal is a hidden session: in no list.
    let cli = binary("holdfast");
    let address = host.address.clone();
    let mut request = session_request(
        &workspace,
        &[
            cli.to_str().expect("utf-8 path"),
            "--addr",
            &address,
            "attach",
        ],
    );
    request.listed = Some(false);
    let viewer = host.create_session(request).await;
    let mut screen = host.attach(&viewer.session_id, None).await;
    receive_host_text(&mut screen, "only-one").await;

    host.create_session(session_request(&workspace, &["sleep", "1000"]))
        .await;
    let several = holdfast(&host.address, &["attach"]);
    let said = failure_text(&several);
    assert!(said.contains("there are 2 live sessions"), "{said}");
}

/// `holdfast show` describes a session, running or, by its whole id,
/// ended: its command and how it ended.
#[tokio::test]
async fn show_describes_a_session_running_or_ended() {
    let (_home, host, _workspace, target) = host_running("show", "read x; exit 3").await;
    let id = target.session_id.as_str();
    let running = stdout_of(&holdfast(&host.address, &["show", &id[..8]]));
    assert!(
        running.contains("command     sh -c 'read x; exit 3'")
            && running.contains("state       alive"),
        "{running}"
    );
    host.write_input(id, "x\n").await;
    let ended = eventually("the exit to show", || async {
        let shown = stdout_of(&holdfast(&host.address, &["show", id]));
        shown.contains("state       exit 3").then_some(shown)
    })
    .await;
    assert!(ended.contains("ended "), "{ended}");
    let json: serde_json::Value = serde_json::from_str(&stdout_of(&holdfast(
        &host.address,
        &["show", "--json", id],
    )))
    .expect("json");
    assert_eq!(json["exit_code"], 3);
    assert_eq!(
        json["argv"],
        serde_json::json!(["sh", "-c", "read x; exit 3"])
    );
}

/// A session knows its id (`HOLDFAST_SESSION_ID`, as tmux sets `TMUX`),
/// so `holdfast attach` run in it does not attach it to itself: named, it
/// is refused; unnamed, it is no candidate. Other commands find it as any
/// other.
#[tokio::test]
async fn a_session_is_never_attached_to_itself() {
    let home = HostHome::new();
    let mut host = home.start(&[]).await;
    let workspace = host.create_workspace("self").await.workspace_id;
    let cli = binary("holdfast");
    let cli = cli.to_str().expect("utf-8 path");
    let address = &host.address;
    let script = format!(
        "{cli} --addr {address} show \"${{HOLDFAST_SESSION_ID%%-*}}\" > /dev/null; echo shown:$?; \
         {cli} --addr {address} attach \"$HOLDFAST_SESSION_ID\"; echo named:$?; \
         {cli} --addr {address} attach; echo unnamed:$?"
    );
    let session = host
        .create_session(session_request(&workspace, &["sh", "-c", &script]))
        .await;
    let mut output = host.attach(&session.session_id, None).await;
    let shown = receive_host_text(&mut output, "unnamed:").await;
    assert!(
        shown.contains("shown:0")
            && shown.contains("attached to itself")
            && shown.contains("named:1")
            && shown.contains("there is no live session"),
        "{shown}"
    );
}

/// While a list can only come from memory (here: the daemon stopped), a
/// session missing from it could be passed over, so a lookup by title or
/// id start is refused rather than guessed; a whole id still works.
#[tokio::test]
async fn lookups_refuse_a_list_from_memory() {
    let (home, host, _workspace, target) = host_running("memory", "exec sleep 1000").await;
    let daemon = hang_the_daemon(&home).await;
    let guessed = holdfast(&host.address, &["show", &target.session_id[..8]]);
    rustix::process::kill_process(daemon, rustix::process::Signal::CONT)
        .expect("SIGCONT the daemon");
    let said = failure_text(&guessed);
    assert!(said.contains("can only be listed from memory"), "{said}");
}

/// `holdfast attach` resizes and types as its own client: typing in it
/// gives the session its size, and when it detaches, the session goes back
/// to the size of a client still attached, as under tmux, rather than
/// keeping the size of a terminal no longer showing it.
#[tokio::test]
async fn detaching_gives_the_session_back_to_the_size_of_a_client_still_attached() {
    let (_home, mut host, workspace, target) = host_running("sizes", "exec cat").await;
    let id = target.session_id.as_str();
    let (token, desk) = host.attach_client(id).await;
    assert!(!token.is_empty(), "an attachment token");
    host.resize_as(id, &token, (150, 45)).await;
    host.size_until(&workspace, id, (150, 45)).await;

    // The CLI, in a terminal of 90x28.
    let cli = binary("holdfast");
    let mut viewer = session_request(
        &workspace,
        &[
            cli.to_str().expect("utf-8 path"),
            "--addr",
            &host.address,
            "attach",
            id,
        ],
    );
    (viewer.cols, viewer.rows) = (90, 28);
    let viewer = host.create_session(viewer).await;
    host.size_until(&workspace, id, (90, 28)).await;
    // The desk resizes; then typing in the CLI gives the session its size.
    host.resize_as(id, &token, (150, 45)).await;
    host.size_until(&workspace, id, (150, 45)).await;
    host.write_input(&viewer.session_id, "typed").await;
    host.size_until(&workspace, id, (90, 28)).await;
    host.write_input(&viewer.session_id, "\u{1d}").await;
    host.size_until(&workspace, id, (150, 45)).await;
    drop(desk);
}

/// `new --name` and `rename` refuse a name a live session has, as tmux
/// refuses a duplicate session name and docker a container's: a name is a
/// handle, and one two sessions shared would find neither.
#[tokio::test]
async fn a_name_a_live_session_has_is_not_given_again() {
    let home = HostHome::new();
    let host = home.start(&[]).await;
    let address = host.address.clone();
    let first = stdout_of(&holdfast(
        &address,
        &["new", "--name", "build", "--", "sleep", "1000"],
    ));
    let first = first.trim();
    let again = holdfast(&address, &["new", "--name", "build", "--", "sleep", "1000"]);
    let said = failure_text(&again);
    assert!(
        said.contains("a live session is already named \"build\"") && said.contains(first),
        "{said}"
    );
    let other = stdout_of(&holdfast(
        &address,
        &["new", "--name", "test", "--", "sleep", "1000"],
    ));
    let said = failure_text(&holdfast(&address, &["rename", "test", "build"]));
    assert!(said.contains("already named \"build\""), "{said}");
    // Its own name again, and a name freed by a kill, are fine.
    let renamed = stdout_of(&holdfast(&address, &["rename", "build", "build"]));
    assert_eq!(renamed.trim(), format!("renamed {first} build"));
    stdout_of(&holdfast(&address, &["kill", "build"]));
    let renamed = stdout_of(&holdfast(&address, &["rename", "test", "build"]));
    assert_eq!(renamed.trim(), format!("renamed {} build", other.trim()));
}

/// `new` starts its session in this directory, or in the one `-c` names,
/// taken from this one as tmux's `new-session -c` takes it; one that does
/// not exist is refused, naming it.
#[tokio::test]
async fn new_starts_in_this_directory_or_the_one_it_is_given() {
    let home = HostHome::new();
    let host = home.start(&[]).await;
    let here = tempfile::tempdir().expect("a directory");
    let here = here.path().canonicalize().expect("canonical");
    std::fs::create_dir(here.join("sub")).expect("sub");
    let new_in = |args: &[&str]| {
        Command::new(binary("holdfast"))
            .args(["--addr", &host.address, "new"])
            .args(args)
            .args(["--", "sh", "-c", "pwd; exec sleep 600"])
            .current_dir(&here)
            .output()
            .expect("run holdfast")
    };
    for (args, expected) in [
        (&[][..], here.clone()),
        (&["-c", "sub"][..], here.join("sub")),
        (&["--cwd", "/"][..], "/".into()),
    ] {
        let id = stdout_of(&new_in(args)).trim().to_owned();
        let shown = eventually("the session's directory", || {
            let logs = holdfast(&host.address, &["logs", &id]);
            async move { Some(stdout_of(&logs)).filter(|shown| shown.contains('\n')) }
        })
        .await;
        assert_eq!(shown.trim(), expected.to_string_lossy(), "{args:?}");
    }
    let said = failure_text(&new_in(&["-c", "nowhere"]));
    assert!(
        said.contains(&*here.join("nowhere").to_string_lossy()),
        "{said}"
    );
}
