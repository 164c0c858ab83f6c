//! What the subcommands share: opening a store, conditions as flags, errors and exit codes,
//! JSON and text output, progress bars.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{json, Value};
use tenure::{
    Conditions, ETagArg, ETagList, Error, ErrorCode, Item, LeaseId, LockHandle, Store,
    StoreOptions, Timestamp, Ttl, WriteOptions,
};

pub const EXIT_OK: u8 = 0;
pub const EXIT_PROBLEMS: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub const EXIT_NO_STORE: u8 = 3;
pub const EXIT_LOCKED: u8 = 4;
pub const EXIT_CORRUPTION: u8 = 5;
pub const EXIT_IO: u8 = 6;
pub const EXIT_COMPACTED: u8 = 7;
pub const EXIT_STORAGE_FULL: u8 = 8;
pub const EXIT_UNAVAILABLE: u8 = 9;

/// How to print.
pub struct Output {
    pub json: bool,
    /// Progress bars allowed (they still draw only when stderr is a terminal).
    pub progress: bool,
}

impl Output {
    pub fn print_json(&self, value: &Value) {
        println!("{value}");
    }
}

/// An error as the tool reports it: a docs/spec.md code name (or a CLI-level one), its status,
/// what it was about (container and key), one line of explanation, the item's current ETag
/// where the engine reported one, and the exit code.
#[derive(Debug, Default)]
pub struct CliError {
    pub code: String,
    pub status: Option<u16>,
    pub message: String,
    pub exit: u8,
    pub about: Box<Details>,
}

/// What an error reports besides its code and message (boxed: errors travel in every
/// `Result` of the tool).
#[derive(Debug, Default)]
pub struct Details {
    pub container: Option<String>,
    pub key: Option<String>,
    /// The item's current ETag, reported with a refused precondition.
    pub etag: Option<String>,
    /// `Compacted`: the oldest version the change feed still has.
    pub oldest_available: Option<u64>,
}

impl CliError {
    /// A bad argument detected by the tool (exit 2), named like the engine names them.
    pub fn usage(argument: &str, reason: impl std::fmt::Display) -> CliError {
        CliError {
            code: "InvalidArgument".to_owned(),
            status: Some(400),
            message: format!("argument `{argument}`: {reason}"),
            exit: EXIT_USAGE,
            ..CliError::default()
        }
    }

    pub fn no_store(directory: &Path) -> CliError {
        CliError {
            code: "NoStore".to_owned(),
            status: None,
            message: format!(
                "no tenure store at {} (no superblock file there); create one with \
                 `tenure container create {} NAME` or `tenure demo {}`",
                directory.display(),
                directory.display(),
                directory.display()
            ),
            exit: EXIT_NO_STORE,
            ..CliError::default()
        }
    }

    pub fn io(path: &Path, operation: &str, error: std::io::Error) -> CliError {
        CliError {
            code: "Io".to_owned(),
            status: Some(500),
            message: format!("{operation} {} failed: {error}", path.display()),
            exit: EXIT_IO,
            ..CliError::default()
        }
    }

    /// Names what the failed call was about: `key 'k' in container 'c': ...` (a missing
    /// container is about the container only).
    pub fn about(mut self, container: &str, key: Option<&str>) -> CliError {
        let key = key.filter(|_| self.code != ErrorCode::ContainerNotFound.name());
        let target = match key {
            Some(key) => format!("key '{key}' in container '{container}'"),
            None => format!("container '{container}'"),
        };
        self.message = format!("{target}: {}", self.message);
        self.about.container = Some(container.to_owned());
        self.about.key = key.map(str::to_owned);
        self
    }

    /// Prints the error (stderr; also stdout as JSON with --json) and returns the exit code.
    pub fn report(&self, json: bool) -> ExitCode {
        let status = self
            .status
            .map(|status| format!(" ({status})"))
            .unwrap_or_default();
        eprintln!("tenure: error: {}{status}: {}", self.code, self.message);
        if json {
            let mut error = json!({
                "code": self.code, "status": self.status, "message": self.message, "exit": self.exit
            });
            let extra = [
                ("container", json!(self.about.container)),
                ("key", json!(self.about.key)),
                ("etag", json!(self.about.etag)),
                ("oldest_available", json!(self.about.oldest_available)),
            ];
            for (name, value) in extra {
                if !value.is_null() {
                    error[name] = value;
                }
            }
            println!("{}", json!({ "error": error }));
        }
        ExitCode::from(self.exit)
    }
}

