/* Bad inputs at the C boundary: each returns an error status, none crashes, nothing stored
 * changes (the store's version and the item are the same before and after). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>

#include "common.h"

#define BAD(call)                                                                          \
    do {                                                                                   \
        tenure_status status_ = (call);                                                    \
        checks++;                                                                          \
        if (status_ == TENURE_OK || status_ == TENURE_ERR_PANIC) {                         \
            fprintf(stderr, "%s:%d: %s\n    accepted (or panicked: %u)\n", __FILE__,        \
                    __LINE__, #call, status_);                                             \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)

#define INVALID(call) EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, call)

static const char bad_utf8[] = {(char)0xff, (char)0xfe, 'x', 0};

static void conditions_zero(tenure_conditions *conditions) {
    memset(conditions, 0, sizeof *conditions);
}

int main(void) {
    char path[1024];
    char other_path[1024];
    tenure_store *store;
    tenure_store *closed;
    tenure_store *ignored = NULL;
    tenure_snapshot *snapshot = NULL;
    tenure_batch *batch = NULL;
    tenure_page *page = NULL;
    tenure_cursor *cursor = NULL;
    tenure_item *item = NULL;
    tenure_store_options options;
    tenure_conditions conditions;
    tenure_item_info info;
    tenure_lease lease;
    tenure_lease_info lease_info;
    tenure_change change;
    tenure_container_properties container_properties;
    tenure_compaction_report report;
    tenure_metadata_entry entries[3];
    static char huge_value[9000];
    char etag[TENURE_ETAG_SIZE];
    char handle[TENURE_LOCK_HANDLE_SIZE];
    uint8_t value[64];
    uint8_t small[1];
    size_t length = 0;
    size_t count = 0;
    uint64_t version_before = 0;
    uint64_t version_after = 0;
    uint64_t number = 0;
    bool flag = false;
    const uint8_t key[4] = {'k', 'e', 'y', '1'};

    temporary_store_path(path, sizeof path, "bad");
    temporary_store_path(other_path, sizeof other_path, "bad-closed");
    store = open_store(path);
    EXPECT_OK(tenure_container_create(store, "items", false, 0));
    EXPECT_OK(tenure_put(store, "items", key, 4, (const uint8_t *)"keep", 4, NULL, etag));
    EXPECT_OK(tenure_snapshot_open(store, &snapshot));
    EXPECT_OK(tenure_batch_new(store, &batch));
    EXPECT_OK(tenure_store_version(store, &version_before));

    /* ---- open ---- */
    INVALID(tenure_store_open(NULL, NULL, &ignored));
    INVALID(tenure_store_open(other_path, NULL, NULL));
    INVALID(tenure_store_open("", NULL, &ignored));
    INVALID(tenure_store_open(bad_utf8, NULL, &ignored));
    memset(&options, 0, sizeof options);
    options.durability = 7;
    INVALID(tenure_store_open(other_path, &options, &ignored));
    BAD(tenure_store_open(path, NULL, &ignored)); /* already open: StoreLocked */
    EXPECT_TRUE(ignored == NULL);

    /* ---- put: pointers, lengths, UTF-8 ---- */
    INVALID(tenure_put(NULL, "items", key, 4, (const uint8_t *)"v", 1, NULL, NULL));
    INVALID(tenure_put(store, NULL, key, 4, (const uint8_t *)"v", 1, NULL, NULL));
    INVALID(tenure_put(store, bad_utf8, key, 4, (const uint8_t *)"v", 1, NULL, NULL));
    INVALID(tenure_put(store, "", key, 4, (const uint8_t *)"v", 1, NULL, NULL));
    INVALID(tenure_put(store, "items", NULL, 4, (const uint8_t *)"v", 1, NULL, NULL));
    INVALID(tenure_put(store, "items", key, 0, (const uint8_t *)"v", 1, NULL, NULL));
    INVALID(tenure_put(store, "items", key, 1u << 20, (const uint8_t *)"v", 1, NULL, NULL));
    INVALID(tenure_put(store, "items", key, SIZE_MAX, (const uint8_t *)"v", 1, NULL, NULL));
    INVALID(tenure_put(store, "items", key, 4, NULL, 5, NULL, NULL));
    INVALID(tenure_put(store, "items", key, 4, (const uint8_t *)"v", SIZE_MAX, NULL, NULL));
    INVALID(tenure_put(store, "items", key, 4, (const uint8_t *)"v", ((size_t)64 << 20) + 1, NULL, NULL));
    BAD(tenure_put(store, "missing", key, 4, (const uint8_t *)"v", 1, NULL, NULL));
    conditions_zero(&conditions);
    conditions.if_match = "";
    INVALID(tenure_put(store, "items", key, 4, (const uint8_t *)"v", 1, &conditions, NULL));
    conditions_zero(&conditions);
    conditions.if_match = bad_utf8;
    INVALID(tenure_put(store, "items", key, 4, (const uint8_t *)"v", 1, &conditions, NULL));
    conditions_zero(&conditions);
    conditions.if_none_match = "\"a\"b\"";
    INVALID(tenure_put(store, "items", key, 4, (const uint8_t *)"v", 1, &conditions, NULL));
    conditions_zero(&conditions);
    conditions.lease_id = "not-a-uuid";
    INVALID(tenure_put(store, "items", key, 4, (const uint8_t *)"v", 1, &conditions, NULL));
    conditions_zero(&conditions);
    conditions.lock_handle = "xyz";
    INVALID(tenure_put(store, "items", key, 4, (const uint8_t *)"v", 1, &conditions, NULL));
    conditions_zero(&conditions);
    conditions.has_ttl = true;
    conditions.ttl_seconds = 0;
    INVALID(tenure_put(store, "items", key, 4, (const uint8_t *)"v", 1, &conditions, NULL));
    conditions.ttl_seconds = -5;
    INVALID(tenure_put(store, "items", key, 4, (const uint8_t *)"v", 1, &conditions, NULL));
    conditions.ttl_seconds = INT64_MAX;
    INVALID(tenure_put(store, "items", key, 4, (const uint8_t *)"v", 1, &conditions, NULL));
    conditions_zero(&conditions);
    conditions.has_if_modified_since = true;
    conditions.if_modified_since_us = -1;
    INVALID(tenure_put(store, "items", key, 4, (const uint8_t *)"v", 1, &conditions, NULL));
    conditions_zero(&conditions);
    conditions.has_if_version = true;
    conditions.if_version = 999999;
    EXPECT_STATUS(TENURE_ERR_VERSION_MISMATCH,
                  tenure_put(store, "items", key, 4, (const uint8_t *)"v", 1, &conditions, NULL));
    INVALID(tenure_create(NULL, "items", key, 4, (const uint8_t *)"v", 1, NULL, NULL));
    INVALID(tenure_replace(store, "items", NULL, 4, (const uint8_t *)"v", 1, NULL, NULL));
    INVALID(tenure_delete(store, "items", key, 0, NULL));
    INVALID(tenure_delete(store, NULL, key, 4, NULL));

    /* ---- get ---- */
    INVALID(tenure_get(store, "items", key, 4, NULL, value, sizeof value, NULL, NULL));
    INVALID(tenure_get(store, "items", key, 4, NULL, NULL, 10, &length, NULL));
    INVALID(tenure_get(store, "items", NULL, 4, NULL, value, sizeof value, &length, NULL));
    INVALID(tenure_get(store, bad_utf8, key, 4, NULL, value, sizeof value, &length, NULL));
    conditions_zero(&conditions);
    conditions.lock_handle = "0123456789abcdef0123456789abcdef";
    INVALID(tenure_get(store, "items", key, 4, &conditions, value, sizeof value, &length, &info));
    length = 0;
    EXPECT_STATUS(TENURE_ERR_BUFFER_TOO_SMALL,
                  tenure_get(store, "items", key, 4, NULL, small, sizeof small, &length, &info));
    EXPECT_TRUE(length == 4);
    INVALID(tenure_get_properties(store, "items", key, 4, NULL, NULL));
    INVALID(tenure_get_item(store, "items", key, 4, NULL, NULL));

    /* ---- leases: out-of-range durations and malformed ids ---- */
    INVALID(tenure_lease_acquire(store, "items", key, 4, 10, NULL, &lease));
    INVALID(tenure_lease_acquire(store, "items", key, 4, 61, NULL, &lease));
    INVALID(tenure_lease_acquire(store, "items", key, 4, -2, NULL, &lease));
    INVALID(tenure_lease_acquire(store, "items", key, 4, INT64_MAX, NULL, &lease));
    INVALID(tenure_lease_acquire(store, "items", key, 4, 15, "nope", &lease));
    INVALID(tenure_lease_acquire(store, "items", key, 4, 15, NULL, NULL));
    INVALID(tenure_lease_acquire_wait(store, "items", key, 4, 15, NULL, UINT64_MAX, &lease));
    INVALID(tenure_lease_renew(store, "items", key, 4, NULL, &lease));
    INVALID(tenure_lease_renew(store, "items", key, 4, bad_utf8, &lease));
    INVALID(tenure_lease_change(store, "items", key, 4, "3f2504e0-4f89-11d3-9a0c-0305e82c3301", NULL, &lease));
    INVALID(tenure_lease_release(store, "items", key, 4, "3f2504e0"));
    INVALID(tenure_lease_break(store, "items", key, 4, 61, &number));
    INVALID(tenure_lease_break(store, "items", key, 4, -7, &number));
    INVALID(tenure_lease_break(store, "items", key, 4, 5, NULL));
    INVALID(tenure_lease_get_info(store, "items", key, 4, NULL));
    EXPECT_OK(tenure_lease_get_info(store, "items", key, 4, &lease_info));
    EXPECT_TRUE(lease_info.state == TENURE_LEASE_AVAILABLE);

    /* ---- locks ---- */
    INVALID(tenure_get_and_lock(store, "items", key, 4, 0, false, handle, NULL));
    INVALID(tenure_get_and_lock(store, "items", key, 4, 1000, false, NULL, NULL));
    INVALID(tenure_put_and_unlock(store, "items", key, 4, (const uint8_t *)"v", 1, NULL, false, 0, NULL));
    INVALID(tenure_put_and_unlock(store, "items", key, 4, (const uint8_t *)"v", 1, "zz", false, 0, NULL));
    INVALID(tenure_unlock(store, "items", key, 4, "0123456789abcdef0123456789abcdef", true, 0));
    EXPECT_STATUS(TENURE_ERR_OBJECT_NOT_LOCKED,
                  tenure_unlock(store, "items", key, 4, "0123456789abcdef0123456789abcdef", false, 0));

    /* ---- containers ---- */
    INVALID(tenure_container_create(store, NULL, false, 0));
    INVALID(tenure_container_create(store, "", false, 0));
    INVALID(tenure_container_create(store, bad_utf8, false, 0));
    INVALID(tenure_container_create(store, "ttl", true, 0));
    INVALID(tenure_container_create(store, "ttl", true, -1));
    conditions_zero(&conditions);
    conditions.lock_handle = "0123456789abcdef0123456789abcdef";
    INVALID(tenure_container_delete(store, "items", &conditions));
    BAD(tenure_container_delete(store, "absent", NULL));

    /* ---- wrong handle kinds and forged handles ---- */
    INVALID(tenure_put((tenure_store *)snapshot, "items", key, 4, (const uint8_t *)"v", 1, NULL, NULL));
    INVALID(tenure_snapshot_get((const tenure_snapshot *)store, "items", key, 4, NULL, value, sizeof value, &length, NULL));
    INVALID(tenure_batch_commit((tenure_batch *)snapshot, &number));
    INVALID(tenure_page_count((const tenure_page *)batch, &count));
    INVALID(tenure_store_free((tenure_store *)snapshot));
    INVALID(tenure_snapshot_free((tenure_snapshot *)store));
    INVALID(tenure_put((tenure_store *)(uintptr_t)0x12345, "items", key, 4, (const uint8_t *)"v", 1, NULL, NULL));
    INVALID(tenure_item_free((tenure_item *)(uintptr_t)0xdeadbeef));
    INVALID(tenure_cursor_next((tenure_cursor *)(uintptr_t)1, &change, &flag));

    /* ---- item metadata and properties ---- */
    memset(huge_value, 'v', sizeof huge_value - 1);
    entries[0].name = "a";
    entries[0].value = "1";
    entries[1].name = "a";
    entries[1].value = "2";
    entries[2].name = NULL;
    entries[2].value = "x";
    INVALID(tenure_set_metadata(NULL, "items", key, 4, entries, 1, NULL, NULL));
    INVALID(tenure_set_metadata(store, NULL, key, 4, entries, 1, NULL, NULL));
    INVALID(tenure_set_metadata(store, bad_utf8, key, 4, entries, 1, NULL, NULL));
    INVALID(tenure_set_metadata(store, "items", NULL, 4, entries, 1, NULL, NULL));
    INVALID(tenure_set_metadata(store, "items", key, 0, entries, 1, NULL, NULL));
    INVALID(tenure_set_metadata(store, "items", key, SIZE_MAX, entries, 1, NULL, NULL));
    INVALID(tenure_set_metadata(store, "items", key, 4, NULL, 1, NULL, NULL));
    INVALID(tenure_set_metadata(store, "items", key, 4, entries, SIZE_MAX, NULL, NULL));
    INVALID(tenure_set_metadata(store, "items", key, 4, entries, 8193, NULL, NULL));
    INVALID(tenure_set_metadata(store, "items", key, 4, entries, 2, NULL, NULL)); /* name twice */
    INVALID(tenure_set_metadata(store, "items", key, 4, &entries[2], 1, NULL, NULL)); /* NULL name */
    entries[2].name = "";
    INVALID(tenure_set_metadata(store, "items", key, 4, &entries[2], 1, NULL, NULL)); /* empty name */
    entries[2].name = bad_utf8;
    INVALID(tenure_set_metadata(store, "items", key, 4, &entries[2], 1, NULL, NULL));
    entries[2].name = "big";
    entries[2].value = huge_value;
    INVALID(tenure_set_metadata(store, "items", key, 4, &entries[2], 1, NULL, NULL)); /* > 8 KiB */
    entries[2].value = bad_utf8;
    INVALID(tenure_set_metadata(store, "items", key, 4, &entries[2], 1, NULL, NULL));
    entries[2].value = NULL;
    INVALID(tenure_set_metadata(store, "items", key, 4, &entries[2], 1, NULL, NULL));
    conditions_zero(&conditions);
    conditions.if_match = "";
    INVALID(tenure_set_metadata(store, "items", key, 4, entries, 1, &conditions, NULL));
    conditions_zero(&conditions);
    conditions.lease_id = "nope";
    INVALID(tenure_set_metadata(store, "items", key, 4, entries, 1, &conditions, NULL));
    conditions_zero(&conditions);
    conditions.has_if_unmodified_since = true;
    conditions.if_unmodified_since_us = -3;
    INVALID(tenure_set_metadata(store, "items", key, 4, entries, 1, &conditions, NULL));
    conditions_zero(&conditions);
    conditions.if_match = "\"0x00000000000000FF\""; /* stale */
    EXPECT_STATUS(TENURE_ERR_CONDITION_NOT_MET,
                  tenure_set_metadata(store, "items", key, 4, entries, 1, &conditions, NULL));
    EXPECT_OK(tenure_last_error_etag(handle, &flag));
    EXPECT_TRUE(flag && strcmp(handle, etag) == 0);
    conditions_zero(&conditions);
    conditions.lease_id = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"; /* no lease on the item */
    EXPECT_STATUS(TENURE_ERR_LEASE_NOT_PRESENT_WITH_BLOB_OPERATION,
                  tenure_set_metadata(store, "items", key, 4, entries, 1, &conditions, NULL));
    BAD(tenure_set_metadata(store, "missing", key, 4, entries, 1, NULL, NULL));
    BAD(tenure_set_metadata(store, "items", (const uint8_t *)"absent", 6, entries, 1, NULL, NULL));
    INVALID(tenure_set_properties(NULL, "items", key, 4, "text/plain", entries, 1, NULL, NULL));
    INVALID(tenure_set_properties(store, "items", key, 0, "text/plain", entries, 1, NULL, NULL));
    INVALID(tenure_set_properties(store, "items", key, 4, bad_utf8, entries, 1, NULL, NULL));
    INVALID(tenure_set_properties(store, "items", key, 4, huge_value, entries, 1, NULL, NULL)); /* > 1 KiB */
    INVALID(tenure_set_properties(store, "items", key, 4, NULL, NULL, 3, NULL, NULL));
    INVALID(tenure_set_properties(store, "items", key, 4, NULL, entries, 2, NULL, NULL));
    conditions_zero(&conditions);
    conditions.has_ttl = true;
    conditions.ttl_seconds = 0;
    INVALID(tenure_set_properties(store, "items", key, 4, NULL, entries, 1, &conditions, NULL));
    conditions_zero(&conditions);
    conditions.has_if_version = true;
    conditions.if_version = 424242;
    EXPECT_STATUS(TENURE_ERR_VERSION_MISMATCH,
                  tenure_set_properties(store, "items", key, 4, NULL, entries, 1, &conditions, NULL));
    EXPECT_STATUS(TENURE_ERR_VERSION_MISMATCH,
                  tenure_set_metadata(store, "items", key, 4, entries, 1, &conditions, NULL));

    /* ---- get_if_newer ---- */
    INVALID(tenure_get_if_newer(NULL, "items", key, 4, 0, value, sizeof value, &length, &info, &flag));
    INVALID(tenure_get_if_newer(store, NULL, key, 4, 0, value, sizeof value, &length, &info, &flag));
    INVALID(tenure_get_if_newer(store, bad_utf8, key, 4, 0, value, sizeof value, &length, &info, &flag));
    INVALID(tenure_get_if_newer(store, "items", NULL, 4, 0, value, sizeof value, &length, &info, &flag));
    INVALID(tenure_get_if_newer(store, "items", key, 0, 0, value, sizeof value, &length, &info, &flag));
    INVALID(tenure_get_if_newer(store, "items", key, 1025, 0, value, sizeof value, &length, &info, &flag));
    INVALID(tenure_get_if_newer(store, "items", key, 4, 0, NULL, 8, &length, &info, &flag));
    INVALID(tenure_get_if_newer(store, "items", key, 4, 0, value, sizeof value, NULL, &info, &flag));
    INVALID(tenure_get_if_newer(store, "items", key, 4, 0, value, sizeof value, &length, &info, NULL));
    BAD(tenure_get_if_newer(store, "missing", key, 4, 0, value, sizeof value, &length, &info, &flag));
    EXPECT_STATUS(TENURE_ERR_BUFFER_TOO_SMALL,
                  tenure_get_if_newer(store, "items", key, 4, 0, small, sizeof small, &length, &info, &flag));

    /* ---- container properties, metadata, listing ---- */
    INVALID(tenure_container_get_properties(NULL, "items", &container_properties, NULL, 0, NULL));
    INVALID(tenure_container_get_properties(store, NULL, &container_properties, NULL, 0, NULL));
    INVALID(tenure_container_get_properties(store, bad_utf8, &container_properties, NULL, 0, NULL));
    INVALID(tenure_container_get_properties(store, "", &container_properties, NULL, 0, NULL));
    INVALID(tenure_container_get_properties(store, "items", NULL, NULL, 0, NULL));
    INVALID(tenure_container_get_properties(store, "items", &container_properties, NULL, 4, &length));
    INVALID(tenure_container_get_properties(store, "items", &container_properties, value, sizeof value, NULL));
    INVALID(tenure_container_get_properties(store, "items", &container_properties, NULL, 4, NULL));
    BAD(tenure_container_get_properties(store, "missing", &container_properties, NULL, 0, NULL));
    INVALID(tenure_container_set_metadata(NULL, "items", entries, 1, NULL, NULL));
    INVALID(tenure_container_set_metadata(store, NULL, entries, 1, NULL, NULL));
    INVALID(tenure_container_set_metadata(store, bad_utf8, entries, 1, NULL, NULL));
    INVALID(tenure_container_set_metadata(store, "items", NULL, 2, NULL, NULL));
    INVALID(tenure_container_set_metadata(store, "items", entries, SIZE_MAX, NULL, NULL));
    INVALID(tenure_container_set_metadata(store, "items", entries, 2, NULL, NULL));
    INVALID(tenure_container_set_metadata(store, "items", &entries[2], 1, NULL, NULL));
    conditions_zero(&conditions);
    conditions.lock_handle = "0123456789abcdef0123456789abcdef";
    INVALID(tenure_container_set_metadata(store, "items", entries, 1, &conditions, NULL));
    conditions_zero(&conditions);
    conditions.has_ttl = true;
    conditions.ttl_seconds = 60;
    INVALID(tenure_container_set_metadata(store, "items", entries, 1, &conditions, NULL));
    conditions_zero(&conditions);
    conditions.lease_id = bad_utf8;
    INVALID(tenure_container_set_metadata(store, "items", entries, 1, &conditions, NULL));
    conditions_zero(&conditions);
    conditions.if_none_match = "*";
    BAD(tenure_container_set_metadata(store, "items", entries, 1, &conditions, NULL));
    conditions_zero(&conditions);
    conditions.lease_id = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"; /* no lease on the container */
    EXPECT_STATUS(TENURE_ERR_LEASE_NOT_PRESENT_WITH_CONTAINER_OPERATION,
                  tenure_container_set_metadata(store, "items", entries, 1, &conditions, NULL));
    BAD(tenure_container_set_metadata(store, "missing", entries, 1, NULL, NULL));
    INVALID(tenure_list_containers(NULL, value, sizeof value, &length, &count));
    INVALID(tenure_list_containers(store, NULL, 4, &length, &count));
    INVALID(tenure_list_containers(store, value, sizeof value, NULL, &count));
    INVALID(tenure_list_containers(store, value, sizeof value, &length, NULL));
    EXPECT_STATUS(TENURE_ERR_BUFFER_TOO_SMALL, tenure_list_containers(store, small, sizeof small, &length, &count));
    EXPECT_TRUE(length == 6);

    /* ---- container leases: out-of-range durations, malformed ids, states ---- */
    INVALID(tenure_container_lease_acquire(NULL, "items", 15, NULL, &lease));
    INVALID(tenure_container_lease_acquire(store, NULL, 15, NULL, &lease));
    INVALID(tenure_container_lease_acquire(store, bad_utf8, 15, NULL, &lease));
    INVALID(tenure_container_lease_acquire(store, "items", 14, NULL, &lease));
    INVALID(tenure_container_lease_acquire(store, "items", 61, NULL, &lease));
    INVALID(tenure_container_lease_acquire(store, "items", 0, NULL, &lease));
    INVALID(tenure_container_lease_acquire(store, "items", -2, NULL, &lease));
    INVALID(tenure_container_lease_acquire(store, "items", INT64_MIN, NULL, &lease));
    INVALID(tenure_container_lease_acquire(store, "items", 15, "not-a-uuid", &lease));
    INVALID(tenure_container_lease_acquire(store, "items", 15, bad_utf8, &lease));
    INVALID(tenure_container_lease_acquire(store, "items", 15, NULL, NULL));
    BAD(tenure_container_lease_acquire(store, "missing", 15, NULL, &lease));
    INVALID(tenure_container_lease_renew(store, "items", NULL, &lease));
    INVALID(tenure_container_lease_renew(store, "items", "", &lease));
    INVALID(tenure_container_lease_renew(store, "items", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", NULL));
    EXPECT_STATUS(TENURE_ERR_LEASE_ID_MISMATCH_WITH_LEASE_OPERATION,
                  tenure_container_lease_renew(store, "items", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", &lease));
    INVALID(tenure_container_lease_change(store, "items", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", NULL, &lease));
    INVALID(tenure_container_lease_change(store, "items", NULL, "3f2504e0-4f89-11d3-9a0c-0305e82c3301", &lease));
    INVALID(tenure_container_lease_change(store, "items", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "zz", &lease));
    INVALID(tenure_container_lease_change(store, "items", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "3f2504e0-4f89-11d3-9a0c-0305e82c3302", NULL));
    EXPECT_STATUS(TENURE_ERR_LEASE_NOT_PRESENT_WITH_LEASE_OPERATION,
                  tenure_container_lease_change(store, "items", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "3f2504e0-4f89-11d3-9a0c-0305e82c3302", &lease));
    INVALID(tenure_container_lease_release(store, "items", NULL));
    INVALID(tenure_container_lease_release(store, "items", bad_utf8));
    EXPECT_STATUS(TENURE_ERR_LEASE_ID_MISMATCH_WITH_LEASE_OPERATION,
                  tenure_container_lease_release(store, "items", "3f2504e0-4f89-11d3-9a0c-0305e82c3301"));
    INVALID(tenure_container_lease_break(store, "items", 61, &number));
    INVALID(tenure_container_lease_break(store, "items", -2, &number));
    INVALID(tenure_container_lease_break(store, "items", INT64_MAX, &number));
    INVALID(tenure_container_lease_break(store, "items", 0, NULL));
    EXPECT_STATUS(TENURE_ERR_LEASE_NOT_PRESENT_WITH_LEASE_OPERATION,
                  tenure_container_lease_break(store, "items", 0, &number));
    INVALID(tenure_container_lease_get_info(store, "items", NULL));
    INVALID(tenure_container_lease_get_info(store, "", &lease_info));
    BAD(tenure_container_lease_get_info(store, "missing", &lease_info));
    EXPECT_OK(tenure_container_lease_get_info(store, "items", &lease_info));
    EXPECT_TRUE(lease_info.state == TENURE_LEASE_AVAILABLE);

    /* ---- compaction, waiting, snapshot listing ---- */
    INVALID(tenure_store_compact(NULL, &report));
    INVALID(tenure_store_compact(store, NULL));
    INVALID(tenure_store_checkpoint(NULL, &flag));
    INVALID(tenure_store_checkpoint(store, NULL));
    flag = false;
    EXPECT_OK(tenure_store_checkpoint(store, &flag));
    EXPECT_TRUE(flag);
    INVALID(tenure_store_wait_for_changes(NULL, 0, 0, &flag));
    INVALID(tenure_store_wait_for_changes(store, 0, 0, NULL));
    INVALID(tenure_store_wait_for_changes(store, 0, 86400001, &flag));
    INVALID(tenure_store_wait_for_changes(store, 0, UINT64_MAX, &flag));
    INVALID(tenure_snapshot_list(snapshot, "items", NULL, 0, 0, NULL, false, &page));
    INVALID(tenure_snapshot_list(snapshot, "items", NULL, 5, 10, NULL, false, &page));
    INVALID(tenure_snapshot_list(snapshot, "items", key, 2000, 10, NULL, false, &page));
    INVALID(tenure_snapshot_list(snapshot, NULL, NULL, 0, 10, NULL, false, &page));
    INVALID(tenure_snapshot_list(snapshot, "items", NULL, 0, 10, bad_utf8, false, &page));
    INVALID(tenure_snapshot_list(snapshot, "items", NULL, 0, 10, NULL, false, NULL));
    BAD(tenure_snapshot_list(snapshot, "items", NULL, 0, 10, "garbage-continuation", false, &page));
    BAD(tenure_snapshot_list(snapshot, "missing", NULL, 0, 10, NULL, false, &page));
    EXPECT_OK(tenure_snapshot_list(snapshot, "items", NULL, 0, 10, NULL, true, &page));
    EXPECT_OK(tenure_page_count(page, &count));
    EXPECT_TRUE(count == 1);
    EXPECT_OK(tenure_page_free(page));

    /* ---- item handle: metadata and content type ---- */
    EXPECT_OK(tenure_get_item(store, "items", key, 4, NULL, &item));
    INVALID(tenure_item_metadata(item, NULL, 3, &length));
    INVALID(tenure_item_metadata(item, value, sizeof value, NULL));
    INVALID(tenure_item_content_type(item, NULL, 3, &length));
    INVALID(tenure_item_content_type(item, value, sizeof value, NULL));
    EXPECT_OK(tenure_item_free(item));
    INVALID(tenure_item_metadata(item, value, sizeof value, &length));
    INVALID(tenure_item_content_type(item, value, sizeof value, &length));

    /* ---- more of each kind for the new exports: malformed lease ids, periods, timeouts, out
     * pointers and capacities ---- */
    {
        static const char too_long_id[] = "3f2504e0-4f89-11d3-9a0c-0305e82c3301-0305e82c3301";
        const char *bad_ids[8];
        const int64_t bad_periods[6] = {61, 62, -2, -100, INT64_MAX, INT64_MIN};
        const uint64_t bad_timeouts[4] = {86400001, (uint64_t)1 << 40, UINT64_MAX - 1, UINT64_MAX};
        const size_t bad_capacities[4] = {1, 7, 4096, SIZE_MAX};
        int index;
        bad_ids[0] = NULL;
        bad_ids[1] = bad_utf8;
        bad_ids[2] = "";
        bad_ids[3] = "not-a-uuid";
        bad_ids[4] = "3f2504e0";
        bad_ids[5] = too_long_id;
        bad_ids[6] = "zz2504e0-4f89-11d3-9a0c-0305e82c3301";
        bad_ids[7] = "3f2504e0-4f89-11d3-9a0c-0305e82c330";
        for (index = 0; index < 8; index++) {
            INVALID(tenure_container_lease_renew(store, "items", bad_ids[index], &lease));
            INVALID(tenure_container_lease_change(store, "items", bad_ids[index], "3f2504e0-4f89-11d3-9a0c-0305e82c3302", &lease));
            INVALID(tenure_container_lease_change(store, "items", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", bad_ids[index], &lease));
            INVALID(tenure_container_lease_release(store, "items", bad_ids[index]));
            if (bad_ids[index] != NULL) {
                INVALID(tenure_container_lease_acquire(store, "items", -1, bad_ids[index], &lease));
            }
        }
        for (index = 0; index < 6; index++) {
            INVALID(tenure_container_lease_break(store, "items", bad_periods[index], &number));
        }
        for (index = 0; index < 4; index++) {
            INVALID(tenure_store_wait_for_changes(store, 0, bad_timeouts[index], &flag));
            INVALID(tenure_store_wait_for_changes(store, UINT64_MAX, bad_timeouts[index], &flag));
            INVALID(tenure_list_containers(store, NULL, bad_capacities[index], &length, &count));
            INVALID(tenure_container_get_properties(store, "items", &container_properties, NULL, bad_capacities[index], &length));
            INVALID(tenure_container_get_properties(store, "items", &container_properties, NULL, bad_capacities[index], NULL));
        }
        INVALID(tenure_list_containers(store, NULL, 0, NULL, NULL));
        INVALID(tenure_list_containers(store, NULL, 0, &length, NULL));
        INVALID(tenure_list_containers(store, NULL, 0, NULL, &count));
        INVALID(tenure_container_lease_get_info(store, bad_utf8, &lease_info));
        INVALID(tenure_container_lease_get_info(store, NULL, &lease_info));
        INVALID(tenure_container_lease_get_info(store, NULL, NULL));
        INVALID(tenure_container_lease_renew(store, "items", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", NULL));
        INVALID(tenure_container_lease_renew(store, NULL, "3f2504e0-4f89-11d3-9a0c-0305e82c3301", &lease));
        INVALID(tenure_container_lease_release(store, NULL, "3f2504e0-4f89-11d3-9a0c-0305e82c3301"));
        INVALID(tenure_container_lease_break(store, NULL, 0, &number));
        INVALID(tenure_container_lease_break(store, bad_utf8, 0, &number));
        INVALID(tenure_store_compact(store, NULL));
        INVALID(tenure_store_compact((tenure_store *)snapshot, &report));
        INVALID(tenure_store_compact((tenure_store *)(uintptr_t)0x12345, &report));
        INVALID(tenure_store_wait_for_changes((tenure_store *)snapshot, 0, 0, &flag));
        EXPECT_OK(tenure_get_item(store, "items", key, 4, NULL, &item));
        for (index = 0; index < 4; index++) {
            INVALID(tenure_item_metadata(item, NULL, bad_capacities[index], &length));
            INVALID(tenure_item_content_type(item, NULL, bad_capacities[index], &length));
            INVALID(tenure_item_metadata(item, NULL, bad_capacities[index], NULL));
            INVALID(tenure_item_content_type(item, NULL, bad_capacities[index], NULL));
        }
        INVALID(tenure_item_metadata(item, NULL, 0, NULL));
        INVALID(tenure_item_content_type(item, NULL, 0, NULL));
        EXPECT_OK(tenure_item_free(item));
    }

    /* ---- writes with properties: tenure_write and tenure_batch_write ---- */
    {
        tenure_write_properties properties;
        tenure_write_properties bad_properties;
        tenure_metadata_entry good = {"color", "blue"};
        char long_holder[300];
        char holder[TENURE_LEASE_HOLDER_MAX];
        memset(&properties, 0, sizeof properties);
        properties.content_type = "text/plain";
        properties.metadata = &good;
        properties.metadata_count = 1;
#define W(store_, kind_, container_, key_, key_length_, value_, value_length_, properties_,   \
          conditions_)                                                                     \
    tenure_write(store_, kind_, container_, key_, key_length_, value_, value_length_,       \
                 properties_, conditions_, etag)
#define BW(batch_, kind_, container_, key_, key_length_, value_, value_length_, properties_,  \
           conditions_)                                                                    \
    tenure_batch_write(batch_, kind_, container_, key_, key_length_, value_, value_length_, \
                       properties_, conditions_)
        /* handles, names, keys, values, kinds, the properties pointer */
        INVALID(W(NULL, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &properties, NULL));
        INVALID(W((tenure_store *)snapshot, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &properties, NULL));
        INVALID(W((tenure_store *)(uintptr_t)0x12345, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &properties, NULL));
        INVALID(W(store, TENURE_WRITE_PUT, NULL, key, 4, (const uint8_t *)"v", 1, &properties, NULL));
        INVALID(W(store, TENURE_WRITE_PUT, bad_utf8, key, 4, (const uint8_t *)"v", 1, &properties, NULL));
        INVALID(W(store, TENURE_WRITE_PUT, "", key, 4, (const uint8_t *)"v", 1, &properties, NULL));
        INVALID(W(store, TENURE_WRITE_PUT, "items", NULL, 4, (const uint8_t *)"v", 1, &properties, NULL));
        INVALID(W(store, TENURE_WRITE_PUT, "items", key, 0, (const uint8_t *)"v", 1, &properties, NULL));
        INVALID(W(store, TENURE_WRITE_PUT, "items", key, 1025, (const uint8_t *)"v", 1, &properties, NULL));
        INVALID(W(store, TENURE_WRITE_PUT, "items", key, SIZE_MAX, (const uint8_t *)"v", 1, &properties, NULL));
        INVALID(W(store, TENURE_WRITE_PUT, "items", key, 4, NULL, 5, &properties, NULL));
        INVALID(W(store, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", SIZE_MAX, &properties, NULL));
        INVALID(W(store, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", ((size_t)64 << 20) + 1, &properties, NULL));
        INVALID(W(store, 3, "items", key, 4, (const uint8_t *)"v", 1, &properties, NULL));
        INVALID(W(store, UINT32_MAX, "items", key, 4, (const uint8_t *)"v", 1, &properties, NULL));
        INVALID(W(store, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, NULL, NULL));
        BAD(W(store, TENURE_WRITE_PUT, "missing", key, 4, (const uint8_t *)"v", 1, &properties, NULL));
        EXPECT_STATUS(TENURE_ERR_ALREADY_EXISTS,
                      W(store, TENURE_WRITE_CREATE, "items", key, 4, (const uint8_t *)"v", 1, &properties, NULL));
        EXPECT_STATUS(TENURE_ERR_NOT_FOUND,
                      W(store, TENURE_WRITE_REPLACE, "items", (const uint8_t *)"absent", 6, (const uint8_t *)"v", 1, &properties, NULL));
        /* the content type */
        bad_properties = properties;
        bad_properties.content_type = bad_utf8;
        INVALID(W(store, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &bad_properties, NULL));
        bad_properties.content_type = huge_value; /* > 1 KiB */
        INVALID(W(store, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &bad_properties, NULL));
        /* the metadata: pointer, counts, names, values, size */
        bad_properties = properties;
        bad_properties.metadata = NULL;
        INVALID(W(store, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &bad_properties, NULL));
        bad_properties = properties;
        bad_properties.metadata_count = SIZE_MAX;
        INVALID(W(store, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &bad_properties, NULL));
        bad_properties.metadata_count = 8193;
        INVALID(W(store, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &bad_properties, NULL));
        bad_properties.metadata = entries;
        bad_properties.metadata_count = 2; /* the name "a" twice */
        entries[0].name = "a";
        entries[0].value = "1";
        entries[1].name = "a";
        entries[1].value = "2";
        INVALID(W(store, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &bad_properties, NULL));
        bad_properties.metadata = &entries[2];
        bad_properties.metadata_count = 1;
        entries[2].name = NULL;
        entries[2].value = "x";
        INVALID(W(store, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &bad_properties, NULL));
        entries[2].name = "";
        INVALID(W(store, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &bad_properties, NULL));
        entries[2].name = bad_utf8;
        INVALID(W(store, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &bad_properties, NULL));
        entries[2].name = "n";
        entries[2].value = bad_utf8;
        INVALID(W(store, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &bad_properties, NULL));
        entries[2].value = NULL;
        INVALID(W(store, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &bad_properties, NULL));
        entries[2].value = huge_value; /* > 8 KiB of metadata */
        INVALID(W(store, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &bad_properties, NULL));
        /* conditions */
        conditions_zero(&conditions);
        conditions.if_match = bad_utf8;
        INVALID(W(store, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &properties, &conditions));
        conditions_zero(&conditions);
        conditions.lease_id = "nope";
        INVALID(W(store, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &properties, &conditions));
        conditions_zero(&conditions);
        conditions.has_ttl = true;
        conditions.ttl_seconds = 0;
        INVALID(W(store, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &properties, &conditions));
        conditions_zero(&conditions);
        conditions.if_match = "\"0x00000000000000FF\""; /* stale */
        EXPECT_STATUS(TENURE_ERR_CONDITION_NOT_MET,
                      W(store, TENURE_WRITE_REPLACE, "items", key, 4, (const uint8_t *)"v", 1, &properties, &conditions));
        conditions_zero(&conditions);
        conditions.lease_id = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"; /* no lease on the item */
        EXPECT_STATUS(TENURE_ERR_LEASE_NOT_PRESENT_WITH_BLOB_OPERATION,
                      W(store, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &properties, &conditions));

        /* the batch form: rejected when added (the batch is later dropped uncommitted) */
        INVALID(BW(NULL, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &properties, NULL));
        INVALID(BW((tenure_batch *)store, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &properties, NULL));
        INVALID(BW((tenure_batch *)(uintptr_t)0x12345, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &properties, NULL));
        INVALID(BW(batch, TENURE_WRITE_PUT, NULL, key, 4, (const uint8_t *)"v", 1, &properties, NULL));
        INVALID(BW(batch, TENURE_WRITE_PUT, bad_utf8, key, 4, (const uint8_t *)"v", 1, &properties, NULL));
        INVALID(BW(batch, TENURE_WRITE_PUT, "", key, 4, (const uint8_t *)"v", 1, &properties, NULL));
        INVALID(BW(batch, TENURE_WRITE_PUT, "items", NULL, 4, (const uint8_t *)"v", 1, &properties, NULL));
        INVALID(BW(batch, TENURE_WRITE_PUT, "items", key, 0, (const uint8_t *)"v", 1, &properties, NULL));
        INVALID(BW(batch, TENURE_WRITE_PUT, "items", key, 1025, (const uint8_t *)"v", 1, &properties, NULL));
        INVALID(BW(batch, TENURE_WRITE_PUT, "items", key, SIZE_MAX, (const uint8_t *)"v", 1, &properties, NULL));
        INVALID(BW(batch, TENURE_WRITE_PUT, "items", key, 4, NULL, 5, &properties, NULL));
        INVALID(BW(batch, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", SIZE_MAX, &properties, NULL));
        INVALID(BW(batch, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", ((size_t)64 << 20) + 1, &properties, NULL));
        INVALID(BW(batch, 3, "items", key, 4, (const uint8_t *)"v", 1, &properties, NULL));
        INVALID(BW(batch, UINT32_MAX, "items", key, 4, (const uint8_t *)"v", 1, &properties, NULL));
        INVALID(BW(batch, TENURE_WRITE_CREATE, "items", key, 4, (const uint8_t *)"v", 1, NULL, NULL));
        bad_properties = properties;
        bad_properties.content_type = bad_utf8;
        INVALID(BW(batch, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &bad_properties, NULL));
        bad_properties = properties;
        bad_properties.metadata = NULL;
        INVALID(BW(batch, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &bad_properties, NULL));
        bad_properties = properties;
        bad_properties.metadata_count = SIZE_MAX;
        INVALID(BW(batch, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &bad_properties, NULL));
        bad_properties.metadata_count = 8193;
        INVALID(BW(batch, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &bad_properties, NULL));
        bad_properties.metadata = &entries[2];
        bad_properties.metadata_count = 1;
        entries[2].name = NULL;
        entries[2].value = "x";
        INVALID(BW(batch, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &bad_properties, NULL));
        entries[2].name = bad_utf8;
        INVALID(BW(batch, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &bad_properties, NULL));
        entries[2].name = "n";
        entries[2].value = bad_utf8;
        INVALID(BW(batch, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &bad_properties, NULL));
        entries[2].value = NULL;
        INVALID(BW(batch, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &bad_properties, NULL));
        conditions_zero(&conditions);
        conditions.if_none_match = bad_utf8;
        INVALID(BW(batch, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &properties, &conditions));
        conditions_zero(&conditions);
        conditions.lock_handle = "xyz";
        INVALID(BW(batch, TENURE_WRITE_PUT, "items", key, 4, (const uint8_t *)"v", 1, &properties, &conditions));
#undef W
#undef BW

        /* ---- lease holders: acquire with a holder, info with the holder ---- */
        memset(long_holder, 'h', sizeof long_holder - 1);
        long_holder[sizeof long_holder - 1] = '\0';
        INVALID(tenure_lease_acquire_with_holder(NULL, "items", key, 4, 15, NULL, "w", 0, &lease));
        INVALID(tenure_lease_acquire_with_holder((tenure_store *)batch, "items", key, 4, 15, NULL, "w", 0, &lease));
        INVALID(tenure_lease_acquire_with_holder((tenure_store *)(uintptr_t)0x12345, "items", key, 4, 15, NULL, "w", 0, &lease));
        INVALID(tenure_lease_acquire_with_holder(store, NULL, key, 4, 15, NULL, "w", 0, &lease));
        INVALID(tenure_lease_acquire_with_holder(store, bad_utf8, key, 4, 15, NULL, "w", 0, &lease));
        INVALID(tenure_lease_acquire_with_holder(store, "", key, 4, 15, NULL, "w", 0, &lease));
        INVALID(tenure_lease_acquire_with_holder(store, "items", NULL, 4, 15, NULL, "w", 0, &lease));
        INVALID(tenure_lease_acquire_with_holder(store, "items", key, 0, 15, NULL, "w", 0, &lease));
        INVALID(tenure_lease_acquire_with_holder(store, "items", key, 1025, 15, NULL, "w", 0, &lease));
        INVALID(tenure_lease_acquire_with_holder(store, "items", key, SIZE_MAX, 15, NULL, "w", 0, &lease));
        INVALID(tenure_lease_acquire_with_holder(store, "items", key, 4, 10, NULL, "w", 0, &lease));
        INVALID(tenure_lease_acquire_with_holder(store, "items", key, 4, 61, NULL, "w", 0, &lease));
        INVALID(tenure_lease_acquire_with_holder(store, "items", key, 4, -2, NULL, "w", 0, &lease));
        INVALID(tenure_lease_acquire_with_holder(store, "items", key, 4, INT64_MAX, NULL, "w", 0, &lease));
        INVALID(tenure_lease_acquire_with_holder(store, "items", key, 4, 15, "nope", "w", 0, &lease));
        INVALID(tenure_lease_acquire_with_holder(store, "items", key, 4, 15, bad_utf8, "w", 0, &lease));
        INVALID(tenure_lease_acquire_with_holder(store, "items", key, 4, 15, NULL, NULL, 0, &lease));
        INVALID(tenure_lease_acquire_with_holder(store, "items", key, 4, 15, NULL, bad_utf8, 0, &lease));
        INVALID(tenure_lease_acquire_with_holder(store, "items", key, 4, 15, NULL, long_holder, 0, &lease));
        INVALID(tenure_lease_acquire_with_holder(store, "items", key, 4, 15, NULL, huge_value, 0, &lease));
        INVALID(tenure_lease_acquire_with_holder(store, "items", key, 4, 15, NULL, "w", 0, NULL));
        INVALID(tenure_lease_acquire_with_holder(store, "items", key, 4, 15, NULL, "w", 1000, NULL));
        INVALID(tenure_lease_acquire_with_holder(store, "items", key, 4, 15, NULL, "w", UINT64_MAX, &lease));
        INVALID(tenure_lease_acquire_with_holder(store, "items", key, 4, 15, NULL, "w", (uint64_t)24 * 3600 * 1000 + 1, &lease));
        BAD(tenure_lease_acquire_with_holder(store, "missing", key, 4, 15, NULL, "w", 0, &lease));
        BAD(tenure_lease_acquire_with_holder(store, "items", (const uint8_t *)"absent", 6, 15, NULL, "w", 0, &lease));

        INVALID(tenure_container_lease_acquire_with_holder(NULL, "items", 15, NULL, "w", &lease));
        INVALID(tenure_container_lease_acquire_with_holder((tenure_store *)snapshot, "items", 15, NULL, "w", &lease));
        INVALID(tenure_container_lease_acquire_with_holder((tenure_store *)(uintptr_t)1, "items", 15, NULL, "w", &lease));
        INVALID(tenure_container_lease_acquire_with_holder(store, NULL, 15, NULL, "w", &lease));
        INVALID(tenure_container_lease_acquire_with_holder(store, bad_utf8, 15, NULL, "w", &lease));
        INVALID(tenure_container_lease_acquire_with_holder(store, "", 15, NULL, "w", &lease));
        INVALID(tenure_container_lease_acquire_with_holder(store, long_holder, 15, NULL, "w", &lease));
        INVALID(tenure_container_lease_acquire_with_holder(store, "items", 0, NULL, "w", &lease));
        INVALID(tenure_container_lease_acquire_with_holder(store, "items", 14, NULL, "w", &lease));
        INVALID(tenure_container_lease_acquire_with_holder(store, "items", 61, NULL, "w", &lease));
        INVALID(tenure_container_lease_acquire_with_holder(store, "items", -2, NULL, "w", &lease));
        INVALID(tenure_container_lease_acquire_with_holder(store, "items", INT64_MIN, NULL, "w", &lease));
        INVALID(tenure_container_lease_acquire_with_holder(store, "items", INT64_MAX, NULL, "w", &lease));
        INVALID(tenure_container_lease_acquire_with_holder(store, "items", 15, "nope", "w", &lease));
        INVALID(tenure_container_lease_acquire_with_holder(store, "items", 15, "", "w", &lease));
        INVALID(tenure_container_lease_acquire_with_holder(store, "items", 15, bad_utf8, "w", &lease));
        INVALID(tenure_container_lease_acquire_with_holder(store, "items", 15, "3f2504e0", "w", &lease));
        INVALID(tenure_container_lease_acquire_with_holder(store, "items", 15, NULL, NULL, &lease));
        INVALID(tenure_container_lease_acquire_with_holder(store, "items", 15, NULL, bad_utf8, &lease));
        INVALID(tenure_container_lease_acquire_with_holder(store, "items", 15, NULL, long_holder, &lease));
        INVALID(tenure_container_lease_acquire_with_holder(store, "items", 15, NULL, huge_value, &lease));
        INVALID(tenure_container_lease_acquire_with_holder(store, "items", 15, NULL, "w", NULL));
        INVALID(tenure_container_lease_acquire_with_holder(store, "items", -1, NULL, "w", NULL));
        BAD(tenure_container_lease_acquire_with_holder(store, "missing", 15, NULL, "w", &lease));
        BAD(tenure_container_lease_acquire_with_holder(store, "missing", -1, NULL, "w", &lease));

        INVALID(tenure_lease_get_info_with_holder(NULL, "items", key, 4, &lease_info, (uint8_t *)holder, sizeof holder, &length, &flag));
        INVALID(tenure_lease_get_info_with_holder((tenure_store *)batch, "items", key, 4, &lease_info, (uint8_t *)holder, sizeof holder, &length, &flag));
        INVALID(tenure_lease_get_info_with_holder((tenure_store *)(uintptr_t)0x12345, "items", key, 4, &lease_info, (uint8_t *)holder, sizeof holder, &length, &flag));
        INVALID(tenure_lease_get_info_with_holder(store, NULL, key, 4, &lease_info, (uint8_t *)holder, sizeof holder, &length, &flag));
        INVALID(tenure_lease_get_info_with_holder(store, bad_utf8, key, 4, &lease_info, (uint8_t *)holder, sizeof holder, &length, &flag));
        INVALID(tenure_lease_get_info_with_holder(store, "", key, 4, &lease_info, (uint8_t *)holder, sizeof holder, &length, &flag));
        INVALID(tenure_lease_get_info_with_holder(store, "items", NULL, 4, &lease_info, (uint8_t *)holder, sizeof holder, &length, &flag));
        INVALID(tenure_lease_get_info_with_holder(store, "items", key, 0, &lease_info, (uint8_t *)holder, sizeof holder, &length, &flag));
        INVALID(tenure_lease_get_info_with_holder(store, "items", key, 1025, &lease_info, (uint8_t *)holder, sizeof holder, &length, &flag));
        INVALID(tenure_lease_get_info_with_holder(store, "items", key, SIZE_MAX, &lease_info, (uint8_t *)holder, sizeof holder, &length, &flag));
        INVALID(tenure_lease_get_info_with_holder(store, "items", key, 4, NULL, (uint8_t *)holder, sizeof holder, &length, &flag));
        INVALID(tenure_lease_get_info_with_holder(store, "items", key, 4, &lease_info, NULL, 1, &length, &flag));
        INVALID(tenure_lease_get_info_with_holder(store, "items", key, 4, &lease_info, NULL, sizeof holder, &length, &flag));
        INVALID(tenure_lease_get_info_with_holder(store, "items", key, 4, &lease_info, NULL, SIZE_MAX, &length, &flag));
        INVALID(tenure_lease_get_info_with_holder(store, "items", key, 4, &lease_info, (uint8_t *)holder, sizeof holder, NULL, &flag));
        INVALID(tenure_lease_get_info_with_holder(store, "items", key, 4, &lease_info, (uint8_t *)holder, sizeof holder, &length, NULL));
        INVALID(tenure_lease_get_info_with_holder(store, "items", key, 4, NULL, NULL, 0, NULL, NULL));
        INVALID(tenure_lease_get_info_with_holder(store, "items", key, 4, &lease_info, NULL, 0, NULL, &flag));
        INVALID(tenure_lease_get_info_with_holder(store, "items", key, 4, &lease_info, NULL, 0, &length, NULL));
        INVALID(tenure_lease_get_info_with_holder(store, "items", key, 4, NULL, NULL, 0, &length, &flag));
        BAD(tenure_lease_get_info_with_holder(store, "missing", key, 4, &lease_info, (uint8_t *)holder, sizeof holder, &length, &flag));
        BAD(tenure_lease_get_info_with_holder(store, "missing", key, 4, &lease_info, NULL, 0, &length, &flag));
        /* an item without a lease: no holder; a NULL buffer with capacity 0 is fine */
        flag = true;
        length = 99;
        EXPECT_OK(tenure_lease_get_info_with_holder(store, "items", key, 4, &lease_info, NULL, 0, &length, &flag));
        EXPECT_TRUE(lease_info.state == TENURE_LEASE_AVAILABLE && !flag && length == 0);
        EXPECT_STATUS(TENURE_ERR_NOT_FOUND, tenure_lease_get_info_with_holder(store, "items", (const uint8_t *)"absent", 6, &lease_info, (uint8_t *)holder, sizeof holder, &length, &flag));

        INVALID(tenure_container_lease_get_info_with_holder(NULL, "items", &lease_info, (uint8_t *)holder, sizeof holder, &length, &flag));
        INVALID(tenure_container_lease_get_info_with_holder((tenure_store *)snapshot, "items", &lease_info, (uint8_t *)holder, sizeof holder, &length, &flag));
        INVALID(tenure_container_lease_get_info_with_holder((tenure_store *)(uintptr_t)1, "items", &lease_info, (uint8_t *)holder, sizeof holder, &length, &flag));
        INVALID(tenure_container_lease_get_info_with_holder((tenure_store *)(uintptr_t)UINTPTR_MAX, "items", &lease_info, (uint8_t *)holder, sizeof holder, &length, &flag));
        INVALID(tenure_container_lease_get_info_with_holder(store, NULL, &lease_info, (uint8_t *)holder, sizeof holder, &length, &flag));
        INVALID(tenure_container_lease_get_info_with_holder(store, bad_utf8, &lease_info, (uint8_t *)holder, sizeof holder, &length, &flag));
        INVALID(tenure_container_lease_get_info_with_holder(store, "", &lease_info, (uint8_t *)holder, sizeof holder, &length, &flag));
        INVALID(tenure_container_lease_get_info_with_holder(store, long_holder, &lease_info, (uint8_t *)holder, sizeof holder, &length, &flag));
        INVALID(tenure_container_lease_get_info_with_holder(store, "items", NULL, (uint8_t *)holder, sizeof holder, &length, &flag));
        INVALID(tenure_container_lease_get_info_with_holder(store, "items", &lease_info, NULL, 1, &length, &flag));
        INVALID(tenure_container_lease_get_info_with_holder(store, "items", &lease_info, NULL, sizeof holder, &length, &flag));
        INVALID(tenure_container_lease_get_info_with_holder(store, "items", &lease_info, NULL, SIZE_MAX, &length, &flag));
        INVALID(tenure_container_lease_get_info_with_holder(store, "items", &lease_info, (uint8_t *)holder, sizeof holder, NULL, &flag));
        INVALID(tenure_container_lease_get_info_with_holder(store, "items", &lease_info, (uint8_t *)holder, sizeof holder, &length, NULL));
        INVALID(tenure_container_lease_get_info_with_holder(store, "items", NULL, NULL, 0, NULL, NULL));
        INVALID(tenure_container_lease_get_info_with_holder(store, "items", &lease_info, NULL, 0, NULL, &flag));
        INVALID(tenure_container_lease_get_info_with_holder(store, "items", &lease_info, NULL, 0, &length, NULL));
        INVALID(tenure_container_lease_get_info_with_holder(store, "items", NULL, NULL, 0, &length, &flag));
        INVALID(tenure_container_lease_get_info_with_holder(store, bad_utf8, NULL, NULL, 0, NULL, NULL));
        INVALID(tenure_container_lease_get_info_with_holder(NULL, NULL, NULL, NULL, 0, NULL, NULL));
        INVALID(tenure_container_lease_get_info_with_holder(store, "items", NULL, (uint8_t *)holder, 0, &length, &flag));
        INVALID(tenure_container_lease_get_info_with_holder(store, "", NULL, NULL, 0, NULL, NULL));
        INVALID(tenure_container_lease_get_info_with_holder(store, NULL, &lease_info, NULL, 0, &length, &flag));
        BAD(tenure_container_lease_get_info_with_holder(store, "missing", &lease_info, (uint8_t *)holder, sizeof holder, &length, &flag));
        BAD(tenure_container_lease_get_info_with_holder(store, "missing", &lease_info, NULL, 0, &length, &flag));
        flag = true;
        EXPECT_OK(tenure_container_lease_get_info_with_holder(store, "items", &lease_info, NULL, 0, &length, &flag));
        EXPECT_TRUE(lease_info.state == TENURE_LEASE_AVAILABLE && !flag && length == 0);
    }

    /* ---- batches ---- */
    INVALID(tenure_batch_new(store, NULL));
    INVALID(tenure_batch_put(batch, "items", NULL, 4, (const uint8_t *)"v", 1, NULL));
    INVALID(tenure_batch_delete(batch, "items", key, 0, NULL));
    conditions_zero(&conditions);
    conditions.lease_id = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
    INVALID(tenure_batch_check(batch, "items", key, 4, &conditions));
    INVALID(tenure_batch_commit(batch, NULL));
    EXPECT_OK(tenure_batch_put(batch, "items", key, 4, (const uint8_t *)"v", 1, NULL));
    EXPECT_OK(tenure_batch_free(batch)); /* dropped uncommitted: nothing changes */
    INVALID(tenure_batch_put(batch, "items", key, 4, (const uint8_t *)"v", 1, NULL));
    INVALID(tenure_batch_free(batch)); /* double free */

    /* ---- pages and cursors ---- */
    INVALID(tenure_list(store, "items", NULL, 0, 0, NULL, false, &page));
    INVALID(tenure_list(store, "items", NULL, 3, 10, NULL, false, &page));
    INVALID(tenure_list(store, "items", NULL, 0, 10, bad_utf8, false, &page));
    INVALID(tenure_list(store, "items", NULL, 0, 10, NULL, false, NULL));
    BAD(tenure_list(store, "items", NULL, 0, 10, "garbage-continuation", false, &page));
    EXPECT_OK(tenure_list(store, "items", NULL, 0, 10, NULL, false, &page));
    INVALID(tenure_page_key(page, 99, value, sizeof value, &length));
    INVALID(tenure_page_key(page, 0, NULL, 5, &length));
    EXPECT_STATUS(TENURE_ERR_BUFFER_TOO_SMALL, tenure_page_key(page, 0, small, sizeof small, &length));
    INVALID(tenure_page_count(page, NULL));
    EXPECT_OK(tenure_page_free(page));
    INVALID(tenure_page_count(page, &count));
    INVALID(tenure_page_free(page));
    INVALID(tenure_cursor_open(store, 0, bad_utf8, false, &cursor));
    INVALID(tenure_cursor_open(store, 0, NULL, false, NULL));
    EXPECT_OK(tenure_cursor_open(store, 0, NULL, false, &cursor));
    INVALID(tenure_cursor_key(cursor, value, sizeof value, &length)); /* no current change */
    INVALID(tenure_cursor_next(cursor, NULL, &flag));
    EXPECT_OK(tenure_cursor_free(cursor));
    INVALID(tenure_cursor_free(cursor));

    /* ---- items and snapshots after free ---- */
    EXPECT_OK(tenure_get_item(store, "items", key, 4, NULL, &item));
    INVALID(tenure_item_value(item, NULL, 3, &length));
    EXPECT_OK(tenure_item_free(item));
    INVALID(tenure_item_value(item, value, sizeof value, &length));
    INVALID(tenure_item_free(item));
    INVALID(tenure_snapshot_version(snapshot, NULL));
    EXPECT_OK(tenure_snapshot_free(snapshot));
    INVALID(tenure_snapshot_get(snapshot, "items", key, 4, NULL, value, sizeof value, &length, NULL));
    INVALID(tenure_snapshot_free(snapshot));

    /* ---- a closed store ---- */
    closed = open_store(other_path);
    EXPECT_OK(tenure_store_close(closed));
    INVALID(tenure_store_close(closed));
    INVALID(tenure_put(closed, "items", key, 4, (const uint8_t *)"v", 1, NULL, NULL));
    INVALID(tenure_snapshot_open(closed, &snapshot));
    EXPECT_OK(tenure_store_free(closed));
    INVALID(tenure_store_free(closed));
    INVALID(tenure_store_version(closed, &number));

    /* ---- NULL is fine for every free ---- */
    EXPECT_OK(tenure_store_free(NULL));
    EXPECT_OK(tenure_snapshot_free(NULL));
    EXPECT_OK(tenure_batch_free(NULL));
    EXPECT_OK(tenure_page_free(NULL));
    EXPECT_OK(tenure_item_free(NULL));
    EXPECT_OK(tenure_cursor_free(NULL));

    /* ---- status helpers and the last-error API ---- */
    EXPECT_TRUE(strcmp(tenure_status_name(12345), "Unknown") == 0);
    EXPECT_TRUE(tenure_status_http(12345) == 0);
    INVALID(tenure_last_error_message(NULL, 10, &length));
    INVALID(tenure_last_error_message(value, sizeof value, NULL));
    INVALID(tenure_last_error_etag(NULL, &flag));
    INVALID(tenure_last_error_batch_index(&number, NULL));

    /* ---- nothing changed ---- */
    EXPECT_OK(tenure_store_version(store, &version_after));
    EXPECT_TRUE(version_before == version_after);
    EXPECT_OK(tenure_get(store, "items", key, 4, NULL, value, sizeof value, &length, &info));
    EXPECT_TRUE(length == 4 && memcmp(value, "keep", 4) == 0 && strcmp(info.etag, etag) == 0);

    EXPECT_OK(tenure_store_close(store));
    EXPECT_OK(tenure_store_free(store));
    remove_tree(path);
    remove_tree(other_path);
    return finish("bad_inputs");
}
