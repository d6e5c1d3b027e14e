// Test sizes under the sanitizers.
//
// The ASan + UBSan and ThreadSanitizer builds run the unit tests to find memory errors, undefined
// behaviour and data races; the plain build runs every test at its full size and checks the
// decisions. Under a sanitizer the code runs about 5 to 60 times slower (JSON and generated
// clusters the most), so the few tests that check a rule over many random rounds or large
// generated clusters run fewer rounds or smaller clusters there: the same code, less of it.
// (The sanitizer stage of scripts/test.sh also runs the parameterized differential tests on their
// first seed only and leaves out the *Coverage suites.)
#pragma once

#include <algorithm>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GANTRY_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define GANTRY_TEST_SANITIZED 1
#endif
#endif

namespace gantry::test_scale {

#ifdef GANTRY_TEST_SANITIZED
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

// `n` in a plain build; `n / divisor` (at least 1) under a sanitizer.
constexpr int SanitizerScaled(int n, int divisor) {
  return kSanitized ? std::max(1, n / divisor) : n;
}

}  // namespace gantry::test_scale
