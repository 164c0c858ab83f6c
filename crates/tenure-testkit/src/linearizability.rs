//! A linearizability checker for concurrent histories of one container's items (docs/spec.md §3 step 6,
//! §9 "strong"): get, put, conditional put (`if_match`) and delete.
//!
//! A history is a list of [`Operation`]s, each with the call, the response, and its invoke and
//! return instants taken from one shared monotonic counter (so `a.ret < b.invoke` means `a`
//! returned before `b` was called). Keys are independent, so [`check`] partitions the history by
//! key and checks every key's sub-history on its own (linearizability is compositional).
//!
//! The sequential specification of one key is a register with ETag/version semantics:
//!
//! - state: the current item, `None` or `(value, version)`, plus the highest version ever
//!   written to the key (versions strictly increase over the whole store, so the writes of one
//!   key take increasing versions in linearization order — a deleted key remembers its floor);
//! - `get` → the item, or `NotFound`;
//! - `put` → `Written(v)` with `v` above the floor; the item becomes `(value, v)`;
//! - `put if_match=E` → `Written(v)` iff the item exists with version `E` (and `v` is above the
//!   floor), otherwise `ConditionNotMet` and nothing changes;
//! - `delete` → `Deleted` iff the item exists (the item becomes `None`), otherwise `NotFound`.
//!
//! Leases (docs/spec.md §4, infinite leases with fixed ids, no clock moves) add a holder to the state:
//! `acquire(id)` → granted iff the item exists and is free or already held by `id`
//! (`LeaseAlreadyPresent` otherwise); `release(id)` → released iff held by `id`
//! (`LeaseIdMismatchWithLeaseOperation` otherwise); a write with no lease id on a leased item
//! is refused with `LeaseIdMissing`, with another id `LeaseIdMismatchWithBlobOperation`, with
//! an id on an unleased item `LeaseNotPresentWithBlobOperation` — checked after existence and
//! before conditions (docs/spec.md §3 order of checks); a delete ends the lease.
//!
//! A response the specification does not allow at an operation's linearization point (including
//! any other error) makes that point illegal. The search is Wing & Gong's, as refined by Lowe
//! ("just-in-time" linearization) with the memoisation of Horn & Kroening's P-compositionality
//! paper: depth-first, at each step linearizing one pending operation that may come next in real
//! time and whose response the specification accepts, remembering every
//! (set of linearized operations, state) pair already explored so no configuration is searched
//! twice. Every operation must have returned (a history of completed operations).

use std::collections::{BTreeMap, HashSet};
use std::fmt;

/// The store-wide version an ETag carries (tenure's `Version`).
pub type Version = u64;

/// What an operation asked for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Call {
    Get,
    /// An unconditional put (last writer wins).
    Put {
        value: Vec<u8>,
    },
    /// A put with `if_match` = the ETag of `version`.
    PutIfMatch {
        value: Vec<u8>,
        if_match: Version,
    },
    Delete,
    /// A put naming lease `lease` (an index: the store's id is derived from it).
    PutWithLease {
        value: Vec<u8>,
        lease: u8,
    },
    /// A delete naming lease `lease`.
    DeleteWithLease {
        lease: u8,
    },
    /// Acquire an infinite lease proposing id `lease`.
    AcquireLease {
        lease: u8,
    },
    ReleaseLease {
        lease: u8,
    },
}

/// What an operation answered.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Response {
    /// A get found the item.
    Found { value: Vec<u8>, version: Version },
    /// A put succeeded; `version` is its new ETag's version.
    Written { version: Version },
    /// A delete succeeded.
    Deleted,
    /// `NotFound` (a get or delete of a missing item).
    NotFound,
    /// `ConditionNotMet` (a conditional put whose ETag did not match).
    ConditionNotMet,
    /// A lease was granted (or kept, acquired again with its id).
    LeaseGranted,
    /// A lease was released.
    LeaseReleased,
    /// A refusal the specification may allow, by code name (a lease or lock refusal).
    Refused(String),
    /// Any other error, by code name; the specification never allows it.
    Failed(String),
}

