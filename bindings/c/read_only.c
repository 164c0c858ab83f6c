/* A read-only open (tenure_store_open_with, options.read_only = 1) beside a handle that has the
 * store open for writing: it reads every acknowledged write, also those made after its open,
 * refuses every write with TENURE_ERR_READ_ONLY, and leaves the writer's store as it was. Bad option values are
 * refused by name. */
#define _POSIX_C_SOURCE 200809L
#include "common.h"

static void put(tenure_store *store, const char *key, const char *value) {
    EXPECT_OK(tenure_store_write(store, "items", KEY(key), (const uint8_t *)value, strlen(value),
                                 NULL, NULL));
}

static void reader_beside_the_writer(tenure_store *writer, const char *path) {
    tenure_open_options options = TENURE_OPEN_OPTIONS_INIT;
    tenure_store *reader = NULL;
    uint8_t buffer[32];
    tenure_value_out value;
    options.read_only = 1;
    EXPECT_OK(tenure_store_open_with(path, &options, &reader));
    memset(&value, 0, sizeof value);
    value.buffer = buffer;
    value.capacity = sizeof buffer;
    EXPECT_OK(tenure_store_get_value(reader, "items", KEY("first"), NULL, &value));
    EXPECT_TRUE(value.length == 5 && memcmp(buffer, "one-1", 5) == 0);
    EXPECT_STATUS(TENURE_ERR_READ_ONLY,
                  tenure_store_write(reader, "items", KEY("new"), (const uint8_t *)"v", 1, NULL,
                                     NULL));
    EXPECT_TRUE(strcmp(tenure_status_name(TENURE_ERR_READ_ONLY), "ReadOnly") == 0);
    EXPECT_TRUE(tenure_status_http(TENURE_ERR_READ_ONLY) == 403);
    /* The writer goes on, and the reader follows: a read sees every write committed before
     * it started. */
    EXPECT_STATUS(TENURE_ERR_NOT_FOUND,
                  tenure_store_get_value(reader, "items", KEY("later"), NULL, &value));
    put(writer, "later", "two-2");
    EXPECT_OK(tenure_store_get_value(reader, "items", KEY("later"), NULL, &value));
    EXPECT_TRUE(value.length == 5 && memcmp(buffer, "two-2", 5) == 0);
    EXPECT_OK(tenure_store_close(reader));
    EXPECT_OK(tenure_store_free(reader));
}

static void bad_options(const char *path) {
    tenure_open_options options = TENURE_OPEN_OPTIONS_INIT;
    tenure_store *store = NULL;
    options.read_only = 2;
    EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_store_open_with(path, &options, &store));
    EXPECT_TRUE(store == NULL);
    options.read_only = 0;
    options.durability = 7;
    EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_store_open_with(path, &options, &store));
    options.durability = 0;
    options.struct_size = 0;
    EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_store_open_with(path, &options, &store));
    EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_store_open_with(NULL, NULL, &store));
    EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_store_open_with(path, NULL, NULL));
}

int main(void) {
    char path[1024];
    tenure_open_options options = TENURE_OPEN_OPTIONS_INIT;
    tenure_store *writer = NULL;
    tenure_store *missing = NULL;
    char missing_path[1100];
    temporary_store_path(path, sizeof path, "read-only");
    options.durability = 1;
    options.disable_background_compaction = 1;
    EXPECT_OK(tenure_store_open_with(path, &options, &writer));
    EXPECT_OK(tenure_container_create(writer, "items", false, 0));
    put(writer, "first", "one-1");
    reader_beside_the_writer(writer, path);
    bad_options(path);
    EXPECT_OK(tenure_store_close(writer));
    EXPECT_OK(tenure_store_free(writer));
    /* A read-only open of no store fails and creates nothing. */
    snprintf(missing_path, sizeof missing_path, "%s/no-store-here", path);
    options.read_only = 1;
    EXPECT_STATUS(TENURE_ERR_IO, tenure_store_open_with(missing_path, &options, &missing));
    remove_tree(path);
    return finish("read_only");
}
