// CPU dispatch: the active path is available, and the environment switches are honoured.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "spiralpir/core/cpu_features.hpp"

namespace spiralpir {
namespace {

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

TEST(CpuFeatures, ActivePathIsTheBestAvailable) {
  EXPECT_TRUE(path_available(Path::native));
  const Path active = active_path();
  EXPECT_TRUE(path_available(active));
  for (Path p : available_paths()) EXPECT_LE(static_cast<int>(p), static_cast<int>(active));
  for (Path p : {Path::native, Path::avx2, Path::avx512}) EXPECT_EQ(path_available(p), path_missing(p).empty());
  EXPECT_STREQ(path_name(Path::avx512), "avx512");
  EXPECT_STREQ(path_name(Path::avx2), "avx2");
  EXPECT_STREQ(path_name(Path::native), "native");
}

TEST(CpuFeatures, EnvironmentDisablesPaths) {
  if (env_on("SPIRALPIR_DISABLE_AVX512")) {
    EXPECT_FALSE(path_available(Path::avx512));
    EXPECT_NE(active_path(), Path::avx512);
  }
  if (env_on("SPIRALPIR_DISABLE_AVX2")) {
    EXPECT_FALSE(path_available(Path::avx2));
  }
  // A path the CPU lacks is never reported available.
  if (!cpu_features().avx512f) {
    EXPECT_FALSE(path_available(Path::avx512));
  }
  if (!cpu_features().avx2) {
    EXPECT_FALSE(path_available(Path::avx2));
  }
}

}  // namespace
}  // namespace spiralpir
