// tenure.hpp: a header-only C++17 RAII wrapper of the whole C API of tenure.h.
//
// Owners free their handle in the destructor and are move-only: tenure::store, snapshot, batch,
// item, cursor. Guards release what they hold when they leave scope: tenure::lease_guard and
// container_lease_guard (release the lease), lock_guard (unlocks, unless put_and_unlock ran).
// Every failing call throws tenure::error, carrying the status, its docs/spec.md §12 code name
// and HTTP-style number, the whole message, the item's current ETag (precondition failures)
// and the failing operation of a batch. Values come back as std::string, or lent without a copy
// as std::string_view (and std::span<const std::byte> under C++20): an item handle's value
// (tenure::item), a snapshot's view (snapshot::view, valid while the snapshot lives) and
// store::get_with (valid during the callback). The contract: crates/tenure-ffi/README.md.
#ifndef TENURE_HPP
#define TENURE_HPP

#if defined(_MSVC_LANG)
#define TENURE_HPP_CPLUSPLUS _MSVC_LANG
#else
#define TENURE_HPP_CPLUSPLUS __cplusplus
#endif
#if TENURE_HPP_CPLUSPLUS < 201703L
#error "tenure.hpp requires C++17 or newer (std::optional, std::string_view): compile with -std=c++17 or later; C code includes tenure.h"
#else

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>
#if TENURE_HPP_CPLUSPLUS >= 202002L && defined(__has_include)
#if __has_include(<span>)
#include <span>
#define TENURE_HPP_SPAN 1
#endif
#endif

#include "tenure.h"

namespace tenure {

/// The library's version, e.g. "0.1.0" (TENURE_VERSION_* are the header's).
inline std::string_view version() noexcept { return tenure_version(); }

/// A failed call: the status, its code name and HTTP-style number, the message, the item's
/// current ETag (a precondition failure on an existing item) and a failed batch's operation.
class error : public std::runtime_error {
public:
    error(tenure_status status, const std::string &message, std::optional<std::string> current_etag,
          std::optional<std::uint64_t> batch_index)
        : std::runtime_error(message),
          status_(status),
          current_etag_(std::move(current_etag)),
          batch_index_(batch_index) {}

    tenure_status status() const noexcept { return status_; }
    /// The docs/spec.md §12 code name, e.g. "ConditionNotMet".
    const char *code() const noexcept { return tenure_status_name(static_cast<std::uint32_t>(status_)); }
    std::uint32_t http_status() const noexcept {
        return tenure_status_http(static_cast<std::uint32_t>(status_));
    }
    /// The whole message, as tenure_last_error_message gave it.
    std::string message() const { return what(); }
    const std::optional<std::string> &current_etag() const noexcept { return current_etag_; }
    const std::optional<std::uint64_t> &batch_index() const noexcept { return batch_index_; }

private:
    tenure_status status_;
    std::optional<std::string> current_etag_;
    std::optional<std::uint64_t> batch_index_;
};

namespace detail {

/// The calling thread's last failure message, whatever its length: a size query, then a read
/// of exactly that size (reading the error state never changes it).
inline std::string last_message() {
    std::string message;
    std::size_t length = 0;
    tenure_status status = tenure_last_error_message(nullptr, 0, &length);
    while (status == TENURE_ERR_BUFFER_TOO_SMALL) {
        message.resize(length);
        status = tenure_last_error_message(reinterpret_cast<std::uint8_t *>(message.data()),
                                           message.size(), &length);
    }
    message.resize(status == TENURE_OK ? length : 0);
    return message;
}

/// The thread's error state as a tenure::error of `status`.
inline error last_error(tenure_status status) {
    std::string message = last_message();
    tenure_etag etag{};
    bool has_etag = false;
    std::optional<std::string> current;
    if (tenure_last_error_current_etag(&etag, &has_etag) == TENURE_OK && has_etag) {
        current = std::string(etag.text);
    }
    std::uint64_t index = 0;
    bool has_index = false;
    std::optional<std::uint64_t> batch_index;
    if (tenure_last_error_batch_index(&index, &has_index) == TENURE_OK && has_index) {
        batch_index = index;
    }
    return error(status, message, std::move(current), batch_index);
}

inline void check(tenure_status status) {
    if (status != TENURE_OK) {
        throw last_error(status);
    }
}

inline const std::uint8_t *bytes(std::string_view text) {
    return reinterpret_cast<const std::uint8_t *>(text.data());
}

/// Runs a copy-out call `call(buffer, capacity, &length)`: a size query, then the copy.
template <typename Call>
std::string copy_out(Call call) {
    std::string bytes;
    std::size_t length = 0;
    tenure_status status = call(nullptr, 0, &length);
    while (status == TENURE_ERR_BUFFER_TOO_SMALL) {
        bytes.resize(length);
        status = call(reinterpret_cast<std::uint8_t *>(bytes.data()), bytes.size(), &length);
    }
    check(status);
    bytes.resize(length);
    return bytes;
}

/// Splits `text` at each NUL (every part is NUL-terminated).
inline std::vector<std::string> split_nul(const std::string &text) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\0', start);
        if (end == std::string::npos) {
            end = text.size();
        }
        parts.emplace_back(text, start, end - start);
        start = end + 1;
    }
    return parts;
}

inline const char *c_str(const std::optional<std::string> &text) {
    return text ? text->c_str() : nullptr;
}

/// A move-only owner of a C handle, freed by `Free`.
template <typename Handle, tenure_status (*Free)(Handle *)>
class owner {
public:
    owner() = default;
    explicit owner(Handle *handle) noexcept : handle_(handle) {}
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
    explicit operator bool() const noexcept { return handle_ != nullptr; }
    void reset() noexcept {
        if (handle_ != nullptr) {
            Free(handle_);
            handle_ = nullptr;
        }
    }

private:
    Handle *handle_ = nullptr;
};

}  // namespace detail

