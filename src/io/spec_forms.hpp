// The two forms a spec's program may take, each read in its own file:
// spec_pipeline_form.cpp (the `pipeline:` shorthand) and
// spec_explicit_form.cpp (streams:, events:, buffers: and ops:). The top
// level (spec_parser.cpp) checks which one a spec uses and calls it.
#pragma once

#include "overlap/core/program.hpp"
#include "spec_fields.hpp"

namespace overlap::io::spec {

/// The program that a `pipeline:` map describes.
Program read_pipeline(const Field& pipeline);

/// The program of the explicit form: `root`'s streams:, events: and
/// buffers: declarations, then the op list `ops`.
Program read_explicit(const Field& root, const Field& ops);

}  // namespace overlap::io::spec
