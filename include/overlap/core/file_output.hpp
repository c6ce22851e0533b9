// Files written whole or not at all: what the CLI's --output, the model
// cache and the Python package write.
#pragma once

#include <filesystem>
#include <string_view>

namespace overlap {

/// Writes `text` to `path`, replacing the file there: into a temporary file
/// beside it (named after this process and thread, so concurrent writers do
/// not share one), then renamed over it, so a reader sees the old file or
/// the new one and a failed write leaves nothing behind. Throws
/// overlap::error "cannot write '<path>': <reason>".
void write_file_whole(const std::filesystem::path& path, std::string_view text);

}  // namespace overlap
