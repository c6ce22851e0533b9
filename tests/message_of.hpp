// message_of: what a call that should refuse its input says.
#pragma once

#include <string>

#include "overlap/core/error.hpp"

namespace overlap::testing {

/// The message of the overlap::invalid_input `call` throws, or "(no error)"
/// when it returns (so a missing error reads plainly in a failed EXPECT).
inline std::string message_of(const auto& call) {
  try {
    call();
  } catch (const invalid_input& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace overlap::testing
