//! Zero-filled arrays for the point index's bucket tables, in huge pages where they are large
//! enough to share one.
//!
//! Why: a get reads one bucket at random from one of 256 shard tables. Each table in a
//! mapping of its own (64 KiB at a million keys) sits in 4 KiB pages, so nearly every get
//! also missed the TLB on its bucket, and on this VM a random read through 4 KiB pages now and
//! then stalls for 0.1–1 ms besides (docs/design.md §11 "Mapping advice and huge pages"). Tables of 4 KiB to
//! 1 MiB are therefore blocks of 2 MiB chunks, one size per chunk, and a chunk is collapsed
//! into a huge page (`MADV_COLLAPSE`) once all its blocks are handed out; larger tables are
//! huge-page mappings of their own (`MADV_HUGEPAGE`); smaller ones stay on the heap. A chunk
//! only partly used stays in small pages, so it keeps only the pages its tables touch
//! resident: advised huge from the start, a 128 KiB table alone in its chunk made 2 MiB
//! resident.
//!
//! A block freed (its table replaced by a larger one and reclaimed) is zeroed again when it
//! is handed out next; a chunk whose last block is freed is unmapped, so the tables of a
//! store that grew release their smaller predecessors' memory as the last shard outgrows
//! them.
//!
//! ```text
//! chunk (2 MiB, 2 MiB-aligned): | block 0 | block 1 | … | block 2 MiB / size − 1 |
//! ```

use std::ptr::NonNull;

use parking_lot::Mutex;

/// Arrays of this many bytes or more are not on the heap (one page).
const SMALLEST_POOLED_BYTES: usize = 4096;
/// The size of a chunk, and the alignment of it and of an array mapped on its own.
const CHUNK_BYTES: usize = 2 << 20;
/// Block sizes: 4 KiB, 8 KiB, … 1 MiB (a class per power of two below a chunk; an array of
/// more than half a chunk is mapped on its own).
const CLASSES: usize = (CHUNK_BYTES / SMALLEST_POOLED_BYTES).trailing_zeros() as usize;

/// # Safety
/// All-zero bytes are a valid `Self`, and `Self` is `Sync`.
pub(crate) unsafe trait ZeroIsValid: Default + Sync {}
// SAFETY: atomics of integers: zero is 0, and they are `Sync`.
unsafe impl ZeroIsValid for std::sync::atomic::AtomicU64 {}

/// `count` elements, all zero bytes when made.
pub(crate) struct ZeroedArray<T: ZeroIsValid> {
    pointer: NonNull<T>,
    count: usize,
}

// SAFETY: the memory is owned by the array like a box, and its elements are `Sync`.
unsafe impl<T: ZeroIsValid> Send for ZeroedArray<T> {}
unsafe impl<T: ZeroIsValid> Sync for ZeroedArray<T> {}

/// Where an array of `bytes` lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placement {
    Heap,
    /// A block of the class's chunks (class 0: 4 KiB blocks).
    Pooled {
        class: usize,
    },
    /// A huge-page mapping of its own, `bytes` rounded up to whole chunks.
    Mapped,
}

fn placement(bytes: usize) -> Placement {
    if bytes < SMALLEST_POOLED_BYTES {
        Placement::Heap
    } else if bytes <= CHUNK_BYTES / 2 {
        let block_bytes = bytes.next_power_of_two();
        Placement::Pooled {
            class: (block_bytes / SMALLEST_POOLED_BYTES).trailing_zeros() as usize,
        }
    } else {
        Placement::Mapped
    }
}

fn block_bytes(class: usize) -> usize {
    SMALLEST_POOLED_BYTES << class
}

static POOL: Mutex<Pool> = parking_lot::const_mutex(Pool::new());

impl<T: ZeroIsValid> ZeroedArray<T> {
    pub(crate) fn zeroed(count: usize) -> ZeroedArray<T> {
        assert!(count > 0 && std::mem::align_of::<T>() <= SMALLEST_POOLED_BYTES);
        let layout = std::alloc::Layout::array::<T>(count).expect("an array's size");
        let pointer = match placement(layout.size()) {
            // SAFETY: a non-zero size (asserted).
            Placement::Heap => unsafe { std::alloc::alloc_zeroed(layout) },
            Placement::Pooled { class } => POOL.lock().allocate(class),
            Placement::Mapped => {
                let bytes = layout.size().next_multiple_of(CHUNK_BYTES);
                let pointer = map_aligned(bytes, true);
                if !pointer.is_null() {
                    populate_for_writing(pointer, bytes);
                }
                pointer
            }
        };
        let Some(pointer) = NonNull::new(pointer.cast::<T>()) else {
            std::alloc::handle_alloc_error(layout);
        };
        ZeroedArray { pointer, count }
    }
}

