/* The container lease flow (docs/spec.md §5), container properties and metadata, item metadata with
 * conditions, get_if_newer, delete with a lock handle, compaction, listing through a snapshot
 * and waiting for changes, writes with content type and metadata (tenure_write,
 * tenure_batch_write), lease holder labels, through the C ABI. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>

#include "common.h"

#define OTHER_ID "3f2504e0-4f89-11d3-9a0c-0305e82c3399"

/* Acquire; delete without the id -> LeaseIdMissing; wrong id -> mismatch; with the id -> ok. */
static void container_lease_flow(tenure_store *store) {
    tenure_lease lease;
    tenure_lease renewed;
    tenure_lease_info info;
    tenure_conditions conditions;
    char etag[TENURE_ETAG_SIZE];
    uint64_t left_ms = 99;

    EXPECT_OK(tenure_container_create(store, "leased", false, 0));
    EXPECT_OK(tenure_container_lease_get_info(store, "leased", &info));
    EXPECT_TRUE(info.state == TENURE_LEASE_AVAILABLE && !info.has_id);
    /* an id with no lease on a container operation */
    memset(&conditions, 0, sizeof conditions);
    conditions.lease_id = OTHER_ID;
    EXPECT_STATUS(TENURE_ERR_LEASE_NOT_PRESENT_WITH_CONTAINER_OPERATION,
                  tenure_container_delete(store, "leased", &conditions));

    EXPECT_OK(tenure_container_lease_acquire(store, "leased", 15, NULL, &lease));
    EXPECT_TRUE(strlen(lease.id) == 36 && lease.fence > 0);
    EXPECT_STATUS(TENURE_ERR_LEASE_ALREADY_PRESENT,
                  tenure_container_lease_acquire(store, "leased", 15, NULL, &renewed));
    EXPECT_OK(tenure_container_lease_get_info(store, "leased", &info));
    EXPECT_TRUE(info.state == TENURE_LEASE_LEASED && info.has_id && strcmp(info.id, lease.id) == 0);
    EXPECT_TRUE(info.has_fence && info.fence == lease.fence && info.has_remaining);

    /* Only delete is guarded: without the id -> LeaseIdMissing, wrong id -> mismatch. */
    EXPECT_STATUS(TENURE_ERR_LEASE_ID_MISSING, tenure_container_delete(store, "leased", NULL));
    EXPECT_TRUE(tenure_status_http(TENURE_ERR_LEASE_ID_MISSING) == 412);
    EXPECT_STATUS(TENURE_ERR_LEASE_ID_MISMATCH_WITH_CONTAINER_OPERATION,
                  tenure_container_delete(store, "leased", &conditions));
    /* Other container operations take an optional id that must match if given. */
    EXPECT_OK(tenure_container_set_metadata(store, "leased", NULL, 0, NULL, etag));
    EXPECT_STATUS(TENURE_ERR_LEASE_ID_MISMATCH_WITH_CONTAINER_OPERATION,
                  tenure_container_set_metadata(store, "leased", NULL, 0, &conditions, NULL));

    /* renew and change keep the fence; the changed id is the one that works */
    EXPECT_OK(tenure_container_lease_renew(store, "leased", lease.id, &renewed));
    EXPECT_TRUE(strcmp(renewed.id, lease.id) == 0 && renewed.fence == lease.fence);
    EXPECT_OK(tenure_container_lease_change(store, "leased", lease.id, OTHER_ID, &renewed));
    EXPECT_TRUE(strcmp(renewed.id, OTHER_ID) == 0 && renewed.fence == lease.fence);
    EXPECT_STATUS(TENURE_ERR_LEASE_ID_MISMATCH_WITH_LEASE_OPERATION,
                  tenure_container_lease_release(store, "leased", lease.id));
    /* break with period 0: Broken at once; then release; acquire again takes a new fence */
    EXPECT_OK(tenure_container_lease_break(store, "leased", 0, &left_ms));
    EXPECT_TRUE(left_ms == 0);
    EXPECT_OK(tenure_container_lease_get_info(store, "leased", &info));
    EXPECT_TRUE(info.state == TENURE_LEASE_BROKEN);
    EXPECT_OK(tenure_container_lease_release(store, "leased", OTHER_ID));
    EXPECT_OK(tenure_container_lease_acquire(store, "leased", -1, NULL, &renewed));
    EXPECT_TRUE(renewed.fence > lease.fence);

    /* with the id: deleted */
    memset(&conditions, 0, sizeof conditions);
    conditions.lease_id = renewed.id;
    EXPECT_OK(tenure_container_delete(store, "leased", &conditions));
    EXPECT_STATUS(TENURE_ERR_CONTAINER_NOT_FOUND,
                  tenure_container_lease_get_info(store, "leased", &info));
}

