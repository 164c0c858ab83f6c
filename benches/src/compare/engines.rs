//! The engines behind one interface. Every engine is opened in its non-durable ("buffered")
//! class: commits return once the engine has handed the bytes to the OS (or keeps them in its
//! own memory), without waiting for a sync; [`Engine::sync`] then makes everything durable.
//! Nothing else is tuned: each engine keeps its default cache sizes and background work.
//!
//! | engine | non-durable commits | sync | compaction |
//! | --- | --- | --- | --- |
//! | tenure | `Durability::Buffered` | `flush()` | `compact()` |
//! | lmdb (heed) | env flag `NO_SYNC` | `force_sync()` | none in place (LMDB reuses free pages) |
//! | redb | `Durability::None` | a commit with `Durability::Immediate` | `compact()` |
//! | sled | default (background flush every 500 ms) | `flush()` | none (segment cleaning runs by itself) |
//! | fjall | default (`PersistMode::Buffer`) | `persist(SyncAll)` | `major_compact()` |
//! | sqlite | `journal_mode=WAL`, `synchronous=OFF` | fsync of the database and WAL files | `VACUUM` + `wal_checkpoint(TRUNCATE)` |
//! | rocksdb (feature `rocksdb`, [`super::rocks`]) | WAL written, not synced (`set_sync(false)`) | `flush_wal(true)` | `compact_range(None, None)` |

use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use redb::ReadableTable as _;

use super::{value_version, Key, Value, VALUE_BYTES};

/// The engines of the embedded rows, in table order. RocksDB only when its cargo feature is
/// built ([`super::rocks`]).
#[cfg(not(feature = "rocksdb"))]
pub const EMBEDDED: &[&str] = &["tenure", "lmdb", "redb", "sled", "fjall", "sqlite"];
#[cfg(feature = "rocksdb")]
pub const EMBEDDED: &[&str] = &[
    "tenure", "lmdb", "redb", "sled", "fjall", "sqlite", "rocksdb",
];

/// Engines that exist only in a build with an extra cargo feature: (engine, feature).
pub const FEATURE_GATED: &[(&str, &str)] = &[("rocksdb", "rocksdb")];

pub(super) type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// One engine, opened on a directory. Shared between reader threads by reference.
pub trait Engine: Sync {
    /// Writes (inserts or overwrites) the pairs in one transaction or batch, without syncing.
    fn write_batch(&self, pairs: &[(Key, Value)]) -> Result<()>;
    /// Deletes the keys in one transaction or batch, without syncing.
    fn delete_batch(&self, keys: &[Key]) -> Result<()>;
    /// Makes every earlier write durable.
    fn sync(&self) -> Result<()>;
    /// A handle for reads on the calling thread.
    fn reader(&self) -> Result<Box<dyn Reader + '_>>;
    /// Compare-and-set: reads the item's version (ETag), then writes `value` under the
    /// condition that the version is still the one read. Returns whether the write happened.
    fn check_and_write(&self, key: &Key, value: &Value) -> Result<bool>;
    /// The engine's own compaction, where it has one; returns what it reports about itself.
    fn compact(&mut self) -> Result<super::Metrics>;
    /// What `compact` does for this engine (for the report).
    fn compaction_note(&self) -> &'static str;
    /// Writes the pairs (any shape) in one transaction or batch, in the class the engine was
    /// opened in ([`open_with`]): durable engines return once the commit is on stable storage.
    fn put_many(&self, pairs: &[(&[u8], &[u8])]) -> Result<()>;
    /// The version (ETag) of an existing item, read on its own, as a client holding an ETag
    /// would have read it (tenure: the ETag's version; the peers: the version stored in the
    /// value's first 8 bytes).
    fn version_of(&self, key: &[u8]) -> Result<u64>;
    /// Writes `value` if the item's version is still `expected` (tenure: `put` with
    /// `if_match`; the peers: one atomic check and write). The peers' `value` carries the next
    /// version in its first 8 bytes. Returns whether the write happened.
    fn put_if_version(&self, key: &[u8], expected: u64, value: &[u8]) -> Result<bool>;
    /// Whether [`Reader::snapshot_scan`] reads one consistent snapshot (sled has none).
    fn has_snapshots(&self) -> bool {
        true
    }
}

/// Reads on one thread.
pub trait Reader {
    /// Reads the value of an existing key; returns a fold of its bytes (so nothing is skipped).
    fn get(&mut self, key: &Key) -> Result<u64>;
    /// Reads `count` entries in key order from `start` (keys and values); returns a fold.
    fn scan(&mut self, start: &[u8], count: usize) -> Result<u64>;
    /// Reads a key that may be missing (any shape); `None` for a miss. With `whole`, the fold
    /// touches every 64th byte of the value, so a large value is read and not just located.
    fn lookup(&mut self, key: &[u8], whole: bool) -> Result<Option<u64>>;
    /// [`Reader::scan`] inside one explicit snapshot (read transaction) of the engine.
    fn snapshot_scan(&mut self, start: &[u8], count: usize) -> Result<u64> {
        self.scan(start, count)
    }
}

