/* The calls with options structs: what each does, and every bad input refused with
 * InvalidArgument naming the argument or field, changing nothing — struct sizes (zero, short,
 * a newer caller's larger struct), fields a call does not use, NULL and forged handles. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>

#include "common.h"

static tenure_store *store;

static uint64_t version_now(void) {
    uint64_t version = 0;
    EXPECT_OK(tenure_store_version(store, &version));
    return version;
}

/* A caller built against a newer header: its struct is larger, the new fields zero or set. */
struct newer_write_options {
    tenure_write_options known;
    uint64_t added_later;
};

static void writes(void) {
    tenure_write_options options = TENURE_WRITE_OPTIONS_INIT;
    struct newer_write_options newer;
    tenure_metadata_entry pairs[2] = {{"owner", "ops"}, {"tier", "gold"}};
    tenure_conditions when;
    tenure_etag etag;
    tenure_etag again;
    tenure_item *item = NULL;
    char text[64];
    size_t length = 0;
    uint64_t before;

    /* NULL options: a put; the kinds */
    EXPECT_OK(tenure_store_write(store, "items", KEY("w"), (const uint8_t *)"1", 1, NULL, &etag));
    options.kind = TENURE_WRITE_CREATE;
    EXPECT_STATUS(TENURE_ERR_ALREADY_EXISTS,
                  tenure_store_write(store, "items", KEY("w"), (const uint8_t *)"2", 1, &options, NULL));
    options.kind = TENURE_WRITE_REPLACE;
    EXPECT_STATUS(TENURE_ERR_NOT_FOUND,
                  tenure_store_write(store, "items", KEY("absent"), (const uint8_t *)"2", 1, &options, NULL));
    /* content type and metadata with the value, read back through an item handle */
    options.content_type = "application/json";
    options.metadata = pairs;
    options.metadata_count = 2;
    EXPECT_OK(tenure_store_write(store, "items", KEY("w"), (const uint8_t *)"{}", 2, &options, &again));
    EXPECT_TRUE(strcmp(etag.text, again.text) != 0);
    EXPECT_OK(tenure_get_item(store, "items", KEY("w"), NULL, &item));
    EXPECT_OK(tenure_item_content_type(item, (uint8_t *)text, sizeof text, &length));
    EXPECT_TRUE(length == 16 && memcmp(text, "application/json", 16) == 0);
    EXPECT_OK(tenure_item_metadata(item, (uint8_t *)text, sizeof text, &length));
    EXPECT_TRUE(length == 20 && memcmp(text, "owner\0ops\0tier\0gold\0", 20) == 0);
    EXPECT_OK(tenure_item_free(item));
    /* conditions through the options: a stale ETag */
    memset(&when, 0, sizeof when);
    when.if_match = etag.text;
    options.kind = TENURE_WRITE_PUT;
    options.conditions = &when;
    EXPECT_STATUS(TENURE_ERR_CONDITION_NOT_MET,
                  tenure_store_write(store, "items", KEY("w"), (const uint8_t *)"3", 1, &options, NULL));

    /* bad options change nothing */
    before = version_now();
    options = (tenure_write_options)TENURE_WRITE_OPTIONS_INIT;
    options.kind = 3;
    EXPECT_INVALID("options.kind", tenure_store_write(store, "items", KEY("w"), (const uint8_t *)"x", 1, &options, NULL));
    options.kind = TENURE_WRITE_PUT;
    options.struct_size = 0;
    EXPECT_INVALID("options", tenure_store_write(store, "items", KEY("w"), (const uint8_t *)"x", 1, &options, NULL));
    EXPECT_TRUE(last_message_has("TENURE_WRITE_OPTIONS_INIT"));
    options.struct_size = 4;
    EXPECT_INVALID("options", tenure_store_write(store, "items", KEY("w"), (const uint8_t *)"x", 1, &options, NULL));
    options.struct_size = UINT32_MAX;
    EXPECT_INVALID("options", tenure_store_write(store, "items", KEY("w"), (const uint8_t *)"x", 1, &options, NULL));
    options = (tenure_write_options)TENURE_WRITE_OPTIONS_INIT;
    options.metadata_count = 1;
    EXPECT_INVALID("options.metadata", tenure_store_write(store, "items", KEY("w"), (const uint8_t *)"x", 1, &options, NULL));
    options.metadata = pairs;
    options.content_type = "\xff\xfe";
    EXPECT_INVALID("options.content_type", tenure_store_write(store, "items", KEY("w"), (const uint8_t *)"x", 1, &options, NULL));
    memset(&newer, 0, sizeof newer);
    newer.known.struct_size = (uint32_t)sizeof newer;
    newer.added_later = 1;
    EXPECT_INVALID("options", tenure_store_write(store, "items", KEY("w"), (const uint8_t *)"x", 1, &newer.known, NULL));
    EXPECT_TRUE(last_message_has("does not know"));
    EXPECT_INVALID("key", tenure_store_write(store, "items", NULL, 1, (const uint8_t *)"x", 1, NULL, NULL));
    EXPECT_INVALID("value", tenure_store_write(store, "items", KEY("w"), NULL, 1, NULL, NULL));
    EXPECT_INVALID("container", tenure_store_write(store, NULL, KEY("w"), (const uint8_t *)"x", 1, NULL, NULL));
    EXPECT_TRUE(version_now() == before);
    /* a newer caller's fields left zero: accepted */
    newer.added_later = 0;
    EXPECT_OK(tenure_store_write(store, "items", KEY("w"), (const uint8_t *)"4", 1, &newer.known, NULL));
    /* a plain write leaves the item without content type and metadata */
    EXPECT_OK(tenure_get_item(store, "items", KEY("w"), NULL, &item));
    EXPECT_OK(tenure_item_content_type(item, (uint8_t *)text, sizeof text, &length));
    EXPECT_TRUE(length == 0);
    EXPECT_OK(tenure_item_free(item));
}

