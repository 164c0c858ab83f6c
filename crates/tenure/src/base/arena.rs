//! Memory for item slots: 2 MiB chunks, each thread bumping a pointer through a chunk of its
//! own, the chunks after a thread's first backed by huge pages where the kernel grants them.
//!
//! Why: slots are small (about 104 bytes), many (one per key), read at random and never freed
//! one by one while a store is open. From malloc each one costs 8 bytes of header and rounding
//! to 16, and at a million keys they spread over about 100 MiB of 4 KiB pages, so nearly every
//! slot read also misses the TLB (on this VM a dependent load at random over 128 MiB took
//! 177 ns with 4 KiB pages and 129 ns with 2 MiB ones).
//!
//! A thread that exits with room left in its chunk hands it to the next thread that needs one
//! (a bounded list of spare chunks). A chunk is freed when it is *retired* (its thread moved on
//! to a new chunk, or exited without handing it on) and its last allocation has been released,
//! whichever comes second: one word per chunk counts live allocations, its top bit says
//! retired. An allocation finds its chunk by rounding its address down to 2 MiB.
//!
//! ```text
//! chunk (2 MiB, 2 MiB-aligned) | live count + retired bit u64 | number u32 | pad to 64 | allocations … |
//! ```
//!
//! Every live chunk has a *number* (below [`MAXIMUM_CHUNKS`]), and every allocation a 32-bit
//! [`Handle`]: the chunk's number, then the allocation's offset in 8-byte units. The indexes
//! keep handles instead of 8-byte pointers (the point index's bucket and the ordered index's
//! leaf entries are half as wide, about 20 B less per key at a million keys); a handle becomes
//! a pointer with one load from a table of chunk addresses, which stays in cache.

use std::alloc::Layout;
use std::cell::Cell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

const CHUNK_BYTES: usize = 2 << 20;
/// The chunk's header line: its count word, alone in its cache line.
const CHUNK_HEADER_BYTES: usize = 64;
const RETIRED: usize = 1 << (usize::BITS - 1);
/// The largest allocation the arena serves (a slot with a 64 KiB index key and its header).
pub(crate) const MAXIMUM_ALLOCATION_BYTES: usize = 72 + (64 << 10);
const ALIGNMENT: usize = 8;
/// Bits of a handle that give an allocation's offset in its chunk, in `ALIGNMENT` units.
const OFFSET_BITS: u32 = (CHUNK_BYTES / ALIGNMENT).trailing_zeros();
/// How many chunks can be live at once: the numbers a handle's other bits can hold. That is
/// 32 GiB of slots and ordered-index nodes (about 300 million items with 24-byte keys);
/// a process that needs a chunk past it aborts, as on running out of memory (docs/design.md
/// §9).
pub(crate) const MAXIMUM_CHUNKS: usize = 1 << (u32::BITS - OFFSET_BITS);

/// An allocation's 32-bit name (see the module comment). Never 0: an allocation lies past
/// its chunk's header, so its offset is not 0.
pub(crate) type Handle = u32;

struct ChunkHeader {
    live_and_retired: AtomicUsize,
    /// The chunk's number: `CHUNK_ADDRESSES[number]` is the chunk while it lives.
    number: u32,
}

/// The address of each live chunk, by number (0 for a free number). Written when a chunk is
/// made, before any of its allocations exists; read to turn a handle into a pointer.
static CHUNK_ADDRESSES: [AtomicUsize; MAXIMUM_CHUNKS] =
    [const { AtomicUsize::new(0) }; MAXIMUM_CHUNKS];

/// The chunk numbers not in use: every number below `next_unused`, except those in `freed`,
/// belongs to a live chunk.
struct ChunkNumbers {
    next_unused: usize,
    freed: Vec<u32>,
}

static CHUNK_NUMBERS: parking_lot::Mutex<ChunkNumbers> = parking_lot::const_mutex(ChunkNumbers {
    next_unused: 0,
    freed: Vec::new(),
});