impl<T: ZeroIsValid> std::ops::Deref for ZeroedArray<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY: `count` elements made zero (valid: `ZeroIsValid`), owned while `self` lives.
        unsafe { std::slice::from_raw_parts(self.pointer.as_ptr(), self.count) }
    }
}

impl<T: ZeroIsValid> Drop for ZeroedArray<T> {
    fn drop(&mut self) {
        let layout = std::alloc::Layout::array::<T>(self.count).expect("an array's size");
        let pointer = self.pointer.as_ptr().cast::<u8>();
        match placement(layout.size()) {
            // SAFETY: allocated in `zeroed` with this layout, freed once.
            Placement::Heap => unsafe { std::alloc::dealloc(pointer, layout) },
            Placement::Pooled { class } => POOL.lock().release(class, pointer),
            Placement::Mapped => unmap(pointer, layout.size().next_multiple_of(CHUNK_BYTES)),
        }
    }
}

/// Zero-filled memory of `bytes` (whole chunks), aligned to a chunk, advised huge pages if
/// `huge`; null if the system has none.
fn map_aligned(bytes: usize, huge: bool) -> *mut u8 {
    assert!(bytes % CHUNK_BYTES == 0);
    // Mapped with a chunk to spare, then trimmed to the aligned part: mmap itself promises
    // only page alignment, and a huge page needs its 2 MiB.
    let mapped_bytes = bytes + CHUNK_BYTES;
    // SAFETY: an anonymous private mapping (zero-filled).
    let mapped = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            mapped_bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if mapped == libc::MAP_FAILED {
        return std::ptr::null_mut();
    }
    let start = mapped as usize;
    let aligned = start.next_multiple_of(CHUNK_BYTES);
    let head = aligned - start;
    if head > 0 {
        unmap(start as *mut u8, head);
    }
    let tail = mapped_bytes - head - bytes;
    if tail > 0 {
        unmap((aligned + bytes) as *mut u8, tail);
    }
    if huge {
        advise(aligned, bytes, libc::MADV_HUGEPAGE);
    }
    aligned as *mut u8
}

/// Only advice: where the kernel declines it (or predates it), small pages work the same.
fn advise(start: usize, bytes: usize, advice: libc::c_int) {
    #[cfg(target_os = "linux")]
    // SAFETY: advice on a range of a mapping made by `map_aligned`.
    unsafe {
        libc::madvise(start as *mut libc::c_void, bytes, advice);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, bytes, advice);
}

/// Maps the pages of `start..start + bytes` (never touched, zero-filled) writable now.
///
/// Why: a table's first access to a page is a read (an insert probes its bucket), which maps
/// the shared zero page; the write after it then replaces that entry, and replacing a
/// present entry flushes it from every CPU running the process: an interrupt to each, about
/// half of a load of a million items into presized tables on this VM. A page mapped for
/// writing first is never replaced. `MADV_POPULATE_WRITE` (Linux 5.14) maps them without
/// touching them; where it is refused, writing zeros does the same.
fn populate_for_writing(start: *mut u8, bytes: usize) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: advice on a range of a mapping made by `map_aligned`.
        let populated =
            unsafe { libc::madvise(start.cast(), bytes, libc::MADV_POPULATE_WRITE) } == 0;
        if populated {
            return;
        }
    }
    // SAFETY: `bytes` of writable memory at `start`, not yet handed out.
    unsafe { std::ptr::write_bytes(start, 0, bytes) };
}

/// `MADV_COLLAPSE` (Linux 6.1): makes the range's pages one huge page now, whatever the
/// system's THP settings, copying what they hold; concurrent accesses wait in page faults
/// for the copy.
const MADV_COLLAPSE: libc::c_int = 25;

fn unmap(pointer: *mut u8, bytes: usize) {
    // SAFETY: a page-aligned range of a mapping made by `map_aligned`, unmapped once.
    let result = unsafe { libc::munmap(pointer.cast(), bytes) };
    assert_eq!(result, 0, "munmap of a zeroed array failed");
}

