// spiralpir/testing/gtest_seed.hpp — included by a GoogleTest suite that draws randomness
// (test_seed.hpp): every failed test prints the seed that reproduces it.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>

#include "spiralpir/testing/test_seed.hpp"

namespace spiralpir::testing {

class SeedOnFailure : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result() != nullptr && info.result()->Failed())
      std::printf("[   SEED   ] %s.%s: reproduce with SPIRALPIR_TEST_SEED=%llu\n", info.test_suite_name(), info.name(),
                  static_cast<unsigned long long>(test_seed_value()));
  }
};

// registered once per program, before main (gtest_main) runs the tests
inline const bool seed_on_failure_registered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new SeedOnFailure);
  return true;
}();

}  // namespace spiralpir::testing
