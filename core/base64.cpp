// Base64 by RFC 4648 section 4; decoding accepts only the one canonical text for the bytes, so a
// file has exactly one spelling of a tensor's value.
#include "dagrad/core/base64.hpp"

#include <array>
#include <cstdint>

#include "dagrad/core/checked.hpp"
#include "dagrad/core/error.hpp"

namespace dagrad {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Character -> its 6-bit value, or -1 for a character outside the alphabet.
constexpr std::array<std::int8_t, 256> decoding_table() {
  std::array<std::int8_t, 256> table{};
  for (auto& v : table) v = -1;
  for (int i = 0; i < 64; ++i) table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<std::int8_t>(i);
  return table;
}
constexpr auto kDecoding = decoding_table();

}  // namespace

std::size_t base64_length(std::size_t size) {
  const auto groups = checked_add(static_cast<std::int64_t>(size / 3), size % 3 != 0 ? 1 : 0, "base64 length");
  return static_cast<std::size_t>(checked_mul(groups, 4, "base64 length"));
}

std::string base64_encode(const void* data, std::size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::string text;
  text.reserve(base64_length(size));
  for (std::size_t i = 0; i < size; i += 3) {
    const std::size_t n = size - i < 3 ? size - i : 3;
    std::uint32_t group = std::uint32_t{bytes[i]} << 16;
    if (n > 1) group |= std::uint32_t{bytes[i + 1]} << 8;
    if (n > 2) group |= bytes[i + 2];
    for (std::size_t c = 0; c < 4; ++c) text += c <= n ? kAlphabet[(group >> (18 - 6 * c)) & 63] : '=';
  }
  return text;
}

void base64_decode(std::string_view text, void* out, std::size_t size, std::string_view what) {
  const std::size_t expected = base64_length(size);
  if (text.size() != expected) {
    invalid_argument(what, ": ", text.size(), " base64 characters, expected ", expected, " for ", size, " bytes");
  }
  auto* bytes = static_cast<unsigned char*>(out);
  for (std::size_t i = 0, o = 0; i < text.size(); i += 4, o += 3) {
    const std::size_t n = size - o < 3 ? size - o : 3;  // bytes this group carries
    std::uint32_t group = 0;
    for (std::size_t c = 0; c < 4; ++c) {
      const char ch = text[i + c];
      if (c > n) {
        if (ch != '=') invalid_argument(what, ": base64 character ", i + c, " must be '=' padding");
        continue;
      }
      const int v = kDecoding[static_cast<unsigned char>(ch)];
      if (v < 0) invalid_argument(what, ": base64 character ", i + c, " ('", ch, "') is not in the alphabet");
      group |= static_cast<std::uint32_t>(v) << (18 - 6 * c);
    }
    if ((group & (0xffffffu >> (8 * n))) != 0) {
      invalid_argument(what, ": base64 group at character ", i, " has non-zero unused bits (not canonical)");
    }
    for (std::size_t b = 0; b < n; ++b) bytes[o + b] = static_cast<unsigned char>(group >> (16 - 8 * b));
  }
}

}  // namespace dagrad
