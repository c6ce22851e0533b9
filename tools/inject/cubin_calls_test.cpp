// kernels_calling on cubins that nvcc built from testdata/*.cu, and on
// images that are not cubins.
#include "cubin_calls.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace overlap::inject {
namespace {

std::vector<unsigned char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const std::string printing = OVERLAP_TEST_CUBIN_DIR "/printing_kernels.cubin";
const std::string quiet = OVERLAP_TEST_CUBIN_DIR "/quiet_kernels.cubin";

TEST(CubinCalls, FindsKernelsThatReachPrintfDirectlyOrThroughCalls) {
  const std::vector<unsigned char> image = read_file(printing);
  const std::vector<std::string> kernels = kernels_calling(image, "vprintf");
  std::vector<std::string> sorted = kernels;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<std::string>{"_Z15prints_directlyPKi", "_Z24prints_through_two_callsPKi"}));
}

TEST(CubinCalls, DeviceFunctionsAreNotKernels) {
  // say() and relay() reach vprintf too, but a launch names a kernel.
  const std::vector<std::string> kernels = kernels_calling(read_file(printing), "vprintf");
  for (const std::string& k : kernels) EXPECT_EQ(k.find("relay"), std::string::npos) << k;
  for (const std::string& k : kernels) EXPECT_EQ(k.find("say"), std::string::npos) << k;
}

TEST(CubinCalls, AModuleWithoutTheFunctionHasNoCallers) {
  EXPECT_TRUE(kernels_calling(read_file(quiet), "vprintf").empty());
  EXPECT_TRUE(kernels_calling(read_file(printing), "malloc").empty());
}

TEST(CubinCalls, ImagesThatAreNotCubinsGiveNothing) {
  EXPECT_TRUE(kernels_calling({}, "vprintf").empty());
  const std::vector<unsigned char> text{'n', 'o', 't', ' ', 'e', 'l', 'f'};
  EXPECT_TRUE(kernels_calling(text, "vprintf").empty());
  // Every cut of a real cubin is read safely (sections past the end are refused).
  const std::vector<unsigned char> image = read_file(printing);
  const std::vector<std::string> whole = kernels_calling(image, "vprintf");
  for (std::size_t size = 0; size < image.size(); size += 61) {
    for (const std::string& k : kernels_calling({image.data(), size}, "vprintf"))
      EXPECT_NE(std::find(whole.begin(), whole.end(), k), whole.end()) << k << " from " << size << " bytes";
  }
}

TEST(CubinCalls, CorruptBytesGiveNamesOrNothing) {
  // Eight bytes at a time set to 0xff across the whole image (headers,
  // symbols, the call graph): every answer is a list of non-empty names.
  // (The reads stay inside the image by ElfImage's checks; this library is
  // not built in the sanitizer presets, which leave CUDA out.)
  const std::vector<unsigned char> image = read_file(printing);
  std::size_t answered = 0;
  for (std::size_t at = 0; at < image.size(); at += 29) {
    std::vector<unsigned char> copy = image;
    for (std::size_t k = at; k < std::min(copy.size(), at + 8); ++k) copy[k] = 0xff;
    const std::vector<std::string> kernels = kernels_calling(copy, "vprintf");
    for (const std::string& k : kernels) EXPECT_FALSE(k.empty()) << "corrupted at " << at;
    answered += kernels.empty() ? 0 : 1;
  }
  EXPECT_GT(answered, 0U);  // most of the image is code, which the reader never looks at
}

}  // namespace
}  // namespace overlap::inject
