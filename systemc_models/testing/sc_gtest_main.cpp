// main() for googletest binaries that run SystemC: libsystemc owns main() and
// calls sc_main, so the tests start from here. gtest_discover_tests runs each
// test in its own process, which SystemC needs (one simulation per process).
#include <gtest/gtest.h>
#include <systemc>

int sc_main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
