/* The seed scenarios of docs/spec.md through the C ABI, plus the main happy paths: the calls
 * of ABI 0 with their options structs, as the README shows them. */
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
    tenure_etag etag;
    tenure_etag first;
    tenure_etag current;
    bool has_current = false;
    tenure_conditions when;
    tenure_write_options options = TENURE_WRITE_OPTIONS_INIT;
    EXPECT_OK(tenure_store_write(store, "items", KEY("shared"), (const uint8_t *)"v0", 2, NULL, &etag));
    memset(&when, 0, sizeof when);
    when.if_match = etag.text;
    options.conditions = &when;
    EXPECT_OK(tenure_store_write(store, "items", KEY("shared"), (const uint8_t *)"a", 1, &options, &first));
    EXPECT_STATUS(TENURE_ERR_CONDITION_NOT_MET,
                  tenure_store_write(store, "items", KEY("shared"), (const uint8_t *)"b", 1, &options, NULL));
    EXPECT_OK(tenure_last_error_current_etag(&current, &has_current));
    EXPECT_TRUE(has_current && strcmp(current.text, first.text) == 0);
}

/* A lease, then a write without its id: LeaseIdMissing; with it: fine. */
static void lease_then_write(tenure_store *store) {
    tenure_lease lease;
    tenure_lease_details details;
    tenure_lease_options lease_options = TENURE_LEASE_OPTIONS_INIT;
    tenure_conditions when;
    tenure_write_options options = TENURE_WRITE_OPTIONS_INIT;
    uint64_t left_ms = 0;
    EXPECT_OK(tenure_store_write(store, "items", KEY("leased"), (const uint8_t *)"x", 1, NULL, NULL));
    lease_options.duration_seconds = 15;
    EXPECT_OK(tenure_store_acquire_lease(store, "items", KEY("leased"), &lease_options, &lease));
    EXPECT_STATUS(TENURE_ERR_LEASE_ID_MISSING,
                  tenure_store_write(store, "items", KEY("leased"), (const uint8_t *)"y", 1, NULL, NULL));
    memset(&when, 0, sizeof when);
    when.lease_id = lease.id;
    options.conditions = &when;
    EXPECT_OK(tenure_store_write(store, "items", KEY("leased"), (const uint8_t *)"z", 1, &options, NULL));
    EXPECT_OK(tenure_store_lease_info(store, "items", KEY("leased"), &details));
    EXPECT_TRUE(details.state == TENURE_LEASE_LEASED && details.has_id && strcmp(details.id, lease.id) == 0);
    EXPECT_OK(tenure_store_renew_lease(store, "items", KEY("leased"), lease.id, &lease));
    EXPECT_OK(tenure_store_change_lease(store, "items", KEY("leased"), lease.id,
                                        "3f2504e0-4f89-11d3-9a0c-0305e82c3301", &lease));
    EXPECT_TRUE(strcmp(lease.id, "3f2504e0-4f89-11d3-9a0c-0305e82c3301") == 0);
    EXPECT_OK(tenure_store_release_lease(store, "items", KEY("leased"), lease.id));
    lease_options.duration_seconds = TENURE_INFINITE;
    EXPECT_OK(tenure_store_acquire_lease(store, "items", KEY("leased"), &lease_options, &lease));
    lease_options = (tenure_lease_options)TENURE_LEASE_OPTIONS_INIT;
    lease_options.has_break_period = true;
    lease_options.break_period_seconds = 0;
    EXPECT_OK(tenure_store_break_lease(store, "items", KEY("leased"), &lease_options, &left_ms));
    EXPECT_TRUE(left_ms == 0);
    EXPECT_OK(tenure_store_write(store, "items", KEY("leased"), (const uint8_t *)"w", 1, NULL, NULL));
}

