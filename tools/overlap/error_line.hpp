// Error messages as one printable line, whatever input they echo.
#pragma once

#include <string>
#include <string_view>

namespace overlap::cli {

/// `message` made safe to print as one line: control bytes are written as
/// escapes (\n, \t, \r, \xNN), as are bytes that are not valid UTF-8, so a
/// bad field name read from a file can neither split the line nor reach the
/// terminal raw; trailing white space is dropped.
[[nodiscard]] std::string error_line(std::string_view message);

}  // namespace overlap::cli
