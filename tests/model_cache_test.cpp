// Probed models cached per GPU and driver under $XDG_CACHE_HOME: where they
// go, what a key may hold, and that a stored model comes back whole.
#include "overlap/core/model_cache.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "overlap/core/error.hpp"

namespace {

using namespace overlap;
namespace fs = std::filesystem;

// Points XDG_CACHE_HOME (and HOME) at a fresh folder for one test and puts
// both back afterwards.
class ModelCache : public ::testing::Test {
 protected:
  void SetUp() override {
    save("XDG_CACHE_HOME", xdg_);
    save("HOME", home_);
    root_ = fs::temp_directory_path() / ("overlap-model-cache-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    ::setenv("XDG_CACHE_HOME", root_.c_str(), 1);
  }
  void TearDown() override {
    restore("XDG_CACHE_HOME", xdg_);
    restore("HOME", home_);
    fs::remove_all(root_);
  }
  static void save(const char* name, std::optional<std::string>& slot) {
    const char* v = std::getenv(name);
    if (v != nullptr) slot = v;
  }
  static void restore(const char* name, const std::optional<std::string>& slot) {
    if (slot)
      ::setenv(name, slot->c_str(), 1);
    else
      ::unsetenv(name);
  }
  fs::path root_;
  std::optional<std::string> xdg_, home_;
};

const cached_model_key key{"GPU-5a1c0f3e-1111-2222-3333-444455556666", "13.0"};

TEST_F(ModelCache, AStoredModelComesBackWholeUnderItsGpuAndDriver) {
  EXPECT_FALSE(load_cached_model(key).has_value());
  DeviceModel model = DeviceModel::preset("h100");
  model.name = "probed here";
  model.queued_handover_latency = 0.0012;
  const fs::path path = store_cached_model(model, key);
  EXPECT_EQ(path, root_ / "overlap" / "models" / "GPU-5a1c0f3e-1111-2222-3333-444455556666-driver-13.0.json");
  const auto back = load_cached_model(key);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->to_json(), model.to_json());
  // Another driver's model is another file: not this one.
  EXPECT_FALSE(load_cached_model({key.device_uuid, "13.1"}).has_value());
  // Storing again replaces it; no temporary file is left beside it.
  model.name = "probed again";
  (void)store_cached_model(model, key);
  EXPECT_EQ(load_cached_model(key)->name, "probed again");
  EXPECT_EQ(std::distance(fs::directory_iterator(path.parent_path()), fs::directory_iterator{}), 1);
}

TEST_F(ModelCache, WithoutXdgCacheHomeTheCacheIsUnderHome) {
  ::unsetenv("XDG_CACHE_HOME");
  ::setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(model_cache_dir(), fs::path("/home/someone/.cache/overlap/models"));
  // A relative XDG_CACHE_HOME is ignored, as the XDG spec says.
  ::setenv("XDG_CACHE_HOME", "relative/cache", 1);
  EXPECT_EQ(model_cache_dir(), fs::path("/home/someone/.cache/overlap/models"));
  ::unsetenv("HOME");
  try {
    (void)model_cache_dir();
    FAIL() << "expected invalid_input";
  } catch (const invalid_input& e) {
    EXPECT_NE(std::string(e.what()).find("XDG_CACHE_HOME"), std::string::npos) << e.what();
  }
}

TEST_F(ModelCache, AKeyThatCouldLeaveTheFolderIsRejected) {
  for (const cached_model_key& bad :
       {cached_model_key{"../../etc/passwd", "13.0"}, cached_model_key{"", "13.0"},
        cached_model_key{"GPU-1", "13/0"}, cached_model_key{"..", "13.0"}}) {
    try {
      (void)cached_model_path(bad);
      FAIL() << "expected invalid_input for '" << bad.device_uuid << "', '" << bad.driver << "'";
    } catch (const invalid_input& e) {
      const std::string what = e.what();
      EXPECT_TRUE(what.find("device_uuid") != std::string::npos || what.find("driver") != std::string::npos)
          << what;
    }
  }
}

TEST_F(ModelCache, ABrokenCachedFileIsNamedWithTheCommandThatRemakesIt) {
  const fs::path path = cached_model_path(key);
  fs::create_directories(path.parent_path());
  std::ofstream(path) << R"({"name": "x", "hardware_queues": 0})";
  try {
    (void)load_cached_model(key);
    FAIL() << "expected invalid_input";
  } catch (const invalid_input& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path.string()), std::string::npos) << what;
    EXPECT_NE(what.find("overlap probe --cache"), std::string::npos) << what;
  }
}

}  // namespace
