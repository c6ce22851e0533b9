// Helpers shared by the simulator tests: find a span by its op, compare times.
#pragma once

#include <gtest/gtest.h>

#include "overlap/core/timeline.hpp"

namespace overlap::testing {

inline const Span& span_of(const Timeline& t, op_id op) {
  for (const Span& s : t.spans) {
    if (s.op == op) return s;
  }
  ADD_FAILURE() << "no span for op " << op;
  static const Span none{};
  return none;
}

/// Asserts that op `op` ran over [start, end].
inline void expect_span(const Timeline& t, op_id op, double start, double end) {
  const Span& s = span_of(t, op);
  EXPECT_NEAR(s.start, start, 1e-9) << "start of op " << op << " (" << s.label << ")";
  EXPECT_NEAR(s.end, end, 1e-9) << "end of op " << op << " (" << s.label << ")";
}

}  // namespace overlap::testing