/// `result.about(container, key)`: an engine error as a [`CliError`] naming its target.
pub trait About<T> {
    fn about(self, container: &str, key: Option<&str>) -> CliResult<T>;
}

impl<T> About<T> for Result<T, Error> {
    fn about(self, container: &str, key: Option<&str>) -> CliResult<T> {
        self.map_err(|error| CliError::from(error).about(container, key))
    }
}

/// One line on what a code means for the person at the terminal: the engine table's meaning
/// (docs/spec.md §12), with the flag to use where the CLI has one.
pub fn explanation(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::ContainerNotFound => {
            "the container does not exist; create it with `tenure container create`"
        }
        ErrorCode::AlreadyExists => "the item already exists (--if-none-match '*' is create-only)",
        ErrorCode::ConditionNotMet => "a condition (--if-match, --if-none-match, --if-modified-since, --if-unmodified-since) does not hold; nothing changed",
        ErrorCode::VersionMismatch => "the item is not at the version given with --if-version; nothing changed",
        ErrorCode::LeaseIdMissing => "the item is leased: pass its --lease-id to write it",
        ErrorCode::ObjectNotLocked => "--lock-handle was given but the item is not locked",
        ErrorCode::InvalidLockHandle => "the --lock-handle given is not the item's current lock",
        ErrorCode::StoreLocked => "another process has the store open; close it first",
        ErrorCode::Compacted => "the change-feed position was compacted away",
        ErrorCode::Corruption => "a checksum or structure check failed; run `tenure verify DIR`, then `tenure repair DIR`",
        other => other.meaning(),
    }
}

impl From<Error> for CliError {
    fn from(error: Error) -> CliError {
        let code = error.code();
        let exit = match code {
            ErrorCode::InvalidArgument => EXIT_USAGE,
            ErrorCode::StoreLocked => EXIT_LOCKED,
            ErrorCode::Corruption => EXIT_CORRUPTION,
            ErrorCode::Io | ErrorCode::Closed | ErrorCode::UsedAfterFork => EXIT_IO,
            ErrorCode::Compacted => EXIT_COMPACTED,
            ErrorCode::StorageFull => EXIT_STORAGE_FULL,
            ErrorCode::Unavailable => EXIT_UNAVAILABLE,
            _ => EXIT_PROBLEMS,
        };
        let oldest_available = match &error {
            Error::Compacted {
                oldest_available, ..
            } => Some(*oldest_available),
            _ => None,
        };
        let detail = match &error {
            Error::InvalidArgument { argument, reason } => format!("argument `{argument}`: {reason}"),
            Error::Rejected { current_etag, .. } => match current_etag {
                Some(etag) => format!("{}; current ETag {etag}", explanation(code)),
                None => explanation(code).to_owned(),
            },
            Error::BatchFailed { index, error, .. } => {
                format!("batch operation {index} failed: {}", explanation(error.code()))
            }
            Error::StoreLocked { path } => format!(
                "the store at {} is open in another process (or handle); {}",
                path.display(),
                "close it first"
            ),
            Error::Corruption {
                file,
                offset,
                reason,
            } => format!(
                "{} at offset {offset}: {reason}; run `tenure verify DIR`, then `tenure repair DIR`",
                file.display()
            ),
            Error::Io {
                path,
                operation,
                source,
            } => format!(
                "{operation} {} failed: {source} (errno {})",
                path.display(),
                source.raw_os_error().unwrap_or(0)
            ),
            Error::Compacted {
                since,
                oldest_available,
            } => format!(
                "changes after version {since} were compacted away; the oldest available \
                 version is {oldest_available}: resume with --since {}, or keep more history \
                 with compact's --change-feed-retention-versions / -bytes",
                oldest_available.saturating_sub(1)
            ),
            Error::Unavailable {
                endpoints,
                reason,
                outcome_unknown,
            } => format!(
                "the cluster at {endpoints} {reason}; {}",
                if *outcome_unknown {
                    "the write's outcome is unknown: read the item before writing again"
                } else {
                    "nothing was committed"
                }
            ),
            other => other.to_string(),
        };
        CliError {
            code: code.name().to_owned(),
            status: Some(code.status()),
            message: detail,
            exit,
            about: Box::new(Details {
                etag: error.current_etag().map(|etag| etag.to_string()),
                oldest_available,
                ..Details::default()
            }),
        }
    }
}

