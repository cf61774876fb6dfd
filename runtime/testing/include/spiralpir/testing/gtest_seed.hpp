// spiralpir/testing/gtest_seed.hpp — included by a GoogleTest suite that draws randomness
// (test_seed.hpp): every failed test prints the seed that reproduces it, and each test draws from
// streams of its own (labelled with its name), so one test's draws do not depend on which others ran.
//   test_seed_here(what)     the current test's seed for `what` ("client", "records", ...)
//   test_rng_here(what)      a Csprng on it
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <string_view>

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

inline Seed test_seed_here(std::string_view what) {
  const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string label = t ? std::string(t->test_suite_name()) + "." + t->name() : std::string("(no test)");
  label += "/";
  label += what;
  return test_seed(label);
}
inline Csprng test_rng_here(std::string_view what = "rng") { return Csprng(test_seed_here(what)); }

}  // namespace spiralpir::testing
