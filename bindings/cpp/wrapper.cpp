// The whole of tenure.hpp: owners, guards, views, errors. Each RAII type is checked for what
// its destructor does (a lease released, a lock unlocked, a handle freed), and a message longer
// than any fixed buffer comes through tenure::error whole.
#include "tenure.hpp"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
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

static tenure_store_options buffered() {
    tenure_store_options options{};
    options.durability = 1;
    options.disable_background_compaction = true;
    return options;
}

// StoreLocked on a path longer than any fixed buffer: the message names the whole path.
static void long_message(const std::string &base) {
    std::string deep = base;
    for (int level = 0; deep.size() < 700; level++) {
        deep += "/a-directory-" + std::to_string(level);
    }
    tenure_store_options options = buffered();
    auto first = tenure::store::open(deep, &options);
    try {
        tenure::store::open(deep, &options);
        EXPECT(false);
    } catch (const tenure::error &failure) {
        EXPECT(failure.status() == TENURE_ERR_STORE_LOCKED);
        EXPECT(std::string(failure.code()) == "StoreLocked" && failure.http_status() == 423);
        EXPECT(failure.message().size() > 700);
        EXPECT(std::string(failure.what()).find(deep) != std::string::npos);
        EXPECT(failure.message().find("BufferTooSmall") == std::string::npos);
    }
}

static void guards(tenure::store &store) {
    store.put("items", "leased", "x");
    // A lease guard releases at scope exit, also when an exception leaves the scope.
    {
        tenure::lease_guard lease(store, "items", "leased", 15, {{}, std::string("guard"), 0});
        EXPECT(store.lease_info("items", "leased").state == TENURE_LEASE_LEASED);
        EXPECT(store.lease_info("items", "leased").holder == std::optional<std::string>("guard"));
        EXPECT(status_of([&] { store.put("items", "leased", "y"); }) == TENURE_ERR_LEASE_ID_MISSING);
        store.put("items", "leased", "z", lease.conditions());
        lease.renew();
        std::string id = lease.id();
        lease.change("3f2504e0-4f89-11d3-9a0c-0305e82c3301");
        EXPECT(lease.id() != id && lease.held());
    }
    EXPECT(store.lease_info("items", "leased").state == TENURE_LEASE_AVAILABLE);
    try {
        tenure::lease_guard lease(store, "items", "leased", TENURE_INFINITE);
        throw std::runtime_error("leaving the scope");
    } catch (const std::runtime_error &) {
    }
    EXPECT(store.lease_info("items", "leased").state == TENURE_LEASE_AVAILABLE);
    {
        tenure::lease_guard lease(store, "items", "leased", 15);
        tenure::lease_guard moved(std::move(lease));
        EXPECT(!lease.held() && moved.held());
        moved.release();
        EXPECT(!moved.held());
    }
    EXPECT(store.lease_info("items", "leased").state == TENURE_LEASE_AVAILABLE);
    EXPECT(status_of([&] { store.break_lease("items", "leased"); }) ==
           TENURE_ERR_LEASE_NOT_PRESENT_WITH_LEASE_OPERATION);

    // A container lease guard.
    store.create_container("guarded");
    {
        tenure::container_lease_guard lease(store, "guarded", 15);
        EXPECT(status_of([&] { store.delete_container("guarded"); }) == TENURE_ERR_LEASE_ID_MISSING);
        EXPECT(store.container_lease_info("guarded").id == std::optional<std::string>(lease.id()));
    }
    store.delete_container("guarded");

    // A lock guard unlocks at scope exit; put_and_unlock through it ends the lock.
    store.put("items", "cached", "v1");
    {
        tenure::lock_guard lock(store, "items", "cached", 30000);
        EXPECT(lock.item() != nullptr && lock.item()->value() == "v1" && lock.handle().size() == 32);
        EXPECT(status_of([&] { tenure::lock_guard again(store, "items", "cached", 30000); }) ==
               TENURE_ERR_OBJECT_LOCKED);
    }
    {
        tenure::lock_guard lock(store, "items", "cached", 30000);
        std::string etag = lock.put_and_unlock("v2", TENURE_INFINITE);
        EXPECT(!lock.held() && store.get("items", "cached").etag == etag);
    }
    {
        tenure::lock_guard lock(store, "items", "never-written", 1000, true);
        EXPECT(lock.item() == nullptr);
    }
    EXPECT(status_of([&] { store.get("items", "never-written"); }) == TENURE_ERR_NOT_FOUND);
}

