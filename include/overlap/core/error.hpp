// overlap::error: the one exception family of the toolkit.
//
// Library code never prints and never exits; it throws an `overlap::error`
// whose message names the bad field and what was expected. The CLI turns it
// into one line on stderr and exit code 2.
#pragma once

#include <stdexcept>
#include <string>

namespace overlap {

/// Base of every exception the toolkit throws on purpose.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Bad input: a spec, a flag, a model file or a call argument that is out of
/// range or inconsistent. The message names the field and the allowed range.
class invalid_input : public error {
 public:
  using error::error;
};

}  // namespace overlap
