/* The seed stories on a store on an etcd cluster (docs/etcd.md): tenure_store_open_with (and
 * tenure_store_open) take an etcd:// URL, and two handles on it are two clients of the
 * cluster. The ETag race, a lease and its break, two cache clients, and the read-modify-write
 * loop of 4 threads on the two clients; then a cluster nobody answers for, which is
 * TENURE_ERR_UNAVAILABLE in time.
 *
 * Needs TENURE_ETCD_ENDPOINTS (scripts/etcd-cluster.sh); without it the program says it
 * skipped and succeeds, unless TENURE_REQUIRE_ETCD=1. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <time.h>

#include "common.h"

#define THREADS 4
#define INCREMENTS_PER_THREAD 10

static tenure_store *clients[2];

static tenure_store *open_url(const char *url) {
    tenure_store *store = NULL;
    EXPECT_OK(tenure_store_open_with(url, NULL, &store));
    return store;
}

/* Both clients read the same ETag; both write with if_match: the second is refused and
 * learns the winner's ETag. */
static void etag_race(tenure_store *alice, tenure_store *bob) {
    tenure_etag etag;
    tenure_etag winner;
    tenure_etag current;
    bool has_current = false;
    tenure_conditions when;
    tenure_write_options options = TENURE_WRITE_OPTIONS_INIT;
    EXPECT_OK(tenure_store_write(alice, "items", KEY("profile"), (const uint8_t *)"v0", 2, NULL, &etag));
    memset(&when, 0, sizeof when);
    when.if_match = etag.text;
    options.conditions = &when;
    EXPECT_OK(tenure_store_write(alice, "items", KEY("profile"), (const uint8_t *)"a", 1, &options, &winner));
    EXPECT_STATUS(TENURE_ERR_CONDITION_NOT_MET,
                  tenure_store_write(bob, "items", KEY("profile"), (const uint8_t *)"b", 1, &options, NULL));
    EXPECT_OK(tenure_last_error_current_etag(&current, &has_current));
    EXPECT_TRUE(has_current && strcmp(current.text, winner.text) == 0);
}

/* A lease held by one client refuses the other's writes until the other breaks it. */
static void lease_and_break(tenure_store *holder, tenure_store *other) {
    tenure_lease lease;
    tenure_lease taken;
    tenure_lease_options lease_options = TENURE_LEASE_OPTIONS_INIT;
    tenure_lease_options break_now = TENURE_LEASE_OPTIONS_INIT;
    tenure_conditions when;
    tenure_write_options options = TENURE_WRITE_OPTIONS_INIT;
    uint64_t left_ms = 1;
    EXPECT_OK(tenure_store_write(holder, "items", KEY("report"), (const uint8_t *)"draft", 5, NULL, NULL));
    lease_options.duration_seconds = 30;
    EXPECT_OK(tenure_store_acquire_lease(holder, "items", KEY("report"), &lease_options, &lease));
    EXPECT_STATUS(TENURE_ERR_LEASE_ID_MISSING,
                  tenure_store_write(other, "items", KEY("report"), (const uint8_t *)"x", 1, NULL, NULL));
    EXPECT_STATUS(TENURE_ERR_LEASE_ALREADY_PRESENT,
                  tenure_store_acquire_lease(other, "items", KEY("report"), &lease_options, &taken));
    memset(&when, 0, sizeof when);
    when.lease_id = lease.id;
    options.conditions = &when;
    EXPECT_OK(tenure_store_write(holder, "items", KEY("report"), (const uint8_t *)"final", 5, &options, NULL));
    break_now.has_break_period = true;
    break_now.break_period_seconds = 0;
    EXPECT_OK(tenure_store_break_lease(other, "items", KEY("report"), &break_now, &left_ms));
    EXPECT_TRUE(left_ms == 0);
    EXPECT_OK(tenure_store_acquire_lease(other, "items", KEY("report"), &lease_options, &taken));
    EXPECT_TRUE(taken.fence > lease.fence);
    EXPECT_STATUS(TENURE_ERR_LEASE_ID_MISMATCH_WITH_BLOB_OPERATION,
                  tenure_store_write(holder, "items", KEY("report"), (const uint8_t *)"late", 4, &options, NULL));
    EXPECT_OK(tenure_store_release_lease(other, "items", KEY("report"), taken.id));
}

/* Two cache clients: the second cannot lock what the first holds, until it puts and unlocks. */
static void two_cache_clients(tenure_store *first, tenure_store *second) {
    tenure_lock_handle handle;
    tenure_lock_handle other;
    tenure_lock_options lock = TENURE_LOCK_OPTIONS_INIT;
    tenure_lock_options unlock = TENURE_LOCK_OPTIONS_INIT;
    tenure_item *item = NULL;
    EXPECT_OK(tenure_store_write(first, "items", KEY("RadioInventory"), (const uint8_t *)"10", 2, NULL, NULL));
    lock.lock_timeout_ms = 30000;
    EXPECT_OK(tenure_store_get_and_lock(first, "items", KEY("RadioInventory"), &lock, &handle, &item));
    EXPECT_TRUE(item != NULL);
    EXPECT_STATUS(TENURE_ERR_OBJECT_LOCKED,
                  tenure_store_get_and_lock(second, "items", KEY("RadioInventory"), &lock, &other, NULL));
    unlock.lock_handle = handle.text;
    EXPECT_OK(tenure_store_put_and_unlock(first, "items", KEY("RadioInventory"), (const uint8_t *)"9", 1, &unlock, NULL));
    EXPECT_OK(tenure_store_get_and_lock(second, "items", KEY("RadioInventory"), &lock, &other, NULL));
    unlock.lock_handle = other.text;
    EXPECT_OK(tenure_store_unlock(second, "items", KEY("RadioInventory"), &unlock));
    EXPECT_OK(tenure_item_free(item));
}