/* Container properties and metadata, with ETag conditions; listing the containers. */
static void container_properties(tenure_store *store) {
    tenure_container_properties properties;
    tenure_metadata_entry entries[2];
    tenure_conditions conditions;
    char etag[TENURE_ETAG_SIZE];
    char first_etag[TENURE_ETAG_SIZE];
    char current[TENURE_ETAG_SIZE];
    bool has_current = false;
    uint8_t buffer[128];
    size_t length = 0;
    size_t count = 0;
    static const char expected_metadata[] = "owner\0ops\0tier\0gold\0";

    EXPECT_OK(tenure_container_create(store, "props", true, 3600));
    EXPECT_OK(tenure_container_get_properties(store, "props", &properties, NULL, 0, NULL));
    EXPECT_TRUE(properties.has_default_ttl && properties.default_ttl_seconds == 3600);
    EXPECT_TRUE(properties.metadata_count == 0 && properties.etag[0] == '"');
    strcpy(first_etag, properties.etag);

    entries[0].name = "owner";
    entries[0].value = "ops";
    entries[1].name = "tier";
    entries[1].value = "gold";
    memset(&conditions, 0, sizeof conditions);
    conditions.if_match = first_etag;
    EXPECT_OK(tenure_container_set_metadata(store, "props", entries, 2, &conditions, etag));
    EXPECT_TRUE(strcmp(etag, first_etag) != 0);
    /* the old ETag is stale now: precondition failure, current ETag reported */
    EXPECT_STATUS(TENURE_ERR_CONDITION_NOT_MET,
                  tenure_container_set_metadata(store, "props", entries, 1, &conditions, NULL));
    EXPECT_OK(tenure_last_error_etag(current, &has_current));
    EXPECT_TRUE(has_current && strcmp(current, etag) == 0);

    /* size query, then the metadata */
    EXPECT_STATUS(TENURE_ERR_BUFFER_TOO_SMALL,
                  tenure_container_get_properties(store, "props", &properties, NULL, 0, &length));
    EXPECT_TRUE(length == sizeof expected_metadata - 1);
    EXPECT_OK(tenure_container_get_properties(store, "props", &properties, buffer, sizeof buffer,
                                              &length));
    EXPECT_TRUE(length == sizeof expected_metadata - 1 &&
                memcmp(buffer, expected_metadata, length) == 0);
    EXPECT_TRUE(properties.metadata_count == 2 && strcmp(properties.etag, etag) == 0);

    EXPECT_STATUS(TENURE_ERR_BUFFER_TOO_SMALL, tenure_list_containers(store, NULL, 0, &length, &count));
    EXPECT_OK(tenure_list_containers(store, buffer, sizeof buffer, &length, &count));
    /* "items" (made by main) and "props", sorted, each NUL-terminated */
    EXPECT_TRUE(count == 2 && length == 12 && memcmp(buffer, "items\0props\0", 12) == 0);
}