static void properties(void) {
    tenure_write_options options = TENURE_WRITE_OPTIONS_INIT;
    tenure_metadata_entry pairs[1] = {{"a", "1"}};
    tenure_container_properties container;
    tenure_conditions when;
    tenure_etag etag;
    uint8_t metadata[64];
    size_t length = 0;
    uint64_t before;
    EXPECT_OK(tenure_store_write(store, "items", KEY("p"), (const uint8_t *)"body", 4, NULL, NULL));
    options.content_type = "text/plain";
    options.metadata = pairs;
    options.metadata_count = 1;
    EXPECT_OK(tenure_store_set_properties(store, "items", KEY("p"), &options, &etag));
    options.content_type = NULL;
    EXPECT_OK(tenure_store_set_metadata(store, "items", KEY("p"), &options, NULL));
    EXPECT_OK(tenure_store_set_container_metadata(store, "items", &options, &etag));
    EXPECT_OK(tenure_container_get_properties(store, "items", &container, metadata, sizeof metadata, &length));
    EXPECT_TRUE(strcmp(container.etag, etag.text) == 0 && container.metadata_count == 1);
    before = version_now();
    options.content_type = "text/plain";
    EXPECT_INVALID("options.content_type", tenure_store_set_metadata(store, "items", KEY("p"), &options, NULL));
    EXPECT_INVALID("options.content_type", tenure_store_set_container_metadata(store, "items", &options, NULL));
    options.content_type = NULL;
    options.kind = TENURE_WRITE_CREATE;
    EXPECT_INVALID("options.kind", tenure_store_set_properties(store, "items", KEY("p"), &options, NULL));
    EXPECT_INVALID("options.kind", tenure_store_set_container_metadata(store, "items", &options, NULL));
    options.kind = TENURE_WRITE_PUT;
    memset(&when, 0, sizeof when);
    when.lock_handle = "0123456789abcdef0123456789abcdef";
    options.conditions = &when;
    EXPECT_INVALID("conditions", tenure_store_set_container_metadata(store, "items", &options, NULL));
    EXPECT_INVALID("name", tenure_store_set_container_metadata(store, NULL, NULL, NULL));
    EXPECT_TRUE(version_now() == before);
}

