// The `env` record (see env_record.hpp).
#include "env_record.hpp"

#include "record_writer.hpp"

namespace overlap::inject {

void append_env_record(std::string& out, const char* (*lookup)(const char* name)) {
  JsonLine line(out, "env");
  for (const std::string_view name : traced_environment) {
    // The names are NUL-terminated literals.
    const char* value = lookup(name.data());
    if (value != nullptr) line.string(name, value);
  }
  line.finish();
}

}  // namespace overlap::inject
