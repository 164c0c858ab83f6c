/* A store handle inherited through fork(): in the child every call fails with
 * TENURE_ERR_USED_AFTER_FORK and nothing on disk changes; closing and freeing the handle in the
 * child succeed; the parent goes on, and after a reopen has all of its writes and none of the
 * child's. A child that still lives does not keep the store locked once the parent closes it. */
#define _POSIX_C_SOURCE 200809L
#include <sys/wait.h>

#include "common.h"

#define PARENT_ITEMS 100
#define CHILD_ITEMS 200

static void put_parent_items(tenure_store *store, int from, int to) {
    char key[32];
    int index;
    for (index = from; index < to; index++) {
        snprintf(key, sizeof key, "parent-%d", index);
        EXPECT_OK(tenure_put(store, "items", KEY(key), (const uint8_t *)"parent", 6, NULL, NULL));
    }
}

/* The child's checks; its exit status is the number of failures (0: all held). */
static int child(tenure_store *store) {
    char key[32];
    char message[512];
    size_t length = 0;
    uint8_t value[16];
    tenure_lease lease;
    tenure_snapshot *snapshot = NULL;
    int index;
    for (index = 0; index < CHILD_ITEMS; index++) {
        snprintf(key, sizeof key, "child-%d", index);
        EXPECT_STATUS(TENURE_ERR_USED_AFTER_FORK,
                      tenure_put(store, "items", KEY(key), (const uint8_t *)"child", 5, NULL, NULL));
    }
    EXPECT_STATUS(TENURE_ERR_USED_AFTER_FORK,
                  tenure_get(store, "items", KEY("parent-0"), NULL, value, sizeof value, &length, NULL));
    EXPECT_STATUS(TENURE_ERR_USED_AFTER_FORK, tenure_delete(store, "items", KEY("parent-1"), NULL));
    EXPECT_STATUS(TENURE_ERR_USED_AFTER_FORK,
                  tenure_lease_acquire(store, "items", KEY("parent-2"), 15, NULL, &lease));
    EXPECT_STATUS(TENURE_ERR_USED_AFTER_FORK, tenure_snapshot_open(store, &snapshot));
    EXPECT_STATUS(TENURE_ERR_USED_AFTER_FORK, tenure_store_flush(store));
    EXPECT_TRUE(strcmp(tenure_status_name(TENURE_ERR_USED_AFTER_FORK), "UsedAfterFork") == 0);
    EXPECT_TRUE(tenure_status_http(TENURE_ERR_USED_AFTER_FORK) == 500);
    EXPECT_OK(tenure_last_error_message((uint8_t *)message, sizeof message - 1, &length));
    message[length] = '\0';
    EXPECT_TRUE(strstr(message, "UsedAfterFork") != NULL && strstr(message, "fork()") != NULL);
    /* Closing and freeing the inherited handle release only the child's resources. */
    EXPECT_OK(tenure_store_close(store));
    EXPECT_OK(tenure_store_free(store));
    return failures;
}

int main(void) {
    char path[1024];
    char key[32];
    uint8_t value[16];
    size_t length = 0;
    tenure_store *store;
    tenure_store *second = NULL;
    tenure_store_options options;
    pid_t pid;
    pid_t waiting;
    int release[2];
    char byte = 0;
    int status = 0;
    int index;
    temporary_store_path(path, sizeof path, "fork");
    memset(&options, 0, sizeof options);
    options.durability = 0; /* sync: what the lost-writes report used */
    EXPECT_OK(tenure_store_open(path, &options, &store));
    EXPECT_OK(tenure_container_create(store, "items", false, 0));
    put_parent_items(store, 0, PARENT_ITEMS / 2);

    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0) {
        _exit(child(store) == 0 ? 0 : 1);
    }
    EXPECT_TRUE(pid > 0);
    EXPECT_TRUE(waitpid(pid, &status, 0) == pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    /* The parent still holds the store, and goes on. */
    EXPECT_STATUS(TENURE_ERR_STORE_LOCKED, tenure_store_open(path, &options, &second));
    put_parent_items(store, PARENT_ITEMS / 2, PARENT_ITEMS);

    /* A child that inherited the store and still lives does not keep it locked: once the
       parent closes it, it opens again. */
    EXPECT_TRUE(pipe(release) == 0);
    fflush(stdout);
    fflush(stderr);
    waiting = fork();
    if (waiting == 0) {
        close(release[1]);
        _exit(read(release[0], &byte, 1) < 0 ? 1 : 0);
    }
    EXPECT_TRUE(waiting > 0);
    close(release[0]);
    EXPECT_OK(tenure_store_close(store));
    EXPECT_OK(tenure_store_free(store));

    store = open_store(path);
    for (index = 0; index < PARENT_ITEMS; index++) {
        snprintf(key, sizeof key, "parent-%d", index);
        EXPECT_OK(tenure_get(store, "items", KEY(key), NULL, value, sizeof value, &length, NULL));
        EXPECT_TRUE(length == 6 && memcmp(value, "parent", 6) == 0);
    }
    for (index = 0; index < CHILD_ITEMS; index++) {
        snprintf(key, sizeof key, "child-%d", index);
        EXPECT_STATUS(TENURE_ERR_NOT_FOUND,
                      tenure_get(store, "items", KEY(key), NULL, value, sizeof value, &length, NULL));
    }
    EXPECT_OK(tenure_store_close(store));
    EXPECT_OK(tenure_store_free(store));
    close(release[1]);
    EXPECT_TRUE(waitpid(waiting, &status, 0) == waiting);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    remove_tree(path);
    return finish("fork");
}
