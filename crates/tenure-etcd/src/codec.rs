//! What tenure keeps in etcd, byte by byte: one etcd key per item, one per container, and the
//! records stored in their values. Integers are fixed-width little-endian; every length is
//! checked against what is left before a byte is trusted.
//!
//! ```text
//! key of a container:  <prefix> "c/" <name>
//! key of an item:      <prefix> "i/" <container name> 0x00 <item key>
//! key of the head:     <prefix> "h"
//! key of an item's timer:      <prefix> "t/" <kind> "/" <container name> 0x00 <item key>
//! key of a container's timer:  <prefix> "u/" <kind> "/" <container name>
//! ```
//!
//! A timer is an empty key attached to an etcd lease whose TTL is a deadline's time left:
//! the cluster deletes it when the deadline passes, so whether a deadline has passed is the
//! cluster's to say, not a client clock's (store.rs, `settle`). Kinds: `l` a lease's
//! deadline, `b` its break deadline, `k` a cache lock's deadline, `e` an item's expiry.
//!
//! Every transaction that changes the store also rewrites its head, last: the head's
//! `mod_revision` is the store's version (the cluster's revision moves with other stores'
//! writes too), and a change feed that sees the head's event at a revision has seen every
//! event of it. The head's value names the items a TTL sweep deleted in that transaction
//! (empty otherwise; see feed.rs).
//!
//! A container name never holds NUL (docs/spec.md §1), so `0x00` ends it unambiguously, and an
//! item's etcd keys sort exactly as its tenure keys do within the container.
//!
//! ```text
//! item record:       u8 format (1) | u8 flags | u64 etag_version | u64 last_modified
//!                    | u64 expires_at | u64 last_fence | str content_type | metadata
//!                    | lease | lock | u32 value length | value
//! container record:  u8 format (1) | u8 flags | u64 etag_version | u64 last_modified
//!                    | u32 default_ttl_seconds | u64 last_fence | metadata | lease
//! str:               u32 length | UTF-8 bytes          metadata: u32 count | (str, str)*
//! lease:             u8 present | u128 id | u32 duration seconds (0 = infinite)
//!                    | u64 deadline | u64 break_deadline | u8 broken | u64 fence | str holder
//! lock:              u8 present | u128 handle | u64 deadline | u8 item_absent
//! ```
//!
//! `etag_version` 0 means "the record's own etcd `mod_revision`": a write of data cannot know
//! the revision it will commit at, so it stores 0, and the item's ETag and version are the
//! revision etcd gives it. A lease or lock change keeps the ETag, so it stores the revision
//! explicitly. Absent optional timestamps are stored as 0 (no real time is 0).

use tenure::seam::lease::{LeaseDuration, LeaseRecord};
use tenure::seam::lock::LockRecord;
use tenure::{LeaseId, LockHandle, Timestamp};

const FORMAT: u8 = 1;
const ITEM_PRESENT: u8 = 1;
const HAS_CONTENT_TYPE: u8 = 2;
const HAS_DEFAULT_TTL: u8 = 4;

/// Keys under one store's prefix.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    prefix: Vec<u8>,
}

impl Keys {
    pub(crate) fn new(prefix: &str) -> Keys {
        let mut prefix = prefix.as_bytes().to_vec();
        if !prefix.ends_with(b"/") {
            prefix.push(b'/');
        }
        Keys { prefix }
    }

    pub(crate) fn prefix(&self) -> &[u8] {
        &self.prefix
    }

    pub(crate) fn container(&self, name: &str) -> Vec<u8> {
        [&self.prefix[..], b"c/", name.as_bytes()].concat()
    }

    /// Where every container key starts.
    pub(crate) fn containers(&self) -> Vec<u8> {
        [&self.prefix[..], b"c/"].concat()
    }

    pub(crate) fn item(&self, container: &str, key: &[u8]) -> Vec<u8> {
        [&self.prefix[..], b"i/", container.as_bytes(), b"\0", key].concat()
    }

    /// Where the items of `container` start: every item key has this prefix.
    pub(crate) fn items(&self, container: &str) -> Vec<u8> {
        self.item(container, b"")
    }

    pub(crate) fn head(&self) -> Vec<u8> {
        [&self.prefix[..], b"h"].concat()
    }