/// The chunk this thread bumps through: where its next allocation goes, where it ends, and
/// how many chunks the thread has had (its first stays in small pages, so a thread that makes
/// a few slots does not take a whole huge page).
struct ThreadChunk {
    chunk: Cell<Option<NonNull<ChunkHeader>>>,
    next: Cell<usize>,
    chunks_taken: Cell<usize>,
}

impl Drop for ThreadChunk {
    fn drop(&mut self) {
        let Some(chunk) = self.chunk.get() else {
            return;
        };
        // A thread that exits with room left hands its chunk to the next thread that needs
        // one: threads that each make a few slots (a thread per request) then share chunks
        // instead of leaving a mostly empty one each.
        let mut spare = SPARE_CHUNKS.lock();
        if CHUNK_BYTES - self.next.get() >= SPARE_AT_LEAST_BYTES
            && spare.len() < MAXIMUM_SPARE_CHUNKS
        {
            spare.push(SpareChunk {
                chunk,
                next: self.next.get(),
            });
        } else {
            drop(spare);
            // SAFETY: this thread's current chunk, retired once.
            unsafe { retire(chunk) };
        }
    }
}

/// A chunk whose thread exited before filling it, and where its next allocation goes.
struct SpareChunk {
    chunk: NonNull<ChunkHeader>,
    next: usize,
}

// SAFETY: a spare chunk belongs to no thread until one takes it from the list.
unsafe impl Send for SpareChunk {}

/// Chunks left by exited threads, for the next thread that needs one. Bounded: past it, a
/// chunk is retired as usual.
static SPARE_CHUNKS: parking_lot::Mutex<Vec<SpareChunk>> = parking_lot::const_mutex(Vec::new());
const MAXIMUM_SPARE_CHUNKS: usize = 64;
/// A chunk with less room than this left is retired rather than kept as a spare. At least
/// the largest allocation, so a chunk taken from the list always fits the one that asked.
const SPARE_AT_LEAST_BYTES: usize = 128 << 10;
const _: () = assert!(SPARE_AT_LEAST_BYTES >= MAXIMUM_ALLOCATION_BYTES);

thread_local! {
    static THREAD_CHUNK: ThreadChunk = const {
        ThreadChunk {
            chunk: Cell::new(None),
            next: Cell::new(0),
            chunks_taken: Cell::new(0),
        }
    };
}

/// Memory for `bytes` bytes (8-byte aligned), to be given back with [`release`].
pub(crate) fn allocate(bytes: usize) -> NonNull<u8> {
    assert!(
        bytes <= MAXIMUM_ALLOCATION_BYTES,
        "an allocation of {bytes} bytes is more than the arena serves"
    );
    let bytes = bytes.next_multiple_of(ALIGNMENT);
    let bumped = THREAD_CHUNK.try_with(|thread| {
        let fits = |start: usize| start + bytes <= CHUNK_BYTES;
        let chunk = match thread.chunk.get() {
            Some(chunk) if fits(thread.next.get()) => chunk,
            current => {
                if let Some(full) = current {
                    // SAFETY: this thread's chunk, which it now stops bumping through.
                    unsafe { retire(full) };
                }
                let (chunk, next) = match SPARE_CHUNKS.lock().pop() {
                    Some(spare) => (spare.chunk, spare.next),
                    None => (new_chunk(thread.chunks_taken.get() > 0), CHUNK_HEADER_BYTES),
                };
                thread.chunk.set(Some(chunk));
                thread.next.set(next);
                thread.chunks_taken.set(thread.chunks_taken.get() + 1);
                chunk
            }
        };
        let offset = thread.next.get();
        thread.next.set(offset + bytes);
        // SAFETY: the chunk is live (not retired, so not freed) and is ours to bump.
        let header = unsafe { chunk.as_ref() };
        header.live_and_retired.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `offset + bytes` lies within the chunk.
        unsafe { NonNull::new_unchecked(chunk.as_ptr().cast::<u8>().add(offset)) }
    });
    bumped.unwrap_or_else(|_| {
        // The thread is exiting and its chunk is gone: a chunk for this allocation alone,
        // retired at once (freed with the allocation).
        let chunk = new_chunk(false);
        // SAFETY: a new chunk, live until retired and empty.
        unsafe {
            chunk.as_ref().live_and_retired.store(1, Ordering::Relaxed);
            retire(chunk);
            NonNull::new_unchecked(chunk.as_ptr().cast::<u8>().add(CHUNK_HEADER_BYTES))
        }
    })
}

