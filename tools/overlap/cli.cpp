#include "cli.hpp"

#include <ostream>

namespace overlap::cli {

int run(const std::vector<std::string>& /*args*/, std::ostream& /*out*/, std::ostream& err) {
  err << "overlap: under construction\n";
  return exit_bad_input;
}

}  // namespace overlap::cli
