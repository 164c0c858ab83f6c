use super::*;
use crate::rules::lease::{LeaseDuration, LeaseId, LeaseRecord};
use crate::rules::lock::{LockHandle, LockRecord};

#[test]
fn coordination_size_matches_its_encoding() {
    let lease = |holder: Option<&str>| LeaseRecord {
        id: LeaseId(u128::MAX - 3),
        duration: LeaseDuration::Fixed { seconds: 15 },
        deadline: Some(1_000),
        break_deadline: None,
        broken: false,
        fence: 9,
        holder: holder.map(str::to_owned),
    };
    let lock = LockRecord {
        handle: LockHandle(5),
        deadline: 77,
        item_absent: true,
    };
    let cases = [
        None,
        Some(Coordination::default()),
        Some(Coordination {
            lease: Some(lease(None)),
            lock: None,
        }),
        Some(Coordination {
            lease: Some(lease(Some("worker 7"))),
            lock: None,
        }),
        Some(Coordination {
            lease: Some(lease(Some(""))),
            lock: Some(lock),
        }),
        Some(Coordination {
            lease: None,
            lock: Some(lock),
        }),
    ];
    for coordination in &cases {
        let mut encoded = Vec::new();
        encode_coordination(&mut encoded, coordination.as_ref());
        assert_eq!(
            coordination_size(coordination.as_ref()),
            encoded.len(),
            "{coordination:?}"
        );
        let coordination = coordination.clone().unwrap_or_default();
        encode_item_coordination(&mut encoded, 3, b"some key", 11, Some(5), &coordination);
        assert_eq!(
            item_coordination_size(b"some key", &coordination),
            encoded.len(),
            "{coordination:?}"
        );
    }
}

#[test]
fn compact_relocations_round_trip_every_optional_field() {
    let metadata = vec![("owner".to_owned(), "team 7".to_owned())];
    let lease = Coordination {
        lease: Some(LeaseRecord {
            id: LeaseId(u128::MAX - 1),
            duration: LeaseDuration::Infinite,
            deadline: None,
            break_deadline: Some(5),
            broken: false,
            fence: 3,
            holder: Some("worker".to_owned()),
        }),
        lock: None,
    };
    let plain = |key: &'static [u8], last_modified: u64| ItemWrite {
        container_id: 1,
        key,
        value: Some(b"value"),
        last_modified,
        expires_at: None,
        content_type: None,
        metadata: &[],
        created: false,
        expired: false,
        etag_version: 0,
        coordination: None,
    };
    // (version, write): versions and times going down as well as up, a deleted item
    // holding a lock, every optional field, and the largest numbers a varint carries.
    let items: Vec<(u64, ItemWrite<'_>)> = vec![
        (
            900,
            ItemWrite {
                etag_version: 900,
                ..plain(b"a", 1_700_000_000_000_000)
            },
        ),
        (
            12,
            ItemWrite {
                etag_version: 12,
                ..plain(b"b", 1_600_000_000_000_000)
            },
        ),
        (
            u64::MAX,
            ItemWrite {
                container_id: u64::MAX,
                value: None,
                expires_at: Some(u64::MAX),
                etag_version: 4,
                content_type: Some("text/plain"),
                metadata: &metadata,
                coordination: Some(&lease),
                ..plain(b"", u64::MAX)
            },
        ),
        (
            0,
            ItemWrite {
                etag_version: 0,
                ..plain(b"d", 0)
            },
        ),
    ];
    let mut encoder = RelocatedItemsEncoder::new();
    let offsets: Vec<usize> = items
        .iter()
        .map(|(version, write)| encoder.push(*version, write))
        .collect();
    let payload = encoder.finish();
    let Ok(DecodedRecord::RelocatedItems(decoded)) = decode(&payload) else {
        panic!("the record decodes as relocated items");
    };
    assert_eq!(decoded.len(), items.len());
    for (((version, write), offset), (decoded_version, item)) in
        items.iter().zip(&offsets).zip(&decoded)
    {
        assert_eq!(decoded_version, version);
        assert_eq!(item.write.container_id, write.container_id);
        assert_eq!(item.write.key, write.key);
        assert_eq!(item.write.value, write.value);
        assert_eq!(item.write.last_modified, write.last_modified);
        assert_eq!(item.write.expires_at, write.expires_at);
        assert_eq!(item.write.etag_version, write.etag_version);
        assert_eq!(item.write.content_type, write.content_type);
        assert_eq!(item.metadata, write.metadata);
        assert_eq!(
            item.coordination,
            write.coordination.cloned().unwrap_or_default()
        );
        assert_eq!(item.value_offset, *offset);
    }
    // The common case is small: 24 B key, 150 B value, no options.
    let mut encoder = RelocatedItemsEncoder::new();
    let key = [b'k'; 24];
    let value = [b'v'; 150];
    for index in 0..100u64 {
        encoder.push(
            1_000_000 + index * 4,
            &ItemWrite {
                key: &key,
                value: Some(&value),
                etag_version: 1_000_000 + index * 4,
                ..plain(b"", 1_700_000_000_000_000 + index * 3)
            },
        );
    }
    let per_item = (encoder.finish().len() - 5 - 2 * 7) / 100;
    assert!(per_item <= 174 + 8, "{per_item} B per item");
}

