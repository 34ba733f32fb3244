//! A job's output, bounded: every byte is counted, the last [`MAX_TAIL_BYTES`] are kept for the
//! database, and the log file `DATA_DIR/schedule-logs/<schedule>/<run>.log` rotates to
//! `<run>.log.1` at [`LOG_ROTATE_BYTES`] (so a run keeps at most twice that on disk, the newest
//! output always). Each schedule keeps the logs of its last [`LOGS_KEPT`] runs.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

/// Output kept in the database per run.
pub const MAX_TAIL_BYTES: usize = 64 * 1024;
/// A run's log file rotates at this size.
pub const LOG_ROTATE_BYTES: u64 = 1024 * 1024;
/// Runs whose full log is kept, per schedule.
pub const LOGS_KEPT: usize = 10;
/// Read size.
const CHUNK: usize = 16 * 1024;

/// What a job printed.
#[derive(Debug, Default)]
pub struct Captured {
    /// The last [`MAX_TAIL_BYTES`] (lossy UTF-8, starting at a character).
    pub tail: String,
    /// Bytes printed in all.
    pub total: u64,
    /// The log file holds the output (false when it could not be written).
    pub has_log: bool,
}

/// `<dir>/<run>.log`, and its rotated `<run>.log.1`.
pub fn log_paths(dir: &Path, run_id: i64) -> (PathBuf, PathBuf) {
    (dir.join(format!("{run_id}.log")), dir.join(format!("{run_id}.log.1")))
}

/// A run's output as it is written: the tail, the count, the log file.
pub struct Log {
    dir: PathBuf,
    path: PathBuf,
    rotated: PathBuf,
    file: Option<tokio::fs::File>,
    written: u64,
    tail: VecDeque<u8>,
    total: u64,
}

impl Log {
    /// A log for run `run_id` under `dir` (its file created now; without one only the tail is kept).
    pub async fn open(dir: PathBuf, run_id: i64) -> Log {
        let (path, rotated) = log_paths(&dir, run_id);
        let file = match open_log(&dir, &path).await {
            Ok(f) => Some(f),
            Err(e) => {
                tracing::warn!(error = %e, dir = %dir.display(), "a job's log file could not be created");
                None
            }
        };
        Log { dir, path, rotated, file, written: 0, tail: VecDeque::with_capacity(CHUNK), total: 0 }
    }

    /// Adds `chunk`: counted, kept in the tail, written to the file (rotated at [`LOG_ROTATE_BYTES`]).
    pub async fn write(&mut self, chunk: &[u8]) {
        let n = chunk.len() as u64;
        self.total += n;
        self.tail.extend(chunk);
        if self.tail.len() > MAX_TAIL_BYTES {
            self.tail.drain(..self.tail.len() - MAX_TAIL_BYTES);
        }
        if let Some(f) = self.file.as_mut() {
            if self.written + n > LOG_ROTATE_BYTES {
                let _ = f.flush().await;
                self.file = match tokio::fs::rename(&self.path, &self.rotated).await {
                    Ok(()) => open_log(&self.dir, &self.path).await.ok(),
                    Err(_) => None,
                };
                self.written = 0;
            }
            if let Some(f) = self.file.as_mut() {
                if f.write_all(chunk).await.is_err() {
                    self.file = None;
                } else {
                    self.written += n;
                }
            }
        }
    }

    /// Flushes the file and gives what was captured.
    pub async fn finish(mut self) -> Captured {
        let has_log = match self.file.as_mut() {
            Some(f) => f.flush().await.is_ok(),
            None => false,
        };
        let bytes: Vec<u8> = self.tail.into();
        // Drop a character cut in half at the start.
        let start = bytes.iter().position(|b| (*b as i8) >= -0x40).unwrap_or(bytes.len());
        Captured { tail: String::from_utf8_lossy(&bytes[start..]).into_owned(), total: self.total, has_log }
    }
}

/// Reads `output` to its end into the tail and the log file under `dir`; more can be added
/// ([`Log::write`]) before the log is finished.
pub async fn capture(mut output: impl AsyncRead + Unpin, dir: PathBuf, run_id: i64) -> Log {
    let mut log = Log::open(dir, run_id).await;
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = match output.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        log.write(&buf[..n]).await;
    }
    log
}

async fn open_log(dir: &Path, path: &Path) -> std::io::Result<tokio::fs::File> {
    tokio::fs::create_dir_all(dir).await?;
    tokio::fs::OpenOptions::new().create(true).write(true).truncate(true).open(path).await
}

/// Removes the logs of all but the newest [`LOGS_KEPT`] runs in `dir` (run ids grow).
pub fn prune(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut runs: Vec<i64> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.split('.').next()).and_then(|n| n.parse().ok()))
        .collect();
    runs.sort_unstable();
    runs.dedup();
    let excess = runs.len().saturating_sub(LOGS_KEPT);
    for run in &runs[..excess] {
        let (path, rotated) = log_paths(dir, *run);
        let _ = std::fs::remove_file(path);
        let _ = std::fs::remove_file(rotated);
    }
}

/// A run's full log (the rotated part first), or `None` when it is gone.
pub fn read_log(dir: &Path, run_id: i64) -> Option<Vec<u8>> {
    let (path, rotated) = log_paths(dir, run_id);
    let current = std::fs::read(path).ok()?;
    let mut all = std::fs::read(rotated).unwrap_or_default();
    all.extend(current);
    Some(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn megabytes_of_output_keep_the_tail_and_a_rotated_log() {
        let dir = tempfile::tempdir().expect("tmp");
        let logs = dir.path().join("7");
        let mut input = Vec::new();
        for i in 0..400_000u32 {
            input.extend(format!("line {i}\n").into_bytes());
        }
        let total = input.len() as u64;
        let captured = capture(input.as_slice(), logs.clone(), 3).await.finish().await;
        assert_eq!(captured.total, total);
        assert!(captured.tail.len() <= MAX_TAIL_BYTES && captured.tail.ends_with("line 399999\n"));
        let (path, rotated) = log_paths(&logs, 3);
        let (a, b) = (std::fs::metadata(path).expect("log").len(), std::fs::metadata(rotated).expect("rotated").len());
        assert!(a <= LOG_ROTATE_BYTES && b <= LOG_ROTATE_BYTES, "{a} {b}");
        let log = read_log(&logs, 3).expect("log");
        assert!(log.ends_with(b"line 399999\n"));
        for run in 10..25 {
            std::fs::write(logs.join(format!("{run}.log")), b"x").expect("write");
        }
        prune(&logs);
        let left = std::fs::read_dir(&logs).expect("dir").count();
        assert_eq!(left, LOGS_KEPT);
        assert!(read_log(&logs, 3).is_none(), "the oldest went");
    }

    #[tokio::test]
    async fn a_character_cut_by_the_tail_is_dropped() {
        let dir = tempfile::tempdir().expect("tmp");
        let mut input = "é".repeat(MAX_TAIL_BYTES).into_bytes();
        input.push(b'!');
        let captured = capture(input.as_slice(), dir.path().to_path_buf(), 1).await.finish().await;
        assert!(captured.tail.ends_with("é!") && !captured.tail.contains('\u{fffd}'));
    }
}