/* Item set_metadata / set_properties with conditions, read back through an item handle. */
static void item_metadata(tenure_store *store) {
    tenure_metadata_entry entry;
    tenure_conditions conditions;
    tenure_item *item = NULL;
    char etag[TENURE_ETAG_SIZE];
    char stale[TENURE_ETAG_SIZE];
    char current[TENURE_ETAG_SIZE];
    bool has_current = false;
    uint8_t buffer[64];
    size_t length = 0;

    EXPECT_OK(tenure_put(store, "items", KEY("doc"), (const uint8_t *)"body", 4, NULL, stale));
    entry.name = "color";
    entry.value = "blue";
    EXPECT_OK(tenure_set_properties(store, "items", KEY("doc"), "text/plain", &entry, 1, NULL, etag));
    EXPECT_TRUE(strcmp(etag, stale) != 0);

    /* a stale ETag: precondition failure, the current ETag is available, nothing changed */
    memset(&conditions, 0, sizeof conditions);
    conditions.if_match = stale;
    entry.value = "red";
    EXPECT_STATUS(TENURE_ERR_CONDITION_NOT_MET,
                  tenure_set_metadata(store, "items", KEY("doc"), &entry, 1, &conditions, NULL));
    EXPECT_OK(tenure_last_error_etag(current, &has_current));
    EXPECT_TRUE(has_current && strcmp(current, etag) == 0);

    /* the current ETag: metadata replaced, content type and value kept */
    conditions.if_match = current;
    EXPECT_OK(tenure_set_metadata(store, "items", KEY("doc"), &entry, 1, &conditions, etag));
    EXPECT_TRUE(strcmp(etag, current) != 0);
    EXPECT_OK(tenure_get_item(store, "items", KEY("doc"), NULL, &item));
    EXPECT_OK(tenure_item_metadata(item, buffer, sizeof buffer, &length));
    EXPECT_TRUE(length == 10 && memcmp(buffer, "color\0red\0", 10) == 0);
    EXPECT_OK(tenure_item_content_type(item, buffer, sizeof buffer, &length));
    EXPECT_TRUE(length == 10 && memcmp(buffer, "text/plain", 10) == 0);
    EXPECT_OK(tenure_item_value(item, buffer, sizeof buffer, &length));
    EXPECT_TRUE(length == 4 && memcmp(buffer, "body", 4) == 0);
    EXPECT_STATUS(TENURE_ERR_BUFFER_TOO_SMALL, tenure_item_metadata(item, buffer, 3, &length));
    EXPECT_TRUE(length == 10);
    EXPECT_OK(tenure_item_free(item));

    /* no conditions: last writer wins; set_properties with no content type clears it */
    EXPECT_OK(tenure_set_metadata(store, "items", KEY("doc"), NULL, 0, NULL, NULL));
    EXPECT_OK(tenure_set_properties(store, "items", KEY("doc"), NULL, NULL, 0, NULL, NULL));
    EXPECT_OK(tenure_get_item(store, "items", KEY("doc"), NULL, &item));
    EXPECT_OK(tenure_item_metadata(item, buffer, sizeof buffer, &length));
    EXPECT_TRUE(length == 0);
    EXPECT_OK(tenure_item_content_type(item, NULL, 0, &length));
    EXPECT_TRUE(length == 0);
    EXPECT_OK(tenure_item_free(item));

    /* missing item -> NotFound */
    EXPECT_STATUS(TENURE_ERR_NOT_FOUND,
                  tenure_set_metadata(store, "items", KEY("absent"), &entry, 1, NULL, NULL));
    EXPECT_STATUS(TENURE_ERR_NOT_FOUND,
                  tenure_set_properties(store, "items", KEY("absent"), NULL, &entry, 1, NULL, NULL));
}

/* Reads the item's content type and metadata back through an item handle. */
static void expect_properties(tenure_store *store, const char *key, const char *content_type,
                              const char *metadata, size_t metadata_length) {
    tenure_item *item = NULL;
    uint8_t buffer[128];
    size_t length = 0;
    EXPECT_OK(tenure_get_item(store, "items", KEY(key), NULL, &item));
    EXPECT_OK(tenure_item_content_type(item, buffer, sizeof buffer, &length));
    EXPECT_TRUE(length == strlen(content_type) && memcmp(buffer, content_type, length) == 0);
    EXPECT_OK(tenure_item_metadata(item, buffer, sizeof buffer, &length));
    EXPECT_TRUE(length == metadata_length && memcmp(buffer, metadata, length) == 0);
    EXPECT_OK(tenure_item_free(item));
}

