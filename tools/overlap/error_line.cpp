#include "error_line.hpp"

#include <fmt/format.h>

#include <cstddef>

#include "overlap/core/utf8.hpp"

namespace overlap::cli {

std::string error_line(std::string_view message) {
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ' || message.back() == '\r'))
    message.remove_suffix(1);
  std::string out;
  out.reserve(message.size());
  for (std::size_t at = 0; at < message.size();) {
    const auto c = static_cast<unsigned char>(message[at]);
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
      ++at;
    } else if (c == '\n') {
      out += "\\n";
      ++at;
    } else if (c == '\t') {
      out += "\\t";
      ++at;
    } else if (c == '\r') {
      out += "\\r";
      ++at;
    } else if (const std::size_t length = c >= 0x80 ? utf8_sequence_length(message, at) : 0; length != 0) {
      out.append(message.substr(at, length));
      at += length;
    } else {
      out += fmt::format("\\x{:02x}", c);
      ++at;
    }
  }
  return out;
}

}  // namespace overlap::cli
