/* Shared helpers of the C test programs. */
#ifndef TENURE_TEST_COMMON_H
#define TENURE_TEST_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tenure.h"

static int failures = 0;
static int checks = 0;

static void report_last_error(void) {
    char message[512];
    size_t length = 0;
    if (tenure_last_error_message((uint8_t *)message, sizeof message - 1, &length) == TENURE_OK) {
        message[length] = '\0';
        fprintf(stderr, "    last error: %s\n", message);
    }
}

/* Expects exactly `expected`. */
#define EXPECT_STATUS(expected, call)                                                      \
    do {                                                                                   \
        tenure_status status_ = (call);                                                    \
        checks++;                                                                          \
        if (status_ != (tenure_status)(expected)) {                                        \
            fprintf(stderr, "%s:%d: %s\n    got %u (%s), expected %u (%s)\n", __FILE__,     \
                    __LINE__, #call, status_, tenure_status_name(status_),                 \
                    (unsigned)(expected), tenure_status_name((tenure_status)(expected)));  \
            report_last_error();                                                           \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)

#define EXPECT_OK(call) EXPECT_STATUS(TENURE_OK, call)

#define EXPECT_TRUE(condition)                                                             \
    do {                                                                                   \
        checks++;                                                                          \
        if (!(condition)) {                                                                \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #condition);      \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)

#define KEY(text) (const uint8_t *)(text), strlen(text)

/* Whether the thread's last failure message contains `text` (the argument it names). */
static inline int last_message_has(const char *text) {
    char message[1024];
    size_t length = 0;
    if (tenure_last_error_message((uint8_t *)message, sizeof message - 1, &length) != TENURE_OK) {
        return 0;
    }
    message[length] = '\0';
    return strstr(message, text) != NULL;
}

/* Expects InvalidArgument whose message names `argument`. */
#define EXPECT_INVALID(argument, call)                                                     \
    do {                                                                                   \
        EXPECT_STATUS(TENURE_ERR_INVALID_ARGUMENT, call);                                  \
        checks++;                                                                          \
        if (!last_message_has("`" argument "`")) {                                         \
            fprintf(stderr, "%s:%d: %s does not name `%s`\n", __FILE__, __LINE__, #call,   \
                    argument);                                                             \
            report_last_error();                                                           \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)

/* A fresh temporary directory for a store (the program removes it at exit). */
static char *temporary_store_path(char *buffer, size_t capacity, const char *name) {
    const char *base = getenv("TMPDIR");
    snprintf(buffer, capacity, "%s/tenure-c-%s-XXXXXX", base ? base : "/tmp", name);
    if (mkdtemp(buffer) == NULL) {
        perror("mkdtemp");
        exit(2);
    }
    return buffer;
}

static void remove_tree(const char *path) {
    char command[1200];
    snprintf(command, sizeof command, "rm -rf '%s'", path);
    if (system(command) != 0) {
        fprintf(stderr, "could not remove %s\n", path);
    }
}

static inline tenure_store *open_store(const char *path) {
    tenure_store_options options;
    tenure_store *store = NULL;
    memset(&options, 0, sizeof options);
    options.durability = 1; /* buffered: the tests need no fsync per write */
    options.disable_background_compaction = true;
    EXPECT_OK(tenure_store_open(path, &options, &store));
    if (store == NULL) {
        fprintf(stderr, "cannot open the store at %s\n", path);
        exit(2);
    }
    return store;
}

static int finish(const char *program) {
    printf("%s: %d checks, %d failures\n", program, checks, failures);
    return failures == 0 ? 0 : 1;
}

#endif
