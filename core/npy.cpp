// .npy format 1.0/2.0/3.0: magic, header dict (descr, fortran_order, shape), raw data. Reading
// takes the magic and the header first, checks them, then exactly the data the header promises.
#include "dagrad/core/npy.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "dagrad/core/checked.hpp"
#include "dagrad/core/file_io.hpp"

namespace dagrad {
namespace {

constexpr std::string_view kMagic("\x93NUMPY", 6);
constexpr std::size_t kPreambleBytes = 10;        // magic, version, 2-byte header length (v1)
constexpr std::size_t kMaxHeaderBytes = 1 << 16;  // numpy writes a few hundred bytes
constexpr int kMaxRank = 64;                      // numpy's own limit (NPY_MAXDIMS)

struct Descr {
  DType dtype;
  bool big_endian;
};

// Each supported descr code and its dtype; the byte-order character comes first.
constexpr std::pair<std::string_view, DType> kDescrCodes[] = {
    {"f2", DType::Half},  {"f4", DType::Float32}, {"f8", DType::Float64},
    {"i4", DType::Int32}, {"i8", DType::Int64},   {"b1", DType::Bool},
};

Descr parse_descr(const std::string& descr, const std::string& source) {
  if (descr.size() == 3 && std::string_view("<>|=").find(descr[0]) != std::string_view::npos) {
    for (const auto& [code, dtype] : kDescrCodes) {
      if (descr.compare(1, 2, code) == 0) return {dtype, descr[0] == '>' && dtype != DType::Bool};
    }
  }
  invalid_argument(source, ": unsupported .npy dtype '", descr,
                   "' (supported: float16, float32, float64, int32, int64, bool)");
}

// Finds `'key':` in the header dict and returns the text of its value.
std::string header_value(const std::string& header, const std::string& key, const std::string& source) {
  const std::string needle = "'" + key + "'";
  auto pos = header.find(needle);
  if (pos == std::string::npos) invalid_argument(source, ": .npy header has no '", key, "' entry: ", header);
  pos = header.find(':', pos + needle.size());
  if (pos == std::string::npos) invalid_argument(source, ": malformed .npy header: ", header);
  ++pos;
  while (pos < header.size() && header[pos] == ' ') ++pos;
  std::size_t end = pos;
  if (pos < header.size() && header[pos] == '(') {
    end = header.find(')', pos);
    if (end == std::string::npos) invalid_argument(source, ": malformed shape in .npy header: ", header);
    return header.substr(pos + 1, end - pos - 1);
  }
  if (pos < header.size() && header[pos] == '\'') {
    end = header.find('\'', pos + 1);
    if (end == std::string::npos) invalid_argument(source, ": malformed .npy header: ", header);
    return header.substr(pos + 1, end - pos - 1);
  }
  end = header.find_first_of(",}", pos);
  return header.substr(pos, end - pos);
}

std::string_view strip(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The text inside the shape's parentheses, as Python writes a tuple: "", "4,", "2, 3".
Shape parse_shape(std::string_view text, const std::string& source) {
  std::vector<std::int64_t> dims;
  std::string_view rest = text;
  while (!strip(rest).empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = strip(rest.substr(0, comma));
    std::int64_t d = -1;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), d);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || d < 0) {
      invalid_argument(source, ": bad dimension '", item, "' in .npy shape (", text, ")");
    }
    if (dims.size() == kMaxRank) invalid_argument(source, ": .npy shape has more than ", kMaxRank, " dimensions");
    dims.push_back(d);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return Shape(dims);
}

void byte_swap(char* data, std::size_t count, std::size_t width) {
  for (std::size_t i = 0; i < count; ++i) std::reverse(data + i * width, data + (i + 1) * width);
}

// Reorders a Fortran-order (column-major) buffer into row-major order. The offsets stay below the
// element count, which the caller has checked.
void fortran_to_c(const char* src, char* dst, const Shape& shape, std::size_t width) {
  const int rank = shape.rank();
  const auto n = static_cast<std::size_t>(shape.num_elements());
  std::vector<std::int64_t> index(static_cast<std::size_t>(rank), 0);
  for (std::size_t c = 0; c < n; ++c) {  // c walks row-major order; index is its multi-index
    std::int64_t f = 0, stride = 1;
    for (int a = 0; a < rank; ++a) {
      f += index[static_cast<std::size_t>(a)] * stride;
      stride *= shape[a];
    }
    std::memcpy(dst + c * width, src + static_cast<std::size_t>(f) * width, width);
    for (int a = rank - 1; a >= 0; --a) {
      if (++index[static_cast<std::size_t>(a)] < shape[a]) break;
      index[static_cast<std::size_t>(a)] = 0;
    }
  }
}

std::uint32_t little_endian(std::string_view bytes) {
  std::uint32_t v = 0;
  for (std::size_t i = bytes.size(); i-- > 0;) v = (v << 8) | static_cast<unsigned char>(bytes[i]);
  return v;
}

// Reads the magic, the version and the header dict; nothing past the header.
std::string read_header(ByteSource& in) {
  const std::string& source = in.name();
  const std::string preamble = in.read_up_to(kPreambleBytes);
  const std::size_t magic_seen = std::min(preamble.size(), kMagic.size());
  if (preamble.empty() || preamble.compare(0, magic_seen, kMagic.substr(0, magic_seen)) != 0) {
    invalid_argument(source, ": not a .npy file (bad magic)");
  }
  if (preamble.size() < kPreambleBytes) invalid_argument(source, ": truncated .npy header");
  const auto major = static_cast<unsigned char>(preamble[6]);
  std::size_t header_len = 0;
  if (major == 1) {
    header_len = little_endian(std::string_view(preamble).substr(8, 2));
  } else if (major == 2 || major == 3) {
    const std::string rest = in.read_up_to(2);
    if (rest.size() < 2) invalid_argument(source, ": truncated .npy header");
    header_len = little_endian(preamble.substr(8, 2) + rest);
  } else {
    invalid_argument(source, ": unsupported .npy version ", static_cast<int>(major));
  }
  if (header_len > kMaxHeaderBytes) {
    invalid_argument(source, ": .npy header length ", header_len, " is over the limit of ", kMaxHeaderBytes, " bytes");
  }
  std::string header = in.read_up_to(header_len);
  if (header.size() < header_len) invalid_argument(source, ": truncated .npy header");
  return header;
}

struct NpyLayout {
  Descr descr;
  bool fortran_order;
  Shape shape;
  std::int64_t count;
  std::size_t data_bytes;
};

NpyLayout parse_header(const std::string& header, const std::string& source) {
  const Descr descr = parse_descr(header_value(header, "descr", source), source);
  const std::string fortran = header_value(header, "fortran_order", source);
  if (fortran != "False" && fortran != "True") invalid_argument(source, ": bad fortran_order '", fortran, "'");
  const Shape shape = parse_shape(header_value(header, "shape", source), source);
  try {
    const std::int64_t count = shape.num_elements();
    return {descr, fortran == "True", shape, count, checked_bytes(count, dtype_size(descr.dtype), ".npy data bytes")};
  } catch (const Error& e) {
    invalid_argument(source, ": .npy shape ", shape.to_string(), " is too large (", e.what(), ")");
  }
}

[[noreturn]] void wrong_size(const std::string& source, const NpyLayout& layout, std::string_view holds) {
  invalid_argument(source, ": .npy data is ", holds, " bytes but shape ", layout.shape.to_string(), " of ",
                   dtype_name(layout.descr.dtype), " needs ", layout.data_bytes);
}

// Reads exactly the data the header promises into a new tensor. Where the size is known up
// front (a regular file, memory) a wrong size is refused before anything is allocated; from a
// pipe the data is buffered as it arrives, so a short stream costs only what it holds.
Tensor read_data(ByteSource& in, const NpyLayout& layout) {
  const std::string& source = in.name();
  const auto known = in.remaining();
  std::string staged;
  if (!known) {
    staged = in.read_up_to(layout.data_bytes);
    if (staged.size() < layout.data_bytes) wrong_size(source, layout, std::to_string(staged.size()));
    if (!in.at_end()) wrong_size(source, layout, "more than " + std::to_string(layout.data_bytes));
  } else if (*known != layout.data_bytes) {
    wrong_size(source, layout, std::to_string(*known));
  }
  const std::size_t width = dtype_size(layout.descr.dtype);
  const bool reorder = layout.fortran_order && layout.shape.rank() > 1;
  Tensor tensor = Tensor::empty(layout.descr.dtype, layout.shape);
  char* dst = static_cast<char*>(tensor.raw_data());
  if (known && reorder) staged = in.read_up_to(layout.data_bytes);
  if (known && !reorder) {
    std::size_t have = 0;
    while (have < layout.data_bytes) {
      const std::size_t got = in.read_some(dst + have, layout.data_bytes - have);
      if (got == 0) wrong_size(source, layout, std::to_string(have));  // the file shrank
      have += got;
    }
  } else if (reorder) {
    if (staged.size() < layout.data_bytes) wrong_size(source, layout, std::to_string(staged.size()));
    fortran_to_c(staged.data(), dst, layout.shape, width);
  } else if (layout.data_bytes) {
    std::memcpy(dst, staged.data(), layout.data_bytes);
  }
  if (layout.descr.big_endian && width > 1) byte_swap(dst, static_cast<std::size_t>(layout.count), width);
  if (layout.descr.dtype == DType::Bool) {
    for (std::size_t i = 0; i < layout.data_bytes; ++i) {
      if (static_cast<unsigned char>(dst[i]) > 1) {
        invalid_argument(source, ": bool value ", int(dst[i]), " is not 0 or 1");
      }
    }
  }
  return tensor;
}

Tensor read_npy_from(ByteSource& in) {
  const std::string header = read_header(in);
  return read_data(in, parse_header(header, in.name()));
}

// A host tensor of a dtype .npy can hold (bfloat16 widened to float32).
Tensor writable(const Tensor& input) {
  Tensor tensor = input.device().is_cpu() ? input : input.to(Device::cpu());
  return tensor.dtype() == DType::BFloat16 ? tensor.cast(DType::Float32) : tensor;
}

// Magic, version 1.0, header length and the header dict padded to a multiple of 64 bytes.
std::string npy_header(const Tensor& tensor) {
  std::string descr;
  switch (tensor.dtype()) {
    case DType::Half:
      descr = "<f2";
      break;
    case DType::Float32:
      descr = "<f4";
      break;
    case DType::Float64:
      descr = "<f8";
      break;
    case DType::Int32:
      descr = "<i4";
      break;
    case DType::Int64:
      descr = "<i8";
      break;
    case DType::Bool:
      descr = "|b1";
      break;
    default:
      invalid_argument("write_npy: cannot write dtype ", dtype_name(tensor.dtype()));
  }
  if (tensor.rank() > kMaxRank) {
    invalid_argument("write_npy: a tensor of rank ", tensor.rank(), " has more than the ", kMaxRank,
                     " dimensions a .npy file can hold");
  }
  std::string shape = "(";  // as Python writes a tuple: (), (4,), (2, 3)
  for (int i = 0; i < tensor.rank(); ++i) shape += (i ? ", " : "") + std::to_string(tensor.shape()[i]);
  shape += tensor.rank() == 1 ? ",)" : ")";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so that magic + length + header + newline is a multiple of 64 bytes; with at
  // most kMaxRank dimensions the header stays far below the 65535 bytes of version 1.0.
  const std::size_t total = kPreambleBytes + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  return out + header;
}

}  // namespace

Tensor parse_npy(const std::string& bytes, const std::string& source) {
  MemorySource in(bytes, source);
  return read_npy_from(in);
}

std::string serialize_npy(const Tensor& input) {
  const Tensor tensor = writable(input);
  std::string out = npy_header(tensor);
  out.append(static_cast<const char*>(tensor.raw_data()), tensor.nbytes());
  return out;
}

Tensor read_npy(const std::string& path) {
  InputFile in(path);
  return read_npy_from(in);
}

void write_npy(const std::string& path, const Tensor& input) {
  const Tensor tensor = writable(input);
  const std::string header = npy_header(tensor);
  write_file(path, [&](OutputFile& out) {
    out.write(header);
    out.write(tensor.raw_data(), tensor.nbytes());
  });
}

}  // namespace dagrad