pub type CliResult<T = ExitCode> = Result<T, CliError>;

pub fn ok() -> CliResult {
    Ok(ExitCode::from(EXIT_OK))
}

/// Is there a store in `directory`? (A directory with its superblock file.)
pub fn store_exists(directory: &Path) -> bool {
    directory.join("superblock").is_file()
}

/// The space options given on the command line (`--quota-bytes`, `--space-reserve-bytes`),
/// set once before any command runs.
static SPACE_OPTIONS: std::sync::OnceLock<(Option<u64>, Option<u64>)> = std::sync::OnceLock::new();

pub fn set_space_options(quota_bytes: Option<u64>, space_reserve_bytes: Option<u64>) {
    let _ = SPACE_OPTIONS.set((quota_bytes, space_reserve_bytes));
}

/// Options the tool opens stores with: no background compaction (a short-lived process;
/// `tenure compact` compacts on demand), and the space options of the command line.
pub fn store_options() -> StoreOptions {
    let (quota_bytes, space_reserve_bytes) = SPACE_OPTIONS.get().copied().unwrap_or_default();
    StoreOptions {
        background_compaction_interval: None,
        quota_bytes,
        space_reserve_bytes,
        ..StoreOptions::default()
    }
}

/// Whether a DIR argument names a store on an etcd cluster (`etcd://host:port/prefix`).
pub fn is_cluster(location: &Path) -> bool {
    location.to_str().is_some_and(tenure_etcd::is_etcd_url)
}

/// Opens (creating if needed) the store at `location`: a directory or an `etcd://` URL.
pub fn open_store(location: &Path, options: StoreOptions) -> CliResult<Store> {
    match location
        .to_str()
        .filter(|text| tenure_etcd::is_etcd_url(text))
    {
        Some(url) => Ok(tenure_etcd::open(url, options)?),
        None => Ok(Store::open(location, options)?),
    }
}

/// Opens an existing store; a missing directory is an error (exit 3), never silently
/// created. A store on a cluster exists as soon as it is reachable.
pub fn open_existing(directory: &Path) -> CliResult<Store> {
    if !is_cluster(directory) && !store_exists(directory) {
        return Err(CliError::no_store(directory));
    }
    open_store(directory, store_options())
}

/// Opens an existing store for reading only: it takes no lock, so it works beside an
/// application that holds the store open, and sees the store as its files held it at the
/// open (docs/spec.md §1). The inspection commands use it.
pub fn open_read_only(directory: &Path) -> CliResult<Store> {
    if !is_cluster(directory) && !store_exists(directory) {
        return Err(CliError::no_store(directory));
    }
    let options = StoreOptions {
        read_only: true,
        ..store_options()
    };
    open_store(directory, options)
}

/// Closes the store, reporting a failed final flush.
pub fn close(store: Store) -> CliResult<()> {
    Ok(store.close()?)
}

// ----- arguments -----

