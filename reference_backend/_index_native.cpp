// The index's probing loops in C++, on the index's own buffers, in place.
//
// reference_backend/index.py owns the memory: a table of uint32 slots (record id + 1, 0 empty,
// a power of two of them) and the records, 48-byte rows whose first 16 bytes are the digest as two
// little-endian 64-bit words (family, rest). Each function here takes the table and the rows as
// Python buffers (the index's memoryviews), does one step of the Python implementation's work and
// leaves both buffers exactly as the Python implementation would: the same home slot (Fibonacci
// hashing of both words, the top bits), the same linear probing, the same backward shift on
// removal, and a rehash that places records in the order the Python implementation's vectorized
// rounds do. So the two implementations may take turns on one index, and a test compares their
// tables byte for byte. The GIL is held throughout: the log calls the index under its own lock, and
// each call here is shorter than a release and reacquire would be.

#include <Python.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the index's rows hold little-endian words; this kernel reads them as native ones"
#endif

namespace py = pybind11;

namespace {

constexpr std::uint64_t kMix = 0x9E3779B97F4A7C15ULL;
constexpr std::size_t kRow = 48;
constexpr std::size_t kDigest = 16;

// A Python buffer held for the length of one call.
class Buffer {
   public:
    Buffer(py::handle object, bool writable) {
        if (PyObject_GetBuffer(object.ptr(), &view_, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) != 0) {
            throw py::error_already_set();
        }
    }
    ~Buffer() { PyBuffer_Release(&view_); }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;

    std::uint8_t* data() const { return static_cast<std::uint8_t*>(view_.buf); }
    std::size_t size() const { return static_cast<std::size_t>(view_.len); }

   private:
    Py_buffer view_{};
};

struct Digest {
    std::uint64_t family;
    std::uint64_t rest;
};

Digest words(const std::uint8_t* bytes) {
    Digest d{};
    std::memcpy(&d.family, bytes, 8);
    std::memcpy(&d.rest, bytes + 8, 8);
    return d;
}

// The slot table: its slots, the mask of a slot number, and the shift that keeps a home's top bits.
class Table {
   public:
    explicit Table(py::handle table) : buffer_(table, true) {
        std::size_t count = buffer_.size() / sizeof(std::uint32_t);
        if (count < 2 || (count & (count - 1)) != 0 || buffer_.size() % sizeof(std::uint32_t) != 0) {
            throw std::invalid_argument("the slot table must hold a power of two of uint32 slots");
        }
        slots_ = reinterpret_cast<std::uint32_t*>(buffer_.data());
        mask_ = count - 1;
        int bits = 0;
        while ((std::size_t{1} << bits) < count) {
            ++bits;
        }
        shift_ = 64 - bits;
    }

    std::uint32_t* slots() const { return slots_; }
    std::uint64_t mask() const { return mask_; }

    // The Python implementation's _home: the top bits of ((family * MIX) ^ rest) * MIX.
    std::uint64_t home(Digest d) const { return (((d.family * kMix) ^ d.rest) * kMix) >> shift_; }

   private:
    Buffer buffer_;
    std::uint32_t* slots_ = nullptr;
    std::uint64_t mask_ = 0;
    int shift_ = 0;
};

// The record rows: 48 bytes each, the digest first.
class Rows {
   public:
    Rows(py::handle rows, bool writable) : buffer_(rows, writable) {
        if (buffer_.size() % kRow != 0) {
            throw std::invalid_argument("the record rows must be whole 48-byte rows");
        }
        count_ = buffer_.size() / kRow;
    }

    std::uint8_t* row(std::uint64_t rid) const {
        if (rid >= count_) {
            throw std::out_of_range("a record id past the index's rows");
        }
        return buffer_.data() + rid * kRow;
    }

    Digest digest(std::uint64_t rid) const { return words(row(rid)); }