/// The chunks of every class, and which of their blocks are free.
struct Pool {
    classes: [Vec<Chunk>; CLASSES],
}

struct Chunk {
    base: usize,
    /// Blocks from this index on have never been handed out: still zero.
    untouched_from: usize,
    /// Blocks handed out and freed since: zeroed again when handed out next.
    freed: Vec<usize>,
    live: usize,
}

impl Pool {
    const fn new() -> Pool {
        Pool {
            classes: [const { Vec::new() }; CLASSES],
        }
    }

    /// A zeroed block of the class; null if the system has no memory for a chunk.
    fn allocate(&mut self, class: usize) -> *mut u8 {
        let block_bytes = block_bytes(class);
        let blocks_per_chunk = CHUNK_BYTES / block_bytes;
        let chunks = &mut self.classes[class];
        let position = match chunks
            .iter()
            .position(|chunk| !chunk.freed.is_empty() || chunk.untouched_from < blocks_per_chunk)
        {
            Some(position) => position,
            None => {
                let base = map_aligned(CHUNK_BYTES, false);
                if base.is_null() {
                    return base;
                }
                chunks.push(Chunk {
                    base: base as usize,
                    untouched_from: 0,
                    freed: Vec::new(),
                    live: 0,
                });
                chunks.len() - 1
            }
        };
        let chunk = &mut chunks[position];
        chunk.live += 1;
        if let Some(block) = chunk.freed.pop() {
            let pointer = (chunk.base + block * block_bytes) as *mut u8;
            // SAFETY: a free block of a live chunk: this pool's alone until handed out.
            unsafe { std::ptr::write_bytes(pointer, 0, block_bytes) };
            return pointer;
        }
        let block = chunk.untouched_from;
        chunk.untouched_from += 1;
        let pointer = (chunk.base + block * block_bytes) as *mut u8;
        if chunk.untouched_from == blocks_per_chunk {
            // Every block now holds a table (about 0.5 ms to copy 2 MiB, once per chunk,
            // while a shard grows).
            advise(chunk.base, CHUNK_BYTES, MADV_COLLAPSE);
        } else {
            populate_for_writing(pointer, block_bytes);
        }
        pointer
    }

    /// Takes back a block `allocate` handed out; unmaps its chunk if that was the last one.
    fn release(&mut self, class: usize, pointer: *mut u8) {
        let block_bytes = block_bytes(class);
        let base = pointer as usize / CHUNK_BYTES * CHUNK_BYTES;
        let chunks = &mut self.classes[class];
        let position = chunks
            .iter()
            .position(|chunk| chunk.base == base)
            .expect("a released block belongs to a chunk of its class");
        let chunk = &mut chunks[position];
        let block = (pointer as usize - base) / block_bytes;
        assert!(block < chunk.untouched_from && chunk.live > 0);
        chunk.live -= 1;
        if chunk.live == 0 {
            unmap(base as *mut u8, CHUNK_BYTES);
            chunks.swap_remove(position);
        } else {
            chunk.freed.push(block);
        }
    }

