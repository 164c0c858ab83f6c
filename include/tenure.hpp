// tenure.hpp: a header-only C++17 RAII wrapper over tenure.h.
//
// Owners (store, snapshot, batch, item, page, cursor) are move-only and free their handle in
// the destructor. Every failing call throws tenure::error carrying the tenure_status, its docs/spec.md
// name, its HTTP-style number, the message, and (for a precondition failure) the current ETag.
// Besides items, snapshots, batches, leases and locks it covers container leases, container
// properties and metadata, item metadata/properties, writes that set content type and
// metadata with the value (store::write, batch::write), lease holder labels, get_if_newer,
// listing (store and snapshot), compaction and waiting for changes.
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
    /// The docs/spec.md §12 code name, e.g. "ConditionNotMet".
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

/// Runs a copy-out call `call(buffer, capacity, &length)`, growing the buffer once when the
/// library reports TENURE_ERR_BUFFER_TOO_SMALL; throws on any other failure.
template <typename Call>
std::string copy_out(Call call) {
    std::string bytes(64, '\0');
    size_t length = 0;
    tenure_status status = call(reinterpret_cast<uint8_t *>(bytes.data()), bytes.size(), &length);
    if (status == TENURE_ERR_BUFFER_TOO_SMALL) {
        bytes.resize(length);
        status = call(reinterpret_cast<uint8_t *>(bytes.data()), bytes.size(), &length);
    }
    check(status);
    bytes.resize(length);
    return bytes;
}

/// Splits `text` at each NUL (every part is NUL-terminated).
inline std::vector<std::string> split_nul(const std::string &text) {
    std::vector<std::string> parts;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\0', start);
        if (end == std::string::npos) {
            end = text.size();
        }
        parts.emplace_back(text, start, end - start);
        start = end + 1;
    }
    return parts;
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

/// User metadata: (name, value) pairs in order.
using metadata = std::vector<std::pair<std::string, std::string>>;

/// The content type (nullopt = none) and metadata a put/create/replace sets in the same write.
struct write_properties {
    std::optional<std::string> content_type;
    tenure::metadata metadata;
};

namespace detail {

/// The C form of `pairs`; the strings stay owned by `pairs`.
inline std::vector<tenure_metadata_entry> entries(const metadata &pairs) {
    std::vector<tenure_metadata_entry> raw;
    raw.reserve(pairs.size());
    for (const auto &pair : pairs) {
        raw.push_back(tenure_metadata_entry{pair.first.c_str(), pair.second.c_str()});
    }
    return raw;
}

/// Parses the library's `name\0value\0` form.
inline metadata parse_metadata(const std::string &bytes) {
    std::vector<std::string> parts = split_nul(bytes);
    metadata pairs;
    for (size_t index = 0; index + 1 < parts.size(); index += 2) {
        pairs.emplace_back(parts[index], parts[index + 1]);
    }
    return pairs;
}

}  // namespace detail

/// A lease's state as of the call (state is one of TENURE_LEASE_*).
struct lease_info {
    std::uint32_t state = TENURE_LEASE_AVAILABLE;
    std::optional<std::string> id;
    std::optional<std::uint64_t> fence;
    std::optional<std::uint64_t> remaining_ms;
    /// The label given to the acquire (tenure_lease_acquire_with_holder), if any.
    std::optional<std::string> holder;
};

namespace detail {

/// The C form of `properties`; the strings stay owned by `properties` and `entries`.
inline tenure_write_properties raw_properties(const write_properties &properties,
                                              const std::vector<tenure_metadata_entry> &entries) {
    tenure_write_properties raw{};
    raw.content_type = properties.content_type ? properties.content_type->c_str() : nullptr;
    raw.metadata = entries.data();
    raw.metadata_count = entries.size();
    return raw;
}

/// Runs a `..._get_info_with_holder` call `call(info, buffer, capacity, &length, &has)`.
template <typename Call>
tenure::lease_info lease_info_of(Call call) {
    tenure_lease_info raw{};
    bool has_holder = false;
    std::string holder = copy_out([&](uint8_t *buffer, size_t capacity, size_t *length) {
        return call(&raw, buffer, capacity, length, &has_holder);
    });
    tenure::lease_info info;
    info.state = raw.state;
    if (raw.has_id) {
        info.id = std::string(raw.id);
    }
    if (raw.has_fence) {
        info.fence = raw.fence;
    }
    if (raw.has_remaining) {
        info.remaining_ms = raw.remaining_ms;
    }
    if (has_holder) {
        info.holder = std::move(holder);
    }
    return info;
}

}  // namespace detail

