//! What this handle last saw of containers and items, so a write of a value can be decided
//! without reading first: one round trip instead of two.
//!
//! A write decided from what is remembered commits only if every key it compares is still at
//! the remembered `mod_revision` — then what was remembered *is* the stored state, and the
//! decision is the one a fresh read would have given. If a compare fails, the transaction's
//! other branch reads the container and the item in the same round trip, and the write is
//! decided again on that. A refusal, or a decision to write nothing, is never reported from a
//! remembered state: the write reads and decides again first. So remembering changes how
//! many round trips a write takes, never what it decides.
//!
//! Values are not kept (only writes of a whole value, which never read the old one, decide
//! from here), and the memory is bounded: at most [`MAX_ITEMS`] items and
//! [`MAX_CONTAINERS`] containers, forgotten all at once when full.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::codec::{ContainerRecord, ItemRecord};
use crate::store::Stored;

const MAX_ITEMS: usize = 4096;
const MAX_CONTAINERS: usize = 256;
/// Records with more properties than this (content type and metadata) are not remembered.
const MAX_REMEMBERED_PROPERTY_BYTES: usize = 1024;

#[derive(Default)]
pub(crate) struct Recent {
    containers: Mutex<HashMap<String, Stored<ContainerRecord>>>,
    /// By the item's etcd key; `None`: the key held nothing.
    items: Mutex<HashMap<Vec<u8>, Option<Stored<ItemRecord>>>>,
}

fn property_bytes(record: &ItemRecord) -> usize {
    record.content_type.as_ref().map_or(0, String::len)
        + record
            .metadata
            .iter()
            .map(|(name, value)| name.len() + value.len())
            .sum::<usize>()
}

impl Recent {
    pub(crate) fn container(&self, name: &str) -> Option<Stored<ContainerRecord>> {
        let containers = self.containers.lock().unwrap_or_else(|e| e.into_inner());
        containers.get(name).cloned()
    }

    /// What was last seen of the item: `Some(None)` for a key seen empty; `None` when
    /// nothing is remembered (a guess of "empty" is then as good as any).
    pub(crate) fn item(&self, item_key: &[u8]) -> Option<Option<Stored<ItemRecord>>> {
        let items = self.items.lock().unwrap_or_else(|e| e.into_inner());
        items.get(item_key).cloned()
    }

    pub(crate) fn remember_container(&self, name: &str, stored: Option<&Stored<ContainerRecord>>) {
        let mut containers = self.containers.lock().unwrap_or_else(|e| e.into_inner());
        match stored {
            Some(stored) => {
                if containers.len() >= MAX_CONTAINERS && !containers.contains_key(name) {
                    containers.clear();
                }
                containers.insert(name.to_owned(), stored.clone());
            }
            None => {
                containers.remove(name);
            }
        }
    }

    pub(crate) fn remember_item(&self, item_key: &[u8], stored: Option<&Stored<ItemRecord>>) {
        let mut items = self.items.lock().unwrap_or_else(|e| e.into_inner());
        let remembered = match stored {
            Some(stored) if property_bytes(&stored.record) > MAX_REMEMBERED_PROPERTY_BYTES => {
                items.remove(item_key);
                return;
            }
            Some(stored) => Some(Stored {
                record: ItemRecord {
                    value: Vec::new(),
                    ..stored.record.clone()
                },
                mod_revision: stored.mod_revision,
                create_revision: stored.create_revision,
                timers: stored.timers,
            }),
            None => None,
        };
        if items.len() >= MAX_ITEMS && !items.contains_key(item_key) {
            items.clear();
        }
        items.insert(item_key.to_vec(), remembered);
    }
}