/// Condition flags shared by reads and writes.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ConditionArgs {
    /// Only if the item's ETag is this one (repeat for any of several; '*' = it exists).
    #[arg(long, value_name = "ETAG")]
    pub if_match: Vec<String>,
    /// Only if the item's ETag is none of these ('*' on a write = create only).
    #[arg(long, value_name = "ETAG")]
    pub if_none_match: Vec<String>,
    /// Only if last modified after TIME (RFC 3339 such as 2026-11-30T07:00:00Z, or µs since
    /// the Unix epoch).
    #[arg(long, value_name = "TIME")]
    pub if_modified_since: Option<String>,
    /// Only if last modified at or before TIME (RFC 3339 or µs).
    #[arg(long, value_name = "TIME")]
    pub if_unmodified_since: Option<String>,
    /// Only if the item is at exactly this version (the cache's versioned put; writes only).
    #[arg(long, value_name = "VERSION", allow_negative_numbers = true)]
    pub if_version: Option<u64>,
}

impl ConditionArgs {
    pub fn parse(&self) -> CliResult<Conditions> {
        let etags = |argument: &'static str, texts: &[String]| -> CliResult<ETagList> {
            texts
                .iter()
                .map(|text| ETagArg::parse(argument, text).map_err(CliError::from))
                .collect()
        };
        Ok(Conditions {
            if_match: etags("--if-match", &self.if_match)?,
            if_none_match: etags("--if-none-match", &self.if_none_match)?,
            if_modified_since: self
                .if_modified_since
                .as_deref()
                .map(|text| parse_time("--if-modified-since", text))
                .transpose()?,
            if_unmodified_since: self
                .if_unmodified_since
                .as_deref()
                .map(|text| parse_time("--if-unmodified-since", text))
                .transpose()?,
            if_version: self.if_version,
        })
    }
}

/// RFC 3339 (UTC, `Z`) or an integer count of microseconds since the Unix epoch.
pub fn parse_time(argument: &str, text: &str) -> CliResult<Timestamp> {
    if let Ok(micros) = text.parse::<u64>() {
        return Ok(micros);
    }
    let time = humantime::parse_rfc3339_weak(text).map_err(|error| {
        CliError::usage(
            argument,
            format!(
                "{text:?} is neither RFC 3339 (2026-11-30T07:00:00Z) nor microseconds: {error}"
            ),
        )
    })?;
    let since = time
        .duration_since(UNIX_EPOCH)
        .map_err(|_| CliError::usage(argument, "times before 1970 are not supported"))?;
    u64::try_from(since.as_micros()).map_err(|_| CliError::usage(argument, "too far in the future"))
}

pub fn format_time(micros: Timestamp) -> String {
    let time = UNIX_EPOCH + Duration::from_micros(micros);
    humantime::format_rfc3339_micros(time).to_string()
}

pub fn parse_lease_id(argument: &'static str, text: &str) -> CliResult<LeaseId> {
    Ok(LeaseId::parse(argument, text)?)
}

pub fn parse_lock_handle(text: &str) -> CliResult<LockHandle> {
    LockHandle::parse(text).map_err(|_| {
        CliError::usage(
            "--lock-handle",
            format!("a lock handle is 32 hexadecimal digits, not {text:?}"),
        )
    })
}

pub fn parse_ttl(text: &str) -> CliResult<Ttl> {
    let seconds: i64 = text.parse().map_err(|_| {
        CliError::usage("--ttl", format!("seconds (or -1 for never), not {text:?}"))
    })?;
    Ttl::from_signed_seconds(seconds).map_err(|_| {
        CliError::usage(
            "--ttl",
            format!("-1 (never) or 1..=4294967295 seconds, not {seconds}"),
        )
    })
}

/// Write flags: conditions plus lease, lock, TTL and properties.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct WriteArgs {
    #[command(flatten)]
    pub conditions: ConditionArgs,
    /// The item's lease id (required to write a leased item).
    #[arg(long, value_name = "ID")]
    pub lease_id: Option<String>,
    /// The handle of the item's cache lock: the write replaces it and unlocks.
    #[arg(long, value_name = "HANDLE")]
    pub lock_handle: Option<String>,
}

impl WriteArgs {
    pub fn options(&self) -> CliResult<WriteOptions> {
        Ok(WriteOptions {
            conditions: self.conditions.parse()?,
            lease_id: self
                .lease_id
                .as_deref()
                .map(|text| parse_lease_id("--lease-id", text))
                .transpose()?,
            lock_handle: self
                .lock_handle
                .as_deref()
                .map(parse_lock_handle)
                .transpose()?,
            ..WriteOptions::default()
        })
    }
}