pub(super) fn fold(bytes: &[u8]) -> u64 {
    bytes.len() as u64 + u64::from(bytes[0]) + u64::from(bytes[bytes.len() - 1])
}

/// [`fold`], or with `whole` a fold of every 64th byte (one load per cache line).
pub(super) fn fold_value(bytes: &[u8], whole: bool) -> u64 {
    if !whole {
        return fold(bytes);
    }
    let mut total = bytes.len() as u64;
    for at in (0..bytes.len()).step_by(64) {
        total = total.wrapping_add(u64::from(bytes[at]));
    }
    total
}

/// The version a peer keeps in a value's first 8 bytes.
pub(super) fn stored_version(value: &[u8]) -> u64 {
    value_version(value)
}

/// The next value of a compare-and-set: `value` carrying version `current + 1`.
pub(super) fn next_version(value: &Value, current: &[u8]) -> Value {
    let mut next = *value;
    next[..8].copy_from_slice(&(value_version(current) + 1).to_le_bytes());
    next
}

pub(super) fn missing() -> Box<dyn std::error::Error + Send + Sync> {
    "a key the benchmark wrote is missing".into()
}

/// Opens engine `name` in `directory` (created if needed), in the non-durable class.
pub fn open(name: &str, directory: &Path) -> Result<Box<dyn Engine>> {
    open_with(name, directory, false)
}

/// Opens engine `name` in `directory` (created if needed, or reopened): `durable` selects
/// each engine's durable class for [`Engine::put_many`] (every commit on stable storage
/// before it returns), else the non-durable one.
///
/// | engine | durable commit |
/// | --- | --- |
/// | tenure | `Durability::Sync` |
/// | lmdb | default flags (no `NO_SYNC`) |
/// | redb | `Durability::Immediate` |
/// | sled | `apply_batch`, then `flush()` and `fdatasync` of its `db` file (sled has no per-commit durable mode, and its flush ends in `sync_file_range`) |
/// | fjall | write transaction with `durability(Some(PersistMode::SyncAll))` |
/// | sqlite | WAL, `synchronous=FULL` |
/// | rocksdb | `WriteOptions::set_sync(true)` |
pub fn open_with(name: &str, directory: &Path, durable: bool) -> Result<Box<dyn Engine>> {
    std::fs::create_dir_all(directory)?;
    Ok(match name {
        "tenure" => Box::new(Tenure::open_with(directory, durable)?),
        "lmdb" => Box::new(Lmdb::open_with(directory, durable)?),
        "redb" => Box::new(Redb::open_with(directory, durable)?),
        "sled" => Box::new(Sled::open_with(directory, durable)?),
        "fjall" => Box::new(Fjall::open_with(directory, durable)?),
        "sqlite" => Box::new(Sqlite::open_with(directory, durable)?),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => Box::new(super::rocks::RocksDb::open_with(directory, durable)?),
        other => return Err(format!("unknown engine {other}").into()),
    })
}

// ----- tenure -----

const CONTAINER: &str = "kv";

pub struct Tenure {
    store: tenure::Store,
}

impl Tenure {
    pub fn open(directory: &Path) -> Result<Tenure> {
        Tenure::open_with(directory, false)
    }

    pub fn open_with(directory: &Path, durable: bool) -> Result<Tenure> {
        let store = tenure::Store::open(
            directory,
            tenure::StoreOptions {
                durability: if durable {
                    tenure::Durability::Sync
                } else {
                    tenure::Durability::Buffered
                },
                ..tenure::StoreOptions::default()
            },
        )?;
        match store.create_container(CONTAINER, &tenure::ContainerOptions::default()) {
            Ok(_) => {}
            Err(error) if error.code() == tenure::ErrorCode::ContainerAlreadyExists => {}
            Err(error) => return Err(error.into()),
        }
        Ok(Tenure { store })
    }
}

impl Engine for Tenure {
    fn write_batch(&self, pairs: &[(Key, Value)]) -> Result<()> {
        let mut batch = self.store.batch();
        for (key, value) in pairs {
            batch.put(CONTAINER, key, value, tenure::WriteOptions::default());
        }
        batch.commit()?;
        Ok(())
    }

    fn delete_batch(&self, keys: &[Key]) -> Result<()> {
        let mut batch = self.store.batch();
        for key in keys {
            batch.delete(CONTAINER, key, tenure::WriteOptions::default());
        }
        batch.commit()?;
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        Ok(self.store.flush()?)
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        Ok(Box::new(TenureReader { store: &self.store }))
    }

