// A deployed program: it links kiln_runtime (and the kernels) only, no IR, ops, passes or
// frontend (the build fails if runtime code reaches for them). It maps a .kiln file, runs it
// once on inputs of ones and prints each output's dims and sum.
//
//   kiln_run_module MODULE.kiln [THREADS]
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "runtime/module_file.h"
#include "runtime/session.h"

int main(int argc, char** argv) {
  using namespace kiln;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODULE.kiln [THREADS]\n", argv[0]);
    return 2;
  }
  auto fail = [](const Status& st) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    return 1;
  };
  auto module = runtime::LoadModule(argv[1]);
  if (!module.ok()) return fail(module.status());
  auto model = runtime::CompiledModel::Create(*module);
  if (!model.ok()) return fail(model.status());
  runtime::SessionOptions options;
  options.threads = argc > 2 ? std::atoi(argv[2]) : 1;
  auto session = runtime::Session::Create(*model, options);
  if (!session.ok()) return fail(session.status());
  std::vector<Tensor> inputs;
  for (int32_t id : (*module)->inputs) {
    const runtime::ValueInfo& v = (*module)->values[id];
    if (v.dtype != DType::kFloat32) return fail(Status::Error("input '", v.name, "' is not float32"));
    std::vector<int64_t> dims = v.dims;
    for (int64_t& d : dims) d = d < 0 ? 1 : d;
    Tensor t(DType::kFloat32, dims);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = 1.0f;
    inputs.push_back(std::move(t));
  }
  std::vector<const Tensor*> bound;
  for (const Tensor& t : inputs) bound.push_back(&t);
  if (Status st = (*session)->Run(bound); !st.ok()) return fail(st);
  for (size_t i = 0; i < (*session)->num_outputs(); ++i) {
    const Tensor& out = (*session)->output(i);
    double sum = 0;
    for (int64_t k = 0; k < out.numel(); ++k) sum += out.AsDouble(k);
    std::printf("output %zu: %s sum=%.6g\n", i, DescribeTensor(out).c_str(), sum);
  }
  return 0;
}
