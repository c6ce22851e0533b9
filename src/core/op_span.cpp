// engine_of and span_of: what a span takes from its op.
#include "overlap/core/op_span.hpp"

namespace overlap {

engine engine_of(const Op& op) noexcept {
  switch (op.kind) {
    case op_kind::copy:
      switch (op.direction) {
        case copy_direction::h2d: return engine::h2d_copy;
        case copy_direction::d2h: return engine::d2h_copy;
        case copy_direction::d2d: return engine::d2d_copy;
      }
      return engine::copy;  // unreachable: every direction is listed
    case op_kind::kernel:
    case op_kind::memset: return engine::compute;
    case op_kind::host_function: return engine::host_callback;
    default: return engine::none;
  }
}

Span span_of(const Op& op, op_id id) {
  Span span;
  span.op = id;
  span.kind = op.kind;
  if (op.kind == op_kind::copy) span.direction = op.direction;
  span.label = op.label;
  span.item = op.item;
  span.chunk = op.chunk;
  if (op.stream) span.stream = *op.stream;
  span.unit = engine_of(op);
  span.bytes = op.bytes;
  return span;
}

}  // namespace overlap