    /// The item is read as the peers read theirs, its value borrowed from the map
    /// (`get_with`), and its ETag is the condition.
    fn check_and_write(&self, key: &Key, value: &Value) -> Result<bool> {
        let etag =
            self.store
                .get_with(CONTAINER, key, &tenure::ReadOptions::default(), |item| {
                    item.etag
                })?;
        let options = tenure::WriteOptions::with_conditions(tenure::Conditions::if_match(etag));
        match self.store.put(CONTAINER, key, value, &options) {
            Ok(_) => Ok(true),
            Err(error) if error.code() == tenure::ErrorCode::ConditionNotMet => Ok(false),
            Err(error) => Err(error.into()),
        }
    }

    fn compact(&mut self) -> Result<super::Metrics> {
        let report = self.store.compact()?;
        let mut metrics = super::Metrics::new();
        metrics.insert(
            "tenure_compact_segments_removed".into(),
            report.segments_removed as f64,
        );
        metrics.insert(
            "tenure_compact_bytes_removed".into(),
            report.bytes_removed as f64,
        );
        metrics.insert(
            "tenure_compact_items_relocated".into(),
            report.items_relocated as f64,
        );
        metrics.insert(
            "tenure_compact_deferred_by_snapshot".into(),
            f64::from(u8::from(report.deferred_by_snapshot)),
        );
        metrics.insert(
            "tenure_compact_retained_for_change_feed".into(),
            f64::from(u8::from(report.retained_for_change_feed)),
        );
        metrics.insert("tenure_log_bytes".into(), self.store.log_bytes() as f64);
        Ok(metrics)
    }

    fn compaction_note(&self) -> &'static str {
        "`compact()` once"
    }

    fn put_many(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        if let [(key, value)] = pairs {
            self.store
                .put(CONTAINER, key, value, &tenure::WriteOptions::default())?;
            return Ok(());
        }
        let mut batch = self.store.batch();
        for (key, value) in pairs {
            batch.put(CONTAINER, key, value, tenure::WriteOptions::default());
        }
        batch.commit()?;
        Ok(())
    }

    fn version_of(&self, key: &[u8]) -> Result<u64> {
        let item = self
            .store
            .get(CONTAINER, key, &tenure::ReadOptions::default())?;
        Ok(item.etag.version())
    }

    fn put_if_version(&self, key: &[u8], expected: u64, value: &[u8]) -> Result<bool> {
        let options = tenure::WriteOptions::with_conditions(tenure::Conditions::if_match(
            tenure::ETag(expected),
        ));
        match self.store.put(CONTAINER, key, value, &options) {
            Ok(_) => Ok(true),
            Err(error) if error.code() == tenure::ErrorCode::ConditionNotMet => Ok(false),
            Err(error) => Err(error.into()),
        }
    }
}

struct TenureReader<'a> {
    store: &'a tenure::Store,
}

impl Reader for TenureReader<'_> {
    /// The value borrowed from the map (`get_with`), as LMDB and redb lend their pages.
    fn get(&mut self, key: &Key) -> Result<u64> {
        Ok(self
            .store
            .get_with(CONTAINER, key, &tenure::ReadOptions::default(), |item| {
                fold(item.value)
            })?)
    }

    /// A snapshot (tenure's read transaction), then `Snapshot::scan` from `start`: key and
    /// value borrowed, as the peers' cursors read them.
    fn scan(&mut self, start: &[u8], count: usize) -> Result<u64> {
        let snapshot = self.store.snapshot()?;
        let mut total = 0;
        let mut left = count;
        snapshot.scan(CONTAINER, b"", start, |entry| {
            total += fold(entry.key) + fold(entry.value);
            left -= 1;
            left > 0
        })?;
        Ok(total)
    }

    /// Values are read as the peers read them, borrowed from the map (`get_with`, no
    /// snapshot): a copy of a 1 MiB value costs ~65 µs more.
    fn lookup(&mut self, key: &[u8], whole: bool) -> Result<Option<u64>> {
        let result = self
            .store
            .get_with(CONTAINER, key, &tenure::ReadOptions::default(), |item| {
                fold_value(item.value, whole)
            });
        match result {
            Ok(fold) => Ok(Some(fold)),
            Err(error) if error.code() == tenure::ErrorCode::NotFound => Ok(None),
            Err(error) => Err(error.into()),
        }
    }
}

// ----- LMDB (heed) -----

pub struct Lmdb {
    env: heed::Env,
    db: heed::Database<heed::types::Bytes, heed::types::Bytes>,
}

impl Lmdb {
    pub fn open(directory: &Path) -> Result<Lmdb> {
        Lmdb::open_with(directory, false)
    }

