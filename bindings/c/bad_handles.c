/* Every exported function that takes a handle, called with every kind of bad handle: NULL,
 * forged values, a freed handle, a closed store, and a live handle of each wrong kind. Each
 * call must return an error status (InvalidArgument), none may crash, and nothing stored may
 * change. String and length arguments get the same treatment for the item functions. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>

#include "common.h"

enum { STORE, SNAPSHOT, BATCH, PAGE, ITEM, CURSOR, KINDS };

static void *live[KINDS];
static void *freed[KINDS];
static void *closed_store;

/* The bad values for a handle of `kind`; returns how many. */
static int bad_handles(int kind, void **out) {
    int count = 0;
    int other;
    out[count++] = NULL;
    out[count++] = (void *)(uintptr_t)1;
    out[count++] = (void *)(uintptr_t)0x12345;
    out[count++] = (void *)(uintptr_t)UINTPTR_MAX;
    out[count++] = (void *)((uintptr_t)UINTPTR_MAX - 1);
    out[count++] = (void *)((uintptr_t)1 << 40);
    out[count++] = freed[kind];
    out[count++] = closed_store; /* closed (store kind) or the wrong kind */
    for (other = 0; other < KINDS; other++) {
        if (other != kind) {
            out[count++] = live[other];
        }
    }
    return count;
}

#define EACH_BAD(kind, type, call)                                                         \
    do {                                                                                   \
        void *values_[16];                                                                 \
        int count_ = bad_handles(kind, values_);                                           \
        int index_;                                                                        \
        for (index_ = 0; index_ < count_; index_++) {                                      \
            type h = (type)values_[index_];                                                \
            EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, call);                              \
        }                                                                                  \
    } while (0)

static const char bad_utf8[] = {(char)0xc3, (char)0x28, 0};

