//! Memory for item slots: 2 MiB chunks, each thread bumping a pointer through a chunk of its
//! own, the chunks after a thread's first backed by huge pages where the kernel grants them.
//!
//! Why: slots are small (about 104 bytes), many (one per key), read at random and never freed
//! one by one while a store is open. From malloc each one costs 8 bytes of header and rounding
//! to 16, and at a million keys they spread over about 100 MiB of 4 KiB pages, so nearly every
//! slot read also misses the TLB (on this VM a dependent load at random over 128 MiB took
//! 177 ns with 4 KiB pages and 129 ns with 2 MiB ones).
//!
//! A chunk is freed when it is *retired* (its thread moved on to a new chunk, or exited) and
//! its last allocation has been released, whichever comes second: one word per chunk counts
//! live allocations, its top bit says retired. An allocation finds its chunk by rounding its
//! address down to 2 MiB.
//!
//! ```text
//! chunk (2 MiB, 2 MiB-aligned) | live count + retired bit u64 | pad to 64 | allocations … |
//! ```

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

struct ChunkHeader {
    live_and_retired: AtomicUsize,
}

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
        if let Some(chunk) = self.chunk.get() {
            // SAFETY: this thread's current chunk, retired once.
            unsafe { retire(chunk) };
        }
    }
}

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
                let huge = thread.chunks_taken.get() > 0;
                let chunk = new_chunk(huge);
                thread.chunk.set(Some(chunk));
                thread.next.set(CHUNK_HEADER_BYTES);
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
    // SAFETY: fresh, writable, aligned memory.
    unsafe {
        chunk.as_ptr().write(ChunkHeader {
            live_and_retired: AtomicUsize::new(0),
        });
    }
    chunk
}

/// # Safety
/// `chunk` is retired and empty, and freed once.
unsafe fn free_chunk(chunk: NonNull<ChunkHeader>) {
    // SAFETY: the caller's promise; allocated by `new_chunk` with this layout.
    unsafe { std::alloc::dealloc(chunk.as_ptr().cast(), chunk_layout()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(pointer: NonNull<u8>) -> usize {
        let chunk = (pointer.as_ptr() as usize & !(CHUNK_BYTES - 1)) as *const ChunkHeader;
        // SAFETY: the allocation keeps its chunk alive.
        unsafe { &*chunk }.live_and_retired.load(Ordering::Acquire)
    }

    /// Runs on a thread of its own, so its chunks are its own.
    #[test]
    fn chunks_fill_then_go_once_retired_and_empty() {
        std::thread::spawn(|| {
            let first = allocate(100);
            assert_eq!(first.as_ptr() as usize % ALIGNMENT, 0);
            assert_eq!(live(first), 1);
            // SAFETY: writable memory of at least 100 bytes.
            unsafe { first.as_ptr().write_bytes(0xA5, 100) };
            let mut in_first_chunk = vec![first];
            let chunk_of = |pointer: NonNull<u8>| pointer.as_ptr() as usize & !(CHUNK_BYTES - 1);
            // Fill the first chunk and step into a second one.
            let second_chunk = loop {
                let pointer = allocate(MAXIMUM_ALLOCATION_BYTES);
                if chunk_of(pointer) != chunk_of(first) {
                    break pointer;
                }
                in_first_chunk.push(pointer);
            };
            assert_eq!(live(first), RETIRED | in_first_chunk.len());
            for pointer in in_first_chunk.drain(1..) {
                // SAFETY: allocated above, given back once.
                unsafe { release(pointer) };
            }
            assert_eq!(live(first), RETIRED | 1);
            // SAFETY: as above; the first chunk is freed now (ASan would see a later use).
            unsafe { release(first) };
            assert_eq!(live(second_chunk), 1);
            // SAFETY: as above; the chunk stays, being this thread's current one.
            unsafe { release(second_chunk) };
            assert_eq!(live(second_chunk), 0);
            let third = allocate(8);
            assert_eq!(
                chunk_of(third),
                chunk_of(second_chunk),
                "an empty current chunk stays"
            );
            // Given back by another thread after this one exits (and retires the chunk).
            third.as_ptr() as usize
        })
        .join()
        .map(|address| {
            // SAFETY: the spawned thread's allocation, given back once here.
            unsafe { release(NonNull::new(address as *mut u8).unwrap()) };
        })
        .unwrap();
    }
}
