/* The seed scenarios of docs/spec.md through the C ABI, plus the main happy paths. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "common.h"

#define THREADS 4
#define INCREMENTS_PER_THREAD 50

static tenure_store *shared_store;

static void version_agrees(void) {
    char expected[64];
    snprintf(expected, sizeof expected, "%d.%d.%d", TENURE_VERSION_MAJOR, TENURE_VERSION_MINOR,
             TENURE_VERSION_PATCH);
    EXPECT_TRUE(strcmp(tenure_version(), expected) == 0);
    EXPECT_TRUE(strcmp(tenure_status_name(TENURE_ERR_CONDITION_NOT_MET), "ConditionNotMet") == 0);
    EXPECT_TRUE(tenure_status_http(TENURE_ERR_CONDITION_NOT_MET) == 412);
    EXPECT_TRUE(tenure_status_http(TENURE_ERR_OBJECT_LOCKED) == 409);
    EXPECT_TRUE(tenure_status_http(TENURE_ERR_NOT_FOUND) == 404);
    EXPECT_TRUE(tenure_status_http(TENURE_OK) == 200);
}

/* Two writers read the same ETag; both write with if_match: exactly one wins. */
static void two_writers_one_etag(tenure_store *store) {
    char etag[TENURE_ETAG_SIZE];
    char first[TENURE_ETAG_SIZE];
    char current[TENURE_ETAG_SIZE];
    bool has_current = false;
    tenure_conditions conditions;
    EXPECT_OK(tenure_put(store, "items", KEY("shared"), (const uint8_t *)"v0", 2, NULL, etag));
    memset(&conditions, 0, sizeof conditions);
    conditions.if_match = etag;
    EXPECT_OK(tenure_put(store, "items", KEY("shared"), (const uint8_t *)"a", 1, &conditions, first));
    EXPECT_STATUS(TENURE_ERR_CONDITION_NOT_MET,
                  tenure_put(store, "items", KEY("shared"), (const uint8_t *)"b", 1, &conditions, NULL));
    EXPECT_OK(tenure_last_error_etag(current, &has_current));
    EXPECT_TRUE(has_current && strcmp(current, first) == 0);
}

/* A lease, then a write without its id: LeaseIdMissing; with it: fine. */
static void lease_then_write(tenure_store *store) {
    tenure_lease lease;
    tenure_lease_info info;
    tenure_conditions conditions;
    uint64_t left_ms = 0;
    EXPECT_OK(tenure_put(store, "items", KEY("leased"), (const uint8_t *)"x", 1, NULL, NULL));
    EXPECT_OK(tenure_lease_acquire(store, "items", KEY("leased"), 15, NULL, &lease));
    EXPECT_STATUS(TENURE_ERR_LEASE_ID_MISSING,
                  tenure_put(store, "items", KEY("leased"), (const uint8_t *)"y", 1, NULL, NULL));
    memset(&conditions, 0, sizeof conditions);
    conditions.lease_id = lease.id;
    EXPECT_OK(tenure_put(store, "items", KEY("leased"), (const uint8_t *)"z", 1, &conditions, NULL));
    EXPECT_OK(tenure_lease_get_info(store, "items", KEY("leased"), &info));
    EXPECT_TRUE(info.state == TENURE_LEASE_LEASED && info.has_id && strcmp(info.id, lease.id) == 0);
    EXPECT_OK(tenure_lease_renew(store, "items", KEY("leased"), lease.id, &lease));
    EXPECT_OK(tenure_lease_change(store, "items", KEY("leased"), lease.id,
                                  "3f2504e0-4f89-11d3-9a0c-0305e82c3301", &lease));
    EXPECT_TRUE(strcmp(lease.id, "3f2504e0-4f89-11d3-9a0c-0305e82c3301") == 0);
    EXPECT_OK(tenure_lease_release(store, "items", KEY("leased"), lease.id));
    EXPECT_OK(tenure_lease_acquire(store, "items", KEY("leased"), -1, NULL, &lease));
    EXPECT_OK(tenure_lease_break(store, "items", KEY("leased"), 0, &left_ms));
    EXPECT_TRUE(left_ms == 0);
    EXPECT_OK(tenure_put(store, "items", KEY("leased"), (const uint8_t *)"w", 1, NULL, NULL));
}

