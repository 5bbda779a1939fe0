// libFuzzer target over the ONNX model loader: any bytes must load or fail with a message, never
// crash, hang or trip a sanitizer. A model that loads must also pass the op check, the verifier
// and the printer (what `kiln inspect` and `kiln run` do before running anything).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "frontend/onnx/importer.h"
#include "support/tensor.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "ops/op_registry.h"

// kiln's 16 GiB tensor cap is far above libFuzzer's -malloc_limit_mb: a model may legitimately
// ask for a multi-GiB output, which is a finding only for the limit, not for kiln. Lower the cap
// so such requests become kiln's own "larger than kiln's limit" errors.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kiln::SetTensorByteLimit(int64_t{256} << 20);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // base_dir "" forbids external data: the fuzzer must not read the machine's files.
  auto model = kiln::onnx::LoadModelFromBytes(bytes, "");
  if (!model.ok()) {
    if (model.status().message().empty()) __builtin_trap();  // an error must say something
    return 0;
  }
  (void)kiln::ops::CheckSupported(*model->graph);
  // The importer's output must always be a well-formed graph; a model it accepted that the
  // verifier refuses is an importer bug.
  if (kiln::Status st = kiln::ir::Verify(*model->graph); !st.ok()) {
    std::fprintf(stderr, "loaded model fails verification: %s\n", st.message().c_str());
    __builtin_trap();
  }
  const std::string text = kiln::ir::PrintGraph(*model->graph);
  if (text.empty() && !model->graph->nodes().empty()) __builtin_trap();
  return 0;
}