#[test]
fn relocations_in_the_fixed_width_layout_of_format_1_still_decode() {
    let write = ItemWrite {
        container_id: 2,
        key: b"old",
        value: Some(b"kept"),
        last_modified: 77,
        expires_at: None,
        content_type: None,
        metadata: &[],
        created: false,
        expired: false,
        etag_version: 41,
        coordination: Some(&Coordination::default()),
    };
    let mut payload = vec![OP_RELOCATED_ITEMS];
    put_u32(&mut payload, 1);
    put_u64(&mut payload, 41);
    let value_offset = encode_item_write(&mut payload, &write);
    let Ok(DecodedRecord::RelocatedItems(decoded)) = decode(&payload) else {
        panic!("an op-6 record decodes");
    };
    assert_eq!(decoded[0].0, 41);
    assert_eq!(decoded[0].1.write.value, Some(&b"kept"[..]));
    assert_eq!(decoded[0].1.value_offset, value_offset);
}

#[test]
fn bad_varints_and_flags_in_relocations_are_refused() {
    let header = |count: u32| {
        let mut payload = vec![OP_RELOCATED_ITEMS_COMPACT];
        put_u32(&mut payload, count);
        payload
    };
    // A version varint of eleven bytes, and one whose tenth byte overflows 64 bits.
    let mut too_long = header(1);
    too_long.extend_from_slice(&[0x80; 10]);
    too_long.push(0);
    assert!(decode(&too_long).is_err());
    let mut overflowing = header(1);
    overflowing.extend_from_slice(&[0xff; 9]);
    overflowing.push(0x02);
    assert!(decode(&overflowing).is_err());
    // An unknown flag.
    let mut unknown_flag = header(1);
    unknown_flag.extend_from_slice(&[0, 0x40, 1, 0, 0, 0]);
    assert!(decode(&unknown_flag).is_err());
    // A key length past the end, and a count the payload cannot hold.
    let mut key_past_end = header(1);
    key_past_end.extend_from_slice(&[0, 1, 1, 100, b'k']);
    assert!(decode(&key_past_end).is_err());
    assert!(decode(&header(1000)).is_err());
}

#[test]
fn item_write_round_trip_and_size() {
    let metadata = vec![("a".to_owned(), "b".to_owned())];
    let write = ItemWrite {
        container_id: 7,
        key: b"key",
        value: Some(b"value"),
        last_modified: 123,
        expires_at: Some(456),
        content_type: Some("text/plain"),
        metadata: &metadata,
        created: true,
        expired: false,
        etag_version: 0,
        coordination: Some(&Coordination {
            lease: None,
            lock: Some(LockRecord {
                handle: LockHandle(7),
                deadline: 99,
                item_absent: false,
            }),
        }),
    };
    let mut out = vec![OP_ITEM_WRITE];
    let value_offset = encode_item_write(&mut out, &write);
    assert_eq!(out.len(), 1 + item_write_size(&write));
    assert_eq!(&out[value_offset..value_offset + 5], b"value");
    let DecodedRecord::Items(items) = decode(&out).unwrap() else {
        panic!("not an item")
    };
    assert_eq!(items[0].write.key, b"key");
    assert_eq!(items[0].write.value, Some(&b"value"[..]));
    assert_eq!(items[0].write.expires_at, Some(456));
    assert_eq!(items[0].metadata, metadata);
    assert_eq!(items[0].value_offset, value_offset);
    assert_eq!(
        items[0]
            .coordination
            .lock
            .as_ref()
            .map(|lock| lock.deadline),
        Some(99)
    );
    for cut in 0..out.len() {
        assert!(
            decode(&out[..cut]).is_err(),
            "a record cut at {cut} must not decode"
        );
    }
}