/* Two get_and_lock calls: the second is ObjectLocked. */
static void two_locks(tenure_store *store) {
    tenure_lock_handle handle;
    tenure_lock_handle other;
    tenure_lock_options lock = TENURE_LOCK_OPTIONS_INIT;
    tenure_lock_options unlock = TENURE_LOCK_OPTIONS_INIT;
    tenure_item *item = NULL;
    tenure_item_info info;
    uint8_t value[16];
    size_t length = 0;
    EXPECT_OK(tenure_store_write(store, "items", KEY("locked"), (const uint8_t *)"cache", 5, NULL, NULL));
    lock.lock_timeout_ms = 30000;
    EXPECT_OK(tenure_store_get_and_lock(store, "items", KEY("locked"), &lock, &handle, &item));
    EXPECT_TRUE(item != NULL);
    EXPECT_OK(tenure_item_value(item, value, sizeof value, &length));
    EXPECT_TRUE(length == 5 && memcmp(value, "cache", 5) == 0);
    EXPECT_OK(tenure_item_get_info(item, &info));
    EXPECT_TRUE(info.value_length == 5);
    EXPECT_STATUS(TENURE_ERR_OBJECT_LOCKED,
                  tenure_store_get_and_lock(store, "items", KEY("locked"), &lock, &other, NULL));
    unlock.lock_handle = handle.text;
    EXPECT_OK(tenure_store_put_and_unlock(store, "items", KEY("locked"), (const uint8_t *)"new", 3, &unlock, NULL));
    EXPECT_OK(tenure_store_get_and_lock(store, "items", KEY("locked"), &lock, &other, NULL));
    unlock.lock_handle = other.text;
    EXPECT_OK(tenure_store_unlock(store, "items", KEY("locked"), &unlock));
    EXPECT_OK(tenure_item_free(item));
}