struct container_properties {
    std::string etag;
    std::int64_t last_modified_us = 0;
    std::optional<std::int64_t> default_ttl_seconds;
    tenure::metadata metadata;
};

/// One page of a listing: (key, item) pairs and the continuation for the next page.
struct page {
    std::vector<std::pair<std::string, item>> items;
    std::optional<std::string> continuation;
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
    /// One page as of the snapshot: paging through one snapshot never skips or repeats.
    tenure::page list(const std::string &container, std::string_view prefix = {},
                      std::uint32_t page_size = 100,
                      const std::optional<std::string> &continuation = std::nullopt) const {
        return read_page([&](tenure_page **out) {
            return tenure_snapshot_list(handle_.get(), container.c_str(), detail::bytes(prefix),
                                        prefix.size(), page_size,
                                        continuation ? continuation->c_str() : nullptr, true, out);
        });
    }

    /// Runs a listing call and reads the page handle it returns into a tenure::page.
    template <typename List>
    static tenure::page read_page(List call) {
        tenure_page *raw = nullptr;
        detail::check(call(&raw));
        owner<tenure_page, tenure_page_free> handle(raw);
        size_t count = 0;
        detail::check(tenure_page_count(raw, &count));
        tenure::page result;
        for (size_t index = 0; index < count; index++) {
            tenure_item_info info{};
            detail::check(tenure_page_item_info(raw, index, &info));
            std::string key = detail::copy_out([&](uint8_t *buffer, size_t capacity, size_t *length) {
                return tenure_page_key(raw, index, buffer, capacity, length);
            });
            std::string value = detail::copy_out([&](uint8_t *buffer, size_t capacity, size_t *length) {
                return tenure_page_value(raw, index, buffer, capacity, length);
            });
            result.items.emplace_back(std::move(key), item{value, std::string(info.etag), info.version});
        }
        bool more = false;
        std::string token = detail::copy_out([&](uint8_t *buffer, size_t capacity, size_t *length) {
            return tenure_page_continuation(raw, reinterpret_cast<char *>(buffer), capacity, length,
                                            &more);
        });
        if (more) {
            result.continuation = std::string(token.c_str());
        }
        return result;
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
    /// A put (`kind` TENURE_WRITE_PUT, _CREATE or _REPLACE) that also sets the content type
    /// and metadata.
    batch &write(std::uint32_t kind, const std::string &container, std::string_view key,
                 std::string_view value, const write_properties &properties,
                 const conditions &when = conditions()) {
        std::vector<tenure_metadata_entry> entries = detail::entries(properties.metadata);
        tenure_write_properties raw = detail::raw_properties(properties, entries);
        detail::check(tenure_batch_write(handle_.get(), kind, container.c_str(),
                                         detail::bytes(key), key.size(), detail::bytes(value),
                                         value.size(), &raw, when.get()));
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
        return write_value(tenure_put, container, key, value, when);
    }
    std::string create(const std::string &container, std::string_view key,
                       std::string_view value, const conditions &when = conditions()) {
        return write_value(tenure_create, container, key, value, when);
    }
    std::string replace(const std::string &container, std::string_view key,
                        std::string_view value, const conditions &when = conditions()) {
        return write_value(tenure_replace, container, key, value, when);
    }
    /// The same three writes (`kind` TENURE_WRITE_PUT, _CREATE or _REPLACE) setting the
    /// item's content type and metadata in the same write; returns the new ETag.
    std::string write(std::uint32_t kind, const std::string &container, std::string_view key,
                      std::string_view value, const write_properties &properties,
                      const conditions &when = conditions()) {
        std::vector<tenure_metadata_entry> entries = detail::entries(properties.metadata);
        tenure_write_properties raw = detail::raw_properties(properties, entries);
        char etag[TENURE_ETAG_SIZE] = {0};
        detail::check(tenure_write(handle_.get(), kind, container.c_str(), detail::bytes(key),
                                   key.size(), detail::bytes(value), value.size(), &raw,
                                   when.get(), etag));
        return etag;
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
    /// As above, recording `holder` (at most TENURE_LEASE_HOLDER_MAX bytes) for lease info;
    /// `timeout_ms` > 0 waits up to that long for the lease to be free.
    lease acquire_lease(const std::string &container, std::string_view key,
                        std::int64_t duration_seconds, const std::string &holder,
                        std::uint64_t timeout_ms = 0) {
        tenure_lease raw{};
        detail::check(tenure_lease_acquire_with_holder(
            handle_.get(), container.c_str(), detail::bytes(key), key.size(), duration_seconds,
            nullptr, holder.c_str(), timeout_ms, &raw));
        return lease{raw.id, raw.fence};
    }
    /// The item's lease as of now, with its holder label.
    tenure::lease_info lease_info(const std::string &container, std::string_view key) const {
        return detail::lease_info_of([&](tenure_lease_info *info, uint8_t *buffer,
                                         size_t capacity, size_t *length, bool *has) {
            return tenure_lease_get_info_with_holder(handle_.get(), container.c_str(),
                                                     detail::bytes(key), key.size(), info,
                                                     buffer, capacity, length, has);
        });
    }
    void release_lease(const std::string &container, std::string_view key, const std::string &id) {
        detail::check(tenure_lease_release(handle_.get(), container.c_str(), detail::bytes(key),
                                           key.size(), id.c_str()));
    }

    // ----- container leases (docs/spec.md §5): deleting a leased container needs its id -----

    /// `duration_seconds`: 15..=60, or -1 for infinite; `proposed_id` empty = generated;
    /// `holder` (nullopt = none) the label lease info reports.
    lease acquire_container_lease(const std::string &name, std::int64_t duration_seconds,
                                  const std::string &proposed_id = {},
                                  const std::optional<std::string> &holder = std::nullopt) {
        tenure_lease raw{};
        const char *proposed = proposed_id.empty() ? nullptr : proposed_id.c_str();
        if (holder) {
            detail::check(tenure_container_lease_acquire_with_holder(
                handle_.get(), name.c_str(), duration_seconds, proposed, holder->c_str(), &raw));
        } else {
            detail::check(tenure_container_lease_acquire(handle_.get(), name.c_str(),
                                                         duration_seconds, proposed, &raw));
        }
        return lease{raw.id, raw.fence};
    }
    lease renew_container_lease(const std::string &name, const std::string &id) {
        tenure_lease raw{};
        detail::check(tenure_container_lease_renew(handle_.get(), name.c_str(), id.c_str(), &raw));
        return lease{raw.id, raw.fence};
    }
    lease change_container_lease(const std::string &name, const std::string &id,
                                 const std::string &proposed_id) {
        tenure_lease raw{};
        detail::check(tenure_container_lease_change(handle_.get(), name.c_str(), id.c_str(),
                                                    proposed_id.c_str(), &raw));
        return lease{raw.id, raw.fence};
    }
    void release_container_lease(const std::string &name, const std::string &id) {
        detail::check(tenure_container_lease_release(handle_.get(), name.c_str(), id.c_str()));
    }
    /// `break_period_seconds` 0..=60 or -1 (the default); returns the ms until a new acquire.
    std::uint64_t break_container_lease(const std::string &name,
                                        std::int64_t break_period_seconds = -1) {
        std::uint64_t left_ms = 0;
        detail::check(tenure_container_lease_break(handle_.get(), name.c_str(),
                                                   break_period_seconds, &left_ms));
        return left_ms;
    }
    tenure::lease_info container_lease_info(const std::string &name) const {
        return detail::lease_info_of([&](tenure_lease_info *info, uint8_t *buffer,
                                         size_t capacity, size_t *length, bool *has) {
            return tenure_container_lease_get_info_with_holder(handle_.get(), name.c_str(), info,
                                                               buffer, capacity, length, has);
        });
    }

    // ----- container properties -----

    tenure::container_properties container_properties(const std::string &name) const {
        tenure_container_properties raw{};
        std::string bytes = detail::copy_out([&](uint8_t *buffer, size_t capacity, size_t *length) {
            return tenure_container_get_properties(handle_.get(), name.c_str(), &raw, buffer,
                                                   capacity, length);
        });
        tenure::container_properties properties;
        properties.etag = raw.etag;
        properties.last_modified_us = raw.last_modified_us;
        if (raw.has_default_ttl) {
            properties.default_ttl_seconds = raw.default_ttl_seconds;
        }
        properties.metadata = detail::parse_metadata(bytes);
        return properties;
    }
    /// Replaces the container's metadata; returns its new ETag.
    std::string set_container_metadata(const std::string &name, const tenure::metadata &pairs,
                                       const conditions &when = conditions()) {
        std::vector<tenure_metadata_entry> raw = detail::entries(pairs);
        char etag[TENURE_ETAG_SIZE] = {0};
        detail::check(tenure_container_set_metadata(handle_.get(), name.c_str(), raw.data(),
                                                    raw.size(), when.get(), etag));
        return etag;
    }
    std::vector<std::string> list_containers() const {
        size_t count = 0;
        return detail::split_nul(detail::copy_out([&](uint8_t *buffer, size_t capacity, size_t *length) {
            return tenure_list_containers(handle_.get(), buffer, capacity, length, &count);
        }));
    }

    // ----- item properties, versioned reads, listing -----

    /// Replaces the item's metadata, keeping value and content type; returns the new ETag.
    std::string set_metadata(const std::string &container, std::string_view key,
                             const tenure::metadata &pairs, const conditions &when = conditions()) {
        std::vector<tenure_metadata_entry> raw = detail::entries(pairs);
        char etag[TENURE_ETAG_SIZE] = {0};
        detail::check(tenure_set_metadata(handle_.get(), container.c_str(), detail::bytes(key),
                                          key.size(), raw.data(), raw.size(), when.get(), etag));
        return etag;
    }
    /// Replaces content type (nullopt = none) and metadata, keeping the value.
    std::string set_properties(const std::string &container, std::string_view key,
                               const std::optional<std::string> &content_type,
                               const tenure::metadata &pairs,
                               const conditions &when = conditions()) {
        std::vector<tenure_metadata_entry> raw = detail::entries(pairs);
        char etag[TENURE_ETAG_SIZE] = {0};
        detail::check(tenure_set_properties(
            handle_.get(), container.c_str(), detail::bytes(key), key.size(),
            content_type ? content_type->c_str() : nullptr, raw.data(), raw.size(), when.get(),
            etag));
        return etag;
    }
    /// The item if its version differs from `version`, else nullopt (docs/spec.md §6).
    std::optional<item> get_if_newer(const std::string &container, std::string_view key,
                                     std::uint64_t version) const {
        bool newer = false;
        item found = snapshot::read([&](uint8_t *buffer, size_t capacity, size_t *length,
                                        tenure_item_info *info) {
            return tenure_get_if_newer(handle_.get(), container.c_str(), detail::bytes(key),
                                       key.size(), version, buffer, capacity, length, info,
                                       &newer);
        });
        if (!newer) {
            return std::nullopt;
        }
        return found;
    }
    tenure::page list(const std::string &container, std::string_view prefix = {},
                      std::uint32_t page_size = 100,
                      const std::optional<std::string> &continuation = std::nullopt) const {
        return snapshot::read_page([&](tenure_page **out) {
            return tenure_list(handle_.get(), container.c_str(), detail::bytes(prefix),
                               prefix.size(), page_size,
                               continuation ? continuation->c_str() : nullptr, true, out);
        });
    }

    // ----- store -----

    tenure_compaction_report compact() {
        tenure_compaction_report report{};
        detail::check(tenure_store_compact(handle_.get(), &report));
        return report;
    }
    /// Waits up to `timeout_ms` (at most 24 h) for a change newer than `since`.
    bool wait_for_changes(std::uint64_t since, std::uint64_t timeout_ms) const {
        bool changed = false;
        detail::check(tenure_store_wait_for_changes(handle_.get(), since, timeout_ms, &changed));
        return changed;
    }
    std::uint64_t version() const {
        std::uint64_t version = 0;
        detail::check(tenure_store_version(handle_.get(), &version));
        return version;
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
    std::string write_value(Write call, const std::string &container, std::string_view key,
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
