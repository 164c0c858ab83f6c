// tenure.hpp: a header-only C++17 RAII wrapper over tenure.h.
//
// Owners (store, snapshot, batch, item, page, cursor) are move-only and free their handle in
// the destructor. Every failing call throws tenure::error carrying the tenure_status, its SPEC
// name, its HTTP-style number, the message, and (for a precondition failure) the current ETag.
#ifndef TENURE_HPP
#define TENURE_HPP

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tenure.h"

namespace tenure {

class error : public std::runtime_error {
public:
    error(tenure_status status, std::string message, std::optional<std::string> current_etag,
          std::optional<std::uint64_t> batch_index)
        : std::runtime_error(std::move(message)),
          status_(status),
          current_etag_(std::move(current_etag)),
          batch_index_(batch_index) {}

    tenure_status status() const noexcept { return status_; }
    /// The SPEC §12 code name, e.g. "ConditionNotMet".
    const char *code() const noexcept { return tenure_status_name(status_); }
    std::uint32_t http_status() const noexcept { return tenure_status_http(status_); }
    const std::optional<std::string> &current_etag() const noexcept { return current_etag_; }
    const std::optional<std::uint64_t> &batch_index() const noexcept { return batch_index_; }

private:
    tenure_status status_;
    std::optional<std::string> current_etag_;
    std::optional<std::uint64_t> batch_index_;
};

namespace detail {

inline void check(tenure_status status) {
    if (status == TENURE_OK) {
        return;
    }
    std::string message(256, '\0');
    size_t length = 0;
    if (tenure_last_error_message(reinterpret_cast<uint8_t *>(message.data()), message.size(),
                                  &length) == TENURE_ERR_BUFFER_TOO_SMALL) {
        message.resize(length);
        tenure_last_error_message(reinterpret_cast<uint8_t *>(message.data()), message.size(),
                                  &length);
    }
    message.resize(length);
    char etag[TENURE_ETAG_SIZE] = {0};
    bool has_etag = false;
    std::optional<std::string> current;
    if (tenure_last_error_etag(etag, &has_etag) == TENURE_OK && has_etag) {
        current = std::string(etag);
    }
    std::uint64_t index = 0;
    bool has_index = false;
    std::optional<std::uint64_t> batch_index;
    if (tenure_last_error_batch_index(&index, &has_index) == TENURE_OK && has_index) {
        batch_index = index;
    }
    throw error(status, message, current, batch_index);
}

inline const uint8_t *bytes(std::string_view text) {
    return reinterpret_cast<const uint8_t *>(text.data());
}

}  // namespace detail

/// Conditions and write options; build with the setters, pass to a call.
class conditions {
public:
    conditions() : raw_{} {}
    conditions &if_match(std::string etag) {
        if_match_ = std::move(etag);
        return *this;
    }
    conditions &if_none_match(std::string etag) {
        if_none_match_ = std::move(etag);
        return *this;
    }
    conditions &if_version(std::uint64_t version) {
        raw_.has_if_version = true;
        raw_.if_version = version;
        return *this;
    }
    conditions &lease_id(std::string id) {
        lease_id_ = std::move(id);
        return *this;
    }
    conditions &lock_handle(std::string handle) {
        lock_handle_ = std::move(handle);
        return *this;
    }
    conditions &ttl_seconds(std::int64_t seconds) {
        raw_.has_ttl = true;
        raw_.ttl_seconds = seconds;
        return *this;
    }
    const tenure_conditions *get() const {
        raw_.if_match = if_match_ ? if_match_->c_str() : nullptr;
        raw_.if_none_match = if_none_match_ ? if_none_match_->c_str() : nullptr;
        raw_.lease_id = lease_id_ ? lease_id_->c_str() : nullptr;
        raw_.lock_handle = lock_handle_ ? lock_handle_->c_str() : nullptr;
        return &raw_;
    }

private:
    mutable tenure_conditions raw_;
    std::optional<std::string> if_match_, if_none_match_, lease_id_, lock_handle_;
};

/// What a read returns.
struct item {
    std::string value;
    std::string etag;
    std::uint64_t version = 0;
};

struct lease {
    std::string id;
    std::uint64_t fence = 0;
};

template <typename Handle, tenure_status (*Free)(Handle *)>
class owner {
public:
    owner() = default;
    explicit owner(Handle *handle) : handle_(handle) {}
    owner(const owner &) = delete;
    owner &operator=(const owner &) = delete;
    owner(owner &&other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
    owner &operator=(owner &&other) noexcept {
        if (this != &other) {
            reset();
            handle_ = std::exchange(other.handle_, nullptr);
        }
        return *this;
    }
    ~owner() { reset(); }
    Handle *get() const noexcept { return handle_; }
    void reset() noexcept {
        if (handle_ != nullptr) {
            Free(handle_);
            handle_ = nullptr;
        }
    }

private:
    Handle *handle_ = nullptr;
};

class snapshot {
public:
    explicit snapshot(tenure_snapshot *handle) : handle_(handle) {}
    item get(const std::string &container, std::string_view key) const {
        return read([&](uint8_t *buffer, size_t capacity, size_t *length, tenure_item_info *info) {
            return tenure_snapshot_get(handle_.get(), container.c_str(), detail::bytes(key),
                                       key.size(), nullptr, buffer, capacity, length, info);
        });
    }
    std::uint64_t version() const {
        std::uint64_t version = 0;
        detail::check(tenure_snapshot_version(handle_.get(), &version));
        return version;
    }