   private:
    Buffer buffer_;
    std::size_t count_ = 0;
};

// A 16-byte digest from any bytes-like object.
Digest digest_of(PyObject* object) {
    if (PyBytes_Check(object)) {
        if (PyBytes_GET_SIZE(object) != static_cast<Py_ssize_t>(kDigest)) {
            throw py::value_error("a digest is 16 bytes");
        }
        return words(reinterpret_cast<const std::uint8_t*>(PyBytes_AS_STRING(object)));
    }
    Buffer buffer(object, false);
    if (buffer.size() != kDigest) {
        throw py::value_error("a digest is 16 bytes");
    }
    return words(buffer.data());
}

// The record id holding ``d``, or -1: probing from ``at`` until an empty slot.
std::int64_t probe(const Table& table, const Rows& rows, Digest d, std::uint64_t at) {
    const std::uint32_t* slots = table.slots();
    for (std::uint64_t tried = 0; tried <= table.mask(); ++tried) {
        std::uint32_t held = slots[at];
        if (held == 0) {
            return -1;
        }
        Digest found = rows.digest(held - 1);
        if (found.family == d.family && found.rest == d.rest) {
            return static_cast<std::int64_t>(held) - 1;
        }
        at = (at + 1) & table.mask();
    }
    throw std::runtime_error("the slot table has no empty slot");
}

void place(const Table& table, const Rows& rows, std::uint64_t rid) {
    if (rid >= 0xFFFFFFFFULL) {
        throw std::out_of_range("a record id past what a uint32 slot holds");
    }
    std::uint32_t* slots = table.slots();
    std::uint64_t at = table.home(rows.digest(rid));
    for (std::uint64_t tried = 0; slots[at] != 0; ++tried) {
        if (tried == table.mask()) {
            throw std::runtime_error("the slot table has no empty slot");
        }
        at = (at + 1) & table.mask();
    }
    slots[at] = static_cast<std::uint32_t>(rid + 1);
}

// Empty ``rid``'s slot and shift the rest of its probe run back, as the Python _unslot does.
void unplace(const Table& table, const Rows& rows, std::uint64_t rid) {
    std::uint32_t* slots = table.slots();
    const std::uint64_t mask = table.mask();
    const std::uint32_t wanted = static_cast<std::uint32_t>(rid + 1);
    std::uint64_t at = table.home(rows.digest(rid));
    for (std::uint64_t tried = 0; slots[at] != wanted; ++tried) {
        if (tried == mask || slots[at] == 0) {
            throw std::runtime_error("a record missing from the slot table");
        }
        at = (at + 1) & mask;
    }
    std::uint64_t hole = at;
    at = (at + 1) & mask;
    while (slots[at] != 0) {
        std::uint64_t home = table.home(rows.digest(slots[at] - 1));
        // the entry at ``at`` may fill the hole unless its home lies cyclically in (hole, at]
        if (((at - home) & mask) >= ((at - hole) & mask)) {
            slots[hole] = slots[at];
            hole = at;
        }
        at = (at + 1) & mask;
    }
    slots[hole] = 0;
}

std::int64_t find(py::handle table, py::handle rows, py::handle digest) {
    Table t(table);
    Rows r(rows, false);
    Digest d = digest_of(digest.ptr());
    return probe(t, r, d, t.home(d));
}

// Each digest's record id, or -1. In stages over the batch: every home slot is requested from
// memory before any is read, and every first record before any is compared, so the cache misses
// of a large index overlap instead of following one another.
py::list find_many(py::handle table, py::handle rows, py::handle digests) {
    Table t(table);
    Rows r(rows, false);
    py::object fast = py::reinterpret_steal<py::object>(PySequence_Fast(digests.ptr(), "digests: a sequence"));
    if (!fast) {
        throw py::error_already_set();
    }
    const Py_ssize_t count = PySequence_Fast_GET_SIZE(fast.ptr());
    PyObject** items = PySequence_Fast_ITEMS(fast.ptr());
    std::vector<Digest> wanted(static_cast<std::size_t>(count));
    std::vector<std::uint64_t> homes(static_cast<std::size_t>(count));
    for (Py_ssize_t i = 0; i < count; ++i) {
        wanted[i] = digest_of(items[i]);
        homes[i] = t.home(wanted[i]);
        __builtin_prefetch(t.slots() + homes[i]);
    }
    for (Py_ssize_t i = 0; i < count; ++i) {
        std::uint32_t held = t.slots()[homes[i]];
        if (held != 0) {
            __builtin_prefetch(r.row(held - 1));
        }
    }
    py::list out(count);
    for (Py_ssize_t i = 0; i < count; ++i) {
        PyObject* rid = PyLong_FromLongLong(probe(t, r, wanted[i], homes[i]));
        if (rid == nullptr) {
            throw py::error_already_set();
        }
        PyList_SET_ITEM(out.ptr(), i, rid);
    }
    return out;
}

void slot(py::handle table, py::handle rows, std::uint64_t rid) {
    Table t(table);
    Rows r(rows, false);
    place(t, r, rid);
}

// Forget ``rid``: the last record takes its id (its row copied over), both probe runs mended.
void forget(py::handle table, py::handle rows, std::uint64_t rid, std::uint64_t last) {
    Table t(table);
    Rows r(rows, true);
    if (rid > last) {
        throw std::out_of_range("a record id past the last record");
    }
    unplace(t, r, rid);
    if (rid != last) {
        unplace(t, r, last);
        std::memmove(r.row(rid), r.row(last), kRow);
        place(t, r, rid);
    }
}

// Every record of [0, count) placed in an emptied table, as the Python _rehash's vectorized rounds
// place them: records taken ``chunk`` at a time; in each round every record still pending looks at
// its current slot, those that find it empty write their id there in pending order (of several
// aiming at one slot, the last one's write stays, as numpy's assignment leaves it), and the ones
// that found it taken or lost it move one slot on, those that found it taken first.
void rehash(py::handle table, py::handle rows, std::uint64_t count, std::uint64_t chunk) {
    Table t(table);
    Rows r(rows, false);
    if (chunk == 0) {
        throw std::invalid_argument("a rehash places at least one record a round");
    }
    if (count >= 0xFFFFFFFFULL || count > t.mask()) {
        throw std::out_of_range("more records than the slot table holds");
    }
    if (count > 0) {
        r.row(count - 1);  // every record to place is a row
    }
    std::uint32_t* slots = t.slots();
    const std::uint64_t mask = t.mask();
    std::memset(slots, 0, (mask + 1) * sizeof(std::uint32_t));
    std::vector<std::uint64_t> pos;
    std::vector<std::uint32_t> pending;
    std::vector<std::uint32_t> next;
    std::vector<std::uint32_t> tried;
    for (std::uint64_t start = 0; start < count; start += chunk) {
        const std::uint64_t end = std::min(start + chunk, count);
        const std::uint32_t size = static_cast<std::uint32_t>(end - start);
        pos.resize(size);
        pending.resize(size);
        for (std::uint32_t i = 0; i < size; ++i) {
            pos[i] = t.home(r.digest(start + i));
            pending[i] = i;
        }
        while (!pending.empty()) {
            next.clear();
            tried.clear();
            for (std::uint32_t p : pending) {
                (slots[pos[p]] == 0 ? tried : next).push_back(p);
            }
            for (std::uint32_t p : tried) {
                slots[pos[p]] = static_cast<std::uint32_t>(start + p + 1);
            }
            for (std::uint32_t p : tried) {
                if (slots[pos[p]] != static_cast<std::uint32_t>(start + p + 1)) {
                    next.push_back(p);
                }
            }
            for (std::uint32_t p : next) {
                pos[p] = (pos[p] + 1) & mask;
            }
            std::swap(pending, next);
        }
    }
}

}  // namespace

PYBIND11_MODULE(_index_native, m) {
    m.doc() = "The index's probing loops, in place on reference_backend.index.Index's buffers.";
    m.def("find", &find, py::arg("table"), py::arg("rows"), py::arg("digest"),
          "The record id of ``digest``, or -1.");
    m.def("find_many", &find_many, py::arg("table"), py::arg("rows"), py::arg("digests"),
          "Each digest's record id, or -1, as a list.");
    m.def("slot", &slot, py::arg("table"), py::arg("rows"), py::arg("rid"),
          "Give record ``rid`` (its row written) a slot.");
    m.def("remove", &forget, py::arg("table"), py::arg("rows"), py::arg("rid"), py::arg("last"),
          "Forget record ``rid``: record ``last`` takes its id, both probe runs mended.");
    m.def("rehash", &rehash, py::arg("table"), py::arg("rows"), py::arg("count"), py::arg("chunk"),
          "Empty the table and place records [0, count) in it, as the Python rehash does.");
}