static void batches(void) {
    tenure_batch *batch = NULL;
    tenure_write_options options = TENURE_WRITE_OPTIONS_INIT;
    uint64_t version = 0;
    uint64_t before = version_now();
    EXPECT_OK(tenure_batch_new(store, &batch));
    options.kind = TENURE_WRITE_CREATE;
    options.content_type = "text/csv";
    EXPECT_OK(tenure_batch_add_write(batch, "items", KEY("b-new"), (const uint8_t *)"n", 1, &options));
    options.kind = 7;
    EXPECT_INVALID("options.kind", tenure_batch_add_write(batch, "items", KEY("b-bad"), (const uint8_t *)"n", 1, &options));
    options.kind = TENURE_WRITE_REPLACE;
    options.content_type = NULL;
    EXPECT_OK(tenure_batch_add_write(batch, "items", KEY("absent"), (const uint8_t *)"r", 1, &options));
    EXPECT_STATUS(TENURE_ERR_NOT_FOUND, tenure_batch_commit(batch, &version));
    EXPECT_OK(tenure_batch_free(batch));
    EXPECT_TRUE(version_now() == before);
    EXPECT_OK(tenure_batch_new(store, &batch));
    EXPECT_OK(tenure_batch_add_write(batch, "items", KEY("b-new"), (const uint8_t *)"n", 1, NULL));
    EXPECT_OK(tenure_batch_add_write(batch, "items", KEY("b-two"), (const uint8_t *)"t", 1, NULL));
    EXPECT_OK(tenure_batch_commit(batch, &version));
    EXPECT_TRUE(version == before + 1);
    EXPECT_OK(tenure_batch_free(batch));
}

static void reads(void) {
    tenure_read_options options = TENURE_READ_OPTIONS_INIT;
    tenure_value_out out;
    tenure_conditions when;
    tenure_snapshot *snapshot = NULL;
    uint8_t buffer[16];
    EXPECT_OK(tenure_store_write(store, "items", KEY("r"), (const uint8_t *)"readable", 8, NULL, NULL));
    memset(&out, 0, sizeof out);
    /* a size query writes only the length */
    out.info.version = 12345;
    EXPECT_STATUS(TENURE_ERR_BUFFER_TOO_SMALL, tenure_store_get_value(store, "items", KEY("r"), NULL, &out));
    EXPECT_TRUE(out.length == 8 && out.info.version == 12345);
    out.buffer = buffer;
    out.capacity = sizeof buffer;
    EXPECT_OK(tenure_store_get_value(store, "items", KEY("r"), &options, &out));
    EXPECT_TRUE(out.length == 8 && memcmp(buffer, "readable", 8) == 0 && out.info.value_length == 8);
    /* GetIfNewer: current -> NotModified, nothing written; older -> the value */
    out.length = 0;
    EXPECT_STATUS(TENURE_ERR_NOT_MODIFIED,
                  tenure_store_get_if_newer(store, "items", KEY("r"), out.info.version, &out));
    EXPECT_TRUE(out.length == 0);
    EXPECT_OK(tenure_store_get_if_newer(store, "items", KEY("r"), 1, &out));
    EXPECT_TRUE(out.length == 8);
    /* conditions through the options */
    memset(&when, 0, sizeof when);
    when.if_none_match = out.info.etag;
    options.conditions = &when;
    EXPECT_STATUS(TENURE_ERR_NOT_MODIFIED, tenure_store_get_value(store, "items", KEY("r"), &options, &out));
    when.if_none_match = NULL;
    when.has_ttl = true;
    when.ttl_seconds = 5;
    EXPECT_INVALID("conditions", tenure_store_get_value(store, "items", KEY("r"), &options, &out));
    options.conditions = NULL;
    options.struct_size = 0;
    EXPECT_INVALID("options", tenure_store_get_value(store, "items", KEY("r"), &options, &out));
    EXPECT_INVALID("value_out", tenure_store_get_value(store, "items", KEY("r"), NULL, NULL));
    out.buffer = NULL;
    EXPECT_INVALID("value_out.buffer", tenure_store_get_value(store, "items", KEY("r"), NULL, &out));
    EXPECT_INVALID("key", tenure_store_get_value(store, "items", KEY(""), NULL, &out));
    /* the snapshot's copy-out read */
    EXPECT_OK(tenure_snapshot_open(store, &snapshot));
    EXPECT_OK(tenure_store_write(store, "items", KEY("r"), (const uint8_t *)"changed", 7, NULL, NULL));
    out.buffer = buffer;
    out.capacity = sizeof buffer;
    EXPECT_OK(tenure_snapshot_get_value(snapshot, "items", KEY("r"), NULL, &out));
    EXPECT_TRUE(out.length == 8 && memcmp(buffer, "readable", 8) == 0);
    EXPECT_OK(tenure_snapshot_free(snapshot));
}