/// `name=value` metadata pairs.
pub fn parse_metadata(pairs: &[String]) -> CliResult<Vec<(String, String)>> {
    pairs
        .iter()
        .map(|pair| {
            pair.split_once('=')
                .map(|(name, value)| (name.to_owned(), value.to_owned()))
                .ok_or_else(|| CliError::usage("--metadata", format!("NAME=VALUE, not {pair:?}")))
        })
        .collect()
}

/// The value of a put: the argument, or the file (`-` = stdin).
pub fn read_value(value: Option<&str>, file: Option<&PathBuf>) -> CliResult<Vec<u8>> {
    match (value, file) {
        (Some(value), None) => Ok(value.as_bytes().to_vec()),
        (None, Some(path)) if path.as_os_str() == "-" => {
            let mut bytes = Vec::new();
            std::io::stdin()
                .read_to_end(&mut bytes)
                .map_err(|error| CliError::io(Path::new("-"), "read stdin", error))?;
            Ok(bytes)
        }
        (None, Some(path)) => {
            std::fs::read(path).map_err(|error| CliError::io(path, "read", error))
        }
        (Some(_), Some(_)) => Err(CliError::usage(
            "--value-file",
            "give VALUE or --value-file, not both",
        )),
        (None, None) => Err(CliError::usage(
            "VALUE",
            "give the value as an argument or with --value-file (- for stdin)",
        )),
    }
}

// ----- output -----

/// Bytes as JSON: `{name: text}` when UTF-8, else `{name_hex: hex}`.
pub fn bytes_field(object: &mut serde_json::Map<String, Value>, name: &str, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => object.insert(name.to_owned(), Value::from(text)),
        Err(_) => object.insert(format!("{name}_hex"), Value::from(hex(bytes))),
    };
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Bytes for a terminal: the text when printable UTF-8, else `0x` and hex.
pub fn display_bytes(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) if !text.chars().any(char::is_control) => text.to_owned(),
        _ => format!("0x{}", hex(bytes)),
    }
}

pub fn item_json(container: &str, item: &Item) -> Value {
    let mut object = serde_json::Map::new();
    object.insert("container".into(), Value::from(container));
    bytes_field(&mut object, "key", &item.key);
    object.insert("etag".into(), Value::from(item.etag.to_string()));
    object.insert("version".into(), Value::from(item.version));
    object.insert(
        "last_modified".into(),
        Value::from(format_time(item.last_modified)),
    );
    object.insert("last_modified_us".into(), Value::from(item.last_modified));
    object.insert("content_type".into(), json!(item.content_type));
    let metadata: serde_json::Map<String, Value> = item
        .metadata
        .iter()
        .map(|(name, value)| (name.clone(), Value::from(value.as_str())))
        .collect();
    object.insert("metadata".into(), Value::Object(metadata));
    object.insert("expires_at".into(), json!(item.expires_at.map(format_time)));
    if let Some(value) = &item.value {
        object.insert("size".into(), Value::from(value.len()));
        bytes_field(&mut object, "value", value);
    }
    Value::Object(object)
}

/// Writes raw bytes to stdout (a value, for piping).
pub fn write_stdout(bytes: &[u8]) -> CliResult<()> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(bytes)
        .and_then(|()| stdout.flush())
        .map_err(|error| CliError::io(Path::new("-"), "write stdout", error))
}

// ----- progress -----

/// A progress bar over `total` units on stderr (hidden unless stderr is a terminal and
/// progress is allowed).
pub fn progress_bar(output: &Output, total: u64, message: &str, bytes: bool) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), draw_target(output));
    let template = if bytes {
        "{msg:>10} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})"
    } else {
        "{msg:>10} [{bar:40}] {pos}/{len} ({per_sec}, {eta})"
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(message.to_owned());
    bar
}

fn draw_target(output: &Output) -> ProgressDrawTarget {
    if output.progress {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    }
}

pub fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX)
        })
}