/* The read-modify-write retry loop with if_match, under 4 threads. */
static void *increment(void *unused) {
    int done = 0;
    int attempts = 0;
    (void)unused;
    while (done < INCREMENTS_PER_THREAD && attempts < 100000) {
        char text[32];
        tenure_value_out value;
        tenure_conditions when;
        tenure_write_options options = TENURE_WRITE_OPTIONS_INIT;
        long counter;
        tenure_status status;
        attempts++;
        memset(&value, 0, sizeof value);
        value.buffer = (uint8_t *)text;
        value.capacity = sizeof text - 1;
        status = tenure_store_get_value(shared_store, "items", KEY("counter"), NULL, &value);
        if (status != TENURE_OK) {
            return (void *)1;
        }
        text[value.length] = '\0';
        counter = strtol(text, NULL, 10);
        snprintf(text, sizeof text, "%ld", counter + 1);
        memset(&when, 0, sizeof when);
        when.if_match = value.info.etag;
        options.conditions = &when;
        status = tenure_store_write(shared_store, "items", KEY("counter"), (const uint8_t *)text,
                                    strlen(text), &options, NULL);
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
    tenure_value_out value;
    int index;
    shared_store = store;
    EXPECT_OK(tenure_store_write(store, "items", KEY("counter"), (const uint8_t *)"0", 1, NULL, NULL));
    for (index = 0; index < THREADS; index++) {
        EXPECT_TRUE(pthread_create(&threads[index], NULL, increment, NULL) == 0);
    }
    for (index = 0; index < THREADS; index++) {
        void *result = NULL;
        pthread_join(threads[index], &result);
        EXPECT_TRUE(result == NULL);
    }
    memset(&value, 0, sizeof value);
    value.buffer = (uint8_t *)text;
    value.capacity = sizeof text - 1;
    EXPECT_OK(tenure_store_get_value(store, "items", KEY("counter"), NULL, &value));
    text[value.length] = '\0';
    EXPECT_TRUE(strtol(text, NULL, 10) == THREADS * INCREMENTS_PER_THREAD);
}

/* A switch over a status: the compiler checks every case is there (-Wswitch). */
static const char *family(tenure_status status) {
    switch (status) {
    case TENURE_OK:
        return "ok";
    case TENURE_ERR_NOT_MODIFIED:
    case TENURE_ERR_INVALID_ARGUMENT:
    case TENURE_ERR_READ_ONLY:
        return "1xx";
    case TENURE_ERR_NOT_FOUND:
    case TENURE_ERR_CONTAINER_NOT_FOUND:
    case TENURE_ERR_COMPACTED:
        return "2xx";
    case TENURE_ERR_ALREADY_EXISTS:
    case TENURE_ERR_CONTAINER_ALREADY_EXISTS:
    case TENURE_ERR_LEASE_ALREADY_PRESENT:
    case TENURE_ERR_LEASE_ID_MISMATCH_WITH_LEASE_OPERATION:
    case TENURE_ERR_LEASE_NOT_PRESENT_WITH_LEASE_OPERATION:
    case TENURE_ERR_LEASE_IS_BROKEN_AND_CANNOT_BE_RENEWED:
    case TENURE_ERR_LEASE_IS_BREAKING_AND_CANNOT_BE_ACQUIRED:
    case TENURE_ERR_LEASE_IS_BREAKING_AND_CANNOT_BE_CHANGED:
    case TENURE_ERR_OBJECT_LOCKED:
        return "3xx";
    case TENURE_ERR_CONDITION_NOT_MET:
    case TENURE_ERR_VERSION_MISMATCH:
    case TENURE_ERR_LEASE_ID_MISSING:
    case TENURE_ERR_LEASE_ID_MISMATCH_WITH_BLOB_OPERATION:
    case TENURE_ERR_LEASE_NOT_PRESENT_WITH_BLOB_OPERATION:
    case TENURE_ERR_LEASE_LOST:
    case TENURE_ERR_LEASE_ID_MISMATCH_WITH_CONTAINER_OPERATION:
    case TENURE_ERR_LEASE_NOT_PRESENT_WITH_CONTAINER_OPERATION:
    case TENURE_ERR_OBJECT_NOT_LOCKED:
    case TENURE_ERR_INVALID_LOCK_HANDLE:
        return "4xx";
    case TENURE_ERR_FAILED_DEPENDENCY:
    case TENURE_ERR_STORE_LOCKED:
    case TENURE_ERR_CORRUPTION:
    case TENURE_ERR_IO:
    case TENURE_ERR_CLOSED:
    case TENURE_ERR_USED_AFTER_FORK:
    case TENURE_ERR_BUSY:
    case TENURE_ERR_STORAGE_FULL:
    case TENURE_ERR_UNAVAILABLE:
        return "5xx";
    case TENURE_ERR_PANIC:
    case TENURE_ERR_BUFFER_TOO_SMALL:
        return "9xx";
    }
    return "unknown";
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
    tenure_value_out out;
    tenure_view view;
    size_t length = 0;
    size_t count = 0;
    uint64_t version = 0;
    uint64_t failed_index = 0;
    bool has_index = false;
    char continuation[512];
    bool has_more = false;
    int changes_seen = 0;
    tenure_conditions when;
    tenure_write_options options = TENURE_WRITE_OPTIONS_INIT;
    tenure_list_options list = TENURE_LIST_OPTIONS_INIT;

    EXPECT_OK(tenure_container_create(store, "list", false, 0));
    EXPECT_STATUS(TENURE_ERR_CONTAINER_ALREADY_EXISTS, tenure_container_create(store, "list", false, 0));
    EXPECT_TRUE(strcmp(family(TENURE_ERR_CONTAINER_ALREADY_EXISTS), "3xx") == 0);
    options.kind = TENURE_WRITE_CREATE;
    EXPECT_OK(tenure_store_write(store, "list", KEY("a"), (const uint8_t *)"alpha", 5, &options, NULL));
    EXPECT_STATUS(TENURE_ERR_ALREADY_EXISTS,
                  tenure_store_write(store, "list", KEY("a"), (const uint8_t *)"again", 5, &options, NULL));
    options.kind = TENURE_WRITE_REPLACE;
    EXPECT_STATUS(TENURE_ERR_NOT_FOUND,
                  tenure_store_write(store, "list", KEY("zz"), (const uint8_t *)"x", 1, &options, NULL));

    /* copy-out with a too-small buffer reports the size */
    memset(&out, 0, sizeof out);
    out.buffer = small;
    out.capacity = sizeof small;
    EXPECT_STATUS(TENURE_ERR_BUFFER_TOO_SMALL, tenure_store_get_value(store, "list", KEY("a"), NULL, &out));
    EXPECT_TRUE(out.length == 5);
    out.buffer = NULL;
    out.capacity = 0;
    out.length = 0;
    EXPECT_STATUS(TENURE_ERR_BUFFER_TOO_SMALL, tenure_store_get_value(store, "list", KEY("a"), NULL, &out));
    EXPECT_TRUE(out.length == 5);

    /* snapshot isolation, copied and viewed */
    EXPECT_OK(tenure_snapshot_open(store, &snapshot));
    EXPECT_OK(tenure_store_write(store, "list", KEY("a"), (const uint8_t *)"changed", 7, NULL, NULL));
    out.buffer = value;
    out.capacity = sizeof value;
    EXPECT_OK(tenure_snapshot_get_value(snapshot, "list", KEY("a"), NULL, &out));
    EXPECT_TRUE(out.length == 5 && memcmp(value, "alpha", 5) == 0);
    EXPECT_OK(tenure_snapshot_get_view(snapshot, "list", KEY("a"), NULL, &view));
    EXPECT_TRUE(view.value_length == 5 && memcmp(view.value, "alpha", 5) == 0);
    EXPECT_OK(tenure_snapshot_version(snapshot, &version));
    EXPECT_OK(tenure_snapshot_free(snapshot));

    /* a batch: all or nothing, the failing index reported */
    EXPECT_OK(tenure_batch_new(store, &batch));
    EXPECT_OK(tenure_batch_add_write(batch, "list", KEY("b"), (const uint8_t *)"beta", 4, NULL));
    EXPECT_OK(tenure_batch_add_write(batch, "list", KEY("c"), (const uint8_t *)"gamma", 5, NULL));
    EXPECT_OK(tenure_batch_commit(batch, &version));
    EXPECT_OK(tenure_batch_free(batch));
    EXPECT_OK(tenure_batch_new(store, &batch));
    EXPECT_OK(tenure_batch_add_write(batch, "list", KEY("d"), (const uint8_t *)"delta", 5, NULL));
    memset(&when, 0, sizeof when);
    when.if_match = "\"0x0000000000000001\"";
    EXPECT_OK(tenure_batch_check(batch, "list", KEY("a"), &when));
    EXPECT_STATUS(TENURE_ERR_CONDITION_NOT_MET, tenure_batch_commit(batch, &version));
    EXPECT_OK(tenure_last_error_batch_index(&failed_index, &has_index));
    EXPECT_TRUE(has_index && failed_index == 1);
    EXPECT_OK(tenure_batch_free(batch));
    EXPECT_STATUS(TENURE_ERR_NOT_FOUND, tenure_store_get_value(store, "list", KEY("d"), NULL, &out));

    /* list with continuation: pages of 2 over a, b, c */
    list.page_size = 2;
    list.include_values = true;
    EXPECT_OK(tenure_store_list_items(store, "list", &list, &page));
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
    list.continuation = continuation;
    list.include_values = false;
    EXPECT_OK(tenure_store_list_items(store, "list", &list, &page));
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
    EXPECT_STATUS(TENURE_ERR_CONTAINER_NOT_FOUND, tenure_store_get_value(store, "list", KEY("a"), NULL, &out));
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