static void listings(void) {
    tenure_list_options options = TENURE_LIST_OPTIONS_INIT;
    tenure_page *page = NULL;
    tenure_snapshot *snapshot = NULL;
    char continuation[256];
    uint8_t value[16];
    size_t count = 0;
    size_t length = 0;
    bool more = false;
    EXPECT_OK(tenure_container_create(store, "listed", false, 0));
    EXPECT_OK(tenure_store_write(store, "listed", KEY("a1"), (const uint8_t *)"1", 1, NULL, NULL));
    EXPECT_OK(tenure_store_write(store, "listed", KEY("a2"), (const uint8_t *)"2", 1, NULL, NULL));
    EXPECT_OK(tenure_store_write(store, "listed", KEY("b1"), (const uint8_t *)"3", 1, NULL, NULL));
    /* NULL options: every key, no values, one page */
    EXPECT_OK(tenure_store_list_items(store, "listed", NULL, &page));
    EXPECT_OK(tenure_page_count(page, &count));
    EXPECT_TRUE(count == 3);
    EXPECT_OK(tenure_page_value(page, 0, value, sizeof value, &length));
    EXPECT_TRUE(length == 0);
    EXPECT_OK(tenure_page_free(page));
    /* a prefix, pages of one, values */
    options.prefix = (const uint8_t *)"a";
    options.prefix_length = 1;
    options.page_size = 1;
    options.include_values = true;
    EXPECT_OK(tenure_store_list_items(store, "listed", &options, &page));
    EXPECT_OK(tenure_page_value(page, 0, value, sizeof value, &length));
    EXPECT_TRUE(length == 1 && value[0] == '1');
    EXPECT_OK(tenure_page_continuation(page, continuation, sizeof continuation, &length, &more));
    EXPECT_TRUE(more);
    EXPECT_OK(tenure_page_free(page));
    options.continuation = continuation;
    EXPECT_OK(tenure_snapshot_open(store, &snapshot));
    EXPECT_OK(tenure_snapshot_list_items(snapshot, "listed", &options, &page));
    EXPECT_OK(tenure_page_key(page, 0, value, sizeof value, &length));
    EXPECT_TRUE(length == 2 && memcmp(value, "a2", 2) == 0);
    EXPECT_OK(tenure_page_free(page));
    EXPECT_OK(tenure_snapshot_free(snapshot));
    /* bad options */
    options.continuation = NULL;
    options.prefix = NULL;
    EXPECT_INVALID("options.prefix", tenure_store_list_items(store, "listed", &options, &page));
    options.prefix_length = 0;
    options.page_size = 10001;
    EXPECT_INVALID("page_size", tenure_store_list_items(store, "listed", &options, &page));
    options.page_size = 0;
    options.continuation = "not a continuation";
    EXPECT_INVALID("continuation", tenure_store_list_items(store, "listed", &options, &page));
    options.continuation = NULL;
    EXPECT_INVALID("page_out", tenure_store_list_items(store, "listed", &options, NULL));
    EXPECT_INVALID("container", tenure_store_list_items(store, NULL, &options, &page));
}

