// The compiled module file, `.kiln`: a runtime::Module on disk, loaded by mapping it.
//
// Layout (all integers little-endian):
//   [0, 64)          header: magic "KILNMOD\0", format version, header size, the offset and
//                    size of the plan and weights sections, and an XXH3-64 checksum
//   [64, ...)        plan: the FlatBuffers encoding of everything but the weights (module.fbs)
//   [4096 * k, end)  weights: the module's weight bytes, as Module::weights holds them
// The weights start on a page boundary, so in a mapping of the file every blob keeps its
// kBlobAlignment and kernels read prepacked weights in place: loading copies no weight byte.
//
// The checksum covers the header's first 48 bytes (everything before the checksum field) and
// every byte after the header, so that a flip anywhere in the file is found.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "runtime/module.h"
#include "support/status.h"

namespace kiln::runtime {

// Writes `m` to `path`: first to path + ".tmp", then renamed over `path`, so a failed or
// interrupted save never leaves a half-written file where a good one was. The module is
// validated first; an invalid one writes nothing.
Status SaveModule(const Module& m, const std::string& path);

// Maps `path` and parses it (ParseModule). The returned module's weights point into the
// mapping, which stays alive as long as the module (or anything holding weights_owner) does.
// Every error names the file. Does not check the ISA (see CheckIsaSupported): a module built
// for another machine can still be inspected.
Expected<std::shared_ptr<const Module>> LoadModule(const std::string& path);

struct ParseOptions {
  // Off only for fuzzing, which must get past the checksum to reach the parser.
  bool verify_checksum = true;
};

// Parses a module from `bytes`, which must start at a 64-byte aligned address and stay alive
// while `owner` does: the module's weights point into `bytes` and keep `owner` as their owner.
// Every check of the format runs here, ending with Module::Validate().
Expected<std::shared_ptr<const Module>> ParseModule(std::span<const std::byte> bytes,
                                                    std::shared_ptr<const void> owner,
                                                    const ParseOptions& options = {});

// An error when the module's prepacked data needs an ISA level above ActiveIsa() (the CPU's,
// as capped by KILN_ISA).
Status CheckIsaSupported(const Module& m);

}  // namespace kiln::runtime