int main(void) {
    char path[1024];
    char other_path[1024];
    tenure_store *store;
    tenure_store *scratch;
    tenure_snapshot *snapshot = NULL;
    tenure_batch *batch = NULL;
    tenure_page *page = NULL;
    tenure_item *item = NULL;
    tenure_cursor *cursor = NULL;
    tenure_item_info info;
    tenure_lease lease;
    tenure_lease_info lease_info;
    tenure_change change;
    tenure_conditions conditions;
    tenure_container_properties container_properties;
    tenure_compaction_report report;
    tenure_metadata_entry entry = {"name", "value"};
    tenure_write_properties properties = {"text/plain", &entry, 1};
    char holder[TENURE_LEASE_HOLDER_MAX];
    char etag[TENURE_ETAG_SIZE];
    char handle_text[TENURE_LOCK_HANDLE_SIZE];
    char long_name[400];
    uint8_t buffer[64];
    const uint8_t *view = NULL;
    size_t length = 0;
    uint64_t number = 0;
    uint64_t version_before = 0;
    uint64_t version_after = 0;
    bool flag = false;
    const uint8_t key[3] = {'k', 'e', 'y'};
    const char *bad_names[4];
    size_t bad_key_lengths[3] = {0, 1025, SIZE_MAX};
    int index;

    memset(long_name, 'n', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    bad_names[0] = NULL;
    bad_names[1] = bad_utf8;
    bad_names[2] = "";
    bad_names[3] = long_name;

    temporary_store_path(path, sizeof path, "handles");
    temporary_store_path(other_path, sizeof other_path, "handles-closed");
    store = open_store(path);
    EXPECT_OK(tenure_container_create(store, "items", false, 0));
    EXPECT_OK(tenure_put(store, "items", key, 3, (const uint8_t *)"keep", 4, NULL, etag));

    /* live handles of every kind */
    EXPECT_OK(tenure_snapshot_open(store, &snapshot));
    EXPECT_OK(tenure_batch_new(store, &batch));
    EXPECT_OK(tenure_list(store, "items", NULL, 0, 10, NULL, false, &page));
    EXPECT_OK(tenure_get_item(store, "items", key, 3, NULL, &item));
    EXPECT_OK(tenure_cursor_open(store, 0, NULL, false, &cursor));
    live[STORE] = store;
    live[SNAPSHOT] = snapshot;
    live[BATCH] = batch;
    live[PAGE] = page;
    live[ITEM] = item;
    live[CURSOR] = cursor;

    /* freed handles of every kind */
    {
        tenure_snapshot *s = NULL;
        tenure_batch *b = NULL;
        tenure_page *p = NULL;
        tenure_item *i = NULL;
        tenure_cursor *c = NULL;
        scratch = open_store(other_path);
        EXPECT_OK(tenure_snapshot_open(store, &s));
        EXPECT_OK(tenure_batch_new(store, &b));
        EXPECT_OK(tenure_list(store, "items", NULL, 0, 10, NULL, false, &p));
        EXPECT_OK(tenure_get_item(store, "items", key, 3, NULL, &i));
        EXPECT_OK(tenure_cursor_open(store, 0, NULL, false, &c));
        EXPECT_OK(tenure_store_free(scratch));
        EXPECT_OK(tenure_snapshot_free(s));
        EXPECT_OK(tenure_batch_free(b));
        EXPECT_OK(tenure_page_free(p));
        EXPECT_OK(tenure_item_free(i));
        EXPECT_OK(tenure_cursor_free(c));
        freed[STORE] = scratch;
        freed[SNAPSHOT] = s;
        freed[BATCH] = b;
        freed[PAGE] = p;
        freed[ITEM] = i;
        freed[CURSOR] = c;
    }
    scratch = open_store(other_path);
    EXPECT_OK(tenure_store_close(scratch));
    closed_store = scratch;
    EXPECT_OK(tenure_store_version(store, &version_before));

    /* ---- store functions ---- */
    EACH_BAD(STORE, tenure_store *, tenure_store_close(h));
    EACH_BAD(STORE, tenure_store *, tenure_store_flush(h));
    EACH_BAD(STORE, tenure_store *, tenure_store_checkpoint(h, &flag));
    EACH_BAD(STORE, tenure_store *, tenure_store_version(h, &number));
    EACH_BAD(STORE, tenure_store *, tenure_container_create(h, "fresh", false, 0));
    EACH_BAD(STORE, tenure_store *, tenure_container_delete(h, "items", NULL));
    EACH_BAD(STORE, tenure_store *, tenure_put(h, "items", key, 3, (const uint8_t *)"v", 1, NULL, etag));
    EACH_BAD(STORE, tenure_store *, tenure_create(h, "items", (const uint8_t *)"new", 3, (const uint8_t *)"v", 1, NULL, etag));
    EACH_BAD(STORE, tenure_store *, tenure_replace(h, "items", key, 3, (const uint8_t *)"v", 1, NULL, etag));
    EACH_BAD(STORE, tenure_store *, tenure_write(h, TENURE_WRITE_PUT, "items", key, 3, (const uint8_t *)"v", 1, &properties, NULL, etag));
    EACH_BAD(STORE, tenure_store *, tenure_write(h, TENURE_WRITE_CREATE, "items", (const uint8_t *)"new", 3, (const uint8_t *)"v", 1, &properties, NULL, etag));
    EACH_BAD(STORE, tenure_store *, tenure_write(h, TENURE_WRITE_REPLACE, "items", key, 3, (const uint8_t *)"v", 1, &properties, NULL, NULL));
    EACH_BAD(STORE, tenure_store *, tenure_delete(h, "items", key, 3, NULL));
    EACH_BAD(STORE, tenure_store *, tenure_get(h, "items", key, 3, NULL, buffer, sizeof buffer, &length, &info));
    EACH_BAD(STORE, tenure_store *, tenure_get_properties(h, "items", key, 3, NULL, &info));
    EACH_BAD(STORE, tenure_store *, tenure_get_item(h, "items", key, 3, NULL, &item));
    EACH_BAD(STORE, tenure_store *, tenure_list(h, "items", NULL, 0, 10, NULL, false, &page));
    EACH_BAD(STORE, tenure_store *, tenure_snapshot_open(h, &snapshot));
    EACH_BAD(STORE, tenure_store *, tenure_batch_new(h, &batch));
    EACH_BAD(STORE, tenure_store *, tenure_lease_acquire(h, "items", key, 3, 15, NULL, &lease));
    EACH_BAD(STORE, tenure_store *, tenure_lease_acquire_wait(h, "items", key, 3, 15, NULL, 0, &lease));
    EACH_BAD(STORE, tenure_store *, tenure_lease_renew(h, "items", key, 3, "3f2504e0-4f89-11d3-9a0c-0305e82c3301", &lease));
    EACH_BAD(STORE, tenure_store *, tenure_lease_change(h, "items", key, 3, "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "3f2504e0-4f89-11d3-9a0c-0305e82c3302", &lease));
    EACH_BAD(STORE, tenure_store *, tenure_lease_release(h, "items", key, 3, "3f2504e0-4f89-11d3-9a0c-0305e82c3301"));
    EACH_BAD(STORE, tenure_store *, tenure_lease_break(h, "items", key, 3, 0, &number));
    EACH_BAD(STORE, tenure_store *, tenure_lease_get_info(h, "items", key, 3, &lease_info));
    EACH_BAD(STORE, tenure_store *, tenure_lease_acquire_with_holder(h, "items", key, 3, 15, NULL, "w", 0, &lease));
    EACH_BAD(STORE, tenure_store *, tenure_lease_acquire_with_holder(h, "items", key, 3, -1, NULL, "w", 10, &lease));
    EACH_BAD(STORE, tenure_store *, tenure_lease_get_info_with_holder(h, "items", key, 3, &lease_info, (uint8_t *)holder, sizeof holder, &length, &flag));
    EACH_BAD(STORE, tenure_store *, tenure_lease_get_info_with_holder(h, "items", key, 3, &lease_info, NULL, 0, &length, &flag));
    EACH_BAD(STORE, tenure_store *, tenure_get_and_lock(h, "items", key, 3, 1000, false, handle_text, NULL));
    EACH_BAD(STORE, tenure_store *, tenure_put_and_unlock(h, "items", key, 3, (const uint8_t *)"v", 1, "0123456789abcdef0123456789abcdef", false, 0, NULL));
    EACH_BAD(STORE, tenure_store *, tenure_unlock(h, "items", key, 3, "0123456789abcdef0123456789abcdef", false, 0));
    EACH_BAD(STORE, tenure_store *, tenure_cursor_open(h, 0, NULL, false, &cursor));
    EACH_BAD(STORE, tenure_store *, tenure_store_wait_for_changes(h, 0, 0, &flag));
    EACH_BAD(STORE, tenure_store *, tenure_store_compact(h, &report));
    /* The same handles with no report to fill: still refused for the handle. */
    EACH_BAD(STORE, tenure_store *, tenure_store_compact(h, NULL));
    EACH_BAD(STORE, tenure_store *, tenure_container_get_properties(h, "items", &container_properties, NULL, 0, NULL));
    EACH_BAD(STORE, tenure_store *, tenure_container_set_metadata(h, "items", &entry, 1, NULL, etag));
    EACH_BAD(STORE, tenure_store *, tenure_list_containers(h, buffer, sizeof buffer, &length, &length));
    EACH_BAD(STORE, tenure_store *, tenure_set_properties(h, "items", key, 3, "text/plain", &entry, 1, NULL, etag));
    EACH_BAD(STORE, tenure_store *, tenure_set_metadata(h, "items", key, 3, &entry, 1, NULL, etag));
    EACH_BAD(STORE, tenure_store *, tenure_get_if_newer(h, "items", key, 3, 0, buffer, sizeof buffer, &length, &info, &flag));
    EACH_BAD(STORE, tenure_store *, tenure_container_lease_acquire(h, "items", 15, NULL, &lease));
    EACH_BAD(STORE, tenure_store *, tenure_container_lease_renew(h, "items", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", &lease));
    EACH_BAD(STORE, tenure_store *, tenure_container_lease_change(h, "items", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "3f2504e0-4f89-11d3-9a0c-0305e82c3302", &lease));
    EACH_BAD(STORE, tenure_store *, tenure_container_lease_release(h, "items", "3f2504e0-4f89-11d3-9a0c-0305e82c3301"));
    EACH_BAD(STORE, tenure_store *, tenure_container_lease_break(h, "items", 0, &number));
    EACH_BAD(STORE, tenure_store *, tenure_container_lease_get_info(h, "items", &lease_info));
    EACH_BAD(STORE, tenure_store *, tenure_container_lease_acquire_with_holder(h, "items", 15, NULL, "w", &lease));
    EACH_BAD(STORE, tenure_store *, tenure_container_lease_acquire_with_holder(h, "items", -1, NULL, "w", &lease));
    EACH_BAD(STORE, tenure_store *, tenure_container_lease_get_info_with_holder(h, "items", &lease_info, (uint8_t *)holder, sizeof holder, &length, &flag));
    EACH_BAD(STORE, tenure_store *, tenure_container_lease_get_info_with_holder(h, "items", &lease_info, NULL, 0, &length, &flag));

    /* ---- snapshot, batch, page, item, cursor functions ---- */
    EACH_BAD(SNAPSHOT, tenure_snapshot *, tenure_snapshot_version(h, &number));
    EACH_BAD(SNAPSHOT, tenure_snapshot *, tenure_snapshot_get(h, "items", key, 3, NULL, buffer, sizeof buffer, &length, &info));
    EACH_BAD(SNAPSHOT, tenure_snapshot *, tenure_snapshot_list(h, "items", NULL, 0, 10, NULL, false, &page));
    EACH_BAD(BATCH, tenure_batch *, tenure_batch_put(h, "items", key, 3, (const uint8_t *)"v", 1, NULL));
    EACH_BAD(BATCH, tenure_batch *, tenure_batch_create(h, "items", key, 3, (const uint8_t *)"v", 1, NULL));
    EACH_BAD(BATCH, tenure_batch *, tenure_batch_replace(h, "items", key, 3, (const uint8_t *)"v", 1, NULL));
    EACH_BAD(BATCH, tenure_batch *, tenure_batch_write(h, TENURE_WRITE_PUT, "items", key, 3, (const uint8_t *)"v", 1, &properties, NULL));
    EACH_BAD(BATCH, tenure_batch *, tenure_batch_write(h, TENURE_WRITE_CREATE, "items", key, 3, (const uint8_t *)"v", 1, &properties, NULL));
    EACH_BAD(BATCH, tenure_batch *, tenure_batch_write(h, TENURE_WRITE_REPLACE, "items", key, 3, (const uint8_t *)"v", 1, &properties, NULL));
    EACH_BAD(BATCH, tenure_batch *, tenure_batch_delete(h, "items", key, 3, NULL));
    EACH_BAD(BATCH, tenure_batch *, tenure_batch_check(h, "items", key, 3, NULL));
    EACH_BAD(BATCH, tenure_batch *, tenure_batch_commit(h, &number));
    EACH_BAD(PAGE, tenure_page *, tenure_page_count(h, &length));
    EACH_BAD(PAGE, tenure_page *, tenure_page_key(h, 0, buffer, sizeof buffer, &length));
    EACH_BAD(PAGE, tenure_page *, tenure_page_value(h, 0, buffer, sizeof buffer, &length));
    EACH_BAD(PAGE, tenure_page *, tenure_page_item_info(h, 0, &info));
    EACH_BAD(PAGE, tenure_page *, tenure_page_continuation(h, (char *)buffer, sizeof buffer, &length, &flag));
    EACH_BAD(ITEM, tenure_item *, tenure_item_get_info(h, &info));
    EACH_BAD(ITEM, tenure_item *, tenure_item_value(h, buffer, sizeof buffer, &length));
    EACH_BAD(ITEM, tenure_item *, tenure_item_value_view(h, &view, &length));
    EACH_BAD(ITEM, tenure_item *, tenure_item_metadata(h, buffer, sizeof buffer, &length));
    EACH_BAD(ITEM, tenure_item *, tenure_item_content_type(h, buffer, sizeof buffer, &length));
    EACH_BAD(CURSOR, tenure_cursor *, tenure_cursor_next(h, &change, &flag));
    EACH_BAD(CURSOR, tenure_cursor *, tenure_cursor_key(h, buffer, sizeof buffer, &length));
    EACH_BAD(CURSOR, tenure_cursor *, tenure_cursor_value(h, buffer, sizeof buffer, &length));
    EACH_BAD(CURSOR, tenure_cursor *, tenure_cursor_container(h, buffer, sizeof buffer, &length));

    /* ---- frees: every bad value except NULL (which is fine) fails ---- */
    {
        void *values[16];
        int count;
        int kind;
        for (kind = 0; kind < KINDS; kind++) {
            count = bad_handles(kind, values);
            for (index = 1; index < count; index++) {
                tenure_status status = TENURE_OK;
                if (kind == STORE && values[index] == closed_store) {
                    continue; /* a closed store's handle is still live: freeing it is fine */
                }
                switch (kind) {
                case STORE: status = tenure_store_free((tenure_store *)values[index]); break;
                case SNAPSHOT: status = tenure_snapshot_free((tenure_snapshot *)values[index]); break;
                case BATCH: status = tenure_batch_free((tenure_batch *)values[index]); break;
                case PAGE: status = tenure_page_free((tenure_page *)values[index]); break;
                case ITEM: status = tenure_item_free((tenure_item *)values[index]); break;
                default: status = tenure_cursor_free((tenure_cursor *)values[index]); break;
                }
                EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, status);
            }
        }
    }

    /* ---- names and keys of the item functions ---- */
    for (index = 0; index < 4; index++) {
        const char *name = bad_names[index];
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_put(store, name, key, 3, (const uint8_t *)"v", 1, NULL, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_create(store, name, key, 3, (const uint8_t *)"v", 1, NULL, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_replace(store, name, key, 3, (const uint8_t *)"v", 1, NULL, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_delete(store, name, key, 3, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_get(store, name, key, 3, NULL, buffer, sizeof buffer, &length, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_get_properties(store, name, key, 3, NULL, &info));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_container_create(store, name, false, 0));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_container_delete(store, name, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_lease_acquire(store, name, key, 3, 15, NULL, &lease));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_lease_get_info(store, name, key, 3, &lease_info));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_get_and_lock(store, name, key, 3, 1000, false, handle_text, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_list(store, name, NULL, 0, 10, NULL, false, &page));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_batch_put(batch, name, key, 3, (const uint8_t *)"v", 1, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_snapshot_get(snapshot, name, key, 3, NULL, buffer, sizeof buffer, &length, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_snapshot_list(snapshot, name, NULL, 0, 10, NULL, false, &page));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_container_get_properties(store, name, &container_properties, NULL, 0, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_container_set_metadata(store, name, &entry, 1, NULL, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_set_properties(store, name, key, 3, NULL, &entry, 1, NULL, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_set_metadata(store, name, key, 3, &entry, 1, NULL, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_get_if_newer(store, name, key, 3, 0, buffer, sizeof buffer, &length, NULL, &flag));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_container_lease_acquire(store, name, 15, NULL, &lease));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_container_lease_renew(store, name, "3f2504e0-4f89-11d3-9a0c-0305e82c3301", &lease));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_container_lease_change(store, name, "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "3f2504e0-4f89-11d3-9a0c-0305e82c3302", &lease));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_container_lease_release(store, name, "3f2504e0-4f89-11d3-9a0c-0305e82c3301"));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_container_lease_break(store, name, 0, &number));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_container_lease_get_info(store, name, &lease_info));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_write(store, TENURE_WRITE_PUT, name, key, 3, (const uint8_t *)"v", 1, &properties, NULL, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_write(store, TENURE_WRITE_CREATE, name, key, 3, (const uint8_t *)"v", 1, &properties, NULL, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_write(store, TENURE_WRITE_REPLACE, name, key, 3, (const uint8_t *)"v", 1, &properties, NULL, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_batch_write(batch, TENURE_WRITE_PUT, name, key, 3, (const uint8_t *)"v", 1, &properties, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_lease_acquire_with_holder(store, name, key, 3, 15, NULL, "w", 0, &lease));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_lease_get_info_with_holder(store, name, key, 3, &lease_info, (uint8_t *)holder, sizeof holder, &length, &flag));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_container_lease_acquire_with_holder(store, name, 15, NULL, "w", &lease));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_container_lease_get_info_with_holder(store, name, &lease_info, (uint8_t *)holder, sizeof holder, &length, &flag));
        /* the same strings as content type, metadata name or value, and holder */
        if (name != NULL && name[0] != '\0' && name != long_name) {
            tenure_metadata_entry bad_entry;
            tenure_write_properties bad = properties;
            bad.content_type = name;
            EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_write(store, TENURE_WRITE_PUT, "items", key, 3, (const uint8_t *)"v", 1, &bad, NULL, NULL));
            EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_batch_write(batch, TENURE_WRITE_PUT, "items", key, 3, (const uint8_t *)"v", 1, &bad, NULL));
            bad = properties;
            bad.metadata = &bad_entry;
            bad_entry.name = name;
            bad_entry.value = "v";
            EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_write(store, TENURE_WRITE_PUT, "items", key, 3, (const uint8_t *)"v", 1, &bad, NULL, NULL));
            EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_batch_write(batch, TENURE_WRITE_PUT, "items", key, 3, (const uint8_t *)"v", 1, &bad, NULL));
            bad_entry.name = "n";
            bad_entry.value = name;
            EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_write(store, TENURE_WRITE_PUT, "items", key, 3, (const uint8_t *)"v", 1, &bad, NULL, NULL));
            EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_batch_write(batch, TENURE_WRITE_PUT, "items", key, 3, (const uint8_t *)"v", 1, &bad, NULL));
            EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_lease_acquire_with_holder(store, "items", key, 3, 15, NULL, name, 0, &lease));
            EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_container_lease_acquire_with_holder(store, "items", 15, NULL, name, &lease));
        }
    }
    for (index = 0; index < 3; index++) {
        size_t bad = bad_key_lengths[index];
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_put(store, "items", key, bad, (const uint8_t *)"v", 1, NULL, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_create(store, "items", key, bad, (const uint8_t *)"v", 1, NULL, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_replace(store, "items", key, bad, (const uint8_t *)"v", 1, NULL, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_delete(store, "items", key, bad, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_get(store, "items", key, bad, NULL, buffer, sizeof buffer, &length, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_get_item(store, "items", key, bad, NULL, &item));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_lease_acquire(store, "items", key, bad, 15, NULL, &lease));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_lease_break(store, "items", key, bad, 0, &number));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_get_and_lock(store, "items", key, bad, 1000, false, handle_text, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_unlock(store, "items", key, bad, "0123456789abcdef0123456789abcdef", false, 0));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_batch_put(batch, "items", key, bad, (const uint8_t *)"v", 1, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_batch_delete(batch, "items", key, bad, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_snapshot_get(snapshot, "items", key, bad, NULL, buffer, sizeof buffer, &length, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_set_properties(store, "items", key, bad, NULL, &entry, 1, NULL, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_set_metadata(store, "items", key, bad, &entry, 1, NULL, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_get_if_newer(store, "items", key, bad, 0, buffer, sizeof buffer, &length, NULL, &flag));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_write(store, TENURE_WRITE_PUT, "items", key, bad, (const uint8_t *)"v", 1, &properties, NULL, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_write(store, TENURE_WRITE_REPLACE, "items", key, bad, (const uint8_t *)"v", 1, &properties, NULL, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_batch_write(batch, TENURE_WRITE_CREATE, "items", key, bad, (const uint8_t *)"v", 1, &properties, NULL));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_lease_acquire_with_holder(store, "items", key, bad, 15, NULL, "w", 0, &lease));
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_lease_get_info_with_holder(store, "items", key, bad, &lease_info, (uint8_t *)holder, sizeof holder, &length, &flag));
    }
    /* conditions with a bad string in each field */
    {
        const char *bad_texts[3];
        int field;
        bad_texts[0] = bad_utf8;
        bad_texts[1] = "";
        bad_texts[2] = "\"in\"side\"";
        for (field = 0; field < 4; field++) {
            for (index = 0; index < 3; index++) {
                memset(&conditions, 0, sizeof conditions);
                switch (field) {
                case 0: conditions.if_match = bad_texts[index]; break;
                case 1: conditions.if_none_match = bad_texts[index]; break;
                case 2: conditions.lease_id = bad_texts[index]; break;
                default: conditions.lock_handle = bad_texts[index]; break;
                }
                EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_put(store, "items", key, 3, (const uint8_t *)"v", 1, &conditions, NULL));
                EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_delete(store, "items", key, 3, &conditions));
                EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_batch_put(batch, "items", key, 3, (const uint8_t *)"v", 1, &conditions));
                EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_set_metadata(store, "items", key, 3, &entry, 1, &conditions, NULL));
                EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_set_properties(store, "items", key, 3, NULL, &entry, 1, &conditions, NULL));
                EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_container_set_metadata(store, "items", &entry, 1, &conditions, NULL));
                EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_write(store, TENURE_WRITE_PUT, "items", key, 3, (const uint8_t *)"v", 1, &properties, &conditions, NULL));
                EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_batch_write(batch, TENURE_WRITE_PUT, "items", key, 3, (const uint8_t *)"v", 1, &properties, &conditions));
            }
        }
    }

    /* nothing changed */
    EXPECT_OK(tenure_store_version(store, &version_after));
    EXPECT_TRUE(version_before == version_after);
    EXPECT_OK(tenure_get(store, "items", key, 3, NULL, buffer, sizeof buffer, &length, &info));
    EXPECT_TRUE(length == 4 && memcmp(buffer, "keep", 4) == 0 && strcmp(info.etag, etag) == 0);

    EXPECT_OK(tenure_snapshot_free(snapshot));
    EXPECT_OK(tenure_batch_free(batch));
    EXPECT_OK(tenure_page_free(page));
    EXPECT_OK(tenure_item_free(item));
    EXPECT_OK(tenure_cursor_free(cursor));
    EXPECT_OK(tenure_store_free(closed_store));
    EXPECT_OK(tenure_store_close(store));
    EXPECT_OK(tenure_store_free(store));
    remove_tree(path);
    remove_tree(other_path);
    return finish("bad_handles");
}
