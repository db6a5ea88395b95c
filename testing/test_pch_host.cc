// The target that owns the tests' precompiled header (testing/test_pch.h);
// every gdp_test binary reuses it. Its main is GoogleTest's, with no tests.
