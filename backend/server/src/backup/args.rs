//! The `backup`, `restore` and `healthcheck` commands: their options, help and output.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::{BackupError, Manifest, backup, local_address, probe, restore};
use crate::config::Config;

/// Parsed `--name VALUE` / `--name=VALUE` options and flags.
#[derive(Debug, Default)]
struct Options {
    values: Vec<(String, String)>,
    flags: Vec<String>,
    positional: Vec<String>,
}

impl Options {
    fn parse(args: &[String], valued: &[&str]) -> Result<Self, String> {
        let mut out = Self::default();
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            if let Some((name, value)) = arg.split_once('=').filter(|(n, _)| n.starts_with("--")) {
                if !valued.contains(&name) {
                    return Err(format!("unknown option {name}"));
                }
                out.values.push((name.to_owned(), value.to_owned()));
            } else if valued.contains(&arg.as_str()) {
                let value = it.next().ok_or_else(|| format!("{arg} needs a value"))?;
                out.values.push((arg.clone(), value.clone()));
            } else if arg.starts_with('-') {
                out.flags.push(arg.clone());
            } else {
                out.positional.push(arg.clone());
            }
        }
        Ok(out)
    }

    fn value(&self, name: &str) -> Option<&str> {
        self.values.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    fn flag(&self, names: &[&str]) -> bool {
        self.flags.iter().any(|f| names.contains(&f.as_str()))
    }

    fn unknown_flag(&self, known: &[&str]) -> Option<&str> {
        self.flags.iter().map(String::as_str).find(|f| !known.contains(f))
    }
}

const BACKUP_HELP: &str = "mobius backup --to DIR
    Copies DATA_DIR (the server may be running) into DIR, a new or empty directory:
    SQLite databases as consistent snapshots, every other file with its mode.
";

const RESTORE_HELP: &str = "mobius restore --from BACKUP_DIR --to DATA_DIR [--force]
    Restores a backup into DATA_DIR, which must be empty or missing. Stop the server first.
    --force deletes the current contents of DATA_DIR before restoring.
";

const HEALTHCHECK_HELP: &str = "mobius healthcheck [PATH]
    GETs PATH (default /api/ready) from the server at MOBIUS_BIND on this machine, prints
    the answer and exits 0 when it is 200, else 1.
";

fn usage(help: &str, problem: Option<String>) -> ExitCode {
    match problem {
        Some(problem) => {
            eprintln!("mobius: {problem}\n\nusage: {help}");
            ExitCode::from(2)
        }
        None => {
            print!("{help}");
            ExitCode::SUCCESS
        }
    }
}

fn run_async<T>(work: impl std::future::Future<Output = Result<T, BackupError>>) -> Result<T, BackupError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| BackupError::Io { context: "cannot start the async runtime".into(), source: e })?
        .block_on(work)
}

fn describe(manifest: &Manifest) -> String {
    let db = match manifest.databases.len() {
        1 => "1 database".to_owned(),
        n => format!("{n} databases"),
    };
    format!("{db} and {} files ({:.1} MiB)", manifest.files, manifest.bytes as f64 / (1024.0 * 1024.0))
}

/// `mobius backup --to DIR`.
pub fn backup_command(args: &[String]) -> ExitCode {
    let options = match Options::parse(args, &["--to"]) {
        Ok(o) if o.flag(&["-h", "--help"]) => return usage(BACKUP_HELP, None),
        Ok(o) => o,
        Err(e) => return usage(BACKUP_HELP, Some(e)),
    };
    if let Some(flag) = options.unknown_flag(&[]) {
        return usage(BACKUP_HELP, Some(format!("unknown option {flag}")));
    }
    let Some(dest) = options.value("--to").map(PathBuf::from) else {
        return usage(BACKUP_HELP, Some("--to DIR is required".into()));
    };
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("mobius: {e}");
            return ExitCode::from(2);
        }
    };
    match run_async(backup(&config.data_dir, &dest)) {
        Ok(manifest) => {
            println!("backed up {} from {} to {}", describe(&manifest), config.data_dir.display(), dest.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mobius backup: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `mobius restore --from BACKUP_DIR --to DATA_DIR [--force]`.
pub fn restore_command(args: &[String]) -> ExitCode {
    let options = match Options::parse(args, &["--from", "--to"]) {
        Ok(o) if o.flag(&["-h", "--help"]) => return usage(RESTORE_HELP, None),
        Ok(o) => o,
        Err(e) => return usage(RESTORE_HELP, Some(e)),
    };
    if let Some(flag) = options.unknown_flag(&["--force"]) {
        return usage(RESTORE_HELP, Some(format!("unknown option {flag}")));
    }
    let (Some(from), Some(to)) = (options.value("--from"), options.value("--to")) else {
        return usage(RESTORE_HELP, Some("--from BACKUP_DIR and --to DATA_DIR are required".into()));
    };
    match run_async(restore(Path::new(from), Path::new(to), options.flag(&["--force"]))) {
        Ok(manifest) => {
            println!("restored {} from {from} into {to}", describe(&manifest));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mobius restore: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `mobius healthcheck [PATH]`: the container's `HEALTHCHECK`.
pub fn healthcheck_command(args: &[String]) -> ExitCode {
    let options = match Options::parse(args, &[]) {
        Ok(o) if o.flag(&["-h", "--help"]) => return usage(HEALTHCHECK_HELP, None),
        Ok(o) => o,
        Err(e) => return usage(HEALTHCHECK_HELP, Some(e)),
    };
    if let Some(flag) = options.unknown_flag(&[]) {
        return usage(HEALTHCHECK_HELP, Some(format!("unknown option {flag}")));
    }
    let path = options.positional.first().map_or("/api/ready", String::as_str);
    if !path.starts_with('/') || path.contains(char::is_whitespace) || options.positional.len() > 1 {
        return usage(HEALTHCHECK_HELP, Some(format!("{path:?} is not a path like /api/ready")));
    }
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("mobius: {e}");
            return ExitCode::from(2);
        }
    };
    match probe(local_address(config.bind), path) {
        Ok(body) => {
            println!("{}", body.trim_end());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mobius healthcheck: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn options_take_values_in_both_spellings_and_keep_flags_apart() {
        let o = Options::parse(&args(&["--from", "/b", "--to=/d", "--force"]), &["--from", "--to"]).expect("parse");
        assert_eq!(o.value("--from"), Some("/b"));
        assert_eq!(o.value("--to"), Some("/d"));
        assert!(o.flag(&["--force"]));
        assert_eq!(o.unknown_flag(&["--force"]), None);
        assert!(Options::parse(&args(&["--to"]), &["--to"]).is_err(), "a missing value is an error");
        assert!(Options::parse(&args(&["--bogus=1"]), &["--to"]).is_err());
    }
}