static void locks(void) {
    tenure_lock_options options = TENURE_LOCK_OPTIONS_INIT;
    tenure_lock_handle handle;
    tenure_lock_handle other;
    tenure_item *item = NULL;
    tenure_etag etag;
    const uint8_t *data = NULL;
    size_t length = 0;
    uint64_t before;
    EXPECT_OK(tenure_store_write(store, "items", KEY("locked"), (const uint8_t *)"cache", 5, NULL, NULL));
    before = version_now();
    EXPECT_INVALID("options", tenure_store_get_and_lock(store, "items", KEY("locked"), NULL, &handle, &item));
    EXPECT_INVALID("options.lock_timeout_ms", tenure_store_get_and_lock(store, "items", KEY("locked"), &options, &handle, &item));
    options.lock_timeout_ms = 30000;
    options.lock_handle = "0123456789abcdef0123456789abcdef";
    EXPECT_INVALID("options.lock_handle", tenure_store_get_and_lock(store, "items", KEY("locked"), &options, &handle, &item));
    options.lock_handle = NULL;
    EXPECT_INVALID("handle_out", tenure_store_get_and_lock(store, "items", KEY("locked"), &options, NULL, &item));
    EXPECT_TRUE(version_now() == before);
    EXPECT_OK(tenure_store_get_and_lock(store, "items", KEY("locked"), &options, &handle, &item));
    EXPECT_OK(tenure_item_value_view(item, &data, &length));
    EXPECT_TRUE(length == 5 && memcmp(data, "cache", 5) == 0 && strlen(handle.text) == 32);
    EXPECT_OK(tenure_item_free(item));
    EXPECT_STATUS(TENURE_ERR_OBJECT_LOCKED,
                  tenure_store_get_and_lock(store, "items", KEY("locked"), &options, &other, NULL));
    /* put_and_unlock: the handle is required; get_and_lock's fields must stay 0 */
    EXPECT_INVALID("options.lock_timeout_ms",
                   tenure_store_put_and_unlock(store, "items", KEY("locked"), (const uint8_t *)"new", 3, &options, NULL));
    options = (tenure_lock_options)TENURE_LOCK_OPTIONS_INIT;
    EXPECT_INVALID("options.lock_handle",
                   tenure_store_put_and_unlock(store, "items", KEY("locked"), (const uint8_t *)"new", 3, &options, NULL));
    options.lock_handle = handle.text;
    options.has_ttl = true;
    options.ttl_seconds = 0;
    EXPECT_INVALID("options.ttl_seconds",
                   tenure_store_put_and_unlock(store, "items", KEY("locked"), (const uint8_t *)"new", 3, &options, NULL));
    options.ttl_seconds = TENURE_INFINITE;
    EXPECT_OK(tenure_store_put_and_unlock(store, "items", KEY("locked"), (const uint8_t *)"new", 3, &options, &etag));
    EXPECT_TRUE(etag.text[0] == '"');
    /* a forced lock of an absent key: no item; unlock releases it */
    options = (tenure_lock_options)TENURE_LOCK_OPTIONS_INIT;
    options.lock_timeout_ms = 1000;
    options.force = true;
    item = (tenure_item *)(uintptr_t)1;
    EXPECT_OK(tenure_store_get_and_lock(store, "items", KEY("never-written"), &options, &handle, &item));
    EXPECT_TRUE(item == NULL);
    options = (tenure_lock_options)TENURE_LOCK_OPTIONS_INIT;
    options.lock_handle = handle.text;
    EXPECT_OK(tenure_store_unlock(store, "items", KEY("never-written"), &options));
    EXPECT_STATUS(TENURE_ERR_NOT_FOUND, tenure_store_unlock(store, "items", KEY("never-written"), &options));
}

