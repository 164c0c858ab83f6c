// The group-commit protocol without tenure: how close this machine lets N writers come to
// N × one writer's rate when each waits for its own 200 B record to be durable and one
// fdatasync serves a group. It bounds what tenure's `sync` group commit can reach here, and
// it is where the choices of log/staging.rs and log/group_commit.rs were measured
// (docs/design.md §11 "Group commit").
//
// Build and run (the file is rewritten with zeroes first, so every write lands on written
// blocks):
//     gcc -O2 -pthread -o /tmp/group-commit benches/probes/group_commit_protocol.c
//     /tmp/group-commit --file /tmp/group-commit.data --rounds 3 --stage --spin
//
// Each round runs one writer (pwrite + fdatasync per record) for 2 s, then N writers with a
// flusher thread for 2 s twice: once syncing whatever is complete, once lingering first for
// a whole group of N records (at most half the last sync). It prints records/s and the ratio
// to N × the one-writer rate. Options:
//     --threads N         writers (16)
//     --stage             writers copy records to memory and the flusher writes the group's
//                         range with one pwrite before its fdatasync (default: each writer
//                         pwrites its own record)
//     --spin              writers wait for durability spinning with sched_yield (up to
//                         300 µs, then they sleep), and the flusher lingers the same way
//                         (default: both sleep on futexes)
//     --nap-us N          writers wait in futex naps of N µs instead
//     --sleep-until-sync  writers sleep until the flusher starts its fdatasync, then spin
//     --max-spinners N    at most N writers spin at once; the others sleep
//     --each-syncs        also run N writers that each call fdatasync themselves
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FILE_BYTES (64u << 20)
#define RECORD_BYTES 200
#define MAXIMUM_THREADS 256
#define WRITER_SPIN_NS 300000L

static struct {
    int threads;
    int stage;
    int spin;
    long nap_ns;
    int sleep_until_sync;
    int max_spinners;
    int each_syncs;
} options = {.threads = 16};

static int file;
static char *staged_bytes;
static uint64_t staged_end;
static _Atomic uint64_t reserved;
static _Atomic uint32_t completed;
static _Atomic uint32_t durable;
static _Atomic uint32_t syncing;
static _Atomic int flusher_sleeping;
static _Atomic int spinners;
static _Atomic int stop;
static _Atomic uint64_t records_done;
static long last_sync_ns = 50000;
static uint64_t syncs;
static int linger_for_group;

static long futex(_Atomic uint32_t *word, int operation, uint32_t value, const struct timespec *timeout) {
    return syscall(SYS_futex, (uint32_t *)word, operation | FUTEX_PRIVATE_FLAG, value, timeout, NULL, 0);
}

static long now_ns(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return time.tv_sec * 1000000000L + time.tv_nsec;
}

static void write_record(const char *record, int staged) {
    uint64_t number = atomic_fetch_add(&reserved, 1);
    off_t offset = (off_t)((number * RECORD_BYTES) % (FILE_BYTES - RECORD_BYTES));
    if (staged) {
        memcpy(staged_bytes + offset, record, RECORD_BYTES);
        return;
    }
    if (pwrite(file, record, RECORD_BYTES, offset) != RECORD_BYTES) {
        perror("pwrite");
        exit(1);
    }
}

static void *writer(void *unused) {
    (void)unused;
    char record[RECORD_BYTES];
    memset(record, 'x', sizeof record);
    uint64_t mine = 0;
    while (!atomic_load(&stop)) {
        write_record(record, options.stage);
        // A ticket of n: n records were complete when this one was counted, so a sync that
        // started after the count reached n covers it.
        uint32_t ticket = atomic_fetch_add(&completed, 1) + 1;
        if (atomic_load(&flusher_sleeping)) futex(&completed, FUTEX_WAKE, 1, NULL);
        int spinning = options.spin;
        if (spinning && options.max_spinners && atomic_fetch_add(&spinners, 1) >= options.max_spinners) {
            atomic_fetch_sub(&spinners, 1);
            spinning = 0;
        }
        long spin_deadline = now_ns() + WRITER_SPIN_NS;
        for (;;) {
            uint32_t durable_now = atomic_load(&durable);
            if ((int32_t)(durable_now - ticket) >= 0 || atomic_load(&stop)) break;
            if (options.sleep_until_sync && !atomic_load(&syncing)) {
                struct timespec timeout = {0, 2000000};
                futex(&syncing, FUTEX_WAIT, 0, &timeout);
                continue;
            }
            if (options.nap_ns) {
                struct timespec timeout = {0, options.nap_ns};
                futex(&durable, FUTEX_WAIT, durable_now, &timeout);
                continue;
            }
            if (spinning && now_ns() < spin_deadline) {
                sched_yield();
                continue;
            }
            futex(&durable, FUTEX_WAIT, durable_now, NULL);
        }
        if (spinning && options.max_spinners) atomic_fetch_sub(&spinners, 1);
        mine++;
    }
    atomic_fetch_add(&records_done, mine);
    return NULL;
}

