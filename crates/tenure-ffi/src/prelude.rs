//! What every export module uses: the engine's types, the boundary helpers, and the shared
//! types and helpers of the other export modules.

pub(crate) use std::ffi::c_char;
pub(crate) use std::sync::{Arc, Mutex};
pub(crate) use std::time::Duration;

pub(crate) use tenure::{
    ChangeKind, ChangesOptions, Conditions, ContainerOptions, ContainerWriteOptions, Durability,
    ETagArg, ETagList, Item, LeaseDuration, LeaseId, LeaseRequest, LeaseState, LockHandle,
    ReadOptions, StoreOptions, Ttl, WriteOptions,
};

pub(crate) use crate::boundary::*;
pub(crate) use crate::conditions::*;
pub(crate) use crate::handles::{
    self, tenure_batch, tenure_cursor, tenure_item, tenure_page, tenure_snapshot, tenure_store,
    BatchObject, CursorObject, Kind, Object, SnapshotObject,
};
pub(crate) use crate::items::TENURE_WRITE_PUT;
pub(crate) use crate::metadata::*;
pub(crate) use crate::options::TENURE_LIST_DEFAULT_PAGE_SIZE;
pub(crate) use crate::reads::*;
pub(crate) use crate::snapshot::with_snapshot;
pub(crate) use crate::status::*;
pub(crate) use crate::store::*;
pub(crate) use crate::util::*;
