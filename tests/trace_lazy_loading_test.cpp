// lazy-module-load: a kernel's first launch that waited for its module to
// load while other work ran, so that the kernel started late. The traces
// below are shaped after tests/apps/lazy_module_load.cu on an H100: a busy
// kernel on stream 13, and each iteration a new kernel on stream 14 whose
// launch call blocks until the busy kernel is done.
#include <gtest/gtest.h>

#include <string>

#include "overlap/core/device_model.hpp"
#include "overlap/trace/audit.hpp"
#include "trace_builder.hpp"

namespace overlap {
namespace {

using test::TraceBuilder;

// `iterations` rounds 1000 us apart: busy kernel (launched in 5 us, runs 500
// us), then a side kernel launched while it runs. A first launch's call
// lasts until `first_launch_until` us into the round (5 us when it is
// not delayed); its kernel starts right after the call.
TraceBuilder rounds(int iterations, double first_launch_until, bool new_kernel_each_round = true) {
  TraceBuilder t;
  t.stream(13, "non_blocking").stream(14, "non_blocking");
  for (int i = 0; i < iterations; ++i) {
    const double at = 100.0 + 1000.0 * i;
    t.call("cudaLaunchKernel", "launch", at, at + 5, {{"stream", 13}, {"kernel", "_Z4busyv"}});
    t.work("kernel", at + 10, at + 510, {{"stream", 13}, {"name", "_Z4busyv"}});
    const std::string side = new_kernel_each_round ? "_Z4sideILi" + std::to_string(i) + "EEvv" : "_Z4sidev";
    const bool first = new_kernel_each_round || i == 0;
    const double returned = at + 6 + (first ? first_launch_until - 6 : 5);
    t.call("cudaLaunchKernel", "launch", at + 6, returned, {{"stream", 14}, {"kernel", side}});
    t.work("kernel", returned + 5, returned + 55, {{"stream", 14}, {"name", side}});
    t.call("cudaStreamSynchronize", "stream_sync", returned + 1, at + 600, {{"stream", 14}});
    t.call("cudaStreamSynchronize", "stream_sync", at + 601, at + 602, {{"stream", 13}});
  }
  return t.footer();
}

const trace::AuditFinding* find(const trace::AuditReport& r, std::string_view rule) {
  for (const trace::AuditFinding& f : r.findings)
    if (f.rule == rule) return &f;
  return nullptr;
}

trace::AuditReport audit_of(const trace::RawTrace& raw) {
  return trace::audit(trace::capture(raw), DeviceModel::load("h100"));
}

TEST(LazyModuleLoad, FirstLaunchesThatWaitedForRunningWorkAreAWarningWithTheirDelay) {
  // Each side kernel's launch returns only when the busy kernel is done (at 510 us).
  const trace::AuditReport r = audit_of(rounds(8, 512).raw());
  const trace::AuditFinding* f = find(r, "lazy-module-load");
  ASSERT_NE(f, nullptr) << trace::format_text(r);
  EXPECT_EQ(f->level, check::severity::warning) << trace::format_text(r);
  EXPECT_EQ(f->count, 8U);
  EXPECT_EQ(f->streams, std::vector<std::string>{"stream 14"});
  EXPECT_NE(f->message.find("CUDA_MODULE_LOADING unset"), std::string::npos) << f->message;
  EXPECT_NE(f->fix.find("CUDA_MODULE_LOADING=EAGER"), std::string::npos);
  // Each side kernel could start 5 us (a typical launch) after its call began,
  // at 11 us into the round; it started at 517: 506 us late, in each round
  // the steady state holds.
  ASSERT_TRUE(f->measured.has_value());
  ASSERT_GT(f->measured->calls, 0U);
  EXPECT_NEAR(f->measured->time, 0.506 * static_cast<double>(f->measured->calls), 1e-9);
  ASSERT_TRUE(f->predicted_saving.has_value());
  EXPECT_DOUBLE_EQ(*f->predicted_saving, f->measured->time);
}

TEST(LazyModuleLoad, NotWithEagerLoadingNorWhenNothingWaited) {
  trace::RawTrace eager = rounds(8, 512).raw();
  eager.env.recorded = true;
  eager.env.module_loading = "EAGER";
  EXPECT_EQ(find(audit_of(eager), "lazy-module-load"), nullptr);
  // First launches as quick as any other: nothing loaded late.
  EXPECT_EQ(find(audit_of(rounds(8, 11).raw()), "lazy-module-load"), nullptr);
}

TEST(LazyModuleLoad, AFirstLaunchOnlyInStartupIsInfo) {
  // One side kernel, loaded in the first round; the rounds after launch it
  // quickly. The steady state is the NVTX range "step" around rounds 2-8.
  TraceBuilder t = rounds(8, 512, /*new_kernel_each_round=*/false);
  for (int i = 1; i < 8; ++i) t.range("step", 100.0 + 1000.0 * i, 100.0 + 1000.0 * i + 700);
  const trace::AuditReport r = audit_of(t.raw());
  const trace::AuditFinding* f = find(r, "lazy-module-load");
  ASSERT_NE(f, nullptr) << trace::format_text(r);
  EXPECT_EQ(f->count, 1U);
  EXPECT_EQ(f->level, check::severity::info) << trace::format_text(r);
}

}  // namespace
}  // namespace overlap