    template <typename Read>
    static item read(Read call) {
        std::string value(64, '\0');
        size_t length = 0;
        tenure_item_info info{};
        tenure_status status =
            call(reinterpret_cast<uint8_t *>(value.data()), value.size(), &length, &info);
        if (status == TENURE_ERR_BUFFER_TOO_SMALL) {
            value.resize(length);
            status = call(reinterpret_cast<uint8_t *>(value.data()), value.size(), &length, &info);
        }
        detail::check(status);
        value.resize(length);
        return item{value, std::string(info.etag), info.version};
    }

private:
    owner<tenure_snapshot, tenure_snapshot_free> handle_;
};

class batch {
public:
    explicit batch(tenure_batch *handle) : handle_(handle) {}
    batch &put(const std::string &container, std::string_view key, std::string_view value,
               const conditions &when = conditions()) {
        detail::check(tenure_batch_put(handle_.get(), container.c_str(), detail::bytes(key),
                                       key.size(), detail::bytes(value), value.size(), when.get()));
        return *this;
    }
    batch &remove(const std::string &container, std::string_view key,
                  const conditions &when = conditions()) {
        detail::check(tenure_batch_delete(handle_.get(), container.c_str(), detail::bytes(key),
                                          key.size(), when.get()));
        return *this;
    }
    batch &check(const std::string &container, std::string_view key,
                 const conditions &when = conditions()) {
        detail::check(tenure_batch_check(handle_.get(), container.c_str(), detail::bytes(key),
                                         key.size(), when.get()));
        return *this;
    }
    std::uint64_t commit() {
        std::uint64_t version = 0;
        detail::check(tenure_batch_commit(handle_.get(), &version));
        return version;
    }

private:
    owner<tenure_batch, tenure_batch_free> handle_;
};

class store {
public:
    static store open(const std::string &path, const tenure_store_options *options = nullptr) {
        tenure_store *handle = nullptr;
        detail::check(tenure_store_open(path.c_str(), options, &handle));
        return store(handle);
    }
    /// Flushes and closes now (the destructor closes too, without reporting errors).
    void close() { detail::check(tenure_store_close(handle_.get())); }

    void create_container(const std::string &name) {
        detail::check(tenure_container_create(handle_.get(), name.c_str(), false, 0));
    }
    void delete_container(const std::string &name, const conditions &when = conditions()) {
        detail::check(tenure_container_delete(handle_.get(), name.c_str(), when.get()));
    }
    std::string put(const std::string &container, std::string_view key, std::string_view value,
                    const conditions &when = conditions()) {
        return write(tenure_put, container, key, value, when);
    }
    std::string create(const std::string &container, std::string_view key,
                       std::string_view value, const conditions &when = conditions()) {
        return write(tenure_create, container, key, value, when);
    }
    std::string replace(const std::string &container, std::string_view key,
                        std::string_view value, const conditions &when = conditions()) {
        return write(tenure_replace, container, key, value, when);
    }
    void remove(const std::string &container, std::string_view key,
                const conditions &when = conditions()) {
        detail::check(tenure_delete(handle_.get(), container.c_str(), detail::bytes(key),
                                    key.size(), when.get()));
    }
    item get(const std::string &container, std::string_view key,
             const conditions &when = conditions()) const {
        return snapshot::read([&](uint8_t *buffer, size_t capacity, size_t *length,
                                  tenure_item_info *info) {
            return tenure_get(handle_.get(), container.c_str(), detail::bytes(key), key.size(),
                              when.get(), buffer, capacity, length, info);
        });
    }
    tenure::snapshot snapshot() const {
        tenure_snapshot *handle = nullptr;
        detail::check(tenure_snapshot_open(handle_.get(), &handle));
        return tenure::snapshot(handle);
    }
    tenure::batch batch() const {
        tenure_batch *handle = nullptr;
        detail::check(tenure_batch_new(handle_.get(), &handle));
        return tenure::batch(handle);
    }
    /// `duration_seconds`: 15..=60, or -1 for infinite.
    lease acquire_lease(const std::string &container, std::string_view key,
                        std::int64_t duration_seconds) {
        tenure_lease raw{};
        detail::check(tenure_lease_acquire(handle_.get(), container.c_str(), detail::bytes(key),
                                           key.size(), duration_seconds, nullptr, &raw));
        return lease{raw.id, raw.fence};
    }
    void release_lease(const std::string &container, std::string_view key, const std::string &id) {
        detail::check(tenure_lease_release(handle_.get(), container.c_str(), detail::bytes(key),
                                           key.size(), id.c_str()));
    }
    /// Locks the item; returns the lock handle.
    std::string get_and_lock(const std::string &container, std::string_view key,
                             std::uint64_t lock_timeout_ms) {
        char handle[TENURE_LOCK_HANDLE_SIZE] = {0};
        detail::check(tenure_get_and_lock(handle_.get(), container.c_str(), detail::bytes(key),
                                          key.size(), lock_timeout_ms, false, handle, nullptr));
        return handle;
    }
    void unlock(const std::string &container, std::string_view key, const std::string &handle) {
        detail::check(tenure_unlock(handle_.get(), container.c_str(), detail::bytes(key),
                                    key.size(), handle.c_str(), false, 0));
    }
    tenure_store *get() const noexcept { return handle_.get(); }

private:
    explicit store(tenure_store *handle) : handle_(handle) {}

    template <typename Write>
    std::string write(Write call, const std::string &container, std::string_view key,
                      std::string_view value, const conditions &when) {
        char etag[TENURE_ETAG_SIZE] = {0};
        detail::check(call(handle_.get(), container.c_str(), detail::bytes(key), key.size(),
                           detail::bytes(value), value.size(), when.get(), etag));
        return etag;
    }

    owner<tenure_store, tenure_store_free> handle_;
};

}  // namespace tenure

#endif