    #[cfg(test)]
    fn chunk_count(&self, class: usize) -> usize {
        self.classes[class].len()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    #[test]
    fn sizes_are_placed_by_class() {
        assert_eq!(placement(8), Placement::Heap);
        assert_eq!(placement(4095), Placement::Heap);
        assert_eq!(placement(4096), Placement::Pooled { class: 0 });
        assert_eq!(placement(4097), Placement::Pooled { class: 1 });
        assert_eq!(placement(64 << 10), Placement::Pooled { class: 4 });
        assert_eq!(placement(1 << 20), Placement::Pooled { class: CLASSES - 1 });
        assert_eq!(placement((1 << 20) + 8), Placement::Mapped);
        assert_eq!(placement(16 << 20), Placement::Mapped);
    }

    /// Arrays of every placement start zeroed, hold what is written, and are distinct; a
    /// pooled array made after another was freed is zeroed again.
    #[test]
    fn arrays_start_zeroed_even_in_reused_blocks() {
        for count in [1, 511, 512, 8 << 10, 100_000, 1 << 17, 300_000] {
            let arrays: Vec<ZeroedArray<AtomicU64>> =
                (0..3).map(|_| ZeroedArray::zeroed(count)).collect();
            for (number, array) in arrays.iter().enumerate() {
                assert_eq!(array.len(), count);
                assert!(array.iter().all(|word| word.load(Ordering::Relaxed) == 0));
                for word in array.iter() {
                    word.store(number as u64 + 1, Ordering::Relaxed);
                }
            }
            for (number, array) in arrays.iter().enumerate() {
                assert!(array
                    .iter()
                    .all(|word| word.load(Ordering::Relaxed) == number as u64 + 1));
            }
            drop(arrays);
            let again: ZeroedArray<AtomicU64> = ZeroedArray::zeroed(count);
            assert!(again.iter().all(|word| word.load(Ordering::Relaxed) == 0));
        }
    }

    /// The huge-page bytes of the mapping holding `address` (`/proc/self/smaps`).
    fn anonymous_huge_bytes_at(address: usize) -> Option<usize> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ') {
                if let Some((start, end)) = range.split_once('-') {
                    if let (Ok(start), Ok(end)) = (
                        usize::from_str_radix(start, 16),
                        usize::from_str_radix(end, 16),
                    ) {
                        inside = (start..end).contains(&address);
                        continue;
                    }
                }
            }
            if inside {
                if let Some(kilobytes) = line.strip_prefix("AnonHugePages:") {
                    let kilobytes = kilobytes.trim().trim_end_matches("kB").trim();
                    return kilobytes.parse::<usize>().ok().map(|k| k * 1024);
                }
            }
        }
        None
    }

    /// A chunk whose blocks are all handed out is collapsed into a huge page, and its blocks
    /// keep what was written to them before.
    #[test]
    fn a_full_chunk_becomes_a_huge_page_and_keeps_its_bytes() {
        let mut pool = Pool::new();
        let class = 4; // 64 KiB blocks, 32 to a chunk
        let mut blocks = Vec::new();
        for number in 0..32u8 {
            let block = pool.allocate(class);
            // SAFETY: a live block of 64 KiB.
            unsafe { std::ptr::write_bytes(block, number + 1, 64 << 10) };
            blocks.push(block);
        }
        for (number, block) in blocks.iter().enumerate() {
            // SAFETY: a live block of 64 KiB.
            let bytes = unsafe { std::slice::from_raw_parts(*block, 64 << 10) };
            assert!(bytes.iter().all(|byte| *byte == number as u8 + 1));
        }
        // Where the system grants huge pages at all (`never` turns MADV_COLLAPSE down too).
        let settings = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .unwrap_or_default();
        if settings.contains("[always]") || settings.contains("[madvise]") {
            assert!(
                anonymous_huge_bytes_at(blocks[0] as usize).unwrap() >= CHUNK_BYTES,
                "the full chunk is not in a huge page"
            );
        }
        for block in blocks {
            pool.release(class, block);
        }
        assert_eq!(pool.chunk_count(class), 0);
    }

    #[test]
    fn chunks_are_aligned_and_unmapped_with_their_last_block() {
        let mut pool = Pool::new();
        let class = 4; // 64 KiB blocks, 32 to a chunk
        let blocks: Vec<*mut u8> = (0..33).map(|_| pool.allocate(class)).collect();
        assert_eq!(pool.chunk_count(class), 2);
        assert!(blocks.iter().all(|block| *block as usize % (64 << 10) == 0));
        let first_chunk = blocks[0] as usize;
        assert_eq!(first_chunk % CHUNK_BYTES, 0);
        assert!(blocks[..32]
            .iter()
            .all(|block| *block as usize / CHUNK_BYTES * CHUNK_BYTES == first_chunk));
        // SAFETY: a live block of 64 KiB.
        unsafe { std::ptr::write_bytes(blocks[5], 0xAB, 64 << 10) };
        pool.release(class, blocks[5]);
        let reused = pool.allocate(class);
        assert_eq!(reused, blocks[5]);
        // SAFETY: a live block of 64 KiB.
        let bytes = unsafe { std::slice::from_raw_parts(reused, 64 << 10) };
        assert!(bytes.iter().all(|byte| *byte == 0));
        pool.release(class, blocks[32]);
        assert_eq!(
            pool.chunk_count(class),
            1,
            "the second chunk's only block went"
        );
        for block in &blocks[..32] {
            pool.release(class, *block);
        }
        assert_eq!(pool.chunk_count(class), 0);
    }
}
