// The first kernel of docs/kernel-guide.md, verbatim, so the guide stays true.
#include "tessera/device.h"
#include "tessera/kernel_builder.h"

#include <gtest/gtest.h>

#include <iostream>

using namespace tessera;

// y = relu(2 x + 1) on the small generation (driver/tests/guide_example_test.cpp runs this).
bool relu_example() {
  DeviceOptions options;
  options.config = "small";                 // a config name or a YAML file
  options.fidelity = arch::Fidelity::Tlm;
  Device dev(options);
  Tensor x = dev.allocate("x", {32, 256}, DType::Fp32);
  Tensor y = dev.allocate("y", {32, 256}, DType::Fp32);
  dev.upload(x, std::vector<float>(32 * 256, -0.25f));

  KernelBuilder kb(dev.config(), "relu");
  Tile t = kb.sbuf("t", 32, 256, DType::Fp32);  // 32 partitions x 256 elements
  kb.dma(t, x.all());                            // HBM -> SBUF
  kb.activation(t, t, arch::ActFunc::Relu, /*scale=*/2.0f, /*bias=*/1.0f);  // scalar engine
  kb.dma(y.all(), t);                            // SBUF -> HBM

  const RunReport r = dev.run(kb.build());
  std::cout << r.summary();
  return r.ok && dev.download(y)[0] == 0.5f;
}

TEST(KernelGuide, FirstKernelRuns) {
  setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
  EXPECT_TRUE(relu_example());
}