static void leases(void) {
    tenure_lease_options options = TENURE_LEASE_OPTIONS_INIT;
    tenure_lease lease;
    tenure_lease_details details;
    char holder[300];
    uint64_t left = 0;
    uint64_t before;
    EXPECT_OK(tenure_store_write(store, "items", KEY("leased"), (const uint8_t *)"x", 1, NULL, NULL));
    before = version_now();
    EXPECT_INVALID("options", tenure_store_acquire_lease(store, "items", KEY("leased"), NULL, &lease));
    EXPECT_INVALID("options.duration_seconds", tenure_store_acquire_lease(store, "items", KEY("leased"), &options, &lease));
    options.duration_seconds = 61;
    EXPECT_INVALID("options.duration_seconds", tenure_store_acquire_lease(store, "items", KEY("leased"), &options, &lease));
    options.duration_seconds = 15;
    memset(holder, 'h', sizeof holder - 1);
    holder[sizeof holder - 1] = '\0';
    options.holder = holder;
    EXPECT_INVALID("options.holder", tenure_store_acquire_lease(store, "items", KEY("leased"), &options, &lease));
    options.holder = "worker-1";
    options.proposed_id = "not a uuid";
    EXPECT_INVALID("options.proposed_id", tenure_store_acquire_lease(store, "items", KEY("leased"), &options, &lease));
    options.proposed_id = NULL;
    options.has_break_period = true;
    EXPECT_INVALID("options.has_break_period", tenure_store_acquire_lease(store, "items", KEY("leased"), &options, &lease));
    options.has_break_period = false;
    options.timeout_ms = 86400001;
    EXPECT_INVALID("options.timeout_ms", tenure_store_acquire_lease(store, "items", KEY("leased"), &options, &lease));
    options.timeout_ms = 5;
    EXPECT_INVALID("options.timeout_ms", tenure_store_acquire_container_lease(store, "items", &options, &lease));
    options.timeout_ms = 0;
    EXPECT_TRUE(version_now() == before);
    EXPECT_OK(tenure_store_acquire_lease(store, "items", KEY("leased"), &options, &lease));
    EXPECT_OK(tenure_store_lease_info(store, "items", KEY("leased"), &details));
    EXPECT_TRUE(details.state == TENURE_LEASE_LEASED && details.has_id && strcmp(details.id, lease.id) == 0);
    EXPECT_TRUE(details.has_holder && details.holder_length == 8 && strcmp(details.holder, "worker-1") == 0);
    EXPECT_OK(tenure_store_renew_lease(store, "items", KEY("leased"), lease.id, &lease));
    EXPECT_OK(tenure_store_change_lease(store, "items", KEY("leased"), lease.id,
                                        "3f2504e0-4f89-11d3-9a0c-0305e82c3301", &lease));
    EXPECT_TRUE(strcmp(lease.id, "3f2504e0-4f89-11d3-9a0c-0305e82c3301") == 0);
    /* break: fields of an acquire refused; NULL options = the default period */
    EXPECT_INVALID("options.duration_seconds", tenure_store_break_lease(store, "items", KEY("leased"), &options, &left));
    options = (tenure_lease_options)TENURE_LEASE_OPTIONS_INIT;
    options.has_break_period = true;
    options.break_period_seconds = 61;
    EXPECT_INVALID("options.break_period_seconds", tenure_store_break_lease(store, "items", KEY("leased"), &options, &left));
    options.break_period_seconds = 0;
    EXPECT_OK(tenure_store_break_lease(store, "items", KEY("leased"), &options, &left));
    EXPECT_TRUE(left == 0);
    EXPECT_OK(tenure_store_lease_info(store, "items", KEY("leased"), &details));
    EXPECT_TRUE(details.state == TENURE_LEASE_BROKEN);
    /* infinite lease, released */
    options = (tenure_lease_options)TENURE_LEASE_OPTIONS_INIT;
    options.duration_seconds = TENURE_INFINITE;
    EXPECT_OK(tenure_store_acquire_lease(store, "items", KEY("leased"), &options, &lease));
    EXPECT_OK(tenure_store_lease_info(store, "items", KEY("leased"), &details));
    EXPECT_TRUE(!details.has_remaining && !details.has_holder);
    EXPECT_OK(tenure_store_release_lease(store, "items", KEY("leased"), lease.id));
    /* the container's lease: 15 s, so a break with the default period is still breaking */
    options.duration_seconds = 15;
    options.holder = "job-9";
    EXPECT_OK(tenure_store_acquire_container_lease(store, "items", &options, &lease));
    EXPECT_OK(tenure_store_container_lease_info(store, "items", &details));
    EXPECT_TRUE(details.has_holder && strcmp(details.holder, "job-9") == 0);
    EXPECT_OK(tenure_store_renew_container_lease(store, "items", lease.id, &lease));
    EXPECT_OK(tenure_store_change_container_lease(store, "items", lease.id,
                                                  "3f2504e0-4f89-11d3-9a0c-0305e82c3302", &lease));
    EXPECT_OK(tenure_store_break_container_lease(store, "items", NULL, &left));
    EXPECT_OK(tenure_store_container_lease_info(store, "items", &details));
    EXPECT_TRUE(details.state == TENURE_LEASE_BREAKING && left > 0);
    EXPECT_STATUS(TENURE_ERR_LEASE_IS_BREAKING_AND_CANNOT_BE_CHANGED,
                  tenure_store_change_container_lease(store, "items", lease.id,
                                                      "3f2504e0-4f89-11d3-9a0c-0305e82c3303", &lease));
    EXPECT_OK(tenure_store_release_container_lease(store, "items", lease.id));
}

