// The seed scenarios through tenure.hpp. Both headers are included twice on purpose.
#include "tenure.hpp"
#include "tenure.h"
#include "tenure.hpp"
#include "tenure.h"

#include <atomic>
#include <cstdint>
#include <optional>
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

        // Two get_and_lock calls: the second is ObjectLocked; the guard unlocks at scope exit.
        store.put("items", "locked", "cache");
        {
            tenure::lock_guard lock(store, "items", "locked", 30000);
            EXPECT(lock.item() != nullptr && lock.item()->value() == "cache");
            EXPECT(status_of([&] { tenure::lock_guard again(store, "items", "locked", 30000); }) ==
                   TENURE_ERR_OBJECT_LOCKED);
        }
        {
            tenure::lock_guard lock(store, "items", "locked", 30000);
            lock.unlock();
        }

        // Read-modify-write under 4 threads.
        store.put("items", "counter", "0");
        std::vector<std::thread> threads;
        std::atomic<int> errors{0};
        for (int thread = 0; thread < 4; thread++) {
            threads.emplace_back([&] {
                for (int done = 0; done < 50;) {
                    tenure::item_copy current = store.get("items", "counter");
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

        // A container lease: delete without its id -> LeaseIdMissing; with it -> deleted.
        store.create_container("leased");
        tenure::lease held = store.acquire_container_lease("leased", 15);
        EXPECT(store.container_lease_info("leased").state == TENURE_LEASE_LEASED);
        EXPECT(store.container_lease_info("leased").id == held.id);
        EXPECT(status_of([&] { store.delete_container("leased"); }) == TENURE_ERR_LEASE_ID_MISSING);
        tenure::lease renewed = store.renew_container_lease("leased", held.id);
        EXPECT(renewed.fence == held.fence);
        tenure::lease changed =
            store.change_container_lease("leased", held.id, "3f2504e0-4f89-11d3-9a0c-0305e82c3301");
        EXPECT(changed.id == "3f2504e0-4f89-11d3-9a0c-0305e82c3301");
        EXPECT(status_of([&] {
                   store.delete_container("leased", tenure::conditions().lease_id(held.id));
               }) == TENURE_ERR_LEASE_ID_MISMATCH_WITH_CONTAINER_OPERATION);
        EXPECT(store.break_container_lease("leased", 0) == 0);
        store.release_container_lease("leased", changed.id);
        held = store.acquire_container_lease("leased", -1);
        store.delete_container("leased", tenure::conditions().lease_id(held.id));
        EXPECT(status_of([&] { store.container_lease_info("leased"); }) ==
               TENURE_ERR_CONTAINER_NOT_FOUND);

        // Container properties and metadata; the container list.
        std::string container_etag = store.container_properties("items").etag;
        std::string new_container_etag = store.set_container_metadata(
            "items", {{"owner", "ops"}, {"tier", "gold"}}, tenure::conditions().if_match(container_etag));
        tenure::container_properties properties = store.container_properties("items");
        EXPECT(properties.etag == new_container_etag && !properties.default_ttl_seconds);
        EXPECT(properties.metadata == tenure::metadata({{"owner", "ops"}, {"tier", "gold"}}));
        EXPECT(store.list_containers() == std::vector<std::string>({"items"}));

        // set_metadata with a stale ETag: precondition failure carrying the current ETag.
        std::string stale = store.put("items", "doc", "body");
        std::string fresh = store.set_properties("items", "doc", std::string("text/plain"), {{"a", "1"}});
        try {
            store.set_metadata("items", "doc", {{"a", "2"}}, tenure::conditions().if_match(stale));
            EXPECT(false);
        } catch (const tenure::error &failure) {
            EXPECT(failure.status() == TENURE_ERR_CONDITION_NOT_MET);
            EXPECT(failure.current_etag() && *failure.current_etag() == fresh);
        }
        std::string newest =
            store.set_metadata("items", "doc", {{"a", "2"}}, tenure::conditions().if_match(fresh));
        EXPECT(newest != fresh && store.get("items", "doc").value == "body");

        // A write that sets the value, content type and metadata at once (tenure_store_write),
        // and the same in a batch (tenure_batch_add_write); read back through an item handle.
        auto properties_of = [&](const char *key) {
            tenure::item item = store.get_item("items", key);
            return std::make_pair(item.content_type(), item.metadata());
        };
        std::uint64_t before = store.version();
        std::string typed = store.write(TENURE_WRITE_CREATE, "items", "typed", "{}",
                                        {std::string("application/json"), {{"k", "v"}}});
        EXPECT(store.version() == before + 1);
        EXPECT(properties_of("typed") ==
               std::make_pair(std::string("application/json"), tenure::metadata({{"k", "v"}})));
        EXPECT(status_of([&] {
                   store.write(TENURE_WRITE_CREATE, "items", "typed", "x", {std::nullopt, {}});
               }) == TENURE_ERR_ALREADY_EXISTS);
        store.write(TENURE_WRITE_REPLACE, "items", "typed", "[]", {std::nullopt, {{"z", "1"}}},
                    tenure::conditions().if_match(typed));
        EXPECT(properties_of("typed") == std::make_pair(std::string(), tenure::metadata({{"z", "1"}})));
        store.batch()
            .write(TENURE_WRITE_PUT, "items", "batched", "b", {std::string("text/csv"), {{"n", "1"}}})
            .commit();
        EXPECT(properties_of("batched") ==
               std::make_pair(std::string("text/csv"), tenure::metadata({{"n", "1"}})));
        store.remove("items", "typed");
        store.remove("items", "batched");

        // Leases with a holder label, reported by lease info.
        tenure::lease labelled = store.acquire_lease("items", "doc", 15, {{}, std::string("worker-1"), 0});
        tenure::lease_info item_info = store.lease_info("items", "doc");
        EXPECT(item_info.state == TENURE_LEASE_LEASED && item_info.id == labelled.id);
        EXPECT(item_info.holder == std::optional<std::string>("worker-1"));
        store.release_lease("items", "doc", labelled.id);
        labelled = store.acquire_lease("items", "doc", 15);
        EXPECT(!store.lease_info("items", "doc").holder);
        store.release_lease("items", "doc", labelled.id);
        store.create_container("held");
        labelled = store.acquire_container_lease("held", 15, {{}, std::string("job-9"), 0});
        EXPECT(store.container_lease_info("held").holder == std::optional<std::string>("job-9"));
        store.release_container_lease("held", labelled.id);
        store.delete_container("held");

        // get_if_newer: nothing when current, the item when it changed.
        tenure::item_copy doc = store.get("items", "doc");
        EXPECT(!store.get_if_newer("items", "doc", doc.version));
        store.put("items", "doc", "body, edited");
        std::optional<tenure::item_copy> newer = store.get_if_newer("items", "doc", doc.version);
        EXPECT(newer && newer->value == "body, edited");

        // Paging through a snapshot; waiting for changes; compaction.
        auto pinned = store.snapshot();
        store.put("items", "after-snapshot", "x");
        size_t listed = 0;
        std::optional<std::string> token;
        do {
            tenure::page page = pinned.list("items", "", 2, token);
            listed += page.items.size();
            token = page.continuation;
        } while (token);
        EXPECT(listed + 1 == store.list("items", "", 1000).items.size());
        std::uint64_t version = store.version();
        EXPECT(!store.wait_for_changes(version, 5));
        store.put("items", "wake", "x");
        EXPECT(store.wait_for_changes(version, 1000));
        tenure_compaction_report report = store.compact();
        EXPECT(report.segments_removed == 0 || report.bytes_removed > 0);
        store.close();
    }
    std::string command = std::string("rm -rf '") + path + "'";
    if (std::system(command.c_str()) != 0) {
        return 2;
    }
    std::printf("cpp scenarios: %d checks, %d failures\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