/* tenure_write / tenure_batch_write: the value, content type and metadata in one write. */
static void write_with_properties(tenure_store *store) {
    tenure_metadata_entry entries[2] = {{"color", "blue"}, {"size", "L"}};
    tenure_write_properties properties;
    tenure_conditions conditions;
    tenure_batch *batch = NULL;
    char etag[TENURE_ETAG_SIZE];
    char second[TENURE_ETAG_SIZE];
    uint8_t buffer[64];
    size_t length = 0;
    uint64_t before = 0;
    uint64_t after = 0;
    uint64_t version = 0;

    memset(&properties, 0, sizeof properties);
    properties.content_type = "application/json";
    properties.metadata = entries;
    properties.metadata_count = 2;
    EXPECT_OK(tenure_store_version(store, &before));
    EXPECT_OK(tenure_write(store, TENURE_WRITE_CREATE, "items", KEY("typed"),
                           (const uint8_t *)"{}", 2, &properties, NULL, etag));
    EXPECT_OK(tenure_store_version(store, &after));
    EXPECT_TRUE(after == before + 1); /* one write, not a write plus set_properties */
    expect_properties(store, "typed", "application/json", "color\0blue\0size\0L\0", 18);
    EXPECT_OK(tenure_get(store, "items", KEY("typed"), NULL, buffer, sizeof buffer, &length, NULL));
    EXPECT_TRUE(length == 2 && memcmp(buffer, "{}", 2) == 0);
    /* create again: AlreadyExists, nothing changed */
    EXPECT_STATUS(TENURE_ERR_ALREADY_EXISTS,
                  tenure_write(store, TENURE_WRITE_CREATE, "items", KEY("typed"),
                               (const uint8_t *)"x", 1, &properties, NULL, NULL));

    /* replace with if_match: content type cleared, metadata replaced (not merged) */
    memset(&conditions, 0, sizeof conditions);
    conditions.if_match = etag;
    properties.content_type = NULL;
    properties.metadata = &entries[1];
    properties.metadata_count = 1;
    EXPECT_OK(tenure_write(store, TENURE_WRITE_REPLACE, "items", KEY("typed"),
                           (const uint8_t *)"[]", 2, &properties, &conditions, second));
    EXPECT_TRUE(strcmp(etag, second) != 0);
    expect_properties(store, "typed", "", "size\0L\0", 7);
    /* the stale ETag now fails and reports the current one */
    EXPECT_STATUS(TENURE_ERR_CONDITION_NOT_MET,
                  tenure_write(store, TENURE_WRITE_PUT, "items", KEY("typed"),
                               (const uint8_t *)"z", 1, &properties, &conditions, NULL));
    EXPECT_STATUS(TENURE_ERR_NOT_FOUND,
                  tenure_write(store, TENURE_WRITE_REPLACE, "items", KEY("nothing-here"),
                               (const uint8_t *)"z", 1, &properties, NULL, NULL));

    /* a plain put afterwards clears both (a put replaces the item's properties) */
    properties.content_type = "text/plain";
    properties.metadata = entries;
    properties.metadata_count = 1;
    EXPECT_OK(tenure_write(store, TENURE_WRITE_PUT, "items", KEY("typed"),
                           (const uint8_t *)"p", 1, &properties, NULL, NULL));
    expect_properties(store, "typed", "text/plain", "color\0blue\0", 11);
    EXPECT_OK(tenure_put(store, "items", KEY("typed"), (const uint8_t *)"q", 1, NULL, NULL));
    expect_properties(store, "typed", "", "", 0);

    /* the same in a batch */
    EXPECT_OK(tenure_batch_new(store, &batch));
    properties.content_type = "image/png";
    properties.metadata = entries;
    properties.metadata_count = 2;
    EXPECT_OK(tenure_batch_write(batch, TENURE_WRITE_PUT, "items", KEY("batched-a"),
                                 (const uint8_t *)"a", 1, &properties, NULL));
    properties.content_type = NULL;
    properties.metadata_count = 0;
    properties.metadata = NULL;
    EXPECT_OK(tenure_batch_write(batch, TENURE_WRITE_CREATE, "items", KEY("batched-b"),
                                 (const uint8_t *)"b", 1, &properties, NULL));
    EXPECT_OK(tenure_batch_commit(batch, &version));
    EXPECT_OK(tenure_batch_free(batch));
    expect_properties(store, "batched-a", "image/png", "color\0blue\0size\0L\0", 18);
    expect_properties(store, "batched-b", "", "", 0);
}