/// The handle of an allocation of [`allocate`] that has not been given back.
pub(crate) fn handle_of(pointer: NonNull<u8>) -> Handle {
    let address = pointer.as_ptr() as usize;
    let chunk = address & !(CHUNK_BYTES - 1);
    // SAFETY: the allocation keeps its chunk, and so its header, alive.
    let number = unsafe { &*(chunk as *const ChunkHeader) }.number;
    let offset = (address - chunk) / ALIGNMENT;
    debug_assert!(offset > 0 && offset < 1 << OFFSET_BITS);
    (number << OFFSET_BITS) | offset as u32
}

/// The allocation a handle names.
///
/// # Safety
/// `handle` came from [`handle_of`], and its allocation has not been given back.
pub(crate) unsafe fn pointer_of(handle: Handle) -> NonNull<u8> {
    // Relaxed: whoever holds the handle learned it after the chunk was registered, through
    // the synchronisation that published the allocation itself. (An optimistic reader of the
    // ordered index may decode a handle it read before validating its node; the writer
    // stored that handle after a release fence that follows the registration, and the
    // address loaded here depends on the handle, so the registration is what it sees.)
    let chunk = CHUNK_ADDRESSES[(handle >> OFFSET_BITS) as usize].load(Ordering::Relaxed);
    debug_assert_ne!(chunk, 0, "handle {handle:#x} names no live chunk");
    let offset = (handle & ((1 << OFFSET_BITS) - 1)) as usize * ALIGNMENT;
    // SAFETY: the caller's promise: a live chunk, so a nonzero address, and an offset in it.
    unsafe { NonNull::new_unchecked((chunk + offset) as *mut u8) }
}

/// Gives back an allocation of [`allocate`]; its chunk goes once retired and empty.
///
/// # Safety
/// `pointer` came from `allocate` and is given back once; nothing uses it afterwards.
pub(crate) unsafe fn release(pointer: NonNull<u8>) {
    let chunk = (pointer.as_ptr() as usize & !(CHUNK_BYTES - 1)) as *mut ChunkHeader;
    // SAFETY: the allocation keeps its chunk alive until this decrement.
    let previous = unsafe { &*chunk }
        .live_and_retired
        .fetch_sub(1, Ordering::AcqRel);
    assert!(previous & !RETIRED > 0, "a release without an allocation");
    if previous == RETIRED | 1 {
        // SAFETY: retired and now empty: no one else can reach it.
        unsafe { free_chunk(NonNull::new_unchecked(chunk)) };
    }
}

/// # Safety
/// `chunk` is a live chunk that its thread stops allocating from; called once per chunk.
unsafe fn retire(chunk: NonNull<ChunkHeader>) {
    // SAFETY: live until both retired and empty, and it is not retired yet.
    let previous = unsafe { chunk.as_ref() }
        .live_and_retired
        .fetch_or(RETIRED, Ordering::AcqRel);
    if previous == 0 {
        // SAFETY: empty and now retired: no one else can reach it.
        unsafe { free_chunk(chunk) };
    }
}

fn chunk_layout() -> Layout {
    Layout::from_size_align(CHUNK_BYTES, CHUNK_BYTES).expect("2 MiB is a power of two")
}

