// .npy format 1.0/2.0/3.0: magic, header dict (descr, fortran_order, shape), raw data.
#include "dagrad/core/npy.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

namespace dagrad {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

struct Descr {
  DType dtype;
  bool big_endian;
};

Descr parse_descr(const std::string& descr, const std::string& source) {
  if (descr.size() >= 3) {
    const char order = descr[0];
    const std::string code = descr.substr(1);
    const bool big = order == '>';
    if (order == '<' || order == '>' || order == '|' || order == '=') {
      if (code == "f2") return {DType::Half, big};
      if (code == "f4") return {DType::Float32, big};
      if (code == "f8") return {DType::Float64, big};
      if (code == "i4") return {DType::Int32, big};
      if (code == "i8") return {DType::Int64, big};
      if (code == "b1") return {DType::Bool, false};
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

Shape parse_shape(const std::string& text, const std::string& source) {
  std::vector<std::int64_t> dims;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    item.erase(std::remove(item.begin(), item.end(), ' '), item.end());
    if (item.empty()) continue;
    std::size_t used = 0;
    long long d = -1;
    try {
      d = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || d < 0) invalid_argument(source, ": bad dimension '", item, "' in .npy shape (", text, ")");
    dims.push_back(d);
  }
  return Shape(dims);
}

void byte_swap(char* data, std::size_t count, std::size_t width) {
  for (std::size_t i = 0; i < count; ++i) std::reverse(data + i * width, data + (i + 1) * width);
}

// Reorders a Fortran-order (column-major) buffer into row-major order.
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

}  // namespace

Tensor parse_npy(const std::string& bytes, const std::string& source) {
  if (bytes.size() < 10 || bytes.compare(0, 6, kMagic, 6) != 0) {
    invalid_argument(source, ": not a .npy file (bad magic)");
  }
  const auto major = static_cast<unsigned char>(bytes[6]);
  std::size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<std::size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) invalid_argument(source, ": truncated .npy header");
    for (int i = 0; i < 4; ++i) header_len |= static_cast<std::size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    offset = 12;
  } else {
    invalid_argument(source, ": unsupported .npy version ", static_cast<int>(major));
  }
  if (bytes.size() < offset + header_len) invalid_argument(source, ": truncated .npy header");
  const std::string header = bytes.substr(offset, header_len);
  const Descr descr = parse_descr(header_value(header, "descr", source), source);
  const std::string fortran = header_value(header, "fortran_order", source);
  if (fortran != "False" && fortran != "True") invalid_argument(source, ": bad fortran_order '", fortran, "'");
  const Shape shape = parse_shape(header_value(header, "shape", source), source);
  std::int64_t count = 0;
  try {
    count = shape.num_elements();
  } catch (const Error&) {
    invalid_argument(source, ": .npy shape ", shape.to_string(), " is too large");
  }
  const std::size_t width = dtype_size(descr.dtype);
  const std::size_t data_bytes = static_cast<std::size_t>(count) * width;
  if (static_cast<std::size_t>(count) > (bytes.size() - offset - header_len) / width ||
      bytes.size() - offset - header_len != data_bytes) {
    invalid_argument(source, ": .npy data is ", bytes.size() - offset - header_len, " bytes but shape ",
                     shape.to_string(), " of ", dtype_name(descr.dtype), " needs ", data_bytes);
  }
  Tensor tensor = Tensor::empty(descr.dtype, shape);
  const char* src = bytes.data() + offset + header_len;
  char* dst = static_cast<char*>(tensor.raw_data());
  if (fortran == "True" && shape.rank() > 1) fortran_to_c(src, dst, shape, width);
  else if (data_bytes) std::memcpy(dst, src, data_bytes);
  if (descr.big_endian && width > 1) byte_swap(dst, static_cast<std::size_t>(count), width);
  if (descr.dtype == DType::Bool) {
    for (std::size_t i = 0; i < data_bytes; ++i) {
      if (static_cast<unsigned char>(dst[i]) > 1) invalid_argument(source, ": bool value ", int(dst[i]), " is not 0 or 1");
    }
  }
  return tensor;
}

std::string serialize_npy(const Tensor& input) {
  Tensor tensor = input.device().is_cpu() ? input : input.to(Device::cpu());
  if (tensor.dtype() == DType::BFloat16) tensor = tensor.cast(DType::Float32);
  std::string descr;
  switch (tensor.dtype()) {
    case DType::Half: descr = "<f2"; break;
    case DType::Float32: descr = "<f4"; break;
    case DType::Float64: descr = "<f8"; break;
    case DType::Int32: descr = "<i4"; break;
    case DType::Int64: descr = "<i8"; break;
    case DType::Bool: descr = "|b1"; break;
    default: invalid_argument("write_npy: cannot write dtype ", dtype_name(tensor.dtype()));
  }
  std::string shape = "(";
  for (int i = 0; i < tensor.rank(); ++i) shape += std::to_string(tensor.shape()[i]) + (tensor.rank() == 1 ? ",)" : ", ");
  if (tensor.rank() != 1) {
    if (tensor.rank() > 1) shape.resize(shape.size() - 2);
    shape += ")";
  }
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so that magic + length + header + newline is a multiple of 64 bytes.
  const std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic, 6);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  out.append(static_cast<const char*>(tensor.raw_data()), tensor.nbytes());
  return out;
}

Tensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(Code::NotFound, "cannot open '", path, "' for reading");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return parse_npy(buffer.str(), path);
}

void write_npy(const std::string& path, const Tensor& tensor) {
  const std::string bytes = serialize_npy(tensor);
  std::ofstream out(path, std::ios::binary);
  if (!out) invalid_argument("cannot open '", path, "' for writing");
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) invalid_argument("failed writing '", path, "'");
}

}  // namespace dagrad