/// User metadata: (name, value) pairs in order.
using metadata = std::vector<std::pair<std::string, std::string>>;

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
    for (std::size_t index = 0; index + 1 < parts.size(); index += 2) {
        pairs.emplace_back(parts[index], parts[index + 1]);
    }
    return pairs;
}

}  // namespace detail

/// Conditions and write options (docs/spec.md §3), built with the setters; an unset field is
/// absent. Pass it to any call that takes conditions.
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
    /// Microseconds since the Unix epoch.
    conditions &if_modified_since(std::int64_t microseconds) {
        raw_.has_if_modified_since = true;
        raw_.if_modified_since_us = microseconds;
        return *this;
    }
    conditions &if_unmodified_since(std::int64_t microseconds) {
        raw_.has_if_unmodified_since = true;
        raw_.if_unmodified_since_us = microseconds;
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
    /// Writes: 1..=4294967295 seconds, or TENURE_INFINITE (never expires).
    conditions &ttl_seconds(std::int64_t seconds) {
        raw_.has_ttl = true;
        raw_.ttl_seconds = seconds;
        return *this;
    }
    /// The C struct, or nullptr when nothing is set (the fast path of a plain read).
    const tenure_conditions *get() const {
        raw_.if_match = detail::c_str(if_match_);
        raw_.if_none_match = detail::c_str(if_none_match_);
        raw_.lease_id = detail::c_str(lease_id_);
        raw_.lock_handle = detail::c_str(lock_handle_);
        bool any = if_match_ || if_none_match_ || lease_id_ || lock_handle_ || raw_.has_if_version ||
                   raw_.has_if_modified_since || raw_.has_if_unmodified_since || raw_.has_ttl;
        return any ? &raw_ : nullptr;
    }

private:
    mutable tenure_conditions raw_;
    std::optional<std::string> if_match_, if_none_match_, lease_id_, lock_handle_;
};

namespace detail {

inline tenure_read_options read_options(const conditions &when) {
    tenure_read_options options = TENURE_READ_OPTIONS_INIT;
    options.conditions = when.get();
    return options;
}

}  // namespace detail

/// What a read reports beside the value.
struct item_info {
    std::uint64_t version = 0;
    std::string etag;
    std::int64_t last_modified_us = 0;
    std::optional<std::int64_t> expires_at_us;
    std::uint64_t value_length = 0;
};

namespace detail {

inline item_info info_of(const tenure_item_info &raw) {
    item_info info;
    info.version = raw.version;
    info.etag = raw.etag;
    info.last_modified_us = raw.last_modified_us;
    if (raw.has_expires_at) {
        info.expires_at_us = raw.expires_at_us;
    }
    info.value_length = raw.value_length;
    return info;
}

}  // namespace detail

/// An item read with a copy of its value (store::get, snapshot::get).
struct item_copy {
    std::string value;
    std::string etag;
    std::uint64_t version = 0;
    std::int64_t last_modified_us = 0;
    std::optional<std::int64_t> expires_at_us;

    std::string_view view() const noexcept { return value; }
#ifdef TENURE_HPP_SPAN
    std::span<const std::byte> bytes() const noexcept {
        return std::as_bytes(std::span<const char>(value.data(), value.size()));
    }
#endif
};

/// An item handle (store::get_item, lock_guard::item): its value is lent without a copy for as
/// long as the handle lives.
class item {
public:
    explicit item(tenure_item *handle) noexcept : handle_(handle) {}
    /// The value, lent from the handle.
    std::string_view value() const {
        const std::uint8_t *data = nullptr;
        std::size_t length = 0;
        detail::check(tenure_item_value_view(handle_.get(), &data, &length));
        return std::string_view(reinterpret_cast<const char *>(data), length);
    }
#ifdef TENURE_HPP_SPAN
    std::span<const std::byte> bytes() const { return std::as_bytes(std::span<const char>(value())); }
#endif
    item_info info() const {
        tenure_item_info raw{};
        detail::check(tenure_item_get_info(handle_.get(), &raw));
        return detail::info_of(raw);
    }
    std::string etag() const { return info().etag; }
    std::uint64_t version() const { return info().version; }
    /// The content type (empty when the item has none).
    std::string content_type() const {
        return detail::copy_out([&](std::uint8_t *buffer, std::size_t capacity, std::size_t *length) {
            return tenure_item_content_type(handle_.get(), buffer, capacity, length);
        });
    }
    tenure::metadata metadata() const {
        return detail::parse_metadata(
            detail::copy_out([&](std::uint8_t *buffer, std::size_t capacity, std::size_t *length) {
                return tenure_item_metadata(handle_.get(), buffer, capacity, length);
            }));
    }
    tenure_item *get() const noexcept { return handle_.get(); }

private:
    detail::owner<tenure_item, tenure_item_free> handle_;
};

/// A value lent from the store's mapped log (snapshot::view, store::get_with).
struct view {
    std::string_view value;
    std::uint64_t version = 0;
    std::int64_t last_modified_us = 0;
    std::optional<std::int64_t> expires_at_us;

    /// The item's ETag text (derived from its version).
    std::string etag() const {
        tenure_etag text{};
        detail::check(tenure_etag_from_version(version, &text));
        return text.text;
    }
#ifdef TENURE_HPP_SPAN
    std::span<const std::byte> bytes() const noexcept { return std::as_bytes(std::span<const char>(value)); }
#endif
};

