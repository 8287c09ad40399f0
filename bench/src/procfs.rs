//! What /proc says about a process's resources: memory, threads, fds.
//! (Its state and children: `holdfast::proc_stat`.)

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
