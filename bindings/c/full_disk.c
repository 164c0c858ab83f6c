/* A full store (tenure_open_options.quota_bytes): writes that add data fail with
 * TENURE_ERR_STORAGE_FULL and change nothing, deletes and compaction go on, writes succeed
 * again once compaction frees space, and close succeeds. A program built with the first,
 * shorter tenure_open_options (struct_size 40, before the space fields) still opens stores. */
#define _POSIX_C_SOURCE 200809L
#include "common.h"

#define VALUE_BYTES 1024
#define MOST_PUTS 100000

static tenure_status put(tenure_store *store, uint32_t index) {
    char key[32];
    uint8_t value[VALUE_BYTES];
    memset(value, (int)(index & 0xff), sizeof value);
    snprintf(key, sizeof key, "item-%08u", (unsigned)index);
    return tenure_store_write(store, "items", KEY(key), value, sizeof value, NULL, NULL);
}

/* Puts from `first` until the store refuses; returns how many it took. */
static uint32_t fill(tenure_store *store, uint32_t first) {
    uint32_t index = first;
    tenure_status status = TENURE_OK;
    while (index < first + MOST_PUTS && (status = put(store, index)) == TENURE_OK) {
        index++;
    }
    EXPECT_STATUS(TENURE_ERR_STORAGE_FULL, status);
    return index - first;
}

static void delete_every_other(tenure_store *store, uint32_t count) {
    char key[32];
    uint32_t index;
    for (index = 0; index < count; index += 2) {
        snprintf(key, sizeof key, "item-%08u", (unsigned)index);
        EXPECT_OK(tenure_delete(store, "items", KEY(key), NULL));
    }
}

static void older_struct_size(const char *path) {
    tenure_open_options options = TENURE_OPEN_OPTIONS_INIT;
    tenure_store *store = NULL;
    options.struct_size = 40;
    EXPECT_OK(tenure_store_open_with(path, &options, &store));
    EXPECT_OK(tenure_store_close(store));
    EXPECT_OK(tenure_store_free(store));
    store = NULL;
    options.struct_size = 39;
    EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_store_open_with(path, &options, &store));
    EXPECT_TRUE(store == NULL);
}

int main(void) {
    char path[1024];
    uint8_t message[1024];
    size_t length = 0;
    tenure_open_options options = TENURE_OPEN_OPTIONS_INIT;
    tenure_store *store = NULL;
    tenure_compaction_report report;
    uint32_t filled;
    uint32_t refilled;
    temporary_store_path(path, sizeof path, "full-disk");
    options.durability = 1;
    options.disable_background_compaction = 1;
    options.segment_size_bytes = 1u << 20;
    options.quota_bytes = 12u << 20;
    options.space_reserve_bytes = 4u << 20;
    EXPECT_OK(tenure_store_open_with(path, &options, &store));
    EXPECT_OK(tenure_container_create(store, "items", false, 0));
    filled = fill(store, 0);
    EXPECT_TRUE(filled > 1000);
    EXPECT_TRUE(strcmp(tenure_status_name(TENURE_ERR_STORAGE_FULL), "StorageFull") == 0);
    EXPECT_TRUE(tenure_status_http(TENURE_ERR_STORAGE_FULL) == 507);
    EXPECT_OK(tenure_last_error_message(message, sizeof message, &length));
    message[length < sizeof message ? length : sizeof message - 1] = 0;
    EXPECT_TRUE(strstr((const char *)message, "StorageFull") != NULL);
    EXPECT_TRUE(strstr((const char *)message, "quota") != NULL);
    delete_every_other(store, filled);
    EXPECT_OK(tenure_store_compact(store, &report));
    refilled = fill(store, MOST_PUTS);
    EXPECT_TRUE(refilled * 4 > filled / 2);
    EXPECT_OK(tenure_store_close(store));
    EXPECT_OK(tenure_store_free(store));
    older_struct_size(path);
    remove_tree(path);
    return finish("full_disk");
}