fn new_chunk(huge: bool) -> NonNull<ChunkHeader> {
    // From the global allocator (glibc maps it, aligned), not a mapping of our own, so that
    // leak checkers scan it for the pointers it holds, as any heap block.
    // SAFETY: a non-zero size.
    let Some(chunk) = NonNull::new(unsafe { std::alloc::alloc(chunk_layout()) }) else {
        std::alloc::handle_alloc_error(chunk_layout());
    };
    #[cfg(target_os = "linux")]
    if huge {
        // Only advice: without huge pages the chunk works the same in small ones.
        // SAFETY: the chunk's own range, page-aligned.
        unsafe { libc::madvise(chunk.as_ptr().cast(), CHUNK_BYTES, libc::MADV_HUGEPAGE) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = huge;
    let chunk = chunk.cast::<ChunkHeader>();
    let number = register_chunk(chunk.as_ptr() as usize);
    // SAFETY: fresh, writable, aligned memory.
    unsafe {
        chunk.as_ptr().write(ChunkHeader {
            live_and_retired: AtomicUsize::new(0),
            number,
        });
    }
    chunk
}

/// Gives the chunk at `address` a number (a freed one first, so numbers stay dense) and
/// registers its address under it. Under the numbers' lock, as `unregister_chunk`: a number
/// is either free or names its chunk's address, never between the two.
fn register_chunk(address: usize) -> u32 {
    let mut numbers = CHUNK_NUMBERS.lock();
    let number = match numbers.freed.pop() {
        Some(number) => number,
        None => take_unused_number(&mut numbers),
    };
    CHUNK_ADDRESSES[number as usize].store(address, Ordering::Relaxed);
    number
}

fn unregister_chunk(number: u32) {
    let mut numbers = CHUNK_NUMBERS.lock();
    CHUNK_ADDRESSES[number as usize].store(0, Ordering::Relaxed);
    numbers.freed.push(number);
}

/// The lowest number no chunk has had yet.
fn take_unused_number(numbers: &mut ChunkNumbers) -> u32 {
    if numbers.next_unused == MAXIMUM_CHUNKS {
        // Every handle's number is taken: the indexes hold 32 GiB. Like an allocation that
        // fails, this ends the process (it is not a panic a caller could catch halfway
        // through a write).
        eprintln!(
            "tenure: the slot arena has {MAXIMUM_CHUNKS} chunks of {CHUNK_BYTES} bytes live, \
             the most its 32-bit handles name"
        );
        std::process::abort();
    }
    numbers.next_unused += 1;
    (numbers.next_unused - 1) as u32
}

/// # Safety
/// `chunk` is retired and empty, and freed once.
unsafe fn free_chunk(chunk: NonNull<ChunkHeader>) {
    // SAFETY: the caller's promise: still allocated until the `dealloc` below.
    let number = unsafe { chunk.as_ref() }.number;
    unregister_chunk(number);
    // SAFETY: the caller's promise; allocated by `new_chunk` with this layout.
    unsafe { std::alloc::dealloc(chunk.as_ptr().cast(), chunk_layout()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Threads that each make one allocation and exit share chunks instead of leaving one
    /// each. (Other tests' threads may take a spare chunk first now and then: the check asks
    /// only that some thread took over its predecessor's.)
    #[test]
    fn an_exiting_thread_hands_its_chunk_to_the_next() {
        let chunk_of = |address: usize| address & !(CHUNK_BYTES - 1);
        let addresses: Vec<usize> = (0..16)
            .map(|_| {
                std::thread::spawn(|| allocate(64).as_ptr() as usize)
                    .join()
                    .unwrap()
            })
            .collect();
        let chunks: std::collections::BTreeSet<usize> =
            addresses.iter().map(|&address| chunk_of(address)).collect();
        assert!(
            chunks.len() < addresses.len(),
            "16 threads, {} chunks",
            chunks.len()
        );
        for address in addresses {
            // SAFETY: allocated by the threads above, given back once.
            unsafe { release(NonNull::new(address as *mut u8).unwrap()) };
        }
    }

    /// The chunk protocol itself, on chunks no thread bumps through: freed when retired and
    /// empty, whichever comes last, whoever gets there. (A freed chunk used again would show
    /// under the AddressSanitizer run.)
    #[test]
    fn a_chunk_goes_once_retired_and_empty_whichever_comes_last() {
        let allocation = |chunk: NonNull<ChunkHeader>, index: usize| {
            // SAFETY: within the chunk, past its header.
            let pointer = unsafe {
                chunk
                    .as_ptr()
                    .cast::<u8>()
                    .add(CHUNK_HEADER_BYTES + 64 * index)
            };
            // SAFETY: a live chunk.
            unsafe { chunk.as_ref() }
                .live_and_retired
                .fetch_add(1, Ordering::Relaxed);
            NonNull::new(pointer).unwrap()
        };
        let live = |chunk: NonNull<ChunkHeader>| {
            // SAFETY: a live chunk.
            unsafe { chunk.as_ref() }
                .live_and_retired
                .load(Ordering::Acquire)
        };
        // Retired first, emptied last, by another thread.
        let chunk = new_chunk(false);
        let (first, second) = (allocation(chunk, 0), allocation(chunk, 1));
        // SAFETY: allocated above, given back once.
        unsafe { release(first) };
        assert_eq!(live(chunk), 1);
        // SAFETY: no thread bumps through it; retired once.
        unsafe { retire(chunk) };
        assert_eq!(live(chunk), RETIRED | 1);
        let second = second.as_ptr() as usize;
        std::thread::spawn(move || {
            // SAFETY: allocated above, given back once: this frees the chunk.
            unsafe { release(NonNull::new(second as *mut u8).unwrap()) };
        })
        .join()
        .unwrap();
        // Emptied first, retired last.
        let chunk = new_chunk(true);
        let only = allocation(chunk, 0);
        // SAFETY: as above.
        unsafe { release(only) };
        assert_eq!(live(chunk), 0, "empty but not retired: kept");
        // SAFETY: as above: this frees the chunk.
        unsafe { retire(chunk) };
    }

    /// A handle names its allocation, in this thread's chunk and in others', and a freed
    /// chunk's number goes to the next chunk made.
    #[test]
    fn a_handle_names_its_allocation_until_the_chunk_goes() {
        let pointers: Vec<NonNull<u8>> = std::thread::spawn(|| {
            (1..=20)
                .map(|size| allocate(size * 8).as_ptr() as usize)
                .collect::<Vec<usize>>()
        })
        .join()
        .unwrap()
        .into_iter()
        .map(|address| NonNull::new(address as *mut u8).unwrap())
        .collect();
        let handles: Vec<Handle> = pointers.iter().map(|&pointer| handle_of(pointer)).collect();
        assert!(handles.iter().all(|&handle| handle != 0));
        for (&pointer, &handle) in pointers.iter().zip(&handles) {
            // SAFETY: allocated above, not given back yet.
            assert_eq!(unsafe { pointer_of(handle) }, pointer);
        }
        for pointer in pointers {
            // SAFETY: allocated above, given back once.
            unsafe { release(pointer) };
        }
        // A chunk registers its address under its number, and gives the number back when
        // it is freed. (Other tests make chunks meanwhile and may take the number at once.)
        let chunk = new_chunk(false);
        // SAFETY: a live chunk.
        let number = unsafe { chunk.as_ref() }.number;
        assert_eq!(
            CHUNK_ADDRESSES[number as usize].load(Ordering::Relaxed),
            chunk.as_ptr() as usize
        );
        // SAFETY: no thread bumps through it; retired once, empty: freed.
        unsafe { retire(chunk) };
        let numbers = CHUNK_NUMBERS.lock();
        let taken_again = CHUNK_ADDRESSES[number as usize].load(Ordering::Relaxed) != 0;
        assert!(
            numbers.freed.contains(&number) || taken_again,
            "a freed chunk's number is free again"
        );
    }

    #[test]
    fn a_thread_bumps_through_one_chunk() {
        std::thread::spawn(|| {
            let pointers: Vec<NonNull<u8>> = (1..=100).map(allocate).collect();
            let chunk_of = |pointer: &NonNull<u8>| pointer.as_ptr() as usize & !(CHUNK_BYTES - 1);
            assert!(pointers
                .iter()
                .all(|pointer| pointer.as_ptr() as usize % ALIGNMENT == 0));
            assert!(pointers
                .iter()
                .all(|pointer| chunk_of(pointer) == chunk_of(&pointers[0])));
            for pair in pointers.windows(2) {
                assert!(
                    pair[1].as_ptr() > pair[0].as_ptr(),
                    "bumped upwards, no overlap"
                );
            }
            for pointer in pointers {
                // SAFETY: allocated above, given back once.
                unsafe { release(pointer) };
            }
        })
        .join()
        .unwrap();
    }
}
