/* The per-thread error state: a failure sets it, a success clears it, and reading it — the
 * message, its size, the current ETag, the batch index, the status — never changes it. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "common.h"

/* The thread's whole message, read with a size query first. */
static size_t message_of(char *buffer, size_t capacity) {
    size_t length = 0;
    EXPECT_STATUS(TENURE_ERR_BUFFER_TOO_SMALL, tenure_last_error_message(NULL, 0, &length));
    EXPECT_TRUE(length > 0 && length < capacity);
    EXPECT_OK(tenure_last_error_message((uint8_t *)buffer, length, &length));
    buffer[length] = '\0';
    return length;
}

/* A NULL key fails; a size query, a read into a buffer too small, and a read of the reported
 * size all see the same message, and the status stays. */
static void size_query_then_read(tenure_store *store) {
    char first[256];
    char second[256];
    char tiny[4];
    size_t length = 0;
    size_t again = 0;
    EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT,
                  tenure_store_write(store, "items", NULL, 3, (const uint8_t *)"v", 1, NULL, NULL));
    EXPECT_TRUE(tenure_last_error_status() == TENURE_ERR_INVALID_ARGUMENT);
    length = message_of(first, sizeof first);
    EXPECT_TRUE(strstr(first, "InvalidArgument") == first && strstr(first, "`key`") != NULL);
    /* a buffer too small reports the same size, again and again */
    EXPECT_STATUS(TENURE_ERR_BUFFER_TOO_SMALL,
                  tenure_last_error_message((uint8_t *)tiny, sizeof tiny, &again));
    EXPECT_TRUE(again == length);
    EXPECT_STATUS(TENURE_ERR_BUFFER_TOO_SMALL, tenure_last_error_message(NULL, 0, &again));
    EXPECT_TRUE(again == length);
    again = message_of(second, sizeof second);
    EXPECT_TRUE(again == length && strcmp(first, second) == 0);
    /* bad arguments to the readers are reported and change nothing either */
    EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_last_error_message(NULL, 8, &again));
    EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_last_error_message((uint8_t *)tiny, 4, NULL));
    EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_last_error_current_etag(NULL, NULL));
    EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_last_error_batch_index(NULL, NULL));
    EXPECT_TRUE(tenure_last_error_status() == TENURE_ERR_INVALID_ARGUMENT);
    again = message_of(second, sizeof second);
    EXPECT_TRUE(strcmp(first, second) == 0);
}

/* A precondition failure's current ETag survives size queries and message reads. */
static void etag_after_a_size_query(tenure_store *store) {
    tenure_etag first;
    tenure_etag second;
    tenure_etag current;
    char legacy[TENURE_ETAG_SIZE];
    char message[256];
    bool has = false;
    size_t length = 0;
    tenure_conditions when;
    tenure_write_options options = TENURE_WRITE_OPTIONS_INIT;
    EXPECT_OK(tenure_store_write(store, "items", KEY("cas"), (const uint8_t *)"1", 1, NULL, &first));
    EXPECT_OK(tenure_store_write(store, "items", KEY("cas"), (const uint8_t *)"2", 1, NULL, &second));
    memset(&when, 0, sizeof when);
    when.if_match = first.text;
    options.conditions = &when;
    EXPECT_STATUS(TENURE_ERR_CONDITION_NOT_MET,
                  tenure_store_write(store, "items", KEY("cas"), (const uint8_t *)"3", 1, &options, NULL));
    EXPECT_STATUS(TENURE_ERR_BUFFER_TOO_SMALL, tenure_last_error_message(NULL, 0, &length));
    EXPECT_STATUS(TENURE_ERR_BUFFER_TOO_SMALL,
                  tenure_last_error_message((uint8_t *)message, 4, &length));
    message_of(message, sizeof message);
    EXPECT_TRUE(strstr(message, "ConditionNotMet") != NULL);
    EXPECT_OK(tenure_last_error_current_etag(&current, &has));
    EXPECT_TRUE(has && strcmp(current.text, second.text) == 0);
    /* the 0.1 reader sees the same, and reading twice changes nothing */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    EXPECT_OK(tenure_last_error_etag(legacy, &has));
#pragma GCC diagnostic pop
    EXPECT_TRUE(has && strcmp(legacy, second.text) == 0);
    EXPECT_OK(tenure_last_error_current_etag(&current, &has));
    EXPECT_TRUE(has && strcmp(current.text, second.text) == 0);
    EXPECT_TRUE(tenure_last_error_status() == TENURE_ERR_CONDITION_NOT_MET);
}

/* A success clears the state: status OK, empty message, no ETag, no batch index. Pure
 * functions (status names, the version, ETags of versions) change nothing. */
