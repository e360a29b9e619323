// Integers read from JSON that dagrad's own files hold (graph files, model and checkpoint
// manifests). Internal to core's readers: not installed (it needs nlohmann::json).
#pragma once

#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

namespace dagrad {

// The value as int64, or nothing for a non-integer or one beyond int64 (JSON has no limit).
inline std::optional<std::int64_t> json_as_int64(const nlohmann::json& v) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<std::int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<std::int64_t>();
  return std::nullopt;
}

}  // namespace dagrad
