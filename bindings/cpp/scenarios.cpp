// The seed scenarios through tenure.hpp. Both headers are included twice on purpose.
#include "tenure.hpp"
#include "tenure.h"
#include "tenure.hpp"
#include "tenure.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

static int failures = 0;
static int checks = 0;

#define EXPECT(condition)                                                                  \
    do {                                                                                   \
        checks++;                                                                          \
        if (!(condition)) {                                                                \
            std::fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #condition); \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)

template <typename Body>
static tenure_status status_of(Body body) {
    try {
        body();
        return TENURE_OK;
    } catch (const tenure::error &failure) {
        return failure.status();
    }
}

int main() {
    char path[] = "/tmp/tenure-cpp-XXXXXX";
    if (mkdtemp(path) == nullptr) {
        return 2;
    }
    {
        tenure_store_options options{};
        options.durability = 1;
        options.disable_background_compaction = true;
        auto store = tenure::store::open(path, &options);
        store.create_container("items");

        // Two writers, one ETag: one precondition failure carrying the current ETag.
        std::string etag = store.put("items", "shared", "v0");
        std::string first = store.put("items", "shared", "a", tenure::conditions().if_match(etag));
        try {
            store.put("items", "shared", "b", tenure::conditions().if_match(etag));
            EXPECT(false);
        } catch (const tenure::error &failure) {
            EXPECT(failure.status() == TENURE_ERR_CONDITION_NOT_MET);
            EXPECT(std::string(failure.code()) == "ConditionNotMet");
            EXPECT(failure.http_status() == 412);
            EXPECT(failure.current_etag() && *failure.current_etag() == first);
        }

        // A lease, then a write without its id.
        store.put("items", "leased", "x");
        tenure::lease lease = store.acquire_lease("items", "leased", 15);
        EXPECT(status_of([&] { store.put("items", "leased", "y"); }) == TENURE_ERR_LEASE_ID_MISSING);
        store.put("items", "leased", "z", tenure::conditions().lease_id(lease.id));
        store.release_lease("items", "leased", lease.id);

        // Two get_and_lock calls.
        store.put("items", "locked", "cache");
        std::string handle = store.get_and_lock("items", "locked", 30000);
        EXPECT(status_of([&] { store.get_and_lock("items", "locked", 30000); }) ==
               TENURE_ERR_OBJECT_LOCKED);
        store.unlock("items", "locked", handle);

        // Read-modify-write under 4 threads.
        store.put("items", "counter", "0");
        std::vector<std::thread> threads;
        std::atomic<int> errors{0};
        for (int thread = 0; thread < 4; thread++) {
            threads.emplace_back([&] {
                for (int done = 0; done < 50;) {
                    tenure::item current = store.get("items", "counter");
                    std::string next = std::to_string(std::stol(current.value) + 1);
                    tenure_status status = status_of([&] {
                        store.put("items", "counter", next, tenure::conditions().if_match(current.etag));
                    });
                    if (status == TENURE_OK) {
                        done++;
                    } else if (status != TENURE_ERR_CONDITION_NOT_MET) {
                        errors++;
                        return;
                    }
                }
            });
        }
        for (auto &thread : threads) {
            thread.join();
        }
        EXPECT(errors == 0);
        EXPECT(store.get("items", "counter").value == "200");

        // Snapshot and batch through the wrapper; moved-from owners are empty.
        auto snapshot = store.snapshot();
        store.put("items", "counter", "later");
        EXPECT(snapshot.get("items", "counter").value == "200");
        auto moved = std::move(snapshot);
        auto batch = store.batch();
        batch.put("items", "b1", "1").check("items", "missing-key");
        try {
            batch.commit();
            EXPECT(false);
        } catch (const tenure::error &failure) {
            EXPECT(failure.batch_index() && *failure.batch_index() == 1);
        }
        EXPECT(status_of([&] { store.get("items", "b1"); }) == TENURE_ERR_NOT_FOUND);
        store.close();
    }
    std::string command = std::string("rm -rf '") + path + "'";
    if (std::system(command.c_str()) != 0) {
        return 2;
    }
    std::printf("cpp scenarios: %d checks, %d failures\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
