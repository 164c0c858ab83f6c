//! RocksDB (the `rocksdb` crate, librocksdb-sys), behind the cargo feature `rocksdb`: its C++
//! build takes many minutes, so neither `peers` nor the test command builds it.
//!
//! Opened as an `OptimisticTransactionDB` with default options (`create_if_missing` only), so
//! the compare-and-set rows can use a transaction; every other operation goes to the base
//! database as on a plain `DB` (an optimistic transaction checks its keys against the
//! memtables' sequence numbers at commit, so plain writes take no locks).
//!
//! | class | RocksDB |
//! | --- | --- |
//! | non-durable commits | `WriteOptions` with `disable_wal(false)`, `set_sync(false)` (its default: the WAL is written, not synced) |
//! | sync | `flush_wal(true)` |
//! | durable commits (workload `commit`) | `WriteOptions::set_sync(true)` |
//! | compaction | `compact_range(None, None)` |
//! | snapshot scans | `snapshot()`, then an iterator of the snapshot |
//! | compare-and-set | optimistic transaction: `get_pinned_for_update`, `put`, `commit` (a conflict makes the commit fail with `Busy`/`TryAgain`: not written) |
//! | gets | `get_pinned` (the value pinned in the block cache or memtable, not copied) |
//! | scans | `iterator(IteratorMode::From(start, Direction::Forward))`, `count` entries |

use std::path::Path;

use rocksdb::{
    Direction, ErrorKind, IteratorMode, OptimisticTransactionDB, OptimisticTransactionOptions,
    Options, WriteBatchWithTransaction, WriteOptions,
};

use super::engines::{
    fold, fold_value, missing, next_version, stored_version, Engine, Reader, Result,
};
use super::{Key, Value};

pub struct RocksDb {
    db: OptimisticTransactionDB,
    /// The class of [`Engine::put_many`] and [`Engine::put_if_version`] (see
    /// [`super::engines::open_with`]).
    durable: bool,
}

impl RocksDb {
    pub fn open(directory: &Path) -> Result<RocksDb> {
        RocksDb::open_with(directory, false)
    }

    pub fn open_with(directory: &Path, durable: bool) -> Result<RocksDb> {
        let mut options = Options::default();
        options.create_if_missing(true);
        let db = OptimisticTransactionDB::open(&options, directory)?;
        Ok(RocksDb { db, durable })
    }

    /// The write options of a commit: WAL on, synced only in the durable class. Made per call
    /// (`WriteOptions` is not `Sync`), as the crate's own `put` does.
    fn write_options(durable: bool) -> WriteOptions {
        let mut options = WriteOptions::default();
        options.disable_wal(false);
        options.set_sync(durable);
        options
    }

    /// Commits a transaction; a write conflict (another writer changed a key it read for
    /// update) is `Ok(false)`: nothing was written.
    fn commit(transaction: rocksdb::Transaction<'_, OptimisticTransactionDB>) -> Result<bool> {
        match transaction.commit() {
            Ok(()) => Ok(true),
            Err(error) if matches!(error.kind(), ErrorKind::Busy | ErrorKind::TryAgain) => {
                Ok(false)
            }
            Err(error) => Err(error.into()),
        }
    }

    fn transaction(&self, durable: bool) -> rocksdb::Transaction<'_, OptimisticTransactionDB> {
        self.db.transaction_opt(
            &RocksDb::write_options(durable),
            &OptimisticTransactionOptions::default(),
        )
    }
}

impl Engine for RocksDb {
    fn write_batch(&self, pairs: &[(Key, Value)]) -> Result<()> {
        let mut batch = WriteBatchWithTransaction::<true>::default();
        for (key, value) in pairs {
            batch.put(key, value);
        }
        Ok(self.db.write_opt(batch, &RocksDb::write_options(false))?)
    }

    fn delete_batch(&self, keys: &[Key]) -> Result<()> {
        let mut batch = WriteBatchWithTransaction::<true>::default();
        for key in keys {
            batch.delete(key);
        }
        Ok(self.db.write_opt(batch, &RocksDb::write_options(false))?)
    }

    fn sync(&self) -> Result<()> {
        Ok(self.db.flush_wal(true)?)
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        Ok(Box::new(RocksDbReader { db: &self.db }))
    }

    fn check_and_write(&self, key: &Key, value: &Value) -> Result<bool> {
        let transaction = self.transaction(false);
        let next = {
            let current = transaction
                .get_pinned_for_update(key, true)?
                .ok_or_else(missing)?;
            next_version(value, &current)
        };
        transaction.put(key, next)?;
        RocksDb::commit(transaction)
    }

    fn compact(&mut self) -> Result<super::Metrics> {
        self.sync()?;
        self.db.compact_range(None::<&[u8]>, None::<&[u8]>);
        self.sync()?;
        Ok(super::Metrics::new())
    }

    fn compaction_note(&self) -> &'static str {
        "`compact_range(None, None)`"
    }

    fn put_many(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        let options = RocksDb::write_options(self.durable);
        if let [(key, value)] = pairs {
            return Ok(self.db.put_opt(key, value, &options)?);
        }
        let mut batch = WriteBatchWithTransaction::<true>::default();
        for (key, value) in pairs {
            batch.put(key, value);
        }
        Ok(self.db.write_opt(batch, &options)?)
    }

    fn version_of(&self, key: &[u8]) -> Result<u64> {
        let value = self.db.get_pinned(key)?.ok_or_else(missing)?;
        Ok(stored_version(&value))
    }

    /// An optimistic transaction: `get_pinned_for_update`, the version compared, `put`,
    /// `commit` (which fails if another writer changed the key since the read).
    fn put_if_version(&self, key: &[u8], expected: u64, value: &[u8]) -> Result<bool> {
        let transaction = self.transaction(self.durable);
        let current = stored_version(
            &transaction
                .get_pinned_for_update(key, true)?
                .ok_or_else(missing)?,
        );
        if current != expected {
            transaction.rollback()?;
            return Ok(false);
        }
        transaction.put(key, value)?;
        RocksDb::commit(transaction)
    }
}

struct RocksDbReader<'a> {
    db: &'a OptimisticTransactionDB,
}

impl Reader for RocksDbReader<'_> {
    fn get(&mut self, key: &Key) -> Result<u64> {
        let value = self.db.get_pinned(key)?.ok_or_else(missing)?;
        Ok(fold(&value))
    }

    fn scan(&mut self, start: &[u8], count: usize) -> Result<u64> {
        let mut total = 0;
        for entry in self
            .db
            .iterator(IteratorMode::From(start, Direction::Forward))
            .take(count)
        {
            let (key, value) = entry?;
            total += fold(&key) + fold(&value);
        }
        Ok(total)
    }

    fn lookup(&mut self, key: &[u8], whole: bool) -> Result<Option<u64>> {
        Ok(self
            .db
            .get_pinned(key)?
            .map(|value| fold_value(&value, whole)))
    }

    fn snapshot_scan(&mut self, start: &[u8], count: usize) -> Result<u64> {
        let snapshot = self.db.snapshot();
        let mut total = 0;
        for entry in snapshot
            .iterator(IteratorMode::From(start, Direction::Forward))
            .take(count)
        {
            let (key, value) = entry?;
            total += fold(&key) + fold(&value);
        }
        Ok(total)
    }
}