/// One completed operation of a history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    pub key: Vec<u8>,
    /// Who issued it (for reports only).
    pub thread: usize,
    /// The shared counter's value just before the call.
    pub invoke: u64,
    /// The shared counter's value just after the return; must exceed `invoke`.
    pub ret: u64,
    pub call: Call,
    pub response: Response,
}

/// A key whose sub-history has no linearization.
#[derive(Debug, Clone)]
pub struct Violation {
    pub key: Vec<u8>,
    /// The key's operations, ordered by invoke.
    pub operations: Vec<Operation>,
    /// The longest sequence of operations (indices into `operations`) the search could
    /// linearize before getting stuck: the operation that fails is among those that could
    /// come next.
    pub longest_prefix: Vec<usize>,
}

impl fmt::Display for Violation {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            formatter,
            "key {:?}: no linearization of {} operations; the longest linearizable prefix has {}",
            String::from_utf8_lossy(&self.key),
            self.operations.len(),
            self.longest_prefix.len()
        )?;
        writeln!(formatter, "history (ordered by invoke):")?;
        for (index, operation) in self.operations.iter().enumerate() {
            writeln!(formatter, "  #{index:<3} {}", describe(operation))?;
        }
        let order: Vec<String> = self
            .longest_prefix
            .iter()
            .map(|index| format!("#{index}"))
            .collect();
        write!(formatter, "longest prefix: {}", order.join(" "))
    }
}

impl std::error::Error for Violation {}

/// One line per operation: `[invoke, ret] thread t: call -> response`.
pub fn describe(operation: &Operation) -> String {
    let value = |bytes: &[u8]| format!("{:?}", String::from_utf8_lossy(bytes));
    let call = match &operation.call {
        Call::Get => "get".to_owned(),
        Call::Put { value: bytes } => format!("put {}", value(bytes)),
        Call::PutIfMatch {
            value: bytes,
            if_match,
        } => format!("put {} if_match v{if_match}", value(bytes)),
        Call::Delete => "delete".to_owned(),
        Call::PutWithLease {
            value: bytes,
            lease,
        } => format!("put {} with lease {lease}", value(bytes)),
        Call::DeleteWithLease { lease } => format!("delete with lease {lease}"),
        Call::AcquireLease { lease } => format!("acquire lease {lease}"),
        Call::ReleaseLease { lease } => format!("release lease {lease}"),
    };
    let response = match &operation.response {
        Response::Found {
            value: bytes,
            version,
        } => format!("found {} v{version}", value(bytes)),
        Response::Written { version } => format!("ok v{version}"),
        Response::Deleted => "ok".to_owned(),
        Response::NotFound => "NotFound".to_owned(),
        Response::ConditionNotMet => "ConditionNotMet".to_owned(),
        Response::LeaseGranted => "granted".to_owned(),
        Response::LeaseReleased => "released".to_owned(),
        Response::Refused(code) => format!("refused {code}"),
        Response::Failed(code) => format!("error {code}"),
    };
    format!(
        "[{:>5}, {:>5}] thread {}: {call} -> {response}",
        operation.invoke, operation.ret, operation.thread
    )
}

/// Checks every key's sub-history; the first key without a linearization is reported. Keys
/// start absent (a fresh container).
pub fn check(history: &[Operation]) -> Result<(), Violation> {
    let mut by_key: BTreeMap<&[u8], Vec<Operation>> = BTreeMap::new();
    for operation in history {
        by_key
            .entry(&operation.key)
            .or_default()
            .push(operation.clone());
    }
    for (key, operations) in by_key {
        check_key(key, operations)?;
    }
    Ok(())
}

/// Checks the operations of one key (all of them must carry `key`).
pub fn check_key(key: &[u8], mut operations: Vec<Operation>) -> Result<(), Violation> {
    operations.sort_by_key(|operation| (operation.invoke, operation.ret));
    for operation in &operations {
        assert!(
            operation.invoke < operation.ret,
            "an operation returns after it is invoked: {}",
            describe(operation)
        );
        assert_eq!(operation.key, key, "an operation of another key");
    }
    match Search::new(&operations).run() {
        Ok(_) => Ok(()),
        Err(longest_prefix) => Err(Violation {
            key: key.to_vec(),
            operations,
            longest_prefix,
        }),
    }
}