/* A lease acquired with a holder label: lease info reports it; without one it has none. */
static void lease_holder(tenure_store *store) {
    tenure_lease lease;
    tenure_lease_info info;
    char holder[TENURE_LEASE_HOLDER_MAX];
    char small[4];
    size_t length = 0;
    bool has = true;

    EXPECT_OK(tenure_put(store, "items", KEY("held"), (const uint8_t *)"v", 1, NULL, NULL));
    /* no lease: no holder */
    EXPECT_OK(tenure_lease_get_info_with_holder(store, "items", KEY("held"), &info,
                                                (uint8_t *)holder, sizeof holder, &length, &has));
    EXPECT_TRUE(info.state == TENURE_LEASE_AVAILABLE && !has && length == 0);
    EXPECT_OK(tenure_lease_acquire_with_holder(store, "items", KEY("held"), 15, NULL,
                                               "worker-7", 0, &lease));
    EXPECT_OK(tenure_lease_get_info_with_holder(store, "items", KEY("held"), &info,
                                                (uint8_t *)holder, sizeof holder, &length, &has));
    EXPECT_TRUE(info.state == TENURE_LEASE_LEASED && has && length == 8 &&
                memcmp(holder, "worker-7", 8) == 0);
    EXPECT_TRUE(info.has_id && strcmp(info.id, lease.id) == 0 && info.fence == lease.fence);
    /* too small: only the length is written */
    info.state = 99;
    length = 0;
    EXPECT_STATUS(TENURE_ERR_BUFFER_TOO_SMALL,
                  tenure_lease_get_info_with_holder(store, "items", KEY("held"), &info,
                                                    (uint8_t *)small, sizeof small, &length,
                                                    &has));
    EXPECT_TRUE(length == 8 && info.state == 99);
    /* held by someone: a second acquire fails; a waiting one times out */
    EXPECT_STATUS(TENURE_ERR_LEASE_ALREADY_PRESENT,
                  tenure_lease_acquire_with_holder(store, "items", KEY("held"), 15, NULL,
                                                   "worker-8", 0, &lease));
    EXPECT_OK(tenure_lease_release(store, "items", KEY("held"), lease.id));
    /* waiting on a free lease: granted at once, the new holder reported */
    EXPECT_OK(tenure_lease_acquire_with_holder(store, "items", KEY("held"), -1, NULL,
                                               "worker-8", 1000, &lease));
    EXPECT_OK(tenure_lease_get_info_with_holder(store, "items", KEY("held"), &info,
                                                (uint8_t *)holder, sizeof holder, &length, &has));
    EXPECT_TRUE(has && length == 8 && memcmp(holder, "worker-8", 8) == 0);
    EXPECT_OK(tenure_lease_release(store, "items", KEY("held"), lease.id));
    /* an acquire without a label: none reported */
    EXPECT_OK(tenure_lease_acquire(store, "items", KEY("held"), 15, NULL, &lease));
    EXPECT_OK(tenure_lease_get_info_with_holder(store, "items", KEY("held"), &info,
                                                (uint8_t *)holder, sizeof holder, &length, &has));
    EXPECT_TRUE(info.state == TENURE_LEASE_LEASED && !has && length == 0);
    EXPECT_OK(tenure_lease_release(store, "items", KEY("held"), lease.id));

    /* a container's lease */
    EXPECT_OK(tenure_container_create(store, "held-container", false, 0));
    EXPECT_OK(tenure_container_lease_acquire_with_holder(store, "held-container", 15, NULL,
                                                         "job-42", &lease));
    EXPECT_OK(tenure_container_lease_get_info_with_holder(store, "held-container", &info,
                                                          (uint8_t *)holder, sizeof holder,
                                                          &length, &has));
    EXPECT_TRUE(info.state == TENURE_LEASE_LEASED && has && length == 6 &&
                memcmp(holder, "job-42", 6) == 0);
    EXPECT_OK(tenure_container_lease_release(store, "held-container", lease.id));
}

