// Base64 (RFC 4648, the standard alphabet with '=' padding): bytes as JSON-safe text.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dagrad {

std::string base64_encode(const void* data, std::size_t size);

// The length of the encoding of `size` bytes: 4 characters per 3 bytes, the last group padded.
std::size_t base64_length(std::size_t size);

// Decodes exactly `size` bytes into `out`. The text must be the canonical encoding of that many
// bytes (length base64_length(size), padding only at the end, zero bits in the last group's
// unused bits); anything else throws InvalidArgument naming `what`.
void base64_decode(std::string_view text, void* out, std::size_t size, std::string_view what);

}  // namespace dagrad