    pub fn open_with(directory: &Path, durable: bool) -> Result<Lmdb> {
        let mut options = heed::EnvOpenOptions::new();
        // Address space only: the file grows as pages are written.
        options.map_size(64 << 30);
        // SAFETY: NO_SYNC gives up durability on a crash (the non-durable class measured
        // here), not memory safety; the directory is this process's own.
        let env = unsafe {
            if !durable {
                options.flags(heed::EnvFlags::NO_SYNC);
            }
            options.open(directory)?
        };
        let mut transaction = env.write_txn()?;
        let db = env.create_database(&mut transaction, None)?;
        transaction.commit()?;
        Ok(Lmdb { env, db })
    }
}

impl Engine for Lmdb {
    fn write_batch(&self, pairs: &[(Key, Value)]) -> Result<()> {
        let mut transaction = self.env.write_txn()?;
        for (key, value) in pairs {
            self.db.put(&mut transaction, key, value)?;
        }
        transaction.commit()?;
        Ok(())
    }

    fn delete_batch(&self, keys: &[Key]) -> Result<()> {
        let mut transaction = self.env.write_txn()?;
        for key in keys {
            self.db.delete(&mut transaction, key)?;
        }
        transaction.commit()?;
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        Ok(self.env.force_sync()?)
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        Ok(Box::new(LmdbReader { engine: self }))
    }

    fn check_and_write(&self, key: &Key, value: &Value) -> Result<bool> {
        let mut transaction = self.env.write_txn()?;
        let next = {
            let current = self.db.get(&transaction, key)?.ok_or_else(missing)?;
            next_version(value, current)
        };
        self.db.put(&mut transaction, key, &next)?;
        transaction.commit()?;
        Ok(true)
    }

    fn compact(&mut self) -> Result<super::Metrics> {
        self.env.force_sync()?;
        Ok(super::Metrics::new())
    }

    fn compaction_note(&self) -> &'static str {
        "none in place (LMDB reuses freed pages; the file never shrinks)"
    }

    fn put_many(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        let mut transaction = self.env.write_txn()?;
        for (key, value) in pairs {
            self.db.put(&mut transaction, key, value)?;
        }
        transaction.commit()?;
        Ok(())
    }

    fn version_of(&self, key: &[u8]) -> Result<u64> {
        let transaction = self.env.read_txn()?;
        let value = self.db.get(&transaction, key)?.ok_or_else(missing)?;
        Ok(stored_version(value))
    }

    fn put_if_version(&self, key: &[u8], expected: u64, value: &[u8]) -> Result<bool> {
        let mut transaction = self.env.write_txn()?;
        let current = stored_version(self.db.get(&transaction, key)?.ok_or_else(missing)?);
        if current != expected {
            transaction.abort();
            return Ok(false);
        }
        self.db.put(&mut transaction, key, value)?;
        transaction.commit()?;
        Ok(true)
    }
}

struct LmdbReader<'a> {
    engine: &'a Lmdb,
}

impl Reader for LmdbReader<'_> {
    fn get(&mut self, key: &Key) -> Result<u64> {
        let transaction = self.engine.env.read_txn()?;
        let value = self.engine.db.get(&transaction, key)?.ok_or_else(missing)?;
        Ok(fold(value))
    }

    fn scan(&mut self, start: &[u8], count: usize) -> Result<u64> {
        let transaction = self.engine.env.read_txn()?;
        let range = (Bound::Included(start), Bound::Unbounded);
        let mut total = 0;
        for entry in self.engine.db.range(&transaction, &range)?.take(count) {
            let (key, value) = entry?;
            total += fold(key) + fold(value);
        }
        Ok(total)
    }

    fn lookup(&mut self, key: &[u8], whole: bool) -> Result<Option<u64>> {
        let transaction = self.engine.env.read_txn()?;
        let value = self.engine.db.get(&transaction, key)?;
        Ok(value.map(|value| fold_value(value, whole)))
    }
}

// ----- redb -----

const REDB_TABLE: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new("kv");

pub struct Redb {
    db: redb::Database,
    durable: bool,
}

impl Redb {
    pub fn open(directory: &Path) -> Result<Redb> {
        Redb::open_with(directory, false)
    }

    pub fn open_with(directory: &Path, durable: bool) -> Result<Redb> {
        let db = redb::Database::create(directory.join("data.redb"))?;
        let transaction = db.begin_write()?;
        transaction.open_table(REDB_TABLE)?;
        transaction.commit()?;
        Ok(Redb { db, durable })
    }

    fn begin(&self) -> Result<redb::WriteTransaction> {
        let mut transaction = self.db.begin_write()?;
        transaction.set_durability(if self.durable {
            redb::Durability::Immediate
        } else {
            redb::Durability::None
        });
        Ok(transaction)
    }

    fn commit_immediate(&self) -> Result<()> {
        let mut transaction = self.db.begin_write()?;
        transaction.set_durability(redb::Durability::Immediate);
        transaction.commit()?;
        Ok(())
    }
}