static void views(tenure::store &store) {
    store.put("items", "viewed", "first");
    // An item handle lends its value as long as it lives.
    tenure::item item = store.get_item("items", "viewed");
    std::string_view held = item.value();
    // A snapshot view survives overwrites for as long as the snapshot lives.
    tenure::snapshot snapshot = store.snapshot();
    tenure::view view = snapshot.view("items", "viewed");
    store.put("items", "viewed", "second");
    EXPECT(held == "first" && view.value == "first" && item.version() == view.version);
    EXPECT(view.etag() == item.etag());
    EXPECT(store.get("items", "viewed").view() == "second");
#ifdef TENURE_HPP_SPAN
    EXPECT(view.bytes().size() == 5 && item.bytes()[0] == std::byte{'f'});
#endif
    tenure::snapshot moved = std::move(snapshot);
    EXPECT(moved.view("items", "viewed").value == "first" && view.value == "first");
    // get_with: the newest version, lent to the callback; results and exceptions come back.
    std::size_t length = store.get_with("items", "viewed", [](const tenure::view &lent) { return lent.value.size(); });
    EXPECT(length == 6);
    std::string copy;
    store.get_with("items", "viewed", [&](const tenure::view &lent) { copy = std::string(lent.value); });
    EXPECT(copy == "second");
    try {
        store.get_with("items", "viewed", [](const tenure::view &) -> int { throw std::logic_error("from the callback"); });
        EXPECT(false);
    } catch (const std::logic_error &failure) {
        EXPECT(std::string(failure.what()) == "from the callback");
    }
    EXPECT(status_of([&] { store.get_with("items", "absent", [](const tenure::view &) {}); }) ==
           TENURE_ERR_NOT_FOUND);
    EXPECT(status_of([&] {
               store.get_with("items", "viewed", [](const tenure::view &) {},
                              tenure::conditions().if_none_match(store.get("items", "viewed").etag));
           }) == TENURE_ERR_NOT_MODIFIED);
}

static void errors_and_the_rest(tenure::store &store) {
    std::string first = store.put("items", "cas", "1");
    std::string second = store.put("items", "cas", "2");
    try {
        store.put("items", "cas", "3", tenure::conditions().if_match(first));
        EXPECT(false);
    } catch (const tenure::error &failure) {
        EXPECT(failure.current_etag() == std::optional<std::string>(second));
        EXPECT(std::string(failure.code()) == "ConditionNotMet" && failure.http_status() == 412);
    }
    try {
        store.batch().put("items", "b", "1").create("items", "cas", "x").commit();
        EXPECT(false);
    } catch (const tenure::error &failure) {
        EXPECT(failure.status() == TENURE_ERR_ALREADY_EXISTS && failure.batch_index() == std::optional<std::uint64_t>(1));
    }
    try {
        store.put("items", "", "empty key");
        EXPECT(false);
    } catch (const tenure::error &failure) {
        EXPECT(failure.status() == TENURE_ERR_INVALID_ARGUMENT);
        EXPECT(failure.message().find("`key`") != std::string::npos);
    }
    // properties, get_properties, get_if_newer, a cursor over the feed
    tenure::item_info info = store.get_properties("items", "cas");
    EXPECT(info.etag == second && info.version == store.get("items", "cas").version);
    EXPECT(!store.get_if_newer("items", "cas", info.version));
    std::uint64_t since = store.version();
    store.put("items", "fed", "value");
    store.remove("items", "fed");
    tenure::cursor cursor = store.changes(since, std::string("items"), true);
    std::optional<tenure::change> created = cursor.next();
    EXPECT(created && created->kind == TENURE_CHANGE_CREATED && created->key == std::optional<std::string>("fed"));
    EXPECT(created && created->value == std::optional<std::string>("value") && created->container == "items");
    std::optional<tenure::change> deleted = cursor.next();
    EXPECT(deleted && deleted->kind == TENURE_CHANGE_DELETED);
    EXPECT(!cursor.next());
    // a container with a default TTL, its properties
    store.create_container("ttl", 3600);
    EXPECT(store.container_properties("ttl").default_ttl_seconds == std::optional<std::int64_t>(3600));
    store.put("ttl", "k", "v", tenure::conditions().ttl_seconds(TENURE_INFINITE));
    EXPECT(!store.get("ttl", "k").expires_at_us);
    store.put("ttl", "k", "v");
    EXPECT(store.get("ttl", "k").expires_at_us.has_value());
    store.flush();
    EXPECT(tenure::version() == tenure_version());
}

int main() {
    char path[] = "/tmp/tenure-cpp-wrapper-XXXXXX";
    if (mkdtemp(path) == nullptr) {
        return 2;
    }
    {
        tenure_store_options options = buffered();
        auto store = tenure::store::open(std::string(path) + "/store", &options);
        store.create_container("items");
        guards(store);
        views(store);
        errors_and_the_rest(store);
        long_message(path);
        tenure::store moved = std::move(store);
        moved.close();
    }
    std::string command = std::string("rm -rf '") + path + "'";
    if (std::system(command.c_str()) != 0) {
        return 2;
    }
    std::printf("cpp wrapper: %d checks, %d failures\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