/* Two get_and_lock calls: the second is ObjectLocked. */
static void two_locks(tenure_store *store) {
    char handle[TENURE_LOCK_HANDLE_SIZE];
    char other[TENURE_LOCK_HANDLE_SIZE];
    tenure_item *item = NULL;
    tenure_item_info info;
    uint8_t value[16];
    size_t length = 0;
    EXPECT_OK(tenure_put(store, "items", KEY("locked"), (const uint8_t *)"cache", 5, NULL, NULL));
    EXPECT_OK(tenure_get_and_lock(store, "items", KEY("locked"), 30000, false, handle, &item));
    EXPECT_TRUE(item != NULL);
    EXPECT_OK(tenure_item_value(item, value, sizeof value, &length));
    EXPECT_TRUE(length == 5 && memcmp(value, "cache", 5) == 0);
    EXPECT_OK(tenure_item_get_info(item, &info));
    EXPECT_TRUE(info.value_length == 5);
    EXPECT_STATUS(TENURE_ERR_OBJECT_LOCKED,
                  tenure_get_and_lock(store, "items", KEY("locked"), 30000, false, other, NULL));
    EXPECT_OK(tenure_put_and_unlock(store, "items", KEY("locked"), (const uint8_t *)"new", 3, handle,
                                    false, 0, NULL));
    EXPECT_OK(tenure_get_and_lock(store, "items", KEY("locked"), 30000, false, other, NULL));
    EXPECT_OK(tenure_unlock(store, "items", KEY("locked"), other, false, 0));
    EXPECT_OK(tenure_item_free(item));
}

/* The read-modify-write retry loop with if_match, under 4 threads. */
static void *increment(void *unused) {
    int done = 0;
    int attempts = 0;
    (void)unused;
    while (done < INCREMENTS_PER_THREAD && attempts < 100000) {
        char text[32];
        size_t length = 0;
        tenure_item_info info;
        tenure_conditions conditions;
        long counter;
        tenure_status status;
        attempts++;
        status = tenure_get(shared_store, "items", KEY("counter"), NULL, (uint8_t *)text,
                            sizeof text - 1, &length, &info);
        if (status != TENURE_OK) {
            return (void *)1;
        }
        text[length] = '\0';
        counter = strtol(text, NULL, 10);
        snprintf(text, sizeof text, "%ld", counter + 1);
        memset(&conditions, 0, sizeof conditions);
        conditions.if_match = info.etag;
        status = tenure_put(shared_store, "items", KEY("counter"), (const uint8_t *)text,
                            strlen(text), &conditions, NULL);
        if (status == TENURE_OK) {
            done++;
        } else if (status != TENURE_ERR_CONDITION_NOT_MET) {
            return (void *)1;
        }
    }
    return done == INCREMENTS_PER_THREAD ? NULL : (void *)1;
}

static void read_modify_write(tenure_store *store) {
    pthread_t threads[THREADS];
    char text[32];
    size_t length = 0;
    int index;
    shared_store = store;
    EXPECT_OK(tenure_put(store, "items", KEY("counter"), (const uint8_t *)"0", 1, NULL, NULL));
    for (index = 0; index < THREADS; index++) {
        EXPECT_TRUE(pthread_create(&threads[index], NULL, increment, NULL) == 0);
    }
    for (index = 0; index < THREADS; index++) {
        void *result = NULL;
        pthread_join(threads[index], &result);
        EXPECT_TRUE(result == NULL);
    }
    EXPECT_OK(tenure_get(store, "items", KEY("counter"), NULL, (uint8_t *)text, sizeof text - 1,
                         &length, NULL));
    text[length] = '\0';
    EXPECT_TRUE(strtol(text, NULL, 10) == THREADS * INCREMENTS_PER_THREAD);
}