namespace detail {

inline tenure::view view_of(const tenure_view &raw) {
    tenure::view view;
    view.value = std::string_view(reinterpret_cast<const char *>(raw.value), raw.value_length);
    view.version = raw.version;
    view.last_modified_us = raw.last_modified_us;
    if (raw.has_expires_at) {
        view.expires_at_us = raw.expires_at_us;
    }
    return view;
}

/// A copy-out read through `call(&value_out)`: a first try with a small buffer, then exactly
/// the size reported.
template <typename Read>
item_copy read_copy(Read call) {
    item_copy result;
    result.value.resize(64);
    tenure_value_out out{};
    out.buffer = reinterpret_cast<std::uint8_t *>(result.value.data());
    out.capacity = result.value.size();
    tenure_status status = call(&out);
    while (status == TENURE_ERR_BUFFER_TOO_SMALL) {
        result.value.resize(out.length);
        out.buffer = reinterpret_cast<std::uint8_t *>(result.value.data());
        out.capacity = result.value.size();
        status = call(&out);
    }
    check(status);
    result.value.resize(out.length);
    result.etag = out.info.etag;
    result.version = out.info.version;
    result.last_modified_us = out.info.last_modified_us;
    if (out.info.has_expires_at) {
        result.expires_at_us = out.info.expires_at_us;
    }
    return result;
}

}  // namespace detail

/// A granted lease: its id and fencing token.
struct lease {
    std::string id;
    std::uint64_t fence = 0;
};

/// A lease's state as of the call (state is one of TENURE_LEASE_*).
struct lease_info {
    std::uint32_t state = TENURE_LEASE_AVAILABLE;
    std::optional<std::string> id;
    std::optional<std::uint64_t> fence;
    std::optional<std::uint64_t> remaining_ms;
    /// The label given to the acquire, if any.
    std::optional<std::string> holder;
};

/// How to acquire a lease beside its duration.
struct lease_options {
    /// The id to use (a UUID); empty = generated.
    std::string proposed_id;
    /// A label lease info reports.
    std::optional<std::string> holder;
    /// Items only: wait up to this long for the lease to be free; 0 = never wait.
    std::uint64_t timeout_ms = 0;
};

/// The content type (nullopt = none) and metadata a write sets with the value.
struct write_properties {
    std::optional<std::string> content_type;
    tenure::metadata metadata;
};

struct container_properties {
    std::string etag;
    std::int64_t last_modified_us = 0;
    std::optional<std::int64_t> default_ttl_seconds;
    tenure::metadata metadata;
};

/// One item of a page.
struct page_item {
    std::string key;
    std::string value;
    item_info info;
};

/// One page of a listing and the continuation of the next (nullopt on the last page).
struct page {
    std::vector<page_item> items;
    std::optional<std::string> continuation;
};

/// One change of the change feed (kind is one of TENURE_CHANGE_*).
struct change {
    std::uint64_t version = 0;
    std::uint32_t kind = 0;
    std::string container;
    std::optional<std::string> key;
    std::optional<std::string> etag;
    std::optional<std::string> value;
};

namespace detail {

inline tenure::lease lease_of(const tenure_lease &raw) { return tenure::lease{raw.id, raw.fence}; }

inline tenure::lease_info lease_info_of(const tenure_lease_details &raw) {
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
    if (raw.has_holder) {
        info.holder = std::string(raw.holder, raw.holder_length);
    }
    return info;
}

inline tenure_lease_options acquire_options(std::int64_t duration_seconds, const lease_options &options) {
    tenure_lease_options raw = TENURE_LEASE_OPTIONS_INIT;
    raw.duration_seconds = duration_seconds;
    raw.proposed_id = options.proposed_id.empty() ? nullptr : options.proposed_id.c_str();
    raw.holder = c_str(options.holder);
    raw.timeout_ms = options.timeout_ms;
    return raw;
}

inline tenure_lease_options break_options(std::optional<std::int64_t> period_seconds) {
    tenure_lease_options raw = TENURE_LEASE_OPTIONS_INIT;
    raw.has_break_period = period_seconds.has_value();
    raw.break_period_seconds = period_seconds.value_or(0);
    return raw;
}

/// The write options of a write; the strings stay owned by `properties` and `entries`.
inline tenure_write_options write_options(std::uint32_t kind, const write_properties &properties,
                                          const std::vector<tenure_metadata_entry> &entries,
                                          const conditions &when) {
    tenure_write_options raw = TENURE_WRITE_OPTIONS_INIT;
    raw.kind = kind;
    raw.conditions = when.get();
    raw.content_type = c_str(properties.content_type);
    raw.metadata = entries.data();
    raw.metadata_count = entries.size();
    return raw;
}

/// Reads a page handle into a tenure::page and frees it.
inline tenure::page read_page(tenure_page *raw) {
    owner<tenure_page, tenure_page_free> handle(raw);
    std::size_t count = 0;
    check(tenure_page_count(raw, &count));
    tenure::page result;
    result.items.reserve(count);
    for (std::size_t index = 0; index < count; index++) {
        page_item entry;
        tenure_item_info info{};
        check(tenure_page_item_info(raw, index, &info));
        entry.info = info_of(info);
        entry.key = copy_out([&](std::uint8_t *buffer, std::size_t capacity, std::size_t *length) {
            return tenure_page_key(raw, index, buffer, capacity, length);
        });
        entry.value = copy_out([&](std::uint8_t *buffer, std::size_t capacity, std::size_t *length) {
            return tenure_page_value(raw, index, buffer, capacity, length);
        });
        result.items.push_back(std::move(entry));
    }
    bool more = false;
    std::string token = copy_out([&](std::uint8_t *buffer, std::size_t capacity, std::size_t *length) {
        return tenure_page_continuation(raw, reinterpret_cast<char *>(buffer), capacity, length, &more);
    });
    if (more) {
        result.continuation = std::string(token.c_str());
    }
    return result;
}

inline tenure_list_options list_options(std::string_view prefix, std::uint32_t page_size,
                                        const std::optional<std::string> &continuation,
                                        bool include_values) {
    tenure_list_options raw = TENURE_LIST_OPTIONS_INIT;
    raw.prefix = bytes(prefix);
    raw.prefix_length = prefix.size();
    raw.page_size = page_size;
    raw.continuation = c_str(continuation);
    raw.include_values = include_values;
    return raw;
}

}  // namespace detail

