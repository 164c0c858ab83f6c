/* Zero-copy reads: a snapshot's view lends bytes from the mapped log until the snapshot is
 * freed — past overwrites, a compaction of its segment, and the store handle's close — and
 * tenure_store_get_with lends them to a callback. Run under valgrind and ASan, a view read past
 * its lender would be an invalid read. */
#define _POSIX_C_SOURCE 200809L

#include "common.h"

#define VALUE_BYTES 4096
#define FILLER_BYTES 2048

static tenure_store *open_small_segments(const char *path) {
    tenure_store_options options;
    tenure_store *store = NULL;
    memset(&options, 0, sizeof options);
    options.durability = 1;
    options.segment_size_bytes = 64 << 10;
    options.disable_background_compaction = true;
    EXPECT_OK(tenure_store_open(path, &options, &store));
    if (store == NULL) {
        exit(2);
    }
    return store;
}

static void fill(uint8_t *bytes, size_t length, uint8_t seed) {
    size_t index;
    for (index = 0; index < length; index++) {
        bytes[index] = (uint8_t)(seed + index * 7u);
    }
}

/* A view taken in a snapshot survives overwrites, a compaction that would remove its segment
 * (deferred while the snapshot lives), and the close of the store handle. */
static void view_past_compaction(const char *path) {
    static uint8_t original[VALUE_BYTES];
    static uint8_t filler[FILLER_BYTES];
    tenure_store *store = open_small_segments(path);
    tenure_snapshot *snapshot = NULL;
    tenure_view view;
    tenure_view empty;
    tenure_value_out copy;
    tenure_compaction_report report;
    tenure_etag written;
    tenure_etag derived;
    char key[32];
    int index;
    fill(original, sizeof original, 3);
    EXPECT_OK(tenure_container_create(store, "items", false, 0));
    EXPECT_OK(tenure_store_write(store, "items", KEY("pinned"), original, sizeof original, NULL, &written));
    EXPECT_OK(tenure_store_write(store, "items", KEY("empty"), NULL, 0, NULL, NULL));
    EXPECT_OK(tenure_snapshot_open(store, &snapshot));
    EXPECT_OK(tenure_snapshot_get_view(snapshot, "items", KEY("pinned"), NULL, &view));
    EXPECT_TRUE(view.value_length == VALUE_BYTES && memcmp(view.value, original, VALUE_BYTES) == 0);
    EXPECT_OK(tenure_etag_from_version(view.version, &derived));
    EXPECT_TRUE(strcmp(derived.text, written.text) == 0);
    EXPECT_OK(tenure_snapshot_get_view(snapshot, "items", KEY("empty"), NULL, &empty));
    EXPECT_TRUE(empty.value != NULL && empty.value_length == 0);
    EXPECT_STATUS(TENURE_ERR_NOT_FOUND,
                  tenure_snapshot_get_view(snapshot, "items", KEY("absent"), NULL, &view));
    /* still the view taken above: a failed call writes nothing */
    EXPECT_TRUE(view.value_length == VALUE_BYTES);

    /* overwrite the item and fill several segments, so its segment is sealed and dead */
    fill(filler, sizeof filler, 11);
    EXPECT_OK(tenure_store_write(store, "items", KEY("pinned"), filler, 16, NULL, NULL));
    for (index = 0; index < 200; index++) {
        snprintf(key, sizeof key, "filler-%03d", index % 20);
        EXPECT_OK(tenure_store_write(store, "items", KEY(key), filler, sizeof filler, NULL, NULL));
    }
    EXPECT_OK(tenure_store_compact(store, &report));
    EXPECT_TRUE(report.deferred_by_snapshot && report.segments_removed == 0);
    EXPECT_TRUE(memcmp(view.value, original, VALUE_BYTES) == 0);
    /* the newest value is the overwrite; the snapshot still sees the original */
    memset(&copy, 0, sizeof copy);
    copy.buffer = filler;
    copy.capacity = sizeof filler;
    EXPECT_OK(tenure_store_get_value(store, "items", KEY("pinned"), NULL, &copy));
    EXPECT_TRUE(copy.length == 16);

    /* the store handle goes; the snapshot keeps the engine, and the view its bytes */
    EXPECT_OK(tenure_store_close(store));
    EXPECT_OK(tenure_store_free(store));
    EXPECT_TRUE(memcmp(view.value, original, VALUE_BYTES) == 0);
    EXPECT_OK(tenure_snapshot_get_view(snapshot, "items", KEY("pinned"), NULL, &view));
    EXPECT_TRUE(view.value_length == VALUE_BYTES && memcmp(view.value, original, VALUE_BYTES) == 0);
    EXPECT_OK(tenure_snapshot_free(snapshot));

    /* without the snapshot the same compaction removes segments */
    store = open_small_segments(path);
    EXPECT_OK(tenure_store_compact(store, &report));
    EXPECT_TRUE(!report.deferred_by_snapshot && report.segments_removed > 0);
    EXPECT_OK(tenure_store_close(store));
    EXPECT_OK(tenure_store_free(store));
}