static void *self_syncing_writer(void *unused) {
    (void)unused;
    char record[RECORD_BYTES];
    memset(record, 'x', sizeof record);
    uint64_t mine = 0;
    while (!atomic_load(&stop)) {
        write_record(record, 0);
        fdatasync(file);
        mine++;
    }
    atomic_fetch_add(&records_done, mine);
    return NULL;
}

static void flusher_wait_for_records(uint32_t seen, long timeout_ns) {
    atomic_store(&flusher_sleeping, 1);
    struct timespec timeout = {timeout_ns / 1000000000L, timeout_ns % 1000000000L};
    if (atomic_load(&completed) == seen) futex(&completed, FUTEX_WAIT, seen, &timeout);
    atomic_store(&flusher_sleeping, 0);
}

static void *flusher(void *unused) {
    (void)unused;
    while (!atomic_load(&stop)) {
        uint32_t complete = atomic_load(&completed);
        uint32_t durable_now = atomic_load(&durable);
        if (complete == durable_now) {
            flusher_wait_for_records(complete, 1000000);
            continue;
        }
        if (linger_for_group) {
            long deadline = now_ns() + last_sync_ns / 2;
            for (;;) {
                complete = atomic_load(&completed);
                if (complete - durable_now >= (uint32_t)options.threads) break;
                long left = deadline - now_ns();
                if (left <= 0) break;
                if (options.spin) {
                    sched_yield();
                } else {
                    flusher_wait_for_records(complete, left);
                }
            }
        }
        complete = atomic_load(&completed);
        if (options.stage) {
            // Every record counted in `complete` was copied before it was counted; records
            // copied since are written too, and again by the next group.
            uint64_t end = atomic_load(&reserved) * RECORD_BYTES;
            if (end > FILE_BYTES - RECORD_BYTES) end = FILE_BYTES - RECORD_BYTES;
            if (end > staged_end) {
                if (pwrite(file, staged_bytes + staged_end, end - staged_end, (off_t)staged_end) < 0) {
                    perror("pwrite");
                    exit(1);
                }
                staged_end = end;
            }
        }
        long started = now_ns();
        if (options.sleep_until_sync) {
            atomic_store(&syncing, 1);
            futex(&syncing, FUTEX_WAKE, 0x7fffffff, NULL);
        }
        fdatasync(file);
        atomic_store(&syncing, 0);
        last_sync_ns = now_ns() - started;
        syncs++;
        atomic_store(&durable, complete);
        futex(&durable, FUTEX_WAKE, 0x7fffffff, NULL);
    }
    return NULL;
}

enum run_kind { ONE_WRITER, GROUP_NO_LINGER, GROUP_LINGER, EACH_SYNCS };