/// A repeatable read view of the store (docs/spec.md §9). Views it lends stay valid until it is
/// destroyed, whatever is written, compacted or closed meanwhile.
class snapshot {
public:
    explicit snapshot(tenure_snapshot *handle) noexcept : handle_(handle) {}
    item_copy get(const std::string &container, std::string_view key,
                  const conditions &when = conditions()) const {
        tenure_read_options options = detail::read_options(when);
        return detail::read_copy([&](tenure_value_out *out) {
            return tenure_snapshot_get_value(handle_.get(), container.c_str(), detail::bytes(key),
                                             key.size(), &options, out);
        });
    }
    /// The item's value without a copy, lent from the mapped log while this snapshot lives.
    tenure::view view(const std::string &container, std::string_view key,
                      const conditions &when = conditions()) const {
        tenure_read_options options = detail::read_options(when);
        tenure_view raw{};
        detail::check(tenure_snapshot_get_view(handle_.get(), container.c_str(), detail::bytes(key),
                                               key.size(), &options, &raw));
        return detail::view_of(raw);
    }
    std::uint64_t version() const {
        std::uint64_t version = 0;
        detail::check(tenure_snapshot_version(handle_.get(), &version));
        return version;
    }
    /// One page as of the snapshot: paging through one snapshot never skips or repeats.
    tenure::page list(const std::string &container, std::string_view prefix = {},
                      std::uint32_t page_size = TENURE_LIST_DEFAULT_PAGE_SIZE,
                      const std::optional<std::string> &continuation = std::nullopt,
                      bool include_values = true) const {
        tenure_list_options options = detail::list_options(prefix, page_size, continuation, include_values);
        tenure_page *raw = nullptr;
        detail::check(tenure_snapshot_list_items(handle_.get(), container.c_str(), &options, &raw));
        return detail::read_page(raw);
    }
    tenure_snapshot *get() const noexcept { return handle_.get(); }

private:
    detail::owner<tenure_snapshot, tenure_snapshot_free> handle_;
};

/// All-or-nothing writes (docs/spec.md §8): nothing happens until commit().
class batch {
public:
    explicit batch(tenure_batch *handle) noexcept : handle_(handle) {}
    batch &put(const std::string &container, std::string_view key, std::string_view value,
               const conditions &when = conditions()) {
        return write(TENURE_WRITE_PUT, container, key, value, write_properties{}, when);
    }
    batch &create(const std::string &container, std::string_view key, std::string_view value,
                  const conditions &when = conditions()) {
        return write(TENURE_WRITE_CREATE, container, key, value, write_properties{}, when);
    }
    batch &replace(const std::string &container, std::string_view key, std::string_view value,
                   const conditions &when = conditions()) {
        return write(TENURE_WRITE_REPLACE, container, key, value, write_properties{}, when);
    }
    /// A put, create or replace (`kind` TENURE_WRITE_*) that sets content type and metadata.
    batch &write(std::uint32_t kind, const std::string &container, std::string_view key,
                 std::string_view value, const write_properties &properties,
                 const conditions &when = conditions()) {
        std::vector<tenure_metadata_entry> entries = detail::entries(properties.metadata);
        tenure_write_options options = detail::write_options(kind, properties, entries, when);
        detail::check(tenure_batch_add_write(handle_.get(), container.c_str(), detail::bytes(key),
                                             key.size(), detail::bytes(value), value.size(), &options));
        return *this;
    }
    batch &remove(const std::string &container, std::string_view key,
                  const conditions &when = conditions()) {
        detail::check(tenure_batch_delete(handle_.get(), container.c_str(), detail::bytes(key),
                                          key.size(), when.get()));
        return *this;
    }
    /// A condition only (with none: the item exists).
    batch &check(const std::string &container, std::string_view key,
                 const conditions &when = conditions()) {
        detail::check(tenure_batch_check(handle_.get(), container.c_str(), detail::bytes(key),
                                         key.size(), when.get()));
        return *this;
    }
    /// Commits every operation or none; returns the batch's version. A failure's
    /// error::batch_index() names the operation that failed.
    std::uint64_t commit() {
        std::uint64_t version = 0;
        detail::check(tenure_batch_commit(handle_.get(), &version));
        return version;
    }
    tenure_batch *get() const noexcept { return handle_.get(); }

private:
    detail::owner<tenure_batch, tenure_batch_free> handle_;
};

/// A change-feed cursor: next() gives the changes after its start, in version order.
class cursor {
public:
    explicit cursor(tenure_cursor *handle) noexcept : handle_(handle) {}
    /// The next change, or nullopt when there is none yet (call again later).
    std::optional<change> next() {
        tenure_change raw{};
        bool has = false;
        detail::check(tenure_cursor_next(handle_.get(), &raw, &has));
        if (!has) {
            return std::nullopt;
        }
        change result;
        result.version = raw.version;
        result.kind = raw.kind;
        result.container = detail::copy_out([&](std::uint8_t *buffer, std::size_t capacity, std::size_t *length) {
            return tenure_cursor_container(handle_.get(), buffer, capacity, length);
        });
        if (raw.has_key) {
            result.key = detail::copy_out([&](std::uint8_t *buffer, std::size_t capacity, std::size_t *length) {
                return tenure_cursor_key(handle_.get(), buffer, capacity, length);
            });
        }
        if (raw.has_etag) {
            result.etag = std::string(raw.etag);
        }
        if (raw.has_value) {
            result.value = detail::copy_out([&](std::uint8_t *buffer, std::size_t capacity, std::size_t *length) {
                return tenure_cursor_value(handle_.get(), buffer, capacity, length);
            });
        }
        return result;
    }
    tenure_cursor *get() const noexcept { return handle_.get(); }

private:
    detail::owner<tenure_cursor, tenure_cursor_free> handle_;
};

