//! CPU time and memory of a process tree from /proc.
//!
//! Samba forks one smbd per connection, so a server is its master process and all the
//! processes under it. /proc/PID/stat counts every thread of a process; a child that exits is
//! reaped and its time moves into its parent's cutime/cstime, so summing utime, stime, cutime
//! and cstime over the live tree counts every tick once, before and after an exit.

use std::collections::HashMap;

/// Clock ticks per second of /proc's times: USER_HZ, 100 on every Linux architecture.
const TICKS_PER_SECOND: f64 = 100.0;

/// The fields of /proc/PID/stat after the command name (field 3 on), if the process exists.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses; it ends at the last ')'.
    let rest = text.get(text.rfind(')')? + 2..)?;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// `root` and its live descendants.
pub fn tree_pids(root: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            if let Some(parent) = stat_fields(pid).and_then(|f| f.get(1)?.parse().ok()) {
                children.entry(parent).or_default().push(pid);
            }
        }
    }
    let mut pids = Vec::new();
    let mut queue = vec![root];
    while let Some(pid) = queue.pop() {
        pids.push(pid);
        queue.extend(children.get(&pid).into_iter().flatten());
    }
    pids
}

/// utime + stime + cutime + cstime of one process, in seconds.
fn process_cpu(pid: u32) -> Option<f64> {
    let fields = stat_fields(pid)?;
    // Fields 14-17 of stat; 11-14 counted from field 3.
    let ticks: u64 = fields
        .get(11..15)?
        .iter()
        .filter_map(|v| v.parse::<u64>().ok())
        .sum();
    Some(ticks as f64 / TICKS_PER_SECOND)
}

/// CPU seconds the tree under `root` has used so far, reaped children included.
pub fn tree_cpu_seconds(root: u32) -> Option<f64> {
    process_cpu(root)?;
    Some(tree_pids(root).into_iter().filter_map(process_cpu).sum())
}

/// CPU seconds this process has used so far.
pub fn own_cpu_seconds() -> f64 {
    process_cpu(std::process::id()).unwrap_or(0.0)
}

fn kib_field(path: &str, key: &str) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// RSS and PSS of the tree under `root`, in KiB. RSS counts pages shared between forked
/// processes once per process; PSS divides them among the sharers.
pub fn tree_memory_kib(root: u32) -> (u64, u64) {
    tree_pids(root).into_iter().fold((0, 0), |(rss, pss), pid| {
        (
            rss + kib_field(&format!("/proc/{pid}/status"), "VmRSS:"),
            pss + kib_field(&format!("/proc/{pid}/smaps_rollup"), "Pss:"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_its_own_tree_and_uses_cpu() {
        let me = std::process::id();
        assert!(tree_pids(me).contains(&me));
        let start = tree_cpu_seconds(me).unwrap();
        let mut x = 0u64;
        let until = std::time::Instant::now() + std::time::Duration::from_millis(300);
        while std::time::Instant::now() < until {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        assert!(tree_cpu_seconds(me).unwrap() - start >= 0.1);
        assert!(tree_memory_kib(me).0 > 0);
        assert_eq!(tree_cpu_seconds(u32::MAX), None);
    }
}