/// The specification's state of one key. The current item is named by the index of the put
/// that wrote it (its value and version live in that operation), which keeps the state small
/// and cheap to hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct State {
    /// The put whose value the key holds, or `None` when absent.
    current: Option<u32>,
    /// The highest version written to the key so far (0 initially).
    floor: Version,
    /// Who holds the key's lease, if anyone.
    lease: Option<u8>,
}

/// A fixed-size set of operation indices.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct BitSet(Box<[u64]>);

impl BitSet {
    fn new(size: usize) -> BitSet {
        BitSet(vec![0; size.div_ceil(64)].into_boxed_slice())
    }

    fn contains(&self, index: usize) -> bool {
        self.0[index / 64] & (1 << (index % 64)) != 0
    }

    fn insert(&mut self, index: usize) {
        self.0[index / 64] |= 1 << (index % 64);
    }

    fn remove(&mut self, index: usize) {
        self.0[index / 64] &= !(1 << (index % 64));
    }
}

struct Search<'a> {
    operations: &'a [Operation],
}

/// One level of the depth-first search.
struct Frame {
    /// The operation linearized to reach this level (`None` at the root).
    via: Option<usize>,
    state: State,
    /// The next operation (index in invoke order) to try from this level.
    cursor: usize,
    /// The earliest return among the operations not yet linearized: only operations invoked
    /// before it may come next.
    horizon: u64,
}

impl<'a> Search<'a> {
    fn new(operations: &'a [Operation]) -> Search<'a> {
        assert!(
            operations.len() < u32::MAX as usize,
            "too many operations for one key"
        );
        Search { operations }
    }

    /// The sequential specification: the state after `index` is linearized in `state`, or
    /// `None` when its response is illegal there.
    fn step(&self, state: State, index: usize) -> Option<State> {
        let operation = &self.operations[index];
        let current = state.current.map(|writer| {
            let writer = &self.operations[writer as usize];
            let value = match &writer.call {
                Call::Put { value }
                | Call::PutIfMatch { value, .. }
                | Call::PutWithLease { value, .. } => value,
                _ => unreachable!("only puts become the current item"),
            };
            let Response::Written { version } = writer.response else {
                unreachable!("only successful puts become the current item")
            };
            (value, version)
        });
        let written = |version: Version| {
            (version > state.floor).then_some(State {
                current: Some(index as u32),
                floor: version,
                lease: state.lease,
            })
        };
        // docs/spec.md §4: the lease check of a write (after existence, before conditions).
        let lease_check = |given: Option<u8>| -> Result<(), &'static str> {
            match (state.lease, given) {
                (None, None) => Ok(()),
                (None, Some(_)) => Err("LeaseNotPresentWithBlobOperation"),
                (Some(holder), Some(given)) if holder == given => Ok(()),
                (Some(_), Some(_)) => Err("LeaseIdMismatchWithBlobOperation"),
                (Some(_), None) => Err("LeaseIdMissing"),
            }
        };
        let refused_as = |given: Option<u8>, code: &str| {
            (lease_check(given).err() == Some(code)).then_some(state)
        };
        let deleted = State {
            current: None,
            floor: state.floor,
            lease: None,
        };
        match (&operation.call, &operation.response) {
            (Call::Get, Response::Found { value, version }) => {
                (current == Some((value, *version))).then_some(state)
            }
            (Call::Get, Response::NotFound) => current.is_none().then_some(state),
            (Call::Put { .. }, Response::Written { version }) => {
                lease_check(None).ok().and_then(|()| written(*version))
            }
            (Call::PutWithLease { lease, .. }, Response::Written { version }) => {
                lease_check(Some(*lease))
                    .ok()
                    .and_then(|()| written(*version))
            }
            (Call::Put { .. } | Call::PutIfMatch { .. }, Response::Refused(code)) => {
                refused_as(None, code)
            }
            (Call::PutWithLease { lease, .. }, Response::Refused(code)) => {
                refused_as(Some(*lease), code)
            }
            (Call::PutIfMatch { if_match, .. }, Response::Written { version }) => match current {
                Some((_, current_version))
                    if current_version == *if_match && lease_check(None).is_ok() =>
                {
                    written(*version)
                }
                _ => None,
            },
            (Call::PutIfMatch { if_match, .. }, Response::ConditionNotMet) => match current {
                _ if lease_check(None).is_err() => None,
                Some((_, current_version)) if current_version == *if_match => None,
                _ => Some(state),
            },
            (Call::Delete, Response::Deleted) => {
                (current.is_some() && lease_check(None).is_ok()).then_some(deleted)
            }
            (Call::DeleteWithLease { lease }, Response::Deleted) => {
                (current.is_some() && lease_check(Some(*lease)).is_ok()).then_some(deleted)
            }
            (Call::Delete | Call::DeleteWithLease { .. }, Response::NotFound) => {
                current.is_none().then_some(state)
            }
            (Call::Delete, Response::Refused(code)) => current.and(refused_as(None, code)),
            (Call::DeleteWithLease { lease }, Response::Refused(code)) => {
                current.and(refused_as(Some(*lease), code))
            }
            (Call::AcquireLease { lease }, Response::LeaseGranted) => match state.lease {
                _ if current.is_none() => None,
                None => Some(State {
                    lease: Some(*lease),
                    ..state
                }),
                Some(holder) => (holder == *lease).then_some(state),
            },
            (Call::AcquireLease { lease }, Response::Refused(code)) => (current.is_some()
                && code == "LeaseAlreadyPresent"
                && state.lease.is_some_and(|holder| holder != *lease))
            .then_some(state),
            (Call::ReleaseLease { lease }, Response::LeaseReleased) => {
                (current.is_some() && state.lease == Some(*lease)).then_some(State {
                    lease: None,
                    ..state
                })
            }
            (Call::ReleaseLease { lease }, Response::Refused(code)) => (current.is_some()
                && code == "LeaseIdMismatchWithLeaseOperation"
                && state.lease != Some(*lease))
            .then_some(state),
            (Call::AcquireLease { .. } | Call::ReleaseLease { .. }, Response::NotFound) => {
                current.is_none().then_some(state)
            }
            _ => None,
        }
    }