static double records_per_second(enum run_kind kind, double seconds) {
    atomic_store(&stop, 0);
    atomic_store(&records_done, 0);
    atomic_store(&completed, 0);
    atomic_store(&durable, 0);
    atomic_store(&reserved, 0);
    staged_end = 0;
    syncs = 0;
    long started = now_ns();
    if (kind == ONE_WRITER) {
        char record[RECORD_BYTES];
        memset(record, 'x', sizeof record);
        uint64_t count = 0;
        while (now_ns() - started < (long)(seconds * 1e9)) {
            write_record(record, 0);
            fdatasync(file);
            count++;
        }
        return count / ((now_ns() - started) / 1e9);
    }
    pthread_t writers[MAXIMUM_THREADS], flusher_thread;
    linger_for_group = kind == GROUP_LINGER;
    if (kind != EACH_SYNCS) pthread_create(&flusher_thread, NULL, flusher, NULL);
    for (int index = 0; index < options.threads; index++) {
        pthread_create(&writers[index], NULL, kind == EACH_SYNCS ? self_syncing_writer : writer, NULL);
    }
    usleep((useconds_t)(seconds * 1e6));
    atomic_store(&stop, 1);
    double elapsed = (now_ns() - started) / 1e9;
    if (kind != EACH_SYNCS) {
        atomic_store(&durable, UINT32_MAX);
        futex(&durable, FUTEX_WAKE, 0x7fffffff, NULL);
    }
    for (int index = 0; index < options.threads; index++) pthread_join(writers[index], NULL);
    if (kind != EACH_SYNCS) {
        futex(&completed, FUTEX_WAKE, 1, NULL);
        pthread_join(flusher_thread, NULL);
        fprintf(stderr, "    %s: %.1f records per sync\n", kind == GROUP_LINGER ? "lingering" : "not lingering",
                syncs ? (double)atomic_load(&records_done) / syncs : 0.0);
    }
    return atomic_load(&records_done) / elapsed;
}

int main(int argc, char **argv) {
    const char *path = "/tmp/group-commit.data";
    int rounds = 3;
    for (int index = 1; index < argc; index++) {
        const char *argument = argv[index];
        const char *value = index + 1 < argc ? argv[index + 1] : NULL;
        if (!strcmp(argument, "--file") && value) path = argv[++index];
        else if (!strcmp(argument, "--rounds") && value) rounds = atoi(argv[++index]);
        else if (!strcmp(argument, "--threads") && value) options.threads = atoi(argv[++index]);
        else if (!strcmp(argument, "--stage")) options.stage = 1;
        else if (!strcmp(argument, "--spin")) options.spin = 1;
        else if (!strcmp(argument, "--nap-us") && value) options.nap_ns = atol(argv[++index]) * 1000;
        else if (!strcmp(argument, "--sleep-until-sync")) options.sleep_until_sync = 1;
        else if (!strcmp(argument, "--max-spinners") && value) options.max_spinners = atoi(argv[++index]);
        else if (!strcmp(argument, "--each-syncs")) options.each_syncs = 1;
        else {
            fprintf(stderr, "unknown or incomplete argument: %s (see the comment at the top)\n", argument);
            return 2;
        }
    }
    if (options.threads < 1 || options.threads > MAXIMUM_THREADS || rounds < 1 || options.nap_ns >= 1000000000L) {
        fprintf(stderr, "--threads must be 1..%d, --rounds at least 1, --nap-us under 1 s\n", MAXIMUM_THREADS);
        return 2;
    }
    file = open(path, O_RDWR | O_CREAT, 0600);
    if (file < 0) {
        perror(path);
        return 1;
    }
    char *zeroes = calloc(1, 1 << 20);
    for (unsigned mebibyte = 0; mebibyte < FILE_BYTES >> 20; mebibyte++) {
        if (pwrite(file, zeroes, 1 << 20, (off_t)mebibyte << 20) != 1 << 20) {
            perror("pwrite");
            return 1;
        }
    }
    fsync(file);
    free(zeroes);
    if (options.stage) staged_bytes = calloc(1, FILE_BYTES);
    for (int round = 0; round < rounds; round++) {
        double one = records_per_second(ONE_WRITER, 2);
        double no_linger = records_per_second(GROUP_NO_LINGER, 2);
        double linger = records_per_second(GROUP_LINGER, 2);
        double group = options.threads * one;
        printf("round %d: one writer %.0f/s (%.1f us); %d writers: %.0f/s (%.2f) syncing what is complete, "
               "%.0f/s (%.2f) lingering for the group",
               round, one, 1e6 / one, options.threads, no_linger, no_linger / group, linger, linger / group);
        if (options.each_syncs) {
            double each = records_per_second(EACH_SYNCS, 2);
            printf(", %.0f/s (%.2f) each syncing", each, each / group);
        }
        printf("\n");
        fflush(stdout);
    }
    return 0;
}
