// Directories written whole: the contents go into a temporary directory beside the target, which
// then takes the target's place in one atomic exchange (checkpoints and saved models use it).
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace dagrad {

// Writes directory `dir` through `fill`, which writes every file into the empty directory it is
// given (and syncs any subdirectory it creates). The staged directory (DIR.tmp-PID-N) is synced and
// exchanged with `dir` atomically (renameat2 RENAME_EXCHANGE; elsewhere the old one is first moved
// to DIR.previous), so `dir` holds the old contents or the new ones, never a mix. `what` names the
// kind of directory in errors ("checkpoint"); an existing `dir` that is neither empty nor holds
// `marker_file` is never replaced (InvalidArgument). Any failure throws and leaves `dir` as it was.
void write_directory_whole(const std::string& dir, std::string_view what, std::string_view marker_file,
                           const std::function<void(const std::filesystem::path& staged)>& fill);

// The directory to read: `dir`, or DIR.previous holding `marker_file` when a save stopped between
// its two renames (file systems without an atomic exchange). NotFound when neither exists.
std::filesystem::path directory_to_read(const std::string& dir, std::string_view what, std::string_view marker_file);

// Makes a directory's entries durable (a rename is only durable once its directory is synced).
void sync_directory(const std::filesystem::path& dir, std::string_view what);

}  // namespace dagrad