struct seen {
    int calls;
    size_t length;
    uint64_t version;
    char first[8];
};

static void remember(void *context, const tenure_view *view) {
    struct seen *seen = (struct seen *)context;
    seen->calls++;
    seen->length = view->value_length;
    seen->version = view->version;
    memcpy(seen->first, view->value, view->value_length < 7 ? view->value_length : 7);
}

/* get_with lends the newest version to the callback, once, on success only. */
static void get_with(const char *path) {
    tenure_store *store = open_small_segments(path);
    struct seen seen;
    tenure_read_options options = TENURE_READ_OPTIONS_INIT;
    tenure_conditions when;
    tenure_etag etag;
    tenure_etag derived;
    memset(&seen, 0, sizeof seen);
    EXPECT_OK(tenure_container_create(store, "lent", false, 0));
    EXPECT_OK(tenure_store_write(store, "lent", KEY("k"), (const uint8_t *)"value", 5, NULL, &etag));
    EXPECT_OK(tenure_store_get_with(store, "lent", KEY("k"), NULL, remember, &seen));
    EXPECT_TRUE(seen.calls == 1 && seen.length == 5 && memcmp(seen.first, "value", 5) == 0);
    /* conditions through the options: the caller's copy is current -> NotModified */
    memset(&when, 0, sizeof when);
    when.if_none_match = etag.text;
    options.conditions = &when;
    EXPECT_STATUS(TENURE_ERR_NOT_MODIFIED,
                  tenure_store_get_with(store, "lent", KEY("k"), &options, remember, &seen));
    /* the view's version gives the ETag back */
    EXPECT_OK(tenure_etag_from_version(seen.version, &derived));
    when.if_none_match = NULL;
    when.if_match = derived.text;
    EXPECT_OK(tenure_store_get_with(store, "lent", KEY("k"), &options, remember, &seen));
    EXPECT_STATUS(TENURE_ERR_NOT_FOUND,
                  tenure_store_get_with(store, "lent", KEY("absent"), NULL, remember, &seen));
    EXPECT_STATUS(TENURE_ERR_CONTAINER_NOT_FOUND,
                  tenure_store_get_with(store, "none", KEY("k"), NULL, remember, &seen));
    EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT,
                  tenure_store_get_with(store, "lent", KEY("k"), NULL, NULL, &seen));
    EXPECT_TRUE(seen.calls == 2);
    EXPECT_OK(tenure_store_close(store));
    EXPECT_OK(tenure_store_free(store));
}

/* An item handle's view stays valid until the handle is freed. */
static void item_view(const char *path) {
    tenure_store *store = open_small_segments(path);
    tenure_item *item = NULL;
    const uint8_t *data = NULL;
    size_t length = 0;
    EXPECT_OK(tenure_container_create(store, "held", false, 0));
    EXPECT_OK(tenure_store_write(store, "held", KEY("k"), (const uint8_t *)"kept", 4, NULL, NULL));
    EXPECT_OK(tenure_get_item(store, "held", KEY("k"), NULL, &item));
    EXPECT_OK(tenure_store_write(store, "held", KEY("k"), (const uint8_t *)"next", 4, NULL, NULL));
    EXPECT_OK(tenure_item_value_view(item, &data, &length));
    EXPECT_TRUE(length == 4 && memcmp(data, "kept", 4) == 0);
    EXPECT_OK(tenure_item_free(item));
    EXPECT_OK(tenure_store_close(store));
    EXPECT_OK(tenure_store_free(store));
}

int main(void) {
    char path[1024];
    char second[1024];
    char third[1024];
    view_past_compaction(temporary_store_path(path, sizeof path, "views"));
    get_with(temporary_store_path(second, sizeof second, "get-with"));
    item_view(temporary_store_path(third, sizeof third, "item-view"));
    remove_tree(path);
    remove_tree(second);
    remove_tree(third);
    return finish("views");
}
