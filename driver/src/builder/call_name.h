// The name of a KernelBuilder call as its errors print it
// ("matmul(psum 'acc', stationary 'w', moving 'x')"), formatted only when an
// error is thrown: almost every call breaks no rule, and formatting each
// call's name would be a large part of building a large kernel.
#pragma once

#include <string>

namespace tessera::builder {

class CallName {
public:
  // `format` returns the name; it must outlive the CallName (a lambda at the call).
  template <typename F>
  CallName(const F& format)  // NOLINT: implicit, so that a lambda can be passed where a name is expected
      : context_(&format), format_([](const void* f) { return std::string((*static_cast<const F*>(f))()); }) {}

  std::string str() const { return format_(context_); }

private:
  const void* context_;
  std::string (*format_)(const void*);
};

}  // namespace tessera::builder
