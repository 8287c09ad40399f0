//! What `/proc/<pid>/stat` says of a process.
//!
//! It is parsed in one place for the daemon (a session's leftovers), the
//! benchmarks and the tests.

use std::time::Duration;

/// The fields of `/proc/<pid>/stat` that holdfast reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// `R`, `S`, `Z`, `T`, …
    pub state: char,
    /// The parent's pid.
    pub ppid: i32,
    /// The session id (the session leader's pid).
    pub session: i32,
    /// The CPU time it has used, in user and kernel mode.
    pub cpu: Duration,
    /// When the process started, on the boot clock.
    pub started: Duration,
}

impl ProcStat {
    /// The process's stat, or `None` once it is gone (or unreadable).
    pub fn read(pid: i32) -> Option<Self> {
        Self::parse(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }

    /// Parses a stat line.
    ///
    /// The line is `pid (comm) state ppid pgrp session … utime stime …
    /// starttime` (fields 14, 15, 22). comm may hold anything, so fields are
    /// counted after its last `)`.
    pub fn parse(stat: &str) -> Option<Self> {
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        // The first field after comm is field 3.
        let field = |number: usize| fields.get(number - 3).copied();
        let ticks = |number: usize| field(number)?.parse::<u64>().ok();
        let per_second = rustix::param::clock_ticks_per_second().max(1);
        let duration =
            |ticks: u64| Duration::from_nanos(ticks.saturating_mul(1_000_000_000) / per_second);
        Some(Self {
            state: field(3)?.chars().next()?,
            ppid: field(4)?.parse().ok()?,
            session: field(6)?.parse().ok()?,
            cpu: duration(ticks(14)? + ticks(15)?),
            started: duration(ticks(22)?),
        })
    }

    /// Exited but not yet reaped.
    pub fn is_zombie(&self) -> bool {
        self.state == 'Z'
    }

    /// Stopped by a signal.
    pub fn is_stopped(&self) -> bool {
        self.state == 'T'
    }
}

/// Now, on the clock process start times are on (time since boot).
pub fn since_boot() -> Duration {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// Every pid in `/proc` now.
pub fn pids() -> impl Iterator<Item = i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
}

/// Detached daemons (`--daemonize`) serving `socket`.
///
/// They are found by their command lines. Test and benchmark homes stop
/// them when they go away.
pub fn daemons_serving(socket: &std::path::Path) -> Vec<i32> {
    let socket = socket.as_os_str().as_encoded_bytes();
    pids()
        .filter(|pid| {
            let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
                return false;
            };
            let args: Vec<&[u8]> = cmdline.split(|byte| *byte == 0).collect();
            args.contains(&&b"--daemonize"[..]) && args.contains(&socket)
        })
        .collect()
}

/// Asks `pid` to end, and says whether it went.
///
/// It wakes `pid` if stopped and sends SIGTERM. Then it waits up to
/// `patience` for it to be gone.
pub fn terminate(pid: i32, patience: Duration) -> bool {
    use rustix::process::{Pid, Signal, kill_process, test_kill_process};
    let Some(pid) = Pid::from_raw(pid) else {
        return false;
    };
    let _ = kill_process(pid, Signal::CONT);
    let _ = kill_process(pid, Signal::TERM);
    let deadline = std::time::Instant::now() + patience;
    while test_kill_process(pid).is_ok() {
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// Children of `pid` that have exited and not been reaped.
pub fn zombie_children(pid: i32) -> usize {
    pids()
        .filter_map(ProcStat::read)
        .filter(|stat| stat.ppid == pid && stat.is_zombie())
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fields_after_a_comm_with_spaces_and_parentheses() {
        let line = "4242 (my (odd) prog) S 1 4242 4240 34817 4242 4194560 100 0 0 0 \
                    1 2 0 0 20 0 1 0 1234 12345678 300 18446744073709551615";
        let stat = ProcStat::parse(line).expect("parses");
        assert_eq!((stat.state, stat.ppid, stat.session), ('S', 1, 4240));
        let per_second = rustix::param::clock_ticks_per_second();
        assert_eq!(
            stat.cpu,
            Duration::from_nanos(3 * 1_000_000_000 / per_second)
        );
        assert_eq!(
            stat.started,
            Duration::from_nanos(1234 * 1_000_000_000 / per_second)
        );
        assert!(ProcStat::read(std::process::id() as i32).is_some());
        assert!(since_boot() > Duration::ZERO);
    }
}
