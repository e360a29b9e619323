// IDX parsing, with gzip data inflated through zlib only as far as the reader asks.
#include "dagrad/core/idx.hpp"

#include <algorithm>
#include <cstring>

#include <zlib.h>

#include "dagrad/core/checked.hpp"
#include "dagrad/core/error.hpp"
#include "dagrad/core/file_io.hpp"

namespace dagrad {
namespace {

constexpr std::string_view kGzipMagic("\x1f\x8b", 2);

int element_size(std::uint8_t type) {
  switch (type) {
    case 0x08:
    case 0x09:
      return 1;
    case 0x0B:
      return 2;
    case 0x0C:
    case 0x0D:
      return 4;
    case 0x0E:
      return 8;
    default:
      return 0;
  }
}

std::uint64_t big_endian(const unsigned char* p, int size) {
  std::uint64_t v = 0;
  for (int i = 0; i < size; ++i) v = (v << 8) | p[i];
  return v;
}

// The decompressed bytes of a gzip stream (one member or several back to back). Each read
// inflates at most what was asked for, so a small file that would inflate to gigabytes costs no
// more memory than the reader's request: the caller's header check is the bound.
class GunzipSource final : public ByteSource {
 public:
  explicit GunzipSource(ByteSource& compressed) : ByteSource(compressed.name()), in_(compressed) {
    if (inflateInit2(&z_, 15 + 16) != Z_OK) fail(Code::ResourceExhausted, "cannot start inflating '", name(), "'");
  }
  ~GunzipSource() override { inflateEnd(&z_); }

 protected:
  std::size_t read_raw(void* out, std::size_t size) override {
    if (finished_) return 0;
    z_.next_out = static_cast<Bytef*>(out);
    z_.avail_out = static_cast<uInt>(std::min<std::size_t>(size, std::size_t{1} << 30));
    const uInt wanted = z_.avail_out;
    while (z_.avail_out == wanted && !finished_) {
      if (z_.avail_in == 0) refill();
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        finished_ = !start_next_member();
      } else if (rc != Z_OK && !(rc == Z_BUF_ERROR && z_.avail_in == 0)) {
        corrupt(z_.msg ? z_.msg : "inflate failed");
      }
    }
    return wanted - z_.avail_out;
  }

 private:
  [[noreturn]] void corrupt(std::string_view reason) const {
    invalid_argument("corrupt gzip data in '", name(), "': ", reason);
  }

  void refill() {
    const std::size_t got = in_.read_some(buffer_, sizeof buffer_);
    if (got == 0) corrupt("unexpected end of file");
    z_.next_in = reinterpret_cast<Bytef*>(buffer_);
    z_.avail_in = static_cast<uInt>(got);
  }

  // After a member's end: another member follows (gzip allows several), nothing follows, or
  // something that is not gzip data, which is refused.
  bool start_next_member() {
    std::string next(reinterpret_cast<const char*>(z_.next_in), std::min<uInt>(z_.avail_in, 2));
    if (next.size() < 2) next += in_.peek(2 - next.size());
    if (next.empty()) return false;
    if (next != kGzipMagic) corrupt("bytes after the end of the gzip data");
    if (inflateReset(&z_) != Z_OK) corrupt("inflateReset failed");
    return true;
  }

  ByteSource& in_;
  z_stream z_{};
  char buffer_[1 << 16];
  bool finished_ = false;
};

}  // namespace

std::int64_t IdxArray::num_elements() const {
  std::int64_t n = 1;
  for (auto d : dims) n = checked_mul(n, d, "IDX element count");
  return n;
}

double IdxArray::value(std::int64_t i) const {
  const int size = element_size(type);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data()) + i * size;
  const std::uint64_t raw = big_endian(p, size);
  switch (type) {
    case 0x08:
      return static_cast<double>(raw);
    case 0x09:
      return static_cast<double>(static_cast<std::int8_t>(raw));
    case 0x0B:
      return static_cast<double>(static_cast<std::int16_t>(raw));
    case 0x0C:
      return static_cast<double>(static_cast<std::int32_t>(raw));
    case 0x0D: {
      const auto bits = static_cast<std::uint32_t>(raw);
      float f;
      std::memcpy(&f, &bits, sizeof f);
      return f;
    }
    default: {
      double d;
      std::memcpy(&d, &raw, sizeof d);
      return d;
    }
  }
}

IdxReader::IdxReader(std::unique_ptr<ByteSource> raw) : raw_(std::move(raw)) {
  if (raw_->peek(2) == kGzipMagic) body_ = std::make_unique<GunzipSource>(*raw_);
  ByteSource& in = body_ ? *body_ : *raw_;
  const std::string& name = source();
  const std::string magic = in.read_up_to(4);
  const auto* p = reinterpret_cast<const unsigned char*>(magic.data());
  if (magic.size() < 2 || p[0] != 0 || p[1] != 0) {
    invalid_argument("'", name, "' is not an IDX file: it does not start with the magic bytes 00 00");
  }
  if (magic.size() < 4) invalid_argument("'", name, "' is truncated inside its IDX header");
  header_.type = p[2];
  const int size = element_size(header_.type);
  if (size == 0) invalid_argument("'", name, "' has an unknown IDX element type 0x", std::hex, int(header_.type));
  const std::size_t rank = p[3];
  const std::string dims = in.read_up_to(4 * rank);
  if (dims.size() < 4 * rank) invalid_argument("'", name, "' is truncated inside its IDX header");
  for (std::size_t i = 0; i < rank; ++i) {
    const auto* dim = reinterpret_cast<const unsigned char*>(dims.data()) + 4 * i;
    header_.dims.push_back(static_cast<std::int64_t>(big_endian(dim, 4)));
  }
  try {
    data_bytes_ = checked_bytes(header_.num_elements(), static_cast<std::size_t>(size), "IDX data bytes");
  } catch (const Error& e) {
    invalid_argument("'", name, "' declares IDX dimensions too large to hold (", e.what(), ")");
  }
}

IdxReader IdxReader::open(const std::string& path) { return IdxReader(std::make_unique<InputFile>(path)); }

IdxReader IdxReader::from_bytes(std::string_view bytes, std::string source) {
  return IdxReader(std::make_unique<MemorySource>(bytes, std::move(source)));
}

IdxReader::IdxReader(IdxReader&&) noexcept = default;
IdxReader& IdxReader::operator=(IdxReader&&) noexcept = default;
IdxReader::~IdxReader() = default;

const std::string& IdxReader::source() const { return raw_->name(); }

IdxArray IdxReader::read() {
  ByteSource& in = body_ ? *body_ : *raw_;
  const auto wrong_size = [&](std::string_view problem, const std::string& holds) {
    invalid_argument("'", source(), "' is ", problem, ": its IDX header promises ", data_bytes_,
                     " data bytes, the file holds ", holds);
  };
  if (const auto known = in.remaining(); known && *known != data_bytes_) {  // refused before allocating
    wrong_size(*known < data_bytes_ ? "truncated" : "too long", std::to_string(*known));
  }
  IdxArray array = header_;
  array.bytes = in.read_up_to(data_bytes_);
  if (array.bytes.size() < data_bytes_) wrong_size("truncated", std::to_string(array.bytes.size()));
  if (!in.at_end()) wrong_size("too long", "more");
  return array;
}

IdxArray read_idx(const std::string& path) { return IdxReader::open(path).read(); }

IdxArray parse_idx(const std::string& bytes, const std::string& source) {
  return IdxReader::from_bytes(bytes, source).read();
}

}  // namespace dagrad