static void reads_snapshots_batches_lists(tenure_store *store) {
    tenure_snapshot *snapshot = NULL;
    tenure_batch *batch = NULL;
    tenure_page *page = NULL;
    tenure_cursor *cursor = NULL;
    tenure_change change;
    bool has_change = false;
    uint8_t small[2];
    uint8_t value[64];
    size_t length = 0;
    size_t count = 0;
    uint64_t version = 0;
    uint64_t failed_index = 0;
    bool has_index = false;
    char continuation[512];
    bool has_more = false;
    int changes_seen = 0;
    tenure_conditions conditions;

    EXPECT_OK(tenure_container_create(store, "list", false, 0));
    EXPECT_STATUS(TENURE_ERR_CONTAINER_ALREADY_EXISTS, tenure_container_create(store, "list", false, 0));
    EXPECT_OK(tenure_create(store, "list", KEY("a"), (const uint8_t *)"alpha", 5, NULL, NULL));
    EXPECT_STATUS(TENURE_ERR_ALREADY_EXISTS,
                  tenure_create(store, "list", KEY("a"), (const uint8_t *)"again", 5, NULL, NULL));
    EXPECT_STATUS(TENURE_ERR_NOT_FOUND,
                  tenure_replace(store, "list", KEY("zz"), (const uint8_t *)"x", 1, NULL, NULL));

    /* copy-out with a too-small buffer reports the size */
    EXPECT_STATUS(TENURE_ERR_BUFFER_TOO_SMALL,
                  tenure_get(store, "list", KEY("a"), NULL, small, sizeof small, &length, NULL));
    EXPECT_TRUE(length == 5);
    length = 0;
    EXPECT_STATUS(TENURE_ERR_BUFFER_TOO_SMALL,
                  tenure_get(store, "list", KEY("a"), NULL, NULL, 0, &length, NULL));
    EXPECT_TRUE(length == 5);

    /* snapshot isolation */
    EXPECT_OK(tenure_snapshot_open(store, &snapshot));
    EXPECT_OK(tenure_put(store, "list", KEY("a"), (const uint8_t *)"changed", 7, NULL, NULL));
    EXPECT_OK(tenure_snapshot_get(snapshot, "list", KEY("a"), NULL, value, sizeof value, &length, NULL));
    EXPECT_TRUE(length == 5 && memcmp(value, "alpha", 5) == 0);
    EXPECT_OK(tenure_snapshot_version(snapshot, &version));
    EXPECT_OK(tenure_snapshot_free(snapshot));

    /* a batch: all or nothing, the failing index reported */
    EXPECT_OK(tenure_batch_new(store, &batch));
    EXPECT_OK(tenure_batch_put(batch, "list", KEY("b"), (const uint8_t *)"beta", 4, NULL));
    EXPECT_OK(tenure_batch_put(batch, "list", KEY("c"), (const uint8_t *)"gamma", 5, NULL));
    EXPECT_OK(tenure_batch_commit(batch, &version));
    EXPECT_OK(tenure_batch_free(batch));
    EXPECT_OK(tenure_batch_new(store, &batch));
    EXPECT_OK(tenure_batch_put(batch, "list", KEY("d"), (const uint8_t *)"delta", 5, NULL));
    memset(&conditions, 0, sizeof conditions);
    conditions.if_match = "\"0x0000000000000001\"";
    EXPECT_OK(tenure_batch_check(batch, "list", KEY("a"), &conditions));
    EXPECT_STATUS(TENURE_ERR_CONDITION_NOT_MET, tenure_batch_commit(batch, &version));
    EXPECT_OK(tenure_last_error_batch_index(&failed_index, &has_index));
    EXPECT_TRUE(has_index && failed_index == 1);
    EXPECT_OK(tenure_batch_free(batch));
    EXPECT_STATUS(TENURE_ERR_NOT_FOUND,
                  tenure_get(store, "list", KEY("d"), NULL, value, sizeof value, &length, NULL));

    /* list with continuation: pages of 2 over a, b, c */
    EXPECT_OK(tenure_list(store, "list", NULL, 0, 2, NULL, true, &page));
    EXPECT_OK(tenure_page_count(page, &count));
    EXPECT_TRUE(count == 2);
    EXPECT_OK(tenure_page_key(page, 1, value, sizeof value, &length));
    EXPECT_TRUE(length == 1 && value[0] == 'b');
    EXPECT_OK(tenure_page_value(page, 1, value, sizeof value, &length));
    EXPECT_TRUE(length == 4 && memcmp(value, "beta", 4) == 0);
    EXPECT_OK(tenure_page_continuation(page, continuation, sizeof continuation, &length, &has_more));
    EXPECT_TRUE(has_more);
    EXPECT_OK(tenure_page_free(page));
    page = NULL;
    EXPECT_OK(tenure_list(store, "list", NULL, 0, 2, continuation, false, &page));
    EXPECT_OK(tenure_page_count(page, &count));
    EXPECT_TRUE(count == 1);
    EXPECT_OK(tenure_page_continuation(page, continuation, sizeof continuation, &length, &has_more));
    EXPECT_TRUE(!has_more);
    EXPECT_OK(tenure_page_free(page));

    /* the change feed */
    EXPECT_OK(tenure_cursor_open(store, 0, "list", true, &cursor));
    for (;;) {
        EXPECT_OK(tenure_cursor_next(cursor, &change, &has_change));
        if (!has_change) {
            break;
        }
        changes_seen++;
        if (change.kind == TENURE_CHANGE_CREATED) {
            EXPECT_OK(tenure_cursor_key(cursor, value, sizeof value, &length));
            EXPECT_TRUE(length == change.key_length);
        }
    }
    EXPECT_TRUE(changes_seen >= 5);
    EXPECT_OK(tenure_cursor_free(cursor));

    EXPECT_OK(tenure_delete(store, "list", KEY("c"), NULL));
    EXPECT_OK(tenure_container_delete(store, "list", NULL));
    EXPECT_STATUS(TENURE_ERR_CONTAINER_NOT_FOUND,
                  tenure_get(store, "list", KEY("a"), NULL, value, sizeof value, &length, NULL));
}

int main(void) {
    char path[1024];
    tenure_store *store;
    temporary_store_path(path, sizeof path, "scenarios");
    store = open_store(path);
    version_agrees();
    EXPECT_OK(tenure_container_create(store, "items", false, 0));
    two_writers_one_etag(store);
    lease_then_write(store);
    two_locks(store);
    read_modify_write(store);
    reads_snapshots_batches_lists(store);
    EXPECT_OK(tenure_store_close(store));
    EXPECT_OK(tenure_store_free(store));
    remove_tree(path);
    return finish("scenarios");
}