/* Every call of this file with a NULL, forged, freed and wrong-kind handle: InvalidArgument
 * naming the handle, nothing changed. */
static void bad_handles(void) {
    tenure_snapshot *snapshot = NULL;
    tenure_snapshot *freed = NULL;
    tenure_batch *batch = NULL;
    tenure_write_options write = TENURE_WRITE_OPTIONS_INIT;
    tenure_lease_options lease_options = TENURE_LEASE_OPTIONS_INIT;
    tenure_lock_options lock_options = TENURE_LOCK_OPTIONS_INIT;
    tenure_value_out out;
    tenure_view view;
    tenure_lease lease;
    tenure_lease_details details;
    tenure_lock_handle handle;
    tenure_page *page = NULL;
    tenure_etag etag;
    uint64_t left = 0;
    uint64_t before = version_now();
    tenure_store *stores[3];
    tenure_snapshot *snapshots[3];
    tenure_batch *batches[3];
    int index;
    memset(&out, 0, sizeof out);
    lease_options.duration_seconds = 15;
    lock_options.lock_timeout_ms = 1000;
    EXPECT_OK(tenure_snapshot_open(store, &snapshot));
    EXPECT_OK(tenure_snapshot_open(store, &freed));
    EXPECT_OK(tenure_snapshot_free(freed));
    EXPECT_OK(tenure_batch_new(store, &batch));
    stores[0] = NULL;
    stores[1] = (tenure_store *)snapshot;
    stores[2] = (tenure_store *)(uintptr_t)0x12345;
    snapshots[0] = NULL;
    snapshots[1] = freed;
    snapshots[2] = (tenure_snapshot *)store;
    batches[0] = NULL;
    batches[1] = (tenure_batch *)store;
    batches[2] = (tenure_batch *)(uintptr_t)0x777;
    for (index = 0; index < 3; index++) {
        tenure_store *s = stores[index];
        EXPECT_INVALID("store", tenure_store_write(s, "items", KEY("k"), (const uint8_t *)"v", 1, &write, &etag));
        EXPECT_INVALID("store", tenure_store_set_properties(s, "items", KEY("k"), &write, &etag));
        EXPECT_INVALID("store", tenure_store_set_metadata(s, "items", KEY("k"), &write, &etag));
        EXPECT_INVALID("store", tenure_store_set_container_metadata(s, "items", &write, &etag));
        EXPECT_INVALID("store", tenure_store_get_value(s, "items", KEY("k"), NULL, &out));
        EXPECT_INVALID("store", tenure_store_get_if_newer(s, "items", KEY("k"), 1, &out));
        EXPECT_INVALID("store", tenure_store_get_with(s, "items", KEY("k"), NULL, NULL, NULL));
        EXPECT_INVALID("store", tenure_store_list_items(s, "items", NULL, &page));
        EXPECT_INVALID("store", tenure_store_get_and_lock(s, "items", KEY("k"), &lock_options, &handle, NULL));
        EXPECT_INVALID("store", tenure_store_put_and_unlock(s, "items", KEY("k"), (const uint8_t *)"v", 1, &lock_options, NULL));
        EXPECT_INVALID("store", tenure_store_unlock(s, "items", KEY("k"), &lock_options));
        EXPECT_INVALID("store", tenure_store_acquire_lease(s, "items", KEY("k"), &lease_options, &lease));
        EXPECT_INVALID("store", tenure_store_renew_lease(s, "items", KEY("k"), "3f2504e0-4f89-11d3-9a0c-0305e82c3301", &lease));
        EXPECT_INVALID("store", tenure_store_change_lease(s, "items", KEY("k"), "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
                                                          "3f2504e0-4f89-11d3-9a0c-0305e82c3302", &lease));
        EXPECT_INVALID("store", tenure_store_release_lease(s, "items", KEY("k"), "3f2504e0-4f89-11d3-9a0c-0305e82c3301"));
        EXPECT_INVALID("store", tenure_store_break_lease(s, "items", KEY("k"), NULL, &left));
        EXPECT_INVALID("store", tenure_store_lease_info(s, "items", KEY("k"), &details));
        EXPECT_INVALID("store", tenure_store_acquire_container_lease(s, "items", &lease_options, &lease));
        EXPECT_INVALID("store", tenure_store_renew_container_lease(s, "items", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", &lease));
        EXPECT_INVALID("store", tenure_store_change_container_lease(s, "items", "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
                                                                    "3f2504e0-4f89-11d3-9a0c-0305e82c3302", &lease));
        EXPECT_INVALID("store", tenure_store_release_container_lease(s, "items", "3f2504e0-4f89-11d3-9a0c-0305e82c3301"));
        EXPECT_INVALID("store", tenure_store_break_container_lease(s, "items", NULL, &left));
        EXPECT_INVALID("store", tenure_store_container_lease_info(s, "items", &details));
        EXPECT_INVALID("snapshot", tenure_snapshot_get_value(snapshots[index], "items", KEY("k"), NULL, &out));
        EXPECT_INVALID("snapshot", tenure_snapshot_get_view(snapshots[index], "items", KEY("k"), NULL, &view));
        EXPECT_INVALID("snapshot", tenure_snapshot_list_items(snapshots[index], "items", NULL, &page));
        EXPECT_INVALID("batch", tenure_batch_add_write(batches[index], "items", KEY("k"), (const uint8_t *)"v", 1, &write));
    }
    EXPECT_OK(tenure_snapshot_free(snapshot));
    EXPECT_OK(tenure_batch_free(batch));
    EXPECT_TRUE(version_now() == before);
}

int main(void) {
    char path[1024];
    temporary_store_path(path, sizeof path, "options");
    store = open_store(path);
    EXPECT_OK(tenure_container_create(store, "items", false, 0));
    writes();
    properties();
    batches();
    reads();
    listings();
    locks();
    leases();
    bad_handles();
    EXPECT_OK(tenure_store_close(store));
    EXPECT_OK(tenure_store_free(store));
    remove_tree(path);
    return finish("options");
}