class lease_guard;
class container_lease_guard;
class lock_guard;

/// An open store (docs/spec.md §1). Its methods follow the Rust `Store`.
class store {
public:
    static store open(const std::string &path, const tenure_store_options *options = nullptr) {
        tenure_store *handle = nullptr;
        detail::check(tenure_store_open(path.c_str(), options, &handle));
        return store(handle);
    }
    /// Flushes and closes now (the destructor closes too, without reporting errors).
    void close() { detail::check(tenure_store_close(handle_.get())); }
    void flush() { detail::check(tenure_store_flush(handle_.get())); }
    std::uint64_t version() const {
        std::uint64_t version = 0;
        detail::check(tenure_store_version(handle_.get(), &version));
        return version;
    }
    tenure_compaction_report compact() {
        tenure_compaction_report report{};
        detail::check(tenure_store_compact(handle_.get(), &report));
        return report;
    }
    /// Saves the index now, so an open after a crash replays only the log after it.
    bool checkpoint() {
        bool saved = false;
        detail::check(tenure_store_checkpoint(handle_.get(), &saved));
        return saved;
    }
    /// Waits up to `timeout_ms` (at most 24 h) for a change newer than `since`.
    bool wait_for_changes(std::uint64_t since, std::uint64_t timeout_ms) const {
        bool changed = false;
        detail::check(tenure_store_wait_for_changes(handle_.get(), since, timeout_ms, &changed));
        return changed;
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
    /// The changes after version `since` (0: from the start), of one container or all.
    tenure::cursor changes(std::uint64_t since, const std::optional<std::string> &container = std::nullopt,
                           bool include_values = false) const {
        tenure_cursor *handle = nullptr;
        detail::check(tenure_cursor_open(handle_.get(), since, detail::c_str(container), include_values, &handle));
        return tenure::cursor(handle);
    }

    // ----- containers -----

    void create_container(const std::string &name, std::optional<std::int64_t> default_ttl_seconds = std::nullopt) {
        detail::check(tenure_container_create(handle_.get(), name.c_str(), default_ttl_seconds.has_value(),
                                              default_ttl_seconds.value_or(0)));
    }
    void delete_container(const std::string &name, const conditions &when = conditions()) {
        detail::check(tenure_container_delete(handle_.get(), name.c_str(), when.get()));
    }
    tenure::container_properties container_properties(const std::string &name) const {
        tenure_container_properties raw{};
        std::string bytes = detail::copy_out([&](std::uint8_t *buffer, std::size_t capacity, std::size_t *length) {
            return tenure_container_get_properties(handle_.get(), name.c_str(), &raw, buffer, capacity, length);
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
        std::vector<tenure_metadata_entry> entries = detail::entries(pairs);
        tenure_write_options options = detail::write_options(TENURE_WRITE_PUT, write_properties{}, entries, when);
        tenure_etag etag{};
        detail::check(tenure_store_set_container_metadata(handle_.get(), name.c_str(), &options, &etag));
        return etag.text;
    }
    std::vector<std::string> list_containers() const {
        std::size_t count = 0;
        return detail::split_nul(detail::copy_out([&](std::uint8_t *buffer, std::size_t capacity, std::size_t *length) {
            return tenure_list_containers(handle_.get(), buffer, capacity, length, &count);
        }));
    }

    // ----- items -----

    /// Writes the item (create or replace); returns the new ETag.
    std::string put(const std::string &container, std::string_view key, std::string_view value,
                    const conditions &when = conditions()) {
        return write(TENURE_WRITE_PUT, container, key, value, write_properties{}, when);
    }
    /// Writes the item only if it does not exist (else TENURE_ERR_ALREADY_EXISTS).
    std::string create(const std::string &container, std::string_view key, std::string_view value,
                       const conditions &when = conditions()) {
        return write(TENURE_WRITE_CREATE, container, key, value, write_properties{}, when);
    }
    /// Writes the item only if it exists (else TENURE_ERR_NOT_FOUND).
    std::string replace(const std::string &container, std::string_view key, std::string_view value,
                        const conditions &when = conditions()) {
        return write(TENURE_WRITE_REPLACE, container, key, value, write_properties{}, when);
    }
    /// A put, create or replace (`kind` TENURE_WRITE_*) setting the item's content type and
    /// metadata in the same write; returns the new ETag.
    std::string write(std::uint32_t kind, const std::string &container, std::string_view key,
                      std::string_view value, const write_properties &properties,
                      const conditions &when = conditions()) {
        std::vector<tenure_metadata_entry> entries = detail::entries(properties.metadata);
        tenure_write_options options = detail::write_options(kind, properties, entries, when);
        tenure_etag etag{};
        detail::check(tenure_store_write(handle_.get(), container.c_str(), detail::bytes(key), key.size(),
                                         detail::bytes(value), value.size(), &options, &etag));
        return etag.text;
    }
    void remove(const std::string &container, std::string_view key, const conditions &when = conditions()) {
        detail::check(tenure_delete(handle_.get(), container.c_str(), detail::bytes(key), key.size(), when.get()));
    }
    /// Reads the item, its value copied.
    item_copy get(const std::string &container, std::string_view key, const conditions &when = conditions()) const {
        tenure_read_options options = detail::read_options(when);
        return detail::read_copy([&](tenure_value_out *out) {
            return tenure_store_get_value(handle_.get(), container.c_str(), detail::bytes(key), key.size(),
                                          &options, out);
        });
    }
    /// Reads the item into a handle whose value is lent as long as it lives.
    tenure::item get_item(const std::string &container, std::string_view key,
                          const conditions &when = conditions()) const {
        tenure_item *handle = nullptr;
        detail::check(tenure_get_item(handle_.get(), container.c_str(), detail::bytes(key), key.size(),
                                      when.get(), &handle));
        return tenure::item(handle);
    }
    /// Reads the item's version, ETag and dates, not its value.
    item_info get_properties(const std::string &container, std::string_view key,
                             const conditions &when = conditions()) const {
        tenure_item_info raw{};
        detail::check(tenure_get_properties(handle_.get(), container.c_str(), detail::bytes(key), key.size(),
                                            when.get(), &raw));
        return detail::info_of(raw);
    }
    /// Reads the newest version and lends it to `read(const tenure::view &)` without a copy
    /// (valid during the call); returns what `read` returns. The cheapest read.
    template <typename Read, typename Result = std::decay_t<std::invoke_result_t<Read, const tenure::view &>>>
    Result get_with(const std::string &container, std::string_view key, Read &&read,
                    const conditions &when = conditions()) const {
        struct context {
            std::remove_reference_t<Read> *read;
            std::optional<std::conditional_t<std::is_void_v<Result>, bool, Result>> result;
            std::exception_ptr failure;
        } state{&read, std::nullopt, nullptr};
        tenure_read_options options = detail::read_options(when);
        tenure_view_fn trampoline = [](void *raw, const tenure_view *lent) {
            auto *state = static_cast<context *>(raw);
            try {
                if constexpr (std::is_void_v<Result>) {
                    std::invoke(*state->read, detail::view_of(*lent));
                    state->result = true;
                } else {
                    state->result.emplace(std::invoke(*state->read, detail::view_of(*lent)));
                }
            } catch (...) {
                state->failure = std::current_exception();
            }
        };
        detail::check(tenure_store_get_with(handle_.get(), container.c_str(), detail::bytes(key), key.size(),
                                            &options, trampoline, &state));
        if (state.failure) {
            std::rethrow_exception(state.failure);
        }
        if constexpr (!std::is_void_v<Result>) {
            return std::move(*state.result);
        }
    }
    /// The item if its version differs from `version`, else nullopt (docs/spec.md §6).
    std::optional<item_copy> get_if_newer(const std::string &container, std::string_view key,
                                          std::uint64_t version) const {
        try {
            return detail::read_copy([&](tenure_value_out *out) {
                return tenure_store_get_if_newer(handle_.get(), container.c_str(), detail::bytes(key), key.size(),
                                                 version, out);
            });
        } catch (const error &failure) {
            if (failure.status() == TENURE_ERR_NOT_MODIFIED) {
                return std::nullopt;
            }
            throw;
        }
    }
    /// Replaces the item's metadata, keeping value and content type; returns the new ETag.
    std::string set_metadata(const std::string &container, std::string_view key, const tenure::metadata &pairs,
                             const conditions &when = conditions()) {
        std::vector<tenure_metadata_entry> entries = detail::entries(pairs);
        tenure_write_options options = detail::write_options(TENURE_WRITE_PUT, write_properties{}, entries, when);
        tenure_etag etag{};
        detail::check(tenure_store_set_metadata(handle_.get(), container.c_str(), detail::bytes(key), key.size(),
                                                &options, &etag));
        return etag.text;
    }
    /// Replaces content type (nullopt = none) and metadata, keeping the value.
    std::string set_properties(const std::string &container, std::string_view key,
                               const std::optional<std::string> &content_type, const tenure::metadata &pairs,
                               const conditions &when = conditions()) {
        std::vector<tenure_metadata_entry> entries = detail::entries(pairs);
        write_properties properties{content_type, {}};
        tenure_write_options options = detail::write_options(TENURE_WRITE_PUT, properties, entries, when);
        tenure_etag etag{};
        detail::check(tenure_store_set_properties(handle_.get(), container.c_str(), detail::bytes(key), key.size(),
                                                  &options, &etag));
        return etag.text;
    }
    tenure::page list(const std::string &container, std::string_view prefix = {},
                      std::uint32_t page_size = TENURE_LIST_DEFAULT_PAGE_SIZE,
                      const std::optional<std::string> &continuation = std::nullopt,
                      bool include_values = true) const {
        tenure_list_options options = detail::list_options(prefix, page_size, continuation, include_values);
        tenure_page *raw = nullptr;
        detail::check(tenure_store_list_items(handle_.get(), container.c_str(), &options, &raw));
        return detail::read_page(raw);
    }

    // ----- item leases (docs/spec.md §4); tenure::lease_guard releases on scope exit -----

    /// `duration_seconds`: 15..=60 or TENURE_INFINITE.
    tenure::lease acquire_lease(const std::string &container, std::string_view key, std::int64_t duration_seconds,
                                const lease_options &options = lease_options()) {
        tenure_lease_options raw_options = detail::acquire_options(duration_seconds, options);
        tenure_lease raw{};
        detail::check(tenure_store_acquire_lease(handle_.get(), container.c_str(), detail::bytes(key), key.size(),
                                                 &raw_options, &raw));
        return detail::lease_of(raw);
    }
    tenure::lease renew_lease(const std::string &container, std::string_view key, const std::string &id) {
        tenure_lease raw{};
        detail::check(tenure_store_renew_lease(handle_.get(), container.c_str(), detail::bytes(key), key.size(),
                                               id.c_str(), &raw));
        return detail::lease_of(raw);
    }
    tenure::lease change_lease(const std::string &container, std::string_view key, const std::string &id,
                               const std::string &proposed_id) {
        tenure_lease raw{};
        detail::check(tenure_store_change_lease(handle_.get(), container.c_str(), detail::bytes(key), key.size(),
                                                id.c_str(), proposed_id.c_str(), &raw));
        return detail::lease_of(raw);
    }
    void release_lease(const std::string &container, std::string_view key, const std::string &id) {
        detail::check(tenure_store_release_lease(handle_.get(), container.c_str(), detail::bytes(key), key.size(),
                                                 id.c_str()));
    }
    /// Breaks the lease after `period_seconds` (0..=60; nullopt = the default); returns the ms
    /// until a new lease can be acquired.
    std::uint64_t break_lease(const std::string &container, std::string_view key,
                              std::optional<std::int64_t> period_seconds = std::nullopt) {
        tenure_lease_options options = detail::break_options(period_seconds);
        std::uint64_t left_ms = 0;
        detail::check(tenure_store_break_lease(handle_.get(), container.c_str(), detail::bytes(key), key.size(),
                                               &options, &left_ms));
        return left_ms;
    }
    tenure::lease_info lease_info(const std::string &container, std::string_view key) const {
        tenure_lease_details raw{};
        detail::check(tenure_store_lease_info(handle_.get(), container.c_str(), detail::bytes(key), key.size(), &raw));
        return detail::lease_info_of(raw);
    }

    // ----- container leases (docs/spec.md §5): deleting a leased container needs its id -----

    tenure::lease acquire_container_lease(const std::string &name, std::int64_t duration_seconds,
                                          const lease_options &options = lease_options()) {
        tenure_lease_options raw_options = detail::acquire_options(duration_seconds, options);
        tenure_lease raw{};
        detail::check(tenure_store_acquire_container_lease(handle_.get(), name.c_str(), &raw_options, &raw));
        return detail::lease_of(raw);
    }
    tenure::lease renew_container_lease(const std::string &name, const std::string &id) {
        tenure_lease raw{};
        detail::check(tenure_store_renew_container_lease(handle_.get(), name.c_str(), id.c_str(), &raw));
        return detail::lease_of(raw);
    }
    tenure::lease change_container_lease(const std::string &name, const std::string &id,
                                         const std::string &proposed_id) {
        tenure_lease raw{};
        detail::check(tenure_store_change_container_lease(handle_.get(), name.c_str(), id.c_str(),
                                                          proposed_id.c_str(), &raw));
        return detail::lease_of(raw);
    }
    void release_container_lease(const std::string &name, const std::string &id) {
        detail::check(tenure_store_release_container_lease(handle_.get(), name.c_str(), id.c_str()));
    }
    std::uint64_t break_container_lease(const std::string &name,
                                        std::optional<std::int64_t> period_seconds = std::nullopt) {
        tenure_lease_options options = detail::break_options(period_seconds);
        std::uint64_t left_ms = 0;
        detail::check(tenure_store_break_container_lease(handle_.get(), name.c_str(), &options, &left_ms));
        return left_ms;
    }
    tenure::lease_info container_lease_info(const std::string &name) const {
        tenure_lease_details raw{};
        detail::check(tenure_store_container_lease_info(handle_.get(), name.c_str(), &raw));
        return detail::lease_info_of(raw);
    }

    // ----- cache locks (docs/spec.md §6); tenure::lock_guard unlocks on scope exit -----

    /// Replaces the locked item's value and unlocks it; returns the new ETag. `ttl_seconds`
    /// (nullopt = keep the item's) restarts its TTL.
    std::string put_and_unlock(const std::string &container, std::string_view key, std::string_view value,
                               const std::string &lock_handle,
                               std::optional<std::int64_t> ttl_seconds = std::nullopt) {
        tenure_lock_options options = TENURE_LOCK_OPTIONS_INIT;
        options.lock_handle = lock_handle.c_str();
        options.has_ttl = ttl_seconds.has_value();
        options.ttl_seconds = ttl_seconds.value_or(0);
        tenure_etag etag{};
        detail::check(tenure_store_put_and_unlock(handle_.get(), container.c_str(), detail::bytes(key), key.size(),
                                                  detail::bytes(value), value.size(), &options, &etag));
        return etag.text;
    }
    void unlock(const std::string &container, std::string_view key, const std::string &lock_handle,
                std::optional<std::int64_t> ttl_seconds = std::nullopt) {
        tenure_lock_options options = TENURE_LOCK_OPTIONS_INIT;
        options.lock_handle = lock_handle.c_str();
        options.has_ttl = ttl_seconds.has_value();
        options.ttl_seconds = ttl_seconds.value_or(0);
        detail::check(tenure_store_unlock(handle_.get(), container.c_str(), detail::bytes(key), key.size(), &options));
    }

    tenure_store *get() const noexcept { return handle_.get(); }

private:
    explicit store(tenure_store *handle) noexcept : handle_(handle) {}

    detail::owner<tenure_store, tenure_store_free> handle_;
};

/// Holds an item's lease from construction to scope exit, when it is released (errors of that
/// release are not reported: call release() to see them). The store must outlive the guard.
class lease_guard {
public:
    /// Acquires the lease (`duration_seconds` 15..=60 or TENURE_INFINITE).
    lease_guard(tenure::store &store, std::string container, std::string key, std::int64_t duration_seconds,
                const lease_options &options = lease_options())
        : store_(&store), container_(std::move(container)), key_(std::move(key)),
          lease_(store.acquire_lease(container_, key_, duration_seconds, options)) {}
    lease_guard(const lease_guard &) = delete;
    lease_guard &operator=(const lease_guard &) = delete;
    lease_guard(lease_guard &&other) noexcept
        : store_(std::exchange(other.store_, nullptr)),
          container_(std::move(other.container_)),
          key_(std::move(other.key_)),
          lease_(std::move(other.lease_)) {}
    lease_guard &operator=(lease_guard &&) = delete;
    ~lease_guard() {
        if (store_ != nullptr) {
            tenure_store_release_lease(store_->get(), container_.c_str(), detail::bytes(key_), key_.size(),
                                       lease_.id.c_str());
        }
    }
    const tenure::lease &lease() const noexcept { return lease_; }
    const std::string &id() const noexcept { return lease_.id; }
    /// Conditions carrying the lease id, for writes to the leased item.
    tenure::conditions conditions() const { return tenure::conditions().lease_id(lease_.id); }
    void renew() { lease_ = store_->renew_lease(container_, key_, lease_.id); }
    void change(const std::string &proposed_id) {
        lease_ = store_->change_lease(container_, key_, lease_.id, proposed_id);
    }
    /// Releases now (and reports a failure); the destructor then does nothing.
    void release() {
        tenure::store *store = std::exchange(store_, nullptr);
        if (store != nullptr) {
            store->release_lease(container_, key_, lease_.id);
        }
    }
    bool held() const noexcept { return store_ != nullptr; }

private:
    tenure::store *store_;
    std::string container_;
    std::string key_;
    tenure::lease lease_;
};

/// Holds a container's lease from construction to scope exit, as lease_guard.
class container_lease_guard {
public:
    container_lease_guard(tenure::store &store, std::string name, std::int64_t duration_seconds,
                          const lease_options &options = lease_options())
        : store_(&store), name_(std::move(name)),
          lease_(store.acquire_container_lease(name_, duration_seconds, options)) {}
    container_lease_guard(const container_lease_guard &) = delete;
    container_lease_guard &operator=(const container_lease_guard &) = delete;
    container_lease_guard(container_lease_guard &&other) noexcept
        : store_(std::exchange(other.store_, nullptr)), name_(std::move(other.name_)), lease_(std::move(other.lease_)) {}
    container_lease_guard &operator=(container_lease_guard &&) = delete;
    ~container_lease_guard() {
        if (store_ != nullptr) {
            tenure_store_release_container_lease(store_->get(), name_.c_str(), lease_.id.c_str());
        }
    }
    const tenure::lease &lease() const noexcept { return lease_; }
    const std::string &id() const noexcept { return lease_.id; }
    tenure::conditions conditions() const { return tenure::conditions().lease_id(lease_.id); }
    void renew() { lease_ = store_->renew_container_lease(name_, lease_.id); }
    void release() {
        tenure::store *store = std::exchange(store_, nullptr);
        if (store != nullptr) {
            store->release_container_lease(name_, lease_.id);
        }
    }
    bool held() const noexcept { return store_ != nullptr; }

private:
    tenure::store *store_;
    std::string name_;
    tenure::lease lease_;
};

/// A cache lock (get_and_lock) held from construction to scope exit, when it is unlocked
/// unless put_and_unlock() or unlock() ran (errors of that unlock are not reported). The
/// store must outlive the guard.
class lock_guard {
public:
    /// Locks the item for `lock_timeout_ms` (> 0); `force` locks an absent key too.
    lock_guard(tenure::store &store, std::string container, std::string key, std::uint64_t lock_timeout_ms,
               bool force = false)
        : store_(&store), container_(std::move(container)), key_(std::move(key)) {
        tenure_lock_options options = TENURE_LOCK_OPTIONS_INIT;
        options.lock_timeout_ms = lock_timeout_ms;
        options.force = force;
        tenure_lock_handle handle{};
        tenure_item *raw = nullptr;
        detail::check(tenure_store_get_and_lock(store.get(), container_.c_str(), detail::bytes(key_), key_.size(),
                                                &options, &handle, &raw));
        handle_ = handle.text;
        if (raw != nullptr) {
            item_.emplace(raw);
        }
    }
    lock_guard(const lock_guard &) = delete;
    lock_guard &operator=(const lock_guard &) = delete;
    lock_guard(lock_guard &&other) noexcept
        : store_(std::exchange(other.store_, nullptr)),
          container_(std::move(other.container_)),
          key_(std::move(other.key_)),
          handle_(std::move(other.handle_)),
          item_(std::move(other.item_)) {}
    lock_guard &operator=(lock_guard &&) = delete;
    ~lock_guard() {
        if (store_ != nullptr) {
            tenure_lock_options options = TENURE_LOCK_OPTIONS_INIT;
            options.lock_handle = handle_.c_str();
            tenure_store_unlock(store_->get(), container_.c_str(), detail::bytes(key_), key_.size(), &options);
        }
    }
    /// The locked item as it was when locked (nullptr when a forced lock found none).
    const tenure::item *item() const noexcept { return item_ ? &*item_ : nullptr; }
    /// The lock handle (32 hex digits).
    const std::string &handle() const noexcept { return handle_; }
    /// Replaces the value and unlocks; returns the new ETag.
    std::string put_and_unlock(std::string_view value, std::optional<std::int64_t> ttl_seconds = std::nullopt) {
        std::string etag = store_->put_and_unlock(container_, key_, value, handle_, ttl_seconds);
        store_ = nullptr;
        return etag;
    }
    /// Unlocks now (and reports a failure).
    void unlock(std::optional<std::int64_t> ttl_seconds = std::nullopt) {
        tenure::store *store = std::exchange(store_, nullptr);
        if (store != nullptr) {
            store->unlock(container_, key_, handle_, ttl_seconds);
        }
    }
    bool held() const noexcept { return store_ != nullptr; }

private:
    tenure::store *store_;
    std::string container_;
    std::string key_;
    std::string handle_;
    std::optional<tenure::item> item_;
};

}  // namespace tenure

#endif  // C++17
#undef TENURE_HPP_CPLUSPLUS

#endif  // TENURE_HPP