/* get_if_newer: nothing when the version is current, the item when it differs. */
static void get_if_newer(tenure_store *store) {
    tenure_item_info info;
    uint8_t buffer[16];
    uint8_t small[2];
    size_t length = 0;
    bool newer = true;

    EXPECT_OK(tenure_put(store, "items", KEY("cached"), (const uint8_t *)"one", 3, NULL, NULL));
    EXPECT_OK(tenure_get_if_newer(store, "items", KEY("cached"), 0, buffer, sizeof buffer, &length,
                                  &info, &newer));
    EXPECT_TRUE(newer && length == 3 && memcmp(buffer, "one", 3) == 0);
    length = 77;
    EXPECT_OK(tenure_get_if_newer(store, "items", KEY("cached"), info.version, buffer, sizeof buffer,
                                  &length, NULL, &newer));
    EXPECT_TRUE(!newer && length == 77); /* nothing else written */
    EXPECT_OK(tenure_put(store, "items", KEY("cached"), (const uint8_t *)"three", 5, NULL, NULL));
    EXPECT_STATUS(TENURE_ERR_BUFFER_TOO_SMALL,
                  tenure_get_if_newer(store, "items", KEY("cached"), info.version, small,
                                      sizeof small, &length, NULL, &newer));
    EXPECT_TRUE(length == 5);
    EXPECT_OK(tenure_get_if_newer(store, "items", KEY("cached"), info.version, buffer, sizeof buffer,
                                  &length, &info, &newer));
    EXPECT_TRUE(newer && length == 5 && memcmp(buffer, "three", 5) == 0);
    EXPECT_STATUS(TENURE_ERR_NOT_FOUND,
                  tenure_get_if_newer(store, "items", KEY("nope"), 0, buffer, sizeof buffer, &length,
                                      NULL, &newer));
}

/* delete with a lock handle (docs/spec.md §6): the right handle deletes, a wrong one is refused. */
static void delete_with_lock(tenure_store *store) {
    char handle[TENURE_LOCK_HANDLE_SIZE];
    tenure_conditions conditions;
    tenure_item_info info;
    EXPECT_OK(tenure_put(store, "items", KEY("locked"), (const uint8_t *)"v", 1, NULL, NULL));
    memset(&conditions, 0, sizeof conditions);
    conditions.lock_handle = "0123456789abcdef0123456789abcdef";
    EXPECT_STATUS(TENURE_ERR_OBJECT_NOT_LOCKED,
                  tenure_delete(store, "items", KEY("locked"), &conditions));
    EXPECT_OK(tenure_get_and_lock(store, "items", KEY("locked"), 10000, false, handle, NULL));
    EXPECT_STATUS(TENURE_ERR_INVALID_LOCK_HANDLE,
                  tenure_delete(store, "items", KEY("locked"), &conditions));
    conditions.lock_handle = handle;
    EXPECT_OK(tenure_delete(store, "items", KEY("locked"), &conditions));
    EXPECT_STATUS(TENURE_ERR_NOT_FOUND, tenure_get_properties(store, "items", KEY("locked"), NULL, &info));
}

