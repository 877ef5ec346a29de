// Entry digests of a whole batch of keys in C++: what reference_backend.naming.Digester computes
// key by key with hashlib.
//
// A digest is two keyed BLAKE2b-64 hashes of the key's UTF-8 (surrogates passed through): the first
// keyed by the family's 32-byte key, the second by the entry's. BLAKE2b is written here from its
// specification (RFC 7693): the compression function, the parameter block of an unsalted,
// unpersonalised hash of 8 bytes with a key, and the key padded to a first block of its own. Each
// key state is compressed once a call; a key then costs one or two compressions per hash. Python
// spent about 0.7 us a key on copies of hashlib states; a test compares both byte for byte over
// drawn keys and scopes. The GIL is held: a batch is a few microseconds.

#include <Python.h>
#include <pybind11/pybind11.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "BLAKE2b reads its message words little-endian; this code reads them as native ones"
#endif

namespace py = pybind11;

namespace {

constexpr std::size_t kBlock = 128;
constexpr std::size_t kKeyBytes = 32;
constexpr std::size_t kOut = 8;

constexpr std::array<std::uint64_t, 8> kIv = {
    0x6A09E667F3BCC908ULL, 0xBB67AE8584CAA73BULL, 0x3C6EF372FE94F82BULL, 0xA54FF53A5F1D36F1ULL,
    0x510E527FADE682D1ULL, 0x9B05688C2B3E6C1FULL, 0x1F83D9ABFB41BD6BULL, 0x5BE0CD19137E2179ULL,
};

constexpr std::uint8_t kSigma[10][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
};
constexpr int kRounds = 12;  // rounds 10 and 11 take the permutations of rounds 0 and 1 again

using State = std::array<std::uint64_t, 8>;

inline std::uint64_t rotr(std::uint64_t x, int n) { return (x >> n) | (x << (64 - n)); }

inline void mix(std::uint64_t* v, int a, int b, int c, int d, std::uint64_t x, std::uint64_t y) {
    v[a] = v[a] + v[b] + x;
    v[d] = rotr(v[d] ^ v[a], 32);
    v[c] = v[c] + v[d];
    v[b] = rotr(v[b] ^ v[c], 24);
    v[a] = v[a] + v[b] + y;
    v[d] = rotr(v[d] ^ v[a], 16);
    v[c] = v[c] + v[d];
    v[b] = rotr(v[b] ^ v[c], 63);
}

// F: one 128-byte block into the state; ``counted`` bytes hashed so far, this block included.
void compress(State& h, const std::uint8_t* block, std::uint64_t counted, bool last) {
    std::uint64_t m[16];
    std::memcpy(m, block, kBlock);
    std::uint64_t v[16];
    for (int i = 0; i < 8; ++i) {
        v[i] = h[i];
        v[i + 8] = kIv[i];
    }
    v[12] ^= counted;  // the counter's high word stays 0: no key of 2^64 bytes
    if (last) v[14] = ~v[14];
    for (int round = 0; round < kRounds; ++round) {
        const std::uint8_t* s = kSigma[round % 10];
        mix(v, 0, 4, 8, 12, m[s[0]], m[s[1]]);
        mix(v, 1, 5, 9, 13, m[s[2]], m[s[3]]);
        mix(v, 2, 6, 10, 14, m[s[4]], m[s[5]]);
        mix(v, 3, 7, 11, 15, m[s[6]], m[s[7]]);
        mix(v, 0, 5, 10, 15, m[s[8]], m[s[9]]);
        mix(v, 1, 6, 11, 12, m[s[10]], m[s[11]]);
        mix(v, 2, 7, 8, 13, m[s[12]], m[s[13]]);
        mix(v, 3, 4, 9, 14, m[s[14]], m[s[15]]);
    }
    for (int i = 0; i < 8; ++i) h[i] ^= v[i] ^ v[i + 8];
}

// One keyed hash: the state before any block and the key's padded block, both made once a call.
class Keyed {
   public:
    explicit Keyed(const std::string& key) {
        if (key.size() != kKeyBytes) throw std::invalid_argument("a digest key is 32 bytes");
        start_ = kIv;
        start_[0] ^= 0x01010000ULL ^ (static_cast<std::uint64_t>(kKeyBytes) << 8) ^ kOut;
        key_block_.fill(0);
        std::memcpy(key_block_.data(), key.data(), kKeyBytes);
        keyed_ = start_;
        compress(keyed_, key_block_.data(), kBlock, false);
    }

    // The first 8 bytes of the hash of ``message``, little-endian, as hashlib's digest() gives them.
    std::uint64_t operator()(const std::uint8_t* message, std::size_t size) const {
        if (size == 0) {  // the key block is the last block
            State h = start_;
            compress(h, key_block_.data(), kBlock, true);
            return h[0];
        }
        State h = keyed_;
        std::uint64_t counted = kBlock;
        while (size > kBlock) {
            counted += kBlock;
            compress(h, message, counted, false);
            message += kBlock;
            size -= kBlock;
        }
        std::array<std::uint8_t, kBlock> tail{};
        std::memcpy(tail.data(), message, size);
        compress(h, tail.data(), counted + size, true);
        return h[0];
    }

   private:
    State start_{};
    State keyed_{};
    std::array<std::uint8_t, kBlock> key_block_{};
};

// A key's UTF-8 with surrogates passed through, as ``str.encode("utf-8", "surrogatepass")``.
class Utf8 {
   public:
    explicit Utf8(py::handle key) {
        if (!PyUnicode_Check(key.ptr())) throw py::type_error("a key is a str");
        Py_ssize_t size = 0;
        const char* data = PyUnicode_AsUTF8AndSize(key.ptr(), &size);
        if (data == nullptr) {  // a lone surrogate: the strict codec refused it
            PyErr_Clear();
            owned_ = py::reinterpret_steal<py::object>(
                PyUnicode_AsEncodedString(key.ptr(), "utf-8", "surrogatepass"));
            if (!owned_) throw py::error_already_set();
            data = PyBytes_AS_STRING(owned_.ptr());
            size = PyBytes_GET_SIZE(owned_.ptr());
        }
        data_ = reinterpret_cast<const std::uint8_t*>(data);
        size_ = static_cast<std::size_t>(size);
    }
    const std::uint8_t* data() const { return data_; }
    std::size_t size() const { return size_; }

   private:
    py::object owned_;
    const std::uint8_t* data_ = nullptr;
    std::size_t size_ = 0;
};

py::list digests(const py::bytes& family_key, const py::bytes& entry_key, const py::list& keys) {
    const Keyed family(family_key);
    const Keyed entry(entry_key);
    py::list out(keys.size());
    std::size_t n = 0;
    for (py::handle key : keys) {
        const Utf8 raw(key);
        std::uint64_t words[2] = {family(raw.data(), raw.size()), entry(raw.data(), raw.size())};
        out[n++] = py::bytes(reinterpret_cast<const char*>(words), sizeof words);
    }
    return out;
}

}  // namespace

PYBIND11_MODULE(_naming_native, m) {
    m.doc() = "Entry digests of a batch of keys, as reference_backend.naming.Digester makes them.";
    m.def("digests", &digests, py::arg("family_key"), py::arg("entry_key"), py::arg("keys"),
          "Each key's 16-byte digest: keyed BLAKE2b-64 by ``family_key``, then by ``entry_key``.");
}
