//! What `/proc` says of a process's resources.
//!
//! These are resident memory, threads and open descriptors, for the
//! benchmarks and the tests. `proc_stat` reads its state, start time and
//! children. Each reads 0 once the process is gone.

fn status_field(pid: i32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Resident set size in KiB.
pub fn rss_kib(pid: i32) -> u64 {
    status_field(pid, "VmRSS:").unwrap_or(0)
}

/// Its resident anonymous memory (heap, stacks), in KiB.
///
/// This is RSS without the file pages (program and library code) it has
/// mapped in.
pub fn anon_rss_kib(pid: i32) -> u64 {
    status_field(pid, "RssAnon:").unwrap_or(0)
}

/// Threads in the process.
pub fn threads(pid: i32) -> u64 {
    status_field(pid, "Threads:").unwrap_or(0)
}

/// Open file descriptors.
pub fn open_fds(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |dir| dir.count())
}
