//! What /proc says about a process: memory, threads, fds, zombie children.

use std::fs;

fn status_field(pid: i32, field: &str) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Resident set size in KiB.
pub fn rss_kib(pid: i32) -> u64 {
    status_field(pid, "VmRSS:").unwrap_or(0)
}

pub fn threads(pid: i32) -> u64 {
    status_field(pid, "Threads:").unwrap_or(0)
}

pub fn open_fds(pid: i32) -> usize {
    fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// Whether `pid` is stopped by a signal (state `T`).
pub fn stopped(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            == Some("T")
    })
}

/// Children of `pid` that have exited and not been reaped.
pub fn zombie_children(pid: i32) -> usize {
    let Ok(entries) = fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|child| fs::read_to_string(format!("/proc/{child}/stat")).ok())
        .filter(|stat| {
            // pid (comm) state ppid …; comm may hold spaces, so split after ')'.
            let Some(rest) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
                return false;
            };
            let mut fields = rest.split_whitespace();
            let state = fields.next();
            let ppid = fields.next().and_then(|p| p.parse::<i32>().ok());
            state == Some("Z") && ppid == Some(pid)
        })
        .count()
}
