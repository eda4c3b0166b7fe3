// tools/libtpu_probe.cc
//
// `libtpu_probe [LIBTPU_SO [OUT_DIR]]`: the check that libtpu compiles for a TPU topology
// on this machine, which has no TPU. It loads libtpu (default: the pinned
// wheel's, or $TPUSIM_LIBTPU_PATH), prints its PJRT C API version and tpusim's,
// then for a small v4 slice ("v4:2x2x1", megacore) and a small v5e slice
// ("v5e:2x2") creates the topology description, compiles a 4-replica
// StableHLO program (a matmul and an all-reduce of its result), and prints
// the optimized program's format and size, the compiler's per-device memory
// stats, its cost analysis and the compile time. Exit 0 when every step of
// both topologies worked, 1 otherwise (the first error is printed). With
// OUT_DIR, each optimized program is written to
// OUT_DIR/probe_<topology>.<format>.pb (the HLO importer's test data).
// docs/xla-tpu.md quotes its output; ctest runs it (libtpu_probe).

#include <cstdio>
#include <fstream>
#include <string>

#include "strategy/runtime/pjrt/xla_tpu_compiler.h"

int main(int argc, char** argv) {
  namespace pjrt = tpusim::runtime::pjrt;
  const std::string path =
      argc > 1 && argv[1][0] != '\0' ? argv[1] : pjrt::DefaultLibtpuPath();
  const std::string out_dir = argc > 2 ? argv[2] : "";
  std::printf("libtpu: %s\n", path.c_str());
  struct Target {
    const char* generation;
    int x, y, z;
  };
  int failures = 0;
  for (const Target& t : {Target{"v4", 2, 2, 1}, Target{"v5e", 2, 2, 1}}) {
    pjrt::XlaTpuCompileRequest request;
    request.topology = pjrt::TpuTopologyName(t.generation, t.x, t.y, t.z);
    request.topology_options = pjrt::TopologyOptionsFor(t.generation);
    request.program = pjrt::LibtpuProbeProgram();
    request.format = "mlir";
    request.device_assignment = {{0}, {1}, {2}, {3}};
    request.time_limit_seconds = 300;
    auto result = pjrt::CompileForTpu(path, request);
    if (!result.ok()) {
      std::printf("[%s] FAILED: %s\n", request.topology.c_str(),
                  result.status().ToString().c_str());
      ++failures;
      continue;
    }
    const char* topo = request.topology.c_str();
    std::printf("[%s] %s\n", topo, result->plugin_version.c_str());
    for (const auto& [k, v] : result->plugin_attributes) {
      std::printf("[%s] attribute %s = %s\n", topo, k.c_str(), v.c_str());
    }
    std::printf("[%s] topology devices: %zu\n", topo, result->devices.size());
    for (const std::string& d : result->devices) {
      std::printf("[%s]   %s\n", topo, d.c_str());
    }
    std::printf("[%s] compile: OK in %.3f s\n", topo, result->compile_seconds);
    std::printf("[%s] optimized program: format %s, %zu bytes\n", topo,
                result->optimized_format.c_str(),
                result->optimized_program.size());
    if (!out_dir.empty()) {
      std::string name = request.topology;
      for (char& c : name) {
        if (c == ':') c = '_';
      }
      const std::string file = out_dir + "/probe_" + name + "." +
                               result->optimized_format + ".pb";
      std::ofstream(file, std::ios::binary) << result->optimized_program;
      std::printf("[%s] wrote %s\n", topo, file.c_str());
    }
    const pjrt::XlaTpuMemoryStats& m = result->memory;
    std::printf(
        "[%s] memory per device (bytes): arguments %lld, outputs %lld, alias "
        "%lld, temporaries %lld, generated code %lld, peak %lld\n",
        topo, static_cast<long long>(m.arguments),
        static_cast<long long>(m.outputs), static_cast<long long>(m.alias),
        static_cast<long long>(m.temporaries),
        static_cast<long long>(m.generated_code),
        static_cast<long long>(m.peak));
    for (const auto& [k, v] : result->cost_analysis) {
      std::printf("[%s] cost %s = %.9g\n", topo, k.c_str(), v);
    }
  }
  std::printf(failures == 0 ? "libtpu probe: PASS\n" : "libtpu probe: FAIL\n");
  return failures == 0 ? 0 : 1;
}