    /// A container's name from its etcd key.
    pub(crate) fn container_name<'k>(&self, etcd_key: &'k [u8]) -> Option<&'k str> {
        let rest = etcd_key
            .strip_prefix(&self.prefix[..])?
            .strip_prefix(b"c/")?;
        std::str::from_utf8(rest).ok()
    }

    /// An item's container and key from its etcd key.
    pub(crate) fn item_target<'k>(&self, etcd_key: &'k [u8]) -> Option<(&'k str, &'k [u8])> {
        let rest = etcd_key
            .strip_prefix(&self.prefix[..])?
            .strip_prefix(b"i/")?;
        let split = rest.iter().position(|&byte| byte == 0)?;
        let name = std::str::from_utf8(&rest[..split]).ok()?;
        Some((name, &rest[split + 1..]))
    }
}

/// The deadlines a record may hold, each kept by a timer key on the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Timer {
    Lease,
    Break,
    Lock,
    Expiry,
}

impl Timer {
    pub(crate) const ALL: [Timer; 4] = [Timer::Lease, Timer::Break, Timer::Lock, Timer::Expiry];
    /// A container's lease has the first two.
    pub(crate) const OF_CONTAINERS: [Timer; 2] = [Timer::Lease, Timer::Break];

    fn tag(self) -> u8 {
        match self {
            Timer::Lease => b'l',
            Timer::Break => b'b',
            Timer::Lock => b'k',
            Timer::Expiry => b'e',
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

impl Keys {
    pub(crate) fn item_timer(&self, timer: Timer, container: &str, key: &[u8]) -> Vec<u8> {
        [
            &self.prefix[..],
            b"t/",
            &[timer.tag()],
            b"/",
            container.as_bytes(),
            b"\0",
            key,
        ]
        .concat()
    }

    /// Where the item timers of one kind of `container` start.
    pub(crate) fn item_timers(&self, timer: Timer, container: &str) -> Vec<u8> {
        self.item_timer(timer, container, b"")
    }

    pub(crate) fn container_timer(&self, timer: Timer, name: &str) -> Vec<u8> {
        [
            &self.prefix[..],
            b"u/",
            &[timer.tag()],
            b"/",
            name.as_bytes(),
        ]
        .concat()
    }
}

/// The end of the range of keys that start with `prefix` (etcd's "range end").
pub(crate) fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // Every byte 0xff: to the end of the key space.
    vec![0]
}

/// One item as stored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ItemRecord {
    /// False for a key force-locked while absent: the record holds only its lock.
    pub(crate) present: bool,
    pub(crate) etag_version: u64,
    pub(crate) last_modified: Timestamp,
    pub(crate) expires_at: Option<Timestamp>,
    pub(crate) last_fence: u64,
    pub(crate) content_type: Option<String>,
    pub(crate) metadata: Vec<(String, String)>,
    pub(crate) lease: Option<LeaseRecord>,
    pub(crate) lock: Option<LockRecord>,
    pub(crate) value: Vec<u8>,
}

/// One container as stored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ContainerRecord {
    pub(crate) etag_version: u64,
    pub(crate) last_modified: Timestamp,
    pub(crate) default_ttl_seconds: Option<u32>,
    pub(crate) last_fence: u64,
    pub(crate) metadata: Vec<(String, String)>,
    pub(crate) lease: Option<LeaseRecord>,
}

/// The ETag version of a record whose etcd `mod_revision` is `mod_revision`.
pub(crate) fn etag_version(stored: u64, mod_revision: i64) -> u64 {
    if stored == 0 {
        u64::try_from(mod_revision).unwrap_or(0)
    } else {
        stored
    }
}

impl ItemRecord {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.value.len());
        let mut flags = 0;
        if self.present {
            flags |= ITEM_PRESENT;
        }
        if self.content_type.is_some() {
            flags |= HAS_CONTENT_TYPE;
        }
        out.push(FORMAT);
        out.push(flags);
        put_u64(&mut out, self.etag_version);
        put_u64(&mut out, self.last_modified);
        put_u64(&mut out, self.expires_at.unwrap_or(0));
        put_u64(&mut out, self.last_fence);
        put_str(&mut out, self.content_type.as_deref().unwrap_or(""));
        put_metadata(&mut out, &self.metadata);
        put_lease(&mut out, self.lease.as_ref());
        put_lock(&mut out, self.lock.as_ref());
        put_bytes(&mut out, &self.value);
        out
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<ItemRecord, String> {
        let mut reader = Reader { bytes };
        let flags = reader.header()?;
        let record = ItemRecord {
            present: flags & ITEM_PRESENT != 0,
            etag_version: reader.u64()?,
            last_modified: reader.u64()?,
            expires_at: nonzero(reader.u64()?),
            last_fence: reader.u64()?,
            content_type: {
                let text = reader.string()?;
                (flags & HAS_CONTENT_TYPE != 0).then_some(text)
            },
            metadata: reader.metadata()?,
            lease: reader.lease()?,
            lock: reader.lock()?,
            value: reader.bytes()?.to_vec(),
        };
        reader.end()?;
        Ok(record)
    }
}