static void success_clears(tenure_store *store) {
    tenure_batch *batch = NULL;
    tenure_etag etag;
    uint64_t version = 0;
    uint64_t index = 0;
    bool has = true;
    size_t length = 99;
    tenure_conditions when;
    EXPECT_OK(tenure_batch_new(store, &batch));
    EXPECT_OK(tenure_batch_add_write(batch, "items", KEY("b1"), (const uint8_t *)"x", 1, NULL));
    memset(&when, 0, sizeof when);
    EXPECT_OK(tenure_batch_check(batch, "items", KEY("missing"), &when));
    EXPECT_STATUS(TENURE_ERR_NOT_FOUND, tenure_batch_commit(batch, &version));
    EXPECT_OK(tenure_batch_free(batch));
    /* the free succeeded: it cleared the state of the failed commit */
    EXPECT_TRUE(tenure_last_error_status() == TENURE_OK);
    EXPECT_OK(tenure_last_error_batch_index(&index, &has));
    EXPECT_TRUE(!has);
    EXPECT_OK(tenure_batch_new(store, &batch));
    EXPECT_OK(tenure_batch_check(batch, "items", KEY("missing"), &when));
    EXPECT_STATUS(TENURE_ERR_NOT_FOUND, tenure_batch_commit(batch, &version));
    /* pure calls and readers leave it */
    EXPECT_TRUE(strcmp(tenure_status_name(TENURE_OK), "Ok") == 0);
    EXPECT_TRUE(tenure_status_http(TENURE_ERR_NOT_FOUND) == 404);
    EXPECT_TRUE(strcmp(tenure_version(), "") != 0);
    EXPECT_OK(tenure_etag_from_version(7, &etag));
    EXPECT_TRUE(strcmp(etag.text, "\"0x0000000000000007\"") == 0);
    EXPECT_OK(tenure_last_error_batch_index(&index, &has));
    EXPECT_TRUE(has && index == 0);
    EXPECT_TRUE(tenure_last_error_status() == TENURE_ERR_NOT_FOUND);
    EXPECT_OK(tenure_batch_free(batch));
    EXPECT_OK(tenure_store_version(store, &version));
    EXPECT_TRUE(tenure_last_error_status() == TENURE_OK);
    EXPECT_OK(tenure_last_error_message(NULL, 0, &length));
    EXPECT_TRUE(length == 0);
    EXPECT_OK(tenure_last_error_current_etag(&etag, &has));
    EXPECT_TRUE(!has);
    /* freeing NULL is a success too */
    EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, tenure_store_version(store, NULL));
    EXPECT_OK(tenure_item_free(NULL));
    EXPECT_TRUE(tenure_last_error_status() == TENURE_OK);
}

/* Each thread has its own state: a failure on one is not seen on another. */
static tenure_store *thread_store;
static void *fail_elsewhere(void *unused) {
    uint64_t version = 0;
    (void)unused;
    if (tenure_last_error_status() != TENURE_OK) {
        return (void *)1;
    }
    if (tenure_store_version(thread_store, NULL) != TENURE_ERR_INVALID_ARGUMENT) {
        return (void *)1;
    }
    (void)version;
    return tenure_last_error_status() == TENURE_ERR_INVALID_ARGUMENT ? NULL : (void *)1;
}

static void per_thread(tenure_store *store) {
    pthread_t thread;
    void *result = (void *)1;
    uint64_t version = 0;
    EXPECT_OK(tenure_store_version(store, &version));
    thread_store = store;
    EXPECT_TRUE(pthread_create(&thread, NULL, fail_elsewhere, NULL) == 0);
    EXPECT_TRUE(pthread_join(thread, &result) == 0);
    EXPECT_TRUE(result == NULL);
    EXPECT_TRUE(tenure_last_error_status() == TENURE_OK);
}

/* A message longer than any fixed buffer: StoreLocked on a long path names the whole path. */
static void long_message(const char *path) {
    char deep[900];
    char message[2048];
    tenure_store *first = NULL;
    tenure_store *second = NULL;
    size_t length;
    size_t used = (size_t)snprintf(deep, sizeof deep, "%s", path);
    int level = 0;
    while (used < 600) {
        used += (size_t)snprintf(deep + used, sizeof deep - used, "/a-directory-%02d", level++);
    }
    EXPECT_OK(tenure_store_open(deep, NULL, &first));
    EXPECT_STATUS(TENURE_ERR_STORE_LOCKED, tenure_store_open(deep, NULL, &second));
    length = message_of(message, sizeof message);
    EXPECT_TRUE(length > 600 && strstr(message, deep) != NULL);
    EXPECT_OK(tenure_store_free(first));
}

int main(void) {
    char path[1024];
    tenure_store *store;
    temporary_store_path(path, sizeof path, "error-state");
    store = open_store(path);
    EXPECT_OK(tenure_container_create(store, "items", false, 0));
    EXPECT_TRUE(tenure_last_error_status() == TENURE_OK);
    size_query_then_read(store);
    etag_after_a_size_query(store);
    success_clears(store);
    per_thread(store);
    long_message(path);
    EXPECT_OK(tenure_store_close(store));
    EXPECT_OK(tenure_store_free(store));
    remove_tree(path);
    return finish("error_state");
}