impl Engine for Redb {
    fn write_batch(&self, pairs: &[(Key, Value)]) -> Result<()> {
        let mut transaction = self.db.begin_write()?;
        transaction.set_durability(redb::Durability::None);
        {
            let mut table = transaction.open_table(REDB_TABLE)?;
            for (key, value) in pairs {
                table.insert(&key[..], &value[..])?;
            }
        }
        transaction.commit()?;
        Ok(())
    }

    fn delete_batch(&self, keys: &[Key]) -> Result<()> {
        let mut transaction = self.db.begin_write()?;
        transaction.set_durability(redb::Durability::None);
        {
            let mut table = transaction.open_table(REDB_TABLE)?;
            for key in keys {
                table.remove(&key[..])?;
            }
        }
        transaction.commit()?;
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        self.commit_immediate()
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        Ok(Box::new(RedbReader { db: &self.db }))
    }

    fn check_and_write(&self, key: &Key, value: &Value) -> Result<bool> {
        let mut transaction = self.db.begin_write()?;
        transaction.set_durability(redb::Durability::None);
        {
            let mut table = transaction.open_table(REDB_TABLE)?;
            let next = {
                let current = table.get(&key[..])?.ok_or_else(missing)?;
                next_version(value, current.value())
            };
            table.insert(&key[..], &next[..])?;
        }
        transaction.commit()?;
        Ok(true)
    }

    fn compact(&mut self) -> Result<super::Metrics> {
        self.commit_immediate()?;
        for _ in 0..16 {
            if !self.db.compact()? {
                break;
            }
        }
        Ok(super::Metrics::new())
    }

    fn compaction_note(&self) -> &'static str {
        "`compact()` until it reports nothing left to do"
    }

    fn put_many(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        let transaction = self.begin()?;
        {
            let mut table = transaction.open_table(REDB_TABLE)?;
            for (key, value) in pairs {
                table.insert(*key, *value)?;
            }
        }
        transaction.commit()?;
        Ok(())
    }

    fn version_of(&self, key: &[u8]) -> Result<u64> {
        let transaction = self.db.begin_read()?;
        let table = transaction.open_table(REDB_TABLE)?;
        let value = table.get(key)?.ok_or_else(missing)?;
        Ok(stored_version(value.value()))
    }

    fn put_if_version(&self, key: &[u8], expected: u64, value: &[u8]) -> Result<bool> {
        let transaction = self.begin()?;
        {
            let mut table = transaction.open_table(REDB_TABLE)?;
            let current = stored_version(table.get(key)?.ok_or_else(missing)?.value());
            if current != expected {
                drop(table);
                transaction.abort()?;
                return Ok(false);
            }
            table.insert(key, value)?;
        }
        transaction.commit()?;
        Ok(true)
    }
}

struct RedbReader<'a> {
    db: &'a redb::Database,
}

impl Reader for RedbReader<'_> {
    fn get(&mut self, key: &Key) -> Result<u64> {
        let transaction = self.db.begin_read()?;
        let table = transaction.open_table(REDB_TABLE)?;
        let value = table.get(&key[..])?.ok_or_else(missing)?;
        Ok(fold(value.value()))
    }

    fn scan(&mut self, start: &[u8], count: usize) -> Result<u64> {
        let transaction = self.db.begin_read()?;
        let table = transaction.open_table(REDB_TABLE)?;
        let mut total = 0;
        for entry in table.range::<&[u8]>(start..)?.take(count) {
            let (key, value) = entry?;
            total += fold(key.value()) + fold(value.value());
        }
        Ok(total)
    }

    fn lookup(&mut self, key: &[u8], whole: bool) -> Result<Option<u64>> {
        let transaction = self.db.begin_read()?;
        let table = transaction.open_table(REDB_TABLE)?;
        let value = table.get(key)?;
        Ok(value.map(|value| fold_value(value.value(), whole)))
    }
}

// ----- sled -----

pub struct Sled {
    db: sled::Db,
    durable: bool,
    /// In the durable class, sled's log file, synced after `flush()`: on Linux sled's flush
    /// ends in `sync_file_range`, which neither flushes the drive's cache nor the file's
    /// metadata, so it alone is not the durable class the other engines are measured in.
    log: Option<std::fs::File>,
}

impl Sled {
    pub fn open(directory: &Path) -> Result<Sled> {
        Sled::open_with(directory, false)
    }

    /// `flush()`, then `fdatasync` of the log file (see [`Sled::log`]).
    fn durable_flush(&self) -> Result<()> {
        self.db.flush()?;
        if let Some(log) = &self.log {
            log.sync_data()?;
        }
        Ok(())
    }