/* The read-modify-write loop with if_match; thread i uses client i % 2. */
static void *increment(void *client) {
    tenure_store *store = (tenure_store *)client;
    int done = 0;
    int attempts = 0;
    while (done < INCREMENTS_PER_THREAD && attempts < 10000) {
        char text[32];
        tenure_value_out value;
        tenure_conditions when;
        tenure_write_options options = TENURE_WRITE_OPTIONS_INIT;
        tenure_status status;
        attempts++;
        memset(&value, 0, sizeof value);
        value.buffer = (uint8_t *)text;
        value.capacity = sizeof text - 1;
        if (tenure_store_get_value(store, "items", KEY("counter"), NULL, &value) != TENURE_OK) {
            return (void *)1;
        }
        text[value.length] = '\0';
        snprintf(text, sizeof text, "%ld", strtol(text, NULL, 10) + 1);
        memset(&when, 0, sizeof when);
        when.if_match = value.info.etag;
        options.conditions = &when;
        status = tenure_store_write(store, "items", KEY("counter"), (const uint8_t *)text,
                                    strlen(text), &options, NULL);
        if (status == TENURE_OK) {
            done++;
        } else if (status != TENURE_ERR_CONDITION_NOT_MET) {
            return (void *)1;
        }
    }
    return done == INCREMENTS_PER_THREAD ? NULL : (void *)1;
}

static void update_loop(void) {
    pthread_t threads[THREADS];
    char text[32];
    tenure_value_out value;
    int index;
    EXPECT_OK(tenure_store_write(clients[0], "items", KEY("counter"), (const uint8_t *)"0", 1, NULL, NULL));
    for (index = 0; index < THREADS; index++) {
        EXPECT_TRUE(pthread_create(&threads[index], NULL, increment, clients[index % 2]) == 0);
    }
    for (index = 0; index < THREADS; index++) {
        void *result = NULL;
        pthread_join(threads[index], &result);
        EXPECT_TRUE(result == NULL);
    }
    memset(&value, 0, sizeof value);
    value.buffer = (uint8_t *)text;
    value.capacity = sizeof text - 1;
    EXPECT_OK(tenure_store_get_value(clients[1], "items", KEY("counter"), NULL, &value));
    text[value.length] = '\0';
    EXPECT_TRUE(strtol(text, NULL, 10) == THREADS * INCREMENTS_PER_THREAD);
}

/* Port 1 on the loopback: nothing listens. */
static void no_quorum(void) {
    tenure_store *store = NULL;
    EXPECT_STATUS(TENURE_ERR_UNAVAILABLE,
                  tenure_store_open_with("etcd://127.0.0.1:1/p?timeout_ms=500&connect_timeout_ms=300",
                                         NULL, &store));
    EXPECT_TRUE(store == NULL);
    EXPECT_TRUE(last_message_has("nothing was committed"));
    EXPECT_TRUE(tenure_status_http(TENURE_ERR_UNAVAILABLE) == 503);
    EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_store_open_with("etcd://127.0.0.1:2379", NULL, &store));
    EXPECT_TRUE(last_message_has("url"));
}

int main(void) {
    const char *endpoints = getenv("TENURE_ETCD_ENDPOINTS");
    const char *required = getenv("TENURE_REQUIRE_ETCD");
    char url[1024];
    /* The store helpers of common.h are for directories. */
    (void)temporary_store_path;
    (void)remove_tree;
    if (endpoints == NULL || endpoints[0] == '\0') {
        if (required != NULL && strcmp(required, "1") == 0) {
            fprintf(stderr, "TENURE_REQUIRE_ETCD=1 but no cluster: run under scripts/etcd-cluster.sh\n");
            return 1;
        }
        printf("etcd: skipped (TENURE_ETCD_ENDPOINTS unset)\n");
        return 0;
    }
    snprintf(url, sizeof url, "etcd://%s/c-abi/%ld-%ld", endpoints, (long)getpid(), (long)time(NULL));
    clients[0] = open_url(url);
    clients[1] = open_url(url);
    if (clients[0] == NULL || clients[1] == NULL) {
        return finish("etcd");
    }
    EXPECT_OK(tenure_container_create(clients[0], "items", false, 0));
    etag_race(clients[0], clients[1]);
    lease_and_break(clients[0], clients[1]);
    two_cache_clients(clients[0], clients[1]);
    update_loop();
    no_quorum();
    EXPECT_OK(tenure_store_close(clients[0]));
    EXPECT_OK(tenure_store_free(clients[0]));
    EXPECT_OK(tenure_store_close(clients[1]));
    EXPECT_OK(tenure_store_free(clients[1]));
    return finish("etcd");
}