impl ContainerRecord {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64);
        out.push(FORMAT);
        out.push(if self.default_ttl_seconds.is_some() {
            HAS_DEFAULT_TTL
        } else {
            0
        });
        put_u64(&mut out, self.etag_version);
        put_u64(&mut out, self.last_modified);
        out.extend_from_slice(&self.default_ttl_seconds.unwrap_or(0).to_le_bytes());
        put_u64(&mut out, self.last_fence);
        put_metadata(&mut out, &self.metadata);
        put_lease(&mut out, self.lease.as_ref());
        out
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<ContainerRecord, String> {
        let mut reader = Reader { bytes };
        let flags = reader.header()?;
        let record = ContainerRecord {
            etag_version: reader.u64()?,
            last_modified: reader.u64()?,
            default_ttl_seconds: {
                let seconds = reader.u32()?;
                (flags & HAS_DEFAULT_TTL != 0).then_some(seconds)
            },
            last_fence: reader.u64()?,
            metadata: reader.metadata()?,
            lease: reader.lease()?,
        };
        reader.end()?;
        Ok(record)
    }
}

fn nonzero(value: u64) -> Option<u64> {
    (value != 0).then_some(value)
}

fn put_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(&value.to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    let length = u32::try_from(bytes.len()).expect("limits keep every field under 4 GiB");
    out.extend_from_slice(&length.to_le_bytes());
    out.extend_from_slice(bytes);
}

fn put_str(out: &mut Vec<u8>, text: &str) {
    put_bytes(out, text.as_bytes());
}

fn put_metadata(out: &mut Vec<u8>, metadata: &[(String, String)]) {
    let count = u32::try_from(metadata.len()).expect("limits bound the metadata");
    out.extend_from_slice(&count.to_le_bytes());
    for (name, value) in metadata {
        put_str(out, name);
        put_str(out, value);
    }
}

fn put_lease(out: &mut Vec<u8>, lease: Option<&LeaseRecord>) {
    let Some(lease) = lease else {
        out.push(0);
        return;
    };
    out.push(1);
    out.extend_from_slice(&lease.id.0.to_le_bytes());
    let seconds = match lease.duration {
        LeaseDuration::Fixed { seconds } => seconds,
        LeaseDuration::Infinite => 0,
    };
    out.extend_from_slice(&seconds.to_le_bytes());
    put_u64(out, lease.deadline.unwrap_or(0));
    put_u64(out, lease.break_deadline.unwrap_or(0));
    out.push(u8::from(lease.broken));
    put_u64(out, lease.fence);
    match &lease.holder {
        Some(holder) => {
            out.push(1);
            put_str(out, holder);
        }
        None => out.push(0),
    }
}

fn put_lock(out: &mut Vec<u8>, lock: Option<&LockRecord>) {
    let Some(lock) = lock else {
        out.push(0);
        return;
    };
    out.push(1);
    out.extend_from_slice(&lock.handle.0.to_le_bytes());
    put_u64(out, lock.deadline);
    out.push(u8::from(lock.item_absent));
}