    pub fn open_with(directory: &Path, durable: bool) -> Result<Sled> {
        let db = sled::Config::new().path(directory).open()?;
        let log = if durable {
            Some(std::fs::File::open(directory.join("db"))?)
        } else {
            None
        };
        Ok(Sled { db, durable, log })
    }
}

impl Engine for Sled {
    fn write_batch(&self, pairs: &[(Key, Value)]) -> Result<()> {
        let mut batch = sled::Batch::default();
        for (key, value) in pairs {
            batch.insert(&key[..], &value[..]);
        }
        Ok(self.db.apply_batch(batch)?)
    }

    fn delete_batch(&self, keys: &[Key]) -> Result<()> {
        let mut batch = sled::Batch::default();
        for key in keys {
            batch.remove(&key[..]);
        }
        Ok(self.db.apply_batch(batch)?)
    }

    fn sync(&self) -> Result<()> {
        self.db.flush()?;
        Ok(())
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        Ok(Box::new(SledReader { db: &self.db }))
    }

    fn check_and_write(&self, key: &Key, value: &Value) -> Result<bool> {
        let current = self.db.get(key)?.ok_or_else(missing)?;
        let next = next_version(value, &current);
        Ok(self
            .db
            .compare_and_swap(key, Some(&current[..]), Some(&next[..]))?
            .is_ok())
    }

    fn compact(&mut self) -> Result<super::Metrics> {
        self.sync()?;
        Ok(super::Metrics::new())
    }

    fn compaction_note(&self) -> &'static str {
        "none (sled has no compaction call; its segment cleaner runs by itself); `flush()`"
    }

    fn put_many(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        if let [(key, value)] = pairs {
            self.db.insert(key, *value)?;
        } else {
            let mut batch = sled::Batch::default();
            for (key, value) in pairs {
                batch.insert(*key, *value);
            }
            self.db.apply_batch(batch)?;
        }
        if self.durable {
            self.durable_flush()?;
        }
        Ok(())
    }

    fn version_of(&self, key: &[u8]) -> Result<u64> {
        let value = self.db.get(key)?.ok_or_else(missing)?;
        Ok(stored_version(&value))
    }

    /// `get`, then `compare_and_swap` from the value read (sled compares whole values).
    fn put_if_version(&self, key: &[u8], expected: u64, value: &[u8]) -> Result<bool> {
        let current = self.db.get(key)?.ok_or_else(missing)?;
        if stored_version(&current) != expected {
            return Ok(false);
        }
        let swapped = self
            .db
            .compare_and_swap(key, Some(&current[..]), Some(value))?
            .is_ok();
        if swapped && self.durable {
            self.durable_flush()?;
        }
        Ok(swapped)
    }

    fn has_snapshots(&self) -> bool {
        false
    }
}

struct SledReader<'a> {
    db: &'a sled::Db,
}

impl Reader for SledReader<'_> {
    fn get(&mut self, key: &Key) -> Result<u64> {
        let value = self.db.get(key)?.ok_or_else(missing)?;
        Ok(fold(&value))
    }

    fn scan(&mut self, start: &[u8], count: usize) -> Result<u64> {
        let mut total = 0;
        for entry in self.db.range::<&[u8], _>(start..).take(count) {
            let (key, value) = entry?;
            total += fold(&key) + fold(&value);
        }
        Ok(total)
    }

    fn lookup(&mut self, key: &[u8], whole: bool) -> Result<Option<u64>> {
        Ok(self.db.get(key)?.map(|value| fold_value(&value, whole)))
    }
}

// ----- fjall -----

pub struct Fjall {
    keyspace: fjall::TxKeyspace,
    partition: fjall::TxPartitionHandle,
    durable: bool,
}

impl Fjall {
    pub fn open(directory: &Path) -> Result<Fjall> {
        Fjall::open_with(directory, false)
    }

    pub fn open_with(directory: &Path, durable: bool) -> Result<Fjall> {
        let keyspace = fjall::Config::new(directory).open_transactional()?;
        let partition = keyspace.open_partition("kv", fjall::PartitionCreateOptions::default())?;
        Ok(Fjall {
            keyspace,
            partition,
            durable,
        })
    }

    fn begin(&self) -> fjall::WriteTransaction<'_> {
        let transaction = self.keyspace.write_tx();
        if self.durable {
            transaction.durability(Some(fjall::PersistMode::SyncAll))
        } else {
            transaction
        }
    }
}

impl Engine for Fjall {
    fn write_batch(&self, pairs: &[(Key, Value)]) -> Result<()> {
        let mut transaction = self.keyspace.write_tx();
        for (key, value) in pairs {
            transaction.insert(&self.partition, &key[..], &value[..]);
        }
        Ok(transaction.commit()?)
    }

