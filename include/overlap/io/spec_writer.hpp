// overlap::io::to_spec: a Program written as a spec file, so that a program
// built in code, captured by `overlap trace` or made by a pipeline can be read
// back by parse_spec, edited by hand, simulated and checked. The text is the
// explicit form of docs/spec-format.md: `name`, `time_unit`, `streams`,
// `events` and one flow map per op with every field its kind uses (stream,
// event, label, item, chunk, time, bytes, memory, sync, share, reads and
// writes); names are plain words where YAML reads them back unchanged and
// double-quoted otherwise, numbers are the shortest text that reads back to
// the same bits, and no `buffers:` map is written.
#pragma once

#include <string>
#include <string_view>

#include "overlap/core/program.hpp"

namespace overlap::io {

/// The program as an explicit-form spec (YAML) that parse_spec reads back to an equal program.
///
/// Equal means the same name and time unit, the same streams with the same
/// ids, kinds and priorities, the same events, and ops equal in every field
/// their kind uses, doubles to the bit. The default streams are referred to as
/// `default` and `per_thread` and made by their first use, as a person writes
/// them; they are declared (under those names, with their own kind) only
/// where first use would give them another id or lose their priority.
/// `header_comment`, if not empty, opens the file, each line prefixed by "# ".
///
/// What a spec cannot say, and so does not come back:
///  - fields an op's kind ignores (Op's comment names them), such as a
///    kernel's bytes, a record's time, an event on a copy or a memset's host
///    memory: they read back as Op's defaults;
///  - the order of an op's reads among its writes: reads come back first,
///    then writes, each in their order (the checker does not depend on it);
///  - an empty label (it reads back as the kind's default label), a negative
///    chunk other than -1 (it reads back as -1, none), an empty time_unit
///    (it reads back as "ms"), and an allocation or free without a time (it
///    is written with a host cost of 0, the cost parse_spec gives it);
///  - nothing of names that are not UTF-8 is lost with yaml-cpp, which reads
///    their bytes back, but stricter YAML readers may refuse them.
///
/// Throws overlap::invalid_input for the programs no spec can express: one
/// without ops (a spec's `ops:` may not be empty), a stream named "default" or
/// "per_thread" that is not that default stream, and a synchronous copy on a
/// stream that is not a default stream (a spec's sync copy runs where
/// cudaMemcpy does).
[[nodiscard]] std::string to_spec(const Program& program, std::string_view header_comment = {});

}  // namespace overlap::io
