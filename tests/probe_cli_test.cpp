// `overlap probe` where there is no GPU: exit 2 and "no CUDA device", before
// anything is written. (On a GPU machine the probe itself is run by
// scripts/device-run.sh; this test then skips rather than probe for 10 s.)
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli_run.hpp"

namespace {

using overlap::test::run_cli;

bool gpu_present() {
  return std::filesystem::exists("/dev/nvidiactl") || std::filesystem::exists("/dev/nvidia0");
}

TEST(ProbeCli, NoGpuExitsTwoSayingSo) {
  if (gpu_present()) GTEST_SKIP() << "a GPU is present: the probe would run";
  const auto dir = std::filesystem::temp_directory_path() / "overlap-probe-cli-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto model = dir / "model.json";
  for (const bool all_devices : {false, true}) {
    std::vector<std::string> args = {"probe", "--quick", "-o", model.string()};
    if (all_devices) args.emplace_back("--all-devices");
    const auto r = run_cli(args);
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("no CUDA device"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(model));
  }
  std::filesystem::remove_all(dir);
}

TEST(ProbeCli, HelpTeachesWhatItMeasures) {
  const auto r = run_cli({"probe", "--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--quick"), std::string::npos);
  EXPECT_NE(r.out.find("copy engine serves"), std::string::npos);
  EXPECT_NE(r.out.find("overlap probe -o my-gpu.json"), std::string::npos);
  EXPECT_NE(r.out.find("--all-devices"), std::string::npos);
  EXPECT_NE(r.out.find("every GPU: alone, all at once, peer pairs"), std::string::npos);
}

}  // namespace