/* Paging through a snapshot sees the state it pinned, whatever is written meanwhile. */
static void snapshot_listing(tenure_store *store) {
    tenure_snapshot *snapshot = NULL;
    tenure_page *page = NULL;
    char continuation[256];
    char key[16];
    size_t length = 0;
    size_t count = 0;
    size_t seen = 0;
    bool more = true;
    int index;

    EXPECT_OK(tenure_container_create(store, "paged", false, 0));
    for (index = 0; index < 5; index++) {
        snprintf(key, sizeof key, "k%d", index);
        EXPECT_OK(tenure_put(store, "paged", KEY(key), (const uint8_t *)"v", 1, NULL, NULL));
    }
    EXPECT_OK(tenure_snapshot_open(store, &snapshot));
    EXPECT_OK(tenure_delete(store, "paged", KEY("k1"), NULL));
    EXPECT_OK(tenure_put(store, "paged", KEY("k9"), (const uint8_t *)"v", 1, NULL, NULL));
    EXPECT_OK(tenure_snapshot_list(snapshot, "paged", NULL, 0, 2, NULL, true, &page));
    while (page != NULL) {
        EXPECT_OK(tenure_page_count(page, &count));
        seen += count;
        EXPECT_OK(tenure_page_continuation(page, continuation, sizeof continuation, &length, &more));
        EXPECT_OK(tenure_page_free(page));
        page = NULL;
        if (more) {
            EXPECT_OK(tenure_snapshot_list(snapshot, "paged", NULL, 0, 2, continuation, true, &page));
        }
    }
    EXPECT_TRUE(seen == 5); /* k0..k4 as pinned: k1 still there, k9 not yet */
    EXPECT_OK(tenure_snapshot_free(snapshot));
}

/* wait_for_changes: a bounded wait; true once something newer is committed. */
static void wait_for_changes(tenure_store *store) {
    uint64_t version = 0;
    bool changed = true;
    EXPECT_OK(tenure_store_version(store, &version));
    EXPECT_OK(tenure_store_wait_for_changes(store, version, 10, &changed));
    EXPECT_TRUE(!changed);
    EXPECT_OK(tenure_put(store, "items", KEY("wake"), (const uint8_t *)"v", 1, NULL, NULL));
    EXPECT_OK(tenure_store_wait_for_changes(store, version, 1000, &changed));
    EXPECT_TRUE(changed);
}

/* Compaction on demand: small segments, overwritten values, the report's figures. */
static void compaction(void) {
    char path[1024];
    tenure_store_options options;
    tenure_store *store = NULL;
    tenure_compaction_report report;
    static uint8_t value[4096];
    uint8_t buffer[16];
    size_t length = 0;
    int round;
    temporary_store_path(path, sizeof path, "compact");
    memset(&options, 0, sizeof options);
    options.durability = 1;
    options.segment_size_bytes = 64 << 10;
    options.disable_background_compaction = true;
    EXPECT_OK(tenure_store_open(path, &options, &store));
    EXPECT_OK(tenure_container_create(store, "c", false, 0));
    for (round = 0; round < 100; round++) {
        value[0] = (uint8_t)round;
        EXPECT_OK(tenure_put(store, "c", KEY("hot"), value, sizeof value, NULL, NULL));
    }
    EXPECT_OK(tenure_put(store, "c", KEY("last"), (const uint8_t *)"kept", 4, NULL, NULL));
    EXPECT_OK(tenure_store_compact(store, &report));
    EXPECT_TRUE(report.segments_removed > 0 && report.bytes_removed > 0);
    EXPECT_TRUE(!report.deferred_by_snapshot);
    EXPECT_OK(tenure_get(store, "c", KEY("last"), NULL, buffer, sizeof buffer, &length, NULL));
    EXPECT_TRUE(length == 4 && memcmp(buffer, "kept", 4) == 0);
    EXPECT_OK(tenure_get(store, "c", KEY("hot"), NULL, NULL, 0, &length, NULL) == TENURE_ERR_BUFFER_TOO_SMALL ? TENURE_OK : TENURE_ERR_PANIC);
    EXPECT_TRUE(length == sizeof value);
    EXPECT_OK(tenure_store_close(store));
    EXPECT_OK(tenure_store_free(store));
    remove_tree(path);
}

int main(void) {
    char path[1024];
    tenure_store *store;
    temporary_store_path(path, sizeof path, "containers");
    store = open_store(path);
    EXPECT_OK(tenure_container_create(store, "items", false, 0));

    container_lease_flow(store);
    container_properties(store);
    item_metadata(store);
    write_with_properties(store);
    lease_holder(store);
    get_if_newer(store);
    delete_with_lock(store);
    snapshot_listing(store);
    wait_for_changes(store);
    compaction();

    EXPECT_OK(tenure_store_close(store));
    EXPECT_OK(tenure_store_free(store));
    remove_tree(path);
    return finish("containers_metadata");
}