    fn delete_batch(&self, keys: &[Key]) -> Result<()> {
        let mut transaction = self.keyspace.write_tx();
        for key in keys {
            transaction.remove(&self.partition, &key[..]);
        }
        Ok(transaction.commit()?)
    }

    fn sync(&self) -> Result<()> {
        Ok(self.keyspace.persist(fjall::PersistMode::SyncAll)?)
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        Ok(Box::new(FjallReader { engine: self }))
    }

    fn check_and_write(&self, key: &Key, value: &Value) -> Result<bool> {
        let mut transaction = self.keyspace.write_tx();
        let current = transaction.get(&self.partition, key)?.ok_or_else(missing)?;
        let next = next_version(value, &current);
        transaction.insert(&self.partition, &key[..], &next[..]);
        transaction.commit()?;
        Ok(true)
    }

    fn compact(&mut self) -> Result<super::Metrics> {
        self.sync()?;
        self.partition.inner().major_compact()?;
        self.sync()?;
        Ok(super::Metrics::new())
    }

    fn compaction_note(&self) -> &'static str {
        "`major_compact()` of the partition"
    }

    fn put_many(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        let mut transaction = self.begin();
        for (key, value) in pairs {
            transaction.insert(&self.partition, *key, *value);
        }
        Ok(transaction.commit()?)
    }

    fn version_of(&self, key: &[u8]) -> Result<u64> {
        let value = self.partition.get(key)?.ok_or_else(missing)?;
        Ok(stored_version(&value))
    }

    fn put_if_version(&self, key: &[u8], expected: u64, value: &[u8]) -> Result<bool> {
        let mut transaction = self.begin();
        let current = transaction.get(&self.partition, key)?.ok_or_else(missing)?;
        if stored_version(&current) != expected {
            transaction.rollback();
            return Ok(false);
        }
        transaction.insert(&self.partition, key, value);
        transaction.commit()?;
        Ok(true)
    }
}

struct FjallReader<'a> {
    engine: &'a Fjall,
}

impl Reader for FjallReader<'_> {
    fn get(&mut self, key: &Key) -> Result<u64> {
        let value = self.engine.partition.get(key)?.ok_or_else(missing)?;
        Ok(fold(&value))
    }

    fn scan(&mut self, start: &[u8], count: usize) -> Result<u64> {
        let transaction = self.engine.keyspace.read_tx();
        let mut total = 0;
        for entry in transaction
            .range::<&[u8], _>(&self.engine.partition, start..)
            .take(count)
        {
            let (key, value) = entry?;
            total += fold(&key) + fold(&value);
        }
        Ok(total)
    }

    fn lookup(&mut self, key: &[u8], whole: bool) -> Result<Option<u64>> {
        Ok(self
            .engine
            .partition
            .get(key)?
            .map(|value| fold_value(&value, whole)))
    }
}

// ----- SQLite (rusqlite, bundled) -----

pub struct Sqlite {
    path: PathBuf,
    connection: Mutex<rusqlite::Connection>,
    durable: bool,
}

impl Sqlite {
    pub fn open(directory: &Path) -> Result<Sqlite> {
        Sqlite::open_with(directory, false)
    }

    pub fn open_with(directory: &Path, durable: bool) -> Result<Sqlite> {
        let path = directory.join("data.sqlite");
        let connection = Sqlite::connect(&path, durable)?;
        connection.execute_batch(
            "CREATE TABLE IF NOT EXISTS kv (key BLOB PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;",
        )?;
        Ok(Sqlite {
            path,
            connection: Mutex::new(connection),
            durable,
        })
    }

    fn connect(path: &Path, durable: bool) -> Result<rusqlite::Connection> {
        let connection = rusqlite::Connection::open(path)?;
        let mode: String = connection.query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(format!("sqlite refused WAL mode: {mode}").into());
        }
        connection.pragma_update(None, "synchronous", if durable { "FULL" } else { "OFF" })?;
        Ok(connection)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, rusqlite::Connection> {
        self.connection
            .lock()
            .unwrap_or_else(|error| error.into_inner())
    }
}

impl Engine for Sqlite {
    fn write_batch(&self, pairs: &[(Key, Value)]) -> Result<()> {
        let mut connection = self.lock();
        let transaction = connection.transaction()?;
        {
            let mut statement = transaction
                .prepare_cached("INSERT OR REPLACE INTO kv (key, value) VALUES (?1, ?2)")?;
            for (key, value) in pairs {
                statement.execute(rusqlite::params![&key[..], &value[..]])?;
            }
        }
        transaction.commit()?;
        Ok(())
    }

    fn delete_batch(&self, keys: &[Key]) -> Result<()> {
        let mut connection = self.lock();
        let transaction = connection.transaction()?;
        {
            let mut statement = transaction.prepare_cached("DELETE FROM kv WHERE key = ?1")?;
            for key in keys {
                statement.execute([&key[..]])?;
            }
        }
        transaction.commit()?;
        Ok(())
    }