    fn horizon(&self, linearized: &BitSet) -> u64 {
        self.operations
            .iter()
            .enumerate()
            .filter(|(index, _)| !linearized.contains(*index))
            .map(|(_, operation)| operation.ret)
            .min()
            .unwrap_or(u64::MAX)
    }

    /// A linearization (operation indices in order), or the longest prefix found.
    fn run(&self) -> Result<Vec<usize>, Vec<usize>> {
        let count = self.operations.len();
        let mut linearized = BitSet::new(count);
        let mut done = 0;
        let mut seen: HashSet<(BitSet, State)> = HashSet::new();
        let mut stack = vec![Frame {
            via: None,
            state: State {
                current: None,
                floor: 0,
                lease: None,
            },
            cursor: 0,
            horizon: self.horizon(&linearized),
        }];
        let mut longest: Vec<usize> = Vec::new();
        loop {
            if done == count {
                return Ok(stack.iter().filter_map(|frame| frame.via).collect());
            }
            let top = stack.last_mut().expect("the root is never popped here");
            let mut next = None;
            while top.cursor < count && self.operations[top.cursor].invoke < top.horizon {
                let index = top.cursor;
                top.cursor += 1;
                if linearized.contains(index) {
                    continue;
                }
                let Some(state) = self.step(top.state, index) else {
                    continue;
                };
                linearized.insert(index);
                if seen.insert((linearized.clone(), state)) {
                    next = Some((index, state));
                    break;
                }
                linearized.remove(index);
            }
            match next {
                Some((index, state)) => {
                    done += 1;
                    let horizon = self.horizon(&linearized);
                    stack.push(Frame {
                        via: Some(index),
                        state,
                        cursor: 0,
                        horizon,
                    });
                    if done > longest.len() {
                        longest = stack.iter().filter_map(|frame| frame.via).collect();
                    }
                }
                None => {
                    let frame = stack.pop().expect("a frame to leave");
                    match frame.via {
                        Some(index) => {
                            linearized.remove(index);
                            done -= 1;
                        }
                        None => return Err(longest),
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