/// Reads fields front to back, refusing any length that runs past the end.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, count: usize) -> Result<&'a [u8], String> {
        if count > self.bytes.len() {
            return Err(format!(
                "a field of {count} bytes runs past the record's end ({} left)",
                self.bytes.len()
            ));
        }
        let (taken, rest) = self.bytes.split_at(count);
        self.bytes = rest;
        Ok(taken)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        Ok(self.take(N)?.try_into().expect("take returns N bytes"))
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.array::<1>()?[0])
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn u128(&mut self) -> Result<u128, String> {
        Ok(u128::from_le_bytes(self.array()?))
    }

    fn bool(&mut self) -> Result<bool, String> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(format!("a flag byte is {other}, not 0 or 1")),
        }
    }

    fn header(&mut self) -> Result<u8, String> {
        let format = self.u8()?;
        if format != FORMAT {
            return Err(format!(
                "record format {format} is not {FORMAT} (written by another tenure?)"
            ));
        }
        self.u8()
    }

    fn bytes(&mut self) -> Result<&'a [u8], String> {
        let length = self.u32()? as usize;
        self.take(length)
    }

    fn string(&mut self) -> Result<String, String> {
        let bytes = self.bytes()?;
        String::from_utf8(bytes.to_vec()).map_err(|_| "a text field is not UTF-8".to_owned())
    }

    fn metadata(&mut self) -> Result<Vec<(String, String)>, String> {
        let count = self.u32()? as usize;
        // Each pair takes at least 8 bytes: a count beyond that is damage, not a size to
        // allocate for.
        if count > self.bytes.len() / 8 {
            return Err(format!("{count} metadata pairs cannot fit the record"));
        }
        (0..count)
            .map(|_| Ok((self.string()?, self.string()?)))
            .collect()
    }

    fn lease(&mut self) -> Result<Option<LeaseRecord>, String> {
        if !self.bool()? {
            return Ok(None);
        }
        let id = LeaseId(self.u128()?);
        let duration = match self.u32()? {
            0 => LeaseDuration::Infinite,
            seconds => LeaseDuration::Fixed { seconds },
        };
        Ok(Some(LeaseRecord {
            id,
            duration,
            deadline: nonzero(self.u64()?),
            break_deadline: nonzero(self.u64()?),
            broken: self.bool()?,
            fence: self.u64()?,
            holder: if self.bool()? {
                Some(self.string()?)
            } else {
                None
            },
        }))
    }

    fn lock(&mut self) -> Result<Option<LockRecord>, String> {
        if !self.bool()? {
            return Ok(None);
        }
        Ok(Some(LockRecord {
            handle: LockHandle(self.u128()?),
            deadline: self.u64()?,
            item_absent: self.bool()?,
        }))
    }

    fn end(&self) -> Result<(), String> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(format!("{} bytes after the record's end", self.bytes.len()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full_item() -> ItemRecord {
        ItemRecord {
            present: true,
            etag_version: 7,
            last_modified: 1_700_000_000_000_000,
            expires_at: Some(1_700_000_060_000_000),
            last_fence: 3,
            content_type: Some("text/plain".into()),
            metadata: vec![("owner".into(), "alice".into())],
            lease: Some(LeaseRecord {
                id: LeaseId(42),
                duration: LeaseDuration::Fixed { seconds: 30 },
                deadline: Some(9),
                break_deadline: None,
                broken: false,
                fence: 4,
                holder: Some("worker-1".into()),
            }),
            lock: Some(LockRecord {
                handle: LockHandle(5),
                deadline: 11,
                item_absent: false,
            }),
            value: b"hello".to_vec(),
        }
    }

    #[test]
    fn records_round_trip() {
        let item = full_item();
        assert_eq!(ItemRecord::decode(&item.encode()), Ok(item));
        let plain = ItemRecord {
            present: true,
            ..ItemRecord::default()
        };
        assert_eq!(ItemRecord::decode(&plain.encode()), Ok(plain));
        let container = ContainerRecord {
            etag_version: 0,
            last_modified: 1,
            default_ttl_seconds: Some(0),
            last_fence: 2,
            metadata: vec![("a".into(), "b".into())],
            lease: None,
        };
        assert_eq!(ContainerRecord::decode(&container.encode()), Ok(container));
    }

    #[test]
    fn every_truncation_and_every_flipped_format_byte_is_refused() {
        let bytes = full_item().encode();
        for length in 0..bytes.len() {
            assert!(ItemRecord::decode(&bytes[..length]).is_err(), "{length}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(ItemRecord::decode(&longer).is_err());
        let mut other_format = bytes;
        other_format[0] = 2;
        assert!(ItemRecord::decode(&other_format).is_err());
    }

    #[test]
    fn item_keys_sort_as_tenure_keys_and_parse_back() {
        let keys = Keys::new("/app");
        let a = keys.item("c/1", b"a");
        let b = keys.item("c/1", b"a\0");
        let c = keys.item("c/1", b"b");
        assert!(a < b && b < c);
        assert!(a.starts_with(&keys.items("c/1")));
        assert!(!a.starts_with(&keys.items("c")));
        assert_eq!(keys.item_target(&b), Some(("c/1", &b"a\0"[..])));
        assert_eq!(keys.container_name(&keys.container("c/1")), Some("c/1"));
        assert_eq!(prefix_end(b"ab"), b"ac".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
    }
}