    /// With `synchronous=OFF` SQLite never syncs; the files are synced directly.
    fn sync(&self) -> Result<()> {
        let _connection = self.lock();
        for suffix in ["", "-wal"] {
            let mut name = self.path.clone().into_os_string();
            name.push(suffix);
            if let Ok(file) = std::fs::File::open(&name) {
                file.sync_all()?;
            }
        }
        Ok(())
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        Ok(Box::new(SqliteReader {
            connection: Sqlite::connect(&self.path, self.durable)?,
        }))
    }

    /// `SELECT` the value, then `UPDATE ... WHERE value = <what was read>` (the value carries
    /// the version, so this is the `WHERE version = ?` of an optimistic update, like sled's
    /// compare_and_swap).
    fn check_and_write(&self, key: &Key, value: &Value) -> Result<bool> {
        let connection = self.lock();
        let current: Vec<u8> = connection
            .prepare_cached("SELECT value FROM kv WHERE key = ?1")?
            .query_row([&key[..]], |row| row.get(0))?;
        let next = next_version(value, &current);
        let changed = connection
            .prepare_cached("UPDATE kv SET value = ?1 WHERE key = ?2 AND value = ?3")?
            .execute(rusqlite::params![&next[..], &key[..], &current[..]])?;
        Ok(changed == 1)
    }

    fn compact(&mut self) -> Result<super::Metrics> {
        let connection = self.lock();
        connection.execute_batch("VACUUM;")?;
        connection.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        drop(connection);
        self.sync()?;
        Ok(super::Metrics::new())
    }

    fn compaction_note(&self) -> &'static str {
        "`VACUUM`, then `wal_checkpoint(TRUNCATE)`"
    }

    fn put_many(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        let mut connection = self.lock();
        let transaction = connection.transaction()?;
        {
            let mut statement = transaction
                .prepare_cached("INSERT OR REPLACE INTO kv (key, value) VALUES (?1, ?2)")?;
            for (key, value) in pairs {
                statement.execute(rusqlite::params![key, value])?;
            }
        }
        transaction.commit()?;
        Ok(())
    }

    fn version_of(&self, key: &[u8]) -> Result<u64> {
        let connection = self.lock();
        let current: Vec<u8> = connection
            .prepare_cached("SELECT value FROM kv WHERE key = ?1")?
            .query_row([key], |row| row.get(0))?;
        Ok(stored_version(&current))
    }

    /// `SELECT` and `UPDATE … WHERE value = <what was read>` under the connection's lock,
    /// as in [`Engine::check_and_write`].
    fn put_if_version(&self, key: &[u8], expected: u64, value: &[u8]) -> Result<bool> {
        let connection = self.lock();
        let current: Vec<u8> = connection
            .prepare_cached("SELECT value FROM kv WHERE key = ?1")?
            .query_row([key], |row| row.get(0))?;
        if stored_version(&current) != expected {
            return Ok(false);
        }
        let changed = connection
            .prepare_cached("UPDATE kv SET value = ?1 WHERE key = ?2 AND value = ?3")?
            .execute(rusqlite::params![value, key, &current[..]])?;
        Ok(changed == 1)
    }
}

struct SqliteReader {
    connection: rusqlite::Connection,
}

impl Reader for SqliteReader {
    fn get(&mut self, key: &Key) -> Result<u64> {
        let mut statement = self
            .connection
            .prepare_cached("SELECT value FROM kv WHERE key = ?1")?;
        let mut rows = statement.query([&key[..]])?;
        let row = rows.next()?.ok_or_else(missing)?;
        Ok(fold(row.get_ref(0)?.as_blob()?))
    }

    fn scan(&mut self, start: &[u8], count: usize) -> Result<u64> {
        let mut statement = self
            .connection
            .prepare_cached("SELECT key, value FROM kv WHERE key >= ?1 ORDER BY key LIMIT ?2")?;
        let mut rows = statement.query(rusqlite::params![start, count as i64])?;
        let mut total = 0;
        while let Some(row) = rows.next()? {
            total += fold(row.get_ref(0)?.as_blob()?) + fold(row.get_ref(1)?.as_blob()?);
        }
        Ok(total)
    }

    fn lookup(&mut self, key: &[u8], whole: bool) -> Result<Option<u64>> {
        let mut statement = self
            .connection
            .prepare_cached("SELECT value FROM kv WHERE key = ?1")?;
        let mut rows = statement.query([key])?;
        match rows.next()? {
            Some(row) => Ok(Some(fold_value(row.get_ref(0)?.as_blob()?, whole))),
            None => Ok(None),
        }
    }
}

/// Keeps `VALUE_BYTES` in use here so a change of the shape is noticed at compile time.
const _: () = assert!(VALUE_BYTES >= 8);
