// The kernel registry: every kernel of the library under one name, with its
// variants, shape parameters (each with a default), and how to set it up on a
// Device, build its program and check its results against its reference.
#pragma once

#include "tessera/device.h"
#include "tessera/program.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tessera::kernels {

using Shape = std::map<std::string, std::int64_t>;

struct ShapeParam {
  std::string name;
  std::int64_t default_value;
  std::string description;
  std::int64_t min_value = 1;  // 0 for a parameter that may be absent, such as padding
};

struct NumericsCheck {
  bool correct = false;
  double max_abs_error = 0;
  double tolerance = 0;
  std::string detail;  // the worst element, when wrong
};

// One kernel set up on a device: inputs allocated and uploaded.
class KernelInstance {
public:
  virtual ~KernelInstance() = default;
  virtual Program build() = 0;
  // Compares the device's outputs with the CPU reference.
  virtual NumericsCheck check() = 0;
};

struct KernelSpec {
  std::string name;
  std::string description;
  std::vector<std::string> variants;  // the first is the default
  std::vector<ShapeParam> shape;
  std::function<std::unique_ptr<KernelInstance>(Device&, const Shape&, const std::string& variant, std::uint64_t seed)>
      make;
};

const std::vector<KernelSpec>& registry();
const KernelSpec* find_kernel(const std::string& name);

// The kernel's default shape with `overrides` applied; throws KernelError on
// an unknown parameter or a non-positive value.
Shape resolve_shape(const KernelSpec& spec, const Shape& overrides);
// Parses "M=128,N=256" into a shape.
Shape parse_shape(const std::string& text);

// Compares `got` with `expect` elementwise: |got - expect| <= tolerance.
NumericsCheck compare(const std::vector<float>& got, const std::vector<float>& expect, double tolerance);

}  // namespace tessera::kernels
